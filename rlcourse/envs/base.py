"""The vector-environment protocol shared by every environment in :mod:`rlcourse.envs`.

An environment runs ``n`` copies side by side and has the attributes ``n``,
``observation_shape`` and ``num_actions``; ``reset(seed=None)`` returns ``obs [n, *observation_shape]``
and ``step(actions [n])`` returns a :class:`Step`.

Time semantics (the part RL code most often gets wrong):

- ``terminated[i]``: copy ``i`` reached a terminal state; do not bootstrap from it.
- ``truncated[i]``: copy ``i`` hit the time limit; bootstrap from ``V(final_obs[i])``.
  Both can be true on the same step (a terminal state reached on the last allowed step).
- Finished copies reset themselves *in the same step*: ``obs[i]`` is already the first
  observation of the next episode and ``final_obs[i]`` the last observation of the finished one.
  For copies that are not done, ``final_obs[i]`` equals ``obs[i]``. When no copy is done,
  ``final_obs`` *is* the ``obs`` array (same object, to save a copy): treat both as read-only.
- ``reward[i]`` belongs to the transition just taken, so it belongs to the finished episode.
- Completed episodes append their undiscounted return and length to ``episode_returns`` and
  ``episode_lengths`` in completion order (copies finishing on the same step in index order).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core._checks import as_int_array, check_count, check_shape

__all__ = ["Step"]


class Step(NamedTuple):
    """What ``env.step(actions)`` returns; every field has leading dimension ``n``.

    ``obs [n, ...]`` first observation of the next episode where a copy finished, else the next
    observation; ``reward [n]`` float64; ``terminated [n]``/``truncated [n]`` bool;
    ``final_obs [n, ...]`` last observation of the finished episode (equals ``obs`` elsewhere).
    """

    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: np.ndarray

    @property
    def done(self) -> np.ndarray:
        """``terminated | truncated`` of shape ``[n]``: the copies whose episode ended."""
        return self.terminated | self.truncated


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def check_actions(actions, n: int, num_actions: int) -> np.ndarray:
    """Validate ``actions`` as integers of shape ``[n]`` in ``[0, num_actions)``.

    A Python int is accepted when ``n == 1``. Floats (even 1.0), bools and out-of-range values
    raise an error naming ``actions``, the expectation and what came.
    """
    if type(actions) is np.ndarray and actions.dtype.kind in "iu" and actions.shape == (n,):
        if n == 1:  # a Python comparison is cheaper than a numpy reduction
            if 0 <= actions.item() < num_actions:
                return actions
            return as_int_array("actions", actions, 0, num_actions)  # raises
        # Fast path: viewed as unsigned, negatives become huge, so one max() checks the range.
        if actions.view(_UNSIGNED[actions.dtype.itemsize]).max() < num_actions:
            return actions
    elif isinstance(actions, (int, np.integer)) and not isinstance(actions, (bool, np.bool_)):
        actions = np.full(1, actions) if n == 1 else np.asarray(actions)
    arr = as_int_array("actions", actions, 0, num_actions)
    check_shape("actions", arr, (n,), against="[n] for n copies")
    return arr


def copy_seeds(seed: int | None, n: int) -> list[int]:
    """Seeds of the ``n`` copies: ``seed + i`` for copy ``i`` (as Gymnasium's vector envs).

    ``seed=None`` draws a fresh 128-bit base seed from the OS, so runs differ.
    """
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: expected an int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed}")
    return [int(seed) + i for i in range(n)]


def check_n(n) -> int:
    """The number of copies as a positive int."""
    return check_count("n", n)


def check_max_steps(max_steps) -> int | None:
    """``None`` (no time limit) or a positive int."""
    if max_steps is None:
        return None
    return check_count("max_steps", max_steps)


class EpisodeStats:
    """Running return and length of each copy's current episode, and the completed ones.

    ``episode_returns``/``episode_lengths`` are plain lists in completion order.
    """

    def _init_stats(self, n: int) -> None:
        self._ret = np.zeros(n)
        self._len = np.zeros(n, dtype=np.int64)
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []

    def _clear_running(self) -> None:
        self._ret[:] = 0.0
        self._len[:] = 0

    def _finish(self, idx: np.ndarray) -> None:
        """Record the episodes of copies ``idx`` (sorted) as completed and zero their counters."""
        self.episode_returns.extend(self._ret[idx].tolist())
        self.episode_lengths.extend(self._len[idx].tolist())
        self._ret[idx] = 0.0
        self._len[idx] = 0

    def _finish_one(self) -> None:
        """``_finish`` for copy 0 of a single-copy environment, with Python scalars."""
        self.episode_returns.append(float(self._ret[0]))
        self.episode_lengths.append(int(self._len[0]))
        self._ret[0] = 0.0
        self._len[0] = 0
