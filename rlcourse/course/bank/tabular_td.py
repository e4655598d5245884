"""Exercises of lessons 04-06: Monte Carlo returns and updates, TD(0), n-step targets,
eligibility traces, and the targets of Q-learning, SARSA and Expected SARSA."""

from __future__ import annotations

import numpy as np

from ...tabular.exploration import epsilon_greedy_probs
from ...tabular.targets import mc_returns, n_step_target, td_target
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _close(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------ lesson 04: mc_returns


def _mc_returns_cases():
    return [
        Case("three rewards, gamma 0.5", (np.array([1.0, 0.0, 2.0]), 0.5)),
        Case("undiscounted, gamma 1", (np.array([-1.0, -1.0, -1.0, 10.0]), 1.0)),
        Case("one reward", (np.array([3.0]), 0.9)),
        Case("truncated: final_value 4", (np.array([1.0, 1.0]), 0.9), {"final_value": 4.0}),
    ]


def _mc_returns_explain(case, got, expected):
    rewards, gamma = case.args
    final = case.kwargs.get("final_value", 0.0)
    forwards = np.cumsum(rewards * gamma ** np.arange(len(rewards)))
    if _close(got, forwards):
        return ("your returns run forwards: G[t] is the reward at t plus the discounted rewards "
                "*after* t, so compute it backwards from the episode's end")
    if final and _close(got, mc_returns(rewards, gamma)):
        return ("the episode was cut by a time limit: start the backward sum from final_value "
                "(the value of the state it stopped in), not from 0")
    if _close(got, np.cumsum(rewards[::-1])[::-1] + final):
        return "you forgot to discount: each step further away multiplies by gamma"
    return None


register(
    "mc_returns", mc_returns, _mc_returns_cases, explain=_mc_returns_explain,
    hint="g = final_value; for t from the last step back to 0: g = rewards[t] + gamma * g",
)


# ------------------------------------------------------------------ lesson 04: first-visit update


def _first_visit_reference(V, counts, states, rewards, gamma):
    V, counts = np.array(V, dtype=float), np.array(counts, dtype=float)
    returns = mc_returns(rewards, gamma)
    seen = set()
    for s, g in zip(np.asarray(states).tolist(), returns):
        if s in seen:
            continue
        seen.add(s)
        counts[s] += 1
        V[s] += (g - V[s]) / counts[s]
    return V, counts


def _every_visit(V, counts, states, rewards, gamma):
    V, counts = np.array(V, dtype=float), np.array(counts, dtype=float)
    for s, g in zip(np.asarray(states).tolist(), mc_returns(rewards, gamma)):
        counts[s] += 1
        V[s] += (g - V[s]) / counts[s]
    return V, counts


def _first_visit_cases():
    return [
        Case("no revisits, fresh table", (np.zeros(4), np.zeros(4), np.array([0, 1, 2]),
                                          np.array([0.0, 0.0, 1.0]), 0.9)),
        Case("state 1 visited twice", (np.zeros(4), np.zeros(4), np.array([0, 1, 2, 1]),
                                       np.array([-1.0, -1.0, -1.0, 5.0]), 1.0)),
        Case("a table with history", (np.array([0.5, 2.0, -1.0]), np.array([2.0, 4.0, 1.0]),
                                      np.array([2, 0, 2, 0, 1]),
                                      np.array([1.0, 0.0, 1.0, 0.0, 3.0]), 0.8)),
    ]


def _first_visit_explain(case, got, expected):
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (V, counts)"
    if _close(got[0], _every_visit(*case.args)[0]):
        return ("you averaged every visit: first-visit MC uses only the return that follows "
                "a state's *first* visit in the episode")
    return None


register(
    "first_visit_update", _first_visit_reference, _first_visit_cases,
    explain=_first_visit_explain,
    hint="compute the returns backwards, then for the first visit of each state: "
         "counts[s] += 1; V[s] += (G - V[s]) / counts[s]",
)


# ------------------------------------------------------------------ lesson 04: epsilon_greedy_probs


def _probs_cases():
    return [
        Case("one best action", (np.array([[0.0, 1.0, 0.5]]), 0.3)),
        Case("two tied best actions", (np.array([[2.0, 2.0, 0.0, 1.0]]), 0.2)),
        Case("greedy (epsilon 0), several states", (np.array([[1.0, 0.0], [0.0, 0.0]]), 0.0)),
        Case("uniform (epsilon 1)", (np.array([[3.0, 1.0, 2.0]]), 1.0)),
    ]


def _probs_explain(case, got, expected):
    got = np.asarray(got, dtype=float)
    if got.shape == expected.shape and not np.allclose(got.sum(axis=-1), 1.0):
        return "each row must sum to 1: epsilon / A to every action, plus 1 - epsilon to the greedy"
    q, eps = case.args
    lowest = eps / q.shape[-1] + (1 - eps) * np.eye(q.shape[-1])[q.argmax(axis=-1)]
    if _close(got, lowest):
        return ("tied greedy actions must share the 1 - epsilon mass equally (argmax picks "
                "only the first), as random tie-breaking does")
    return None


register(
    "epsilon_greedy_probs", epsilon_greedy_probs, _probs_cases,
    explain=_probs_explain,
    hint="epsilon / A everywhere, plus (1 - epsilon) / (number of tied maxima) on each maximum",
)


# ------------------------------------------------------------------ lesson 04: mc_spread_slope


def _running_mean_spread(returns, runs, divide=True):
    per_run = np.asarray(returns, dtype=float).reshape(runs, -1)
    N = np.arange(1, per_run.shape[1] + 1)
    totals = np.cumsum(per_run, axis=1)
    return N, (totals / N if divide else totals).std(axis=0)


def _spread_slope_reference(returns, runs):
    N, spread = _running_mean_spread(returns, runs)
    return float(np.polyfit(np.log(N), np.log(spread), 1)[0])


def _spread_slope_cases():
    rng = np.random.default_rng(4)
    return [
        Case("1000 normal returns, 40 runs", (rng.normal(0.5, 2.0, size=1000), 40)),
        Case("600 skewed returns, 30 runs", (rng.exponential(1.0, size=600) - 1.0, 30)),
        Case("400 returns of 0 or 1, 20 runs", (rng.integers(0, 2, size=400).astype(float), 20)),
    ]


def _spread_slope_compare(got, expected):
    if np.ndim(got) != 0:
        return f"expected a single number (the slope), got shape {np.shape(got)}"
    if not np.isclose(float(got), expected, rtol=1e-6, atol=1e-9):
        return f"expected slope {expected:.4f}, got {float(got):.4f}"
    return None


def _spread_slope_explain(case, got, expected):
    if np.ndim(got) != 0:
        return None
    returns, runs = case.args
    if np.isclose(float(got), 2 * expected, rtol=1e-6):
        return ("that is the slope of the variance, which falls twice as fast as the spread "
                "(the standard deviation across runs) on a log-log plot")
    N, sums = _running_mean_spread(returns, runs, divide=False)
    if np.isclose(float(got), np.polyfit(np.log(N), np.log(sums), 1)[0], rtol=1e-6):
        return ("your spread grows with N: divide each run's cumulative sum by N to get its "
                "running mean")
    return None


register(
    "mc_spread_slope", _spread_slope_reference, _spread_slope_cases,
    compare=_spread_slope_compare, explain=_spread_slope_explain,
    hint="reshape to [runs, N]; running means cumsum / arange(1, N + 1); std over runs (axis 0); "
         "np.polyfit(log N, log spread, 1)[0]",
)


# ------------------------------------------------------------------ lesson 05: td0_update


def _td0_reference(V, s, r, s_next, terminated, alpha, gamma):
    V = np.array(V, dtype=float)
    V[s] += alpha * (td_target(r, V[s_next], terminated, gamma) - V[s])
    return V


def _td0_cases():
    V = np.array([0.5, -1.0, 2.0, 7.0])
    return [
        Case("ordinary step", (V, 0, 1.0, 1, False, 0.1, 0.9)),
        Case("step into a terminal state (value entry 7)", (V, 2, 1.0, 3, True, 0.5, 0.9)),
        Case("gamma 1, alpha 1", (V, 1, -1.0, 2, False, 1.0, 1.0)),
    ]


def _td0_explain(case, got, expected):
    V, s, r, s_next, terminated, alpha, gamma = case.args
    got = np.asarray(got, dtype=float)
    if terminated and got.shape == V.shape:
        leaked = V.copy()
        leaked[s] += alpha * (r + gamma * V[s_next] - V[s])
        if np.allclose(got, leaked):
            return ("you bootstrapped from the terminal state: its value must be 0, whatever the "
                    "table holds there, so the target is the reward alone")
    if got.shape == V.shape and np.allclose(got, V):
        return "V did not change: return the updated copy"
    return None


register(
    "td0_update", _td0_reference, _td0_cases, explain=_td0_explain,
    hint="target = r if terminated else r + gamma * V[s_next]; V[s] += alpha * (target - V[s])",
)


# ------------------------------------------------------------------ lesson 05: n_step_target


def _n_step_cases():
    return [
        Case("one reward (TD(0))", (np.array([1.0]), 2.0, False, 0.9)),
        Case("three rewards, bootstrap", (np.array([1.0, 0.0, -1.0]), 5.0, False, 0.5)),
        Case("episode ends inside the window", (np.array([1.0, 2.0]), 5.0, True, 0.9)),
        Case("gamma 1", (np.array([-1.0, -1.0, -1.0, -1.0]), 3.0, False, 1.0)),
    ]


def _n_step_explain(case, got, expected):
    rewards, value, terminated, gamma = case.args
    m = len(rewards)
    discounted = float(np.sum(gamma ** np.arange(m) * rewards))
    if terminated and _close(got, discounted + gamma**m * value):
        return ("you bootstrapped from the terminal state: its value must be 0, so the target "
                "is the discounted rewards alone")
    if not terminated and _close(got, discounted + gamma ** (m - 1) * value):
        return "the bootstrap value is m steps away: discount it by gamma ** m, not gamma ** (m - 1)"
    if not terminated and _close(got, discounted):
        return "the window did not reach a terminal state: add gamma ** m * bootstrap_value"
    return None


register(
    "n_step_target", n_step_target, _n_step_cases, explain=_n_step_explain,
    hint="sum(gamma**k * rewards[k]) + (0 if terminated else gamma**len(rewards) * bootstrap_value)",
)


# ------------------------------------------------------------------ lesson 05: td_lambda_step


def _td_lambda_reference(V, e, s, r, s_next, terminated, done, alpha, gamma, lam, replacing):
    V, e = np.array(V, dtype=float), np.array(e, dtype=float)
    e *= gamma * lam
    e[s] = 1.0 if replacing else e[s] + 1.0
    V += alpha * (td_target(r, V[s_next], terminated, gamma) - V[s]) * e
    if done:
        e[:] = 0.0
    return V, e


def _td_lambda_cases():
    V = np.array([0.0, 1.0, 2.0, 3.0])
    e = np.array([0.5, 0.0, 1.0, 0.0])
    return [
        Case("accumulating, mid-episode", (V, e, 2, 1.0, 1, False, False, 0.1, 0.9, 0.8, False)),
        Case("replacing, revisit", (V, e, 2, 1.0, 1, False, False, 0.1, 0.9, 0.8, True)),
        Case("into a terminal state: episode ends",
             (V, e, 1, 2.0, 3, True, True, 0.5, 1.0, 0.9, False)),
        Case("time limit: bootstrap, then episode ends",
             (V, e, 0, 0.0, 3, False, True, 0.5, 0.9, 0.9, False)),
    ]


def _td_lambda_explain(case, got, expected):
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (V, e)"
    V, e, s, r, s_next, terminated, done, alpha, gamma, lam, replacing = case.args
    if done and _close(got[0], expected[0]) and not np.allclose(got[1], 0.0):
        return ("the episode ended but your traces did not reset: they would carry this "
                "episode's states into the next episode's updates")
    if terminated and _close(got[0], _td_lambda_reference(V, e, s, r, s_next, False, done,
                                                          alpha, gamma, lam, replacing)[0]):
        return "you bootstrapped from the terminal state: its value must be 0"
    if done and not terminated and _close(got[0], _td_lambda_reference(
            V, e, s, r, s_next, True, done, alpha, gamma, lam, replacing)[0]):
        return ("the episode was cut by a time limit (done, not terminated): the state it stopped "
                "in still has a future, so bootstrap from V[s_next]")
    if _close(got[0], _td_lambda_reference(V, e, s, r, s_next, terminated, done, alpha, gamma,
                                           lam, not replacing)[0]):
        return "accumulating traces add 1 to e[s]; replacing traces set e[s] = 1"
    return None


register(
    "td_lambda_step", _td_lambda_reference, _td_lambda_cases,
    explain=_td_lambda_explain,
    hint="e *= gamma * lam; bump e[s]; delta = TD error; V += alpha * delta * e; "
         "zero e when the episode is done",
)


# ------------------------------------------------------------------ lesson 06: q_learning_target


def _q_target_reference(Q, r, s_next, terminated, gamma):
    return float(td_target(r, np.max(Q[s_next]), terminated, gamma))


def _q_target_cases():
    Q = np.array([[0.0, 1.0], [2.0, -1.0], [9.0, 9.0]])
    return [
        Case("ordinary step", (Q, 1.0, 1, False, 0.9)),
        Case("into the terminal state 2 (row of 9s)", (Q, 1.0, 2, True, 0.9)),
        Case("negative values", (-Q, -1.0, 1, False, 1.0)),
    ]


def _q_target_explain(case, got, expected):
    Q, r, s_next, terminated, gamma = case.args
    if terminated and _close(got, r + gamma * Q[s_next].max()):
        return "you bootstrapped from the terminal state: its value must be 0"
    if _close(got, r + gamma * Q[s_next].mean()):
        return "Q-learning bootstraps from the *best* next action (max), not the average"
    return None


register(
    "q_learning_target", _q_target_reference, _q_target_cases,
    explain=_q_target_explain,
    hint="r if terminated else r + gamma * max(Q[s_next])",
)


# ------------------------------------------------------------------ lesson 06: sarsa_update


def _sarsa_reference(Q, s, a, r, s_next, a_next, terminated, alpha, gamma):
    Q = np.array(Q, dtype=float)
    Q[s, a] += alpha * (td_target(r, Q[s_next, a_next], terminated, gamma) - Q[s, a])
    return Q


def _sarsa_cases():
    Q = np.array([[0.0, 1.0], [2.0, -1.0], [4.0, 4.0]])
    return [
        Case("next action is not the greedy one", (Q, 0, 1, 1.0, 1, 1, False, 0.5, 0.9)),
        Case("into the terminal state 2", (Q, 1, 0, 1.0, 2, 0, True, 0.5, 0.9)),
        Case("alpha 1, gamma 1", (Q, 1, 1, 0.0, 0, 0, False, 1.0, 1.0)),
    ]


def _sarsa_explain(case, got, expected):
    Q, s, a, r, s_next, a_next, terminated, alpha, gamma = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != Q.shape:
        return None
    as_q_learning = Q.copy()
    as_q_learning[s, a] += alpha * (td_target(r, Q[s_next].max(), terminated, gamma) - Q[s, a])
    if not np.allclose(expected, as_q_learning) and np.allclose(got, as_q_learning):
        return ("you used max_a Q(s', a): that is Q-learning. SARSA bootstraps from the action "
                "it will actually take next, a_next")
    if terminated and np.allclose(got, _sarsa_reference(Q, s, a, r, s_next, a_next, False,
                                                        alpha, gamma)):
        return "you bootstrapped from the terminal state: its value must be 0"
    return None


register(
    "sarsa_update", _sarsa_reference, _sarsa_cases, explain=_sarsa_explain,
    hint="target = r (terminated) or r + gamma * Q[s_next, a_next]; "
         "Q[s, a] += alpha * (target - Q[s, a])",
)


# ------------------------------------------------------------------ lesson 06: expected_sarsa_target


def _expected_sarsa_reference(Q, r, s_next, terminated, gamma, epsilon):
    v = float(epsilon_greedy_probs(Q[s_next], epsilon) @ Q[s_next])
    return float(td_target(r, v, terminated, gamma))


def _expected_sarsa_cases():
    Q = np.array([[0.0, 1.0, 3.0], [2.0, 2.0, -1.0], [5.0, 0.0, 5.0]])
    return [
        Case("one greedy action", (Q, 1.0, 0, False, 0.9, 0.1)),
        Case("two tied greedy actions", (Q, 0.0, 1, False, 1.0, 0.3)),
        Case("epsilon 1: the plain mean", (Q, 0.5, 0, False, 0.9, 1.0)),
        Case("into the terminal state 2", (Q, 1.0, 2, True, 0.9, 0.1)),
        Case("epsilon 0 is Q-learning", (Q, -1.0, 0, False, 0.5, 0.0)),
    ]


def _expected_sarsa_explain(case, got, expected):
    Q, r, s_next, terminated, gamma, epsilon = case.args
    row = Q[s_next]
    if terminated and not _close(got, r):
        return "you bootstrapped from the terminal state: its value must be 0"
    if _close(got, r + gamma * row.max()):
        return "that is Q-learning's target: average Q(s', .) under the epsilon-greedy policy"
    return None


register(
    "expected_sarsa_target", _expected_sarsa_reference, _expected_sarsa_cases,
    explain=_expected_sarsa_explain,
    hint="probs = epsilon / A + (1 - epsilon) on the (tied) maxima; r + gamma * probs @ Q[s_next]",
)
