"""Losses on plain numbers and per-token arrays: PPO's clipped surrogate, the Huber loss, and
the preference and group-relative losses of language-model post-training.

Conventions (as in Hugging Face TRL):

- A *preference pair* is (prompt, chosen completion, rejected completion). The log-probs that
  ``dpo_loss`` takes are sequence log-probs, ``log pi(completion | prompt)`` summed over the
  completion's tokens only (``rc.sequence_log_prob``), one number per pair, shape ``[B]``.
- The policy log-probs carry the gradient; the reference log-probs never do (they are wrapped
  in ``stop_gradient``, so passing traced reference values cannot move the reference).
- Per-token arrays ``[B, T]`` are aligned with ``tokens[:, 1:]`` and go with ``mask[:, 1:]``,
  as in :mod:`rlcourse.core.tokens`; GRPO's group of ``G`` samples of one prompt sits in ``G``
  consecutive rows.

Every loss returns a scalar (a ``Tensor`` when its inputs are traced, so it works inside
``value_and_grad``); every reported statistic (rewards, accuracy) is a plain number or array.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import autodiff as ad
from ._checks import (
    as_bool_array,
    as_float_array,
    check_choice,
    check_count,
    check_flag,
    check_nonnegative,
    check_shape,
)
from .kl import _check_token_mask, _log_prob_values, _same_shape_values, kl_estimate

__all__ = [
    "ppo_clip_objective", "ppo_clip_loss", "PPOClipResult", "huber",
    "PreferenceResult", "preference_loss", "dpo_loss", "ipo_loss", "grpo_advantages",
    "rloo_advantages", "aggregate_token_loss", "GRPOLoss", "grpo_loss",
]


def ppo_clip_objective(ratio, advantages, clip: float):
    """``min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)`` elementwise (to be maximised).

    The gradient with respect to ``ratio`` is ``A`` where the unclipped branch is the smaller
    one and exactly 0 where the clipped one is: for ``A > 0`` when ``ratio > 1 + clip``, for
    ``A < 0`` when ``ratio < 1 - clip``. Inside ``[1 - clip, 1 + clip]`` the two branches are
    equal and the gradient is ``A``. Works on arrays and traced values; ``ratio`` and
    ``advantages`` have the same shape (no silent broadcasting of a misaligned batch).
    """
    ratio, ratio_values = _traced_or_array("ratio", ratio)
    advantages, adv_values = _traced_or_array("advantages", advantages)
    check_shape("advantages", adv_values, ratio_values.shape, "ratio")
    clip = _unit_open("clip", clip)
    return ad.minimum(ratio * advantages, ad.clip(ratio, 1.0 - clip, 1.0 + clip) * advantages)


def _traced_or_array(name: str, x):
    """``x`` checked to be finite real numbers: (x itself if traced, else as an array; its
    values)."""
    values = as_float_array(name, ad.stop_gradient(x))
    return (x if isinstance(x, ad.Tensor) else values), values


def _unit_open(name: str, value) -> float:
    value = check_nonnegative(name, value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name}: expected a number in (0, 1), got {value}")
    return value


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
    clip = _unit_open("clip", clip)
    aggregate = check_choice("aggregate", aggregate, ("token", "sequence"))
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
    _check_log_ratio(ad.stop_gradient(log_ratio))
    ratio = ad.exp(log_ratio)
    objective = ad.where(mask, ppo_clip_objective(ratio, adv, clip), 0.0)
    if aggregate == "token":
        loss = -ad.sum(objective) / int(counts.sum())
    else:
        loss = -ad.mean(ad.sum(objective, axis=1) / counts.astype(dtype))
    log_r = ad.stop_gradient(log_ratio)
    clip_fraction = float(np.mean(np.abs(np.exp(log_r[mask]) - 1.0) > clip))
    # k3 from the log-ratio itself: finite even where the ratio underflows to 0
    approx_kl = float(np.mean(kl_estimate(np.zeros_like(log_r[mask]), log_r[mask], "k3")))
    return PPOClipResult(loss, clip_fraction, approx_kl)


def _check_log_ratio(log_ratio) -> None:
    """Raise where ``exp(logp - old_logp)`` would overflow (float64: a log-ratio above 709.8):
    the sampling policy would have drawn a token of probability below 1e-308 times the current
    one's, which logged data cannot hold; its clipped objective would be inf or NaN."""
    log_ratio = np.asarray(log_ratio)
    top = np.log(np.finfo(log_ratio.dtype).max)
    if (log_ratio > top).any():
        where = tuple(int(i) for i in np.argwhere(log_ratio > top)[0])
        raise ValueError(
            f"old_logp: at {where} the ratio exp(logp - old_logp) = exp({log_ratio[where]:.4g}) "
            "overflows; a token that was sampled cannot have had so small a probability under "
            "the sampling policy (are old_logp that policy's log-probs of these tokens?)")


