"""Model-free prediction of ``V^pi`` for a fixed policy: Monte Carlo, TD(0), n-step TD and
TD(lambda), each learning from the steps of a tabular environment (see
:mod:`rlcourse.tabular._episodes` for the environment protocol and seeding), and
:func:`record_episodes`, which keeps the episodes themselves.

Time semantics, the same in every function and pinned by tests:

- a ``terminated`` step never bootstraps: the next state is terminal and its value is 0,
  whatever the table holds there;
- a ``truncated`` step (a time limit) bootstraps from the value of ``final_obs``, the state the
  episode stopped in, never from ``obs``, which already belongs to the next episode (the
  environment resets in the same step);
- nothing crosses an episode boundary: Monte Carlo returns and n-step windows end at the
  episode's end, and eligibility traces are zeroed there.

Step sizes: every method accepts ``alpha`` as one number or a 1-D array of ``K`` step sizes.
With a fixed policy the experience does not depend on the values, so ``K`` tables learn side
by side from the *same* episodes; ``V`` then has shape ``[K, S]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core._checks import check_choice, check_count, check_flag, check_probability
from ._episodes import (
    _check_alpha,
    _check_env,
    _check_policy,
    _initial_table,
    _sample,
    _start,
    _step,
    _visited,
)
from .targets import _bootstrap, _mc_returns, _n_step_target, _td_target

__all__ = ["PredictionResult", "mc_prediction", "td0", "n_step_td", "td_lambda", "Episode",
           "record_episodes"]


@dataclass(frozen=True)
class PredictionResult:
    """What a prediction method learned.

    ``V [S]`` (``[K, S]`` for ``K`` step sizes) after the last episode; ``V_history
    [episodes, S]`` (``[episodes, K, S]``) the values after each episode; ``episode_returns
    [episodes]`` undiscounted sums of rewards; ``episode_lengths [episodes]`` steps taken.
    """

    V: np.ndarray
    V_history: np.ndarray
    episode_returns: np.ndarray
    episode_lengths: np.ndarray


def _prediction_result(V, history, returns, lengths, scalar_alpha):
    V_hist = np.array(history)
    if scalar_alpha:
        V, V_hist = V[0], V_hist[:, 0]
    return PredictionResult(V, V_hist, np.array(returns), np.array(lengths, dtype=np.int64))


def _clear_traces(traces):
    traces[:] = 0.0


def mc_prediction(env, policy, episodes, gamma, first_visit=True, seed=0, alpha=None, init=0.0):
    """Monte Carlo prediction of ``V^policy``: move ``V(s_t)`` towards the return ``G_t``.

    ``policy [S, A]`` action probabilities. ``first_visit=True`` uses only the first visit to
    a state in each episode; ``False`` every visit. ``alpha=None`` averages the returns seen
    (step ``1 / N(s)``); a number or ``[K]`` array uses constant step sizes. ``init`` is the
    starting table (a number or ``[S]``). Returns are computed backwards from the episode's end:
    from 0 when it terminated, from ``V(final_obs)`` when a time limit truncated it.
    Returns a :class:`PredictionResult`.
    """
    S, A = _check_env(env)
    cdf = _check_policy(policy, S, A)
    episodes = check_count("episodes", episodes)
    gamma = check_probability("gamma", gamma)
    first_visit = check_flag("first_visit", first_visit)
    if alpha is None:
        alphas, scalar_alpha = None, True
    else:
        alphas, scalar_alpha = _check_alpha(alpha)
    V = _initial_table(init, (S,), 1 if alphas is None else alphas.size)
    counts = np.zeros(S)
    rng, act, s = _start(env, seed)
    history, ep_returns, ep_lengths = [], [], []
    for _ in range(episodes):
        states, rewards = [], []
        while True:
            s_next, r, terminated, truncated, s_final = _step(env, act, _sample(cdf[s], rng))
            states.append(s)
            rewards.append(r)
            if terminated or truncated:
                break
            s = s_next
        final_value = _bootstrap(V[:, s_final].copy(), terminated)
        returns = _mc_returns(rewards, gamma, final_value)
        for state, g in _visited(states, returns, first_visit):
            if alphas is None:
                counts[state] += 1.0
                V[:, state] += (g - V[:, state]) / counts[state]
            else:
                V[:, state] += alphas * (g - V[:, state])
        history.append(V.copy())
        ep_returns.append(sum(rewards))
        ep_lengths.append(len(rewards))
        s = s_next
    return _prediction_result(V, history, ep_returns, ep_lengths, scalar_alpha)


def td0(env, policy, episodes, alpha, gamma, seed=0, init=0.0):
    """TD(0) prediction: ``V(s) += alpha * (r + gamma V(s') - V(s))`` after every step.

    ``terminated`` steps use the target ``r`` alone; ``truncated`` ones bootstrap from
    ``V(final_obs)``. ``policy [S, A]``; ``alpha`` a number or ``[K]`` step sizes; ``init`` a
    number or ``[S]``. Returns a :class:`PredictionResult`.
    """
    S, A = _check_env(env)
    cdf = _check_policy(policy, S, A)
    episodes = check_count("episodes", episodes)
    gamma = check_probability("gamma", gamma)
    alphas, scalar_alpha = _check_alpha(alpha)
    V = _initial_table(init, (S,), alphas.size)
    rng, act, s = _start(env, seed)
    history, ep_returns, ep_lengths = [], [], []
    for _ in range(episodes):
        total, steps = 0.0, 0
        while True:
            s_next, r, terminated, truncated, s_final = _step(env, act, _sample(cdf[s], rng))
            target = _td_target(r, V[:, s_final], terminated, gamma)
            V[:, s] += alphas * (target - V[:, s])
            total += r
            steps += 1
            s = s_next
            if terminated or truncated:
                break
        history.append(V.copy())
        ep_returns.append(total)
        ep_lengths.append(steps)
    return _prediction_result(V, history, ep_returns, ep_lengths, scalar_alpha)


def n_step_td(env, policy, episodes, n, alpha, gamma, seed=0, init=0.0):
    """n-step TD prediction (Sutton & Barto, section 7.1), online.

    Once ``n`` more rewards are known after visiting ``s_tau``, ``V(s_tau)`` moves towards
    ``r_{tau+1} + ... + gamma**(n-1) r_{tau+n} + gamma**n V(s_{tau+n})``. At the episode's end
    the pending states use the rewards left: no bootstrap after a termination, ``V(final_obs)``
    after a truncation. ``n=1`` is TD(0); ``n`` at least the episode length is constant-alpha
    Monte Carlo. Returns a :class:`PredictionResult`.
    """
    S, A = _check_env(env)
    cdf = _check_policy(policy, S, A)
    episodes = check_count("episodes", episodes)
    n = check_count("n", n)
    gamma = check_probability("gamma", gamma)
    alphas, scalar_alpha = _check_alpha(alpha)
    V = _initial_table(init, (S,), alphas.size)
    rng, act, s = _start(env, seed)
    history, ep_returns, ep_lengths = [], [], []
    for _ in range(episodes):
        states, rewards = [s], []
        while True:
            s_next, r, terminated, truncated, s_final = _step(env, act, _sample(cdf[s], rng))
            rewards.append(r)
            done = terminated or truncated
            states.append(s_final if done else s_next)
            tau = len(rewards) - n
            if tau >= 0 and not done:
                target = _n_step_target(rewards[tau:], V[:, states[tau + n]], False, gamma)
                V[:, states[tau]] += alphas * (target - V[:, states[tau]])
            if done:
                break
            s = s_next
        # Flush: every state whose window reaches the end; the window stops at the episode end.
        T = len(rewards)
        for tau in range(max(T - n, 0), T):
            target = _n_step_target(rewards[tau:], V[:, states[T]], terminated, gamma)
            V[:, states[tau]] += alphas * (target - V[:, states[tau]])
        history.append(V.copy())
        ep_returns.append(sum(rewards))
        ep_lengths.append(T)
        s = s_next
    return _prediction_result(V, history, ep_returns, ep_lengths, scalar_alpha)


def td_lambda(env, policy, episodes, lam, alpha, gamma, traces="accumulating", seed=0, init=0.0):
    """TD(lambda) prediction with eligibility traces (backward view, online; S&B section 12.2).

    Each step: decay every trace by ``gamma * lam``; bump the current state's trace (``+1``
    ``"accumulating"``, ``= 1`` ``"replacing"``); then ``V += alpha * delta * e`` with the
    TD error ``delta`` of :func:`td_target`. Traces are zeroed at every episode end, so no TD
    error of one episode updates a state visited in another. ``lam=0`` is TD(0) exactly.
    Returns a :class:`PredictionResult`.
    """
    S, A = _check_env(env)
    cdf = _check_policy(policy, S, A)
    episodes = check_count("episodes", episodes)
    lam = check_probability("lam", lam)
    gamma = check_probability("gamma", gamma)
    replacing = check_choice("traces", traces, ("accumulating", "replacing")) == "replacing"
    alphas, scalar_alpha = _check_alpha(alpha)
    V = _initial_table(init, (S,), alphas.size)
    step_sizes = alphas[:, None]
    e = np.zeros(S)
    decay = gamma * lam
    rng, act, s = _start(env, seed)
    history, ep_returns, ep_lengths = [], [], []
    for _ in range(episodes):
        total, steps = 0.0, 0
        while True:
            s_next, r, terminated, truncated, s_final = _step(env, act, _sample(cdf[s], rng))
            e *= decay
            if replacing:
                e[s] = 1.0
            else:
                e[s] += 1.0
            # Rules 1 and 2 live in _td_target: no bootstrap if terminated; else from final_obs.
            delta = _td_target(r, V[:, s_final], terminated, gamma) - V[:, s]
            V += step_sizes * delta[:, None] * e
            total += r
            steps += 1
            s = s_next
            if terminated or truncated:
                break
        _clear_traces(e)  # rule 3: no trace crosses into the next episode
        history.append(V.copy())
        ep_returns.append(total)
        ep_lengths.append(steps)
    return _prediction_result(V, history, ep_returns, ep_lengths, scalar_alpha)


@dataclass(frozen=True)
class Episode:
    """One recorded episode: ``states [T + 1]`` (``states[T]`` the state it ended in, the
    ``final_obs``), ``actions [T]``, ``rewards [T]`` (``rewards[t]`` paid by the step from
    ``states[t]``), and whether it ``terminated`` (False: a time limit cut it)."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: bool


def record_episodes(env, policy, episodes, seed=0) -> list[Episode]:
    """Play ``episodes`` episodes with ``policy [S, A]`` and return them as :class:`Episode` s.

    The same ``seed`` gives the very episodes that :func:`mc_prediction`, :func:`td0`,
    :func:`n_step_td` and :func:`td_lambda` learn from with that seed.
    """
    S, A = _check_env(env)
    cdf = _check_policy(policy, S, A)
    episodes = check_count("episodes", episodes)
    rng, act, s = _start(env, seed)
    out = []
    for _ in range(episodes):
        states, actions, rewards = [], [], []
        while True:
            a = _sample(cdf[s], rng)
            s_next, r, terminated, truncated, s_final = _step(env, act, a)
            states.append(s)
            actions.append(a)
            rewards.append(r)
            if terminated or truncated:
                break
            s = s_next
        out.append(Episode(np.array(states + [s_final], dtype=np.int64),
                           np.array(actions, dtype=np.int64), np.array(rewards), terminated))
        s = s_next
    return out
