"""TabularMDP: ``n`` copies sampling a finite MDP given as arrays (the model DP works on).

Model: ``P [S, A, S]`` with ``P[s, a, s']`` the probability of moving to ``s'``; ``R [S, A, S]``
the reward of that transition; ``terminal [S]`` bool, entering a terminal state ends the episode;
``start [S]`` the distribution of first states (no mass on terminal states). Rows of terminal
states are never sampled; for dynamic programming make them absorbing with reward 0.

One generator (``np.random.default_rng(seed)``) drives all copies: the same seed gives the same
episodes. Observations are the integer states ``[n]`` (int64).
"""

from __future__ import annotations

import bisect

import numpy as np

from ..core._checks import as_bool_array, as_float_array, as_int_array, check_shape
from .base import EpisodeStats, Step, check_actions, check_max_steps, check_n, seeded_rng

__all__ = ["TabularMDP", "check_mdp"]


def check_mdp(P, R, terminal=None):
    """The one check of a tabular model, for environments and dynamic programming alike.

    ``P [S, A, S]``: ``P[s, a, s']`` the probability of moving to ``s'``; every row of a
    non-terminal state is >= 0 and sums to 1 (a terminal state's rows are never used, so they
    are not checked). ``R``: ``[S, A, S]`` (the reward of each transition) or ``[S, A]`` (its
    expected value), finite. ``terminal [S]`` bools (None: no terminal state). Returns float64
    ``P``, ``R`` and the bool ``terminal``.
    """
    P = as_float_array("P", P, ndim=3).astype(np.float64)
    S, A, S2 = P.shape
    if S != S2 or S == 0 or A == 0:
        raise ValueError(f"P: expected shape [S, A, S] with S, A >= 1, got {P.shape}")
    if terminal is None:
        terminal = np.zeros(S, dtype=bool)
    else:
        terminal = as_bool_array("terminal", terminal)
        check_shape("terminal", terminal, (S,), against="[S] with S from P")
    live = ~terminal
    negative = (P < 0) & live[:, None, None]
    if negative.any():
        s, a, s2 = np.argwhere(negative)[0]
        raise ValueError(f"P: probabilities must be >= 0, got P[{s}, {a}, {s2}] = {P[s, a, s2]}")
    sums = P.sum(axis=2)
    off = (np.abs(sums - 1.0) > 1e-8) & live[:, None]
    if off.any():
        s, a = np.argwhere(off)[0]
        raise ValueError(f"P: each row P[s, a, :] of a non-terminal state must sum to 1, but "
                         f"P[{s}, {a}, :] sums to {sums[s, a]:.6g}")
    R = as_float_array("R", R).astype(np.float64)
    if R.shape not in (P.shape, (S, A)):
        raise ValueError(f"R: expected shape {P.shape} (R[s, a, s'], as P) or {(S, A)} "
                         f"(the expected reward of (s, a)), got {R.shape}")
    return P, R, terminal


def _check_model(P, R, terminal, start):
    """:func:`check_mdp` plus what an environment needs: a reward per transition, a
    start distribution over non-terminal states, and at least one non-terminal state."""
    if terminal is None:
        raise TypeError("terminal: expected a bool array [S], got None")
    P, R, terminal = check_mdp(P, R, terminal)
    S = P.shape[0]
    if R.ndim == 2:
        R = np.broadcast_to(R[:, :, None], P.shape).copy()
    if terminal.all():
        raise ValueError("terminal: every state is terminal, so no episode can start")
    start = as_float_array("start", start, ndim=1).astype(np.float64)
    check_shape("start", start, (S,), against="[S] with S from P")
    if (start < 0).any() or abs(start.sum() - 1.0) > 1e-8:
        raise ValueError(
            f"start: expected a distribution over the {S} states (>= 0, sum 1), "
            f"got min {start.min():.6g} and sum {start.sum():.6g}"
        )
    if (start[terminal] > 0).any():
        s = int(np.flatnonzero(terminal & (start > 0))[0])
        raise ValueError(f"start: state {s} is terminal but has start probability {start[s]:.6g}")
    # a terminal state is never left; give its rows a valid self-loop so sampling stays defined
    P[terminal] = np.eye(S)[terminal][:, None, :]
    return P, R, terminal, start


def _cumulative(p: np.ndarray) -> np.ndarray:
    """CDF along the last axis, exactly 1 from the last state with non-zero probability on, so
    a uniform draw in [0, 1) always lands on a state with non-zero probability even when the
    rounded sums fall short of 1."""
    cdf = np.cumsum(p, axis=-1)
    size = p.shape[-1]
    last = size - 1 - np.argmax(p[..., ::-1] > 0, axis=-1)
    cdf[np.arange(size) >= last[..., None]] = 1.0
    return cdf


