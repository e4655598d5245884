"""The targets tabular methods move their estimates towards: one-step TD, n-step and Monte Carlo.

Small pure functions, shared by every learner in :mod:`rlcourse.tabular` (the loops call the
unchecked versions, so each rule lives in exactly one place). ``terminated`` always means "the
next state is terminal, its value is 0"; after a time-limit truncation the caller passes the
value of ``final_obs`` and ``terminated=False``.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_probability

__all__ = ["td_target", "n_step_target", "mc_returns"]


def _bootstrap(value, terminated):
    # The one place the mask lives: a terminal state has value 0, whatever its table entry holds.
    return 0.0 if terminated else value


def _td_target(reward, next_value, terminated, gamma):
    return reward + gamma * _bootstrap(next_value, terminated)


def _n_step_target(rewards, bootstrap_value, terminated, gamma):
    total = 0.0
    for k, r in enumerate(rewards):
        total += gamma**k * r
    return total + gamma ** len(rewards) * _bootstrap(bootstrap_value, terminated)


def td_target(reward, next_value, terminated, gamma):
    """One-step TD target ``reward + gamma * next_value``, or just ``reward`` if ``terminated``.

    ``next_value`` is the value of the state the step led to: ``V(final_obs)`` after a
    truncation, never ``V(obs)`` of the next episode. Scalars, or an array of ``next_value``.
    """
    gamma = check_probability("gamma", gamma)
    if not isinstance(terminated, (bool, np.bool_)):
        raise TypeError(f"terminated: expected a bool, got {type(terminated).__name__}")
    return _td_target(float(reward), as_float_array("next_value", next_value), bool(terminated),
                      gamma)


def n_step_target(rewards, bootstrap_value, terminated, gamma):
    """n-step target of a window of ``m = len(rewards)`` rewards:
    ``sum_k gamma**k rewards[k] + gamma**m * bootstrap_value``.

    ``terminated=True`` means the window ends on a terminal state, so nothing is bootstrapped
    (``bootstrap_value`` is ignored). With one reward this is :func:`td_target`; with the
    rest of a terminated episode it is the Monte Carlo return.
    """
    rewards = as_float_array("rewards", rewards, ndim=1)
    if rewards.size == 0:
        raise ValueError("rewards: expected at least one reward in the window, got none")
    gamma = check_probability("gamma", gamma)
    if not isinstance(terminated, (bool, np.bool_)):
        raise TypeError(f"terminated: expected a bool, got {type(terminated).__name__}")
    return _n_step_target(rewards.tolist(), float(bootstrap_value), bool(terminated), gamma)


def _mc_returns(rewards, gamma, final_value):
    returns = [0.0] * len(rewards)
    g = final_value
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        returns[t] = g
    return returns


def mc_returns(rewards, gamma, final_value=0.0) -> np.ndarray:
    """Discounted returns ``G [T]`` of one episode: ``G[t] = rewards[t] + gamma * G[t + 1]``.

    ``G[T] = final_value``: 0 when the episode terminated, ``V(final_obs)`` when a time limit
    cut it (the return it would have gone on to earn, estimated).
    """
    rewards = as_float_array("rewards", rewards, ndim=1)
    gamma = check_probability("gamma", gamma)
    return np.array(_mc_returns(rewards.tolist(), gamma, float(final_value)))
