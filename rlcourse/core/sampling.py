"""Decoding a next-token distribution: temperature, top-k and top-p (nucleus) filtering.

Every function takes logits of shape [V] (one distribution) or [B, V] (a batch, one row per
distribution). A filtered-out token gets the logit ``-inf``, so its probability is exactly 0.
Logits may already hold ``-inf`` (a masked token); NaN and ``+inf`` are errors.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_count, check_logits, real_scalar

__all__ = ["top_k_filter", "top_p_filter", "filter_logits", "sample_token"]


def top_k_filter(logits, k: int) -> np.ndarray:
    """Keep the ``k`` largest logits of each row, plus any tied with the k-th largest.

    Ties at the threshold are all kept, so a row may keep more than ``k`` tokens but never
    drops a token that is as likely as a kept one. ``k >= V`` keeps everything. Returns float
    logits of the input's shape with the others set to ``-inf``.
    """
    x = _check_logits(logits)
    k = check_count("k", k)
    if k >= x.shape[-1]:
        return x.copy()
    # the k-th largest value of each row (partition avoids a full sort)
    kth = -np.partition(-x, k - 1, axis=-1)[..., k - 1 : k]
    return np.where(x >= kth, x, -np.inf)


def top_p_filter(logits, p: float) -> np.ndarray:
    """Keep the smallest set of most likely tokens whose total probability reaches ``p``.

    Tokens are ranked by probability, i.e. by logit (equal ones by lower id first); a token is
    kept when the mass of the tokens ranked before it is still below ``p``, so the most likely
    token is always kept and the kept mass is >= ``p``. ``p = 1`` keeps every token of nonzero
    probability. Returns float logits of the input's shape with the others set to ``-inf``.

    Ties: a set whose mass equals ``p`` already reaches it, so the next token is dropped; a mass
    within 1e-9 of ``p`` counts as equal, since a floating-point sum can land on either side.
    This is the rule of Hugging Face's ``TopPLogitsWarper``, written there the other way round
    (sort ascending, remove the tokens whose cumulative probability is ``<= 1 - top_p``, i.e.
    whose mass before is ``>= top_p``); without the slack, rounding can keep one more token at
    an exact tie (``tests/test_sampling.py`` compares the two).
    """
    x = _check_logits(logits)
    return _top_p(x, _check_top_p("p", p), x)


def _top_p(x, p: float, rank) -> np.ndarray:
    """``top_p_filter`` of checked logits ``x``, ranking tokens by ``rank`` (``x`` itself, or
    for tempered logits the logits before the temperature, whose order it keeps but whose ties
    it can create by underflow)."""
    if p == 1.0:
        return x.copy()
    probs = _softmax(x)
    # ranked by logit: two logits a rounding apart can have equal float probabilities, and the
    # larger one is still the more likely token
    order = np.argsort(-rank, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    mass_before = np.cumsum(ranked, axis=-1) - ranked
    # a small slack so that a set whose mass equals p up to rounding counts as reaching it
    keep_ranked = mass_before < p - 1e-9
    keep_ranked[..., 0] = True  # the most likely token, even for p below the slack (p = 1e-10)
    keep = np.empty_like(keep_ranked)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return np.where(keep, x, -np.inf)


def filter_logits(logits, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> np.ndarray:
    """Logits after temperature, then top-k, then top-p (the order of common LM libraries).

    ``temperature`` divides the logits: below 1 it sharpens the distribution towards the
    argmax, above 1 it flattens it. It must be > 0 (greedy decoding is ``argmax``, or
    ``top_k=1`` when there are no ties). Top-p is applied to the already tempered and
    top-k-filtered distribution. Returns float logits of the input's shape, each row shifted
    so that its maximum is 0 (which changes no probability).
    """
    x = _check_logits(logits)
    temperature = real_scalar("temperature", temperature)
    if top_k is not None:
        check_count("top_k", top_k)
    if top_p is not None:
        _check_top_p("top_p", top_p)
    if not temperature > 0.0 or not np.isfinite(temperature):
        raise ValueError(
            f"temperature: expected a finite number > 0, got {temperature} "
            "(for greedy decoding take the argmax of the logits)"
        )
    # shift each row's maximum to 0 first (softmax does not change): a tiny temperature then
    # sends the most likely tokens to 0 and the others to -inf, the T -> 0 limit. Dividing the
    # raw logits would overflow: to +inf for positive logits, and for all-negative ones to an
    # all -inf row, which has no distribution at all.
    with np.errstate(over="ignore"):
        shifted = x - x.max(axis=-1, keepdims=True)
        x = shifted / temperature
    if top_k is not None:
        x = top_k_filter(x, top_k)
    if top_p is not None:
        # ranked by the logits before the temperature: a huge one can round two different
        # logits to the same value, and the larger is still the more likely token
        x = _top_p(x, top_p, np.where(np.isneginf(x), -np.inf, shifted))
    return x


def sample_token(logits, rng: np.random.Generator, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None):
    """Draw one token id per row from ``softmax(filter_logits(logits, ...))``.

    ``logits`` [V] gives an ``int``; [B, V] gives an int array [B], one draw per row, all from
    ``rng``. A filtered-out token is never drawn.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    probs = _softmax(filter_logits(logits, temperature, top_k, top_p))
    rows = probs.reshape(-1, probs.shape[-1])
    cdf = np.cumsum(rows, axis=-1)
    u = rng.random(rows.shape[0])[:, None] * cdf[:, -1:]
    # first index whose cumulative mass exceeds u; a zero-probability token never adds mass,
    # so it can never be that first index
    tokens = np.argmax(cdf > u, axis=-1)
    return int(tokens[0]) if probs.ndim == 1 else tokens


def _check_logits(logits) -> np.ndarray:
    """Logits as float64 [V] or [B, V], by the rule of ``check_logits``: NaN, +inf and an
    all -inf row are errors."""
    x = np.asarray(logits)
    if x.dtype.kind in "biuf" and x.ndim not in (1, 2):
        raise ValueError(f"logits: expected shape [V] or [B, V] with V >= 1, got {x.shape}")
    return check_logits("logits", x).astype(np.float64)


def _check_top_p(name: str, p) -> float:
    p = real_scalar(name, p)
    if not 0.0 < p <= 1.0:
        raise ValueError(f"{name}: expected a number in (0, 1], got {p}")
    return p


def _softmax(x: np.ndarray) -> np.ndarray:
    """Softmax along the last axis; -inf logits get probability exactly 0, and so do logits
    more than the largest float below the maximum (the difference overflows to -inf)."""
    with np.errstate(over="ignore"):
        z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
