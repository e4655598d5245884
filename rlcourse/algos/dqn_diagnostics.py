"""What to watch while a DQN trains: the action gap, how much one training phase moves it, and
how far the Q-values sit above the returns the greedy policy really collects.

All functions but :func:`greedy_discounted_returns` are pure functions of Q-value arrays
``q [N, A]`` (``N`` states, ``A`` actions), e.g. ``np.asarray(model(params, states))``. Call
them from ``rc.dqn``'s ``callback(info)`` on a fixed set of states to follow them over training.

:class:`RecentStates` wraps the training environment and keeps the last observations it
returned: the states the run is visiting now, on which to measure the gap and the change.

Reading them:

- the **action gap** ``max_a Q(s, a) - second-best Q(s, a)`` is all the greedy policy depends
  on; shifting every action's value by the same amount changes nothing;
- a training phase can only flip the greedy action at ``s`` if it changes the *difference*
  between the actions' values by at least the gap there (:func:`relative_change` >= gap);
  when the typical change per phase is larger than the typical gap, the policy is redrawn
  at every phase, however good it was;
- ``max_a Q(s, a)`` estimates the discounted return from ``s``; compare it with what the greedy
  policy realises from ``s`` (:func:`greedy_discounted_returns`) and with the ceiling
  ``r_max / (1 - gamma)`` (:func:`value_ceiling`), which no true value can exceed.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_count, check_probability, check_shape, real_scalar
from .trainer import check_env, check_params, model_output

__all__ = [
    "action_gap",
    "relative_change",
    "greedy_flips",
    "value_ceiling",
    "overestimation",
    "greedy_discounted_returns",
    "RecentStates",
]


def _q(name: str, q) -> np.ndarray:
    q = as_float_array(name, q, ndim=2).astype(np.float64, copy=False)
    if q.shape[1] < 2:
        raise ValueError(f"{name}: expected at least 2 actions (columns), got shape {q.shape}")
    return q


def action_gap(q) -> np.ndarray:
    """The gap ``[N]`` between the best and the second-best action value of each state.

    ``q [N, A]`` with ``A >= 2``; for two actions this is ``|Q(s, 1) - Q(s, 0)|``. A small gap
    means a small error in either value is enough to pick the other action.
    """
    q = np.sort(_q("q", q), axis=1)
    return q[:, -1] - q[:, -2]


def relative_change(q_before, q_after) -> np.ndarray:
    """How much the *differences* between action values moved at each state, ``[N]``.

    ``q_before``, ``q_after [N, A]`` are the same states' Q-values before and after an update.
    Returns ``max_a d(s, a) - min_a d(s, a)`` with ``d = q_after - q_before``: for two actions
    ``|change of Q(s, 1) - Q(s, 0)|``. A change that moves all actions alike gives 0. The greedy
    action at ``s`` can only change if this is at least ``action_gap(q_before)`` there.
    """
    q_before = _q("q_before", q_before)
    q_after = _q("q_after", q_after)
    check_shape("q_after", q_after, q_before.shape, against="q_before")
    d = q_after - q_before
    return d.max(axis=1) - d.min(axis=1)


def greedy_flips(q_before, q_after) -> np.ndarray:
    """Boolean ``[N]``: whether the greedy action (``argmax``, ties to the lowest index) changed."""
    q_before = _q("q_before", q_before)
    q_after = _q("q_after", q_after)
    check_shape("q_after", q_after, q_before.shape, against="q_before")
    return np.argmax(q_before, axis=1) != np.argmax(q_after, axis=1)


def value_ceiling(gamma: float, max_reward: float = 1.0) -> float:
    """``max_reward / (1 - gamma)``: the discounted return of a reward of ``max_reward`` forever.

    No state's true value can exceed it (CartPole, reward 1 per step, gamma 0.99: 100), so a
    ``max_a Q`` above it is overestimation however good the policy is.
    """
    gamma = check_probability("gamma", gamma)
    if gamma == 1.0:
        return float("inf")
    max_reward = real_scalar("max_reward", max_reward)
    if not np.isfinite(max_reward):
        raise ValueError(f"max_reward: expected a finite number, got {max_reward}")
    return max_reward / (1.0 - gamma)


def overestimation(q, returns) -> float:
    """``mean(max_a q) - mean(returns)``: how far the values sit above the realised returns.

    ``q [N, A]`` at ``N`` states, ``returns [N]`` the discounted returns the greedy policy
    collected from those same states (:func:`greedy_discounted_returns`). Positive: the net
    overestimates; negative: it underestimates.
    """
    q = _q("q", q)
    returns = as_float_array("returns", returns, ndim=1)
    check_shape("returns", returns, (len(q),), against="[N] with N = len(q)")
    return float(q.max(axis=1).mean() - returns.mean())


def greedy_discounted_returns(env, model, params, states, gamma: float, horizon: int = 1_000) -> np.ndarray:
    """Discounted return ``[N]`` of the greedy policy from each of ``states [N, ...]``.

    ``env`` must have ``n == N`` copies, a writable ``state`` (as :class:`~rlcourse.CartPole`),
    and no time limit (``max_steps=None``): the return of a state with a future is what Q
    estimates, since time-limit truncations bootstrap. Each copy starts at its state and acts
    ``argmax_a model(params, obs)`` for up to ``horizon`` steps; ``sum_t gamma^t r_t`` stops at
    the first termination (``gamma**horizon`` bounds what is cut off: 4e-5 for 0.99 and 1,000).
    The observations are the states cast to ``env``'s observation dtype, as after ``reset``.
    """
    gamma = check_probability("gamma", gamma)
    horizon = check_count("horizon", horizon)
    check_env(env)
    check_params("params", params, optional=True)
    states = as_float_array("states", states)
    if states.shape != (env.n, *env.observation_shape):
        raise ValueError(f"states: expected shape {(env.n, *env.observation_shape)} (one state per "
                         f"copy of env), got {states.shape}")
    if getattr(env, "max_steps", None) is not None:
        raise ValueError("env: expected no time limit (max_steps=None); a truncation would cut "
                         "the returns short")
    if not isinstance(getattr(type(env), "state", None), property):
        raise TypeError(f"env: expected a writable state (as rc.CartPole has), got "
                        f"{type(env).__name__}")
    obs = env.reset()
    env.state = states
    obs = np.asarray(env.state, dtype=obs.dtype)
    total = np.zeros(env.n)
    alive = np.ones(env.n, dtype=bool)
    discount = 1.0
    for _ in range(horizon):
        q = model_output(model, params, obs, "q", env.num_actions, "env's observations")
        out = env.step(np.argmax(np.asarray(q), axis=1))
        total += discount * np.where(alive, out.reward, 0.0)
        discount *= gamma
        alive &= ~out.terminated
        if not alive.any():
            break
        obs = out.obs
    return total


class RecentStates:
    """A vector environment that remembers the last ``keep`` observations it returned.

    Wrap the training env with it (``env = RecentStates(rc.CartPole())``) and read
    :meth:`states` in a trainer's callback: ``[k, ...]`` with ``k = min(keep, seen)``, in no
    particular order, the states the run visited most recently (first observations of new
    episodes included). Everything else is forwarded to the wrapped env unchanged, so training
    is bit-identical with or without the wrapper.
    """

    def __init__(self, env, keep: int = 1_000):
        check_env(env)
        self.env = env
        self.keep = check_count("keep", keep)
        self._recent = np.zeros((self.keep, *env.observation_shape), dtype=np.float32)
        self._count = 0

    def __getattr__(self, name):  # n, num_actions, observation_shape, episode_returns, ...
        return getattr(self.env, name)

    def _remember(self, obs) -> None:
        obs = np.asarray(obs)
        seen = len(obs)
        start = self._count % self.keep
        if start + seen <= self.keep:  # the usual case: the rows do not wrap around
            self._recent[start:start + seen] = obs
            self._count += seen
            return
        obs = obs[-self.keep:]  # of more than ``keep`` at once, only the last ``keep`` stay
        rows = (self._count + seen - len(obs) + np.arange(len(obs))) % self.keep
        self._recent[rows] = obs
        self._count += seen

    def reset(self, seed=None):
        obs = self.env.reset(seed=seed)
        self._remember(obs)
        return obs

    def step(self, actions):
        out = self.env.step(actions)
        self._remember(out.obs)
        return out

    def states(self) -> np.ndarray:
        """The last ``min(keep, seen)`` observations, ``[k, ...]`` (a copy)."""
        return self._recent[:min(self._count, self.keep)].copy()
