"""Policy distributions: categorical (discrete actions) and diagonal Gaussian (continuous).

The log-probability and entropy functions are built from rlcourse's differentiable ops, so
they work on plain arrays and inside ``value_and_grad`` alike (gradients flow to the logits,
the mean and the log standard deviation). Logits must be finite: a NaN or infinite logit
means the network has diverged, and is reported instead of turning into a NaN loss.
"""

from __future__ import annotations

import numpy as np

from . import autodiff as ad
from ._checks import as_int_array, check_finite, check_logits, check_shape

__all__ = [
    "categorical_sample", "categorical_log_prob", "categorical_entropy", "categorical_probs",
    "gaussian_log_prob", "gaussian_entropy",
]

_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _checked(logits):
    """``(value, logits)``: the checked plain value of ``logits`` (see
    :func:`~rlcourse.core._checks.check_logits`: ``-inf`` rules an action out, NaN and ``+inf``
    raise), and what to compute with: the traced value itself, or the checked array."""
    value = check_logits("logits", ad.stop_gradient(logits))
    return value, logits if isinstance(logits, ad.Tensor) else value


def categorical_probs(logits) -> np.ndarray:
    """``softmax(logits)`` along the last axis as a plain array ``[..., A]``."""
    return ad.softmax(_checked(logits)[0])


def categorical_sample(logits, rng: np.random.Generator) -> np.ndarray:
    """One action per row of ``logits [..., A]``: int64 array ``[...]``.

    Inverse-CDF sampling with one ``rng.random()`` draw per row, so the same generator state
    gives the same actions. ``logits`` may be a traced value; no gradient flows through a sample.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    cdf = _categorical_cdf(logits)
    return _inverse_cdf(cdf, rng.random(cdf.shape[:-1]))


def _categorical_cdf(logits) -> np.ndarray:
    """The cumulative probabilities ``[..., A]`` of ``softmax(logits)`` along the last axis."""
    return np.cumsum(ad.softmax(_checked(logits)[0]), axis=-1)


def _inverse_cdf(cdf: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """The action of each row of ``cdf [..., A]`` for its draw ``uniform [...]`` in [0, 1)."""
    u = uniform * cdf[..., -1]  # scaled by the total: rounding never overshoots
    actions = (u[..., None] >= cdf).sum(axis=-1)
    return np.minimum(actions, cdf.shape[-1] - 1).astype(np.int64)


def categorical_log_prob(logits, actions):
    """``log pi(actions | logits)``: logits ``[..., A]``, integer actions ``[...]`` -> ``[...]``.

    Differentiable in ``logits``. Actions outside ``[0, A)`` or of the wrong shape raise, and so
    does an action whose logit is ``-inf`` (it could not have been taken).
    """
    value, logits = _checked(logits)
    actions = as_int_array("actions", actions, 0, value.shape[-1])
    check_shape("actions", actions, value.shape[:-1], against="logits without its last axis")
    impossible = np.isneginf(np.take_along_axis(value, actions[..., None], axis=-1)[..., 0])
    if impossible.any():
        where = tuple(int(i) for i in np.argwhere(impossible)[0])
        raise ValueError(f"actions: the action at {where} has logit -inf (probability 0), so it "
                         "cannot have been taken under these logits")
    picked = ad.take_along_axis(ad.log_softmax(logits), actions[..., None], axis=-1)
    return ad.reshape(picked, actions.shape)


def categorical_entropy(logits):
    """``-sum_a pi(a) log pi(a)`` of each row of ``logits [..., A]`` -> ``[...]`` (nats, >= 0).

    A ruled-out action (logit ``-inf``) adds exactly 0 (the limit of ``p log p``), with a zero
    gradient, never ``0 * -inf``.
    """
    value, logits = _checked(logits)
    log_p = ad.log_softmax(logits)
    possible = np.isfinite(ad.stop_gradient(log_p))
    return -ad.sum(ad.exp(log_p) * ad.where(possible, log_p, 0.0), axis=-1)


def _check_gaussian(mean, log_std, actions=None):
    mean_v = np.asarray(ad.stop_gradient(mean))
    log_std_v = np.asarray(ad.stop_gradient(log_std))
    for name, v in (("mean", mean_v), ("log_std", log_std_v)):
        if not np.issubdtype(v.dtype, np.floating):
            raise TypeError(f"{name}: expected a floating-point array, got dtype {v.dtype}")
        if v.ndim < 1:
            raise ValueError(f"{name}: expected shape [..., D] (action dimensions last), got {v.shape}")
        check_finite(name, v)
    try:
        shape = np.broadcast_shapes(mean_v.shape, log_std_v.shape)
    except ValueError:
        raise ValueError(
            f"log_std: shape {log_std_v.shape} does not broadcast against mean {mean_v.shape}"
        ) from None
    if actions is not None:
        actions = np.asarray(actions)
        if not np.issubdtype(actions.dtype, np.floating):
            raise TypeError(f"actions: expected continuous (float) actions, got dtype {actions.dtype}")
        check_finite("actions", actions)
        check_shape("actions", actions, shape, against="mean broadcast with log_std")
    return actions


def gaussian_log_prob(mean, log_std, actions):
    """Log-density of a diagonal Gaussian, summed over the action dimensions.

    ``mean [..., D]``, ``log_std [D]`` or ``[..., D]``, ``actions [..., D]`` -> ``[...]``:
    ``sum_d -0.5 * ((a - mu) / sigma)^2 - log sigma - 0.5 log(2 pi)``. Differentiable in
    ``mean`` and ``log_std``.
    """
    actions = _check_gaussian(mean, log_std, actions)
    # lists become arrays; arrays and traced values stay as they are
    mean, log_std = (x if isinstance(x, (ad.Tensor, np.ndarray)) else np.asarray(x, dtype=float)
                     for x in (mean, log_std))
    z = (actions - mean) * ad.exp(-1.0 * log_std)
    per_dim = -0.5 * ad.square(z) - log_std - _HALF_LOG_2PI
    return ad.sum(per_dim, axis=-1)


def gaussian_entropy(log_std):
    """Entropy of a diagonal Gaussian, ``sum_d log sigma_d + 0.5 log(2 pi e)``: ``[..., D] -> [...]``.

    Depends only on the spread, not the mean; can be negative (a density, not a distribution
    over finitely many actions).
    """
    log_std_v = np.asarray(ad.stop_gradient(log_std))
    if not np.issubdtype(log_std_v.dtype, np.floating):
        raise TypeError(f"log_std: expected a floating-point array, got dtype {log_std_v.dtype}")
    if log_std_v.ndim < 1:
        raise ValueError(f"log_std: expected shape [..., D], got {log_std_v.shape}")
    check_finite("log_std", log_std_v)
    return ad.sum(log_std + (_HALF_LOG_2PI + 0.5), axis=-1)
