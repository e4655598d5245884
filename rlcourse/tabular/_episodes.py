"""What every model-free tabular learner shares: input checks (once, at the boundary), the
starting table, the seeded start and one environment step as Python scalars.

Environment: any vector environment with ``n == 1`` copy, integer states and the attributes
``num_states`` and ``num_actions`` (``TabularMDP``, ``GridWorld``, ``FrozenLake``,
``CliffWalking``). The model ``P``/``R`` is never read: the agent learns only from steps.

Seeding: ``env.reset(seed=seed)`` drives the environment; the agent's own draws (actions,
exploration, ties) come from a generator seeded with a child of ``SeedSequence(seed)``, so one
``seed`` fixes the whole run, bit for bit, and the two streams are independent.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import agent_rng, as_float_array, check_distribution, check_shape

__all__: list[str] = []  # private helpers of the tabular learners


def _check_env(env):
    for attr in ("n", "num_states", "num_actions", "reset", "step"):
        if not hasattr(env, attr):
            raise TypeError(
                f"env: expected a tabular vector environment (TabularMDP, GridWorld, ...) with "
                f"'{attr}', got {type(env).__name__}"
            )
    if env.n != 1:
        raise ValueError(f"env: expected one copy (n=1), got n={env.n}")
    return int(env.num_states), int(env.num_actions)


def _check_alpha(alpha):
    """Step sizes as a 1-D array ``[K]`` in (0, 1], and whether one number came."""
    arr = as_float_array("alpha", alpha)
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"alpha: expected a number or a 1-D array of step sizes, got shape "
                         f"{arr.shape}")
    if ((arr <= 0) | (arr > 1)).any():
        bad = arr[(arr <= 0) | (arr > 1)][0]
        raise ValueError(f"alpha: expected step sizes in (0, 1], got {bad}")
    return arr.reshape(-1).astype(np.float64), arr.ndim == 0


def _check_policy(policy, S, A):
    policy = as_float_array("policy", policy, ndim=2).astype(np.float64)
    check_shape("policy", policy, (S, A), against="[S, A] from env.num_states, env.num_actions")
    check_distribution("policy", policy, axis=1)
    cdf = np.cumsum(policy, axis=1)
    cdf[:, -1] = 1.0  # a draw in [0, 1) always lands on an action with non-zero probability
    return cdf


def _initial_table(init, entry_shape, copies=None):
    """The starting table: ``init`` (a number or an array of ``entry_shape``), repeated for
    ``copies`` step sizes when given."""
    arr = as_float_array("init", init).astype(np.float64)
    if arr.ndim:
        check_shape("init", arr, entry_shape, against="one value per table entry")
    shape = entry_shape if copies is None else (copies, *entry_shape)
    return np.broadcast_to(arr, shape).copy()


def _start(env, seed):
    """Reset ``env`` with ``seed``; the agent's generator (an independent stream); one-slot
    action buffer; first state."""
    if isinstance(seed, np.random.Generator):
        raise TypeError("seed: expected an int (it seeds the environment too), got a Generator")
    rng = agent_rng(seed)
    obs = env.reset(seed=int(seed))
    return rng, np.zeros(1, dtype=np.int64), int(obs[0])


def _step(env, action_buffer, action):
    """One env step as Python scalars: ``(obs, reward, terminated, truncated, final_obs)``."""
    action_buffer[0] = action
    st = env.step(action_buffer)
    return (int(st.obs[0]), float(st.reward[0]), bool(st.terminated[0]), bool(st.truncated[0]),
            int(st.final_obs[0]))


def _sample(cdf_row, rng) -> int:
    return int(cdf_row.searchsorted(rng.random(), side="right"))


def _visited(keys: list, returns, first_visit: bool):
    """``(key, G_t)`` for the steps Monte Carlo updates: every step, or only each key's first."""
    if not first_visit:
        return zip(keys, returns)
    first = {}
    for t, key in enumerate(keys):
        first.setdefault(key, t)
    return ((key, g) for t, (key, g) in enumerate(zip(keys, returns)) if first[key] == t)
