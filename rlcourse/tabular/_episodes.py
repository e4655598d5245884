"""What every model-free tabular learner shares: input checks (once, at the boundary), the
starting table, the seeded start, the bookkeeping of episodes, and policy sampling.

Environment: any vector environment with integer states and the attributes ``n``,
``num_states`` and ``num_actions`` (``TabularMDP``, ``GridWorld``, ``FrozenLake``,
``CliffWalking``). The model ``P``/``R`` is never read: the agent learns only from steps.
Prediction and Monte Carlo control step one copy (``n == 1``) with Python scalars. The one-step
TD control methods also accept ``n`` copies: ``n`` independent learners side by side, in
lockstep, one table per copy, each learning from ``episodes`` episodes of its own; their results
gain a leading ``[n]`` axis (none when ``n == 1``). Lockstep pays numpy's per-call cost on every
step, so it is slower than the scalar loop for one copy and much faster for dozens (a sweep over
seeds and step sizes).

Seeding: ``env.reset(seed=seed)`` drives the environment; the agent's own draws (actions,
exploration, ties) come from a generator seeded with a child of ``SeedSequence(seed)``, so one
``seed`` fixes the whole run, bit for bit, and the two streams are independent.
"""

from __future__ import annotations

import bisect
import weakref

import numpy as np

from ..core._checks import agent_rng, as_float_array, check_distribution, check_shape
from ..envs.tabular import TabularMDP

__all__: list[str] = []  # private helpers of the tabular learners


def _check_env(env, copies=False):
    """``(S, A)`` of a tabular vector environment with one copy; ``(S, A, n)`` if ``copies``."""
    if isinstance(env, type):
        raise TypeError(f"env: expected a tabular vector environment (TabularMDP, GridWorld, ...), "
                        f"got the class {env.__name__}, not an instance")
    for attr in ("n", "num_states", "num_actions", "reset", "step"):
        if not hasattr(env, attr):
            raise TypeError(
                f"env: expected a tabular vector environment (TabularMDP, GridWorld, ...) with "
                f"'{attr}', got {type(env).__name__}"
            )
    if copies:
        return int(env.num_states), int(env.num_actions), int(env.n)
    if env.n != 1:
        raise ValueError(f"env: expected one copy (n=1), got n={env.n}")
    return int(env.num_states), int(env.num_actions)


def _check_alpha(alpha):
    """Step sizes as a 1-D array ``[K]`` in (0, 1], and whether one number came."""
    if alpha is None or np.asarray(alpha).dtype == np.bool_:
        raise TypeError(f"alpha: expected a step size in (0, 1] or a 1-D array of them, got "
                        f"{type(alpha).__name__} {alpha!r}")
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
    return cdf.tolist()  # rows as Python lists: _sample bisects one per step


def _initial_table(init, entry_shape, copies=None):
    """The starting table: ``init`` (a number or an array of ``entry_shape``), repeated for
    ``copies`` (an int or a tuple of leading sizes) when given."""
    arr = as_float_array("init", init).astype(np.float64)
    if arr.ndim:
        check_shape("init", arr, entry_shape, against="one value per table entry")
    lead = () if copies is None else (copies if isinstance(copies, tuple) else (copies,))
    return np.broadcast_to(arr, (*lead, *entry_shape)).copy()


# An episode longer than this never ends (no terminal state reachable, no time limit): the
# learner stops with an error instead of looping (and, for Monte Carlo, growing) forever.
MAX_EPISODE_STEPS = 100_000
_episode_steps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _endless(steps: int) -> RuntimeError:
    return RuntimeError(
        f"env: an episode has run {steps:,} steps without ending (no terminal state reached and no "
        "time limit); give the environment a time limit (max_steps=...) or a policy that reaches "
        "a terminal state"
    )


def _start_copies(env, seed, rng=None):
    """Reset ``env`` with ``seed``; the agent's generator (an independent stream, unless ``rng``
    is given); the first states ``[n]``."""
    if isinstance(seed, np.random.Generator):
        raise TypeError("seed: expected an int (it seeds the environment too), got a Generator")
    rng = agent_rng(seed) if rng is None else rng
    obs = env.reset(seed=int(seed))
    _episode_steps[env] = 0
    return rng, np.asarray(obs, dtype=np.int64).reshape(-1)


