"""Language-model post-training on token sequences: log-probs, masks, KL and the PPO-clip loss.

Conventions shared by every function here:

- ``tokens`` ``[B, L]`` holds whole sequences (prompt, completion, padding). A causal LM's
  ``logits[:, t]`` predicts ``tokens[:, t + 1]``, so the logits that score a sequence are
  ``lm_logits(params, tokens)[:, :-1]``, of shape ``[B, L-1, V]``.
- ``mask`` ``[B, L]`` is True on the tokens the policy chose (the completion, EOS included).
  Only ``mask[:, 1:]`` can count: token 0 has no logits predicting it. Prompt, padding and
  observation tokens are False and never enter a loss, a KL or a gradient.
- Functions of per-token arrays (``kl_estimate``, ``kl_penalized_rewards``, ``ppo_clip_loss``)
  take ``logp``, ``ref_logp``, ``advantages`` aligned with ``tokens[:, 1:]``, shape ``[B, T]``
  with ``T = L-1`` (as ``token_log_probs`` returns them), and the mask aligned with them:
  ``mask[:, 1:]``.

Every function works on plain arrays and on traced values inside ``value_and_grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_float_array, as_int_array, check_shape
from .blas import single_thread_blas

__all__ = [
    "token_log_probs", "sequence_log_prob", "completion_mask", "exact_kl", "sampled_log_ratio",
    "kl_estimate", "kl_penalized_rewards", "ppo_clip_loss", "PPOClipResult", "reward_to_go",
    "rlhf_advantages", "rlhf_step", "rlhf_train", "RLHFHistory",
]


def _check_logits(name: str, logits) -> np.ndarray:
    """The value of ``logits`` (traced or not) as ``[B, T, V]``, with no NaN and no +inf.

    ``-inf`` is allowed: it is how a token is ruled out (probability exactly 0).
    """
    value = np.asarray(ad.stop_gradient(logits))
    if value.dtype == object or not np.issubdtype(value.dtype, np.floating):
        raise TypeError(f"{name}: expected float logits, got dtype {value.dtype}")
    if value.ndim != 3:
        raise ValueError(f"{name}: expected shape [B, L-1, V], got {value.shape}")
    bad = np.isnan(value) | np.isposinf(value)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}: expected no NaN or +inf, got {value[where]} at index {where}")
    return value


def _check_tokens(logits_value: np.ndarray, tokens, logits_name: str = "logits") -> np.ndarray:
    """``tokens`` ``[B, L]`` in ``[0, V)`` whose shape fits logits ``[B, L-1, V]``."""
    batch, steps, vocab = logits_value.shape
    tokens = as_int_array("tokens", tokens, low=0, high=vocab)
    if tokens.ndim != 2 or tokens.shape != (batch, steps + 1):
        raise ValueError(
            f"tokens: expected shape {(batch, steps + 1)} (one more position than {logits_name} "
            f"{logits_value.shape}, because logits[:, t] predicts tokens[:, t+1]), got {tokens.shape}"
        )
    return tokens


def _check_mask(mask, tokens_shape: tuple) -> np.ndarray:
    """``mask`` ``[B, L]`` as bools, with at least one counted token (``mask[:, 1:]``) per row."""
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, tokens_shape, "tokens")
    counted = mask[:, 1:].sum(axis=1)
    if not counted.any():
        raise ValueError("mask: no position is True in mask[:, 1:]; there are no action tokens to score")
    empty = np.flatnonzero(counted == 0)
    if empty.size:
        raise ValueError(
            f"mask: sequence {int(empty[0])} has no action token in mask[:, 1:] "
            f"({empty.size} such sequences); its log-prob or KL would be an empty sum"
        )
    return mask


def token_log_probs(logits, tokens):
    """``log pi(tokens[:, t+1] | tokens[:, :t+1])`` for every t: ``[B, L-1]``.

    ``logits`` ``[B, L-1, V]`` (``lm_logits(...)[:, :-1]``) and ``tokens`` ``[B, L]`` ints in
    ``[0, V)``. Entry ``[b, t]`` is the log-probability of ``tokens[b, t+1]``; nothing is masked.
    """
    value = _check_logits("logits", logits)
    tokens = _check_tokens(value, tokens)
    logp = ad.log_softmax(logits, axis=-1)
    return ad.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]


def sequence_log_prob(logits, tokens, mask):
    """``log pi(completion | prompt)`` per sequence: ``[B]``.

    The sum of ``token_log_probs(logits, tokens)`` over the positions where ``mask[:, 1:]`` is
    True. Masked positions get exactly zero gradient, even where their log-prob is ``-inf``.
    Raises if a sequence has no counted token.
    """
    value = _check_logits("logits", logits)
    tokens = _check_tokens(value, tokens)
    mask = _check_mask(mask, tokens.shape)
    lp = token_log_probs(logits, tokens)
    # where, not multiply: 0 * -inf would be NaN at a ruled-out padding token
    return ad.sum(ad.where(mask[:, 1:], lp, 0.0), axis=1)


def completion_mask(tokens, prompt_len, eos: int = 2) -> np.ndarray:
    """True on the completion tokens of ``tokens`` ``[B, L]``: ``[B, L]`` bool.

    A completion starts at position ``prompt_len`` (an int, or one per row ``[B]``) and runs up
    to and including the first ``eos`` at or after it; what follows (padding) is False, and so
    is the whole prompt. A row with no ``eos`` is a completion cut at the length limit: every
    position from ``prompt_len`` on is True.
    """
    tokens = as_int_array("tokens", tokens, low=0)
    if tokens.ndim != 2:
        raise ValueError(f"tokens: expected shape [B, L], got {tokens.shape}")
    batch, length = tokens.shape
    starts = as_int_array("prompt_len", prompt_len, low=0, high=length + 1)
    starts = np.broadcast_to(starts, (batch,)) if starts.ndim == 0 else starts
    check_shape("prompt_len", starts, (batch,), "tokens' batch")
    pos = np.arange(length)[None, :]
    after = pos >= starts[:, None]
    is_eos = (tokens == eos) & after
    # positions strictly after the first eos of the completion
    past_eos = (np.cumsum(is_eos, axis=1) - is_eos) > 0
    return after & ~past_eos


def _check_logits_pair(policy_logits, ref_logits) -> np.ndarray:
    """Check two logits arrays of one shape ``[B, T, V]``; return the policy's values."""
    pv = _check_logits("policy_logits", policy_logits)
    rv = _check_logits("ref_logits", ref_logits)
    check_shape("ref_logits", rv, pv.shape, "policy_logits")
    return pv


