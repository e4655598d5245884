"""The exercises of lessons 01-03 (Build-it steps and exercises): each typical wrong answer is
rejected by its checker, with the diagnosis that names the mistake, and every explain branch is
reached. The registry's own sanity (reference passes, a shifted answer fails) is in
tests/test_exercises.py."""

import numpy as np
import pytest
from exercise_checks import accepted, rejected

import rlcourse as rc
from rlcourse.course import exercises

# ================================================================ lesson 01: bandits

def _sa(step):
    """A sample-average update whose step for the pulled arm is ``step(Q, N, a, r)``."""
    def update(Q, N, action, reward):
        Q, N = np.array(Q, dtype=float), np.array(N)
        k = step(Q, N, action, reward)
        N[action] += 1
        Q[action] += k * (reward - Q[action])
        return Q, N
    return update


SAMPLE_AVERAGE_WRONG = {
    "divides by the old count": (
        _sa(lambda Q, N, a, r: 1.0 / N[a]), "before counting this pull"),
    "divides by the old count where it can": (
        _sa(lambda Q, N, a, r: 1.0 / max(N[a], 1)), "divide by the count after this pull"),
    "replaces by the last reward": (_sa(lambda Q, N, a, r: 1.0), "replaced the estimate"),
    "constant step 0.1": (_sa(lambda Q, N, a, r: 0.1), "constant step size"),
    "forgets to count": (
        lambda Q, N, a, r: (_sa(lambda Q, N, a, r: 1.0 / (N[a] + 1))(Q, N, a, r)[0], np.array(N)),
        "N must count this pull"),
    "counts every arm": (
        lambda Q, N, a, r: (_sa(lambda Q, N, a, r: 1.0 / (N[a] + 1))(Q, N, a, r)[0], N + 1),
        "only the pulled arm's count"),
    "updates every arm": (
        lambda Q, N, a, r: (Q + (r - Q) / (N[a] + 1), _sa(lambda *_: 0.0)(Q, N, a, r)[1]),
        "only the pulled arm's estimate"),
    "returns only Q": (lambda Q, N, a, r: _sa(lambda Q, N, a, r: 1 / (N[a] + 1))(Q, N, a, r)[0],
                       "return the pair (Q, N)"),
}


@pytest.mark.parametrize("wrong", SAMPLE_AVERAGE_WRONG, ids=list(SAMPLE_AVERAGE_WRONG))
def test_sample_average_update_rejects(wrong, capsys):
    fn, diagnosis = SAMPLE_AVERAGE_WRONG[wrong]
    assert diagnosis in rejected("sample_average_update", fn, capsys)


def _eg(explore_p, tie="random", shared_coin=False, exclude_greedy=False):
    def actions(Q, epsilon, rng):
        n, k = Q.shape
        is_best = Q == Q.max(axis=1, keepdims=True)
        if tie == "random":
            greedy = np.argmax(rng.random(Q.shape) * is_best, axis=1)
        else:
            greedy = np.argmax(Q, axis=1)
        p = explore_p(epsilon)
        explore = (rng.random() < p) if shared_coin else (rng.random(n) < p)
        explore = np.broadcast_to(explore, (n,))
        if exclude_greedy:
            other = (greedy + 1 + rng.integers(k - 1, size=n)) % k
        else:
            other = rng.integers(k, size=n)
        return np.where(explore, other, greedy)
    return actions


EPSILON_GREEDY_WRONG = {
    "ties to the lowest index": (_eg(lambda e: e, tie="index"), "lowest-index arm"),
    "one coin for all copies": (_eg(lambda e: e, shared_coin=True), "one coin per copy"),
    "exploration skips the greedy arm": (_eg(lambda e: e, exclude_greedy=True),
                                         "exploration skipped the greedy arm"),
    "epsilon flipped": (_eg(lambda e: 1 - e), "probability of exploring"),
    "argmax over axis 0": (lambda Q, epsilon, rng: np.argmax(Q, axis=0), "wrong axis"),
}


@pytest.mark.parametrize("wrong", EPSILON_GREEDY_WRONG, ids=list(EPSILON_GREEDY_WRONG))
def test_epsilon_greedy_actions_rejects(wrong, capsys):
    fn, diagnosis = EPSILON_GREEDY_WRONG[wrong]
    assert diagnosis in rejected("epsilon_greedy_actions", fn, capsys)


def test_epsilon_greedy_actions_accepts_another_correct_use_of_rng(capsys):
    def per_row(Q, epsilon, rng):  # a loop over copies, other draws in another order
        out = []
        for q in Q:
            if rng.random() < epsilon:
                out.append(rng.integers(len(q)))
            else:
                out.append(rng.choice(np.flatnonzero(q == q.max())))
        return np.array(out)

    accepted("epsilon_greedy_actions", per_row, capsys)


def _ucb(bonus, untried=np.inf):
    def scores(Q, N, t, c):
        Q, N = np.asarray(Q, dtype=float), np.asarray(N)
        with np.errstate(all="ignore"):
            return np.where(N > 0, Q + bonus(N, t, c), untried)
    return scores


