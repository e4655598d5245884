"""Search over a language model's outputs at decision time: beam search and best-of-n."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core._checks import check_count

__all__ = ["BeamResult", "beam_search", "BestOfNResult", "best_of_n"]


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
    """
    beam_width = check_count("beam_width", beam_width)
    max_len = check_count("max_len", max_len)
    start = tuple(int(t) for t in start)
    live = [BeamResult(start, 0.0)]
    finished: list[BeamResult] = []
    for _ in range(max_len):
        tokens, scores = [], []
        for hyp in live:
            logp = _log_probs(step(hyp.tokens))
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
    """``step``'s output as float [V]; -inf (an impossible token) is allowed, NaN/+inf not."""
    arr = np.asarray(logp, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"step: expected log-probabilities of shape [V], got shape {arr.shape}")
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError(f"step: returned log-probabilities with NaN or +inf: {arr}")
    return arr


class BestOfNResult(NamedTuple):
    """``best`` = ``candidates[index]``, the first candidate with the highest score;
    ``scores`` [N] holds every candidate's score."""

    best: Any
    index: int
    scores: np.ndarray


def best_of_n(candidates: Sequence, score: Callable[[Any], float]) -> BestOfNResult:
    """Score every candidate with ``score`` and return the best (rejection sampling at n).

    Returns ``BestOfNResult(best, index, scores)``: ``scores`` [N] float, ``index`` the first
    position of the maximum. Raises on no candidates or a NaN score.
    """
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates: expected at least one candidate, got an empty sequence")
    scores = np.array([float(score(x)) for x in candidates], dtype=np.float64)
    if np.isnan(scores).any():
        i = int(np.argmax(np.isnan(scores)))
        raise ValueError(f"score: returned NaN for candidate {i}: {candidates[i]!r}")
    index = int(np.argmax(scores))
    return BestOfNResult(candidates[index], index, scores)
