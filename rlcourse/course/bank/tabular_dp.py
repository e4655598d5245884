"""Exercises of lessons 01-03: bandit updates, exploration and regret; returns and Bellman
equations; dynamic programming. Each lesson's Build-it steps come first, then its exercises."""

from __future__ import annotations

import sys
import time

import numpy as np

from ...envs.gridworld import FrozenLake, GridWorld
from ...tabular.bandits import ucb_scores
from ...tabular.dp import (
    bellman_optimality_backup,
    greedy,
    policy_dynamics,
    policy_evaluation,
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


def _same(got, candidate, atol=1e-9) -> bool:
    """True if ``got`` has ``candidate``'s shape and values (NaN matching NaN)."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    candidate = np.asarray(candidate, dtype=float)
    return got.shape == candidate.shape and bool(
        np.allclose(got, candidate, rtol=1e-7, atol=atol, equal_nan=True))


def _first_match(got, variants) -> str | None:
    """The message of the first ``(message, value)`` whose value equals ``got``."""
    for message, value in variants:
        with np.errstate(all="ignore"):
            if _same(got, value):
                return message
    return None


class InPlaceUpdate(Exception):
    """An answer wrote into the arrays it was given instead of returning new ones."""


def _keeping_inputs(*names):
    """A ``call`` that runs the function on the case's arrays and refuses an answer that changed
    any of them in place (the caller may still need the old estimates)."""
    def call(fn, *args, **kwargs):
        before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else None for a in args]
        out = fn(*args, **kwargs)
        changed = [name for name, a, b in zip(names, args, before)
                   if b is not None and not np.array_equal(a, b, equal_nan=True)]
        if changed:
            raise InPlaceUpdate(
                f"you changed the caller's {' and '.join(changed)} in place: copy the inputs "
                f"(np.array(x, dtype=float)) and update the copies, since the caller may still "
                f"need the old values")
        return out
    return call


# ================================================================ lesson 01: bandits
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
        Case("second pull of arm 1, other arms tried", (np.array([0.2, 2.0, -0.5]),
                                                        np.array([2, 1, 4]), 1, 0.0)),
    ]


def _sample_average_explain(case, got, expected):
    Q, N, a, r = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (Q, N): the estimates and the counts, both updated"
    got_Q, got_N = (np.asarray(x, dtype=float) for x in got)
    if got_Q.shape != Q.shape or got_N.shape != N.shape:
        return f"Q and N keep one entry per arm: shapes {Q.shape} and {N.shape}"
    if not np.isfinite(got_Q).all():
        return ("your estimate is inf or NaN: you divided by the count before counting this "
                "pull (N = 0 on a first pull); add 1 to N[a] first, then divide")
    if np.array_equal(got_N, N):
        return "N must count this pull: N[a] goes up by 1"
    if np.array_equal(got_N, N + 1):
        return "only the pulled arm's count goes up: N[a] += 1, not N += 1"
    others = np.arange(Q.size) != a
    if not np.allclose(got_Q[others], Q[others]):
        return "only the pulled arm's estimate changes; the other arms got no new data"
    step = {
        "divide by the count after this pull, N[a] + 1: the new reward is one of them":
            1.0 / N[a] if N[a] > 0 else np.nan,
        "you replaced the estimate by the last reward; average it in: Q[a] += (r - Q[a]) / N[a]":
            1.0,
        "that is a constant step size 0.1; the sample average steps by 1 / N[a]": 0.1,
    }
    return _first_match(got_Q[a], [(m, Q[a] + k * (r - Q[a])) for m, k in step.items()
                                   if not (k == 1.0 and N[a] == 0)])


register(
    "sample_average_update", _sample_average_reference, _sample_average_cases,
    explain=_sample_average_explain, call=_keeping_inputs("Q", "N"),
    hint="the mean of n numbers follows from the mean of the first n - 1 and the new one; "
         "which count is n here?",
)

# ------------------------------------------------------------------ epsilon_greedy_actions


def _epsilon_greedy_probs(Q, epsilon):
    """Exact action probabilities ``[n, arms]``: uniform exploration, random tie-breaking."""
    Q = np.asarray(Q, dtype=float)
    best = Q == Q.max(axis=1, keepdims=True)
    return (1 - epsilon) * best / best.sum(axis=1, keepdims=True) + epsilon / Q.shape[1]


def _epsilon_greedy_factory():
    """The reference samples; the compare tests the sample's frequencies against the exact
    probabilities, group by group of identical rows (so any correct use of ``rng`` passes)."""
    state = {}

    def reference(Q, epsilon, rng):
        Q = np.asarray(Q, dtype=float)
        probs = _epsilon_greedy_probs(Q, epsilon)
        state["probs"] = probs
        state["groups"] = np.unique(Q, axis=0, return_inverse=True)[1].ravel()
        cdf = np.cumsum(probs, axis=1)
        u = rng.random(len(Q))[:, None]
        return np.minimum((cdf <= u).sum(axis=1), Q.shape[1] - 1)

    def compare(got, expected):
        probs, groups = state["probs"], state["groups"]
        got = np.asarray(got)
        if got.shape != expected.shape:
            return f"expected one action per row of Q, shape {expected.shape}, got {got.shape}"
        if got.dtype.kind not in "iu":
            return f"expected integer actions, got dtype {got.dtype}"
        if got.min() < 0 or got.max() >= probs.shape[1]:
            return f"actions must be in [0, {probs.shape[1]}), got {got.min()}..{got.max()}"
        for g in np.unique(groups):
            rows = groups == g
            freq = np.bincount(got[rows], minlength=probs.shape[1]) / rows.sum()
            p = probs[rows][0]
            tol = 5 * np.sqrt(p * (1 - p) / rows.sum()) + 1e-3
            bad = np.flatnonzero(np.abs(freq - p) > tol)
            if bad.size:
                a = bad[0]
                return (f"arm {a} was chosen in {freq[a]:.3f} of the rows with Q = "
                        f"{np.round(expected_row(g), 2).tolist()}, expected {p[a]:.3f}")
        return None

    def expected_row(g):
        return state["Q"][state["groups"] == g][0]

    def reference_keeping_q(Q, epsilon, rng):
        state["Q"] = np.asarray(Q, dtype=float)
        return reference(Q, epsilon, rng)

    return reference_keeping_q, compare


def _epsilon_greedy_cases():
    def tile(rows, m):
        return np.repeat(np.asarray(rows, dtype=float), m, axis=0)

    return [
        Case("epsilon 0.1, one best arm of 10",
             (tile([[0.1, 0.5, -0.3, 0.9, 0.0, 0.2, -1.0, 0.4, 0.3, 0.8]], 20_000), 0.1,
              np.random.default_rng(1))),
        Case("epsilon 0, three arms tied for best",
             (tile([[1.0, 1.0, 0.0, 1.0, -2.0]], 20_000), 0.0, np.random.default_rng(2))),
        Case("epsilon 0.5, two arms", (tile([[0.0, 1.0]], 20_000), 0.5, np.random.default_rng(3))),
        Case("epsilon 0.2, two different problems",
             (np.tile([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]], (10_000, 1)), 0.2,
              np.random.default_rng(4))),
    ]


def _epsilon_greedy_explain(case, got, expected):
    Q, epsilon, _ = case.args
    got = np.asarray(got)
    if got.shape == (Q.shape[1],):
        return "you took the argmax over the wrong axis: one action per row (copy) of Q, axis=1"
    if got.shape != expected.shape or got.dtype.kind not in "iu":
        return None
    k = Q.shape[1]
    best = Q == Q.max(axis=1, keepdims=True)
    single = best.sum(axis=1) == 1
    if epsilon == 0 and not single.all() and np.all(got == best.argmax(axis=1)):
        return ("every tie went to the lowest-index arm (np.argmax does that): break ties at "
                "random, e.g. argmax of random numbers times the tie mask")
    if not single.all() or epsilon == 0:
        return None
    greedy = Q.argmax(axis=1)
    on_greedy = np.mean(got == greedy)
    if on_greedy in (0.0, 1.0) or abs(on_greedy - 1 / k) < 0.02 and epsilon < 1 - 1 / k:
        return ("every copy explored or none did: draw one coin per copy (rng.random(n) < "
                "epsilon), not one for all")
    candidates = [
        ("exploration skipped the greedy arm: explore uniformly over all arms, the greedy one "
         "included (it gets 1 - epsilon + epsilon / k)", 1 - epsilon),
        ("epsilon is the probability of exploring, not of acting greedily", epsilon + (1 - epsilon) / k),
    ]
    for message, p in candidates:
        if abs(on_greedy - p) < 0.02 and abs(p - (1 - epsilon + epsilon / k)) > 0.03:
            return message
    return None


_eg_reference, _eg_compare = _epsilon_greedy_factory()
register(
    "epsilon_greedy_actions", _eg_reference, _epsilon_greedy_cases, compare=_eg_compare,
    explain=_epsilon_greedy_explain,
    hint="one coin per copy decides explore or exploit; exploring is uniform over every arm; "
         "greedy ties are broken at random",
)

# ----------------------------------------------------------------------------- ucb_scores


def _ucb_cases():
    return [
        Case("every arm tried", (np.array([0.5, 1.0, 0.2]), np.array([4, 1, 2]), 8, 2.0)),
        Case("one arm untried", (np.array([0.5, 0.0, 0.2]), np.array([4, 0, 1]), 6, 2.0)),
        Case("c = 0 is greedy", (np.array([0.3, 0.6]), np.array([5, 1]), 7, 0.0)),
        Case("a batch of 2 bandits", (np.array([[0.1, 0.2], [0.0, 0.4]]),
                                      np.array([[3, 1], [2, 2]]), 5, 1.0)),
        Case("step 100, c = 0.5", (np.array([1.0, 0.9, 0.2, 0.7]), np.array([60, 25, 5, 10]), 100,
                                   0.5)),
        Case("the very first step: t = 1, no arm tried", (np.zeros(4), np.zeros(4, dtype=int), 1,
                                                          2.0)),
        Case("a batch at t = 3, some arms untried", (np.array([[0.4, 0.0, 0.0], [0.0, -0.2, 0.0]]),
                                                     np.array([[2, 0, 0], [0, 1, 0]]), 3, 2.0)),
    ]


def _ucb_call(fn, Q, N, t, c):
    """Grade under np.errstate(divide='raise', invalid='raise'): the bonus of an untried arm is
    never computed by dividing by N = 0 (at t = 1 that is 0 / 0 = NaN)."""
    with np.errstate(divide="raise", invalid="raise"):
        return fn(Q, N, t, c)


_DIVIDED_BY_ZERO = ("you divided by N = 0 for the untried arms (ln t / 0 is inf, and at t = 1 it "
                    "is 0 / 0 = NaN): compute the bonus only where N > 0, e.g. divide by "
                    "np.where(N > 0, N, 1), and give the untried arms +inf with np.where")


def _ucb_explain_error(case, err):
    if isinstance(err, (FloatingPointError, ZeroDivisionError)):
        return _DIVIDED_BY_ZERO
    return None


def _ucb_explain(case, got, expected):
    Q, N, t, c = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return None
    untried = N == 0
    if untried.any() and np.isnan(got[untried]).any():
        return _DIVIDED_BY_ZERO
    if untried.any() and not np.all(got[untried] == np.inf):
        return ("an untried arm must score +inf: its uncertainty is unbounded, so UCB pulls every "
                "arm once before pulling any arm twice")
    tried = ~untried
    Nt = np.where(tried, N, 1)
    with np.errstate(all="ignore"):
        variants = [
            ("your scores have no exploration bonus c * sqrt(ln t / N)", Q),
            ("the bonus grows with the logarithm of t: sqrt(ln t / N), not sqrt(t / N)",
             Q + c * np.sqrt(t / Nt)),
            ("take the square root: the bonus is c * sqrt(ln t / N), not c * ln t / N",
             Q + c * np.log(t) / Nt),
            ("c multiplies the square root: c * sqrt(ln t / N), not sqrt(c ln t / N)",
             Q + np.sqrt(c * np.log(t) / Nt)),
            ("that is UCB1's sqrt(2 ln t / N) times c: here the 2 is not there, c alone sets the "
             "weight (c = sqrt(2) gives UCB1)", Q + c * np.sqrt(2 * np.log(t) / Nt)),
            ("use the natural logarithm, np.log, not log10", Q + c * np.sqrt(np.log10(t) / Nt)),
            ("t is the number of the step being chosen (the argument): use ln t, not ln(t + 1)",
             Q + c * np.sqrt(np.log(t + 1) / Nt)),
            ("divide by N, the pulls of this arm, not N + 1", Q + c * np.sqrt(np.log(t) / (N + 1))),
            ("the bonus is added to Q, not subtracted: an upper confidence bound",
             Q - c * np.sqrt(np.log(t) / Nt)),
        ]
    for message, value in variants:
        if _same(got[tried], value[tried]) and not _same(value[tried], expected[tried]):
            return message
    return None


register(
    "ucb_scores", ucb_scores, _ucb_cases, explain=_ucb_explain, call=_ucb_call,
    explain_error=_ucb_explain_error,
    hint="the bonus shrinks with the arm's pulls and grows slowly with time; an arm never pulled "
         "must win outright",
)

# ---------------------------------------------------------------------- gradient_bandit_update


def _softmax(H):
    z = np.exp(H - H.max())
    return z / z.sum()


def _gradient_bandit_reference(H, action, reward, baseline, alpha):
    H = np.asarray(H, dtype=float)
    onehot = np.zeros_like(H)
    onehot[action] = 1.0
    return H + alpha * (reward - baseline) * (onehot - _softmax(H))


def _gradient_bandit_cases():
    return [
        Case("uniform start, reward above baseline", (np.zeros(3), 1, 2.0, 0.5, 0.1)),
        Case("reward below baseline", (np.array([0.5, -0.2, 0.1, 0.0]), 0, -1.0, 0.3, 0.2)),
        Case("large preferences", (np.array([800.0, 799.0]), 1, 1.0, 0.0, 0.5)),
        Case("positive baseline, skewed preferences", (np.array([1.0, 2.0, 0.0]), 2, 4.0, 3.0, 0.1)),
    ]


def _gradient_bandit_explain(case, got, expected):
    H, a, r, b, alpha = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != H.shape:
        return f"return the new preferences, one per arm: shape {H.shape}"
    if not np.isfinite(got).all():
        return "inf or NaN: exp of large preferences overflows; subtract max(H) before exponentiating"
    pi = _softmax(H)
    onehot = np.eye(H.size)[a]
    only_chosen = H + alpha * (r - b) * onehot * (1 - pi)
    with np.errstate(all="ignore"):
        variants = [
            ("you left out the baseline: the step is scaled by (reward - baseline)",
             H + alpha * r * (onehot - pi)),
            ("wrong sign: a reward above the baseline must raise the pulled arm's preference, "
             "(1[a = A] - pi(a)), not (pi(a) - 1[a = A])", H - alpha * (r - b) * (onehot - pi)),
            ("the arms you did not pull move too, by -alpha (r - baseline) pi(a): the update "
             "sums to zero over arms", only_chosen),
            ("use the softmax probabilities pi = softmax(H), not the preferences H themselves",
             H + alpha * (r - b) * (onehot - H)),
            ("the baseline is subtracted from the reward: (reward - baseline), not (reward + "
             "baseline)", H + alpha * (r + b) * (onehot - pi)),
        ]
    message = _first_match(got, variants)
    if message:
        return message
    if abs(got.sum() - H.sum()) > 1e-9:
        return ("your update does not sum to zero over arms: every arm moves by "
                "alpha (r - baseline) (1[a = A] - pi(a)), the unchosen ones by -pi(a)")
    return None


register(
    "gradient_bandit_update", _gradient_bandit_reference, _gradient_bandit_cases,
    explain=_gradient_bandit_explain, call=_keeping_inputs("H"),
    hint="every arm moves: up for the pulled arm and down for the others when the reward beats "
         "the baseline; compute the softmax so that large preferences cannot overflow",
)

# ------------------------------------------------------------------------ cumulative_regret


def _cumulative_regret_reference(means, actions):
    means, actions = np.asarray(means, dtype=float), np.asarray(actions)
    chosen = means[np.arange(means.shape[0]), actions]  # [steps, n]: copy i's pulled arm's mean
    return np.cumsum(means.max(axis=1) - chosen, axis=0)


def _cumulative_regret_cases():
    return [
        Case("one problem, five steps", (np.array([[0.2, 1.0, -0.5]]),
                                         np.array([[1], [0], [2], [1], [1]]))),
        Case("three problems, four steps", (np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.4]]),
                                            np.array([[0, 0, 1], [1, 1, 0], [1, 0, 1],
                                                      [1, 0, 0]]))),
        Case("four problems, three arms, six steps",
             (np.array([[0.3, -0.2, 1.1], [0.0, 0.5, 0.4], [-1.0, -0.5, -2.0], [0.7, 0.7, 0.1]]),
              np.array([[0, 1, 2, 2], [2, 1, 1, 0], [2, 2, 1, 1], [1, 1, 0, 2], [2, 1, 1, 0],
                        [2, 1, 1, 1]]))),
    ]


def _cumulative_regret_explain(case, got, expected):
    means, actions = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return (f"one cumulative regret per step and copy: shape {expected.shape} "
                "[steps, n], like actions")
    chosen = means[np.arange(means.shape[0]), actions]
    gap = means.max(axis=1) - chosen
    variants = [
        ("that is each step's regret: the cumulative regret is its running sum over steps "
         "(np.cumsum along axis 0)", gap),
        ("regret is what you gave up, best mean minus the pulled arm's mean (>= 0); your sign "
         "is flipped", -np.cumsum(gap, axis=0)),
        ("compare with each problem's own best arm (max over that problem's arms), not the best "
         "mean over all problems", np.cumsum(means.max() - chosen, axis=0)),
        ("you summed over copies (axis 1); sum over time (axis 0), separately for each copy",
         np.cumsum(gap, axis=1)),
    ]
    return _first_match(got, variants)


register(
    "cumulative_regret", _cumulative_regret_reference, _cumulative_regret_cases,
    explain=_cumulative_regret_explain,
    hint="regret is measured with the true means, not the noisy rewards, each problem "
         "against its own best arm, and it adds up over time",
)

# -------------------------------------------------------------------------- recency_weights


def _recency_weights_reference(alpha, n):
    i = np.arange(1, n + 1)
    return np.concatenate([[(1 - alpha) ** n], alpha * (1 - alpha) ** (n - i)])


def _recency_weights_cases():
    return [
        Case("alpha 0.1, five rewards", (0.1, 5)),
        Case("alpha 0.5, three rewards", (0.5, 3)),
        Case("alpha 1 keeps only the last reward", (1.0, 2)),
        Case("no reward yet", (0.3, 0)),
    ]


def _recency_weights_explain(case, got, expected):
    alpha, n = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    i = np.arange(1, n + 1)
    if got.shape == (n,):
        return ("n + 1 weights: Q_1, the initial estimate, keeps weight (1 - alpha)^n; put it "
                "first")
    variants = [
        ("off by one in the power: the newest reward R_n has weight alpha (1 - alpha)^0 = alpha",
         np.concatenate([[(1 - alpha) ** n], alpha * (1 - alpha) ** (n - i + 1)])),
        ("reversed: the weights grow towards the newest reward, R_n (last entry)",
         np.concatenate([[(1 - alpha) ** n], (alpha * (1 - alpha) ** (n - i))[::-1]])),
        ("those are the sample average's weights (1/n each); with a constant step they decay "
         "geometrically", np.concatenate([[0.0], np.full(n, 1 / max(n, 1))])),
        ("the initial estimate Q_1 has weight (1 - alpha)^n, which is not 0 unless alpha = 1",
         np.concatenate([[0.0], alpha * (1 - alpha) ** (n - i)])),
    ]
    return _first_match(got, variants)


register(
    "recency_weights", _recency_weights_reference, _recency_weights_cases,
    explain=_recency_weights_explain,
    hint="unroll Q_{n+1} = Q_n + alpha (R_n - Q_n) = alpha R_n + (1 - alpha) Q_n a few times",
)

# ---------------------------------------------------------------------- unbiased_step_update


def _unbiased_step_reference(Q, trace, action, reward, alpha):
    Q, trace = np.array(Q, dtype=float), np.array(trace, dtype=float)
    trace[action] += alpha * (1 - trace[action])
    Q[action] += alpha / trace[action] * (reward - Q[action])
    return Q, trace


def _unbiased_step_cases():
    return [
        Case("first pull: no bias from Q_1", (np.full(3, 5.0), np.zeros(3), 1, 2.0, 0.1)),
        Case("third pull of arm 0", (np.array([1.0, 5.0, 5.0]), np.array([0.19, 0.0, 0.0]), 0,
                                     -1.0, 0.1)),
        Case("a long-pulled arm steps by about alpha",
             (np.array([0.0, 0.4]), np.array([0.3, 0.99]), 1, 1.0, 0.2)),
    ]


def _unbiased_step_explain(case, got, expected):
    Q, trace, a, r, alpha = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (Q, trace), both updated"
    got_Q, got_o = (np.asarray(x, dtype=float) for x in got)
    if got_Q.shape != Q.shape or got_o.shape != trace.shape:
        return None
    if not np.isfinite(got_Q).all():
        return ("inf or NaN on a first pull: update the trace first (o <- o + alpha (1 - o)), "
                "then divide by it; the old trace is 0")
    others = np.arange(Q.size) != a
    if not np.allclose(got_o[others], trace[others]):
        return "only the pulled arm's trace moves: each arm has its own o"
    new_o = trace[a] + alpha * (1 - trace[a])
    if not np.isclose(got_o[a], new_o):
        return "the trace steps towards 1: o <- o + alpha (1 - o)"
    with np.errstate(all="ignore"):
        variants = [
            ("that is the plain constant step alpha: it keeps the bias of Q_1; step by "
             "beta = alpha / o", Q[a] + alpha * (r - Q[a])),
            ("divide alpha by the trace *after* this pull's update", Q[a] + alpha / trace[a] * (r - Q[a])),
        ]
    return _first_match(got_Q[a], variants)


register(
    "unbiased_step_update", _unbiased_step_reference, _unbiased_step_cases,
    explain=_unbiased_step_explain, call=_keeping_inputs("Q", "trace"),
    hint="the trace o starts at 0 and creeps towards 1; the step alpha / o is 1 on the first "
         "pull (so Q_1 is forgotten at once) and tends to alpha",
)

# ------------------------------------------------------------------------- thompson_actions


def _thompson_reference(sums, counts, z, prior_mean=0.0, prior_var=1.0):
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    precision = 1.0 / prior_var + counts  # reward noise has variance 1
    mean = (prior_mean / prior_var + sums) / precision
    return np.argmax(mean + np.asarray(z) / np.sqrt(precision), axis=-1)


def _thompson_cases():
    rng = np.random.default_rng(11)
    n, k = 200, 5
    counts = rng.integers(0, 30, size=(n, k))
    means = rng.normal(size=(n, k))
    sums = counts * means + np.sqrt(counts) * rng.normal(size=(n, k))
    counts_shifted = rng.integers(0, 8, size=(n, k))
    sums_shifted = counts_shifted * (4 + means) + np.sqrt(counts_shifted) * rng.normal(size=(n, k))
    return [
        Case("no pulls yet: the prior alone", (np.zeros((n, k)), np.zeros((n, k)),
                                               rng.normal(size=(n, k)))),
        Case("after 0-29 pulls of each arm", (sums, counts, rng.normal(size=(n, k)))),
        Case("prior N(4, 1), as on a shifted testbed",
             (sums_shifted, counts_shifted, rng.normal(size=(n, k))), {"prior_mean": 4.0}),
        Case("a wide prior, variance 100",
             (sums, counts, rng.normal(size=(n, k))), {"prior_var": 100.0}),
    ]


def _thompson_compare(got, expected):
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"expected one action per row, shape {expected.shape}, got {got.shape}"
    if got.dtype.kind not in "iu":
        return f"expected integer actions, got dtype {got.dtype}"
    wrong = np.flatnonzero(got != expected)
    if wrong.size:
        return (f"{wrong.size} of {got.size} actions differ; first in row {wrong[0]}: expected "
                f"{expected[wrong[0]]}, got {got[wrong[0]]}")
    return None


def _thompson_explain(case, got, expected):
    sums, counts, z = case.args
    m0, v0 = case.kwargs.get("prior_mean", 0.0), case.kwargs.get("prior_var", 1.0)
    got = np.asarray(got)
    if got.shape == (sums.shape[1],):
        return "one action per row (copy): take the argmax over arms, axis=-1"
    if got.shape != expected.shape:
        return None
    precision = 1 / v0 + counts
    mean = (m0 / v0 + sums) / precision
    with np.errstate(all="ignore"):
        average = np.where(counts > 0, sums / np.where(counts > 0, counts, 1), m0)
        variants = [
            ("argmin: Thompson sampling plays the arm whose *sampled* value is highest",
             np.argmin(mean + z / np.sqrt(precision), axis=-1)),
            ("you scaled z by the posterior variance 1/precision; a sample is mean + z * std, "
             "std = 1/sqrt(precision)", np.argmax(mean + z / precision, axis=-1)),
            ("z * sqrt(precision) makes arms *more* uncertain the more they are pulled; the std "
             "is 1/sqrt(precision)", np.argmax(mean + z * np.sqrt(precision), axis=-1)),
            ("the posterior mean shrinks the sample average towards the prior mean: "
             "(prior_mean / prior_var + sums) / (1 / prior_var + counts)",
             np.argmax(average + z / np.sqrt(precision), axis=-1)),
            ("the prior mean enters the posterior mean: (prior_mean / prior_var + sums) / "
             "precision", np.argmax(sums / precision + z / np.sqrt(precision), axis=-1)),
            ("with no sample drawn this is greedy on the posterior mean: add z times the "
             "posterior std", np.argmax(mean, axis=-1)),
            ("the posterior precision is 1/prior_var + counts (the prior counts as 1/prior_var "
             "pulls)", np.argmax((m0 + sums) / (1 + counts) + z / np.sqrt(1 + counts), axis=-1)),
        ]
    for message, value in variants:
        if np.array_equal(got, value) and not np.array_equal(value, expected):
            return message
    return None


register(
    "thompson_actions", _thompson_reference, _thompson_cases, compare=_thompson_compare,
    explain=_thompson_explain,
    hint="with unit reward noise a Gaussian prior stays Gaussian: precisions add (prior "
         "precision + one per pull) and the mean is a precision-weighted average",
)

# ================================================================ lesson 02: MDPs and Bellman


def _maze():
    """Lesson 02's maze: walls, a hole paying -1, the goal paying +1, -0.01 per step."""
    return GridWorld(layout=["S....", ".WW..", "...H.", ".W...", "....G"], step_reward=-0.01,
                     hole_reward=-1.0)


def _right_down(S):
    policy = np.zeros((S, 4))
    policy[:, [1, 2]] = 0.5  # DOWN, RIGHT
    return policy


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
        Case("a step cost, then the goal", ([-0.01, -0.01, -0.01, 1.0], 0.9)),
    ]


