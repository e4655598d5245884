"""Bandit: ``n`` independent k-armed Gaussian bandit problems (Sutton & Barto's testbed).

Each copy draws its arm means from N(0, 1) once; pulling arm ``a`` pays ``means[i, a]`` plus
N(0, 1) noise. Bandits have no states and no episodes, so ``step(actions [n])`` returns just the
rewards ``[n]`` (float64) -- not a :class:`~rlcourse.envs.base.Step`. One generator
(``np.random.default_rng(seed)``) draws the means first, then all the noise.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import check_count
from .base import check_actions, check_n

__all__ = ["Bandit"]


class Bandit:
    """``n`` copies of a ``arms``-armed Gaussian bandit with per-copy regret accounting.

    Attributes: ``means [n, arms]``, ``optimal_arm [n]``; after each step ``regret [n]`` is the
    cumulative expected regret ``sum_t (max_a means[i, a] - means[i, a_t])`` (>= 0, grows only
    when a suboptimal arm is pulled), ``optimal_pulls [n]`` counts pulls of the optimal arm,
    ``steps`` counts steps and ``optimal_action`` is ``optimal_pulls / steps`` ``[n]``.
    """

    observation_shape = ()

    def __init__(self, arms: int = 10, n: int = 1, seed: int | None = None):
        self.num_actions = self.arms = check_count("arms", arms)
        self.n = check_n(n)
        self._new_problems(seed)

    def _new_problems(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)
        self.means = self._rng.normal(size=(self.n, self.arms))
        self.optimal_arm = self.means.argmax(axis=1)
        self._best = self.means.max(axis=1)
        self._clear()

    def _clear(self) -> None:
        self.regret = np.zeros(self.n)
        self.optimal_pulls = np.zeros(self.n, dtype=np.int64)
        self.steps = 0

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Zero the regret accounting; with ``seed``, also draw new problems from that seed.

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
        chosen = self.means[np.arange(self.n), actions]
        self.regret += self._best - chosen
        self.optimal_pulls += actions == self.optimal_arm
        self.steps += 1
        return chosen + self._rng.normal(size=self.n)