UCB_WRONG = {
    "untried arms not +inf": (
        lambda Q, N, t, c: Q + c * np.sqrt(np.log(t) / np.maximum(N, 1)), "must score +inf"),
    "no bonus": (_ucb(lambda N, t, c: 0.0), "no exploration bonus"),
    "sqrt(t / N)": (_ucb(lambda N, t, c: c * np.sqrt(t / N)), "logarithm of t"),
    "no square root": (_ucb(lambda N, t, c: c * np.log(t) / N), "take the square root"),
    "c inside the root": (_ucb(lambda N, t, c: np.sqrt(c * np.log(t) / N)),
                          "c multiplies the square root"),
    "log10": (_ucb(lambda N, t, c: c * np.sqrt(np.log10(t) / N)), "natural logarithm"),
    "UCB1's 2 ln t": (_ucb(lambda N, t, c: c * np.sqrt(2 * np.log(t) / N)), "UCB1"),
    "ln(t + 1)": (_ucb(lambda N, t, c: c * np.sqrt(np.log(t + 1) / N)), "not ln(t + 1)"),
    "N + 1": (_ucb(lambda N, t, c: c * np.sqrt(np.log(t) / (N + 1))), "not N + 1"),
    "bonus subtracted": (_ucb(lambda N, t, c: -c * np.sqrt(np.log(t) / N)), "not subtracted"),
}


@pytest.mark.parametrize("wrong", UCB_WRONG, ids=list(UCB_WRONG))
def test_ucb_scores_rejects(wrong, capsys):
    fn, diagnosis = UCB_WRONG[wrong]
    assert diagnosis in rejected("ucb_scores", fn, capsys)


def _gb(step):
    def update(H, action, reward, baseline, alpha):
        H = np.asarray(H, dtype=float)
        onehot = np.eye(H.size)[action]
        with np.errstate(all="ignore"):
            pi = np.exp(H - H.max()) / np.exp(H - H.max()).sum()
            return H + step(H, onehot, pi, reward, baseline, alpha)
    return update


GRADIENT_BANDIT_WRONG = {
    "softmax overflows": (
        lambda H, a, r, b, alpha: H + alpha * (r - b) * (np.eye(H.size)[a]
                                                         - np.exp(H) / np.exp(H).sum()),
        "subtract max(H)"),
    "no baseline": (_gb(lambda H, e, pi, r, b, al: al * r * (e - pi)), "left out the baseline"),
    "sign flipped": (_gb(lambda H, e, pi, r, b, al: -al * (r - b) * (e - pi)), "wrong sign"),
    "only the pulled arm moves": (_gb(lambda H, e, pi, r, b, al: al * (r - b) * e * (1 - pi)),
                                  "the arms you did not pull move too"),
    "preferences instead of pi": (_gb(lambda H, e, pi, r, b, al: al * (r - b) * (e - H)),
                                  "not the preferences H"),
    "baseline added": (_gb(lambda H, e, pi, r, b, al: al * (r + b) * (e - pi)),
                       "(reward - baseline), not (reward + baseline)"),
    "unpulled arms move up": (_gb(lambda H, e, pi, r, b, al: al * (r - b) * (e - pi * (2 * e - 1))),
                              "does not sum to zero"),
}


@pytest.mark.parametrize("wrong", GRADIENT_BANDIT_WRONG, ids=list(GRADIENT_BANDIT_WRONG))
def test_gradient_bandit_update_rejects(wrong, capsys):
    fn, diagnosis = GRADIENT_BANDIT_WRONG[wrong]
    assert diagnosis in rejected("gradient_bandit_update", fn, capsys)


def _regret_parts(means, actions):
    means, actions = np.asarray(means, dtype=float), np.asarray(actions)
    chosen = means[np.arange(means.shape[0]), actions]
    return means, chosen, means.max(axis=1) - chosen


REGRET_WRONG = {
    "per-step, not cumulative": (lambda m, a: _regret_parts(m, a)[2], "running sum"),
    "sign flipped": (lambda m, a: -np.cumsum(_regret_parts(m, a)[2], axis=0), "sign is flipped"),
    "global best": (lambda m, a: np.cumsum(np.max(m) - _regret_parts(m, a)[1], axis=0),
                    "each problem's own best arm"),
    "summed over copies": (lambda m, a: np.cumsum(_regret_parts(m, a)[2], axis=1),
                           "summed over copies"),
    "one total per copy": (lambda m, a: _regret_parts(m, a)[2].sum(axis=0), "shape"),
}


@pytest.mark.parametrize("wrong", REGRET_WRONG, ids=list(REGRET_WRONG))
def test_cumulative_regret_rejects(wrong, capsys):
    fn, diagnosis = REGRET_WRONG[wrong]
    assert diagnosis in rejected("cumulative_regret", fn, capsys)


def _weights(first, rest):
    def weights(alpha, n):
        i = np.arange(1, n + 1)
        return np.concatenate([[first(alpha, n)], rest(alpha, n, i)])
    return weights


RECENCY_WRONG = {
    "power off by one": (_weights(lambda a, n: (1 - a) ** n,
                                  lambda a, n, i: a * (1 - a) ** (n - i + 1)), "off by one"),
    "reversed": (_weights(lambda a, n: (1 - a) ** n, lambda a, n, i: a * (1 - a) ** (i - 1)),
                 "reversed"),
    "sample average": (_weights(lambda a, n: 0.0, lambda a, n, i: np.full(n, 1 / max(n, 1))),
                       "sample average's weights"),
    "initial estimate forgotten": (_weights(lambda a, n: 0.0,
                                            lambda a, n, i: a * (1 - a) ** (n - i)),
                                   "has weight (1 - alpha)^n"),
    "no entry for Q_1": (lambda alpha, n: alpha * (1 - alpha) ** (n - np.arange(1, n + 1)),
                         "n + 1 weights"),
}


@pytest.mark.parametrize("wrong", RECENCY_WRONG, ids=list(RECENCY_WRONG))
def test_recency_weights_rejects(wrong, capsys):
    fn, diagnosis = RECENCY_WRONG[wrong]
    assert diagnosis in rejected("recency_weights", fn, capsys)


