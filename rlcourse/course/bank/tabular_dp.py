"""Exercises of lessons 01-03: bandit updates and UCB, returns and Bellman equations, DP."""

from __future__ import annotations

import numpy as np

from ...envs.gridworld import FrozenLake, GridWorld
from ...tabular.bandits import ucb_scores
from ...tabular.dp import (
    bellman_optimality_backup,
    policy_evaluation_exact,
    q_from_v,
    value_iteration,
)
from ..registry import Case, default_compare, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _three_state_mdp():
    """Lesson 03's MDP: optimal values [1.8, 2.0, 0.0] at gamma 0.9; state 2 terminal, with a
    self-loop reward of 5 that must never be collected."""
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    P[0, 0, 2], R[0, 0, 2] = 1.0, 1.0
    P[0, 1, 1] = 1.0
    P[1, 0, 2], R[1, 0, 2] = 1.0, 2.0
    P[1, 1, 0] = 1.0
    P[2, :, 2], R[2, :, 2] = 1.0, 5.0
    return P, R, np.array([False, False, True])


def _model(env):
    return env.P, env.R


def _terminal_leak(got, terminal) -> str | None:
    got = np.asarray(got, dtype=float)
    if got.shape[:1] != terminal.shape:
        return None
    bad = np.flatnonzero(terminal & np.any(np.abs(got.reshape(len(terminal), -1)) > 1e-9, axis=1))
    if bad.size:
        return (f"your values at terminal state {bad[0]} are nonzero: terminal states must not "
                "bootstrap (V = 0 there, and their rows are never updated)")
    return None


# ------------------------------------------------------------------ sample_average_update


def _sample_average_reference(Q, N, action, reward):
    Q, N = np.array(Q, dtype=float), np.array(N, dtype=np.int64)
    N[action] += 1
    Q[action] += (reward - Q[action]) / N[action]
    return Q, N


def _sample_average_cases():
    return [
        Case("first pull of arm 2", (np.zeros(4), np.zeros(4, dtype=int), 2, 1.5)),
        Case("fourth pull of arm 0", (np.array([1.0, 0.5, 0.0]), np.array([3, 1, 0]), 0, -1.0)),
    ]


def _sample_average_explain(case, got, expected):
    Q, N, action, reward = case.args
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (Q, N) with the pulled arm's estimate and count updated"
    if np.allclose(got[0][action], Q[action] + (reward - Q[action]) / max(N[action], 1)) and \
            N[action] > 0:
        return "divide by the count *after* this pull, N[a] + 1: the new reward is one of them"
    if np.allclose(got[0][action], reward):
        return "you replaced the estimate with the last reward; average it in: Q += (r - Q) / N"
    return None


register(
    "sample_average_update", _sample_average_reference, _sample_average_cases,
    explain=_sample_average_explain,
    hint="N[a] += 1; Q[a] += (r - Q[a]) / N[a] (copy the inputs first)",
)

# ----------------------------------------------------------------------------- ucb_scores


def _ucb_cases():
    return [
        Case("every arm tried", (np.array([0.5, 1.0, 0.2]), np.array([4, 1, 2]), 8, 2.0)),
        Case("one arm untried", (np.array([0.5, 0.0, 0.2]), np.array([4, 0, 1]), 6, 2.0)),
        Case("c = 0 is greedy", (np.array([0.3, 0.6]), np.array([5, 1]), 7, 0.0)),
        Case("a batch of 2 bandits", (np.array([[0.1, 0.2], [0.0, 0.4]]),
                                      np.array([[3, 1], [2, 2]]), 5, 1.0)),
    ]


def _ucb_explain(case, got, expected):
    Q, N, t, c = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    untried = N == 0
    if untried.any() and np.isfinite(got[untried]).any():
        return ("an untried arm must score +inf: its uncertainty is unbounded, so UCB pulls every "
                "arm once before pulling any arm twice")
    tried = ~untried
    if c > 0 and np.allclose(got[tried], Q[tried]):
        return "your scores have no exploration bonus c * sqrt(ln t / N)"
    if np.allclose(got[tried], (Q + c * np.sqrt(t / np.maximum(N, 1)))[tried]):
        return "the bonus grows with the logarithm of t: sqrt(ln t / N), not sqrt(t / N)"
    return None


register(
    "ucb_scores", ucb_scores, _ucb_cases, explain=_ucb_explain,
    hint="Q + c * sqrt(ln t / N) where N > 0, +inf where N == 0",
)