def _discounted_return_explain(case, got, expected):
    rewards, gamma = case.args
    r = np.asarray(rewards, dtype=float)
    t = np.arange(r.size)
    if np.ndim(got) == 1 and np.size(got) == r.size:
        return "return one number, G_0, not the return of every step"
    if np.ndim(got) != 0:
        return None
    variants = [
        ("you discounted the first reward too: G_0 = r_0 + gamma r_1 + gamma^2 r_2 + ...",
         np.sum(gamma ** (t + 1) * r)),
        ("the discount runs the wrong way: the *first* reward counts fully and the last is "
         "weighted gamma^(T-1)", np.sum(gamma ** t[::-1] * r)),
        ("you did not discount: a reward t steps ahead is weighted gamma^t", np.sum(r)),
    ]
    for message, value in variants:
        if np.isclose(float(got), value) and not np.isclose(value, expected):
            return message
    return None


def _scalar_compare(got, expected):
    # default_compare misses a mismatch between two 0-d values, so compare them as [1] arrays
    if np.ndim(got) != 0:
        return f"expected a single number, got shape {np.shape(got)}"
    return default_compare(np.atleast_1d(float(got)), np.atleast_1d(expected))


register(
    "discounted_return", _discounted_return_reference, _discounted_return_cases,
    compare=_scalar_compare, explain=_discounted_return_explain,
    hint="a reward t steps after the start is worth gamma**t as much; the first one is t = 0",
)