def _unbiased(step, trace_all=False, trace_rule=None):
    def update(Q, o, action, reward, alpha):
        Q, o = np.array(Q, dtype=float), np.array(o, dtype=float)
        old = o.copy()
        if trace_all:
            o += alpha * (1 - o)
        elif trace_rule:
            o[action] = trace_rule(o[action], alpha)
        else:
            o[action] += alpha * (1 - o[action])
        with np.errstate(all="ignore"):
            Q[action] += step(alpha, old[action], o[action]) * (reward - Q[action])
        return Q, o
    return update


UNBIASED_WRONG = {
    "plain constant step": (_unbiased(lambda a, old, new: a), "plain constant step"),
    "divides by the old trace": (_unbiased(lambda a, old, new: a / old), "update the trace first"),
    "old trace where it is nonzero": (
        _unbiased(lambda a, old, new: a / old if old > 0 else 1.0), "*after* this pull"),
    "every arm's trace moves": (_unbiased(lambda a, old, new: a / new, trace_all=True),
                                "only the pulled arm's trace"),
    "trace steps by alpha": (_unbiased(lambda a, old, new: a / new,
                                       trace_rule=lambda o, a: o + a), "steps towards 1"),
    "returns only Q": (lambda Q, o, a, r, al: _unbiased(lambda a, old, new: a / new)(Q, o, a, r, al)[0],
                       "return the pair"),
}


@pytest.mark.parametrize("wrong", UNBIASED_WRONG, ids=list(UNBIASED_WRONG))
def test_unbiased_step_update_rejects(wrong, capsys):
    fn, diagnosis = UNBIASED_WRONG[wrong]
    assert diagnosis in rejected("unbiased_step_update", fn, capsys)


def _ts(score, prior=True, agg=np.argmax):
    def actions(sums, counts, z, prior_mean=0.0, prior_var=1.0):
        sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
        precision = 1 / prior_var + counts
        mean = (prior_mean / prior_var + sums) / precision
        with np.errstate(all="ignore"):
            return agg(score(mean, precision, z, sums, counts, prior_mean), axis=-1)
    return actions


THOMPSON_WRONG = {
    "argmin": (_ts(lambda m, p, z, *_: m + z / np.sqrt(p), agg=np.argmin), "argmin"),
    "variance as std": (_ts(lambda m, p, z, *_: m + z / p), "posterior variance"),
    "std grows with pulls": (_ts(lambda m, p, z, *_: m + z * np.sqrt(p)), "more* uncertain"),
    "sample average, no shrinkage": (
        _ts(lambda m, p, z, s, c, m0: np.where(c > 0, s / np.where(c > 0, c, 1), m0)
            + z / np.sqrt(p)), "shrinks the sample average"),
    "prior mean ignored": (_ts(lambda m, p, z, s, c, m0: s / p + z / np.sqrt(p)),
                           "prior mean enters"),
    "no sample": (_ts(lambda m, p, z, *_: m), "add z times the posterior std"),
    "prior variance ignored": (_ts(lambda m, p, z, s, c, m0: (m0 + s) / (1 + c)
                                   + z / np.sqrt(1 + c)), "1/prior_var + counts"),
    "argmax over axis 0": (lambda s, c, z, prior_mean=0.0, prior_var=1.0: np.argmax(z, axis=0),
                           "axis=-1"),
}


@pytest.mark.parametrize("wrong", THOMPSON_WRONG, ids=list(THOMPSON_WRONG))
def test_thompson_actions_rejects(wrong, capsys):
    fn, diagnosis = THOMPSON_WRONG[wrong]
    assert diagnosis in rejected("thompson_actions", fn, capsys)


# ================================================================ lesson 02: MDPs and Bellman

DISCOUNTED_RETURN_WRONG = {
    "first reward discounted": (
        lambda r, g: float(np.sum(g ** np.arange(1, len(r) + 1) * np.asarray(r))),
        "discounted the first reward"),
    "reversed discount": (
        lambda r, g: float(np.sum(g ** np.arange(len(r))[::-1] * np.asarray(r))), "wrong way"),
    "no discount": (lambda r, g: float(np.sum(r)), "did not discount"),
    "every step's return": (
        lambda r, g: np.array([np.sum(g ** np.arange(len(r) - t) * np.asarray(r)[t:])
                               for t in range(len(r))]), "return one number"),
}


@pytest.mark.parametrize("wrong", DISCOUNTED_RETURN_WRONG, ids=list(DISCOUNTED_RETURN_WRONG))
def test_discounted_return_rejects(wrong, capsys):
    fn, diagnosis = DISCOUNTED_RETURN_WRONG[wrong]
    assert diagnosis in rejected("discounted_return", fn, capsys)


def _dynamics(mask_rows=True, mask_reward_into_terminal=False, reward_weight="P",
              policy_weight=True, transpose=False, mask_columns=True):
    def dynamics(P, R, policy, terminal):
        P_pi = np.einsum("sa,sat->st", policy, P) if policy_weight else P.sum(axis=1)
        R_used = R * ~terminal[None, None, :] if mask_reward_into_terminal else R
        if reward_weight == "P":
            r_pi = np.einsum("sa,sat,sat->s", policy, P, R_used)
        else:
            r_pi = np.einsum("sa,sat->s", policy, R_used)
        if transpose:
            P_pi = P_pi.T.copy()
        if mask_rows:
            P_pi[terminal] = 0.0
            r_pi[terminal] = 0.0
        if mask_columns:
            P_pi[:, terminal] = 0.0
        return P_pi, r_pi
    return dynamics


