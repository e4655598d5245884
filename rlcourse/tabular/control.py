"""Model-free control: learn ``Q`` while acting epsilon-greedily. On-policy Monte Carlo control,
Q-learning, SARSA, Expected SARSA and Double Q-learning (see :mod:`rlcourse.tabular._episodes`
for the environment protocol, copies and seeding, and :mod:`rlcourse.tabular.exploration` for
the epsilon-greedy draws).

Time semantics, the same in every function and pinned by tests:

- a ``terminated`` step never bootstraps: the next state is terminal and its value is 0,
  whatever the table holds there;
- a ``truncated`` step (a time limit) bootstraps from the value of ``final_obs``, the state the
  episode stopped in, never from ``obs``, which already belongs to the next episode (the
  environment resets in the same step);
- nothing crosses an episode boundary: Monte Carlo returns end at the episode's end.

Q-learning, SARSA, Expected SARSA and Double Q-learning accept an environment with ``n``
copies: ``n`` independent learners in lockstep (see :mod:`rlcourse.tabular._episodes`).

``epsilon`` is one number or a schedule ``[episodes]``: episode ``k`` explores with
``epsilon[k]`` (for example a decay to 0, so that the policy becomes greedy in the limit).
With ``n`` copies of the environment, ``alpha`` may also give one step size per copy ``[n]``,
so one call sweeps step sizes and seeds together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core._checks import as_float_array, check_count, check_flag, check_probability
from ._episodes import (
    _check_alpha,
    _check_env,
    _Episodes,
    _initial_table,
    _squeeze,
    _start,
    _start_copies,
    _step,
    _visited,
)
from .exploration import _act, _epsilon_greedy_action, _epsilon_greedy_expectation
from .targets import _bootstrap, _mc_returns, _td_target

__all__ = ["ControlResult", "mc_control", "q_learning", "sarsa", "expected_sarsa",
           "double_q_learning"]


@dataclass(frozen=True)
class ControlResult:
    """What a control method learned.

    ``Q [S, A]`` action values after the last episode; ``policy [S]`` the greedy action of each
    state (lowest index among ties); ``episode_returns [episodes]`` undiscounted sums of rewards
    earned while exploring; ``episode_lengths [episodes]`` steps taken. With ``n`` copies every
    field has a leading ``[n]`` axis.
    """

    Q: np.ndarray
    policy: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray


def _check_schedule(epsilon, episodes):
    """``epsilon`` as one exploration rate per episode ``[episodes]``, each in [0, 1]."""
    if epsilon is None or np.asarray(epsilon).dtype == np.bool_:
        raise TypeError(f"epsilon: expected an exploration rate in [0, 1] or one per episode, got "
                        f"{type(epsilon).__name__} {epsilon!r}")
    eps = as_float_array("epsilon", epsilon)
    if eps.ndim == 0:
        return np.full(episodes, check_probability("epsilon", float(eps)))
    if eps.shape != (episodes,):
        raise ValueError(f"epsilon: expected a number or one value per episode ({episodes},), "
                         f"got shape {eps.shape}")
    if ((eps < 0) | (eps > 1)).any():
        raise ValueError(f"epsilon: expected values in [0, 1], got {eps[(eps < 0) | (eps > 1)][0]}")
    return eps.astype(np.float64)


def _check_control(env, episodes, alpha, gamma, epsilon, init, copies=False, tables=1):
    """Checked inputs. Monte Carlo (``copies=False``): ``Q [S, A]``, ``alpha`` None (sample
    averages) or a number. TD control: ``Q [tables, n, S, A]``, ``alpha [n]``."""
    if copies:
        S, A, n = _check_env(env, copies=True)
    else:
        S, A = _check_env(env)
    episodes = check_count("episodes", episodes)
    gamma = check_probability("gamma", gamma)
    eps = _check_schedule(epsilon, episodes)
    if alpha is not None or copies:
        alphas, scalar = _check_alpha(alpha)
        if not copies and not scalar:
            raise ValueError(f"alpha: expected one step size, got shape {alphas.shape}")
        if copies and not scalar and alphas.shape != (n,):
            raise ValueError(f"alpha: expected one step size, or one per copy ({n},), got shape "
                             f"{alphas.shape}")
        alpha = np.broadcast_to(alphas, (n,)) if copies else float(alphas[0])
    Q = _initial_table(init, (S, A), (tables, n) if copies else None)
    return episodes, alpha, gamma, eps, Q


def mc_control(env, episodes, gamma=0.99, epsilon=0.1, first_visit=True, seed=0, alpha=None,
               init=0.0):
    """On-policy Monte Carlo control with an epsilon-soft policy (S&B section 5.4).

    Each episode follows the epsilon-greedy policy of the current ``Q`` (episode ``k`` with
    ``epsilon[k]`` when ``epsilon`` is a schedule ``[episodes]``); then every (first-visited, or
    every) pair ``(s, a)`` moves ``Q(s, a)`` towards its return: the sample average
    (``alpha=None``) or a constant step. A truncated episode's returns start from the policy's
    expected ``Q`` at ``final_obs``. Returns a :class:`ControlResult`.
    """
    first_visit = check_flag("first_visit", first_visit)
    return _mc_control(env, episodes, gamma, epsilon, first_visit, seed, alpha, init)


def _mc_control(env, episodes, gamma, epsilon, first_visit, seed, alpha, init, rng=None):
    episodes, alpha, gamma, eps, Q = _check_control(env, episodes, alpha, gamma, epsilon, init)
    counts = np.zeros_like(Q)
    rng, act, s = _start(env, seed, rng)
    ep_returns, ep_lengths = [], []
    for k in range(episodes):
        pairs, rewards = [], []
        while True:
            a = _epsilon_greedy_action(Q[s], eps[k], rng)
            s_next, r, terminated, truncated, s_final = _step(env, act, a)
            pairs.append((s, a))
            rewards.append(r)
            if terminated or truncated:
                break
            s = s_next
        final_value = _bootstrap(_epsilon_greedy_expectation(Q[s_final], eps[k]),
                                 terminated)
        returns = _mc_returns(rewards, gamma, final_value)
        for pair, g in _visited(pairs, returns, first_visit):
            counts[pair] += 1.0
            step = 1.0 / counts[pair] if alpha is None else alpha
            Q[pair] += step * (g - Q[pair])
        ep_returns.append(sum(rewards))
        ep_lengths.append(len(rewards))
        s = s_next
    return ControlResult(Q, Q.argmax(axis=1).astype(np.int64), np.array(ep_returns),
                         np.array(ep_lengths, dtype=np.int64))


def _td_control(env, episodes, alpha, gamma, epsilon, seed, init, method, rng=None,
                lockstep=None):
    """Q-learning, SARSA, Expected SARSA and Double Q-learning: checks, then the loop for one
    copy (:func:`_td_control_one`) or for ``n`` copies in lockstep (:func:`_td_control_copies`,
    the same algorithm; with ``n == 1`` it draws the same numbers, which a test checks)."""
    tables = 2 if method == "double_q_learning" else 1
    episodes, alphas, gamma, eps, Q = _check_control(env, episodes, alpha, gamma, epsilon, init,
                                                     copies=True, tables=tables)
    if lockstep is None:
        lockstep = Q.shape[1] > 1
    loop = _td_control_copies if lockstep else _td_control_one
    return loop(env, episodes, alphas, gamma, eps, Q, method, seed, rng)


def _td_control_one(env, episodes, alphas, gamma, eps, Q, method, seed, rng):
    """One copy, Python scalars. The methods differ only in ``v_next``, the value that stands
    for the future in the target, and in which table learns: Double Q-learning keeps two and a
    coin picks one each step. SARSA draws its next action before the update and then takes it;
    the others draw it after the update."""
    Q, alpha = Q[:, 0], float(alphas[0])  # [tables, S, A]

    def act(s, e):  # epsilon-greedy on the table (the mean of the two for Double Q-learning)
        return _epsilon_greedy_action(Q[0, s] if len(Q) == 1 else Q[:, s].mean(axis=0), e, rng)

    rng, buffer, s = _start(env, seed, rng)
    ep_returns, ep_lengths = [], []
    for k in range(episodes):
        e = eps[k]
        total, steps = 0.0, 0
        a = act(s, e)
        while True:
            s_next, r, terminated, truncated, s_final = _step(env, buffer, a)
            table, a_next = 0, None
            if method == "q_learning":
                v_next = max(Q[0, s_final].tolist())
            elif method == "sarsa":
                a_next = act(s_final, e)  # the action it takes next, if the episode goes on
                v_next = Q[0, s_final, a_next]
            elif method == "expected_sarsa":
                v_next = _epsilon_greedy_expectation(Q[0, s_final], e)
            else:  # Double Q-learning: one table picks the greedy action, the other values it
                table = 0 if rng.random() < 0.5 else 1
                v_next = Q[1 - table, s_final, Q[table, s_final].argmax()]
            target = _td_target(r, v_next, terminated, gamma)
            Q[table, s, a] += alpha * (target - Q[table, s, a])
            total += r
            steps += 1
            s = s_next
            if terminated or truncated:
                break
            a = a_next if a_next is not None else act(s, e)
        ep_returns.append(total)
        ep_lengths.append(steps)
    Q = Q.mean(axis=0)
    return ControlResult(Q, Q.argmax(axis=1).astype(np.int64), np.array(ep_returns),
                         np.array(ep_lengths, dtype=np.int64))


def _td_control_copies(env, episodes, alphas, gamma, eps, Q, method, seed, rng):
    """``n`` copies in lockstep, one table (or pair) each: :func:`_td_control_one` on arrays.
    A copy through with its episodes keeps stepping but learns nothing more."""
    n = Q.shape[1]
    copy = np.arange(n)
    rng, s = _start_copies(env, seed, rng)
    log = _Episodes(n, episodes)

    def act(which, states, e):
        q = Q[0, which, states] if len(Q) == 1 else Q[:, which, states].mean(axis=0)
        return _act(q, e, rng)

    constant = eps[0] if (eps == eps[0]).all() else None  # one epsilon: a number is faster
    a = act(copy, s, eps[0])
    while not log.finished:
        e = eps[log.current] if constant is None else constant
        step = env.step(a)
        s_final, table, a_next = step.final_obs, 0, None
        if method == "q_learning":
            v_next = Q[0, copy, s_final].max(axis=1)
        elif method == "sarsa":
            a_next = act(copy, s_final, e)
            v_next = Q[0, copy, s_final, a_next]
        elif method == "expected_sarsa":
            v_next = _epsilon_greedy_expectation(Q[0, copy, s_final], e)
        else:
            table = (rng.random(n) >= 0.5).astype(np.int64)
            v_next = Q[1 - table, copy, s_final, Q[table, copy, s_final].argmax(axis=1)]
        target = _td_target(step.reward, v_next, step.terminated, gamma)
        Q[table, copy, s, a] += log.learning * alphas * (target - Q[table, copy, s, a])
        log.add(step.reward, step.done)
        s = step.obs
        if a_next is None:
            a = act(copy, s, eps[log.current] if constant is None else constant)
        else:
            a = a_next
            if step.done.any():  # a new episode starts in obs
                new = np.flatnonzero(step.done)
                a[new] = act(new, s[new], eps[log.current[new]])
    Q = Q.mean(axis=0)
    return ControlResult(*_squeeze(n, Q, Q.argmax(axis=-1).astype(np.int64), log.returns,
                                   log.lengths))


def q_learning(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """Q-learning (Watkins, 1989): off-policy TD control.

    Acts epsilon-greedily (random ties) and updates
    ``Q(s, a) += alpha * (r + gamma max_a' Q(s', a') - Q(s, a))``; the target is ``r`` alone
    when the step terminated and bootstraps from ``final_obs`` when it was truncated.
    ``init`` a number or ``[S, A]``. Returns a :class:`ControlResult`.
    """
    return _td_control(env, episodes, alpha, gamma, epsilon, seed, init, "q_learning")


def sarsa(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """SARSA (Rummery & Niranjan, 1994): on-policy TD control.

    Updates towards ``r + gamma Q(s', a')`` with ``a'`` the epsilon-greedy action actually taken
    next. After a truncation ``a'`` is drawn at ``final_obs`` only to bootstrap (it is never
    taken); after a termination the target is ``r``. Returns a :class:`ControlResult`.
    """
    return _td_control(env, episodes, alpha, gamma, epsilon, seed, init, "sarsa")


def expected_sarsa(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """Expected SARSA (van Seijen et al., 2009): the target averages ``Q(s', .)`` under the
    epsilon-greedy policy, ``r + gamma sum_a' pi(a'|s') Q(s', a')``, removing the variance of
    SARSA's sampled ``a'``. Terminal and truncated steps as :func:`q_learning`.
    Returns a :class:`ControlResult`."""
    return _td_control(env, episodes, alpha, gamma, epsilon, seed, init, "expected_sarsa")


def double_q_learning(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """Double Q-learning (van Hasselt, 2010): two tables ``Q1``, ``Q2``; each step a fair coin
    picks the one that learns, and the other one values its greedy action:
    ``Q1(s, a) += alpha * (r + gamma Q2(s', argmax_a' Q1(s', a')) - Q1(s, a))`` (or the same with
    1 and 2 swapped; the argmax takes the lowest index among ties). One table's noise no longer
    both picks and values the maximum, which removes Q-learning's maximisation bias. Acts
    epsilon-greedily on ``(Q1 + Q2) / 2``, which is the ``Q`` returned.
    Returns a :class:`ControlResult`."""
    return _td_control(env, episodes, alpha, gamma, epsilon, seed, init, "double_q_learning")