def huber(x, delta: float = 1.0):
    """Elementwise Huber loss: ``x**2 / 2`` where ``|x| <= delta``, else ``delta (|x| - delta/2)``.

    Quadratic near zero, linear beyond ``delta``: the gradient is ``x`` clipped to
    ``[-delta, delta]``, so one huge TD error cannot blow up an update. Works on traced values.
    """
    delta = check_nonnegative("delta", delta, positive=True)
    x, _ = _traced_or_array("x", x)
    small = ad.abs(x) <= delta
    return ad.where(small, 0.5 * ad.square(x), delta * (ad.abs(x) - 0.5 * delta))


class PreferenceResult(NamedTuple):
    """What ``dpo_loss`` and ``ipo_loss`` return.

    ``loss`` is the scalar to minimise (a Tensor when traced). ``chosen_rewards`` and
    ``rejected_rewards`` [B] are the implicit rewards ``beta * (logp - ref_logp)`` of each
    completion (plain arrays); ``accuracy`` is the fraction of pairs whose chosen reward is
    strictly larger than the rejected one (a tie counts as wrong).
    """

    loss: object
    chosen_rewards: np.ndarray
    rejected_rewards: np.ndarray
    accuracy: float


def _values(name: str, x, shape: tuple | None = None, against: str | None = None):
    """Check a 1-D batch of finite numbers, traced or not; return the plain values."""
    arr = as_float_array(name, ad.stop_gradient(x), ndim=1)
    if arr.size == 0:
        raise ValueError(f"{name}: expected at least one pair, got an empty array")
    if shape is not None:
        check_shape(name, arr, shape, against)
    return arr


def preference_loss(r_chosen, r_rejected, margin=0.0):
    """Bradley-Terry reward-model loss: mean over pairs of ``-log sigmoid(r_c - r_r - margin)``.

    ``r_chosen``, ``r_rejected`` [B]: the reward model's scores of the preferred and the other
    completion (traced, to train the reward model). ``margin``: a scalar or [B] array that the
    chosen score must beat the rejected one by (0 = plain Bradley-Terry, where
    ``sigmoid(r_c - r_r)`` is the modelled probability that the chosen one wins).
    Uses ``log_sigmoid``, so a large score gap gives a finite loss and gradient.
    """
    chosen = _values("r_chosen", r_chosen)
    _values("r_rejected", r_rejected, chosen.shape, "r_chosen")
    r_chosen, _ = _traced_or_array("r_chosen", r_chosen)
    r_rejected, _ = _traced_or_array("r_rejected", r_rejected)
    margin_arr = as_float_array("margin", margin)
    if margin_arr.ndim > 1 or (margin_arr.ndim == 1 and margin_arr.shape != chosen.shape):
        raise ValueError(
            f"margin: expected a scalar or shape {chosen.shape} (the shape of r_chosen), "
            f"got shape {margin_arr.shape}"
        )
    return -ad.mean(ad.log_sigmoid(r_chosen - r_rejected - margin_arr))


def _pair_log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected):
    """Validate the four [B] log-prob arrays; return the traced log-ratios and their values."""
    chosen = _values("policy_chosen", policy_chosen)
    for name, x in (("policy_rejected", policy_rejected), ("ref_chosen", ref_chosen),
                    ("ref_rejected", ref_rejected)):
        _values(name, x, chosen.shape, "policy_chosen")
    ref_c = np.asarray(ad.stop_gradient(ref_chosen))
    ref_r = np.asarray(ad.stop_gradient(ref_rejected))
    return policy_chosen - ref_c, policy_rejected - ref_r