POLICY_DYNAMICS_WRONG = {
    "terminal rows kept": (_dynamics(mask_rows=False), "still loops to itself"),
    "reward for entering a terminal state dropped": (_dynamics(mask_reward_into_terminal=True),
                                                     "for *entering* a terminal state"),
    "rewards not weighted by P": (_dynamics(reward_weight="none"), "weight each reward"),
    "actions summed, not averaged": (_dynamics(policy_weight=False), "policy's probabilities"),
    "transposed": (_dynamics(transpose=True), "transposed"),
}


@pytest.mark.parametrize("wrong", POLICY_DYNAMICS_WRONG, ids=list(POLICY_DYNAMICS_WRONG))
def test_policy_dynamics_rejects(wrong, capsys):
    fn, diagnosis = POLICY_DYNAMICS_WRONG[wrong]
    assert diagnosis in rejected("policy_dynamics", fn, capsys)


def test_policy_dynamics_accepts_terminal_columns_kept(capsys):
    """Keeping the columns of terminal states is a convention, not a mistake: V is 0 there."""
    accepted("policy_dynamics", _dynamics(mask_columns=False), capsys)


SOLVE_WRONG = {
    "transposed": (lambda P, r, g: np.linalg.solve(np.eye(len(r)) - g * P.T, r), "transposed"),
    "no gamma": (lambda P, r, g: np.linalg.lstsq(np.eye(len(r)) - P, r, rcond=None)[0],
                 "left out gamma"),
    "two terms of the series": (lambda P, r, g: r + g * P @ r, "a few steps"),
    "immediate reward only": (lambda P, r, g: r.copy(), "immediate reward alone"),
}


@pytest.mark.parametrize("wrong", SOLVE_WRONG, ids=list(SOLVE_WRONG))
def test_solve_bellman_rejects(wrong, capsys):
    fn, diagnosis = SOLVE_WRONG[wrong]
    assert diagnosis in rejected("solve_bellman", fn, capsys)


def _sweeps(extra=0, in_place=False, transpose=False):
    def sweeps(P_pi, r_pi, gamma, k):
        M = P_pi.T if transpose else P_pi
        V = np.zeros(len(r_pi))
        for _ in range(max(k + extra, 0)):
            if in_place:
                for s in range(len(V)):
                    V[s] = r_pi[s] + gamma * M[s] @ V
            else:
                V = r_pi + gamma * M @ V
        return V
    return sweeps


SWEEPS_WRONG = {
    "one too many": (_sweeps(extra=1), "one sweep too many"),
    "one too few": (_sweeps(extra=-1), "one sweep too few"),
    "in place": (_sweeps(in_place=True), "in place"),
    "transposed": (_sweeps(transpose=True), "transposed"),
}


@pytest.mark.parametrize("wrong", SWEEPS_WRONG, ids=list(SWEEPS_WRONG))
def test_evaluation_sweeps_rejects(wrong, capsys):
    fn, diagnosis = SWEEPS_WRONG[wrong]
    assert diagnosis in rejected("evaluation_sweeps", fn, capsys)


def _q(discount=True, zero_terminal_V=True, zero_terminal_rows=True, weight_reward=True):
    def q(P, R, V, gamma, terminal):
        g = gamma if discount else 1.0
        V = np.where(terminal, 0.0, V) if zero_terminal_V else V
        if weight_reward:
            Q = np.einsum("sat,sat->sa", P, R + g * V[None, None, :])
        else:
            Q = R.sum(axis=2) + g * P @ V
        if zero_terminal_rows:
            Q[terminal] = 0.0
        return Q
    return q


Q_FROM_V_WRONG = {
    "no discount": (_q(discount=False), "did not discount"),
    "V not read as 0 at terminal states": (_q(zero_terminal_V=False), "read V as 0"),
    "terminal rows kept": (_q(zero_terminal_rows=False), "terminal state"),
    "reward not weighted by P": (_q(weight_reward=False), "inside the expectation"),
    "V [S] instead of Q": (lambda P, R, V, g, t: _q()(P, R, V, g, t).max(axis=1), "shape"),
}


@pytest.mark.parametrize("wrong", Q_FROM_V_WRONG, ids=list(Q_FROM_V_WRONG))
def test_q_from_v_rejects(wrong, capsys):
    fn, diagnosis = Q_FROM_V_WRONG[wrong]
    assert diagnosis in rejected("q_from_v", fn, capsys)


def _steps(count_entering=True, gamma=1.0, terminal_value=0.0, reward=1.0):
    def steps(P, policy, terminal):
        P_pi = np.einsum("sa,sat->st", policy, P)
        P_pi[terminal] = 0.0
        P_pi[:, terminal] = 0.0
        ones = np.where(terminal, 0.0, reward)
        T = np.linalg.solve(np.eye(len(ones)) - gamma * P_pi, ones)
        if not count_entering:
            T = np.where(terminal, 0.0, T - 1)
        return np.where(terminal, terminal_value, T)
    return steps


EXPECTED_STEPS_WRONG = {
    "the last step not counted": (_steps(count_entering=False), "off by one"),
    "discounted": (_steps(gamma=0.99), "discounted count"),
    "terminal counts a step": (_steps(terminal_value=1.0), "already over"),
    "no reward per step": (_steps(reward=0.0), "each step before the end counts 1"),
}


@pytest.mark.parametrize("wrong", EXPECTED_STEPS_WRONG, ids=list(EXPECTED_STEPS_WRONG))
def test_expected_steps_rejects(wrong, capsys):
    fn, diagnosis = EXPECTED_STEPS_WRONG[wrong]
    assert diagnosis in rejected("expected_steps", fn, capsys)