# ---------------------------------------------------------------------- gradient_bandit_update


def _gradient_bandit_reference(H, action, reward, baseline, alpha):
    H = np.asarray(H, dtype=float)
    pi = np.exp(H - H.max())
    pi /= pi.sum()
    onehot = np.zeros_like(H)
    onehot[action] = 1.0
    return H + alpha * (reward - baseline) * (onehot - pi)


def _gradient_bandit_cases():
    return [
        Case("uniform start, reward above baseline", (np.zeros(3), 1, 2.0, 0.5, 0.1)),
        Case("reward below baseline", (np.array([0.5, -0.2, 0.1, 0.0]), 0, -1.0, 0.3, 0.2)),
        Case("large preferences", (np.array([800.0, 799.0]), 1, 1.0, 0.0, 0.5)),
    ]


def _gradient_bandit_explain(case, got, expected):
    H, action, reward, baseline, alpha = case.args
    got = np.asarray(got, dtype=float)
    if np.isnan(got).any():
        return "NaN: exp of large preferences overflows; subtract max(H) before exponentiating"
    if got.shape == expected.shape and abs(got.sum() - np.sum(H)) > 1e-9:
        return ("your update does not sum to zero over arms: every arm moves by "
                "alpha (r - baseline) (1[a = A] - pi(a)), the unchosen ones by -pi(a)")
    if got.shape == expected.shape and np.allclose(
            got, _gradient_bandit_reference(H, action, reward, 0.0, alpha)):
        return "you left out the baseline: the step is scaled by (reward - baseline)"
    return None


register(
    "gradient_bandit_update", _gradient_bandit_reference, _gradient_bandit_cases,
    explain=_gradient_bandit_explain,
    hint="pi = softmax(H); H + alpha * (r - baseline) * (onehot(action) - pi)",
)

# ------------------------------------------------------------------------ discounted_return


def _discounted_return_reference(rewards, gamma):
    rewards = np.asarray(rewards, dtype=float)
    return float(np.sum(gamma ** np.arange(rewards.size) * rewards))


def _discounted_return_cases():
    return [
        Case("three rewards, gamma 0.9", ([1.0, 0.0, 2.0], 0.9)),
        Case("gamma 0 keeps the first reward", ([3.0, 5.0, 5.0], 0.0)),
        Case("gamma 1 is the plain sum", ([1.0, -1.0, 4.0, 0.5], 1.0)),
        Case("one reward", ([2.5], 0.5)),
    ]


def _discounted_return_explain(case, got, expected):
    rewards, gamma = case.args
    r = np.asarray(rewards, dtype=float)
    if np.isclose(got, np.sum(gamma ** np.arange(1, r.size + 1) * r)):
        return "you discounted the first reward too: G_0 = r_0 + gamma r_1 + gamma^2 r_2 + ..."
    return None


def _scalar_compare(got, expected):
    # default_compare misses a mismatch between two 0-d values, so compare them as [1] arrays
    if np.ndim(got) != 0:
        return f"expected a single number, got shape {np.shape(got)}"
    return default_compare(np.atleast_1d(float(got)), np.atleast_1d(expected))


register(
    "discounted_return", _discounted_return_reference, _discounted_return_cases,
    compare=_scalar_compare, explain=_discounted_return_explain,
    hint="sum over t of gamma**t * rewards[t], t from 0",
)

# ------------------------------------------------------------------------------- q_from_v


def _q_from_v_cases():
    P, R, terminal = _three_state_mdp()
    lake = FrozenLake("4x4")
    V_lake = np.where(lake.terminal, 0.0, np.linspace(0.1, 0.9, 16))
    return [
        Case("three-state MDP at V*", (P, R, np.array([1.8, 2.0, 0.0]), 0.9, terminal)),
        Case("FrozenLake 4x4, some V", (*_model(lake), V_lake, 0.95, lake.terminal)),
    ]


def _q_from_v_explain(case, got, expected):
    P, R, V, gamma, terminal = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return f"Q has one value per (state, action): shape {expected.shape}"
    leak = _terminal_leak(got, terminal)
    if leak:
        return leak
    if np.allclose(got, q_from_v(P, R, V, 1.0, terminal)):
        return "you did not discount: the next state's value is weighted by gamma"
    return None


register(
    "q_from_v", q_from_v, _q_from_v_cases, explain=_q_from_v_explain,
    hint="Q[s, a] = sum_s' P[s, a, s'] (R[s, a, s'] + gamma V[s']); Q = 0 on terminal rows",
)

