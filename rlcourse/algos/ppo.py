"""Proximal policy optimisation (Schulman et al., 2017) with the clipped surrogate and GAE.

One update: collect ``rollout`` steps from each of the ``n`` copies with the current policy,
compute GAE advantages and returns (truncation bootstraps from ``V(final_obs)``), then take
``epochs`` passes over the batch in shuffled minibatches, each a gradient step on

    loss = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))
           + vf_coef * 0.5 * mean((V(obs) - returns)^2) - ent_coef * mean(entropy)

with ``ratio = pi_new(a|s) / pi_old(a|s)``. The ``min`` makes the objective pessimistic: once
the ratio has moved past ``1 + eps`` in the direction the advantage favours (up for A > 0,
down past ``1 - eps`` for A < 0), the gradient of that sample is exactly zero, so one batch
cannot push the policy arbitrarily far.
"""

from __future__ import annotations

import numpy as np

from .. import autodiff as ad
from .._checks import check_count, check_probability
from ..blas import single_thread_blas
from ..nn import mlp_init
from ..optim import Adam, clip_by_global_norm
from ..returns import _gae
from .rollout import collect_rollout, explained_variance
from .training import FlatParams, TrainingLog

__all__ = [
    "ppo", "ppo_loss", "ppo_clip_objective", "make_actor_critic", "actor_critic_model",
    "PPO_CARTPOLE",
]

# A preset that solves CartPole-v1 fast with 8 copies: the RL Zoo's tuned PPO settings for
# CartPole (short rollouts, 20 epochs, lr 1e-3, GAE lambda 0.8, gamma 0.98, learning rate and
# clip range both annealed linearly to 0). With it the mean of the last 20 training episodes
# reaches 475 within 50k steps and the greedy policy scores 500 (tests/test_ppo.py, 3 seeds).
PPO_CARTPOLE = dict(
    total_steps=50_000, rollout=32, epochs=20, minibatch=256, lr=1e-3, gamma=0.98, lam=0.8,
    clip=0.2, ent_coef=0.0, anneal_lr=True, anneal_clip=True,
)


def ppo_clip_objective(ratio, advantages, clip: float):
    """``min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)`` elementwise (to be maximised).

    The gradient with respect to ``ratio`` is ``A`` where the unclipped branch is the smaller
    one and exactly 0 where the clipped one is: for ``A > 0`` when ``ratio > 1 + clip``, for
    ``A < 0`` when ``ratio < 1 - clip``. Inside ``[1 - clip, 1 + clip]`` the two branches are
    equal and the gradient is ``A``. Works on arrays and traced values.
    """
    return ad.minimum(ratio * advantages, ad.clip(ratio, 1.0 - clip, 1.0 + clip) * advantages)


def ppo_loss(params, model, obs, actions, old_log_probs, advantages, returns, clip: float = 0.2,
             vf_coef: float = 0.5, ent_coef: float = 0.0):
    """The PPO loss on one minibatch of ``B`` samples, for ``value_and_grad``.

    ``model(params, obs [B, ...]) -> (logits [B, A], values [B])``; ``actions [B]`` ints,
    ``old_log_probs [B]`` of those actions under the policy that collected them, ``advantages``
    and ``returns`` ``[B]`` (normalise the advantages beforehand if you want to). Returns
    ``(loss, stats)`` with ``stats`` a dict of floats: ``policy_loss``, ``value_loss``,
    ``entropy``, ``approx_kl`` (k3 estimate ``mean((r - 1) - log r)``, >= 0) and
    ``clip_fraction`` (share with ``|ratio - 1| > clip``).
    """
    actions = np.asarray(actions)
    n = len(actions)
    for name, arr in (("old_log_probs", old_log_probs), ("advantages", advantages),
                      ("returns", returns)):
        if np.shape(arr) != (n,):
            raise ValueError(f"{name}: expected shape ({n},) like actions, got {np.shape(arr)}")
    check_probability("clip", clip)
    return _ppo_loss(params, model, obs, actions, old_log_probs, advantages, returns, clip,
                     vf_coef, ent_coef)