# ------------------------------------------------------------------------- policy_dynamics


def _policy_dynamics_cases():
    P3, R3, T3 = _three_state_mdp()
    lake, maze = FrozenLake("4x4"), _maze()
    skewed = np.tile([0.1, 0.2, 0.3, 0.4], (16, 1))
    return [
        Case("three-state MDP, 70/30 policy (terminal self-loop pays 5)",
             (P3, R3, np.tile([0.7, 0.3], (3, 1)), T3)),
        Case("FrozenLake 4x4, a skewed policy", (*_model(lake), skewed, lake.terminal)),
        Case("maze with a hole, RIGHT or DOWN", (*_model(maze), _right_down(25), maze.terminal)),
    ]


def _policy_dynamics_compare(got, expected):
    """(P_pi, r_pi) as the reference, except that columns of terminal states may be kept or
    zeroed: both give the same values once V = 0 there."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (P_pi, r_pi)"
    P_pi, r_pi = (np.asarray(x, dtype=float) for x in got)
    P_exp, r_exp = expected
    if P_pi.shape != P_exp.shape:
        return f"P_pi: expected shape {P_exp.shape} [S, S'], got {P_pi.shape}"
    terminal = _policy_dynamics_compare.terminal
    keep = ~terminal
    reason = default_compare(P_pi[:, keep], P_exp[:, keep])
    if reason:
        return f"P_pi (columns of non-terminal states): {reason}"
    if np.abs(P_pi[terminal]).max(initial=0.0) > 1e-12:
        return "P_pi: the rows of terminal states must be 0 (nothing follows a terminal state)"
    reason = default_compare(r_pi, r_exp)
    return f"r_pi: {reason}" if reason else None


def _policy_dynamics_reference(P, R, policy, terminal):
    _policy_dynamics_compare.terminal = np.asarray(terminal, dtype=bool)
    return policy_dynamics(P, R, policy, terminal)


def _policy_dynamics_explain(case, got, expected):
    P, R, policy, terminal = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    P_pi, r_pi = (np.asarray(x, dtype=float) for x in got)
    if P_pi.shape != expected[0].shape or r_pi.shape != expected[1].shape:
        return None
    live = ~terminal
    if np.abs(P_pi[terminal]).max(initial=0.0) > 1e-12 or np.abs(r_pi[terminal]).max(
            initial=0.0) > 1e-12:
        return ("a terminal state has no future: zero its row of P_pi and its r_pi (it still "
                "loops to itself, or pays, in yours)")

    def masked(M):
        M = np.array(M, dtype=float)
        M[terminal] = 0.0
        return M[:, live]

    full = np.einsum("sa,sat->st", policy, P)
    r_kept = np.einsum("sa,sat,sat->s", policy, P, R) * live
    r_no_entry = np.einsum("sa,sat,sat->s", policy, P, R * live[None, None, :]) * live
    if _same(r_pi, r_no_entry) and not _same(r_no_entry, r_kept):
        return ("the reward for *entering* a terminal state is missing: keep it in r_pi of the "
                "state before; only what would come after the terminal state is cut")
    if _same(r_pi[live], np.einsum("sa,sat->s", policy, R)[live]) and not _same(
            r_pi[live], r_kept[live]):
        return "weight each reward R[s, a, s'] by its probability P[s, a, s'] before summing"
    if _same(P_pi[:, live], masked(P.sum(axis=1))):
        return "average over actions with the policy's probabilities pi(a|s), not a plain sum"
    if _same(P_pi[:, live], masked(full.T)) and not _same(masked(full.T), masked(full)):
        return "P_pi is transposed: row s holds the probabilities of moving *from* s"
    return None


register(
    "policy_dynamics", _policy_dynamics_reference, _policy_dynamics_cases,
    compare=_policy_dynamics_compare, explain=_policy_dynamics_explain,
    hint="average the model over the policy's action probabilities; a terminal state has no "
         "future (its row and reward go), but entering it still pays",
)

# -------------------------------------------------------------------------- solve_bellman


def _solve_bellman_reference(P_pi, r_pi, gamma):
    return np.linalg.solve(np.eye(len(r_pi)) - gamma * P_pi, r_pi)


def _solve_bellman_cases():
    P3, R3, T3 = _three_state_mdp()
    lake, maze = FrozenLake("4x4"), _maze()
    return [
        Case("three-state MDP, 70/30 policy, gamma 0.9",
             (*policy_dynamics(P3, R3, np.tile([0.7, 0.3], (3, 1)), T3), 0.9)),
        Case("FrozenLake 4x4, uniform policy, gamma 0.95",
             (*policy_dynamics(*_model(lake), np.full((16, 4), 0.25), lake.terminal), 0.95)),
        Case("maze, RIGHT or DOWN, gamma 0.9",
             (*policy_dynamics(*_model(maze), _right_down(25), maze.terminal), 0.9)),
    ]


def _solve_bellman_explain(case, got, expected):
    P_pi, r_pi, gamma = case.args
    I = np.eye(len(r_pi))
    variants = [
        ("P_pi is used transposed: V = r_pi + gamma P_pi V sums over the *next* states, "
         "P_pi @ V", np.linalg.solve(I - gamma * P_pi.T, r_pi)),
        ("you left out gamma: solve (I - gamma P_pi) V = r_pi", np.linalg.lstsq(I - P_pi, r_pi,
                                                                                 rcond=None)[0]),
        ("that is a few steps of the sum r + gamma P r + ...; solve the system for the whole "
         "infinite sum", r_pi + gamma * P_pi @ r_pi),
        ("that is the expected immediate reward alone (one step); solve the system", r_pi),
    ]
    return _first_match(got, variants)


register(
    "solve_bellman", _solve_bellman_reference, _solve_bellman_cases,
    explain=_solve_bellman_explain,
    hint="V = r_pi + gamma P_pi V is linear in V: move the V terms to one side",
)

# ----------------------------------------------------------------------- evaluation_sweeps


def _evaluation_sweeps_reference(P_pi, r_pi, gamma, k):
    V = np.zeros(len(r_pi))
    for _ in range(k):
        V = r_pi + gamma * P_pi @ V
    return V


def _evaluation_sweeps_cases():
    lake, maze = FrozenLake("4x4"), _maze()
    lake_pi = policy_dynamics(*_model(lake), np.tile([0.1, 0.2, 0.3, 0.4], (16, 1)),
                              lake.terminal)
    maze_pi = policy_dynamics(*_model(maze), _right_down(25), maze.terminal)
    return [
        Case("no sweep: V_0 = 0", (*maze_pi, 0.9, 0)),
        Case("one sweep", (*maze_pi, 0.9, 1)),
        Case("five sweeps", (*maze_pi, 0.9, 5)),
        Case("FrozenLake, 30 sweeps at gamma 0.99", (*lake_pi, 0.99, 30)),
    ]


def _gauss_seidel_evaluation(P_pi, r_pi, gamma, k):
    V = np.zeros(len(r_pi))
    for _ in range(k):
        for s in range(len(V)):
            V[s] = r_pi[s] + gamma * P_pi[s] @ V
    return V


def _evaluation_sweeps_explain(case, got, expected):
    P_pi, r_pi, gamma, k = case.args
    ref = _evaluation_sweeps_reference
    variants = [
        ("one sweep too many: V_0 = 0 and each sweep adds one step of reward, so k sweeps "
         "give V_k", ref(P_pi, r_pi, gamma, k + 1)),
        ("one sweep too few: k sweeps from V_0 = 0 give V_k (V_1 = r_pi)",
         ref(P_pi, r_pi, gamma, max(k - 1, 0))),
        ("you updated V in place, state by state: a synchronous sweep computes every new value "
         "from the *old* V", _gauss_seidel_evaluation(P_pi, r_pi, gamma, k)),
        ("P_pi is used transposed: the new V(s) averages V over the states that *follow* s",
         ref(P_pi.T, r_pi, gamma, k)),
    ]
    return _first_match(got, variants)


register(
    "evaluation_sweeps", _evaluation_sweeps_reference, _evaluation_sweeps_cases,
    explain=_evaluation_sweeps_explain,
    hint="start from V = 0; each sweep replaces the whole V by the right-hand side of the "
         "Bellman equation, computed from the previous V",
)

# ------------------------------------------------------------------------------- q_from_v


def _q_from_v_cases():
    P, R, terminal = _three_state_mdp()
    lake, maze = FrozenLake("4x4"), _maze()
    V_lake = np.where(lake.terminal, 0.0, np.linspace(0.1, 0.9, 16))
    return [
        Case("three-state MDP at V*", (P, R, np.array([1.8, 2.0, 0.0]), 0.9, terminal)),
        Case("FrozenLake 4x4, some V", (*_model(lake), V_lake, 0.95, lake.terminal)),
        Case("maze, V nonzero at the terminal cells (read it as 0)",
             (*_model(maze), np.linspace(-1, 1, 25), 0.9, maze.terminal)),
    ]


def _q_from_v_explain(case, got, expected):
    P, R, V, gamma, terminal = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return f"Q has one value per (state, action): shape {expected.shape}"
    leak = _terminal_leak(got, terminal)
    if leak:
        return leak
    raw = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :]) * ~terminal[:, None]
    variants = [
        ("you did not discount: the next state's value is weighted by gamma",
         q_from_v(P, R, V, 1.0, terminal)),
        ("read V as 0 at terminal states: nothing is collected after the episode ends, "
         "whatever V holds there", raw),
        ("the reward belongs inside the expectation: sum_s' P[s, a, s'] (R[s, a, s'] + gamma "
         "V[s']), not R summed without its probabilities",
         (R.sum(axis=2) + gamma * P @ np.where(terminal, 0.0, V)) * ~terminal[:, None]),
    ]
    return _first_match(got, variants)


register(
    "q_from_v", q_from_v, _q_from_v_cases, explain=_q_from_v_explain,
    hint="the value of (s, a) is the expected reward of the transition plus the discounted value "
         "of where it lands; nothing comes after a terminal state",
)

# ------------------------------------------------------------------------ expected_steps


def _expected_steps_reference(P, policy, terminal):
    P_pi, _ = policy_dynamics(P, np.zeros(P.shape[:2]), policy, terminal)
    ones = (~np.asarray(terminal)).astype(float)
    return np.linalg.solve(np.eye(len(ones)) - P_pi, ones)


def _expected_steps_cases():
    P3, _, T3 = _three_state_mdp()
    lake, maze, grid = FrozenLake("4x4"), _maze(), GridWorld(size=4)
    return [
        Case("three-state MDP, 50/50 policy", (P3, np.full((3, 2), 0.5), T3)),
        Case("4x4 open grid, uniform policy", (grid.P, np.full((16, 4), 0.25), grid.terminal)),
        Case("FrozenLake 4x4, uniform policy", (lake.P, np.full((16, 4), 0.25), lake.terminal)),
        Case("maze, RIGHT or DOWN", (maze.P, _right_down(25), maze.terminal)),
    ]


def _expected_steps_explain(case, got, expected):
    P, policy, terminal = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return f"one expected length per state, shape {expected.shape}"
    if np.abs(got[terminal]).max(initial=0) > 1e-9:
        return "from a terminal state the episode is already over: 0 steps to go"
    if np.allclose(got, 0):
        return "each step before the end counts 1: that is the 'reward' of every transition"
    nonterminal = ~terminal
    variants = [
        ("off by one: the step that *enters* the terminal state counts too",
         np.where(nonterminal, expected - 1, 0.0)),
        ("with gamma < 1 you get a discounted count; count every step (gamma = 1)",
         _discounted_steps(P, policy, terminal, 0.99)),
    ]
    return _first_match(got, variants)


def _discounted_steps(P, policy, terminal, gamma):
    P_pi, _ = policy_dynamics(P, np.zeros(P.shape[:2]), policy, terminal)
    ones = (~np.asarray(terminal)).astype(float)
    return np.linalg.solve(np.eye(len(ones)) - gamma * P_pi, ones)


register(
    "expected_steps", _expected_steps_reference, _expected_steps_cases,
    explain=_expected_steps_explain,
    hint="an episode's length is a return: reward 1 per step, no discount, nothing after the end",
)

# ------------------------------------------------------------------------- q_evaluation


def _q_evaluation_reference(P, R, policy, gamma, terminal):
    V = policy_evaluation_exact(P, R, policy, gamma, terminal)
    return q_from_v(P, R, V, gamma, terminal)


def _q_evaluation_cases():
    P3, R3, T3 = _three_state_mdp()
    lake, maze = FrozenLake("4x4"), _maze()
    varied = np.random.default_rng(3).dirichlet(np.ones(4), size=16)  # differs state to state
    return [
        Case("three-state MDP, a different policy in each state, gamma 0.9",
             (P3, R3, np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]), 0.9, T3)),
        Case("FrozenLake 4x4, a random policy per state, gamma 0.95",
             (*_model(lake), varied, 0.95, lake.terminal)),
        Case("maze, RIGHT or DOWN, gamma 0.9", (*_model(maze), _right_down(25), 0.9,
                                                maze.terminal)),
    ]


def _q_evaluation_explain(case, got, expected):
    P, R, policy, gamma, terminal = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return f"Q^pi has one value per (state, action): shape {expected.shape}"
    leak = _terminal_leak(got, terminal)
    if leak:
        return leak
    V_star = value_iteration(P, R, gamma, terminal)[0]
    same_state = _q_with_next_action_at(P, R, policy, gamma, terminal)
    variants = [
        ("those are the optimal values Q*: the next action comes from pi, averaged, not "
         "maximised", q_from_v(P, R, V_star, gamma, terminal)),
        ("the next action is drawn in the *next* state s', with pi(a'|s'), not with pi(.|s)",
         same_state),
    ]
    return _first_match(got, variants)


def _q_with_next_action_at(P, R, policy, gamma, terminal):
    """The mistake of weighting Q(s', a') by pi(a'|s) instead of pi(a'|s')."""
    S, A = policy.shape
    r = np.einsum("sat,sat->sa", P, R) * ~terminal[:, None]
    live = P * ~terminal[None, None, :]
    M = np.einsum("sat,sb->satb", live, policy).reshape(S * A, S * A)
    with np.errstate(all="ignore"):
        try:
            Q = np.linalg.solve(np.eye(S * A) - gamma * M, r.ravel()).reshape(S, A)
        except np.linalg.LinAlgError:
            return np.full((S, A), np.nan)
    return Q * ~terminal[:, None]


register(
    "q_evaluation", _q_evaluation_reference, _q_evaluation_cases,
    explain=_q_evaluation_explain,
    # "without computing V first": the answer solves over (s, a) pairs itself
    forbid=(policy_evaluation_exact, policy_evaluation, policy_dynamics, q_from_v),
    hint="treat each (state, action) pair as a state of its own: it pays its expected reward, "
         "then moves to (s', a') with P(s'|s, a) pi(a'|s'); the system has S*A unknowns",
)

# ------------------------------------------------------------------ discounted_occupancy


def _occupancy_reference(P, policy, terminal, start, gamma):
    P_pi, _ = policy_dynamics(P, np.zeros(P.shape[:2]), policy, terminal)
    start = np.where(terminal, 0.0, start)
    return np.linalg.solve(np.eye(len(start)) - gamma * P_pi.T, start)


def _occupancy_cases():
    P3, _, T3 = _three_state_mdp()
    lake, maze = FrozenLake("4x4"), _maze()
    return [
        Case("three-state MDP from state 0, gamma 0.9",
             (P3, np.tile([0.7, 0.3], (3, 1)), T3, np.array([1.0, 0.0, 0.0]), 0.9)),
        Case("FrozenLake 4x4, uniform, gamma 0.95",
             (lake.P, np.full((16, 4), 0.25), lake.terminal, lake.start, 0.95)),
        Case("maze, RIGHT or DOWN, start spread over two cells, gamma 0.9",
             (maze.P, _right_down(25), maze.terminal,
              np.eye(25)[0] * 0.5 + np.eye(25)[5] * 0.5, 0.9)),
    ]


def _occupancy_explain(case, got, expected):
    P, policy, terminal, start, gamma = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return f"one (discounted) visit count per state, shape {expected.shape}"
    P_pi, _ = policy_dynamics(P, np.zeros(P.shape[:2]), policy, terminal)
    I = np.eye(len(start))
    full = np.einsum("sa,sat->st", policy, P)
    variants = [
        ("that is normalised by (1 - gamma); this exercise asks for the plain discounted visit "
         "counts, sum_t gamma^t Pr(s_t = s)", (1 - gamma) * expected),
        ("P_pi is used untransposed: probability mass flows *from* s to s', so "
         "d = start + gamma P_pi^T d", np.linalg.solve(I - gamma * P_pi, start)),
        ("the start counts at t = 0 with weight gamma^0 = 1: d includes the start "
         "distribution itself", expected - start),
        ("terminal states end the episode: no time is spent in them (and nothing flows on)",
         np.linalg.lstsq(I - gamma * full.T, start, rcond=None)[0]),
    ]
    return _first_match(got, variants)


register(
    "discounted_occupancy", _occupancy_reference, _occupancy_cases,
    explain=_occupancy_explain,
    hint="sum over t of gamma^t times the distribution of s_t; that distribution evolves by "
         "one step of P_pi each time, and the sum has a closed form like V's",
)

# ------------------------------------------------------------- start_value_from_occupancy


def _start_value_reference(P, R, policy, terminal, start, gamma):
    return float(np.asarray(start) @ policy_evaluation_exact(P, R, policy, gamma, terminal))


def _start_value_cases():
    return [Case(c.label, (c.args[0], _occupancy_rewards(c), *c.args[1:])) for c in
            _occupancy_cases()]


def _occupancy_rewards(case):
    """The reward table that goes with each occupancy case's model."""
    P = case.args[0]
    if P.shape[0] == 3:
        return _three_state_mdp()[1]
    return (FrozenLake("4x4") if P.shape[0] == 16 else _maze()).R


def _start_value_explain(case, got, expected):
    P, R, policy, terminal, start, gamma = case.args
    if np.ndim(got) != 0:
        return "return one number: the expected discounted return from the start distribution"
    d = _occupancy_reference(P, policy, terminal, start, gamma)
    r_full = np.einsum("sat,sat->sa", P, R)
    variants = [
        ("weight the occupancy by r_pi(s) = sum_a pi(a|s) sum_s' P R, the expected reward of "
         "a step from s; not by the reward of one action", float(d @ (r_full[:, 0] * ~terminal))),
        ("that is (1 - gamma) d . r_pi: the plain occupancy needs no normalisation here",
         float((1 - gamma) * d @ ((policy * r_full).sum(axis=1) * ~terminal))),
    ]
    return _first_match(np.atleast_1d(float(got)), [(m, np.atleast_1d(v)) for m, v in variants])


register(
    "start_value_from_occupancy", _start_value_reference, _start_value_cases,
    compare=lambda got, expected: _scalar_compare(got, expected), explain=_start_value_explain,
    # the point is the identity: the start's value comes from the occupancy, not from V
    forbid=(policy_evaluation_exact, policy_evaluation, q_from_v),
    hint="the start's value is the expected reward per step, weighted by how much discounted "
         "time the policy spends in each state",
)

# ------------------------------------------------------------------ goal_value_question

_GOAL_CHOICES = {
    "a": "a bug: the goal should be worth +1",
    "b": ("the +1 is paid by the transition *into* G and counted in the values of the states "
          "before it; V(s) is what is still to come from s, and after G nothing comes"),
    "c": "gamma discounts the +1 to 0",
    "d": "rewards are only paid on leaving a state, and nobody leaves G",
}


def _goal_value_reference():
    return "b"


def _choice_compare(got, expected):
    if got is None:
        return "not answered yet: set the answer to one letter"
    if not isinstance(got, str) or got.strip().lower() not in _GOAL_CHOICES:
        return f"answer with one of the letters {', '.join(_GOAL_CHOICES)}, got {got!r}"
    return None if got.strip().lower() == expected else "not that one"


def _goal_value_explain(case, got, expected):
    why = {
        "a": ("no: V(G) = 0 is the Bellman equation's answer, since no reward follows a terminal "
              "state; a +1 there would be counted twice"),
        "c": "no: gamma scales rewards that come later; the +1 comes on the step into G",
        "d": ("no: here a reward belongs to a transition (s, a, s'), and the +1 is paid on the "
              "step that enters G"),
    }
    return why.get(str(got).strip().lower()) if isinstance(got, str) else None


register(
    "goal_value_question", _goal_value_reference, [Case("why is V(goal) = 0?")],
    compare=_choice_compare, explain=_goal_value_explain,
    hint="where in the return G_t = r_t + gamma r_{t+1} + ... does the goal's +1 appear, and "
         "for which states t?",
)

# ================================================================ lesson 03: dynamic programming


def _sb_grid():
    """Sutton & Barto's example 4.1: 4x4, terminal corners, -1 per step (entering a corner too)."""
    return GridWorld(layout=["GS..", "....", "....", "...G"], step_reward=-1.0, goal_reward=-1.0)


def _not_optimal(policy, Q, terminal, tol=1e-8) -> str | None:
    """Why ``policy [S]`` is not greedy with respect to ``Q [S, A]`` (None if it is)."""
    policy = np.asarray(policy)
    if policy.shape != (Q.shape[0],):
        return f"expected one action per state, shape ({Q.shape[0]},), got {policy.shape}"
    if policy.dtype.kind not in "iu":
        return f"expected integer actions, got dtype {policy.dtype}"
    if policy.min() < 0 or policy.max() >= Q.shape[1]:
        return f"actions must be in [0, {Q.shape[1]}), got {policy.min()}..{policy.max()}"
    chosen = Q[np.arange(len(policy)), policy]
    worse = np.flatnonzero(~terminal & (chosen < Q.max(axis=1) - tol))
    if worse.size:
        s = worse[0]
        return (f"in state {s} you chose action {policy[s]} with Q = {chosen[s]:.4f}, but action "
                f"{int(Q[s].argmax())} has Q = {Q[s].max():.4f}")
    return None


class _Remember:
    """Stores what a reference computed for the compare that follows it (check runs the
    reference, then the reader's function, then compare, one case at a time)."""

    def __init__(self):
        self.Q = self.terminal = None


# -------------------------------------------------------------------------- bellman_backup


def _bellman_backup_cases():
    P, R, terminal = _three_state_mdp()
    lake, sb = FrozenLake("4x4"), _sb_grid()
    return [
        Case("three-state MDP from V = 0", (P, R, np.zeros(3), 0.9, terminal)),
        Case("three-state MDP from V = [1, 2, 0]", (P, R, np.array([1.0, 2.0, 0.0]), 0.9, terminal)),
        Case("FrozenLake 4x4 from V = 0", (*_model(lake), np.zeros(16), 0.9, lake.terminal)),
        Case("FrozenLake 4x4, V nonzero at holes and goal (read as 0)",
             (*_model(lake), np.linspace(0, 1, 16), 0.9, lake.terminal)),
        Case("Sutton & Barto's 4x4 grid, gamma 1", (*_model(sb), -np.arange(16.0), 1.0,
                                                    sb.terminal)),
    ]


def _bellman_backup_explain(case, got, expected):
    P, R, V, gamma, terminal = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape == P.shape[:2]:
        return "you returned Q [S, A]: the optimality backup takes the max over actions"
    leak = _terminal_leak(got, terminal)
    if leak:
        return leak
    Q = q_from_v(P, R, V, gamma, terminal)
    raw = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :]).max(axis=1) * ~terminal
    variants = [
        ("you did not discount: the next state's value is weighted by gamma",
         bellman_optimality_backup(P, R, V, 1.0, terminal)),
        ("you averaged over actions (that evaluates the uniform policy): value iteration takes "
         "the best action, the max", Q.mean(axis=1)),
        ("min instead of max: the optimality backup keeps the *best* action's value",
         Q.min(axis=1)),
        ("read V as 0 at terminal states: nothing is collected after the episode ends", raw),
    ]
    return _first_match(got, variants)