def _q_eval(next_action_at_s=False, mask_terminal=True):
    def q(P, R, policy, gamma, terminal):
        S, A = policy.shape
        r = np.einsum("sat,sat->sa", P, R)
        live = P * ~terminal[None, None, :] if mask_terminal else P
        if mask_terminal:
            r = r * ~terminal[:, None]
        if next_action_at_s:
            M = np.einsum("sat,sb->satb", live, policy).reshape(S * A, S * A)
        else:
            M = np.einsum("sat,tb->satb", live, policy).reshape(S * A, S * A)
        Q = np.linalg.lstsq(np.eye(S * A) - gamma * M, r.ravel(), rcond=None)[0].reshape(S, A)
        return Q * ~terminal[:, None] if mask_terminal else Q
    return q


Q_EVALUATION_WRONG = {
    "optimal instead of pi": (
        lambda P, R, pi, g, t: rc.q_from_v(P, R, rc.value_iteration(P, R, g, t)[0], g, t),
        "optimal values Q*"),
    "next action drawn at s": (_q_eval(next_action_at_s=True), "*next* state s'"),
    "terminal states bootstrap": (_q_eval(mask_terminal=False), "terminal state"),
}


@pytest.mark.parametrize("wrong", Q_EVALUATION_WRONG, ids=list(Q_EVALUATION_WRONG))
def test_q_evaluation_rejects(wrong, capsys):
    fn, diagnosis = Q_EVALUATION_WRONG[wrong]
    assert diagnosis in rejected("q_evaluation", fn, capsys)


def _occupancy(normalise=False, transpose=True, skip_start=False, mask=True):
    def occupancy(P, policy, terminal, start, gamma):
        P_pi = np.einsum("sa,sat->st", policy, P)
        start = np.asarray(start, dtype=float)
        if mask:
            P_pi[terminal] = 0.0
            P_pi[:, terminal] = 0.0
            start = np.where(terminal, 0.0, start)
        M = P_pi.T if transpose else P_pi
        d = np.linalg.lstsq(np.eye(len(start)) - gamma * M, start, rcond=None)[0]
        if skip_start:
            d = d - start
        return (1 - gamma) * d if normalise else d
    return occupancy


OCCUPANCY_WRONG = {
    "normalised": (_occupancy(normalise=True), "normalised by (1 - gamma)"),
    "not transposed": (_occupancy(transpose=False), "untransposed"),
    "start not counted": (_occupancy(skip_start=True), "counts at t = 0"),
    "terminal states kept": (_occupancy(mask=False), "no time is spent in them"),
}


@pytest.mark.parametrize("wrong", OCCUPANCY_WRONG, ids=list(OCCUPANCY_WRONG))
def test_discounted_occupancy_rejects(wrong, capsys):
    fn, diagnosis = OCCUPANCY_WRONG[wrong]
    assert diagnosis in rejected("discounted_occupancy", fn, capsys)


def test_discounted_occupancy_identity_holds_for_the_reference():
    """The identity the exercise asks about: start . V = d . r_pi."""
    lake = rc.FrozenLake("4x4")
    policy = np.full((16, 4), 0.25)
    d = exercises.get("discounted_occupancy").reference(lake.P, policy, lake.terminal,
                                                          lake.start, 0.95)
    _, r_pi = rc.policy_dynamics(lake.P, lake.R, policy, lake.terminal)
    V = rc.policy_evaluation_exact(lake.P, lake.R, policy, 0.95, lake.terminal)
    assert np.isclose(lake.start @ V, d @ r_pi)


@pytest.mark.parametrize(("answer", "diagnosis"), [
    ("a", "counted twice"), ("c", "gamma scales rewards that come later"),
    ("d", "belongs to a transition"), ("e", "one of the letters"), (None, "not answered yet")])
def test_goal_value_question_rejects(answer, diagnosis, capsys):
    assert diagnosis in rejected("goal_value_question", lambda: answer, capsys)


def test_goal_value_question_accepts_b(capsys):
    accepted("goal_value_question", lambda: " B ", capsys)


# ================================================================ lesson 03: dynamic programming

def _backup(reduce, gamma_used=None, zero_V=True):
    def backup(P, R, V, gamma, terminal):
        g = gamma if gamma_used is None else gamma_used
        V = np.where(terminal, 0.0, V) if zero_V else V
        Q = np.einsum("sat,sat->sa", P, R + g * V[None, None, :])
        Q[terminal] = 0.0
        return reduce(Q)
    return backup


BELLMAN_BACKUP_WRONG = {
    "returns Q": (_backup(lambda Q: Q), "you returned Q"),
    "no discount": (_backup(lambda Q: Q.max(axis=1), gamma_used=1.0), "did not discount"),
    "average over actions": (_backup(lambda Q: Q.mean(axis=1)), "averaged over actions"),
    "min": (_backup(lambda Q: Q.min(axis=1)), "min instead of max"),
    "V at terminal states used": (_backup(lambda Q: Q.max(axis=1), zero_V=False), "read V as 0"),
    "terminal states bootstrap": (
        lambda P, R, V, g, t: np.einsum("sat,sat->sa", P, R + g * V[None, None, :]).max(axis=1),
        "terminal state"),
}


@pytest.mark.parametrize("wrong", BELLMAN_BACKUP_WRONG, ids=list(BELLMAN_BACKUP_WRONG))
def test_bellman_backup_rejects(wrong, capsys):
    fn, diagnosis = BELLMAN_BACKUP_WRONG[wrong]
    assert diagnosis in rejected("bellman_backup", fn, capsys)


def _q_written(P, R, V, gamma, terminal):
    """Action values written out (rc.q_from_v is forbidden in lesson 03's steps 1-2)."""
    V = np.where(terminal, 0.0, V)
    Q = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :])
    Q[terminal] = 0.0
    return Q