def _result(loss, beta, chosen_ratio, rejected_ratio) -> PreferenceResult:
    chosen_rewards = beta * np.asarray(ad.stop_gradient(chosen_ratio), dtype=np.float64)
    rejected_rewards = beta * np.asarray(ad.stop_gradient(rejected_ratio), dtype=np.float64)
    accuracy = float(np.mean(chosen_rewards > rejected_rewards))
    return PreferenceResult(loss, chosen_rewards, rejected_rewards, accuracy)


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=0.1,
             label_smoothing=0.0) -> PreferenceResult:
    """Direct Preference Optimisation loss on a batch of B preference pairs.

    Inputs [B] are sequence log-probs summed over completion tokens: the policy's (traced) and
    the frozen reference's, of the chosen and the rejected completion. With the log-ratio
    margin ``z = (logp_c - ref_c) - (logp_r - ref_r)`` the loss is the mean over pairs of
    ``-(1 - e) log sigmoid(beta z) - e log sigmoid(-beta z)``, ``e = label_smoothing``
    (0 = plain DPO; e > 0 assumes each label is flipped with probability e, "conservative DPO").
    ``beta > 0`` is the strength of the KL pull towards the reference: the implicit reward of a
    completion is ``beta * (logp - ref_logp)``. Returns ``PreferenceResult``.
    """
    beta = check_nonnegative("beta", beta, positive=True)
    label_smoothing = float(label_smoothing)
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(
            f"label_smoothing: expected a number in [0, 0.5) (the assumed probability that a "
            f"label is flipped), got {label_smoothing}"
        )
    chosen_ratio, rejected_ratio = _pair_log_ratios(
        policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    logits = beta * (chosen_ratio - rejected_ratio)
    per_pair = -(1.0 - label_smoothing) * ad.log_sigmoid(logits)
    if label_smoothing > 0:
        per_pair = per_pair - label_smoothing * ad.log_sigmoid(-logits)
    return _result(ad.mean(per_pair), beta, chosen_ratio, rejected_ratio)


def ipo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, tau=0.1,
             chosen_lengths=None, rejected_lengths=None) -> PreferenceResult:
    """Identity Preference Optimisation loss: mean over pairs of ``(z' - 1/(2 tau))**2``.

    ``z'`` is DPO's log-ratio margin computed from *length-averaged* log-probs (per-token means
    over the completion), as in IPO as implemented in TRL. Pass the same summed sequence
    log-probs as to ``dpo_loss`` together with ``chosen_lengths`` and ``rejected_lengths`` [B]
    (the number of completion tokens each sum ran over, e.g. ``mask[:, 1:].sum(1)``), and the
    function divides by them. Pass neither if your log-probs are already per-token averages.

    Unlike DPO, whose loss keeps falling as ``z`` grows (so on a pair that is always preferred
    the margin runs off to infinity), IPO regresses ``z'`` onto the finite target ``1/(2 tau)``:
    smaller ``tau`` = larger target margin = weaker pull to the reference. The implicit rewards
    reported are ``tau * (mean logp - mean ref_logp)``.
    """
    tau = check_nonnegative("tau", tau, positive=True)
    chosen_ratio, rejected_ratio = _pair_log_ratios(
        policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    if (chosen_lengths is None) != (rejected_lengths is None):
        raise ValueError("chosen_lengths and rejected_lengths: pass both (summed log-probs) or "
                         "neither (log-probs already averaged per token)")
    if chosen_lengths is not None:
        batch = np.shape(ad.stop_gradient(policy_chosen))
        for name, lengths in (("chosen_lengths", chosen_lengths),
                              ("rejected_lengths", rejected_lengths)):
            arr = _values(name, lengths, batch, "policy_chosen")
            if (arr <= 0).any():
                raise ValueError(f"{name}: every completion needs at least one token, "
                                 f"got a length of {arr.min()}")
        chosen_ratio = chosen_ratio / np.asarray(chosen_lengths, dtype=np.float64)
        rejected_ratio = rejected_ratio / np.asarray(rejected_lengths, dtype=np.float64)
    margin = chosen_ratio - rejected_ratio
    loss = ad.mean(ad.square(margin - 1.0 / (2.0 * tau)))
    return _result(loss, tau, chosen_ratio, rejected_ratio)


_SCALES = {True: "group", False: "none", "group": "group", "batch": "batch", "none": "none"}


def _scale_name(scale) -> str:
    if isinstance(scale, (bool, np.bool_)):
        return _SCALES[bool(scale)]
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale: expected True/'group', 'batch' or False/'none' (TRL's "
                         f"scale_rewards), got {scale!r}")
    return scale


def _reward_groups(rewards, group_size: int) -> np.ndarray:
    """``rewards`` [B] as float64 groups ``[B/G, G]``, checked."""
    r = as_float_array("rewards", rewards, ndim=1).astype(np.float64)
    check_count("group_size", group_size, low=2)  # a baseline needs another sample of the prompt
    if r.size == 0 or r.size % group_size:
        raise ValueError(f"rewards: expected a batch that is a whole number of groups of "
                         f"group_size={group_size}, got {r.size} rewards")
    return r.reshape(-1, group_size)


def grpo_advantages(rewards, group_size: int, eps: float = 1e-4, scale=True) -> np.ndarray:
    """Group-relative advantages: ``(r - mean_g) / (std + eps)``, the mean taken within each group.

    ``rewards`` [B]: one scalar reward per sampled completion, the G = ``group_size`` samples of
    one prompt in consecutive rows (B a multiple of G). ``scale`` is TRL's ``scale_rewards``:

    - ``True`` or ``"group"`` (GRPO, TRL's default): divide by the group's *sample* standard
      deviation (ddof=1) plus ``eps = 1e-4``, as TRL does;
    - ``"batch"``: divide by the sample std of the whole batch's rewards (the mean stays per group);
    - ``False`` or ``"none"`` (Dr. GRPO): no division; the advantage keeps the reward's units, and
      prompts that are almost always or almost never solved are not up-weighted.

    A group whose rewards are all equal carries no signal about which sample was better and gets
    advantage exactly 0 (never NaN). Each group's advantages sum to zero. The baseline includes
    the sample itself, so ``r_i - mean_g = (G-1)/G * (r_i - mean of the other G-1)``: RLOO's
    advantage (``rloo_advantages``) times ``(G-1)/G``. Returns float64 [B]; rewards are data,
    not traced.
    """
    groups = _reward_groups(rewards, group_size)
    scale = _scale_name(scale)
    eps = float(eps)
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps: expected a finite number > 0, got {eps}")
    centred = groups - groups.mean(axis=1, keepdims=True)
    # exactly 0, not a rounding residue of the mean divided by eps
    centred[np.ptp(groups, axis=1) == 0] = 0.0
    if scale == "group":
        centred = centred / (groups.std(axis=1, ddof=1, keepdims=True) + eps)
    elif scale == "batch":
        std = groups.std(ddof=1) if groups.size > 1 else 0.0
        centred = centred / (std + eps)
    return centred.reshape(-1)


def rloo_advantages(rewards, group_size: int) -> np.ndarray:
    """REINFORCE leave-one-out advantages: ``r_i - mean of the other G-1 rewards of its group``.

    The baseline of sample i does not depend on sample i, so the policy gradient stays exactly
    unbiased (Kool et al. 2019; Ahmadian et al. 2024; TRL's ``RLOOTrainer``, which computes
    ``baseline = (group sum - r_i) / (G - 1)``). Equals ``G/(G-1)`` times GRPO's unscaled
    advantage ``grpo_advantages(rewards, G, scale=False)``. ``rewards`` [B] in groups of
    ``group_size`` consecutive rows; returns float64 [B], each group summing to zero.
    """
    groups = _reward_groups(rewards, group_size)
    others = (groups.sum(axis=1, keepdims=True) - groups) / (group_size - 1)
    adv = groups - others
    adv[np.ptp(groups, axis=1) == 0] = 0.0
    return adv.reshape(-1)


_AGGREGATES = {"token": "dapo", "dapo": "dapo", "bnpo": "dapo", "sequence": "grpo", "grpo": "grpo",
               "dr_grpo": "dr_grpo"}


def aggregate_token_loss(per_token, mask, loss_type: str = "dapo", max_completion_length=None):
    """One scalar from a per-token loss ``[B, T]`` over the action tokens ``mask`` ``[B, T]``,
    by TRL's ``GRPOConfig.loss_type`` (``trl/trainer/grpo_trainer.py``, ``_compute_loss``):

    - ``"grpo"`` (alias ``"sequence"``; the DeepSeekMath paper): each completion's tokens are
      averaged, then the completions: ``mean_i (sum_t l_it / |o_i|)``. A token of a long
      completion weighs less, so a long wrong answer is pushed down less per token;
    - ``"dapo"`` (alias ``"token"``, TRL's default; DAPO): ``sum_it l_it / sum_i |o_i|``, one mean
      over all action tokens of the batch: every token weighs the same. (TRL's ``"bnpo"`` is the
      same over a local batch; here there is one batch, so it is accepted as the same thing);
    - ``"dr_grpo"`` (Dr. GRPO): ``sum_it l_it / (B * max_completion_length)``, a constant that
      depends on neither the completions' lengths nor how many tokens the batch holds.

    ``per_token`` may be traced (the result then is); entries where ``mask`` is False never
    enter, whatever they hold. Every completion needs an action token for ``"grpo"``.
    """
    loss_type = check_choice("loss_type", loss_type, _AGGREGATES)
    mask = as_bool_array("mask", mask)
    values = np.asarray(ad.stop_gradient(per_token))
    if values.dtype == object or values.dtype.kind not in "biuf":
        raise TypeError(f"per_token: expected a real numeric array, got dtype {values.dtype}")
    if values.ndim != 2:
        raise ValueError(f"per_token: expected shape [B, T], got {values.shape}")
    check_shape("mask", mask, values.shape, "per_token")
    bad = ~np.isfinite(values) & mask
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"per_token: expected finite values on action tokens (mask True), got "
                         f"{values[where]} at {where}")
    return _aggregate(per_token, mask, _AGGREGATES[loss_type], max_completion_length)


