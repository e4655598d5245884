"""Model-free tabular learning: Monte Carlo, TD(0), n-step TD, TD(lambda) and control
(MC control, Q-learning, SARSA, Expected SARSA), each run on a tabular environment.

Environment: any vector environment with ``n == 1`` copy, integer states and the attributes
``num_states`` and ``num_actions`` (``TabularMDP``, ``GridWorld``, ``FrozenLake``,
``CliffWalking``). The model ``P``/``R`` is never read: the agent learns only from steps.

Time semantics, the same in every function and pinned by tests:

- a ``terminated`` step never bootstraps: the next state is terminal and its value is 0,
  whatever the table holds there;
- a ``truncated`` step (a time limit) bootstraps from the value of ``final_obs``, the state the
  episode stopped in, never from ``obs``, which already belongs to the next episode (the
  environment resets in the same step);
- nothing crosses an episode boundary: Monte Carlo returns and n-step windows end at the
  episode's end, and eligibility traces are zeroed there.

Seeding: ``env.reset(seed=seed)`` drives the environment; the agent's own draws (actions,
exploration, ties) come from a generator seeded with a child of ``SeedSequence(seed)``, so one
``seed`` fixes the whole run, bit for bit, and the two streams are independent.

Step sizes: the prediction methods (a fixed ``policy``) accept ``alpha`` as one number or a 1-D
array of ``K`` step sizes. With a fixed policy the experience does not depend on the values,
so ``K`` tables learn side by side from the *same* episodes; ``V`` then has shape ``[K, S]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import as_float_array, check_distribution, check_probability, check_shape

__all__ = [
    "PredictionResult",
    "ControlResult",
    "epsilon_greedy",
    "epsilon_greedy_probs",
    "td_target",
    "n_step_target",
    "mc_returns",
    "mc_prediction",
    "mc_control",
    "td0",
    "n_step_td",
    "td_lambda",
    "q_learning",
    "sarsa",
    "expected_sarsa",
]


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


# ---------------------------------------------------------------------------------------------
# Targets: small pure functions, shared by every algorithm below (the loops call the unchecked
# versions, so the semantics live in exactly one place).


def _bootstrap(value, terminated):
    # The one place the mask lives: a terminal state has value 0, whatever its table entry holds.
    return 0.0 if terminated else value


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
    return _td_target(float(reward), as_float_array("next_value", next_value), bool(terminated),
                      gamma)


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


# ---------------------------------------------------------------------------------------------
# Exploration


# Q rows are read through tolist(): for a handful of actions, Python's max and comparisons are
# several times cheaper per step than numpy reductions on tiny arrays.
def _greedy_action(q_row, rng) -> int:
    values = q_row.tolist()
    best = max(values)
    ties = [a for a, v in enumerate(values) if v == best]
    if len(ties) == 1:
        return ties[0]
    return ties[int(rng.random() * len(ties))]


def _epsilon_greedy_action(q_row, epsilon, rng) -> int:
    if rng.random() < epsilon:
        return int(rng.random() * q_row.shape[0])
    return _greedy_action(q_row, rng)


def _epsilon_greedy_expectation(q_row, epsilon) -> float:
    # Ties share the greedy mass, as the random tie-breaking of the behaviour does.
    values = q_row.tolist()
    best = max(values)
    ties = [v for v in values if v == best]
    return epsilon * sum(values) / len(values) + (1.0 - epsilon) * sum(ties) / len(ties)


def epsilon_greedy(q_row_or_table, epsilon, rng):
    """Epsilon-greedy action(s): uniform over all ``A`` actions with probability ``epsilon``,
    else the greedy one, ties broken uniformly at random by ``rng``.

    ``q_row_or_table``: ``[A]`` gives an int; ``[B, A]`` gives ``[B]`` int64 actions, one per
    row, drawn in row order. The greedy action's total probability is ``1 - epsilon +
    epsilon / A`` (see :func:`epsilon_greedy_probs`).
    """
    q = as_float_array("q_row_or_table", q_row_or_table)
    if q.ndim not in (1, 2) or q.shape[-1] == 0:
        raise ValueError(
            f"q_row_or_table: expected shape [A] or [B, A] with A >= 1, got {q.shape}"
        )
    epsilon = check_probability("epsilon", epsilon)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    if q.ndim == 1:
        return _epsilon_greedy_action(q, epsilon, rng)
    return np.array([_epsilon_greedy_action(row, epsilon, rng) for row in q], dtype=np.int64)


def epsilon_greedy_probs(q, epsilon) -> np.ndarray:
    """Action probabilities ``[..., A]`` of the epsilon-greedy policy of ``q [..., A]``:
    ``epsilon / A`` each, plus ``1 - epsilon`` shared equally by the tied greedy actions."""
    q = as_float_array("q", q)
    if q.ndim == 0 or q.shape[-1] == 0:
        raise ValueError(f"q: expected shape [..., A] with A >= 1, got {q.shape}")
    epsilon = check_probability("epsilon", epsilon)
    best = q == q.max(axis=-1, keepdims=True)
    return epsilon / q.shape[-1] + (1.0 - epsilon) * best / best.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Input checks (once, at the boundary) and the per-step plumbing.


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


def _check_count(name, value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected a positive int ({what}), got {value!r}")
    return int(value)


def _check_seed(seed):
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    return int(seed)


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
    seed = _check_seed(seed)
    agent_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    obs = env.reset(seed=seed)
    return agent_rng, np.zeros(1, dtype=np.int64), int(obs[0])


def _step(env, action_buffer, action):
    """One env step as Python scalars: ``(obs, reward, terminated, truncated, final_obs)``."""
    action_buffer[0] = action
    st = env.step(action_buffer)
    return (int(st.obs[0]), float(st.reward[0]), bool(st.terminated[0]), bool(st.truncated[0]),
            int(st.final_obs[0]))


def _sample(cdf_row, rng) -> int:
    return int(cdf_row.searchsorted(rng.random(), side="right"))


def _prediction_result(V, history, returns, lengths, scalar_alpha):
    V_hist = np.array(history)
    if scalar_alpha:
        V, V_hist = V[0], V_hist[:, 0]
    return PredictionResult(V, V_hist, np.array(returns), np.array(lengths, dtype=np.int64))


def _control_result(Q, returns, lengths):
    return ControlResult(Q, Q.argmax(axis=1).astype(np.int64), np.array(returns),
                         np.array(lengths, dtype=np.int64))


def _clear_traces(traces):
    traces[:] = 0.0


# ---------------------------------------------------------------------------------------------
# Prediction: learn V of a fixed policy.


def _visited(keys: list, returns, first_visit: bool):
    """``(key, G_t)`` for the steps Monte Carlo updates: every step, or only each key's first."""
    if not first_visit:
        return zip(keys, returns)
    first = {}
    for t, key in enumerate(keys):
        first.setdefault(key, t)
    return ((key, g) for t, (key, g) in enumerate(zip(keys, returns)) if first[key] == t)


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
    episodes = _check_count("episodes", episodes, "episodes to run")
    gamma = check_probability("gamma", gamma)
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
    episodes = _check_count("episodes", episodes, "episodes to run")
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
    episodes = _check_count("episodes", episodes, "episodes to run")
    n = _check_count("n", n, "steps before bootstrapping")
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
    episodes = _check_count("episodes", episodes, "episodes to run")
    lam = check_probability("lam", lam)
    gamma = check_probability("gamma", gamma)
    if traces not in ("accumulating", "replacing"):
        raise ValueError(f"traces: expected 'accumulating' or 'replacing', got {traces!r}")
    replacing = traces == "replacing"
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
            delta = _td_target(r, V[:, s_final], terminated, gamma) - V[:, s]
            V += step_sizes * delta[:, None] * e
            total += r
            steps += 1
            s = s_next
            if terminated or truncated:
                break
        _clear_traces(e)
        history.append(V.copy())
        ep_returns.append(total)
        ep_lengths.append(steps)
    return _prediction_result(V, history, ep_returns, ep_lengths, scalar_alpha)


# ---------------------------------------------------------------------------------------------
# Control: learn Q while acting epsilon-greedily.


def _check_control(env, episodes, alpha, gamma, epsilon, init):
    S, A = _check_env(env)
    episodes = _check_count("episodes", episodes, "episodes to run")
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
