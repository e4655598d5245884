"""Bandit agents, each run on ``n`` independent bandit problems at once, and ``run_bandit``.

Every agent keeps per-copy arrays of shape ``[n, arms]`` and has the same three methods:
``act(rng) -> actions [n]``, ``update(actions [n], rewards [n])`` and ``reset()`` (forget
everything learned). Copy ``i`` of the agent only ever sees copy ``i``'s rewards, so ``n``
copies are ``n`` independent runs, computed together.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core._checks import (
    as_float_array,
    as_int_array,
    check_count,
    check_flag,
    check_nonnegative,
    check_probability,
    check_shape,
    finite_scalar,
    real_scalar,
)

__all__ = ["EpsilonGreedy", "UCB", "GradientBandit", "ucb_scores", "run_bandit", "BanditResult"]



def _random_argmax(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax ``[n]`` of ``values [n, arms]``, ties broken uniformly at random.

    Only the rows that hold a tie draw random numbers (after the first few pulls that is rarely
    any row), which keeps a step of thousands of copies cheap.
    """
    is_max = values == values.max(axis=1, keepdims=True)
    best = is_max.argmax(axis=1)
    tied = np.flatnonzero(np.count_nonzero(is_max, axis=1) > 1)
    if tied.size:
        best[tied] = np.argmax(rng.random((tied.size, values.shape[1])) * is_max[tied], axis=1)
    return best