GREEDY_WRONG = {
    "argmin": (lambda P, R, V, g, t: _q_written(P, R, V, g, t).argmin(axis=1), "argmin"),
    "values, not actions": (lambda P, R, V, g, t: _q_written(P, R, V, g, t).max(axis=1),
                            "best *action*"),
    "wrong axis": (lambda P, R, V, g, t: _q_written(P, R, V, g, t).argmax(axis=0), "axis=1"),
    "argmax of V over next states": (
        lambda P, R, V, g, t: np.argmax(np.einsum("sat,t->sa", P > 0, V), axis=1),
        "chose action"),
}


@pytest.mark.parametrize("wrong", GREEDY_WRONG, ids=list(GREEDY_WRONG))
def test_greedy_policy_rejects(wrong, capsys):
    fn, diagnosis = GREEDY_WRONG[wrong]
    assert diagnosis in rejected("greedy_policy", fn, capsys)


def test_greedy_policy_accepts_any_tied_action(capsys):
    def last_of_ties(P, R, V, gamma, terminal):
        Q = _q_written(P, R, V, gamma, terminal)
        return Q.shape[1] - 1 - np.argmax((Q >= Q.max(axis=1, keepdims=True) - 1e-12)[:, ::-1],
                                          axis=1)

    accepted("greedy_policy", last_of_ties, capsys)


def _one_step_pi(P, R, gamma, terminal):
    policy = np.zeros(P.shape[0], dtype=int)
    V = rc.policy_evaluation_exact(P, R, policy, gamma, terminal)
    policy = rc.q_from_v(P, R, V, gamma, terminal).argmax(axis=1)
    return rc.policy_evaluation_exact(P, R, policy, gamma, terminal), policy


def _stale_v(P, R, gamma, terminal):
    V, policy, history = rc.policy_iteration(P, R, gamma, terminal, return_history=True)
    before = history[-2] if len(history) > 1 else history[-1]
    return rc.policy_evaluation_exact(P, R, before, gamma, terminal), policy


POLICY_ITERATION_WRONG = {
    "one improvement step": (_one_step_pi, "one improvement step"),
    "V of the previous policy": (_stale_v, "V is not its value"),
    "terminal states bootstrap": (
        lambda P, R, g, t: (rc.policy_evaluation_exact(P, R, rc.policy_iteration(P, R, g, t)[1], g)
                            if g < 1 else None, rc.policy_iteration(P, R, g, t)[1]),
        "terminal state"),
}


@pytest.mark.parametrize("wrong", POLICY_ITERATION_WRONG, ids=list(POLICY_ITERATION_WRONG))
def test_policy_iteration_rejects(wrong, capsys):
    fn, diagnosis = POLICY_ITERATION_WRONG[wrong]
    assert diagnosis in rejected("policy_iteration", fn, capsys)


def _vi_loose(P, R, gamma, terminal):
    V = np.zeros(P.shape[0])
    while True:
        V_new = rc.bellman_optimality_backup(P, R, V, gamma, terminal)
        if np.abs(V_new - V).max() < 1e-3:
            return V_new, rc.q_from_v(P, R, V_new, gamma, terminal).argmax(axis=1)
        V = V_new


VALUE_ITERATION_WRONG = {
    "stops too early": (_vi_loose, "stopped too early"),
    "policy not greedy": (lambda P, R, g, t: (rc.value_iteration(P, R, g, t)[0],
                                              rc.q_from_v(P, R, rc.value_iteration(P, R, g, t)[0],
                                                          g, t).argmin(axis=1)), "not greedy"),
    "terminal states bootstrap": (lambda P, R, g, t: rc.value_iteration(P, R * 0 + (R != 0), g),
                                  "terminal state"),
    "returns V only": (lambda P, R, g, t: rc.value_iteration(P, R, g, t)[0], "(V, policy)"),
}


@pytest.mark.parametrize("wrong", VALUE_ITERATION_WRONG, ids=list(VALUE_ITERATION_WRONG))
def test_value_iteration_rejects(wrong, capsys):
    fn, diagnosis = VALUE_ITERATION_WRONG[wrong]
    assert diagnosis in rejected("value_iteration", fn, capsys)


def _in_place(order="forward", synchronous=False, count_shift=0):
    def vi(P, R, gamma, terminal, tol=1e-10):
        r = np.einsum("sat,sat->sa", P, R)
        V = np.zeros(P.shape[0])
        states = [s for s in range(P.shape[0]) if not terminal[s]]
        if order == "backward":
            states = states[::-1]
        sweeps = 0
        while True:
            sweeps += 1
            old = V.copy()
            for s in states:
                V[s] = np.max(r[s] + gamma * P[s] @ (old if synchronous else V))
            if np.abs(V - old).max() < tol:
                return V, sweeps + count_shift
    return vi


IN_PLACE_WRONG = {
    "synchronous": (_in_place(synchronous=True), "synchronous value iteration's count"),
    "backwards": (_in_place(order="backward"), "index order"),
    "last sweep not counted": (_in_place(count_shift=-1), "off by one"),
    "returns V only": (lambda P, R, g, t, tol=1e-10: _in_place()(P, R, g, t, tol)[0],
                       "(V, sweeps)"),
}


@pytest.mark.parametrize("wrong", IN_PLACE_WRONG, ids=list(IN_PLACE_WRONG))
def test_value_iteration_in_place_rejects(wrong, capsys):
    fn, diagnosis = IN_PLACE_WRONG[wrong]
    assert diagnosis in rejected("value_iteration_in_place", fn, capsys)


def _mpi(**kwargs):
    from rlcourse.course.bank import tabular_dp

    return lambda P, R, g, t, k, rounds: tabular_dp._mpi_reference(P, R, g, t, k, rounds, **kwargs)