def exact_kl(policy_logits, ref_logits, mask):
    """``KL(pi || ref)`` summed over each sequence's counted positions: ``[B]``, always >= 0.

    ``policy_logits``, ``ref_logits`` ``[B, L-1, V]`` (as for ``sequence_log_prob``), ``mask``
    ``[B, L]``: position ``t`` counts where ``mask[:, t+1]`` is True. At each position the KL is
    the exact sum over the whole vocabulary, ``sum_v pi(v) (log pi(v) - log ref(v))``, not a
    sample; the result is the sequence-level KL of the completion given the sampled prefix.
    Divide by the token count for a per-token figure. The gradient flows into
    ``policy_logits`` (and ``ref_logits`` if traced; wrap it in ``stop_gradient`` to freeze it).
    """
    pv = _check_logits_pair(policy_logits, ref_logits)
    mask = _check_mask(mask, (pv.shape[0], pv.shape[1] + 1))
    lp, lr = ad.log_softmax(policy_logits, axis=-1), ad.log_softmax(ref_logits, axis=-1)
    possible = np.isfinite(pv)  # a token the policy rules out adds exactly 0, never 0 * -inf
    diff = ad.where(possible, lp, 0.0) - ad.where(possible, lr, 0.0)
    per_position = ad.sum(ad.where(possible, ad.exp(lp) * diff, 0.0), axis=-1)
    return ad.sum(ad.where(mask[:, 1:], per_position, 0.0), axis=1)


def sampled_log_ratio(policy_logits, ref_logits, actions, mask):
    """``log pi(a) - log ref(a)`` summed over each sequence's counted actions: ``[B]``.

    ``actions`` ``[B, L]`` are the sampled tokens (logits ``[:, t]`` score ``actions[:, t+1]``).
    This is a one-sample estimate of ``exact_kl``: unbiased when the actions were drawn from
    ``pi``, but a single sequence's value can be negative, because the sampled token can be
    likelier under ``ref`` than under ``pi``.
    """
    _check_logits_pair(policy_logits, ref_logits)
    return sequence_log_prob(policy_logits, actions, mask) - sequence_log_prob(ref_logits, actions, mask)


_KL_KINDS = ("k1", "k2", "k3")


