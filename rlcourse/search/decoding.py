"""Search over a language model's outputs at decision time: beam search and best-of-n."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core._checks import (
    as_float_array,
    as_int_array,
    check_callable,
    check_count,
    check_logits,
    real_scalar,
)

__all__ = ["BeamResult", "beam_search", "BestOfNResult", "best_of_n", "best_of_n_distribution",
           "pass_at_k"]


class BeamResult(NamedTuple):
    """One hypothesis of ``beam_search``: the whole sequence (start included) and its score,
    the sum of the log-probabilities of the generated tokens."""

    tokens: tuple
    score: float


def beam_search(
    step: Callable[[tuple], np.ndarray],
    start: Sequence[int],
    beam_width: int,
    max_len: int,
    eos: int | None = None,
) -> list[BeamResult]:
    """Beam search over token sequences; returns up to ``beam_width`` hypotheses, best first.

    ``step(tokens)`` gets the sequence so far (a tuple, ``start`` included) and returns the
    log-probabilities [V] of the next token. At every step each live hypothesis is extended by
    every token and the ``beam_width`` highest total log-probabilities are kept; a kept
    hypothesis that ends in ``eos`` is finished and stops growing. After ``max_len`` generated
    tokens the live ones are returned as they are. ``beam_width=1`` is greedy decoding.
    Scores are plain sums (no length normalisation), which favours shorter finished sequences.
    Ties keep the earlier hypothesis and the lower token id.

    Beam search is a heuristic: a wider beam is *not* always better. Keeping more prefixes at
    one step can push out, at a later step, the prefix that would have led to the best
    sequence (``tests/test_search.py`` has a three-token example where width 2 scores below
    widths 1 and 3). Only a beam as wide as the number of all prefixes is exact.
    """
    check_callable("step", step, 1, "a function tokens -> log-probabilities [V]")
    beam_width = check_count("beam_width", beam_width)
    max_len = check_count("max_len", max_len)
    start = _start_tokens(start)
    if eos is not None:
        eos = check_count("eos", eos, low=0)
    live = [BeamResult(start, 0.0)]
    finished: list[BeamResult] = []
    for _ in range(max_len):
        tokens, scores = [], []
        for hyp in live:
            logp = _log_probs(step(hyp.tokens))
            if eos is not None and eos >= logp.size:
                raise ValueError(f"eos: expected a token id below the {logp.size} that step "
                                 f"scores, got {eos}")
            possible = np.flatnonzero(logp > -np.inf)  # a token of probability 0 is never kept
            tokens.extend(hyp.tokens + (int(v),) for v in possible)
            scores.append(hyp.score + logp[possible])
        flat = np.concatenate(scores)
        # finished hypotheses compete for the beam too: a live one survives only if it beats them
        pool = finished + [BeamResult(tokens[i], float(flat[i]))
                           for i in np.argsort(-flat, kind="stable")[:beam_width]]
        pool = sorted(pool, key=lambda h: -h.score)[:beam_width]
        finished = [h for h in pool if eos is not None and h.tokens[-1] == eos]
        live = [h for h in pool if h not in finished]
        if not live:
            break
    return sorted(finished + live, key=lambda h: -h.score)


def _log_probs(logp) -> np.ndarray:
    """``step``'s output as float [V]; -inf (an impossible token) is allowed, NaN/+inf and a row
    with no possible token are not."""
    return check_logits("step(tokens)", logp, ndim=1).astype(np.float64)


def _start_tokens(start) -> tuple:
    """``start`` as a tuple of token ids (ints >= 0; may be empty)."""
    arr = np.asarray(start)
    if arr.ndim == 1 and arr.size == 0:
        return ()
    if arr.ndim != 1:
        raise ValueError(f"start: expected a sequence of token ids, got {start!r}")
    return tuple(int(t) for t in as_int_array("start", arr, low=0))


class BestOfNResult(NamedTuple):
    """``best`` = ``candidates[index]``, the first candidate with the highest score;
    ``scores`` [N] holds every candidate's score."""

    best: Any
    index: int
    scores: np.ndarray