MPI_WRONG = {
    "evaluate before improving": (_mpi(improve_first=False), "improve first"),
    "k + 1 sweeps": (_mpi(extra=1), "not k + 1"),
    "k - 1 sweeps": (_mpi(extra=-1), "not k - 1"),
    "max inside the sweeps": (_mpi(max_inside=True), "value iteration"),
    "sweeps restart from 0": (_mpi(restart=True), "not from 0"),
}


@pytest.mark.parametrize("wrong", MPI_WRONG, ids=list(MPI_WRONG))
def test_modified_policy_iteration_rejects(wrong, capsys):
    fn, diagnosis = MPI_WRONG[wrong]
    assert diagnosis in rejected("modified_policy_iteration", fn, capsys)


def _horizon(gamma=1.0, shift_policy=False, V0=0.0, rows_minus_one=False):
    def finite(P, R, terminal, horizon):
        V = np.zeros((horizon + 1, P.shape[0]))
        V[0] = np.where(terminal, 0.0, V0)
        policy = np.zeros((horizon, P.shape[0]), dtype=int)
        for h in range(1, horizon + 1):
            Q = rc.q_from_v(P, R, V[h - 1], gamma, terminal)
            V[h], policy[h - 1] = Q.max(axis=1), Q.argmax(axis=1)
        if shift_policy:
            policy = np.roll(policy, 1, axis=0)
        if rows_minus_one:
            V = V[1:]
        return V, policy
    return finite


FINITE_HORIZON_WRONG = {
    "discounted": (_horizon(gamma=0.99), "count every reward fully"),
    "policy index shifted": (_horizon(shift_policy=True), "off by one in the policy's index"),
    "V[0] not zero": (_horizon(V0=1.0), "V[0] = 0"),
    "horizon rows only": (_horizon(rows_minus_one=True), "horizon + 1 rows"),
}


@pytest.mark.parametrize("wrong", FINITE_HORIZON_WRONG, ids=list(FINITE_HORIZON_WRONG))
def test_finite_horizon_rejects(wrong, capsys):
    fn, diagnosis = FINITE_HORIZON_WRONG[wrong]
    assert diagnosis in rejected("finite_horizon", fn, capsys)


# ================================================ after the review of lessons 01-03 (F4-F16)
# Each wrong answer that passed a checker before the review, and each new check.

def _in_place_average(Q, N, action, reward):
    N[action] += 1
    Q[action] += (reward - Q[action]) / N[action]
    return Q, N


def test_sample_average_update_rejects_an_in_place_update(capsys):
    out = rejected("sample_average_update", _in_place_average, capsys)
    assert "you changed the caller's Q and N in place" in out


def test_gradient_bandit_and_unbiased_step_reject_in_place_updates(capsys):
    def gradient_in_place(H, action, reward, baseline, alpha):
        pi = np.exp(H - H.max()) / np.exp(H - H.max()).sum()
        step = -pi
        step[action] += 1.0
        H += alpha * (reward - baseline) * step
        return H

    def unbiased_in_place(Q, trace, action, reward, alpha):
        trace[action] += alpha * (1 - trace[action])
        Q[action] += alpha / trace[action] * (reward - Q[action])
        return Q, trace

    assert "caller's H in place" in rejected("gradient_bandit_update", gradient_in_place, capsys)
    assert "caller's Q and trace in place" in rejected("unbiased_step_update", unbiased_in_place,
                                                       capsys)


def test_sample_average_update_accepts_a_copying_answer(capsys):
    def copying(Q, N, action, reward):
        return _in_place_average(np.array(Q, dtype=float), np.array(N), action, reward)

    accepted("sample_average_update", copying, capsys)


def _naive_ucb(Q, N, t, c):
    return Q + c * np.sqrt(np.log(t) / N)


def _naive_ucb_quiet(Q, N, t, c):
    with np.errstate(all="ignore"):
        return Q + c * np.sqrt(np.log(t) / N)


@pytest.mark.parametrize("fn", [_naive_ucb, _naive_ucb_quiet], ids=["warning", "errstate ignore"])
def test_ucb_scores_rejects_dividing_by_zero(fn, capsys):
    """Q + c sqrt(ln t / N) is +inf for untried arms when t > 1 (so it passed), but NaN at t = 1
    and a division by zero always."""
    ok = exercises.check("ucb_scores", fn)  # no errstate here: the checker sets its own
    out = capsys.readouterr().out
    assert not ok, out
    assert "you divided by N = 0" in out
    assert "the very first step: t = 1" in out


def _policy_iteration_plain_argmax(P, R, gamma, terminal):
    """Policy iteration with np.argmax and no tolerance: cycles between tied actions."""
    S = P.shape[0]
    policy = np.zeros(S, dtype=int)
    while True:
        V = rc.policy_evaluation_exact(P, R, policy, gamma, terminal)
        new = _q_written(P, R, V, gamma, terminal).argmax(axis=1)
        if np.array_equal(new, policy):
            return V, policy
        policy = new


def test_policy_iteration_without_tolerance_times_out_with_the_tie_diagnosis(capsys, monkeypatch):
    from rlcourse.course.bank import tabular_dp

    monkeypatch.setattr(tabular_dp, "POLICY_ITERATION_SECONDS", 1.0)
    out = rejected("policy_iteration", _policy_iteration_plain_argmax, capsys)
    assert "FrozenLake 8x8, gamma 0.95 (tied actions): raised TimeLimit" in out
    assert "keeps flipping between actions whose values are tied" in out
    assert "better by more than 1e-9" in out


