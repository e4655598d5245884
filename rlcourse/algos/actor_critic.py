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

from ..core import autodiff as ad
from ..core._checks import (
    agent_rng,
    as_rng,
    check_count,
    check_flag,
    check_nonnegative,
    check_probability,
    float_dtype,
)
from ..core.blas import single_thread_blas
from ..core.distributions import categorical_entropy, categorical_log_prob
from ..core.optim import Adam
from ..core.returns import gae
from .rollout import check_minibatch, check_obs, collect_rollout, explained_variance
from .trainer import CHECKED_BY_CALLER, Learner, TrainingLog, check_env, model_output, standardise

__all__ = ["actor_critic", "actor_critic_loss", "A2C_CARTPOLE"]

# Settings chosen on this course's CartPole-v1 (8 copies, 8-step rollouts, one Adam step each).
# A2C learns with them, unreliably: over seeds 0-4 and 100k steps the mean of 20 training
# episodes peaks above 350 on every seed, but runs collapse and recover, and the final greedy
# policy can be far below the run's best (tests/test_actor_critic.py::test_a2c_preset_over_five_
# seeds; lesson 09 shows three seeds and five values of lambda).
A2C_CARTPOLE = dict(total_steps=100_000, rollout=8, lr=1e-3, gamma=0.99, lam=0.95, ent_coef=0.0)


def actor_critic_loss(params, model, obs, actions, advantages, returns, vf_coef: float = 0.5,
                      ent_coef: float = 0.0):
    """``(loss, stats)`` of A2C on ``B`` samples: obs ``[B, ...]``, actions, advantages, returns ``[B]``.

    ``model(params, obs) -> (logits [B, A], values [B])``. The advantages are constants: the
    policy gradient must not flow into the critic through them. ``stats``: ``policy_loss``,
    ``value_loss``, ``entropy`` (floats).
    """
    actions = np.asarray(actions)
    check_minibatch(actions, advantages=advantages, returns=returns)
    obs = check_obs(obs, actions)
    vf_coef, ent_coef = check_nonnegative("vf_coef", vf_coef), check_nonnegative("ent_coef", ent_coef)
    logits, values = model_output(model, params, obs, "actor_critic")
    log_probs = categorical_log_prob(logits, actions)
    policy_loss = -ad.mean(log_probs * ad.stop_gradient(advantages))
    value_loss = 0.5 * ad.mean(ad.square(values - returns))
    entropy = ad.mean(categorical_entropy(logits))
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    stats = {key: float(ad.stop_gradient(v)) for key, v in
             (("policy_loss", policy_loss), ("value_loss", value_loss), ("entropy", entropy))}
    return loss, stats


@single_thread_blas()
def actor_critic(env, model, params, total_steps: int = 100_000, *, rollout: int = 8,
                 lr: float = 1e-3, gamma: float = 0.99, lam: float = 0.95, vf_coef: float = 0.5,
                 ent_coef: float = 0.0, max_grad_norm: float | None = 0.5, norm_adv: bool = False,
                 anneal_lr: bool = False, opt=None, dtype=np.float32, seed: int = 0,
                 callback=None, progress: bool | None = None):
    """Train ``model(params, obs) -> (logits [n, A], values [n])`` with A2C + GAE on a vector env.

    The arguments and the result follow the trainer contract (:mod:`rlcourse.algos.trainer`).

    Args:
        total_steps: env steps, all ``n`` copies counted, in updates of ``rollout * n`` samples.
        rollout: vector steps collected per update; one gradient step per update.
        lr: Adam's learning rate (ignored when ``opt`` is given; then ``opt.lr`` is used).
        gamma: discount; lam: GAE's lambda.
        vf_coef, ent_coef: weights of the value loss and of the entropy bonus.
        max_grad_norm: clip the global gradient norm to this (None: no clipping).
        norm_adv: standardise each batch's advantages.
        anneal_lr: lower the learning rate linearly to 0 over the run.
        opt, dtype, seed, callback, progress: as in the trainer contract (default
            ``opt``: ``Adam(lr)``).

    Truncated episodes bootstrap from ``V(final_obs)``; terminated ones from nothing. The
    result's history holds ``policy_loss``, ``value_loss``, ``entropy``, ``grad_norm`` (before
    clipping), ``explained_variance`` and ``lr`` per update.
    """
    settings = _checked_settings(**{k: v for k, v in locals().items() if k not in _NOT_SETTINGS})
    learner = Learner(params, opt or Adam(lr), dtype, max_grad_norm)
    rng = agent_rng(seed)
    batch = rollout * env.n
    num_updates = max(total_steps // batch, 1)
    log = TrainingLog(env, "actor_critic", num_updates * batch, progress, callback, settings)
    loss_and_grad = ad.value_and_grad(actor_critic_loss)
    obs = env.reset(seed=seed)
    for update in range(num_updates):
        step_lr = learner.opt.lr * ((1.0 - update / num_updates) if anneal_lr else 1.0)
        data = collect_rollout(env, model, learner.params, obs, rollout, rng, dtype)
        obs = data.last_obs
        log.record_steps(data.terminated, data.truncated)
        advantages, returns = gae(data.rewards, data.values, data.next_values, data.terminated,
                                  data.truncated, gamma, lam)
        adv, returns = advantages.reshape(batch), returns.reshape(batch)
        if norm_adv:
            adv = standardise(adv)
        (_, stats), grads = loss_and_grad(learner.params, model,
                                          data.obs.reshape(batch, *data.obs.shape[2:]),
                                          data.actions.reshape(batch), adv, returns, vf_coef,
                                          ent_coef)
        grad_norm = learner.step(grads, step_lr)
        if not log.end_update(learner.params, last=update == num_updates - 1, **stats,
                              grad_norm=grad_norm, lr=step_lr,
                              explained_variance=explained_variance(data.values.reshape(batch),
                                                                    returns)):
            break
    return log.result(learner.params)


_NOT_SETTINGS = ("model", "params", "opt", "callback", "progress")


def _checked_settings(total_steps, rollout, lr, gamma, lam, vf_coef, ent_coef, max_grad_norm,
                      norm_adv, anneal_lr, dtype, seed,
                      env=CHECKED_BY_CALLER) -> dict:
    """``actor_critic``'s arguments, each checked once, as the ``settings`` of its result
    (``env`` is checked, not recorded; the model, params, opt and callback where used)."""
    check_env(env)
    check_count("total_steps", total_steps)
    check_count("rollout", rollout)
    check_probability("gamma", gamma)
    check_probability("lam", lam)
    check_nonnegative("lr", lr)
    check_nonnegative("vf_coef", vf_coef)
    check_nonnegative("ent_coef", ent_coef)
    if max_grad_norm is not None:
        check_nonnegative("max_grad_norm", max_grad_norm, positive=True)
    check_flag("norm_adv", norm_adv)
    check_flag("anneal_lr", anneal_lr)
    as_rng(seed)
    dtype = float_dtype("dtype", dtype)
    return dict(total_steps=total_steps, rollout=rollout, lr=lr, gamma=gamma, lam=lam,
                vf_coef=vf_coef, ent_coef=ent_coef, max_grad_norm=max_grad_norm,
                norm_adv=norm_adv, anneal_lr=anneal_lr, dtype=np.dtype(dtype).name, seed=seed)
