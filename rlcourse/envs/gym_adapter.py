"""``from_gymnasium``: run a Gymnasium env (or vector env) through our vector protocol.

Gymnasium is optional: nothing here imports it. A single ``gymnasium.Env`` becomes ``n = 1``
copy that resets itself in the same step. A ``gymnasium.vector.VectorEnv`` must use same-step
autoreset (``vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}`` in
``gymnasium.make_vec``): Gymnasium's default, next-step autoreset, spends one extra step with
reward 0 per episode and would break the protocol's time semantics.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import check_count
from .base import EpisodeStats, Step, check_actions

__all__ = ["from_gymnasium"]


def _num_actions(space) -> int:
    n = getattr(space, "n", None)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"env: expected a Discrete action space, got {space}")
    if n < 1:
        raise ValueError(f"env: expected a Discrete action space with at least 1 action, got n={n}")
    return int(n)


def _observation_shape(space) -> tuple:
    if not hasattr(space, "shape"):
        raise TypeError(f"env: expected an observation space with a shape, got {space!r}")
    return tuple(space.shape or ())


class _GymSingle(EpisodeStats):
    """One Gymnasium env as ``n = 1`` copy."""

    def __init__(self, env):
        self.env, self.n = env, 1
        self.observation_shape = _observation_shape(env.observation_space)
        self.num_actions = _num_actions(env.action_space)
        self._init_stats(1)

    def reset(self, seed: int | None = None) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        self._clear_running()
        return np.asarray(obs)[None]

    def step(self, actions) -> Step:
        action = int(check_actions(actions, 1, self.num_actions)[0])
        obs, reward, terminated, truncated, _ = self.env.step(action)
        self._ret += float(reward)
        self._len += 1
        final_obs = obs = np.asarray(obs)[None]
        if terminated or truncated:
            self._finish(np.zeros(1, dtype=np.intp))
            obs = np.asarray(self.env.reset()[0])[None]
        return Step(obs, np.array([float(reward)]), np.array([bool(terminated)]),
                    np.array([bool(truncated)]), final_obs)


class _GymVector(EpisodeStats):
    """A same-step-autoreset Gymnasium vector env."""

    def __init__(self, env):
        metadata = env.metadata if isinstance(env.metadata, dict) else {}
        mode = metadata.get("autoreset_mode")
        if getattr(mode, "name", str(mode)) != "SAME_STEP":
            raise ValueError(
                f"env: expected a vector env with same-step autoreset, got autoreset_mode {mode}; "
                "create it with gymnasium.make_vec(..., vector_kwargs={'autoreset_mode': "
                "gymnasium.vector.AutoresetMode.SAME_STEP})"
            )
        self.env, self.n = env, check_count("env.num_envs", env.num_envs)
        self.observation_shape = _observation_shape(env.single_observation_space)
        self.num_actions = _num_actions(env.single_action_space)
        self._init_stats(self.n)

    def reset(self, seed: int | None = None) -> np.ndarray:
        obs, _ = self.env.reset(seed=seed)
        self._clear_running()
        return np.asarray(obs)

    def step(self, actions) -> Step:
        actions = check_actions(actions, self.n, self.num_actions)
        obs, reward, terminated, truncated, info = self.env.step(actions)
        reward = np.asarray(reward, dtype=np.float64)
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        self._ret += reward
        self._len += 1
        obs = np.asarray(obs)
        final_obs = obs
        done = terminated | truncated
        if done.any():
            idx = np.flatnonzero(done)
            final_obs = obs.copy()
            final_obs[idx] = np.stack([np.asarray(info["final_obs"][i]) for i in idx])
            self._finish(idx)
        return Step(obs, reward, terminated, truncated, final_obs)


def from_gymnasium(env):
    """Wrap ``env`` (a ``gymnasium.Env`` or same-step ``gymnasium.vector.VectorEnv`` with a
    Discrete action space) in our protocol: ``n``, ``observation_shape``, ``num_actions``,
    ``reset(seed)``, ``step(actions [n]) -> Step``, ``episode_returns``, ``episode_lengths``.
    Rewards become float64; observations keep Gymnasium's dtype.
    """
    if isinstance(env, type):
        raise TypeError(f"env: expected a gymnasium Env or VectorEnv, got the class {env.__name__}, "
                        "not an instance")
    vector = ("num_envs", "single_action_space", "single_observation_space", "metadata",
              "reset", "step")
    if all(hasattr(env, a) for a in vector):
        return _GymVector(env)
    if all(hasattr(env, a) for a in ("action_space", "observation_space", "reset", "step")):
        return _GymSingle(env)
    raise TypeError(f"env: expected a gymnasium Env or VectorEnv, got {type(env).__name__}")
