"""Dynamic programming on a known finite MDP: policy evaluation, policy and value iteration.

The model is the one every tabular environment exposes: ``P [S, A, S]`` with ``P[s, a, s']`` the
probability of moving to ``s'``; ``R [S, A, S]`` the reward of that transition (or ``R [S, A]``,
the expected reward of taking ``a`` in ``s``); ``terminal [S]`` bool (optional).

The backup of every function here is
``Q(s, a) = sum_s' P[s, a, s'] * (R[s, a, s'] + gamma * V(s'))``.

Invariant: terminal states never bootstrap. ``V[terminal]`` is 0 and their rows are never
updated, whatever ``P`` and ``R`` say about them (a reward on a terminal state's self-loop is
ignored); the reward for *entering* a terminal state is paid by the transition into it.
Rows of terminal states in ``P`` need not be distributions.

With ``gamma = 1`` the values are finite only if every policy considered reaches a terminal
state; otherwise the iterative methods stop after ``max_iters`` sweeps and the exact solve
meets a singular system, and both raise an error saying so.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import (
    as_float_array,
    as_int_array,
    check_choice,
    check_count,
    check_flag,
    check_nonnegative,
    check_probability,
    check_shape,
)
from ..envs.tabular import check_mdp

__all__ = [
    "expected_rewards",
    "q_from_v",
    "greedy",
    "policy_dynamics",
    "bellman_optimality_backup",
    "policy_evaluation",
    "policy_evaluation_exact",
    "value_iteration",
    "policy_iteration",
]

# Two action values closer than this count as tied, so float noise cannot pick the action.
_TIE_TOL = 1e-9


def _check_model(P, R, terminal):
    """:func:`rlcourse.envs.check_mdp`, then the expected rewards ``r [S, A]`` (0 in terminal
    states, whose rows are never used): float64 ``P [S, A, S]``, ``r`` and bool ``terminal [S]``."""
    P, R, terminal = check_mdp(P, R, terminal)
    r = np.einsum("ijk,ijk->ij", P, R) if R.shape == P.shape else R
    return P, np.where(~terminal[:, None], r, 0.0), terminal


def _check_gamma(gamma) -> float:
    return check_probability("gamma", gamma)


def _check_tol(tol) -> float:
    return check_nonnegative("tol", tol, positive=True)


def _check_values(V, S: int) -> np.ndarray:
    V = as_float_array("V", V, ndim=1).astype(np.float64)
    check_shape("V", V, (S,), against="[S] with S from P")
    return V


def _policy_matrix(policy, S: int, A: int) -> np.ndarray:
    """``policy`` as probabilities ``[S, A]``; accepts ``[S]`` actions or ``[S, A]`` probabilities."""
    arr = np.asarray(policy)
    if arr.ndim == 1:
        actions = as_int_array("policy", arr, 0, A)
        check_shape("policy", actions, (S,), against="[S] actions, S from P")
        return np.eye(A)[actions]
    probs = as_float_array("policy", arr, ndim=2).astype(np.float64)
    check_shape("policy", probs, (S, A), against="[S, A] action probabilities, from P")
    if (probs < 0).any():
        s, a = np.argwhere(probs < 0)[0]
        raise ValueError(f"policy: probabilities must be >= 0, got policy[{s}, {a}] = {probs[s, a]}")
    sums = probs.sum(axis=1)
    off = np.abs(sums - 1.0) > 1e-6
    if off.any():
        s = int(np.flatnonzero(off)[0])
        raise ValueError(f"policy: each row must sum to 1, but policy[{s}] sums to {sums[s]:.6g}")
    return probs


def _backup(P, r, V, gamma, terminal) -> np.ndarray:
    """``Q [S, A]`` from ``V``; terminal rows are 0 and ``V`` is read as 0 at terminal states."""
    V = np.where(terminal, 0.0, V)
    Q = r + gamma * (P @ V)
    Q[terminal] = 0.0
    return Q


def expected_rewards(P, R, terminal=None) -> np.ndarray:
    """``r [S, A]`` with ``r[s, a] = sum_s' P[s, a, s'] R[s, a, s']``; 0 on terminal rows."""
    return _check_model(P, R, terminal)[1]


def q_from_v(P, R, V, gamma, terminal=None) -> np.ndarray:
    """Action values ``Q [S, A]`` of ``V [S]``: one Bellman backup without the max.

    ``Q[s, a] = sum_s' P[s, a, s'] (R[s, a, s'] + gamma V[s'])`` with ``V`` read as 0 at
    terminal states, and ``Q[terminal] = 0``.
    """
    P, r, terminal = _check_model(P, R, terminal)
    V = _check_values(V, P.shape[0])
    return _backup(P, r, V, _check_gamma(gamma), terminal)


def greedy(Q, tol: float = _TIE_TOL) -> np.ndarray:
    """Greedy actions ``[S]`` (int64) of ``Q [S, A]``.

    Ties within ``tol`` of the row maximum go to the lowest action index, so values that differ
    only by rounding noise always give the same policy.
    """
    Q = as_float_array("Q", Q, ndim=2)
    tol = check_nonnegative("tol", tol)
    if Q.shape[1] == 0:
        raise ValueError(f"Q: expected at least one action (shape [S, A] with A >= 1), got {Q.shape}")
    return np.argmax(Q >= Q.max(axis=1, keepdims=True) - tol, axis=1).astype(np.int64)


def bellman_optimality_backup(P, R, V, gamma, terminal=None) -> np.ndarray:
    """One sweep of value iteration: ``V_new[s] = max_a Q[s, a]`` ``[S]``, 0 at terminal states."""
    return q_from_v(P, R, V, gamma, terminal).max(axis=1)


def _not_converged(name: str, sweeps: int, change: float, gamma: float) -> RuntimeError:
    why = (" With gamma = 1 every policy must reach a terminal state for the values to be "
           "finite; use gamma < 1 or add terminal states." if gamma == 1.0 else
           " Raise max_iters or tol.")
    return RuntimeError(
        f"{name}: did not converge in {sweeps} sweeps (last change {change:.3g}).{why}"
    )


def policy_evaluation(P, R, policy, gamma, terminal=None, tol: float = 1e-10,
                      max_iters: int = 100_000, method: str = "iterative",
                      return_history: bool = False):
    """``V^pi [S]`` of ``policy`` (``[S]`` actions or ``[S, A]`` probabilities).

    ``method="iterative"``: synchronous sweeps ``V <- r_pi + gamma P_pi V`` from ``V = 0`` until
    the largest change is below ``tol``; with ``return_history=True`` also ``changes [k]``, the
    largest change of each of the ``k`` sweeps (each is at most ``gamma`` times the one
    before: the backup is a contraction). ``method="linear"``: solve ``(I - gamma P_pi) V =
    r_pi`` exactly (see :func:`policy_evaluation_exact`). ``V[terminal] = 0`` either way.
    """
    method = check_choice("method", method, ("iterative", "linear"))
    return_history = check_flag("return_history", return_history)
    if method == "linear":
        if return_history:
            raise ValueError("return_history: only the iterative method has sweeps to record")
        return policy_evaluation_exact(P, R, policy, gamma, terminal)
    P, r, terminal = _check_model(P, R, terminal)
    gamma, tol = _check_gamma(gamma), _check_tol(tol)
    max_iters = check_count("max_iters", max_iters)
    S, A, _ = P.shape
    pi = _policy_matrix(policy, S, A)
    P_pi, r_pi = _policy_dynamics(P, r, pi, terminal)
    V = np.zeros(S)
    changes = []
    for _ in range(max_iters):
        V_new = r_pi + gamma * (P_pi @ V)
        changes.append(float(np.max(np.abs(V_new - V))))
        V = V_new
        if changes[-1] < tol:
            return (V, np.array(changes)) if return_history else V
    raise _not_converged("policy_evaluation", max_iters, changes[-1], gamma)


def policy_dynamics(P, R, policy, terminal=None):
    """The Markov chain a policy induces: ``P_pi [S, S]`` and ``r_pi [S]``.

    ``P_pi[s, s'] = sum_a pi(a|s) P[s, a, s']`` and ``r_pi[s] = sum_a pi(a|s) sum_s' P[s, a, s']
    R[s, a, s']`` (``policy`` as ``[S]`` actions or ``[S, A]`` probabilities). Terminal states
    are cut out: their rows and columns of ``P_pi`` and their ``r_pi`` are 0, so nothing is paid
    from, or bootstraps through, a terminal state, while the reward for *entering* one stays in
    ``r_pi`` of the state before it. Rows of states next to a terminal state then sum to less
    than 1: the missing mass is the probability of ending the episode. ``V^pi`` solves
    ``(I - gamma P_pi) V = r_pi``.
    """
    P, r, terminal = _check_model(P, R, terminal)
    S, A, _ = P.shape
    return _policy_dynamics(P, r, _policy_matrix(policy, S, A), terminal)


def _policy_dynamics(P, r, pi, terminal):
    """``P_pi [S, S]`` and ``r_pi [S]`` under ``pi``; terminal rows and columns are 0, so
    nothing is paid from, or bootstraps through, a terminal state."""
    P_pi = np.einsum("sa,sat->st", pi, P)
    P_pi[terminal] = 0.0
    P_pi[:, terminal] = 0.0
    r_pi = np.einsum("sa,sa->s", pi, r)
    return P_pi, r_pi


def policy_evaluation_exact(P, R, policy, gamma, terminal=None) -> np.ndarray:
    """``V^pi [S]`` by solving the Bellman expectation equation ``(I - gamma P_pi) V = r_pi``.

    Exact up to rounding; raises if the system is singular (``gamma = 1`` and the policy can
    loop forever without reaching a terminal state).
    """
    P, r, terminal = _check_model(P, R, terminal)
    S, A, _ = P.shape
    return _solve(P, r, _policy_matrix(policy, S, A), _check_gamma(gamma), terminal)


def _solve(P, r, pi, gamma, terminal) -> np.ndarray:
    """Exact ``V^pi`` of validated inputs (see :func:`policy_evaluation_exact`)."""
    P_pi, r_pi = _policy_dynamics(P, r, pi, terminal)
    system = np.eye(P.shape[0]) - gamma * P_pi
    # With gamma < 1 each row of gamma * P_pi sums to at most gamma, so the system is strictly
    # diagonally dominant and never singular: the costly condition number is needed at gamma = 1.
    if gamma == 1.0 and np.linalg.cond(system) > 1e12:
        raise np.linalg.LinAlgError(
            "policy_evaluation_exact: I - gamma * P_pi is singular: with gamma = "
            f"{gamma} the policy can stay forever among non-terminal states, so its values are "
            "not finite; use gamma < 1 or a policy that reaches a terminal state"
        )
    return np.linalg.solve(system, r_pi)


def value_iteration(P, R, gamma=0.9, terminal=None, tol: float = 1e-10,
                    max_iters: int = 100_000, return_history: bool = False):
    """Optimal values by repeated Bellman optimality backups.

    Returns ``(V [S], greedy_policy [S])``; with ``return_history=True`` also ``changes [k]``,
    the largest value change of each of the ``k`` sweeps (``k`` is the sweep count). Stops when
    a sweep changes no value by ``tol`` or more. ``V[terminal] = 0``; the policy is greedy with
    respect to the returned ``V`` (lowest action index among ties).
    """
    P, r, terminal = _check_model(P, R, terminal)
    gamma, tol = _check_gamma(gamma), _check_tol(tol)
    max_iters = check_count("max_iters", max_iters)
    V = np.zeros(P.shape[0])
    changes = []
    for _ in range(max_iters):
        V_new = _backup(P, r, V, gamma, terminal).max(axis=1)
        changes.append(float(np.max(np.abs(V_new - V))))
        V = V_new
        if changes[-1] < tol:
            policy = greedy(_backup(P, r, V, gamma, terminal))
            return (V, policy, np.array(changes)) if return_history else (V, policy)
    raise _not_converged("value_iteration", max_iters, changes[-1], gamma)


def policy_iteration(P, R, gamma, terminal=None, policy=None, max_iters: int = 1_000,
                     return_history: bool = False):
    """Optimal values and policy by alternating exact evaluation and greedy improvement.

    Starts from ``policy`` (``[S]`` actions; default all zeros). An action changes only when
    another is better by more than a rounding tolerance, so the loop cannot cycle between tied
    policies and stops as soon as the policy is stable. Returns ``(V [S], policy [S])``; with
    ``return_history=True`` also the list of policies visited (the first is the start).
    """
    P, r, terminal = _check_model(P, R, terminal)
    gamma = _check_gamma(gamma)
    max_iters = check_count("max_iters", max_iters)
    return_history = check_flag("return_history", return_history)
    S, A, _ = P.shape
    policy = np.zeros(S, dtype=np.int64) if policy is None else as_int_array("policy", policy, 0, A)
    check_shape("policy", policy, (S,), against="[S] actions, S from P")
    policy = policy.astype(np.int64)
    history = [policy.copy()]
    for _ in range(max_iters):
        V = _solve(P, r, np.eye(A)[policy], gamma, terminal)
        Q = _backup(P, r, V, gamma, terminal)
        current = Q[np.arange(S), policy]
        better = Q.max(axis=1) > current + _TIE_TOL
        if not better.any():
            return (V, policy, history) if return_history else (V, policy)
        policy = np.where(better, greedy(Q), policy)
        history.append(policy.copy())
    raise RuntimeError(f"policy_iteration: the policy was still changing after {max_iters} "
                       "improvement steps")