def _ppo_loss(params, model, obs, actions, old_log_probs, advantages, returns, clip, vf_coef,
              ent_coef):
    logits, values = model(params, obs)
    log_p = ad.log_softmax(logits)
    new_log_probs = ad.reshape(ad.take_along_axis(log_p, actions[:, None], axis=1), actions.shape)
    log_ratio = new_log_probs - old_log_probs
    ratio = ad.exp(log_ratio)
    policy_loss = -ad.mean(ppo_clip_objective(ratio, advantages, clip))
    value_loss = 0.5 * ad.mean(ad.square(values - returns))
    loss = policy_loss + vf_coef * value_loss
    if ent_coef:
        entropy = -ad.mean(ad.sum(ad.exp(log_p) * log_p, axis=1))
        loss = loss - ent_coef * entropy
    else:  # not differentiated: computed from the values only, for the diagnostics
        lp = ad.stop_gradient(log_p)
        entropy = -np.mean(np.sum(np.exp(lp) * lp, axis=1))
    r, lr_ = ad.stop_gradient(ratio), ad.stop_gradient(log_ratio)
    if not np.isfinite(r).all():
        raise ValueError("ratio: the new policy's probabilities overflowed (NaN/inf ratio); "
                         "lower the learning rate")
    stats = {
        "policy_loss": float(ad.stop_gradient(policy_loss)),
        "value_loss": float(ad.stop_gradient(value_loss)),
        "entropy": float(ad.stop_gradient(entropy)),
        "approx_kl": float(np.mean((r - 1.0) - lr_)),
        "clip_fraction": float(np.mean(np.abs(r - 1.0) > clip)),
    }
    return loss, stats


def actor_critic_model(params: dict, obs):
    """``(logits [B, A], values [B])`` from separate ``params["actor"]`` and ``params["critic"]`` MLPs."""
    return _tanh_mlp(params["actor"], obs), ad.reshape(_tanh_mlp(params["critic"], obs), (-1,))


def _tanh_mlp(layers: list, x):
    """:func:`rlcourse.mlp` with tanh, minus its per-call checks (this runs once per env step
    and per minibatch); plain numpy ``tanh`` when the weights are arrays (rollouts), the traced
    op when they are being differentiated."""
    tanh = np.tanh if isinstance(layers[0]["w"], np.ndarray) else ad.tanh
    for layer in layers[:-1]:
        x = tanh(x @ layer["w"] + layer["b"])
    last = layers[-1]
    return x @ last["w"] + last["b"]


def make_actor_critic(obs_dim: int, num_actions: int, hidden=(64, 64), seed=0, dtype=np.float32):
    """``(model, params)``: separate tanh MLPs for actor and critic (no shared layers).

    Orthogonal init as in CleanRL/SB3: hidden layers gain sqrt(2), the actor's head 0.01 (so
    the first policy is close to uniform) and the critic's head 1.0. ``model`` is
    :func:`actor_critic_model`.
    """
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    sizes = [int(obs_dim), *[int(h) for h in hidden]]
    params = {
        "actor": mlp_init([*sizes, int(num_actions)], rng, out_scale=0.01, dtype=dtype),
        "critic": mlp_init([*sizes, 1], rng, out_scale=1.0, dtype=dtype),
    }
    return actor_critic_model, params