def _aggregate(per_token, mask: np.ndarray, kind: str, max_completion_length):
    """``aggregate_token_loss`` after its checks of ``per_token`` (``grpo_loss`` checked its
    inputs; an overflowing k3 there is the KL's true size, not bad input)."""
    counts = mask.sum(axis=1)
    if not counts.any():
        raise ValueError("mask: every entry is False; there are no action tokens")
    masked = ad.where(mask, per_token, 0.0)
    if kind == "dapo":
        return ad.sum(masked) / int(counts.sum())
    if kind == "grpo":
        if (counts == 0).any():
            raise ValueError(
                f"mask: sequence {int(np.argmin(counts))} has no action token; loss_type 'grpo' "
                "would average over nothing (drop it, or use 'dapo')"
            )
        dtype = np.asarray(ad.stop_gradient(per_token)).dtype
        return ad.mean(ad.sum(masked, axis=1) / counts.astype(dtype))
    if max_completion_length is None:
        raise ValueError("max_completion_length: loss_type 'dr_grpo' divides by B * "
                         "max_completion_length; pass the sampling limit (max_new)")
    length = check_count("max_completion_length", max_completion_length)
    if counts.max() > length:
        raise ValueError(f"max_completion_length: a completion holds {int(counts.max())} action "
                         f"tokens, more than max_completion_length={length}")
    return ad.sum(masked) / (len(counts) * length)