class TabularMDP(EpisodeStats):
    """``n`` copies of the MDP ``(P, R, terminal, start)`` with same-step autoreset.

    ``obs [n]`` int64 states; ``step(actions [n])`` samples ``s' ~ P[s, a]``, pays
    ``R[s, a, s']``, terminates when ``terminal[s']`` and truncates on the ``max_steps``-th
    step of an episode (``None``: no limit). ``P``, ``R``, ``terminal``, ``start`` are kept as
    attributes for dynamic programming; ``state [n]`` is the current state of each copy.
    """

    observation_shape = ()

    def __init__(self, P, R, terminal, start, n: int = 1, seed: int | None = None,
                 max_steps: int | None = None):
        self.P, self.R, self.terminal, self.start = _check_model(P, R, terminal, start)
        self.num_states, self.num_actions = self.P.shape[:2]
        self.n = check_n(n)
        self.max_steps = check_max_steps(max_steps)
        self._cdf = _cumulative(self.P).reshape(-1, self.num_states)  # row s * A + a
        self._start_cdf = _cumulative(self.start)
        # Python copies of the model for the n == 1 path (bisect and list indexing beat numpy
        # calls on single elements); they give the same draws as the array path.
        self._cdf_rows = self._cdf.tolist()
        self._reward_rows = self.R.reshape(-1, self.num_states).tolist()
        self._terminal_list = self.terminal.tolist()
        self._start_cdf_list = self._start_cdf.tolist()
        self._rng = seeded_rng(seed)
        self._state = np.zeros(self.n, dtype=np.int64)
        self._init_stats(self.n)
        self._was_reset = False

    @property
    def state(self) -> np.ndarray:
        """Current state of each copy ``[n]`` (int64); assign to put copies in chosen states."""
        return self._state

    @state.setter
    def state(self, value) -> None:
        value = as_int_array("state", value, 0, self.num_states)
        check_shape("state", value, (self.n,), against="[n]")
        if self.terminal[value].any():
            s = int(value[self.terminal[value]][0])
            raise ValueError(f"state: state {s} is terminal, episodes cannot be in it")
        self._state[:] = value

    def _sample_starts(self, k: int) -> np.ndarray:
        return np.searchsorted(self._start_cdf, self._rng.random(k), side="right")

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Draw a start state for every copy; returns ``obs [n]``. ``seed`` re-seeds."""
        if seed is not None:
            self._rng = seeded_rng(seed)
        self._state[:] = self._sample_starts(self.n)
        self._clear_running()
        self._was_reset = True
        return self._state.copy()

    def step(self, actions) -> Step:
        """Take ``actions [n]`` in every copy; see :class:`~rlcourse.envs.base.Step`."""
        if not self._was_reset:
            raise RuntimeError(f"{type(self).__name__}.step: call reset() before the first step()")
        actions = check_actions(actions, self.n, self.num_actions)
        if self.n == 1:
            return self._step_one(int(actions[0]))
        rows = self._state * self.num_actions + actions
        u = self._rng.random(self.n)
        # Inverse-CDF sampling of every copy at once: count the CDF entries <= u.
        nxt = (self._cdf[rows] <= u[:, None]).sum(axis=1)
        reward = self.R.reshape(-1, self.num_states)[rows, nxt]
        terminated = self.terminal[nxt]
        self._ret += reward
        self._len += 1
        if self.max_steps is None:
            truncated = np.zeros(self.n, dtype=bool)
        else:
            truncated = self._len >= self.max_steps
        final_obs = nxt
        done = terminated | truncated
        if done.any():
            idx = np.flatnonzero(done)
            self._finish(idx)
            nxt = nxt.copy()
            nxt[idx] = self._sample_starts(idx.size)
        self._state[:] = nxt
        return Step(nxt, reward, terminated, truncated, final_obs)

    def _step_one(self, action: int) -> Step:
        """``step`` for one copy: :meth:`_step_scalars` as arrays ``[1]``."""
        obs, reward, terminated, truncated, final_obs = self._step_scalars(action)
        return Step(np.array([obs]), np.array([reward]), np.array([terminated]),
                    np.array([truncated]), np.array([final_obs]))

    def _step_scalars(self, action: int) -> tuple:
        """One step of a one-copy env, with Python scalars: ``(obs, reward, terminated,
        truncated, final_obs)``, the same draws as the array path. ``action`` must be valid."""
        row = int(self._state[0]) * self.num_actions + action
        nxt = bisect.bisect_right(self._cdf_rows[row], self._rng.random())
        reward = self._reward_rows[row][nxt]
        terminated = self._terminal_list[nxt]
        self._ret[0] += reward
        length = self._len[0] = self._len[0] + 1
        truncated = self.max_steps is not None and length >= self.max_steps
        final_obs = nxt
        if terminated or truncated:
            self._finish_one()
            nxt = bisect.bisect_right(self._start_cdf_list, self._rng.random())
        self._state[0] = nxt
        return nxt, reward, terminated, truncated, final_obs
