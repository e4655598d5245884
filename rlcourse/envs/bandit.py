"""Bandit: ``n`` independent k-armed Gaussian bandit problems (Sutton & Barto's testbed).

Each copy draws its arm means from N(``mean``, 1) once; pulling arm ``a`` pays ``means[i, a]``
plus N(0, 1) noise. With ``drift > 0`` the problems are non-stationary (Sutton & Barto,
exercise 2.5): after every step each arm's mean takes an independent N(0, ``drift``^2) random-walk
step, so the best arm can change. Bandits have no states and no episodes, so ``step(actions [n])``
returns just the rewards ``[n]`` (float64) -- not a :class:`~rlcourse.envs.base.Step`. One
generator (``np.random.default_rng(seed)``) draws the means first, then, step by step, the
reward noise and (with drift) the random-walk steps.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import check_count
from .base import check_actions, check_n, seeded_rng

__all__ = ["Bandit"]


class Bandit:
    """``n`` copies of a ``arms``-armed Gaussian bandit with per-copy regret accounting.

    Attributes: ``means [n, arms]`` (the current ones, when they drift), ``optimal_arm [n]``;
    after each step ``regret [n]`` is the cumulative expected regret
    ``sum_t (max_a means_t[i, a] - means_t[i, a_t])`` with the means of the step's time (>= 0,
    grows only when a suboptimal arm is pulled), ``optimal_pulls [n]`` counts pulls of the
    optimal arm, ``steps`` counts steps and ``optimal_action`` is ``optimal_pulls / steps`` ``[n]``.
    ``mean`` shifts every arm's mean (Sutton & Barto's figure 2.5 uses 4); ``drift`` is the
    standard deviation of each arm's random-walk step per pull (0: stationary).
    """

    observation_shape = ()

    def __init__(self, arms: int = 10, n: int = 1, seed: int | None = None, *,
                 mean: float = 0.0, drift: float = 0.0):
        self.num_actions = self.arms = check_count("arms", arms)
        self.n = check_n(n)
        self.mean = float(mean)
        if not np.isfinite(self.mean):
            raise ValueError(f"mean: expected a finite number, got {mean!r}")
        self.drift = float(drift)
        if not (np.isfinite(self.drift) and self.drift >= 0):
            raise ValueError(f"drift: expected a standard deviation >= 0, got {drift!r}")
        self._new_problems(seed)

    def _new_problems(self, seed: int | None) -> None:
        self._rng = seeded_rng(seed)
        self.means = self.mean + self._rng.normal(size=(self.n, self.arms))
        self._start_means = self.means.copy()
        self._clear()

    def _clear(self) -> None:
        # Drifting means start over on every reset. Column-major storage keeps the row-wise
        # max over a few arms, needed after every drift step, cheap.
        self.means = np.array(self._start_means, order="F")
        self._rows = np.arange(self.n)
        self.optimal_arm = self.means.argmax(axis=1)
        self._best = self.means.max(axis=1)
        self.regret = np.zeros(self.n)
        self.optimal_pulls = np.zeros(self.n, dtype=np.int64)
        self.steps = 0

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Zero the regret accounting and restore the starting means (drift starts over); with
        ``seed``, draw new problems from that seed instead.

        Returns a dummy observation ``zeros [n]`` (int64), for code written for the protocol.
        """
        if seed is not None:
            self._new_problems(seed)
        else:
            self._clear()
        return np.zeros(self.n, dtype=np.int64)

    @property
    def optimal_action(self) -> np.ndarray:
        """Fraction of steps on which each copy pulled its optimal arm ``[n]``."""
        return self.optimal_pulls / max(self.steps, 1)

    def step(self, actions) -> np.ndarray:
        """Pull arm ``actions[i]`` in copy ``i``; returns rewards ``[n]`` float64."""
        actions = check_actions(actions, self.n, self.arms)
        chosen = self.means[self._rows, actions]
        self.regret += self._best - chosen
        self.optimal_pulls += actions == self.optimal_arm
        self.steps += 1
        rewards = chosen + self._rng.normal(size=self.n)
        if self.drift > 0:
            self.means += self.drift * self._rng.normal(size=self.means.shape)
            self.optimal_arm = self.means.argmax(axis=1)
            self._best = self.means[self._rows, self.optimal_arm]
        return rewards
