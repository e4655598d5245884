"""KL divergence between a policy and a reference, exact and estimated from samples.

``exact_kl`` sums over the whole vocabulary and is never negative; ``sampled_log_ratio`` and the
per-token estimators of ``kl_estimate`` use only the sampled tokens and are different functions
with different names, because a single sample's log-ratio can be negative. Shapes and masks
follow :mod:`rlcourse.core.tokens`.
"""

from __future__ import annotations

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_float_array, check_nonnegative, check_shape
from .tokens import _check_logits, _check_mask, _check_tokens, sequence_log_prob

__all__ = ["exact_kl", "sampled_log_ratio", "kl_estimate", "kl_penalized_rewards"]


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
    mask = _check_mask(mask, (pv.shape[0], pv.shape[1] + 1), against="policy_logits' [B, L-1], plus one")
    # logits ±1e308 (a span past the float range, ~1.8e308) give a probability of 0 without a
    # warning: a KL of +inf where the reference's probability is 0 and the policy's is not
    with np.errstate(over="ignore"):
        lp, lr = ad.log_softmax(policy_logits, axis=-1), ad.log_softmax(ref_logits, axis=-1)
        per_position = ad.sum(_kl_terms(lp, lr), axis=-1)
        kl = ad.sum(ad.where(mask[:, 1:], per_position, 0.0), axis=1)
    return _lift_rounding(kl)


def _kl_terms(lp, lr):
    """``pi(v) (log pi(v) - log ref(v))`` from the log-probs ``lp``, ``lr``: exactly 0, in value
    and gradient, at a token the policy never takes (never ``0 * inf`` or ``0 * nan``)."""
    possible = np.exp(ad.stop_gradient(lp)) > 0
    diff = ad.where(possible, lp, 0.0) - ad.where(possible, lr, 0.0)
    return ad.where(possible, ad.exp(lp) * diff, 0.0)


def _lift_rounding(x):
    """``x``, a quantity that is never negative in exact arithmetic, with a value rounded below
    0 (by ~1e-16, in a sum of terms of both signs) lifted to 0; the gradient is left as it is."""
    value = np.asarray(ad.stop_gradient(x))
    return x + np.where(value < 0, -value, 0.0)


def sampled_log_ratio(policy_logits, ref_logits, actions, mask):
    """``log pi(a) - log ref(a)`` summed over each sequence's counted actions: ``[B]``.

    ``actions`` ``[B, L]`` are the sampled tokens (logits ``[:, t]`` score ``actions[:, t+1]``).
    This is a one-sample estimate of ``exact_kl``: unbiased when the actions were drawn from
    ``pi``, but a single sequence's value can be negative, because the sampled token can be
    likelier under ``ref`` than under ``pi``.
    """
    pv = _check_logits_pair(policy_logits, ref_logits)
    actions = _check_tokens(pv, actions, "policy_logits", name="actions")
    _check_mask(mask, actions.shape, against="actions")
    return sequence_log_prob(policy_logits, actions, mask) - sequence_log_prob(ref_logits, actions, mask)


_KL_KINDS = ("k1", "k2", "k3")


def _log_prob_values(name: str, x, mask: np.ndarray | None = None) -> np.ndarray:
    """The value of per-token log-probs ``x`` (traced or not): no NaN or +inf anywhere, and
    ``-inf`` only where ``mask`` is False (a padding token the model rules out)."""
    value = np.asarray(ad.stop_gradient(x))
    if value.dtype == object or value.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real float array, got dtype {value.dtype}")
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


def kl_estimate(logp, ref_logp, kind: str = "k1", *, old_logp=None):
    """Per-token estimates of ``KL(pi || ref)`` from the log-probs of tokens sampled from ``pi``.

    With ``d = ref_logp - logp``: ``k1 = -d`` (unbiased, can be negative), ``k2 = d**2 / 2``
    (biased, >= 0) and ``k3 = exp(d) - d - 1`` (unbiased and >= 0). Elementwise, any shape;
    ``logp`` may be traced.

    These are unbiased *values* when the tokens were sampled from ``pi`` itself. As a loss term
    differentiated through a traced ``logp``, their expected gradients differ: ``k1``'s is 0,
    ``k3``'s is that of ``KL(ref || pi)`` (the other direction), ``k2``'s that of
    ``KL(pi || ref)`` at each position. ``old_logp`` (the sampling policy's log-probs, data) is
    the correction for the loss: the estimate is multiplied by the importance ratio
    ``exp(logp - old_logp)`` (kept traced), so that on tokens sampled from ``pi_old`` its
    expected value is the estimate under ``pi`` and, for ``k3``, its expected gradient is that of
    ``KL(pi || ref)`` at each position: DeepSeek-V3.2's correction, TRL's
    ``use_bias_correction_kl``. At ``logp == old_logp`` the value is unchanged.
    """
    lp, rp = _same_shape_values(logp, ref_logp)
    if kind not in _KL_KINDS:
        raise ValueError(f"kind: expected one of {_KL_KINDS}, got {kind!r}")
    # keep traced inputs traced; anything else (lists, ints) as the checked float arrays
    lp_in = logp if isinstance(logp, ad.Tensor) else lp
    d = (ref_logp if isinstance(ref_logp, ad.Tensor) else rp) - lp_in
    if kind == "k1":
        est = -d
    elif kind == "k2":
        est = 0.5 * d * d
    else:
        est = _lift_rounding(ad.exp(d) - d - 1.0)  # below 0 by ~1e-16 for |d| < 1e-4 or so
    if old_logp is None:
        return est
    op = _log_prob_values("old_logp", old_logp)
    check_shape("old_logp", op, lp.shape, "logp")
    return ad.exp(lp_in - op) * est


def _check_token_mask(mask, shape: tuple, name: str = "mask", against: str = "logp") -> np.ndarray:
    mask = as_bool_array(name, mask)
    check_shape(name, mask, shape, against)
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
    beta = check_nonnegative("beta", beta)
    last = _last_true(mask)
    # padding log-probs may be -inf; they are replaced before any arithmetic
    kl = np.asarray(kl_estimate(np.where(mask, lp, 0.0), np.where(mask, rp, 0.0), kind))
    rewards = np.where(mask, -beta * kl, 0.0)
    rewards[np.arange(len(scores)), last] += scores
    return rewards
