"""RLHF with PPO on a tiny language model: sample, score with a reward model, penalise the KL
to a frozen reference per token, and take clipped policy-gradient steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..core import autodiff as ad
from ..core._checks import (
    as_bool_array,
    as_float_array,
    as_int_array,
    as_rng,
    check_callable,
    check_count,
    check_nonnegative,
    check_shape,
)
from ..core.blas import single_thread_blas
from ..core.heap import keep_freed_memory
from ..core.kl import _KL_KINDS, _check_token_mask, exact_kl, kl_penalized_rewards
from ..core.losses import ppo_clip_loss
from ..core.optim import Adam
from ..core.tokenizer import EOS
from ._inputs import (
    check_choice,
    check_clip,
    check_models,
    check_optimizer,
    check_prompts,
    check_rng,
    check_scorer,
    check_scores,
    check_token_id,
)
from .rollout import policy_token_log_probs, sample_rollout

__all__ = ["penalize_missing_eos", "reward_to_go", "rlhf_advantages", "RLHFHistory", "rlhf_step",
           "rlhf_train"]


def penalize_missing_eos(scores, tokens, mask, penalty: float, eos: int = EOS) -> np.ndarray:
    """``scores`` ``[B]`` minus ``penalty`` for each completion that holds no ``eos``: ``[B]``.

    ``tokens``, ``mask`` ``[B, L]`` as ``generate`` returns them (``mask`` True on the sampled
    tokens, ``eos`` included). A completion without ``eos`` among its sampled tokens was cut at
    the length limit: it is not a finished answer, and a reward model trained on finished
    answers should not score it as one. This is TRL's ``missing_eos_penalty`` ("penalty applied
    to the score when the model fails to generate an EOS token", a positive number), applied
    as ``scores[~contain_eos_token] -= missing_eos_penalty``. An ``eos`` outside the mask (in a
    prompt holding an earlier turn) does not count.
    """
    scores = as_float_array("scores", scores, ndim=1)
    tokens = as_int_array("tokens", tokens, low=0)
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, tokens.shape, "tokens")
    if mask.ndim != 2 or len(mask) != len(scores):
        raise ValueError(f"mask: expected shape [B, L] with B = {len(scores)} (one row per entry "
                         f"of scores), got {mask.shape}")
    penalty = check_nonnegative("penalty", penalty, positive=True)
    eos = check_token_id("eos", eos)
    finished = ((tokens == eos) & mask).any(axis=1)
    return np.where(finished, scores, scores - penalty)


def reward_to_go(rewards, mask) -> np.ndarray:
    """``G[b, t] = sum of rewards[b, t:]`` (undiscounted, within the row) on action tokens: ``[B, T]``.

    A completion is one episode, so nothing crosses from one row to the next; entries where
    ``mask`` is False are 0.
    """
    rewards = as_float_array("rewards", rewards, ndim=2)
    mask = _check_token_mask(mask, rewards.shape, against="rewards")
    rewards = np.where(mask, rewards, 0.0)
    return np.where(mask, np.cumsum(rewards[:, ::-1], axis=1)[:, ::-1], 0.0)


def rlhf_advantages(rewards, mask) -> np.ndarray:
    """Per-token advantages ``[B, T]`` for PPO on tokens: reward-to-go minus a baseline, normalised.

    The baseline at column ``t`` is the mean reward-to-go of the batch's action tokens in that
    column (prompts share one length, so a column is one step into the completion); the result
    is divided by its standard deviation over all action tokens (when that is > 0). This is a
    critic-free stand-in for GAE with a learned value, as simple as RLHF-PPO gets.
    """
    g = reward_to_go(rewards, mask)
    mask = np.asarray(mask, dtype=bool)
    counts = mask.sum(axis=0)
    baseline = g.sum(axis=0) / np.maximum(counts, 1)
    adv = np.where(mask, g - baseline, 0.0)
    std = adv[mask].std()
    return adv / std if std > 0 else adv


class RLHFHistory(NamedTuple):
    """What ``rlhf_train`` returns: the final ``params`` and one entry per iteration of
    ``score`` (mean reward-model score of the sampled completions, before any missing-EOS
    penalty), ``kl`` (mean exact ``KL(pi || ref)`` per completion, in nats, from ``exact_kl``),
    ``metric`` (mean of the caller's ``metric(tokens, mask)``, NaN if none was given),
    ``length`` (mean completion length in tokens, EOS included), ``truncated`` (fraction of
    completions cut at ``max_new`` tokens without EOS), ``clip_fraction`` and ``approx_kl`` (of
    the last epoch)."""

    params: dict
    score: np.ndarray
    kl: np.ndarray
    metric: np.ndarray
    length: np.ndarray
    truncated: np.ndarray
    clip_fraction: np.ndarray
    approx_kl: np.ndarray


def _check_rlhf(policy, ref, reward_fn, prompts, max_new, beta, epochs, clip, kind,
                missing_eos_penalty, eos=EOS, rng=None, opt=None, opt_state=None, *, step=True):
    """The arguments of ``rlhf_step`` (and those ``rlhf_train`` shares with it), checked:
    ``rng``, ``opt`` and ``opt_state`` unless ``step=False`` (``rlhf_train``)."""
    configs = check_models(policy=policy, ref=ref)
    check_prompts(prompts, max_new, configs)
    check_scorer("reward_fn", reward_fn)
    check_nonnegative("beta", beta)
    check_count("epochs", epochs)
    check_clip(clip)
    check_choice("kind", kind, _KL_KINDS)
    if missing_eos_penalty is not None:
        check_nonnegative("missing_eos_penalty", missing_eos_penalty, positive=True)
    check_token_id("eos", eos, configs["policy"].vocab)
    if step:  # rlhf_step's own arguments
        check_rng(rng)
        check_optimizer(opt, opt_state, policy)


def rlhf_step(policy, ref, reward_fn: Callable, prompts, rng: np.random.Generator, opt, opt_state,
              beta: float = 0.05, max_new: int = 8, epochs: int = 4, clip: float = 0.2, kind: str = "k1",
              missing_eos_penalty: float | None = None, eos: int = EOS):
    """One RLHF-PPO iteration on the tiny LM: sample, score, penalise, advantage, clipped updates.

    1. ``generate`` one completion per row of ``prompts`` ``[B, P]`` from ``policy``;
    2. ``scores = reward_fn(tokens, mask)`` ``[B]`` (the reward model), minus
       ``missing_eos_penalty`` for each completion cut at ``max_new`` tokens without ``eos``
       (TRL's ``missing_eos_penalty``; ``None``, the default as in TRL, scores a cut completion
       as if it were finished, which treats the length limit as an episode end);
    3. per-token rewards ``kl_penalized_rewards(scores, logp, ref_logp, mask[:, 1:], beta, kind)``
       with ``logp`` of the sampling policy and ``ref_logp`` of the frozen ``ref``;
    4. ``rlhf_advantages`` of those rewards;
    5. ``epochs`` full-batch Adam steps on ``ppo_clip_loss`` (token aggregation).
    Only completion tokens enter steps 3-5. The KL sits in the reward (``kind="k1"``, the log-ratio
    of the sampled token): the policy gradient of that reward is exactly the gradient of
    ``-beta KL(pi || ref)`` of the whole completion. Returns ``(policy, opt_state, stats)``,
    ``stats`` a dict with the rollout (``tokens``, ``mask``, ``scores``, the reward model's scores
    before any penalty) and the figures ``RLHFHistory`` records.
    """
    _check_rlhf(policy, ref, reward_fn, prompts, max_new, beta, epochs, clip, kind,
                missing_eos_penalty, eos, rng, opt, opt_state)
    data = sample_rollout(policy, ref, prompts, max_new, rng)
    scores = check_scores("reward_fn", reward_fn(data.tokens, data.mask), len(data.tokens))
    finished = ((data.tokens == eos) & data.mask).any(axis=1)
    penalized = scores if missing_eos_penalty is None else \
        penalize_missing_eos(scores, data.tokens, data.mask, missing_eos_penalty, eos)
    rewards = kl_penalized_rewards(penalized, data.old_logp, data.ref_logp, data.action, beta, kind)
    advantages = rlhf_advantages(rewards, data.action)

    def loss_fn(params):
        logp = policy_token_log_probs(params, data.tokens)
        return ppo_clip_loss(logp, data.old_logp, advantages, data.action, clip, aggregate="token")

    step = ad.value_and_grad(loss_fn)
    for _ in range(epochs):
        (_, clip_fraction, approx_kl), grads = step(policy)
        policy, opt_state = opt.step(policy, grads, opt_state)
    stats = {
        "tokens": data.tokens, "mask": data.mask, "scores": scores,
        "score": float(scores.mean()),
        "kl": float(exact_kl(data.old_logits, data.ref_logits, data.mask).mean()),
        "length": float(data.action.sum(axis=1).mean()),
        "truncated": float(np.mean(~finished)),
        "clip_fraction": clip_fraction, "approx_kl": approx_kl,
    }
    return policy, opt_state, stats


@single_thread_blas()  # the tiny LM's matrices gain nothing from BLAS threads on a busy machine
def rlhf_train(policy, ref, reward_fn: Callable, prompts, iterations: int, beta: float = 0.05,
               lr: float = 1e-3, seed=0, batch: int = 64, max_new: int = 8, epochs: int = 4,
               clip: float = 0.2, kind: str = "k1", metric: Callable | None = None,
               missing_eos_penalty: float | None = None) -> RLHFHistory:
    """``iterations`` of ``rlhf_step``, each on ``batch`` prompts drawn from ``prompts`` ``[N, P]``.

    ``ref`` stays frozen (usually the SFT model that ``policy`` starts from). ``metric(tokens,
    mask) -> [B]`` scores each rollout by something the reward model does not see (true quality,
    fluency) to watch for reward hacking. ``missing_eos_penalty`` (see ``penalize_missing_eos``)
    is subtracted from the score of each completion cut at ``max_new`` tokens; ``None`` (TRL's
    default) scores it as if it were finished. Deterministic given ``seed``.
    """
    _check_rlhf(policy, ref, reward_fn, prompts, max_new, beta, epochs, clip, kind,
                missing_eos_penalty, step=False)
    prompts = np.asarray(prompts)
    check_count("iterations", iterations)
    check_count("batch", batch)
    if metric is not None:
        check_callable("metric", metric, 2, "None or a function (tokens, mask) -> [B]")
    rng = as_rng(seed)
    keep_freed_memory()  # the model's 0.25-4 MB activations: reuse freed memory, no page faults
    opt = Adam(lr=lr)
    state = opt.init(policy)
    keys = ("score", "kl", "metric", "length", "truncated", "clip_fraction", "approx_kl")
    history = {k: np.empty(iterations) for k in keys}
    for i in range(iterations):
        rows = rng.choice(len(prompts), size=min(batch, len(prompts)), replace=False)
        policy, state, stats = rlhf_step(policy, ref, reward_fn, prompts[rows], rng, opt, state,
                                         beta, max_new, epochs, clip, kind, missing_eos_penalty)
        stats["metric"] = (float(np.mean(check_scores("metric", metric(stats["tokens"], stats["mask"]),
                                                      len(stats["tokens"]))))
                           if metric is not None else np.nan)
        for k in keys:
            history[k][i] = stats[k]
    return RLHFHistory(policy, *(history[k] for k in keys))
