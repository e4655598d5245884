"""Discounted returns, n-step returns and generalised advantage estimation (GAE).

Time semantics shared by every function here (docs/architecture.md, "Conventions"):

- ``rewards[t]`` is the reward of the transition taken at step ``t``.
- ``terminated[t]``: the step ended the episode in a terminal state, whose value is 0 by
  definition; nothing is bootstrapped after it.
- ``truncated[t]``: the step ended the episode because of a time limit; the episode *would*
  have continued, so the tail is estimated by ``next_values[t] = V(final_obs)``.
- ``terminated[t] | truncated[t]``: ``t`` is the last step of its episode; the return or
  advantage at ``t`` never includes anything recorded after ``t`` (that belongs to the next
  episode, which the vector environment has already started in the same row).
- The last row ``T - 1`` of a rollout that is cut mid-episode is treated like a truncation:
  its tail is ``next_values[T - 1]``.

Arrays are ``[T]`` (one stream) or ``[T, n]`` (``n`` parallel copies, time first); every
function is vectorised over ``n`` and loops only over ``T``.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_bool_array, as_float_array, check_probability, check_shape

__all__ = ["discounted_returns", "n_step_return", "gae"]


def _float_dtype(*arrays: np.ndarray) -> np.dtype:
    """float32 if every array is float32, else float64 (a float32 rollout stays float32)."""
    return np.result_type(np.float32, *arrays)


def _check_stream(name: str, x, shape: tuple | None, against: str, kind: str) -> np.ndarray:
    arr = as_bool_array(name, x) if kind == "bool" else as_float_array(name, x)
    if shape is None:
        if arr.ndim not in (1, 2):
            raise ValueError(f"{name}: expected shape [T] or [T, n], got {arr.shape}")
    else:
        check_shape(name, arr, shape, against=against)
    return arr


def discounted_returns(rewards, terminated, truncated, gamma: float, next_values=None) -> np.ndarray:
    """``G[t] = rewards[t] + gamma * G[t + 1]`` within each episode, shape ``[T]`` or ``[T, n]``.

    Where ``terminated[t]`` the return stops: ``G[t] = rewards[t]``. Where ``truncated[t]``
    (and not terminated) ``G[t] = rewards[t] + gamma * next_values[t]``: the cut-off tail is
    estimated by the value of the final observation. The last row, if its episode has not
    ended, bootstraps from ``next_values[T - 1]`` the same way. With ``next_values=None``
    those tails count as 0 (a Monte Carlo return of what was observed).

    Nothing crosses an episode boundary: ``G[t]`` never includes a reward recorded after a
    step where ``terminated | truncated``.
    """
    rewards = _check_stream("rewards", rewards, None, "", "float")
    shape = rewards.shape
    terminated = _check_stream("terminated", terminated, shape, "rewards", "bool")
    truncated = _check_stream("truncated", truncated, shape, "rewards", "bool")
    gamma = check_probability("gamma", gamma)
    dtype = _float_dtype(rewards)
    if next_values is None:
        tail = np.zeros(shape, dtype=dtype)
    else:
        tail = _check_stream("next_values", next_values, shape, "rewards", "float")
        dtype = _float_dtype(rewards, tail)
        # A terminal state's value is 0 whatever the critic says about final_obs.
        tail = np.where(terminated, 0.0, tail).astype(dtype)
    done = terminated | truncated
    out = np.empty(shape, dtype=dtype)
    if shape[0] == 0:
        return out  # no steps, no returns
    following = tail[-1]
    for t in range(shape[0] - 1, -1, -1):
        following = np.where(done[t], tail[t], following)
        out[t] = rewards[t] + gamma * following
        following = out[t]
    return out


def n_step_return(rewards, values, start: int, n: int, gamma: float, terminated: bool = True) -> float:
    """The n-step return from step ``start`` of **one** episode, as a float.

    ``rewards [T]``: the episode's rewards (``rewards[t]`` follows the action at state
    ``s_t``); ``values [T + 1]``: ``values[t] = V(s_t)``, and ``values[T]`` the value of the
    state after the last reward. With ``m = min(n, T - start)`` steps available::

        G = rewards[start] + gamma * rewards[start + 1] + ... + gamma**(m-1) * rewards[start + m - 1]
            + gamma**m * values[start + m]

    Terminal handling: if ``start + n >= T`` the sum reaches the end of the recorded episode.
    ``terminated=True`` (default) means ``s_T`` is a terminal state, so ``values[T]`` is
    ignored (its value is 0); ``terminated=False`` means the episode was truncated or is still
    running, and ``values[T]`` is bootstrapped. Bootstrapping from ``values[start + n]`` inside
    the episode is the usual n-step TD target (``n=1``: TD(0); ``n >= T - start`` with
    ``terminated=True``: the Monte Carlo return).
    """
    rewards = as_float_array("rewards", rewards, ndim=1)
    values = as_float_array("values", values, ndim=1)
    T = rewards.shape[0]
    check_shape("values", values, (T + 1,), against="[T + 1] with T = len(rewards)")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start < T:
        raise ValueError(f"start: expected an int in [0, {T}) (a step of the episode), got {start!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: expected a positive int (steps before bootstrapping), got {n!r}")
    gamma = check_probability("gamma", gamma)
    m = min(int(n), T - start)
    discounts = gamma ** np.arange(m)
    total = float(discounts @ rewards[start:start + m])
    end = start + m
    if end < T or not terminated:
        total += gamma**m * float(values[end])
    return total


def gae(rewards, values, next_values, terminated, truncated, gamma: float = 0.99,
        lam: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates (Schulman et al., 2016) and the matching returns.

    All inputs ``[T]`` or ``[T, n]``. ``values[t] = V(obs[t])``; ``next_values[t]`` is V of the
    next state *in the same episode*: ``V(obs[t + 1])`` normally, ``V(final_obs[t])`` where the
    episode ended at ``t``. Then::

        delta[t] = rewards[t] + gamma * (1 - terminated[t]) * next_values[t] - values[t]
        A[t]     = delta[t] + gamma * lam * (1 - done[t]) * A[t + 1],   done = terminated | truncated

    so ``terminated`` zeroes the bootstrap, ``truncated`` keeps it (the time limit is not a
    state of the world), and ``done`` stops the recursion: no advantage includes a TD error
    from the next episode. The last row uses only its own ``delta`` (the rollout ends there).
    ``lam=0`` gives the one-step TD error, ``lam=1`` the Monte Carlo return minus ``values``.

    Returns ``(advantages, returns)`` of the input's shape with ``returns = advantages + values``
    (the critic's regression target); float32 if every float input is float32.
    """
    rewards = _check_stream("rewards", rewards, None, "", "float")
    shape = rewards.shape
    values = _check_stream("values", values, shape, "rewards", "float")
    next_values = _check_stream("next_values", next_values, shape, "rewards", "float")
    terminated = _check_stream("terminated", terminated, shape, "rewards", "bool")
    truncated = _check_stream("truncated", truncated, shape, "rewards", "bool")
    gamma = check_probability("gamma", gamma)
    lam = check_probability("lam", lam)
    return _gae(rewards, values, next_values, terminated, truncated, gamma, lam)


def _gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """``gae`` without input checks, for callers that built the arrays themselves.

    ``gamma`` and ``lam`` may also be arrays ``[n]``, one per copy (runs side by side with
    different settings, :mod:`rlcourse.algos.sweep`); a float gives the same bits as before.
    """
    dtype = _float_dtype(rewards, values, next_values)
    gamma, lam = np.asarray(gamma, dtype=np.float64), np.asarray(lam, dtype=np.float64)
    # gamma in the rollout's dtype, as a Python float would be cast, so float32 stays float32
    deltas = (rewards + gamma.astype(dtype) * np.where(terminated, 0.0, next_values)
              - values).astype(dtype)
    carry = (gamma * lam * ~(terminated | truncated)).astype(dtype)
    advantages = np.empty(rewards.shape, dtype=dtype)
    following = np.zeros(rewards.shape[1:], dtype=dtype)
    for t in range(rewards.shape[0] - 1, -1, -1):
        following = deltas[t] + carry[t] * following
        advantages[t] = following
    return advantages, (advantages + values).astype(dtype)