class GRPOLoss(NamedTuple):
    """What ``grpo_loss`` returns (a tuple whose first item is the loss, so it can be returned
    from a function given to ``value_and_grad``). ``loss = policy_loss + kl_coef * kl``;
    ``kl`` is the aggregated KL term (k3, times the ratio with ``kl_correction``; a plain float);
    ``clip_fraction`` (fraction of action tokens whose ratio lies outside ``[1-clip, 1+clip]``)
    and ``approx_kl`` (token mean of k3 of ``KL(pi_old || pi)``) are token means whatever the
    aggregation, as in ``ppo_clip_loss``."""

    loss: object
    policy_loss: float
    kl: float
    clip_fraction: float
    approx_kl: float


def grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip: float = 0.2, kl_coef: float = 0.04,
              aggregate: str = "token", max_completion_length=None,
              kl_correction: bool = False) -> GRPOLoss:
    """GRPO's loss: PPO's clipped surrogate with one advantage per completion, plus a k3 KL term
    to the frozen reference, both aggregated over action tokens in the same way.

    Per action token, with ``r = exp(logp - old_logp)`` and ``d = ref_logp - logp``:
    ``l = -min(r A, clip(r, 1-clip, 1+clip) A) + kl_coef * k3``, ``k3 = exp(d) - d - 1``;
    ``aggregate`` is TRL's ``loss_type`` (see ``aggregate_token_loss``: ``"token"``/``"dapo"``
    the default, ``"sequence"``/``"grpo"``, ``"dr_grpo"`` with ``max_completion_length``).

    ``logp`` ``[B, T]`` (traced), ``old_logp`` (the sampling policy's) and ``ref_logp`` (the
    reference's) ``[B, T]``, aligned with ``tokens[:, 1:]``; ``advantages`` ``[B]`` (from
    ``grpo_advantages``) or ``[B, T]``; ``mask`` ``[B, T]`` True on action tokens
    (``mask[:, 1:]``). Padding positions may hold ``-inf`` log-probs.

    **What the KL term's gradient is.** On tokens sampled from ``pi``, k3's *value* is an
    unbiased estimate of ``KL(pi || ref)``; but differentiated as a loss term, its expected
    gradient is that of ``KL(ref || pi)``, the other direction. ``kl_correction=True`` multiplies
    each token's k3 by the ratio ``r`` (with its gradient), as DeepSeek-V3.2 does and TRL's
    ``use_bias_correction_kl`` (TRL's default since 2026): its expected gradient is that of
    ``KL(pi || ref)``. ``kl_coef = 0.04`` as in DeepSeekMath; 0 drops the term.
    """
    kl_coef = check_nonnegative("kl_coef", kl_coef)
    aggregate = check_choice("aggregate", aggregate, _AGGREGATES)
    kl_correction = check_flag("kl_correction", kl_correction)
    mask = as_bool_array("mask", mask)
    lp, old = _same_shape_values(logp, old_logp, mask, "old_logp")
    if lp.ndim != 2:
        raise ValueError(f"logp: expected shape [B, T], got {lp.shape}")
    mask = _check_token_mask(mask, lp.shape)
    ref = _log_prob_values("ref_logp", ref_logp, mask)
    check_shape("ref_logp", ref, lp.shape, "logp")
    adv = as_float_array("advantages", advantages)
    if adv.shape == lp.shape[:1]:
        adv = np.broadcast_to(adv[:, None], lp.shape)
    check_shape("advantages", adv, lp.shape, "logp (or [B], one per sequence)")
    clip = _unit_open("clip", clip)
    dtype = lp.dtype
    adv = np.where(mask, adv, 0.0).astype(dtype)
    # padding log-probs may be -inf; they are replaced before any arithmetic
    logp_in = ad.where(mask, logp, 0.0)
    log_ratio = logp_in - np.where(mask, old, 0.0).astype(dtype)
    _check_log_ratio(ad.stop_gradient(log_ratio))
    ratio = ad.exp(log_ratio)
    surrogate = -ppo_clip_objective(ratio, adv, clip)
    k3 = kl_estimate(logp_in, np.where(mask, ref, 0.0).astype(dtype), kind="k3")
    if kl_correction:
        k3 = ratio * k3
    policy = _aggregate(surrogate, mask, _AGGREGATES[aggregate], max_completion_length)
    kl = _aggregate(k3, mask, _AGGREGATES[aggregate], max_completion_length)
    loss = policy + kl_coef * kl
    log_r = np.asarray(ad.stop_gradient(log_ratio))[mask]
    clip_fraction = float(np.mean(np.abs(np.exp(log_r) - 1.0) > clip))
    # k3 from the log-ratio itself: finite even where the ratio underflows to 0
    approx_kl = float(np.mean(kl_estimate(np.zeros_like(log_r), log_r, "k3")))
    return GRPOLoss(loss, float(ad.stop_gradient(policy)), float(ad.stop_gradient(kl)),
                    clip_fraction, approx_kl)
