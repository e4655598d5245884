"""Epsilon-greedy action selection over a table of action values, with random tie-breaking.

One draw protocol everywhere (the learners of :mod:`rlcourse.tabular`, :func:`epsilon_greedy`
and the lessons' own loops): each choice uses two uniforms ``u1, u2`` from the generator, drawn
row after row. If ``u1 < epsilon`` the action is ``floor(u2 * A)``, uniform over all ``A``
actions; otherwise it is the ``floor(u2 * k)``-th of the ``k`` actions tied for the largest
value. So a loop that calls ``rc.epsilon_greedy(Q[s], epsilon, rng)`` once per step draws
exactly the actions a learner of this package draws from the same generator.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_probability

__all__ = ["epsilon_greedy", "epsilon_greedy_probs"]


def _epsilon_greedy_rows(q, epsilon, u):
    """Actions ``[m]`` for the rows ``q [m, A]``: ``epsilon`` a number or ``[m]``, ``u [m, 2]``
    the two uniforms of each row."""
    best = q == q.max(axis=1, keepdims=True)
    k = (u[:, 1] * best.sum(axis=1)).astype(np.int64)  # which of the tied greedy actions
    greedy = (best.cumsum(axis=1) > k[:, None]).argmax(axis=1)
    uniform = (u[:, 1] * q.shape[1]).astype(np.int64)
    return np.where(u[:, 0] < epsilon, uniform, greedy)


def _epsilon_greedy_action(q_row, epsilon, rng) -> int:
    """One row ``q_row [A]``: the same rule in plain Python, several times faster than numpy
    on a handful of actions (a test checks the two agree)."""
    u1, u2 = rng.random(2).tolist()
    values = q_row.tolist()
    if u1 < epsilon:
        return int(u2 * len(values))
    best = max(values)
    ties = [a for a, v in enumerate(values) if v == best]
    return ties[int(u2 * len(ties))]


def _act(q, epsilon, rng):
    """Epsilon-greedy actions ``[m]`` for the rows ``q [m, A]`` (``epsilon`` a number or ``[m]``)."""
    if q.shape[0] == 1:
        e = epsilon if np.ndim(epsilon) == 0 else epsilon[0]
        return np.array([_epsilon_greedy_action(q[0], e, rng)])
    return _epsilon_greedy_rows(q, epsilon, rng.random((q.shape[0], 2)))


def _epsilon_greedy_expectation(q, epsilon):
    """``sum_a pi(a|s) q[a]`` under the epsilon-greedy policy of a row ``q [A]`` (a float) or of
    each row of ``q [m, A]``.

    Tied greedy actions share the ``1 - epsilon`` mass, as random tie-breaking does; their mean
    is the maximum, so the expectation is ``epsilon * mean(q) + (1 - epsilon) * max(q)``."""
    if q.ndim == 1:
        values = q.tolist()
        return epsilon * (sum(values) / len(values)) + (1.0 - epsilon) * max(values)
    return epsilon * q.mean(axis=1) + (1.0 - epsilon) * q.max(axis=1)


def epsilon_greedy(q_row_or_table, epsilon, rng):
    """Epsilon-greedy action(s): uniform over all ``A`` actions with probability ``epsilon``,
    else the greedy one, ties broken uniformly at random (the draw protocol of this module).

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
    return _epsilon_greedy_rows(q, epsilon, rng.random((q.shape[0], 2)))


def epsilon_greedy_probs(q, epsilon) -> np.ndarray:
    """Action probabilities ``[..., A]`` of the epsilon-greedy policy of ``q [..., A]``:
    ``epsilon / A`` each, plus ``1 - epsilon`` shared equally by the tied greedy actions."""
    q = as_float_array("q", q)
    if q.ndim == 0 or q.shape[-1] == 0:
        raise ValueError(f"q: expected shape [..., A] with A >= 1, got {q.shape}")
    epsilon = check_probability("epsilon", epsilon)
    best = q == q.max(axis=-1, keepdims=True)
    return epsilon / q.shape[-1] + (1.0 - epsilon) * best / best.sum(axis=-1, keepdims=True)