# ------------------------------------------------------------------------ policy_evaluation


def _policy_evaluation_cases():
    P, R, terminal = _three_state_mdp()
    lake = FrozenLake("4x4")
    grid = GridWorld(size=4, step_reward=-0.1)
    return [
        Case("three-state MDP, always action 0", (P, R, np.array([[1.0, 0.0]] * 3), 0.9, terminal)),
        Case("FrozenLake 4x4, uniform random policy",
             (*_model(lake), np.full((16, 4), 0.25), 0.9, lake.terminal)),
        Case("4x4 GridWorld, 70% RIGHT / 30% DOWN",
             (*_model(grid), np.tile([0.0, 0.3, 0.7, 0.0], (16, 1)), 0.95, grid.terminal)),
    ]


def _policy_evaluation_compare(got, expected):
    return default_compare(got, expected, rtol=1e-6, atol=1e-6)


def _policy_evaluation_explain(case, got, expected):
    P, R, policy, gamma, terminal = case.args
    got = np.asarray(got, dtype=float)
    leak = _terminal_leak(got, terminal)
    if leak:
        return leak
    if got.shape != expected.shape:
        return f"return one value per state, shape {expected.shape}"
    r_pi = np.einsum("sa,sat,sat->s", policy, P, R) * ~terminal
    if np.allclose(got, r_pi):
        return ("that is one backup from V = 0 (the expected immediate reward): iterate until the "
                "values stop changing, or solve (I - gamma P_pi) V = r_pi")
    if np.allclose(got, value_iteration(P, R, gamma, terminal)[0], atol=1e-6):
        return ("these are the optimal values: policy evaluation averages over the policy's "
                "actions with its probabilities instead of taking the max")
    return None


register(
    "policy_evaluation", policy_evaluation_exact, _policy_evaluation_cases,
    compare=_policy_evaluation_compare, explain=_policy_evaluation_explain,
    hint="P_pi = einsum('sa,sat->st', pi, P), r_pi likewise; zero the terminal rows and columns; "
         "solve (I - gamma P_pi) V = r_pi",
)

# --------------------------------------------------------------------------- greedy_policy


def _greedy_compare(got, expected):
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"expected one action per state, shape {expected.shape}, got {got.shape}"
    if got.dtype.kind not in "iu":
        return f"expected integer actions, got dtype {got.dtype}"
    return None


def _greedy_cases():
    P, R, terminal = _three_state_mdp()
    lake = FrozenLake("4x4")
    V = value_iteration(*_model(lake), 0.99, lake.terminal)[0]
    return [
        Case("three-state MDP at V*", (P, R, np.array([1.8, 2.0, 0.0]), 0.9, terminal)),
        Case("FrozenLake 4x4 at V* (gamma 0.99)", (*_model(lake), V, 0.99, lake.terminal)),
        Case("FrozenLake 4x4 at V = 0 .. 1", (*_model(lake), np.linspace(0, 1, 16), 0.9,
                                              lake.terminal)),
    ]


def _greedy_check_factory():
    """A compare that accepts any action attaining the maximum (ties may go either way)."""
    cases = {}

    def reference(P, R, V, gamma, terminal):
        Q = q_from_v(P, R, V, gamma, terminal)
        cases["Q"], cases["terminal"] = Q, np.asarray(terminal)
        return np.argmax(Q, axis=1)

    def compare(got, expected):
        reason = _greedy_compare(got, expected)
        if reason:
            return reason
        Q, terminal = cases["Q"], cases["terminal"]
        got = np.asarray(got)
        if got.min() < 0 or got.max() >= Q.shape[1]:
            return f"actions must be in [0, {Q.shape[1]}), got {got.min()}..{got.max()}"
        chosen = Q[np.arange(len(got)), got]
        worse = np.flatnonzero(~terminal & (chosen < Q.max(axis=1) - 1e-8))
        if worse.size:
            s = worse[0]
            return (f"in state {s} you chose action {got[s]} with Q = {chosen[s]:.4f}, but the best "
                    f"action {expected[s]} has Q = {Q[s].max():.4f}")
        return None

    return reference, compare


_greedy_ref, _greedy_cmp = _greedy_check_factory()


def _greedy_explain(case, got, expected):
    got = np.asarray(got)
    if got.shape == expected.shape and got.dtype.kind in "iu" and got.min() >= 0 and \
            np.array_equal(got, np.argmin(q_from_v(*case.args), axis=1)):
        return "you took the argmin: the greedy policy picks the action with the largest Q"
    return None


