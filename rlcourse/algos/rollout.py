"""On-policy rollouts from a vector environment.

``collect_rollout`` runs a policy ``model(params, obs) -> (logits, value)`` for ``T`` steps on
all ``n`` copies at once (one forward pass per step for the whole batch) and returns time-first
``[T, n]`` arrays ready for :func:`rlcourse.gae`. The part that is easy to get wrong is
``next_values``: ``next_values[t]`` is V of the next state *of the same episode*. Where an
episode ended at ``t``, ``obs[t + 1]`` already belongs to the next episode, so the value there
is that of ``final_obs`` (truncated) or 0 (terminated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core._checks import as_float_array, check_count, check_shape, float_dtype
from ..core.distributions import categorical_log_prob, categorical_sample
from .trainer import check_env, check_params, model_output

__all__ = ["Rollout", "collect_rollout", "policy_step", "explained_variance"]


@dataclass
class Rollout:
    """``T`` steps of ``n`` copies, time first.

    ``obs [T, n, *obs_shape]`` the observations acted on; ``actions [T, n]`` int64;
    ``log_probs [T, n]`` of those actions under the policy that chose them; ``values [T, n]``
    ``= V(obs)``; ``rewards``, ``terminated``, ``truncated`` ``[T, n]``; ``next_values [T, n]``
    V of the next state of the same episode (``V(final_obs)`` where truncated, 0 where
    terminated, ``V(last_obs)`` on the last row); ``last_obs [n, ...]`` where the next rollout
    continues from.
    """

    obs: np.ndarray
    actions: np.ndarray
    log_probs: np.ndarray
    values: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    next_values: np.ndarray
    last_obs: np.ndarray


def _values_of(model, params, obs, dtype) -> np.ndarray:
    return np.asarray(model(params, obs)[1], dtype=dtype).reshape(len(obs))


def policy_step(model, params, obs, rng: np.random.Generator):
    """Sample one action per row: returns ``(actions [n] int64, log_probs [n], values [n])``.

    ``model(params, obs) -> (logits [n, A], values [n])``; the actions come from
    :func:`rlcourse.categorical_sample` (which raises on NaN or infinite logits, the sign of a
    diverged network) and their log-probabilities from :func:`rlcourse.categorical_log_prob`.
    """
    obs = as_float_array("obs", obs)
    if obs.ndim < 1:
        raise ValueError(f"obs: expected a batch [n, ...] of observations, got shape {obs.shape}")
    check_params("params", params, optional=True)
    return _policy_step(model, params, obs, rng)


def _policy_step(model, params, obs, rng, num_actions=None, source="obs"):
    _check_rng(rng)
    logits, values = model_output(model, params, obs, "actor_critic", num_actions, source)
    actions = categorical_sample(logits, rng)
    log_probs = np.asarray(categorical_log_prob(logits, actions))
    return actions, log_probs, np.asarray(values).reshape(len(actions))


def _check_rng(rng) -> None:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")


def collect_rollout(env, model, params, obs, steps: int, rng: np.random.Generator,
                    dtype=np.float32) -> Rollout:
    """Run the stochastic policy for ``steps`` vector steps from ``obs``; see :class:`Rollout`."""
    check_env(env)
    steps = check_count("steps", steps)
    dtype = float_dtype("dtype", dtype)
    check_params("params", params, optional=True)
    _check_rng(rng)
    n = env.n
    check_shape("obs", as_float_array("obs", obs), (n, *env.observation_shape),
                against="[n, *env.observation_shape]")
    obs_buf = np.empty((steps, *np.shape(obs)), dtype=dtype)
    actions = np.empty((steps, n), dtype=np.int64)
    log_probs = np.empty((steps, n), dtype=dtype)
    values = np.empty((steps + 1, n), dtype=dtype)
    rewards = np.empty((steps, n), dtype=dtype)
    terminated = np.empty((steps, n), dtype=bool)
    truncated = np.empty((steps, n), dtype=bool)
    # Values of final_obs where an episode was truncated, to patch into next_values below.
    patches: list[tuple[int, np.ndarray, np.ndarray]] = []
    for t in range(steps):
        obs_buf[t] = obs
        actions[t], log_probs[t], values[t] = _policy_step(model, params, obs_buf[t], rng,
                                                           env.num_actions, "env's observations")
        step = env.step(actions[t])
        rewards[t], terminated[t], truncated[t] = step.reward, step.terminated, step.truncated
        cut = np.flatnonzero(step.truncated & ~step.terminated)
        if cut.size:
            final = np.asarray(step.final_obs[cut], dtype=dtype)
            patches.append((t, cut, _values_of(model, params, final, dtype)))
        obs = step.obs
    values[steps] = _values_of(model, params, np.asarray(obs, dtype=dtype), dtype)
    next_values = values[1:].copy()
    next_values[terminated] = 0.0
    for t, cut, v in patches:
        next_values[t, cut] = v
    return Rollout(obs_buf, actions, log_probs, values[:-1], rewards, terminated, truncated,
                   next_values, obs)


def check_minibatch(actions, **arrays) -> None:
    """One check of a loss's per-sample inputs: every array of ``arrays`` holds finite real
    numbers in the shape of ``actions [B]`` (a NaN advantage or return would make every
    gradient NaN without a word)."""
    shape = np.shape(actions)
    for name, arr in arrays.items():
        check_shape(name, as_float_array(name, arr), shape, against="actions")


def check_obs(obs, actions) -> np.ndarray:
    """A minibatch's observations ``[B, ...]``: finite real numbers, ``B = len(actions)``."""
    obs = as_float_array("obs", obs)
    if obs.shape[:1] != np.shape(actions)[:1]:
        raise ValueError(f"obs: expected [B, ...] with B = len(actions) (actions have shape "
                         f"{np.shape(actions)}), got shape {obs.shape}")
    return obs


def explained_variance(values: np.ndarray, returns: np.ndarray) -> float:
    """``1 - Var(returns - values) / Var(returns)``: 1 perfect, 0 no better than a constant,
    negative worse; NaN-free (0.0 when the returns do not vary). Both arrays have one shape."""
    returns = as_float_array("returns", returns).astype(np.float64)
    values = as_float_array("values", values).astype(np.float64)
    check_shape("values", values, returns.shape, against="returns")
    var = float(np.var(returns))
    if var == 0.0:
        return 0.0
    return 1.0 - float(np.var(returns - values)) / var
