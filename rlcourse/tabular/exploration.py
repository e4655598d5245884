"""Epsilon-greedy action selection over a table of action values, with random tie-breaking."""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_probability

__all__ = ["epsilon_greedy", "epsilon_greedy_probs"]


# Q rows are read through tolist(): for a handful of actions, Python's max and comparisons are
# several times cheaper per step than numpy reductions on tiny arrays.
def _greedy_action(q_row, rng) -> int:
    values = q_row.tolist()
    best = max(values)
    ties = [a for a, v in enumerate(values) if v == best]
    if len(ties) == 1:
        return ties[0]
    return ties[int(rng.random() * len(ties))]


def _epsilon_greedy_action(q_row, epsilon, rng) -> int:
    if rng.random() < epsilon:
        return int(rng.random() * q_row.shape[0])
    return _greedy_action(q_row, rng)


def _epsilon_greedy_expectation(q_row, epsilon) -> float:
    # Ties share the greedy mass, as the random tie-breaking of the behaviour does.
    values = q_row.tolist()
    best = max(values)
    ties = [v for v in values if v == best]
    return epsilon * sum(values) / len(values) + (1.0 - epsilon) * sum(ties) / len(ties)


def epsilon_greedy(q_row_or_table, epsilon, rng):
    """Epsilon-greedy action(s): uniform over all ``A`` actions with probability ``epsilon``,
    else the greedy one, ties broken uniformly at random by ``rng``.

    ``q_row_or_table``: ``[A]`` gives an int; ``[B, A]`` gives ``[B]`` int64 actions, one per
    row, drawn in row order. The greedy action's total probability is ``1 - epsilon +
    epsilon / A`` (see :func:`epsilon_greedy_probs`).
    """
    q = as_float_array("q_row_or_table", q_row_or_table)
    if q.ndim not in (1, 2) or q.shape[-1] == 0:
        raise ValueError(
            f"q_row_or_table: expected shape [A] or [B, A] with A >= 1, got {q.shape}"
        )
    epsilon = check_probability("epsilon", epsilon)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    if q.ndim == 1:
        return _epsilon_greedy_action(q, epsilon, rng)
    return np.array([_epsilon_greedy_action(row, epsilon, rng) for row in q], dtype=np.int64)


def epsilon_greedy_probs(q, epsilon) -> np.ndarray:
    """Action probabilities ``[..., A]`` of the epsilon-greedy policy of ``q [..., A]``:
    ``epsilon / A`` each, plus ``1 - epsilon`` shared equally by the tied greedy actions."""
    q = as_float_array("q", q)
    if q.ndim == 0 or q.shape[-1] == 0:
        raise ValueError(f"q: expected shape [..., A] with A >= 1, got {q.shape}")
    epsilon = check_probability("epsilon", epsilon)
    best = q == q.max(axis=-1, keepdims=True)
    return epsilon / q.shape[-1] + (1.0 - epsilon) * best / best.sum(axis=-1, keepdims=True)
