"""Proximal policy optimisation (Schulman et al., 2017) with the clipped surrogate and GAE.

One update: collect ``rollout`` steps from each of the ``n`` copies with the current policy,
compute GAE advantages and returns (truncation bootstraps from ``V(final_obs)``), then take
``epochs`` passes over the batch in shuffled minibatches, each a gradient step on

    loss = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))
           + vf_coef * 0.5 * mean((V(obs) - returns)^2) - ent_coef * mean(entropy)

with ``ratio = pi_new(a|s) / pi_old(a|s)``. The ``min`` makes the objective pessimistic: once
the ratio has moved past ``1 + eps`` in the direction the advantage favours (up for A > 0,
down past ``1 - eps`` for A < 0), the gradient of that sample is exactly zero. Samples still
inside the range keep pushing, so the clip slows the policy's drift but does not bound it.

Optional, off by default: ``vf_clip`` replaces the value term by the clipped value loss of
OpenAI Baselines' PPO2 (CleanRL's ``clip_vloss``),

    0.5 * mean(max((V - G)^2, (V_old + clip(V - V_old, -vf_clip, vf_clip) - G)^2))

with ``V_old`` the values stored at collection time; ``target_kl`` ends an update's epochs early.
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
from ..core.kl import kl_estimate
from ..core.losses import ppo_clip_objective
from ..core.optim import Adam
from ..core.returns import gae
from .rollout import check_minibatch, check_obs, collect_rollout, explained_variance
from .trainer import (
    CHECKED_BY_CALLER,
    Learner,
    TrainingLog,
    average,
    check_env,
    model_output,
    standardise,
)

__all__ = ["ppo", "ppo_loss", "PPO_CARTPOLE"]

# The RL Zoo's tuned PPO hyperparameters for CartPole-v1 (rl-baselines3-zoo, hyperparams/ppo.yml):
# 8 copies, 32-step rollouts (batches of 256, one minibatch), 20 epochs, lr 1e-3 and clip 0.2 both
# annealed linearly to 0, GAE lambda 0.8, gamma 0.98, no entropy bonus, for 64-64 networks
# (make_actor_critic's default). One change: 50k steps where the Zoo trains for 1e5, so both
# schedules anneal twice as fast. Over seeds 0-4 the greedy policy then scores 500 on at least
# four (tests/test_ppo.py::test_ppo_cartpole_preset_over_five_seeds).
PPO_CARTPOLE = dict(
    total_steps=50_000, rollout=32, epochs=20, minibatch=256, lr=1e-3, gamma=0.98, lam=0.8,
    clip=0.2, ent_coef=0.0, anneal_lr=True, anneal_clip=True,
)


def ppo_loss(params, model, obs, actions, old_log_probs, advantages, returns, clip: float = 0.2,
             vf_coef: float = 0.5, ent_coef: float = 0.0, old_values=None,
             vf_clip: float | None = None):
    """The PPO loss on one minibatch of ``B`` samples, for ``value_and_grad``.

    ``model(params, obs [B, ...]) -> (logits [B, A], values [B])``; ``actions [B]`` ints,
    ``old_log_probs [B]`` of those actions under the policy that collected them, ``advantages``
    and ``returns`` ``[B]`` (normalise the advantages beforehand if you want to). With
    ``vf_clip`` the value term is the clipped one (see the module docstring) around
    ``old_values [B]``, the values stored at collection time. Returns ``(loss, stats)`` with
    ``stats`` a dict of floats: ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl`` (the
    k3 estimate of ``KL(old || new)``, ``mean((r - 1) - log r)``) and ``clip_fraction`` (share of
    samples with ``|ratio - 1| > clip``).
    """
    actions = np.asarray(actions)
    check_minibatch(actions, old_log_probs=old_log_probs, advantages=advantages, returns=returns)
    obs = check_obs(obs, actions)
    clip = check_probability("clip", clip)
    vf_coef, ent_coef = check_nonnegative("vf_coef", vf_coef), check_nonnegative("ent_coef", ent_coef)
    if vf_clip is not None:
        vf_clip = check_nonnegative("vf_clip", vf_clip, positive=True)
        if old_values is None:
            raise ValueError("old_values: vf_clip needs the values stored at collection time "
                             "[B] like actions, got None")
        check_minibatch(actions, old_values=old_values)
    logits, values = model_output(model, params, obs, "actor_critic")
    log_probs = categorical_log_prob(logits, actions)
    ratio = ad.exp(log_probs - old_log_probs)
    policy_loss = -ad.mean(ppo_clip_objective(ratio, advantages, clip))
    squared_error = ad.square(values - returns)
    if vf_clip is not None:  # the pessimistic (larger) of the plain and the clipped error
        moved = old_values + ad.clip(values - old_values, -vf_clip, vf_clip)
        squared_error = ad.maximum(squared_error, ad.square(moved - returns))
    value_loss = 0.5 * ad.mean(squared_error)
    # the entropy enters the graph only when it is part of the loss
    entropy = ad.mean(categorical_entropy(logits if ent_coef else ad.stop_gradient(logits)))
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    r = ad.stop_gradient(ratio)
    stats = {
        "policy_loss": float(ad.stop_gradient(policy_loss)),
        "value_loss": float(ad.stop_gradient(value_loss)),
        "entropy": float(ad.stop_gradient(entropy)),
        "approx_kl": float(np.mean(kl_estimate(old_log_probs, ad.stop_gradient(log_probs), "k3"))),
        "clip_fraction": float(np.mean(np.abs(r - 1.0) > clip)),
    }
    return loss, stats


@single_thread_blas()
def ppo(env, model, params, total_steps: int = 100_000, *, rollout: int = 128, epochs: int = 4,
        minibatch: int = 256, lr: float = 3e-4, gamma: float = 0.99, lam: float = 0.95,
        clip: float = 0.2, vf_coef: float = 0.5, ent_coef: float = 0.0,
        max_grad_norm: float | None = 0.5, anneal_lr: bool = True, anneal_clip: bool = False,
        norm_adv: bool = True, target_kl: float | None = None, vf_clip: float | None = None,
        opt=None, dtype=np.float32, seed: int = 0, callback=None, progress: bool | None = None):
    """Train ``model(params, obs) -> (logits [n, A], values [n])`` with PPO on a vector env.

    The arguments and the result follow the trainer contract (:mod:`rlcourse.algos.trainer`).

    Args:
        total_steps: env steps, all ``n`` copies counted, in updates of ``rollout * n`` samples.
        rollout: vector steps collected per update.
        epochs: passes over each update's batch.
        minibatch: samples per gradient step (the batch is shuffled every epoch).
        lr: Adam's learning rate (ignored when ``opt`` is given; then ``opt.lr`` is used).
        gamma: discount; lam: GAE's lambda (0: one-step TD errors, 1: Monte Carlo).
        clip: the ratio's clip range eps.
        vf_coef, ent_coef: weights of the value loss and of the entropy bonus.
        max_grad_norm: clip the global gradient norm to this (None: no clipping).
        anneal_lr, anneal_clip: lower the learning rate / clip range linearly to 0 over the run.
        norm_adv: standardise the advantages of each minibatch.
        target_kl: stop an update's epochs early once an epoch's mean approx_kl exceeds it
            (None: always run every epoch).
        vf_clip: clip the value loss around the rollout's values (None: the plain value loss).
        opt: an optimiser with ``init``/``step``/``lr`` (default ``Adam(lr, eps=1e-5)``).
        dtype: parameters and buffers (float32 halves memory and is ~2x faster than float64).
        seed, callback, progress: as in the trainer contract.

    Returns a :class:`~rlcourse.algos.trainer.TrainResult` whose history holds, per update,
    the minibatch means of ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``,
    ``clip_fraction``; ``explained_variance`` of the rollout's returns by the values that
    collected it; ``epochs`` run (fewer than ``epochs`` when ``target_kl`` stopped it); ``lr``
    and ``clip`` used.
    """
    settings = _checked_settings(**{k: v for k, v in locals().items() if k not in _NOT_SETTINGS})
    learner = Learner(params, opt or Adam(lr, eps=1e-5), dtype, max_grad_norm)
    rng = agent_rng(seed)
    batch = rollout * env.n
    num_updates = max(total_steps // batch, 1)
    log = TrainingLog(env, "ppo", num_updates * batch, progress, callback, settings)
    loss_and_grad = ad.value_and_grad(ppo_loss)
    obs = env.reset(seed=seed)
    for update in range(num_updates):
        remaining = 1.0 - update / num_updates
        step_lr = learner.opt.lr * (remaining if anneal_lr else 1.0)
        step_clip = clip * (remaining if anneal_clip else 1.0)
        # 1. A rollout with the current policy (next_values bootstrap truncations, not terminals)
        data = collect_rollout(env, model, learner.params, obs, rollout, rng, dtype)
        obs = data.last_obs
        log.record_steps(data.terminated, data.truncated)
        advantages, returns = gae(data.rewards, data.values, data.next_values, data.terminated,
                                  data.truncated, gamma, lam)
        # 2. One flat batch of samples, each with the log-prob of the policy that chose it
        b_obs, b_actions, b_logp, b_values = (x.reshape(batch, *x.shape[2:]) for x in
                                              (data.obs, data.actions, data.log_probs, data.values))
        b_adv, b_returns = advantages.reshape(batch), returns.reshape(batch)
        # 3. Several epochs of clipped updates on shuffled minibatches
        stats, epochs_run = [], 0
        for _ in range(epochs):
            order = rng.permutation(batch)
            epoch_stats = []
            for start in range(0, batch, minibatch):
                idx = order[start:start + minibatch]
                adv = standardise(b_adv[idx]) if norm_adv else b_adv[idx]
                (_, step_stats), grads = loss_and_grad(
                    learner.params, model, b_obs[idx], b_actions[idx], b_logp[idx], adv,
                    b_returns[idx], step_clip, vf_coef, ent_coef, b_values[idx], vf_clip)
                learner.step(grads, step_lr)
                epoch_stats.append(step_stats)
            stats.extend(epoch_stats)
            epochs_run += 1
            if target_kl is not None and average(epoch_stats)["approx_kl"] > target_kl:
                break
        if not log.end_update(learner.params, last=update == num_updates - 1, **average(stats),
                              explained_variance=explained_variance(b_values, b_returns),
                              epochs=epochs_run, lr=step_lr, clip=step_clip):
            break
    return log.result(learner.params)


_NOT_SETTINGS = ("model", "params", "opt", "callback", "progress")


def _checked_settings(total_steps, rollout, epochs, minibatch, lr, gamma, lam, clip, vf_coef,
                      ent_coef, max_grad_norm, anneal_lr, anneal_clip, norm_adv, target_kl, vf_clip,
                      dtype, seed, env=CHECKED_BY_CALLER) -> dict:
    """``ppo``'s arguments, each checked once, as the ``settings`` dict of its result (``env``
    is checked, not recorded; the model, params, opt and callback are checked where used)."""
    check_env(env)
    for name, value in (("total_steps", total_steps), ("rollout", rollout), ("epochs", epochs),
                        ("minibatch", minibatch)):
        check_count(name, value)
    for name, value in (("gamma", gamma), ("lam", lam), ("clip", clip)):
        check_probability(name, value)
    for name, value in (("lr", lr), ("vf_coef", vf_coef), ("ent_coef", ent_coef)):
        check_nonnegative(name, value)
    for name, value in (("target_kl", target_kl), ("vf_clip", vf_clip),
                        ("max_grad_norm", max_grad_norm)):
        if value is not None:
            check_nonnegative(name, value, positive=True)
    for name, value in (("anneal_lr", anneal_lr), ("anneal_clip", anneal_clip),
                        ("norm_adv", norm_adv)):
        check_flag(name, value)
    as_rng(seed)
    dtype = float_dtype("dtype", dtype)
    return dict(total_steps=total_steps, rollout=rollout, epochs=epochs, minibatch=minibatch,
                lr=lr, gamma=gamma, lam=lam, clip=clip, vf_coef=vf_coef, ent_coef=ent_coef,
                max_grad_norm=max_grad_norm, anneal_lr=anneal_lr, anneal_clip=anneal_clip,
                norm_adv=norm_adv, target_kl=target_kl, vf_clip=vf_clip,
                dtype=np.dtype(dtype).name, seed=seed)
