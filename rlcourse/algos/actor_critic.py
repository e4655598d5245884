"""Advantage actor-critic (A2C, Mnih et al., 2016, synchronous form) with GAE.

Each update collects ``rollout`` steps from each of the ``n`` copies, computes GAE advantages
(the critic's TD errors, summed with weights ``(gamma lam)^k`` inside each episode) and takes
**one** gradient step on

    loss = -mean(log pi(a|s) * A) + vf_coef * 0.5 * mean((V(s) - returns)^2) - ent_coef * mean(entropy)

The data is used once and thrown away: on-policy, no ratio, no clipping. PPO
(:mod:`rlcourse.algos.ppo`) is the same loop with several clipped epochs per batch.
"""

from __future__ import annotations

import numpy as np

from .. import autodiff as ad
from .._checks import check_count, check_probability
from ..blas import single_thread_blas
from ..optim import Adam, clip_by_global_norm
from ..returns import _gae
from .rollout import collect_rollout, explained_variance
from .training import FlatParams, TrainingLog

__all__ = ["actor_critic", "actor_critic_loss", "A2C_CARTPOLE"]

# Settings chosen on this course's CartPole-v1: with them the mean of 20 training episodes
# reaches 500 within 100k steps on seeds 0, 1 and 2. A2C is unstable, though: the policy at the
# end of a run can be worse than its best (seed 1's final greedy policy scores about 170).
A2C_CARTPOLE = dict(total_steps=100_000, rollout=8, lr=1e-3, gamma=0.99, lam=0.95, ent_coef=0.0)


def actor_critic_loss(params, model, obs, actions, advantages, returns, vf_coef: float = 0.5,
                      ent_coef: float = 0.0):
    """``(loss, stats)`` of A2C on ``B`` samples: obs ``[B, ...]``, actions, advantages, returns ``[B]``.

    ``model(params, obs) -> (logits [B, A], values [B])``. The advantages are constants: the
    policy gradient must not flow into the critic through them. ``stats``: ``policy_loss``,
    ``value_loss``, ``entropy`` (floats).
    """
    actions = np.asarray(actions)
    for name, arr in (("advantages", advantages), ("returns", returns)):
        if np.shape(arr) != actions.shape:
            raise ValueError(f"{name}: expected shape {actions.shape} like actions, got {np.shape(arr)}")
    logits, values = model(params, obs)
    log_p = ad.log_softmax(logits)
    log_probs = ad.reshape(ad.take_along_axis(log_p, actions[:, None], axis=1), actions.shape)
    policy_loss = -ad.mean(log_probs * ad.stop_gradient(advantages))
    value_loss = 0.5 * ad.mean(ad.square(values - returns))
    entropy = -ad.mean(ad.sum(ad.exp(log_p) * log_p, axis=1))
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    stats = {key: float(ad.stop_gradient(v)) for key, v in
             (("policy_loss", policy_loss), ("value_loss", value_loss), ("entropy", entropy))}
    return loss, stats


@single_thread_blas()
def actor_critic(env, model, params, total_steps: int = 100_000, rollout: int = 8,
                 lr: float = 1e-3, gamma: float = 0.99, lam: float = 0.95, vf_coef: float = 0.5,
                 ent_coef: float = 0.0, max_grad_norm: float | None = 0.5, norm_adv: bool = False,
                 anneal_lr: bool = False, opt=None, dtype=np.float32, seed: int = 0,
                 callback=None, progress: bool | None = None):
    """Train ``model(params, obs) -> (logits, values)`` with A2C + GAE on a vector env.

    One gradient step per rollout of ``rollout * n`` samples. Arguments as for
    :func:`rlcourse.ppo` (``opt`` defaults to ``Adam(lr)``; ``norm_adv`` standardises each
    batch's advantages). Truncated episodes bootstrap from ``V(final_obs)``; terminated ones
    from nothing. Returns a :class:`~rlcourse.algos.training.TrainResult` (``approx_kl`` and
    ``clip_fraction`` are NaN: A2C has no ratio).
    """
    total_steps, rollout = check_count("total_steps", total_steps), check_count("rollout", rollout)
    gamma, lam = check_probability("gamma", gamma), check_probability("lam", lam)
    if max_grad_norm is not None and not max_grad_norm > 0:
        raise ValueError(f"max_grad_norm: expected a number > 0 or None, got {max_grad_norm!r}")
    opt = Adam(lr) if opt is None else opt
    rng = np.random.default_rng(seed)
    layout, theta, params = FlatParams.packed(params, dtype)
    opt_state = opt.init(theta)
    batch = rollout * env.n
    num_updates = max(total_steps // batch, 1)
    grad_fn = ad.value_and_grad(actor_critic_loss)
    log = TrainingLog(env, "actor_critic", num_updates * batch, progress, callback)
    obs = env.reset(seed=seed)
    for update in range(num_updates):
        step_lr = opt.lr * (1.0 - update / num_updates) if anneal_lr else opt.lr
        data = collect_rollout(env, model, params, obs, rollout, rng, dtype, log.episodes_ended)
        obs = data.last_obs
        log.env_steps(batch)
        advantages, returns = _gae(data.rewards, data.values, data.next_values, data.terminated,
                                   data.truncated, gamma, lam)
        adv = advantages.reshape(batch)
        if norm_adv and batch > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        (_, stats), grads = grad_fn(params, model, data.obs.reshape(batch, *data.obs.shape[2:]),
                                    data.actions.reshape(batch), adv, returns.reshape(batch),
                                    vf_coef, ent_coef)
        grads = {"theta": layout.flatten(grads)}
        if max_grad_norm is not None:
            grads, _ = clip_by_global_norm(grads, max_grad_norm)
        new_theta, opt_state = opt.step(theta, grads, opt_state, lr=step_lr)
        theta["theta"][...] = new_theta["theta"]  # params are views of it: now updated
        stats["explained_variance"] = explained_variance(data.values.reshape(batch),
                                                         returns.reshape(batch))
        if not log.end_update(params, update, **stats):
            break
    return log.result(params)