def _log_prob_values(name: str, x, mask: np.ndarray | None = None) -> np.ndarray:
    """The value of per-token log-probs ``x`` (traced or not): no NaN or +inf anywhere, and
    ``-inf`` only where ``mask`` is False (a padding token the model rules out)."""
    value = np.asarray(ad.stop_gradient(x))
    if value.dtype == object or not np.issubdtype(value.dtype, np.number):
        raise TypeError(f"{name}: expected a float array, got dtype {value.dtype}")
    value = value if np.issubdtype(value.dtype, np.floating) else value.astype(np.float64)
    bad = np.isnan(value) | np.isposinf(value)
    if mask is not None and mask.shape == value.shape:
        bad |= np.isneginf(value) & mask
    elif mask is None:
        bad |= np.isneginf(value)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}: expected finite log-probs on action tokens, got {value[where]} at {where}")
    return value


def _same_shape_values(logp, ref_logp, mask=None, ref_name: str = "ref_logp"):
    a = _log_prob_values("logp", logp, mask)
    b = _log_prob_values(ref_name, ref_logp, mask)
    check_shape(ref_name, b, a.shape, "logp")
    return a, b


def kl_estimate(logp, ref_logp, kind: str = "k1"):
    """Per-token estimates of ``KL(pi || ref)`` from the log-probs of tokens sampled from ``pi``.

    With ``d = ref_logp - logp``: ``k1 = -d`` (unbiased, can be negative), ``k2 = d**2 / 2``
    (biased, >= 0) and ``k3 = exp(d) - d - 1`` (unbiased and >= 0). Elementwise, any shape;
    ``logp`` may be traced.
    """
    lp, rp = _same_shape_values(logp, ref_logp)
    if kind not in _KL_KINDS:
        raise ValueError(f"kind: expected one of {_KL_KINDS}, got {kind!r}")
    # keep traced inputs traced; anything else (lists, ints) as the checked float arrays
    d = (ref_logp if isinstance(ref_logp, ad.Tensor) else rp) - (logp if isinstance(logp, ad.Tensor) else lp)
    if kind == "k1":
        return -d
    if kind == "k2":
        return 0.5 * d * d
    return ad.exp(d) - d - 1.0


def _check_token_mask(mask, shape: tuple, name: str = "mask") -> np.ndarray:
    mask = as_bool_array(name, mask)
    check_shape(name, mask, shape, "logp")
    if not mask.any():
        raise ValueError(f"{name}: every entry is False; there are no action tokens")
    return mask


def _last_true(mask: np.ndarray) -> np.ndarray:
    """Column of the last True in each row of ``mask`` ``[B, T]``; raises on an empty row."""
    empty = np.flatnonzero(~mask.any(axis=1))
    if empty.size:
        raise ValueError(
            f"mask: sequence {int(empty[0])} has no action token; its score has no token to go on"
        )
    return mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)