register(
    "bellman_backup", bellman_optimality_backup, _bellman_backup_cases,
    explain=_bellman_backup_explain, forbid=(q_from_v,),
    hint="write the action values from P, R and V yourself (expected reward plus gamma times the "
         "next value, read as 0 at terminal states), then keep the best action's; terminal "
         "states stay at 0",
)

# --------------------------------------------------------------------------- greedy_policy


def _greedy_cases():
    P, R, terminal = _three_state_mdp()
    lake, sb = FrozenLake("4x4"), _sb_grid()
    V = value_iteration(*_model(lake), 0.99, lake.terminal)[0]
    V_sb = policy_evaluation_exact(*_model(sb), np.full((16, 4), 0.25), 1.0, sb.terminal)
    return [
        Case("three-state MDP at V*", (P, R, np.array([1.8, 2.0, 0.0]), 0.9, terminal)),
        Case("FrozenLake 4x4 at V* (gamma 0.99)", (*_model(lake), V, 0.99, lake.terminal)),
        Case("FrozenLake 4x4 at V = 0 .. 1", (*_model(lake), np.linspace(0, 1, 16), 0.9,
                                              lake.terminal)),
        Case("Sutton & Barto's grid at V of the random policy (ties)",
             (*_model(sb), V_sb, 1.0, sb.terminal)),
    ]


