"""Exercises of lesson 15 (search and decoding): UCT scores, best-of-n, top-p, beam search."""

from __future__ import annotations

import numpy as np

from ...core.sampling import top_p_filter
from ...search.decoding import beam_search, best_of_n
from ...search.mcts import uct_score
from ..registry import Case, default_compare, register

__all__: list[str] = []  # registers exercises on import; nothing to export

# ----------------------------------------------------------------------------- uct_score


def _uct_cases() -> list[Case]:
    return [
        Case("all children visited", ([0.5, 0.1, -0.2], [4, 3, 3], 10, 1.4)),
        Case("one child unvisited", ([0.5, 0.0, 0.2], [4, 0, 1], 5, 1.4)),
        Case("c = 0 is pure exploitation", ([0.3, 0.6], [5, 1], 6, 0.0)),
        Case("large c favours the rarely visited", ([0.9, -0.5], [50, 2], 52, 5.0)),
    ]


def _uct_explain(case: Case, got, expected) -> str | None:
    q, n, parent, c = case.args
    got = np.asarray(got, dtype=float)
    unvisited = np.asarray(n) == 0
    if unvisited.any() and np.isfinite(got[unvisited]).any():
        return ("an unvisited child must score +inf: each child is tried once before any is "
                "tried twice, and its mean value is not even defined yet")
    seen = ~unvisited
    if c > 0 and np.allclose(got[seen], np.asarray(q)[seen]):
        return ("your UCT score ignores the exploration term c * sqrt(ln N / n): without it the "
                "search keeps exploiting its first lucky child")
    q_seen, n_seen = np.asarray(q)[seen], np.asarray(n)[seen]
    if np.allclose(got[seen], q_seen + c * np.sqrt(parent / n_seen)):
        return "the exploration term uses the logarithm of the parent's visits: sqrt(ln N / n)"
    return None


register(
    "uct_score",
    reference=uct_score,
    cases=_uct_cases,
    explain=_uct_explain,
    hint="score = Q + c * sqrt(ln N / n) for visited children, +inf where n == 0",
)

# ----------------------------------------------------------------------------- best_of_n


def _reward_closeness(x: float) -> float:
    """A toy reward: the closer a candidate is to 0.7, the better."""
    return -abs(x - 0.7)


def _best_of_n_cases() -> list[Case]:
    return [
        Case("one clear winner", ([0.1, 0.65, 0.9, 0.3], _reward_closeness)),
        Case("ties go to the first", ([0.6, 0.8, 0.6], _reward_closeness)),
        Case("a single candidate", ([0.2], _reward_closeness)),
        Case("strings scored by length", (["ok", "longest", "mid"], len)),
    ]


def _best_of_n_compare(got, expected) -> str | None:
    if not isinstance(got, tuple) or len(got) != 3:
        return "return a tuple (best, index, scores)"
    best, index, scores = got
    reason = default_compare(scores, expected.scores)
    if reason:
        return f"scores: {reason}"
    if index != expected.index:
        return f"index: expected {expected.index}, got {index}"
    if best != expected.best:
        return f"best: expected {expected.best!r}, got {best!r}"
    return None


def _best_of_n_explain(case: Case, got, expected) -> str | None:
    if isinstance(got, tuple) and len(got) == 3:
        scores = np.asarray(got[2], dtype=float)
        if got[1] == int(np.argmin(expected.scores)):
            return "you picked the lowest score: best-of-n keeps the candidate the reward likes most"
        index_ok = isinstance(got[1], (int, np.integer)) and 0 <= got[1] < len(expected.scores)
        if index_ok and scores.shape == expected.scores.shape and got[1] != expected.index and \
                expected.scores[got[1]] == expected.scores.max():
            return "on a tie keep the first candidate (np.argmax does), so results are reproducible"
    return None


register(
    "best_of_n",
    reference=best_of_n,
    cases=_best_of_n_cases,
    compare=_best_of_n_compare,
    explain=_best_of_n_explain,
    hint="score every candidate, then index = int(np.argmax(scores)); return (best, index, scores)",
)

# ----------------------------------------------------------------------------- top_p_filter


def _top_p_cases() -> list[Case]:
    rng = np.random.default_rng(15)
    return [
        Case("keep two of four", (np.log([0.05, 0.5, 0.15, 0.3]), 0.7)),
        Case("mass exactly p", (np.log([0.05, 0.5, 0.15, 0.3]), 0.8)),
        Case("tiny p keeps the top token", (np.log([0.2, 0.3, 0.5]), 0.01)),
        Case("p = 1 keeps everything", (np.array([0.0, -1.0, 2.0]), 1.0)),
        Case("a batch of rows", (rng.normal(size=(3, 6)), 0.9)),
    ]


def _top_p_explain(case: Case, got, expected) -> str | None:
    got = np.asarray(got, dtype=float)
    if got.shape != np.shape(expected):
        return None
    n_got, n_exp = np.isfinite(got).sum(), np.isfinite(expected).sum()
    if n_got > n_exp:
        return ("you keep too many tokens: keep a token while the mass *before* it is below "
                "p, so the set stops as soon as its mass reaches p")
    if n_got < n_exp:
        return ("your set stops before its mass reaches p: the kept mass must be >= p, and the "
                "most likely token is always kept")
    if n_got == n_exp:
        return "you kept the right number of tokens but not the most likely ones: sort by probability"
    return None


register(
    "top_p_filter",
    reference=top_p_filter,
    cases=_top_p_cases,
    explain=_top_p_explain,
    hint="softmax, sort descending, mass_before = cumsum - p_sorted, keep where mass_before < p",
)

# ----------------------------------------------------------------------------- beam_search


def _table_step(table: np.ndarray):
    """A bigram model: the next token's log-probabilities depend on the last token only."""
    with np.errstate(divide="ignore"):
        log_table = np.log(table)
    return lambda tokens: log_table[tokens[-1]]


def _beam_cases() -> list[Case]:
    trap = np.array([
        [1.0, 0.0, 0.0, 0.0, 0.0],
        [0.3, 0.25, 0.2, 0.25, 0.0],
        [0.1, 0.0, 0.0, 0.9, 0.0],
        [1.0, 0.0, 0.0, 0.0, 0.0],
        [0.1, 0.5, 0.4, 0.0, 0.0],
    ])
    rng = np.random.default_rng(151)
    random_table = rng.dirichlet(np.ones(5), size=5)
    return [
        Case("greedy is width 1", (_table_step(trap), [4], 1, 5, 0)),
        Case("width 2 escapes the greedy trap", (_table_step(trap), [4], 2, 5, 0)),
        Case("max_len cuts live hypotheses", (_table_step(trap), [4], 3, 1, 0)),
        Case("a random bigram model", (_table_step(random_table), [4], 3, 4, 0)),
    ]


def _beam_explain(case: Case, got, expected) -> str | None:
    if isinstance(got, list) and got and isinstance(got[0], tuple) and len(got[0]) == 2:
        if len(got) > len(expected):
            return "return at most beam_width hypotheses"
        eos = case.args[4]
        if any(eos in tuple(h[0])[1:-1] for h in got):  # start is one token in every case
            return "a hypothesis continued past <eos>: finished sequences stop growing"
        scores = [float(h[1]) for h in got]
        if scores != sorted(scores, reverse=True):
            return "return the hypotheses best first (highest total log-probability)"
    return None


register(
    "beam_search",
    reference=beam_search,
    cases=_beam_cases,
    explain=_beam_explain,
    hint="extend every live hypothesis by every token, keep the beam_width best of those and "
         "the finished ones, move those ending in eos to finished",
)
