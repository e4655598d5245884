"""The targets tabular methods move their estimates towards: one-step TD, n-step and Monte Carlo.

Small pure functions, shared by every learner in :mod:`rlcourse.tabular` (the loops call the
unchecked versions, so each rule lives in exactly one place). ``terminated`` always means "the
next state is terminal, its value is 0"; after a time-limit truncation the caller passes the
value of ``final_obs`` and ``terminated=False``.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_probability, real_scalar

__all__ = ["td_target", "n_step_target", "mc_returns", "lambda_returns"]


def _bootstrap(value, terminated):
    # The one place the mask lives: a terminal state has value 0, whatever its table entry holds.
    # ``terminated`` a bool, or an array broadcasting against ``value`` (one per copy).
    if isinstance(terminated, (bool, np.bool_)):
        return 0.0 if terminated else value
    return np.where(terminated, 0.0, value)


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
    reward = real_scalar("reward", reward)
    if not np.isfinite(reward):
        raise ValueError(f"reward: expected a finite number, got {reward}")
    return _td_target(reward, as_float_array("next_value", next_value), bool(terminated), gamma)


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


def _lambda_returns(rewards, values, final_value, gamma, lam):
    returns = [0.0] * len(rewards)
    g = final_value
    for t in range(len(rewards) - 1, -1, -1):
        next_value = final_value if t == len(rewards) - 1 else values[t + 1]
        g = rewards[t] + gamma * ((1.0 - lam) * next_value + lam * g)
        returns[t] = g
    return returns


def lambda_returns(rewards, values, terminated, gamma, lam) -> np.ndarray:
    """The lambda-returns ``G^lambda [T]`` of one episode (the forward view of TD(lambda)).

    ``rewards [T]``; ``values [T + 1]`` the estimates ``V(s_0), ..., V(s_T)`` of the states the
    episode visited, ``s_T`` the state it ended in (``final_obs``); ``terminated`` whether
    ``s_T`` is terminal (then its value counts as 0, whatever ``values[T]`` holds; a time limit
    bootstraps from it). Computed backwards:
    ``G^lambda_t = r_t + gamma * ((1 - lam) * V(s_{t+1}) + lam * G^lambda_{t+1})``, starting
    from ``G^lambda_T = V(s_T)``. This equals the weighted average
    ``(1 - lam) * sum_n lam**(n-1) G_{t:t+n}`` of the n-step returns, the return after the
    episode's end taking the remaining weight ``lam**(T-t-1)``. ``lam=0`` gives the one-step TD
    targets, ``lam=1`` the Monte Carlo returns.
    """
    rewards = as_float_array("rewards", rewards, ndim=1)
    values = as_float_array("values", values, ndim=1)
    if values.shape != (rewards.size + 1,):
        raise ValueError(f"values: expected shape ({rewards.size + 1},) (one per state visited, "
                         f"the last state included: one more than rewards {rewards.shape}), "
                         f"got {values.shape}")
    gamma = check_probability("gamma", gamma)
    lam = check_probability("lam", lam)
    if not isinstance(terminated, (bool, np.bool_)):
        raise TypeError(f"terminated: expected a bool, got {type(terminated).__name__}")
    final_value = float(_bootstrap(values[-1], bool(terminated)))
    return np.array(_lambda_returns(rewards.tolist(), values.tolist(), final_value, gamma, lam))