def kl_penalized_rewards(scores, logp, ref_logp, mask, beta: float = 0.05, kind: str = "k1") -> np.ndarray:
    """RLHF per-token rewards ``[B, T]``: ``-beta * kl_estimate`` on every action token, plus the
    reward model's ``scores`` ``[B]`` on each sequence's last action token; 0 where ``mask`` is False.

    ``logp``, ``ref_logp``, ``mask`` ``[B, T]`` are aligned with ``tokens[:, 1:]`` (use
    ``mask[:, 1:]`` of a sequence mask). Rewards are data, not a loss: the result is a plain
    array and carries no gradient. ``beta = 0`` drops the KL penalty (and invites reward hacking).
    """
    mask = as_bool_array("mask", mask)
    lp, rp = _same_shape_values(logp, ref_logp, mask)
    if lp.ndim != 2:
        raise ValueError(f"logp: expected shape [B, T], got {lp.shape}")
    mask = _check_token_mask(mask, lp.shape)
    scores = as_float_array("scores", scores, ndim=1)
    check_shape("scores", scores, lp.shape[:1], "logp's batch")
    beta = float(beta)
    if not (np.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta: expected a finite number >= 0, got {beta}")
    last = _last_true(mask)
    # padding log-probs may be -inf; they are replaced before any arithmetic
    kl = np.asarray(kl_estimate(np.where(mask, lp, 0.0), np.where(mask, rp, 0.0), kind))
    rewards = np.where(mask, -beta * kl, 0.0)
    rewards[np.arange(len(scores)), last] += scores
    return rewards


class PPOClipResult(NamedTuple):
    """What ``ppo_clip_loss`` returns; being a tuple whose first item is the loss, it can be
    returned straight from a function given to ``value_and_grad``.

    ``loss``: the scalar to minimise (traced when ``logp`` is). ``clip_fraction``: the fraction
    of action tokens whose ratio lies outside ``[1-clip, 1+clip]``. ``approx_kl``: the mean over
    action tokens of ``(r - 1) - log r`` with ``r = pi/pi_old`` (the k3 estimator of
    ``KL(pi_old || pi)`` from the rollout's tokens). Both statistics are token means, whatever
    the aggregation of the loss.
    """

    loss: object
    clip_fraction: float
    approx_kl: float


def ppo_clip_loss(logp, old_logp, advantages, mask, clip: float = 0.2, aggregate: str = "token"):
    """PPO's clipped surrogate on action tokens, negated to be minimised.

    Per token: ``r = exp(logp - old_logp)`` and ``o = min(r A, clip(r, 1-clip, 1+clip) A)``.
    ``logp`` ``[B, T]`` (traced), ``old_logp`` ``[B, T]`` from the rollout, ``advantages``
    ``[B, T]`` or ``[B]`` (one per sequence, broadcast over its tokens, as GRPO does), ``mask``
    ``[B, T]`` True on action tokens (``mask[:, 1:]`` of a sequence mask).

    ``aggregate="token"``: ``-sum(o over action tokens) / (number of action tokens in the batch)``,
    so every token weighs the same and a long sequence weighs more. ``aggregate="sequence"``:
    each sequence's ``o`` is averaged over its own action tokens, then ``-mean over sequences``,
    so every sequence weighs the same and a token of a short one weighs more; every sequence
    needs an action token. The gradient is zero exactly where the clipped branch is chosen
    (``r A`` beyond the clip in the direction of ``A``'s sign).
    """
    mask = as_bool_array("mask", mask)
    lp, old = _same_shape_values(logp, old_logp, mask, "old_logp")
    if lp.ndim != 2:
        raise ValueError(f"logp: expected shape [B, T], got {lp.shape}")
    mask = _check_token_mask(mask, lp.shape)
    adv = as_float_array("advantages", advantages)
    if adv.shape == lp.shape[:1]:
        adv = np.broadcast_to(adv[:, None], lp.shape)
    check_shape("advantages", adv, lp.shape, "logp (or [B], one per sequence)")
    clip = float(clip)
    if not 0.0 < clip < 1.0:
        raise ValueError(f"clip: expected a number in (0, 1), got {clip}")
    if aggregate not in ("token", "sequence"):
        raise ValueError(f"aggregate: expected 'token' or 'sequence', got {aggregate!r}")
    counts = mask.sum(axis=1)
    if aggregate == "sequence" and (counts == 0).any():
        raise ValueError(
            f"mask: sequence {int(np.argmin(counts))} has no action token; aggregate='sequence' "
            "would average over nothing (drop it, or use aggregate='token')"
        )
    dtype = lp.dtype
    adv = np.where(mask, adv, 0.0).astype(dtype)
    # padding log-probs may be -inf on both sides; replace them before subtracting
    log_ratio = ad.where(mask, logp, 0.0) - np.where(mask, old, 0.0).astype(dtype)
    ratio = ad.exp(log_ratio)
    objective = ad.minimum(ratio * adv, ad.clip(ratio, 1.0 - clip, 1.0 + clip) * adv)
    objective = ad.where(mask, objective, 0.0)
    if aggregate == "token":
        loss = -ad.sum(objective) / int(counts.sum())
    else:
        loss = -ad.mean(ad.sum(objective, axis=1) / counts.astype(dtype))
    r = np.exp(np.where(mask, lp - np.where(mask, old, 0.0), 0.0))
    clip_fraction = float(np.mean(np.abs(r[mask] - 1.0) > clip))
    approx_kl = float(np.mean((r - 1.0 - np.log(r))[mask]))
    return PPOClipResult(loss, clip_fraction, approx_kl)


def reward_to_go(rewards, mask) -> np.ndarray:
    """``G[b, t] = sum of rewards[b, t:]`` (undiscounted, within the row) on action tokens: ``[B, T]``.

    A completion is one episode, so nothing crosses from one row to the next; entries where
    ``mask`` is False are 0.
    """
    rewards = as_float_array("rewards", rewards, ndim=2)
    mask = _check_token_mask(mask, rewards.shape)
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
    ``score`` (mean reward-model score of the sampled completions), ``kl`` (mean exact
    ``KL(pi || ref)`` per completion, in nats, from ``exact_kl``), ``metric`` (mean of the
    caller's ``metric(tokens, mask)``, NaN if none was given), ``length`` (mean completion
    length in tokens), ``clip_fraction`` and ``approx_kl`` (of the last epoch)."""

    params: dict
    score: np.ndarray
    kl: np.ndarray
    metric: np.ndarray
    length: np.ndarray
    clip_fraction: np.ndarray
    approx_kl: np.ndarray


def rlhf_step(policy, ref, reward_fn: Callable, prompts, rng: np.random.Generator, opt, opt_state,
              beta: float = 0.05, max_new: int = 8, epochs: int = 4, clip: float = 0.2, kind: str = "k1"):
    """One RLHF-PPO iteration on the tiny LM: sample, score, penalise, advantage, clipped updates.

    1. ``generate`` one completion per row of ``prompts`` ``[B, P]`` from ``policy``;
    2. ``scores = reward_fn(tokens, mask)`` ``[B]`` (the reward model);
    3. per-token rewards ``kl_penalized_rewards(scores, logp, ref_logp, mask[:, 1:], beta, kind)``
       with ``logp`` of the sampling policy and ``ref_logp`` of the frozen ``ref``;
    4. ``rlhf_advantages`` of those rewards;
    5. ``epochs`` full-batch Adam steps on ``ppo_clip_loss`` (token aggregation).
    Only completion tokens enter steps 3-5. Returns ``(policy, opt_state, stats)``, ``stats`` a
    dict with the rollout (``tokens``, ``mask``, ``scores``) and the figures ``RLHFHistory`` records.
    """
    from .lm import generate, lm_logits  # lm builds on this module, so it is imported on use

    tokens, mask = generate(policy, prompts, max_new, rng)
    action = mask[:, 1:]
    old_logits = lm_logits(policy, tokens)[:, :-1]
    ref_logits = lm_logits(ref, tokens)[:, :-1]
    old_logp = token_log_probs(old_logits, tokens)
    ref_logp = token_log_probs(ref_logits, tokens)
    scores = as_float_array("reward_fn(tokens, mask)", reward_fn(tokens, mask), ndim=1)
    check_shape("reward_fn(tokens, mask)", scores, (len(tokens),), "the batch")
    rewards = kl_penalized_rewards(scores, old_logp, ref_logp, action, beta, kind)
    advantages = rlhf_advantages(rewards, action)

    def loss_fn(params):
        logp = token_log_probs(lm_logits(params, tokens)[:, :-1], tokens)
        return ppo_clip_loss(logp, old_logp, advantages, action, clip, aggregate="token")

    step = ad.value_and_grad(loss_fn)
    for _ in range(epochs):
        (_, clip_fraction, approx_kl), grads = step(policy)
        policy, opt_state = opt.step(policy, grads, opt_state)
    stats = {
        "tokens": tokens, "mask": mask, "scores": scores,
        "score": float(scores.mean()),
        "kl": float(exact_kl(old_logits, ref_logits, mask).mean()),
        "length": float(action.sum(axis=1).mean()),
        "clip_fraction": clip_fraction, "approx_kl": approx_kl,
    }
    return policy, opt_state, stats


@single_thread_blas()  # the tiny LM's matrices gain nothing from BLAS threads on a busy machine
def rlhf_train(policy, ref, reward_fn: Callable, prompts, iterations: int, beta: float = 0.05,
               lr: float = 1e-3, seed=0, batch: int = 64, max_new: int = 8, epochs: int = 4,
               clip: float = 0.2, kind: str = "k1", metric: Callable | None = None) -> RLHFHistory:
    """``iterations`` of ``rlhf_step``, each on ``batch`` prompts drawn from ``prompts`` ``[N, P]``.

    ``ref`` stays frozen (usually the SFT model that ``policy`` starts from). ``metric(tokens,
    mask) -> [B]`` scores each rollout by something the reward model does not see (true quality,
    fluency) to watch for reward hacking. Deterministic given ``seed``.
    """
    from .optim import Adam

    prompts = np.asarray(prompts)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations: expected a positive integer, got {iterations!r}")
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    opt = Adam(lr=lr)
    state = opt.init(policy)
    keys = ("score", "kl", "metric", "length", "clip_fraction", "approx_kl")
    history = {k: np.empty(iterations) for k in keys}
    for i in range(iterations):
        rows = rng.choice(len(prompts), size=min(batch, len(prompts)), replace=False)
        policy, state, stats = rlhf_step(policy, ref, reward_fn, prompts[rows], rng, opt, state,
                                         beta, max_new, epochs, clip, kind)
        stats["metric"] = float(np.mean(metric(stats["tokens"], stats["mask"]))) if metric else np.nan
        for k in keys:
            history[k][i] = stats[k]
    return RLHFHistory(policy, *(history[k] for k in keys))