register(
    "greedy_policy", _greedy_ref, _greedy_cases, compare=_greedy_cmp, explain=_greedy_explain,
    hint="Q = q_from_v(...) by hand, then argmax over actions (axis 1)",
)

# -------------------------------------------------------------------------- bellman_backup


def _bellman_backup_cases():
    P, R, terminal = _three_state_mdp()
    lake = FrozenLake("4x4")
    return [
        Case("three-state MDP from V = 0", (P, R, np.zeros(3), 0.9, terminal)),
        Case("three-state MDP from V = [1, 2, 0]", (P, R, np.array([1.0, 2.0, 0.0]), 0.9, terminal)),
        Case("FrozenLake 4x4 from V = 0", (*_model(lake), np.zeros(16), 0.9, lake.terminal)),
        Case("FrozenLake 4x4 from a ramp V", (*_model(lake),
                                             np.where(lake.terminal, 0, np.linspace(0, 1, 16)),
                                             0.9, lake.terminal)),
    ]


def _bellman_backup_explain(case, got, expected):
    P, R, V, gamma, terminal = case.args
    got = np.asarray(got, dtype=float)
    if got.shape == P.shape[:2]:
        return "you returned Q [S, A]: the optimality backup takes the max over actions"
    leak = _terminal_leak(got, terminal)
    if leak:
        return leak
    if got.shape != expected.shape:
        return None
    if np.allclose(got, bellman_optimality_backup(P, R, V, 1.0, terminal)):
        return "you did not discount: the next state's value is weighted by gamma"
    if np.allclose(got, q_from_v(P, R, V, gamma, terminal).mean(axis=1)):
        return "you averaged over actions: value iteration takes the best action (max)"
    return None


register(
    "bellman_backup", bellman_optimality_backup, _bellman_backup_cases,
    explain=_bellman_backup_explain,
    hint="V_new[s] = max_a sum_s' P[s, a, s'] (R[s, a, s'] + gamma V[s']); 0 at terminal states",
)

# ------------------------------------------------------------------------- value_iteration


def _value_iteration_cases():
    P, R, terminal = _three_state_mdp()
    lake = FrozenLake("4x4")
    big = FrozenLake("8x8")
    return [
        Case("three-state MDP, gamma 0.9", (P, R, 0.9, terminal)),
        Case("FrozenLake 4x4, gamma 0.99", (*_model(lake), 0.99, lake.terminal)),
        Case("FrozenLake 8x8, gamma 0.9", (*_model(big), 0.9, big.terminal)),
    ]


def _value_iteration_compare(got, expected):
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (V, policy)"
    reason = default_compare(got[0], expected[0], rtol=1e-6, atol=1e-6)
    if reason:
        return f"V: {reason}"
    reason = _greedy_cmp(got[1], expected[1])
    return f"policy: {reason}" if reason else None


def _value_iteration_explain(case, got, expected):
    P, R, gamma, terminal = case.args
    if not isinstance(got, tuple) or len(got) != 2:
        return None
    leak = _terminal_leak(got[0], terminal)
    if leak:
        return leak
    V = np.asarray(got[0], dtype=float)
    if V.shape == expected[0].shape and np.all(V <= expected[0] + 1e-9) and \
            np.allclose(V, expected[0], atol=0.1):
        return "close but short of V*: you stopped too early; sweep until the largest change < 1e-10"
    policy = np.asarray(got[1])
    Q = q_from_v(P, R, expected[0], gamma, terminal)
    if policy.shape == expected[1].shape and policy.dtype.kind in "iu":
        chosen = Q[np.arange(len(policy)), np.clip(policy, 0, Q.shape[1] - 1)]
        bad = np.flatnonzero(~terminal & (chosen < Q.max(axis=1) - 1e-6))
        if bad.size:
            return f"your policy is not greedy in state {bad[0]}: take argmax_a Q(s, a) at the end"
    return None


def _value_iteration_reference(P, R, gamma, terminal):
    V, policy = value_iteration(P, R, gamma, terminal)
    _greedy_ref(P, R, V, gamma, terminal)  # remembers Q(V*) for the policy comparison
    return V, policy


register(
    "value_iteration", _value_iteration_reference, _value_iteration_cases,
    compare=_value_iteration_compare, explain=_value_iteration_explain,
    hint="repeat V = bellman_backup(V) until max |change| < 1e-10; policy = argmax of Q(V)",
)