def best_of_n(candidates: Sequence, score: Callable[[Any], float]) -> BestOfNResult:
    """Score every candidate with ``score`` and return the best.

    With ``candidates`` drawn independently from a policy this is *best-of-n sampling*: a new
    policy whose outputs are better by ``score``, at n times the sampling cost
    (``best_of_n_distribution`` gives its exact distribution). It is not rejection sampling,
    which accepts each sample with a probability chosen so that the accepted ones follow a
    given target distribution.

    Returns ``BestOfNResult(best, index, scores)``: ``scores`` [N] float, ``index`` the first
    position of the maximum. Raises on no candidates or a NaN score.
    """
    try:
        candidates = list(candidates)
    except TypeError:
        raise TypeError(f"candidates: expected a sequence, got {type(candidates).__name__}") from None
    if not candidates:
        raise ValueError("candidates: expected at least one candidate, got an empty sequence")
    check_callable("score", score, 1, "a function candidate -> float")
    scores = np.array([_score_value(score(x)) for x in candidates], dtype=np.float64)
    if np.isnan(scores).any():
        i = int(np.argmax(np.isnan(scores)))
        raise ValueError(f"score: returned NaN for candidate {i}: {candidates[i]!r}")
    index = int(np.argmax(scores))
    return BestOfNResult(candidates[index], index, scores)


def _score_value(value) -> float:
    """A score as a float: a number, or a bool (a verifier's pass or fail)."""
    return float(value) if isinstance(value, (bool, np.bool_)) else real_scalar("score(candidate)", value)


def best_of_n_distribution(probs, rewards, n: int) -> np.ndarray:
    """The exact distribution of best-of-n over K outcomes: ``[K]`` probabilities.

    Draw n outcomes independently from ``probs`` [K] and keep the one with the highest
    ``rewards`` [K] (``best_of_n``: the first of the tied maxima). Group the outcomes by
    reward level; with ``F(l)`` the probability that one draw has reward ``<= l`` and
    ``F(l-)`` that it has reward ``< l``, the kept outcome has level ``l`` with probability
    ``F(l)**n - F(l-)**n`` (the best of n lies at ``l``), and within a level it is distributed
    as ``probs`` restricted to that level (the first draw to reach it is a plain draw).

    Its KL to the sampling policy is at most ``log n - (n - 1) / n``, with equality when no two
    outcomes share a reward and no outcome has a large probability (Beirami et al., 2024).
    """
    p = as_float_array("probs", probs, ndim=1)
    r = as_float_array("rewards", rewards, ndim=1)
    if r.shape != p.shape:
        raise ValueError(f"rewards: expected shape {p.shape} (one per outcome of probs), got {r.shape}")
    if p.size == 0 or (p < 0).any() or not np.isclose(p.sum(), 1.0, atol=1e-9):
        raise ValueError(f"probs: expected probabilities >= 0 summing to 1, got sum {p.sum()}")
    if not np.isfinite(r).all():
        raise ValueError(f"rewards: expected finite numbers, got {r}")
    n = check_count("n", n)
    levels, level_of = np.unique(r, return_inverse=True)  # levels sorted ascending
    mass = np.bincount(level_of, weights=p, minlength=levels.size)
    below_or_at = np.cumsum(mass)
    below = below_or_at - mass
    # clip: cumulative sums may exceed 1 by a rounding error
    level_prob = np.clip(below_or_at, 0, 1) ** n - np.clip(below, 0, 1) ** n
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(mass[level_of] > 0, p / mass[level_of], 0.0)
    return within * level_prob[level_of]


def pass_at_k(n: int, c, k: int) -> np.ndarray:
    """Chen et al. (2021)'s unbiased estimate of pass@k from ``n`` samples, ``c`` of them right.

    pass@k is the probability that at least one of k independent samples is right (best-of-k
    with a perfect verifier). From n >= k samples per problem, of which c are right, the estimate
    ``1 - C(n - c, k) / C(n, k)`` is the fraction of the k-subsets of the n samples that hold a
    right one: unbiased for every k <= n, unlike ``1 - (1 - c/n)**k``, which is biased low.
    Computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, without huge binomial coefficients.

    ``c`` may be an int or an array of counts (one per problem); returns float of its shape.
    """
    n = check_count("n", n)
    k = check_count("k", k)
    if k > n:
        raise ValueError(f"k: expected at most n = {n} (the estimate needs n >= k samples), got {k}")
    counts = np.asarray(c)
    if counts.dtype.kind not in "iu" or (counts < 0).any() or (counts > n).any():
        raise ValueError(f"c: expected integer counts of right samples in [0, {n}], got {c!r}")
    # log(1 - k/i) for i = k+1 .. n; the product over i = n-c+1 .. n is a difference of sums
    log_terms = np.log1p(-k / np.arange(k + 1, n + 1))
    cumulative = np.concatenate([[0.0], np.cumsum(log_terms)])  # cumulative[j]: i = k+1..k+j
    fails = n - counts  # wrong samples
    all_wrong = np.exp(cumulative[n - k] - cumulative[np.clip(fails - k, 0, None)])
    return np.where(fails < k, 1.0, 1.0 - all_wrong)