@single_thread_blas()
def ppo(env, model, params, total_steps: int = 100_000, rollout: int = 128, epochs: int = 4,
        minibatch: int = 256, lr: float = 3e-4, gamma: float = 0.99, lam: float = 0.95,
        clip: float = 0.2, vf_coef: float = 0.5, ent_coef: float = 0.0,
        max_grad_norm: float | None = 0.5, anneal_lr: bool = True, anneal_clip: bool = False,
        norm_adv: bool = True, opt=None, dtype=np.float32, seed: int = 0, callback=None,
        progress: bool | None = None):
    """Train ``params`` of ``model(params, obs) -> (logits, values)`` with PPO on a vector env.

    ``total_steps`` env steps (all ``n`` copies counted) in updates of ``rollout * n`` samples;
    ``epochs`` passes per update in shuffled minibatches of ``minibatch``; advantages by GAE
    (``gamma``, ``lam``), normalised per minibatch if ``norm_adv``; gradients clipped to global
    norm ``max_grad_norm`` (None: no clipping); learning rate annealed linearly to 0 over the
    run if ``anneal_lr`` (and the clip range too if ``anneal_clip``, as the RL Zoo's CartPole
    settings do). ``opt`` is any optimiser with ``init``/``step`` (default
    ``Adam(lr, eps=1e-5)``; with your own ``opt`` its ``lr`` is the one annealed). Parameters
    and buffers are cast to ``dtype`` (float32 halves memory and is ~2x faster than float64).

    ``callback(info)`` runs after every update with a dict (``update``, ``steps``, ``params``,
    ``mean_return``, ``episode_returns`` and the diagnostics); returning ``False`` stops training.
    ``progress``: None shows a status line only on an interactive terminal (never in a
    notebook), True/False force it. The env is reset with ``seed``; the same seed gives the
    same result bit for bit. Returns a :class:`~rlcourse.algos.training.TrainResult`.
    """
    total_steps = check_count("total_steps", total_steps)
    rollout = check_count("rollout", rollout)
    epochs = check_count("epochs", epochs)
    minibatch = check_count("minibatch", minibatch)
    gamma, lam, clip = (check_probability(k, v) for k, v in (("gamma", gamma), ("lam", lam),
                                                                ("clip", clip)))
    if max_grad_norm is not None and not max_grad_norm > 0:
        raise ValueError(f"max_grad_norm: expected a number > 0 or None, got {max_grad_norm!r}")
    if opt is None:
        opt = Adam(lr, eps=1e-5)
    base_lr = opt.lr
    rng = np.random.default_rng(seed)
    layout, theta, params = FlatParams.packed(params, dtype)
    opt_state = opt.init(theta)
    batch = rollout * env.n
    num_updates = max(total_steps // batch, 1)
    grad_fn = ad.value_and_grad(_ppo_loss)
    log = TrainingLog(env, "ppo", num_updates * batch, progress, callback)
    obs = env.reset(seed=seed)
    for update in range(num_updates):
        remaining = 1.0 - update / num_updates
        step_lr = base_lr * remaining if anneal_lr else base_lr
        step_clip = clip * remaining if anneal_clip else clip
        data = collect_rollout(env, model, params, obs, rollout, rng, dtype, log.episodes_ended)
        obs = data.last_obs
        log.env_steps(batch)
        advantages, returns = _gae(data.rewards, data.values, data.next_values, data.terminated,
                                   data.truncated, gamma, lam)
        flat_obs = data.obs.reshape(batch, *data.obs.shape[2:])
        flat_actions = data.actions.reshape(batch)
        flat_logp = data.log_probs.reshape(batch)
        flat_adv = advantages.reshape(batch)
        flat_ret = returns.reshape(batch)
        sums = dict.fromkeys(("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"),
                             0.0)
        steps_taken = 0
        for _ in range(epochs):
            order = rng.permutation(batch)
            for start in range(0, batch, minibatch):
                idx = order[start:start + minibatch]
                adv = flat_adv[idx]
                if norm_adv and len(idx) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                (_, stats), grads = grad_fn(params, model, flat_obs[idx], flat_actions[idx],
                                            flat_logp[idx], adv, flat_ret[idx], step_clip, vf_coef,
                                            ent_coef)
                grads = {"theta": layout.flatten(grads)}
                if max_grad_norm is not None:
                    grads, _ = clip_by_global_norm(grads, max_grad_norm)
                new_theta, opt_state = opt.step(theta, grads, opt_state, lr=step_lr)
                theta["theta"][...] = new_theta["theta"]  # params are views of it: now updated
                for key, value in stats.items():
                    sums[key] += value
                steps_taken += 1
        diagnostics = {key: value / steps_taken for key, value in sums.items()}
        diagnostics["explained_variance"] = explained_variance(data.values.reshape(batch), flat_ret)
        if not log.end_update(params, update, **diagnostics):
            break
    return log.result(params)