_greedy_memory = _Remember()


def _greedy_ref(P, R, V, gamma, terminal):
    Q = q_from_v(P, R, V, gamma, terminal)
    _greedy_memory.Q, _greedy_memory.terminal = Q, np.asarray(terminal)
    return np.argmax(Q, axis=1)


def _greedy_cmp(got, expected):
    """Any action attaining the maximum passes (ties may go either way)."""
    return _not_optimal(got, _greedy_memory.Q, _greedy_memory.terminal)


def _greedy_explain(case, got, expected):
    P, R, V, gamma, terminal = case.args
    Q = q_from_v(P, R, V, gamma, terminal)
    got = np.asarray(got)
    if got.shape == (Q.shape[1],):
        return "one action per state: the argmax runs over actions, axis=1"
    if got.shape != expected.shape:
        return None
    if got.dtype.kind == "f" and np.allclose(got, Q.max(axis=1)):
        return "you returned the best values (max); the policy is the best *action* (argmax)"
    if got.dtype.kind in "iu" and got.min() >= 0 and got.max() < Q.shape[1] and \
            _not_optimal(np.argmin(Q, axis=1), Q, terminal) and \
            np.array_equal(got[~terminal], np.argmin(Q, axis=1)[~terminal]):
        return "you took the argmin: the greedy policy picks the action with the largest Q"
    return None