def test_policy_iteration_with_tolerance_passes_within_the_limit(capsys):
    def with_tolerance(P, R, gamma, terminal):
        S = P.shape[0]
        policy = np.zeros(S, dtype=int)
        while True:
            V = rc.policy_evaluation_exact(P, R, policy, gamma, terminal)
            Q = _q_written(P, R, V, gamma, terminal)
            better = Q.max(axis=1) > Q[np.arange(S), policy] + 1e-9
            if not better.any():
                return V, policy
            policy = np.where(better, Q.argmax(axis=1), policy)

    accepted("policy_iteration", with_tolerance, capsys)


def _mpi_argmax(P, R, gamma, terminal, k, rounds):
    rows = np.arange(P.shape[0])
    V = np.zeros(P.shape[0])
    for _ in range(rounds):
        policy = _q_written(P, R, V, gamma, terminal).argmax(axis=1)
        for _ in range(k):
            V = _q_written(P, R, V, gamma, terminal)[rows, policy]
    return V


def test_modified_policy_iteration_names_the_tie_rule(capsys):
    out = rejected("modified_policy_iteration", _mpi_argmax, capsys)
    assert out.count("ties: you improved with np.argmax") >= 2


def test_bellman_backup_must_be_written_from_the_model(capsys):
    def via_q_from_v(P, R, V, gamma, terminal):
        return rc.q_from_v(P, R, V, gamma, terminal).max(axis=1)

    out = rejected("bellman_backup", via_q_from_v, capsys)
    assert "[reference] your function uses" in out and "q_from_v" in out
    accepted("bellman_backup", lambda P, R, V, g, t: _q_written(P, R, V, g, t).max(axis=1), capsys)


def test_q_evaluation_through_v_is_refused(capsys):
    def through_v(P, R, policy, gamma, terminal):
        V = rc.policy_evaluation_exact(P, R, policy, gamma, terminal)
        return rc.q_from_v(P, R, V, gamma, terminal)

    out = rejected("q_evaluation", through_v, capsys)
    assert "[reference]" in out and "policy_evaluation_exact" in out


def _occupancy_written_out(P, policy, terminal, start, gamma):
    P_pi = np.einsum("sa,sat->st", policy, P)
    P_pi[terminal] = 0.0
    P_pi[:, terminal] = 0.0
    start = np.where(terminal, 0.0, start)
    return np.linalg.solve(np.eye(len(start)) - gamma * P_pi.T, start)


def _start_value(weigh):
    def value(P, R, policy, terminal, start, gamma):
        d = _occupancy_written_out(P, policy, terminal, start, gamma)
        r = np.einsum("sat,sat->sa", P, R) * ~terminal[:, None]
        return float(weigh(d, r, policy, gamma))
    return value


START_VALUE_WRONG = {
    "one action's reward": (_start_value(lambda d, r, pi, g: d @ r[:, 0]), "not by the reward of one"),
    "normalised occupancy": (_start_value(lambda d, r, pi, g: (1 - g) * d @ (pi * r).sum(axis=1)),
                             "(1 - gamma) d . r_pi"),
    "returns the vector": (lambda P, R, pi, t, s, g: _occupancy_written_out(P, pi, t, s, g),
                           "return one number"),
}


@pytest.mark.parametrize("wrong", START_VALUE_WRONG, ids=list(START_VALUE_WRONG))
def test_start_value_from_occupancy_rejects(wrong, capsys):
    fn, diagnosis = START_VALUE_WRONG[wrong]
    assert diagnosis in rejected("start_value_from_occupancy", fn, capsys)


def test_start_value_from_occupancy_accepts_d_dot_r_pi_and_refuses_v(capsys):
    accepted("start_value_from_occupancy",
             _start_value(lambda d, r, pi, g: d @ (pi * r).sum(axis=1)), capsys)

    def from_v(P, R, policy, terminal, start, gamma):
        return float(start @ rc.policy_evaluation_exact(P, R, policy, gamma, terminal))

    assert "[reference]" in rejected("start_value_from_occupancy", from_v, capsys)


def test_in_place_saving_question(capsys, monkeypatch):
    from rlcourse.course import exercises as module

    monkeypatch.setattr(module, "_FIRST_ANSWERS", {})
    big = rc.FrozenLake("8x8")
    r = np.einsum("sat,sat->sa", big.P, big.R)
    counts = []
    for in_place in (False, True):
        V, sweeps = np.zeros(64), 0
        while True:
            sweeps += 1
            old = V.copy()
            for s in np.flatnonzero(~big.terminal):
                source = V if in_place else old
                V[s] = np.max(r[s] + 0.99 * big.P[s] @ source)
            if np.abs(V - old).max() < 1e-10:
                break
        counts.append(sweeps)
    saved = counts[0] - counts[1]
    assert saved > 0
    assert "the other way round" in rejected("in_place_saving_question", -saved, capsys)
    monkeypatch.setattr(module, "_FIRST_ANSWERS", {})
    assert "whole number" in rejected("in_place_saving_question", float(saved), capsys)
    monkeypatch.setattr(module, "_FIRST_ANSWERS", {})
    accepted("in_place_saving_question", saved, capsys)


@pytest.mark.parametrize(("answer", "diagnosis"), [
    ("a", "policy iteration is the other end"), ("c", "every round starts by improving"),
    ("d", "gamma-contraction"), ("z", "one of the letters"), (None, "not answered yet")])
def test_mpi_k1_question_rejects(answer, diagnosis, capsys, monkeypatch):
    from rlcourse.course import exercises as module

    monkeypatch.setattr(module, "_FIRST_ANSWERS", {})
    assert diagnosis in rejected("mpi_k1_question", answer, capsys)


def test_mpi_k1_question_accepts_b(capsys, monkeypatch):
    from rlcourse.course import exercises as module

    monkeypatch.setattr(module, "_FIRST_ANSWERS", {})
    accepted("mpi_k1_question", "b", capsys)
