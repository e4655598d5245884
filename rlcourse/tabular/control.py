"""Model-free control: learn ``Q`` while acting epsilon-greedily. On-policy Monte Carlo control,
Q-learning, SARSA and Expected SARSA (see :mod:`rlcourse.tabular._episodes` for the environment
protocol and seeding).

Time semantics, the same in every function and pinned by tests:

- a ``terminated`` step never bootstraps: the next state is terminal and its value is 0,
  whatever the table holds there;
- a ``truncated`` step (a time limit) bootstraps from the value of ``final_obs``, the state the
  episode stopped in, never from ``obs``, which already belongs to the next episode (the
  environment resets in the same step);
- nothing crosses an episode boundary: Monte Carlo returns and n-step windows end at the
  episode's end, and eligibility traces are zeroed there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core._checks import check_count, check_probability
from ._episodes import _check_alpha, _check_env, _initial_table, _start, _step, _visited
from .exploration import _epsilon_greedy_action, _epsilon_greedy_expectation
from .targets import _bootstrap, _mc_returns, _td_target

__all__ = ["ControlResult", "mc_control", "q_learning", "sarsa", "expected_sarsa"]


@dataclass(frozen=True)
class ControlResult:
    """What a control method learned.

    ``Q [S, A]`` action values after the last episode; ``policy [S]`` the greedy action of each
    state (lowest index among ties); ``episode_returns [episodes]`` undiscounted sums of rewards
    earned while exploring; ``episode_lengths [episodes]`` steps taken.
    """

    Q: np.ndarray
    policy: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray


def _control_result(Q, returns, lengths):
    return ControlResult(Q, Q.argmax(axis=1).astype(np.int64), np.array(returns),
                         np.array(lengths, dtype=np.int64))


def _check_control(env, episodes, alpha, gamma, epsilon, init):
    S, A = _check_env(env)
    episodes = check_count("episodes", episodes)
    gamma = check_probability("gamma", gamma)
    epsilon = check_probability("epsilon", epsilon)
    if alpha is not None:
        alphas, scalar = _check_alpha(alpha)
        if not scalar:
            raise ValueError(f"alpha: expected one step size for control, got shape {alphas.shape}")
        alpha = float(alphas[0])
    return episodes, alpha, gamma, epsilon, _initial_table(init, (S, A))


def mc_control(env, episodes, gamma=0.99, epsilon=0.1, first_visit=True, seed=0, alpha=None,
               init=0.0):
    """On-policy Monte Carlo control with an epsilon-soft policy (S&B section 5.4).

    Each episode follows the epsilon-greedy policy of the current ``Q``; then every
    (first-visited, or every) pair ``(s, a)`` moves ``Q(s, a)`` towards its return: the sample
    average (``alpha=None``) or a constant step. A truncated episode's returns start from the
    policy's expected ``Q`` at ``final_obs``. Returns a :class:`ControlResult`.
    """
    episodes, alpha, gamma, epsilon, Q = _check_control(env, episodes, alpha, gamma, epsilon,
                                                        init)
    counts = np.zeros_like(Q)
    rng, act, s = _start(env, seed)
    ep_returns, ep_lengths = [], []
    for _ in range(episodes):
        pairs, rewards = [], []
        while True:
            a = _epsilon_greedy_action(Q[s], epsilon, rng)
            s_next, r, terminated, truncated, s_final = _step(env, act, a)
            pairs.append((s, a))
            rewards.append(r)
            if terminated or truncated:
                break
            s = s_next
        final_value = _bootstrap(_epsilon_greedy_expectation(Q[s_final], epsilon), terminated)
        returns = _mc_returns(rewards, gamma, final_value)
        for pair, g in _visited(pairs, returns, first_visit):
            counts[pair] += 1.0
            step = 1.0 / counts[pair] if alpha is None else alpha
            Q[pair] += step * (g - Q[pair])
        ep_returns.append(sum(rewards))
        ep_lengths.append(len(rewards))
        s = s_next
    return _control_result(Q, ep_returns, ep_lengths)


def _one_step_control(env, episodes, alpha, gamma, epsilon, seed, init, next_value):
    """The loop Q-learning, SARSA and Expected SARSA share; they differ only in
    ``next_value(Q_row_of_next_state, rng) -> (value, action_or_None)``, the part of the target
    that stands for the future. SARSA's draw is the next action it then takes."""
    episodes, alpha, gamma, epsilon, Q = _check_control(env, episodes, alpha, gamma, epsilon,
                                                        init)
    rng, act, s = _start(env, seed)
    ep_returns, ep_lengths = [], []
    for _ in range(episodes):
        total, steps = 0.0, 0
        a = _epsilon_greedy_action(Q[s], epsilon, rng)
        while True:
            s_next, r, terminated, truncated, s_final = _step(env, act, a)
            v_next, a_next = next_value(Q[s_final], rng)
            target = _td_target(r, v_next, terminated, gamma)
            Q[s, a] += alpha * (target - Q[s, a])
            total += r
            steps += 1
            s = s_next
            if terminated or truncated:
                break
            a = a_next if a_next is not None else _epsilon_greedy_action(Q[s], epsilon, rng)
        ep_returns.append(total)
        ep_lengths.append(steps)
    return _control_result(Q, ep_returns, ep_lengths)


def q_learning(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """Q-learning (Watkins, 1989): off-policy TD control.

    Acts epsilon-greedily (random ties) and updates
    ``Q(s, a) += alpha * (r + gamma max_a' Q(s', a') - Q(s, a))``; the target is ``r`` alone
    when the step terminated and bootstraps from ``final_obs`` when it was truncated.
    ``init`` a number or ``[S, A]``. Returns a :class:`ControlResult`.
    """
    return _one_step_control(env, episodes, alpha, gamma, epsilon, seed, init,
                             lambda q_row, rng: (max(q_row.tolist()), None))


def sarsa(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """SARSA (Rummery & Niranjan, 1994): on-policy TD control.

    Updates towards ``r + gamma Q(s', a')`` with ``a'`` the epsilon-greedy action actually taken
    next. After a truncation ``a'`` is drawn at ``final_obs`` only to bootstrap (it is never
    taken); after a termination the target is ``r``. Returns a :class:`ControlResult`.
    """
    def next_value(q_row, rng):
        a_next = _epsilon_greedy_action(q_row, epsilon, rng)
        return q_row[a_next], a_next

    return _one_step_control(env, episodes, alpha, gamma, epsilon, seed, init, next_value)


def expected_sarsa(env, episodes, alpha=0.1, gamma=0.99, epsilon=0.1, seed=0, init=0.0):
    """Expected SARSA (van Seijen et al., 2009): the target averages ``Q(s', .)`` under the
    epsilon-greedy policy, ``r + gamma sum_a' pi(a'|s') Q(s', a')``, removing the variance of
    SARSA's sampled ``a'``. Terminal and truncated steps as :func:`q_learning`.
    Returns a :class:`ControlResult`."""
    return _one_step_control(env, episodes, alpha, gamma, epsilon, seed, init,
                             lambda q_row, rng: (_epsilon_greedy_expectation(q_row, epsilon),
                                                 None))