class _Agent:
    """Shared bookkeeping: ``arms``, ``n`` and the validation of ``update``'s arguments.

    ``update`` validates its arguments and calls ``_apply``, which :func:`run_bandit` calls
    directly with the agent's own actions and the environment's rewards. Per-copy arrays are
    stored column-major (``order="F"``): their shape is ``[n, arms]`` as documented, and the
    row-wise max over a few arms is several times faster that way.
    """

    def __init__(self, arms, n):
        self.arms = check_count("arms", arms)
        self.n = check_count("n", n)
        self._rows = np.arange(self.n)
        self.reset()

    def _table(self, fill, dtype=np.float64) -> np.ndarray:
        return np.full((self.n, self.arms), fill, dtype=dtype, order="F")

    def update(self, actions, rewards) -> None:
        """Learn from ``rewards [n]`` received for ``actions [n]`` (one per copy)."""
        actions = as_int_array("actions", actions, 0, self.arms)
        check_shape("actions", actions, (self.n,), against="[n] for n copies")
        rewards = as_float_array("rewards", rewards).astype(np.float64)
        check_shape("rewards", rewards, (self.n,), against="[n] for n copies")
        self._apply(actions, rewards)

    def _apply(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        raise NotImplementedError


class EpsilonGreedy(_Agent):
    """Action-value estimates ``Q [n, arms]``; greedy with probability ``1 - epsilon``.

    Exploring picks an arm uniformly (the greedy arm included); greedy ties are broken at
    random. ``step_size=None`` keeps sample averages (``1 / N(a)``); a constant ``step_size``
    weights recent rewards more (for drifting arms). ``initial`` is the starting estimate of
    every arm: a high value (optimistic initialisation) makes even ``epsilon=0`` try every arm.
    """

    def __init__(self, arms: int, n: int = 1, epsilon: float = 0.1, initial: float = 0.0,
                 step_size: float | None = None):
        self.epsilon = check_probability("epsilon", epsilon)
        self.initial = finite_scalar("initial", initial)
        if step_size is not None:
            step_size = check_probability("step_size", step_size)
            if step_size == 0.0:
                raise ValueError("step_size: expected a number in (0, 1] or None, got 0.0")
        self.step_size = step_size
        super().__init__(arms, n)

    def reset(self) -> None:
        self.Q = self._table(self.initial)
        self.N = self._table(0, np.int64)

    def act(self, rng: np.random.Generator) -> np.ndarray:
        """Actions ``[n]``: a uniform arm where a ``U(0, 1)`` draw is below ``epsilon``, else greedy."""
        greedy_arm = _random_argmax(self.Q, rng)
        if self.epsilon == 0.0:
            return greedy_arm
        explore = np.flatnonzero(rng.random(self.n) < self.epsilon)
        greedy_arm[explore] = rng.integers(self.arms, size=explore.size)
        return greedy_arm

    def _apply(self, actions, rewards) -> None:
        """``Q[a] += step * (r - Q[a])`` for the pulled arm of each copy."""
        rows = self._rows
        self.N[rows, actions] += 1
        step = 1.0 / self.N[rows, actions] if self.step_size is None else self.step_size
        self.Q[rows, actions] += step * (rewards - self.Q[rows, actions])


def ucb_scores(Q, N, t, c: float = 2.0) -> np.ndarray:
    """Upper-confidence scores ``Q + c * sqrt(ln t / N)``, ``+inf`` where ``N == 0``.

    ``Q`` and ``N`` have the same shape (``[arms]`` or ``[n, arms]``); ``t >= 1`` is the number
    of the step being chosen (1 for the first). An untried arm scores ``+inf``: its
    uncertainty is unbounded, so it is tried before any arm is tried twice.
    """
    Q = as_float_array("Q", Q).astype(np.float64)
    N = np.asarray(N)
    check_shape("N", N, Q.shape, against="Q")
    if (N < 0).any():
        raise ValueError(f"N: pull counts must be >= 0, got {N.min()}")
    t = real_scalar("t", t)
    if not t >= 1:
        raise ValueError(f"t: expected the step number, >= 1, got {t}")
    c = check_nonnegative("c", c)
    return _ucb(Q, N, t, c)


def _ucb(Q, N, t, c):
    tried = N > 0
    bonus = c * np.sqrt(np.log(t) / np.where(tried, N, 1))
    return np.where(tried, Q + bonus, np.inf)


class UCB(_Agent):
    """Upper-confidence-bound action selection (UCB1 with exploration weight ``c``).

    Picks ``argmax_a Q[a] + c sqrt(ln t / N[a])`` with ``t`` the step being chosen (from 1);
    arms not yet pulled come first, in index order, so the first ``arms`` steps pull every arm
    once. Ties go to the lowest index. ``Q`` holds sample averages; ``rng`` is not used.
    """

    def __init__(self, arms: int, n: int = 1, c: float = 2.0):
        self.c = check_nonnegative("c", c)
        super().__init__(arms, n)

    def reset(self) -> None:
        self.Q = self._table(0.0)
        self.N = self._table(0, np.int64)
        self.t = 0

    def act(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """Actions ``[n]`` with the highest score (deterministic given the history)."""
        if self.t >= self.arms or (self.N > 0).all():
            return np.argmax(_ucb(self.Q, self.N, self.t + 1, self.c), axis=1)
        return np.argmax(ucb_scores(self.Q, self.N, self.t + 1, self.c), axis=1)

    def _apply(self, actions, rewards) -> None:
        """Sample-average update of the pulled arms; advances ``t``."""
        rows = self._rows
        self.N[rows, actions] += 1
        self.Q[rows, actions] += (rewards - self.Q[rows, actions]) / self.N[rows, actions]
        self.t += 1


class GradientBandit(_Agent):
    """Softmax policy over preferences ``H [n, arms]``, moved by stochastic gradient ascent.

    After pulling ``a`` and receiving ``r``:
    ``H <- H + alpha (r - baseline) (onehot(a) - pi)``, with ``pi = softmax(H)``.
    ``baseline`` is the average of the rewards *before* this one (the first reward is its own
    baseline), or 0 with ``baseline=False``. Every update sums to zero over arms, so ``H`` keeps
    summing to 0 in each copy.
    """

    def __init__(self, arms: int, n: int = 1, alpha: float = 0.1, baseline: bool = True):
        self.alpha = check_nonnegative("alpha", alpha, positive=True)
        self.use_baseline = check_flag("baseline", baseline)
        super().__init__(arms, n)

    def reset(self) -> None:
        self.H = self._table(0.0)
        self.average_reward = np.zeros(self.n)
        self.t = 0
        self._probs = None

    @property
    def probs(self) -> np.ndarray:
        """The policy ``pi [n, arms]``: softmax of the preferences."""
        if self._probs is None:
            z = np.exp(self.H - self.H.max(axis=1, keepdims=True))
            self._probs = z / z.sum(axis=1, keepdims=True)
        return self._probs

    def act(self, rng: np.random.Generator) -> np.ndarray:
        """Actions ``[n]`` sampled from ``pi`` by inverting each copy's CDF with one uniform."""
        cdf = np.cumsum(self.probs, axis=1)
        return np.minimum((cdf <= rng.random(self.n)[:, None]).sum(axis=1), self.arms - 1)

    def _apply(self, actions, rewards) -> None:
        """One gradient-ascent step on expected reward for every copy."""
        self.t += 1
        if not self.use_baseline:
            baseline = 0.0
        elif self.t == 1:
            baseline = rewards
        else:
            baseline = self.average_reward
        grad = -self.probs
        grad[self._rows, actions] += 1.0
        self.H += self.alpha * (rewards - baseline)[:, None] * grad
        self._probs = None
        self.average_reward = self.average_reward + (rewards - self.average_reward) / self.t


class BanditResult(NamedTuple):
    """What :func:`run_bandit` records, one row per step and one column per copy.

    ``rewards [steps, n]`` received; ``optimal [steps, n]`` bool, the optimal arm (at that step)
    was pulled; ``actions [steps, n]`` the arms pulled; ``regret [steps, n]`` the expected regret
    of each pull, ``max_a q(a) - q(A_t)`` with the arm means ``q`` of that step (noise-free, so
    ``regret.cumsum(axis=0)`` is each run's cumulative regret; NaN if the env has no ``means``).
    """

    rewards: np.ndarray
    optimal: np.ndarray
    actions: np.ndarray
    regret: np.ndarray


def _check_has(name, obj, attrs, what):
    """Raise unless ``obj`` is an instance with every attribute in ``attrs``."""
    if isinstance(obj, type):
        raise TypeError(f"{name}: expected {what}, got the class {obj.__name__}, not an instance")
    missing = [a for a in attrs if not hasattr(obj, a)]
    if missing:
        raise TypeError(f"{name}: expected {what}, got {type(obj).__name__} (no {missing[0]!r})")


def run_bandit(env, agent, steps: int, seed: int = 0) -> BanditResult:
    """Run ``agent`` on all ``env.n`` bandit copies for ``steps`` steps, all copies at once.

    ``env`` is a :class:`~rlcourse.envs.bandit.Bandit` (``n``, ``num_actions``,
    ``optimal_arm [n]``, ``reset(seed)``, ``step(actions) -> rewards [n]``, and ``means
    [n, arms]`` for the regret). The env is re-seeded with ``seed`` (new problems) and the agent
    reset, so the same seed gives the same result bit for bit; the agent's generator is derived
    from ``seed`` but independent of the env's. Average over copies (axis 1) for the usual
    learning curves.
    """
    steps = check_count("steps", steps)
    seed = check_count("seed", seed, low=0)
    _check_has("env", env, ("n", "num_actions", "optimal_arm", "reset", "step"),
               "a bandit environment (rc.Bandit)")
    _check_has("agent", agent, ("n", "arms", "act", "update", "reset"),
               "a bandit agent (EpsilonGreedy, UCB, GradientBandit)")
    if agent.n != env.n or agent.arms != env.num_actions:
        raise ValueError(
            f"agent: expected n={env.n} copies and arms={env.num_actions} (from env), "
            f"got n={agent.n}, arms={agent.arms}"
        )
    env.reset(seed=seed)
    agent.reset()
    rng = np.random.default_rng([seed, 1])  # a stream independent of the env's default_rng(seed)
    rows = np.arange(env.n)
    # The agent's own actions and the env's rewards need no re-validation on every step.
    learn = agent._apply if isinstance(agent, _Agent) else agent.update
    means = getattr(env, "means", None)
    moving = means is not None and getattr(env, "drift", 0.0) > 0  # means change every step
    counted = isinstance(getattr(env, "regret", None), np.ndarray)
    rewards = np.empty((steps, env.n))
    optimal = np.empty((steps, env.n), dtype=bool)
    actions = np.empty((steps, env.n), dtype=np.min_scalar_type(-env.num_actions))
    regret = np.full((steps, env.n), np.nan)
    for t in range(steps):
        a = agent.act(rng)
        actions[t] = a
        if moving:  # the means of this step: a drifting env moves them inside step()
            optimal[t] = a == env.optimal_arm
            if counted:  # the env's own running regret already holds best - chosen
                before = env.regret.copy()
            else:
                regret[t] = env.means.max(axis=1) - env.means[rows, a]
        rewards[t] = env.step(a)
        if moving and counted:
            regret[t] = env.regret - before
        learn(a, rewards[t])
    if not moving:
        optimal[:] = actions == env.optimal_arm
        if means is not None:
            regret[:] = means.max(axis=1) - means[rows, actions]
    return BanditResult(rewards, optimal, actions, regret)
