"""CartPole: ``n`` copies of Gymnasium's CartPole-v1, bit for bit, stepped as arrays.

Physics, thresholds, reward and time limit are those of Gymnasium 1.4's
``classic_control/cartpole.py``: the same float64 operations in the same order, so every state and
float32 observation is identical.

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

from ..core._checks import as_float_array, check_shape
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

# Episode starts are drawn per copy in batches of k: batching keeps the generator calls out of
# almost every step, and uniform(size=(k, 4)) yields the same numbers as k draws of size 4.
# k is 256 for up to 1024 copies, then shrinks to keep the buffer near 8 MB (2**18 starts).
_MAX_STARTS_PER_DRAW = 256
_BUFFERED_STARTS = 2**18

# Constants as 0-d arrays: ufuncs take them faster than Python floats (same values, same bits).
_COPY_ZERO = np.zeros(1, dtype=np.intp)
_FORCES = np.array([-FORCE_MAG, FORCE_MAG])
_LIMITS = np.array([[X_THRESHOLD], [THETA_THRESHOLD]])
_C_PML_MP = np.array([[POLEMASS_LENGTH], [MASSPOLE]])
_C_GRAVITY = np.array(GRAVITY)
_C_TOTAL_MASS = np.array(TOTAL_MASS)
_C_FOUR_THIRDS = np.array(_FOUR_THIRDS)
_C_LENGTH = np.array(LENGTH)
_C_POLEMASS_LENGTH = np.array(POLEMASS_LENGTH)
_C_TAU = np.array(TAU)


class CartPole(EpisodeStats):
    """``n`` CartPole-v1 copies with same-step autoreset.

    Actions ``[n]`` ints in ``{0, 1}`` (push left / right). Observations ``[n, 4]`` float32
    ``(x, x_dot, theta, theta_dot)``, the float64 ``state`` cast. Reward 1.0 on every step, the
    terminating one included. ``terminated`` when ``|x| > 2.4`` or ``|theta| > 12 degrees``
    (strictly beyond) after the step; ``truncated`` on the ``max_steps``-th step of an episode
    (both can be true). ``state`` is a writable float64 ``[n, 4]`` view of the live state: set
    it (after ``reset``) to start from chosen states. Observations are built from a ``[4, n]``
    array, so for ``n > 1`` they are Fortran-ordered (as Gymnasium's vector CartPole's): a
    C-order copy would cost more than the rest of a large step.
    """

    observation_shape = (4,)
    num_actions = 2

    def __init__(self, n: int = 1, seed: int | None = None, max_steps: int | None = 500):
        self.n = check_n(n)
        self.max_steps = check_max_steps(max_steps)
        self._seed_copies(seed)
        self._init_stats(self.n)
        # Rows 0-3 are x, x_dot, theta, theta_dot (the state), row 4 is cos(theta): rows are
        # contiguous for fast ufuncs, and theta_dot next to cos lets one call square both.
        self._g = np.zeros((5, self.n))
        self._s = self._g[:4]
        self._deriv = np.empty((4, self.n))  # x_dot, xacc, theta_dot, thetaacc
        self._q = np.empty((3, self.n))
        self._work = np.empty((3, self.n))
        self._beyond = np.empty((2, self.n), dtype=bool)
        self._column = self._s[:, 0]  # copy 0's state, for the n == 1 path
        self._views = (
            self._g[2], self._g[3:5], self._g[4], self._q[:2], self._q[0], self._q[1],
            self._q[2], *self._work, self._deriv, self._deriv[1], self._deriv[3],
            self._deriv[0::2], self._s[1::2], self._s[0::2], self._work[:2],
        )
        self._was_reset = False

    # -- seeding -------------------------------------------------------------------------------
    def _seed_copies(self, seed: int | None) -> None:
        self._rngs = [np.random.default_rng(s) for s in copy_seeds(seed, self.n)]
        k = self._k = max(8, min(_MAX_STARTS_PER_DRAW, _BUFFERED_STARTS // self.n))
        self._starts = np.empty((self.n * k, 4))  # copy i's batch in rows i*k .. i*k + k - 1
        self._next_start = np.full(self.n, k)  # position in each copy's batch: all used up

    def _take_starts(self, idx: np.ndarray) -> np.ndarray:
        """The next episode start ``[len(idx), 4]`` of each copy in ``idx`` (distinct copies)."""
        k = self._k
        position = self._next_start[idx]
        used_up = position == k
        if np.count_nonzero(used_up):
            for i in idx[used_up].tolist():  # once every k episodes of a copy
                self._starts[i * k:(i + 1) * k] = self._rngs[i].uniform(-0.05, 0.05, size=(k, 4))
            position[used_up] = 0
        self._next_start[idx] = position + 1
        return self._starts.take(idx * k + position, axis=0)

    # Every reward is 1.0, so an episode's return is its length: no running return to add up.
    def _finish(self, idx: np.ndarray) -> None:
        lengths = self._len[idx].tolist()
        self.episode_lengths.extend(lengths)
        self.episode_returns.extend(map(float, lengths))
        self._len[idx] = 0

    def _finish_one(self) -> None:
        self._finish(_COPY_ZERO)

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
        return self._s.T.astype(np.float32)

    def step(self, actions) -> Step:
        """Advance every copy one Euler step of 0.02 s; see :class:`~rlcourse.envs.base.Step`."""
        if not self._was_reset:
            raise RuntimeError("CartPole.step: call reset() before the first step()")
        if self.n == 1:
            return self._step_one(actions)
        self._advance(check_actions(actions, self.n, 2))
        # s.T keeps the [4, n] memory order: obs [n, 4] is Fortran-ordered
        return self._conclude(self._s.T.astype(np.float32), self._beyond[0] | self._beyond[1])

    def _advance(self, actions: np.ndarray) -> None:
        """The physics of one step for every copy, in place, and ``_beyond``: which copies are
        past a limit. Each copy's numbers depend on its own state only (elementwise ufuncs)."""
        s = self._s
        (theta, td_cos, cos, q01, temp, den, num, sin, force, tmp, deriv, xacc, thetaacc,
         deriv_even, velocities, positions, absolute) = self._views
        mul, div = np.multiply, np.divide
        np.take(_FORCES, actions, out=force, mode="clip")  # actions are checked: clip is a no-op
        # Same operations in the same order as Gymnasium, so results match to the last bit;
        # where one ufunc call does two of them (stacked rows), each element sees the same op.
        np.cos(theta, cos)
        np.sin(theta, sin)
        mul(td_cos, td_cos, q01)  # theta_dot**2, cos**2
        mul(q01, _C_PML_MP, q01)  # polemass_length * theta_dot**2, masspole * cos**2
        mul(sin, _C_GRAVITY, num)
        mul(temp, sin, temp)
        np.add(force, temp, temp)
        div(q01, _C_TOTAL_MASS, q01)  # temp, masspole * cos**2 / total_mass
        np.subtract(_C_FOUR_THIRDS, den, den)
        mul(den, _C_LENGTH, den)
        mul(cos, temp, tmp)
        np.subtract(num, tmp, num)
        div(num, den, thetaacc)
        mul(thetaacc, _C_POLEMASS_LENGTH, tmp)
        mul(tmp, cos, tmp)
        div(tmp, _C_TOTAL_MASS, tmp)
        np.subtract(temp, tmp, xacc)
        np.copyto(deriv_even, velocities)  # x_dot, theta_dot before the update (explicit Euler)
        mul(deriv, _C_TAU, deriv)
        np.add(s, deriv, s)
        # |x| > t is exactly (x < -t) | (x > t), NaN included.
        np.greater(np.abs(positions, absolute), _LIMITS, self._beyond)

    def _conclude(self, obs: np.ndarray, terminated: np.ndarray) -> Step:
        """The end of a step after ``_advance``: episode lengths, time limits, autoreset.
        ``obs`` is the new state as float32 ``[n, 4]`` (not written to)."""
        s = self._s
        self._len += 1
        if self.max_steps is None:
            truncated = np.zeros(self.n, dtype=bool)
        else:
            truncated = self._len >= self.max_steps
        final_obs = obs
        done = terminated | truncated
        if np.count_nonzero(done):
            idx = np.flatnonzero(done)
            self._finish(idx)
            obs = np.copy(obs)  # same memory order
            starts = self._take_starts(idx)
            s[:, idx] = starts.T
            obs[idx] = starts  # float64 -> float32 on assignment, as astype
        return Step(obs, np.ones(self.n), terminated, truncated, final_obs)

    def _step_one(self, actions) -> Step:
        """``step`` for ``n == 1`` with Python floats: the same IEEE operations as the array
        path (and the same numpy cos/sin), without the per-call overhead of ufuncs on 1 element.
        """
        if type(actions) is np.ndarray and actions.dtype.kind in "iu" and actions.shape == (1,):
            action = int(actions[0])
            if not 0 <= action < 2:
                check_actions(actions, 1, 2)  # raises the explanatory error
        else:
            action = int(check_actions(actions, 1, 2)[0])
        column = self._column
        x, x_dot, theta, theta_dot = column.tolist()
        force = FORCE_MAG if action == 1 else -FORCE_MAG
        cos = float(np.cos(theta))
        sin = float(np.sin(theta))
        temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sin) / TOTAL_MASS
        thetaacc = (GRAVITY * sin - cos * temp) / (
            LENGTH * (_FOUR_THIRDS - MASSPOLE * (cos * cos) / TOTAL_MASS)
        )
        xacc = temp - POLEMASS_LENGTH * thetaacc * cos / TOTAL_MASS
        x = x + TAU * x_dot
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
        new = (x, x_dot, theta, theta_dot)
        column[:] = new
        terminated = (x < -X_THRESHOLD or x > X_THRESHOLD
                      or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD)
        length = self._len[0] = self._len[0] + 1
        truncated = self.max_steps is not None and length >= self.max_steps
        obs = np.array([new], dtype=np.float32)
        final_obs = obs
        if terminated or truncated:
            self._finish_one()
            column[:] = self._take_starts(_COPY_ZERO)[0]
            obs = column.astype(np.float32)[None]
        return Step(obs, np.ones(1), np.array([terminated]), np.array([truncated]), final_obs)