register(
    "greedy_policy", _greedy_ref, _greedy_cases, compare=_greedy_cmp, explain=_greedy_explain,
    forbid=(q_from_v,),
    hint="score every action through the model (the slips included), then pick the best",
)

# ------------------------------------------------------------------------ policy_iteration


def _optimal_pair_cases():
    P, R, terminal = _three_state_mdp()
    lake, big = FrozenLake("4x4"), FrozenLake("8x8")
    return [
        Case("three-state MDP, gamma 0.9", (P, R, 0.9, terminal)),
        Case("three-state MDP, gamma 0.4", (P, R, 0.4, terminal)),
        Case("FrozenLake 4x4, gamma 0.99", (*_model(lake), 0.99, lake.terminal)),
        Case("FrozenLake 8x8, gamma 0.9", (*_model(big), 0.9, big.terminal)),
    ]


_optimal_memory = _Remember()


def _optimal_pair_reference(P, R, gamma, terminal):
    V, policy = value_iteration(P, R, gamma, terminal)
    _optimal_memory.Q = q_from_v(P, R, V, gamma, terminal)
    _optimal_memory.terminal = np.asarray(terminal)
    return V, policy


def _optimal_pair_compare(got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (V, policy)"
    reason = default_compare(got[0], expected[0], rtol=1e-6, atol=1e-6)
    if reason:
        return f"V: {reason}"
    reason = _not_optimal(got[1], _optimal_memory.Q, _optimal_memory.terminal, tol=1e-6)
    return f"policy: {reason}" if reason else None


def _one_improvement(P, R, gamma, terminal):
    """Evaluate the all-zeros policy, improve once, evaluate the result."""
    policy = np.zeros(P.shape[0], dtype=int)
    V = policy_evaluation_exact(P, R, policy, gamma, terminal)
    policy = np.argmax(q_from_v(P, R, V, gamma, terminal), axis=1)
    return policy_evaluation_exact(P, R, policy, gamma, terminal), policy


def _policy_iteration_explain(case, got, expected):
    P, R, gamma, terminal = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    V, policy = got
    try:
        V = np.asarray(V, dtype=float)
    except (TypeError, ValueError):
        return None
    if V.shape != expected[0].shape:
        return None
    leak = _terminal_leak(V, terminal)
    if leak:
        return leak
    if _same(V, _one_improvement(P, R, gamma, terminal)[0], atol=1e-6):
        return ("that is one improvement step: repeat evaluate -> improve until no action "
                "changes")
    Q_star = q_from_v(P, R, expected[0], gamma, terminal)
    if _not_optimal(policy, Q_star, terminal, tol=1e-6) is None:
        return ("your policy is optimal but V is not its value: return the evaluation of the "
                "final policy")
    return None


def _policy_iteration_cases():
    big = FrozenLake("8x8")
    # at these discounts several actions tie up to rounding noise on the 8x8 lake: a policy
    # iteration that switches on any difference (plain np.argmax) cycles between them
    return _optimal_pair_cases() + [
        Case(f"FrozenLake 8x8, gamma {gamma} (tied actions)", (*_model(big), gamma, big.terminal))
        for gamma in (0.95, 0.99)]


class TimeLimit(Exception):
    """An answer ran past the exercise's time limit (it does not stop)."""


# seconds one case of policy iteration may take; a right answer needs well under 1 s
POLICY_ITERATION_SECONDS = 5.0


def _within_time_limit(fn, *args, **kwargs):
    """Run an answer with a wall-clock limit, so that a loop that never ends fails the case
    instead of hanging the notebook. Works by a line tracer (any platform, any thread); the
    reference runs untraced."""
    if fn is _optimal_pair_reference:
        return fn(*args, **kwargs)
    limit = POLICY_ITERATION_SECONDS
    deadline = time.perf_counter() + limit

    def tracer(frame, event, arg):
        if time.perf_counter() > deadline:
            raise TimeLimit(f"still running after {limit:g} s")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.settrace(previous)


def _policy_iteration_explain_error(case, err):
    if isinstance(err, TimeLimit):
        return ("your policy iteration does not stop: its policy keeps flipping between actions "
                "whose values are tied up to rounding noise (np.argmax picks whichever is "
                "larger by 1e-16 this time). Change a state's action only when another is better "
                "by more than 1e-9, and stop when no action changes")
    return None


register(
    "policy_iteration", _optimal_pair_reference, _policy_iteration_cases,
    compare=_optimal_pair_compare, explain=_policy_iteration_explain,
    call=_within_time_limit, explain_error=_policy_iteration_explain_error,
    hint="evaluate exactly (lesson 02), improve greedily, and stop when the policy is stable; "
         "switch an action only when another is better by more than rounding noise",
)

# ------------------------------------------------------------------------- value_iteration


def _value_iteration_explain(case, got, expected):
    P, R, gamma, terminal = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    try:
        V = np.asarray(got[0], dtype=float)
    except (TypeError, ValueError):
        return None
    if V.shape != expected[0].shape:
        return None
    leak = _terminal_leak(V, terminal)
    if leak:
        return leak
    Q = q_from_v(P, R, expected[0], gamma, terminal)
    if np.allclose(V, expected[0], atol=1e-6):
        if _not_optimal(got[1], Q, terminal, tol=1e-6):
            return "V is right but the policy is not greedy: take argmax_a Q(s, a) of the final V"
        return None
    if np.all(V <= expected[0] + 1e-9) and np.allclose(V, expected[0], atol=0.1):
        return "close but short of V*: you stopped too early; sweep until the largest change < 1e-10"
    return None


register(
    "value_iteration", _optimal_pair_reference, _optimal_pair_cases,
    compare=_optimal_pair_compare, explain=_value_iteration_explain,
    hint="apply the backup to the whole V again and again from V = 0 until it stops changing, "
         "then act greedily on the result",
)

# ---------------------------------------------------------------- value_iteration_in_place


def _in_place_reference(P, R, gamma, terminal, tol=1e-10):
    r = np.einsum("sat,sat->sa", P, R)
    V = np.zeros(P.shape[0])
    live = np.flatnonzero(~np.asarray(terminal))
    sweeps = 0
    while True:
        sweeps += 1
        change = 0.0
        for s in live:
            new = np.max(r[s] + gamma * P[s] @ V)
            change = max(change, abs(new - V[s]))
            V[s] = new
        if change < tol:
            return V, sweeps


def _in_place_cases():
    P, R, terminal = _three_state_mdp()
    lake, big, sb = FrozenLake("4x4"), FrozenLake("8x8"), _sb_grid()
    return [
        Case("three-state MDP, gamma 0.9", (P, R, 0.9, terminal)),
        Case("FrozenLake 4x4, gamma 0.99", (*_model(lake), 0.99, lake.terminal)),
        Case("FrozenLake 8x8, gamma 0.99", (*_model(big), 0.99, big.terminal)),
        Case("Sutton & Barto's grid, gamma 1", (*_model(sb), 1.0, sb.terminal)),
    ]


def _in_place_compare(got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (V, sweeps)"
    reason = default_compare(got[0], expected[0], rtol=1e-6, atol=1e-6)
    if reason:
        return f"V: {reason}"
    if not isinstance(got[1], (int, np.integer)) or got[1] != expected[1]:
        return f"sweeps: expected {expected[1]}, got {got[1]!r}"
    return None


def _sweeps_in_order(P, R, gamma, terminal, order, tol=1e-10):
    r = np.einsum("sat,sat->sa", P, R)
    V = np.zeros(P.shape[0])
    live = [s for s in order if not terminal[s]]
    sweeps = 0
    while True:
        sweeps += 1
        change = 0.0
        for s in live:
            new = np.max(r[s] + gamma * P[s] @ V)
            change = max(change, abs(new - V[s]))
            V[s] = new
        if change < tol:
            return sweeps


def _in_place_explain(case, got, expected):
    P, R, gamma, terminal = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    try:
        V = np.asarray(got[0], dtype=float)
    except (TypeError, ValueError):
        return None
    leak = _terminal_leak(V, terminal)
    if leak:
        return leak
    if not np.allclose(V, expected[0], atol=1e-6):
        return None
    sweeps = got[1]
    synchronous = len(value_iteration(P, R, gamma, terminal, return_history=True)[2])
    backwards = _sweeps_in_order(P, R, gamma, terminal, range(P.shape[0] - 1, -1, -1))
    if sweeps == synchronous and synchronous != expected[1]:
        return (f"{sweeps} sweeps is synchronous value iteration's count: write each new V[s] "
                "into V at once, so that the states after s in the sweep already use it")
    if sweeps == backwards and backwards != expected[1]:
        return "sweep the states in index order, 0, 1, ..., S-1"
    if sweeps in (expected[1] - 1, expected[1] + 1):
        return ("off by one: count every sweep, the last one (whose largest change fell below "
                "tol) included")
    return None


register(
    "value_iteration_in_place", _in_place_reference, _in_place_cases,
    compare=_in_place_compare, explain=_in_place_explain,
    hint="the same backup, but a state's new value replaces the old one immediately, so the "
         "states swept after it already see it",
)

# ---------------------------------------------------------------- modified_policy_iteration


def _mpi_reference(P, R, gamma, terminal, k, rounds, improve_first=True, extra=0,
                   max_inside=False, restart=False, plain_argmax=False, sweep_by_q=False):
    r = np.einsum("sat,sat->sa", P, R) * ~np.asarray(terminal)[:, None]
    live_P = P * ~np.asarray(terminal)[None, None, :]
    V = np.zeros(P.shape[0])
    policy = np.zeros(P.shape[0], dtype=int)
    for _ in range(rounds):
        if improve_first:
            Q = q_from_v(P, R, V, gamma, terminal)
            policy = np.argmax(Q, axis=1) if plain_argmax else greedy(Q)
        if restart:
            V = np.zeros_like(V)
        rows = np.arange(P.shape[0])
        for _ in range(k + extra):
            Q = q_from_v(P, R, V, gamma, terminal) if sweep_by_q else r + gamma * live_P @ V
            V = Q.max(axis=1) if max_inside else Q[rows, policy]
        if not improve_first:
            policy = greedy(q_from_v(P, R, V, gamma, terminal))
    return V


def _mpi_cases():
    P, R, terminal = _three_state_mdp()
    lake, big = FrozenLake("4x4"), FrozenLake("8x8")
    return [
        Case("three-state MDP, k = 2, 2 rounds", (P, R, 0.9, terminal, 2, 2)),
        Case("FrozenLake 4x4, k = 3, 4 rounds", (*_model(lake), 0.99, lake.terminal, 3, 4)),
        Case("FrozenLake 4x4, k = 10, 3 rounds", (*_model(lake), 0.99, lake.terminal, 10, 3)),
        Case("FrozenLake 8x8, k = 5, 6 rounds", (*_model(big), 0.99, big.terminal, 5, 6)),
    ]


def _mpi_explain(case, got, expected):
    P, R, gamma, terminal, k, rounds = case.args
    variants = [
        ("improve first: each round starts with the greedy policy of the current V, then "
         "evaluates it", _mpi_reference(*case.args, improve_first=False)),
        ("off by one: k evaluation sweeps per round, not k + 1",
         _mpi_reference(*case.args, extra=1)),
        ("off by one: k evaluation sweeps per round, not k - 1",
         _mpi_reference(*case.args, extra=-1)),
        ("the sweeps follow the round's fixed policy; a max inside them is value iteration",
         _mpi_reference(*case.args, max_inside=True)),
        ("each round's sweeps start from the current V, not from 0 (that is what makes a few "
         "sweeps enough)", _mpi_reference(*case.args, restart=True)),
        ("ties: you improved with np.argmax, which picks whichever of two tied actions is larger "
         "by rounding noise; after a few rounds that changes V. Improve with rc.greedy, which "
         "treats values within 1e-9 as tied and takes the lowest index, as the reference does",
         _mpi_reference(*case.args, plain_argmax=True)),
    ]
    message = _first_match(got, variants)
    if message:
        return message
    # np.argmax follows rounding noise, so the same answer computed another way breaks the
    # near-ties differently: try the usual way of writing the sweep too
    return _first_match(got, [(variants[-1][0], _mpi_reference(*case.args, plain_argmax=True,
                                                                sweep_by_q=True))])


register(
    "modified_policy_iteration", _mpi_reference, _mpi_cases, explain=_mpi_explain,
    hint="policy iteration whose evaluation is cut short: a few sweeps of the fixed policy, "
         "carried over from round to round; improve with rc.greedy so ties go the same way",
)

# ------------------------------------------------------------------ questions of exercise 1, 2


def _in_place_saving_reference():
    big = FrozenLake("8x8")
    synchronous = len(value_iteration(big.P, big.R, 0.99, big.terminal, return_history=True)[2])
    return synchronous - _in_place_reference(big.P, big.R, 0.99, big.terminal)[1]


def _count_compare(got, expected):
    if got is None:
        return "not answered yet: set the answer to a whole number"
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        return f"answer with a whole number of sweeps, got {got!r}"
    return None if int(got) == int(expected) else f"not {int(got)}"


def _in_place_saving_explain(case, got, expected):
    if isinstance(got, (int, np.integer)) and int(got) == -int(expected):
        return "the other way round: synchronous sweeps minus in-place sweeps (a positive number)"
    return None


register(
    "in_place_saving_question", _in_place_saving_reference,
    [Case("FrozenLake 8x8, gamma 0.99: how many fewer sweeps in place?")],
    compare=_count_compare, explain=_in_place_saving_explain,
    hint="count both: the reference's history has one entry per synchronous sweep, and your "
         "function returns its own count",
)

_K1_CHOICES = {
    "a": "policy iteration: the policy is evaluated exactly each round",
    "b": ("value iteration: one sweep of the greedy policy of V is max_a Q(V), the optimality "
          "backup, so n rounds are n sweeps of value iteration"),
    "c": "policy evaluation of the starting policy, which is never improved",
    "d": "nothing that converges: one sweep is too little to evaluate a policy",
}


def _k1_compare(got, expected):
    if got is None:
        return "not answered yet: set the answer to one letter"
    if not isinstance(got, str) or got.strip().lower() not in _K1_CHOICES:
        return f"answer with one of the letters {', '.join(_K1_CHOICES)}, got {got!r}"
    return None if got.strip().lower() == expected else "not that one"


def _k1_explain(case, got, expected):
    why = {
        "a": ("no: with k = 1 the policy is evaluated by a single sweep, far from exactly; "
              "policy iteration is the other end, k -> infinity"),
        "c": "no: every round starts by improving, taking the greedy policy of the current V",
        "d": ("no: improving then sweeping once is exactly the optimality backup, which "
              "converges (it is a gamma-contraction)"),
    }
    return why.get(str(got).strip().lower()) if isinstance(got, str) else None


register(
    "mpi_k1_question", lambda: "b", [Case("modified policy iteration with k = 1 is ...")],
    compare=_k1_compare, explain=_k1_explain,
    hint="write out one round with k = 1: improve (greedy of V), then one sweep of that policy",
)

# --------------------------------------------------------------------------- finite_horizon


def _finite_horizon_reference(P, R, terminal, horizon):
    S = P.shape[0]
    V = np.zeros((horizon + 1, S))
    policy = np.zeros((horizon, S), dtype=np.int64)
    for h in range(1, horizon + 1):
        Q = q_from_v(P, R, V[h - 1], 1.0, terminal)
        V[h], policy[h - 1] = Q.max(axis=1), Q.argmax(axis=1)
    return V, policy


_horizon_memory = _Remember()


def _finite_horizon_reference_remembering(P, R, terminal, horizon):
    V, policy = _finite_horizon_reference(P, R, terminal, horizon)
    _horizon_memory.Q = [q_from_v(P, R, V[h - 1], 1.0, terminal) for h in range(1, horizon + 1)]
    _horizon_memory.terminal = np.asarray(terminal)
    return V, policy


def _finite_horizon_cases():
    P, R, terminal = _three_state_mdp()
    lake = FrozenLake("4x4")
    return [
        Case("three-state MDP, 3 steps", (P, R, terminal, 3)),
        Case("FrozenLake 4x4, 10 steps", (*_model(lake), lake.terminal, 10)),
        Case("FrozenLake 4x4, 100 steps", (*_model(lake), lake.terminal, 100)),
    ]


def _finite_horizon_compare(got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (V, policy)"
    reason = default_compare(got[0], expected[0], rtol=1e-9, atol=1e-9)
    if reason:
        return f"V: {reason}"
    policy = np.asarray(got[1])
    if policy.shape != expected[1].shape:
        return f"policy: expected shape {expected[1].shape} [horizon, S], got {policy.shape}"
    for h, Q in enumerate(_horizon_memory.Q, start=1):
        reason = _not_optimal(policy[h - 1], Q, _horizon_memory.terminal)
        if reason:
            return f"policy[{h - 1}] ({h} steps left): {reason}"
    return None


def _finite_horizon_explain(case, got, expected):
    P, R, terminal, horizon = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    try:
        V = np.asarray(got[0], dtype=float)
    except (TypeError, ValueError):
        return None
    if V.shape == (horizon, P.shape[0]):
        return "V has horizon + 1 rows: V[0] (no step left, all 0) up to V[horizon]"
    if V.shape != expected[0].shape:
        return None
    if np.abs(V[0]).max() > 1e-12:
        return "with no steps left nothing more is collected: V[0] = 0"
    leak = _terminal_leak(V.T, terminal)
    if leak:
        return leak
    discounted = np.zeros_like(V)
    for h in range(1, horizon + 1):
        discounted[h] = bellman_optimality_backup(P, R, discounted[h - 1], 0.99, terminal)
    if _same(V, discounted):
        return ("count every reward fully: a time limit is no discount, gamma = 1 (the time "
                "left is part of the state instead)")
    if not _same(V, expected[0]):
        return None
    policy = np.asarray(got[1])
    shifted = [_not_optimal(policy[h], _horizon_memory.Q[h - 1], terminal)
               for h in range(1, horizon)]
    if policy.shape == expected[1].shape and all(s is None for s in shifted):
        return ("off by one in the policy's index: policy[h - 1] is the action with h steps "
                "left, so policy[0] is the last step's")
    return None


register(
    "finite_horizon", _finite_horizon_reference_remembering, _finite_horizon_cases,
    compare=_finite_horizon_compare, explain=_finite_horizon_explain,
    hint="work backwards from the end: with h steps left, an action is worth its expected "
         "reward plus the best you can do with h - 1 steps left",
)
