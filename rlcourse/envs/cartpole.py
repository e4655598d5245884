"""CartPole: ``n`` copies of Gymnasium's CartPole-v1, bit for bit, stepped as arrays.

Physics, thresholds, reward and time limit are Gymnasium 1.4's (see REFERENCE.md): the same
float64 operations in the same order, so every state and float32 observation is identical.

Seeding: copy ``i`` owns a generator identical to ``np.random.default_rng(seed + i)`` (as
Gymnasium's vector envs seed copy ``i`` with ``seed + i``). Every episode start of copy ``i`` --
from ``reset()`` or from an autoreset -- is the next ``uniform(-0.05, 0.05, size=4)`` draw of
that generator. So copy ``i``'s sequence of episode starts is exactly that of
``gymnasium.make("CartPole-v1")`` after ``reset(seed=seed + i)`` followed by plain ``reset()``
calls, whatever the other copies do.
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, check_shape
from .base import EpisodeStats, Step, check_actions, check_max_steps, check_n, copy_seeds

__all__ = ["CartPole"]

# Gymnasium's constants, derived the same way so the floats are identical.
GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # half the pole's length
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
_FOUR_THIRDS = 4.0 / 3.0

# Episode starts drawn per copy at a time: batching the draws keeps the generator calls out of
# almost every step, and uniform(size=(k, 4)) yields the same numbers as k draws of size 4.
_STARTS_PER_DRAW = 64


class CartPole(EpisodeStats):
    """``n`` CartPole-v1 copies with same-step autoreset.

    Actions ``[n]`` ints in ``{0, 1}`` (push left / right). Observations ``[n, 4]`` float32
    ``(x, x_dot, theta, theta_dot)``, the float64 ``state`` cast. Reward 1.0 on every step, the
    terminating one included. ``terminated`` when ``|x| > 2.4`` or ``|theta| > 12 degrees``
    (strictly beyond) after the step; ``truncated`` on the ``max_steps``-th step of an episode
    (both can be true). ``state`` is a writable float64 ``[n, 4]`` view of the live state: set
    it (after ``reset``) to start from chosen states.
    """

    observation_shape = (4,)
    num_actions = 2

    def __init__(self, n: int = 1, seed: int | None = None, max_steps: int | None = 500):
        self.n = check_n(n)
        self.max_steps = check_max_steps(max_steps)
        self._seed_copies(seed)
        self._init_stats(self.n)
        # Rows are x, x_dot, theta, theta_dot: each row contiguous for fast ufuncs.
        self._s = np.zeros((4, self.n))
        self._deriv = np.empty((4, self.n))  # x_dot, xacc, theta_dot, thetaacc
        self._work = np.empty((5, self.n))
        self._abs = np.empty((2, self.n))
        self._beyond = np.empty((2, self.n), dtype=bool)
        self._limits = np.array([[X_THRESHOLD], [THETA_THRESHOLD]])
        self._forces = np.array([-FORCE_MAG, FORCE_MAG])
        self._was_reset = False

    # -- seeding -------------------------------------------------------------------------------
    def _seed_copies(self, seed: int | None) -> None:
        self._rngs = [np.random.default_rng(s) for s in copy_seeds(seed, self.n)]
        self._starts = np.empty((self.n, _STARTS_PER_DRAW, 4))
        self._next_start = np.full(self.n, _STARTS_PER_DRAW)  # all buffers empty

    def _take_starts(self, idx: np.ndarray) -> np.ndarray:
        """The next episode start ``[len(idx), 4]`` of each copy in ``idx`` (distinct copies)."""
        used_up = idx[self._next_start[idx] == _STARTS_PER_DRAW]
        for i in used_up.tolist():  # once every _STARTS_PER_DRAW episodes of a copy
            self._starts[i] = self._rngs[i].uniform(-0.05, 0.05, size=(_STARTS_PER_DRAW, 4))
        self._next_start[used_up] = 0
        starts = self._starts[idx, self._next_start[idx]]
        self._next_start[idx] += 1
        return starts

    # -- protocol ------------------------------------------------------------------------------
    @property
    def state(self) -> np.ndarray:
        """Writable float64 ``[n, 4]`` view of the state; assigning copies values in."""
        return self._s.T

    @state.setter
    def state(self, value) -> None:
        value = as_float_array("state", value)
        check_shape("state", value, (self.n, 4), against="[n, 4]")
        self._s.T[...] = value

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start a new episode in every copy; returns ``obs [n, 4]`` float32.

        ``seed`` re-seeds copy ``i`` with ``seed + i``; without it each copy takes the next start
        of its own generator. Running returns/lengths restart; completed episodes are kept.
        """
        if seed is not None:
            self._seed_copies(seed)
        self._s.T[...] = self._take_starts(np.arange(self.n))
        self._clear_running()
        self._was_reset = True
        return self._s.T.astype(np.float32, order="C")

    def step(self, actions) -> Step:
        """Advance every copy one Euler step of 0.02 s; see :class:`~rlcourse.envs.base.Step`."""
        if not self._was_reset:
            raise RuntimeError("CartPole.step: call reset() before the first step()")
        actions = check_actions(actions, self.n, 2)
        s, d, w = self._s, self._deriv, self._work
        cos, sin, temp, num, tmp = w
        # Same operations, same order as Gymnasium, so results match to the last bit.
        np.cos(s[2], out=cos)
        np.sin(s[2], out=sin)
        np.take(self._forces, actions, out=temp)
        np.multiply(s[3], s[3], out=tmp)
        np.multiply(tmp, POLEMASS_LENGTH, out=tmp)
        np.multiply(tmp, sin, out=tmp)
        np.add(temp, tmp, out=temp)
        np.divide(temp, TOTAL_MASS, out=temp)
        np.multiply(sin, GRAVITY, out=num)
        np.multiply(cos, temp, out=tmp)
        np.subtract(num, tmp, out=num)
        np.multiply(cos, cos, out=tmp)
        np.multiply(tmp, MASSPOLE, out=tmp)
        np.divide(tmp, TOTAL_MASS, out=tmp)
        np.subtract(_FOUR_THIRDS, tmp, out=tmp)
        np.multiply(tmp, LENGTH, out=tmp)
        np.divide(num, tmp, out=d[3])  # thetaacc
        np.multiply(d[3], POLEMASS_LENGTH, out=tmp)
        np.multiply(tmp, cos, out=tmp)
        np.divide(tmp, TOTAL_MASS, out=tmp)
        np.subtract(temp, tmp, out=d[1])  # xacc
        d[0::2] = s[1::2]  # x_dot, theta_dot before the update (explicit Euler)
        np.multiply(d, TAU, out=d)
        np.add(s, d, out=s)
        # |x| > t is exactly (x < -t) | (x > t), NaN included.
        np.greater(np.abs(s[0::2], out=self._abs), self._limits, out=self._beyond)
        terminated = self._beyond[0] | self._beyond[1]
        self._ret += 1.0
        self._len += 1
        if self.max_steps is None:
            truncated = np.zeros(self.n, dtype=bool)
        else:
            truncated = self._len >= self.max_steps
        obs = s.T.astype(np.float32, order="C")
        final_obs = obs
        done = terminated | truncated
        if done.any():
            idx = np.flatnonzero(done)
            self._finish(idx)
            obs = obs.copy()
            s[:, idx] = self._take_starts(idx).T
            obs[idx] = s[:, idx].T
        return Step(obs, np.ones(self.n), terminated, truncated, final_obs)