class CartPoleGroup:
    """Several :class:`CartPole` envs stepped by one array computation over all their copies.

    ``step(actions)`` takes the envs' actions one after another and returns one ``Step`` per
    env, and leaves every env -- its state, episode lengths and returns, start generators --
    exactly as its own ``step`` would: the physics is elementwise, so a copy's numbers do not depend on
    the copies beside it, and each env then ends its own step (time limit, autoreset). Stepping
    ``S`` envs of 16 copies costs about what one env of ``16 S`` copies does, not ``S`` steps.
    """

    def __init__(self, envs):
        self.envs = list(envs)
        if not self.envs or not all(type(env) is CartPole for env in self.envs):
            raise TypeError("envs: expected a non-empty list of CartPole envs")
        ends = np.cumsum([env.n for env in self.envs]).tolist()
        self.slices = [slice(a, b) for a, b in zip([0, *ends[:-1]], ends)]
        self._all = CartPole(n=ends[-1])  # its buffers only; the envs hold the state

    def step(self, actions) -> list:
        """``actions [N]``: env ``i``'s actions in its rows (in order); one ``Step`` per env."""
        together = self._all
        actions = check_actions(actions, together.n, 2)
        for i, (env, rows) in enumerate(zip(self.envs, self.slices)):
            if not env._was_reset:
                raise RuntimeError(f"envs[{i}]: call reset() before the first step()")
            together._s[:, rows] = env._s
        together._advance(actions)
        obs = together._s.T.astype(np.float32)
        terminated = together._beyond[0] | together._beyond[1]
        steps = []
        for env, rows in zip(self.envs, self.slices):
            env._s[...] = together._s[:, rows]
            steps.append(env._conclude(obs[rows], terminated[rows]))
        return steps