def _start(env, seed, rng=None):
    """One copy: the agent's generator, a one-slot action buffer and the first state."""
    rng, s = _start_copies(env, seed, rng)
    return rng, np.zeros(1, dtype=np.int64), int(s[0])


def _step(env, action_buffer, action):
    """One env step as Python scalars: ``(obs, reward, terminated, truncated, final_obs)``."""
    if type(env).step is TabularMDP.step and env.n == 1 and env._was_reset and \
            isinstance(action, (int, np.integer)) and 0 <= action < env.num_actions:
        # one copy of a tabular env: the same step without building and unpacking arrays; the
        # env counts the steps of the running episode itself (from the reset _start_copies made)
        obs, reward, terminated, truncated, final_obs = env._step_scalars(int(action))
        if env._len[0] >= MAX_EPISODE_STEPS:
            raise _endless(int(env._len[0]))
        return obs, reward, terminated, truncated, final_obs
    else:
        action_buffer[0] = action
        st = env.step(action_buffer)
        obs, reward, terminated, truncated, final_obs = (st.obs[0], st.reward[0], st.terminated[0],
                                                         st.truncated[0], st.final_obs[0])
    steps = 0 if (terminated or truncated) else _episode_steps.get(env, 0) + 1
    if steps >= MAX_EPISODE_STEPS:
        raise _endless(steps)
    _episode_steps[env] = steps
    return int(obs), float(reward), bool(terminated), bool(truncated), int(final_obs)


def _sample(cdf_row: list, rng) -> int:
    """An action of a fixed policy from one row of its CDF (a list): one uniform, the index of
    the first entry above it (``np.searchsorted(..., side="right")``)."""
    return bisect.bisect_right(cdf_row, rng.random())


_NONE = np.zeros(0, dtype=np.int64)


class _Episodes:
    """Bookkeeping of ``n`` copies that each learn from ``episodes`` episodes, in lockstep.

    ``count [n]`` episodes finished; ``learning [n]`` copies still inside their budget (a copy
    that is through keeps stepping with the others, but learns and records nothing more);
    ``current [n]`` the index of each copy's episode (the last one for copies that are through);
    ``returns``/``lengths [n, episodes]`` undiscounted return and steps of each episode.
    """

    def __init__(self, n: int, episodes: int):
        self.episodes = episodes
        self.count = np.zeros(n, dtype=np.int64)
        self.learning = np.ones(n, dtype=bool)
        self.current = np.zeros(n, dtype=np.int64)
        self.finished = False
        self._return = np.zeros(n)
        self._length = np.zeros(n, dtype=np.int64)
        self.returns = np.zeros((n, episodes))
        self.lengths = np.zeros((n, episodes), dtype=np.int64)

    def add(self, reward, done) -> np.ndarray:
        """Count one step of every copy; returns the indexes of the copies whose episode (inside
        the budget) ended."""
        self._return += reward
        self._length += 1
        if not done.any():
            if self._length.max() >= MAX_EPISODE_STEPS:
                raise _endless(int(self._length.max()))
            return _NONE
        idx = np.flatnonzero(done & self.learning)
        k = self.count[idx]
        self.returns[idx, k] = self._return[idx]
        self.lengths[idx, k] = self._length[idx]
        self.count[done] += 1
        self._return[done] = 0.0
        self._length[done] = 0
        self.learning = self.count < self.episodes
        self.current = np.minimum(self.count, self.episodes - 1)
        self.finished = not self.learning.any()
        return idx


def _squeeze(n, *arrays):
    """Drop the leading copy axis when there is one copy."""
    return tuple(a[0] for a in arrays) if n == 1 else arrays


def _visited(keys: list, returns, first_visit: bool):
    """``(key, G_t)`` for the steps Monte Carlo updates: every step, or only each key's first."""
    if not first_visit:
        return zip(keys, returns)
    first = {}
    for t, key in enumerate(keys):
        first.setdefault(key, t)
    return ((key, g) for t, (key, g) in enumerate(zip(keys, returns)) if first[key] == t)
