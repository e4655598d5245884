"""The exercises of lessons 04-06 reject the usual wrong answers and name the mistake.

Each wrong answer below is written the way a student would write it (not taken from the bank's
own variants); the checker must fail it, and every failing case must print the diagnosis that
names that mistake. Together the wrong answers reach every ``explain`` branch of
``rlcourse.course.bank.tabular_td``.
"""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises
from rlcourse.course.bank import tabular_td as bank
from rlcourse.tabular import control


def assert_rejected(name, fn, capsys, diagnosis, every_case=False):
    """``fn`` fails exercise ``name``; each failing case's line names ``diagnosis``."""
    assert not exercises.check(name, fn)
    out = capsys.readouterr().out
    fails = [line for line in out.splitlines() if line.strip().startswith("[fail]")]
    assert fails, out
    for line in fails:
        assert diagnosis in line, f"expected {diagnosis!r} in: {line}"
    if every_case:
        assert "[pass]" not in out, out
    return out


# ================================================================== lesson 04
# ------------------------------------------------------------------ mc_returns


def returns_loop(rewards, gamma, final_value=0.0, *, forwards=False, use_final=True,
                 discount_final=True, discount=True, discount_first=False):
    rewards = np.asarray(rewards, dtype=float)
    g_t = gamma if discount else 1.0
    if forwards:
        return np.cumsum(rewards * g_t ** np.arange(len(rewards)))
    G, g = np.zeros(len(rewards)), (final_value if use_final else 0.0)
    for t in reversed(range(len(rewards))):
        last = t == len(rewards) - 1
        g = rewards[t] + (g if (last and not discount_final) else g_t * g)
        G[t] = g
    return gamma * G if discount_first else G


@pytest.mark.parametrize("kwargs, diagnosis", [
    ({"forwards": True}, "your returns run forwards"),
    ({"use_final": False}, "starts from final_value"),
    ({"discount_final": False}, "final_value is one step beyond"),
    ({"discount": False}, "you forgot to discount"),
    ({"discount_first": True}, "rewards[t] enters with weight 1"),
])
def test_mc_returns_rejects(kwargs, diagnosis, capsys):
    assert_rejected("mc_returns", lambda r, g, final_value=0.0: returns_loop(r, g, final_value,
                                                                           **kwargs),
                    capsys, diagnosis)


# ------------------------------------------------------------------ first_visit_update


def visit_update(table, counts, keys, rewards, gamma, *, which="first", step="average",
                 count_after=False, pairs_by_state=False, forwards=False):
    table, counts = np.array(table, dtype=float), np.array(counts, dtype=float)
    G = returns_loop(rewards, gamma, forwards=forwards)
    keys = [tuple(int(x) for x in k) if np.ndim(k) else int(k) for k in keys]
    chosen = {}
    for t, key in enumerate(keys):
        ident = key[0] if (pairs_by_state and isinstance(key, tuple)) else key
        if which == "last" or ident not in chosen:
            chosen[ident] = (key, G[t])
    visits = list(zip(keys, G)) if which == "every" else list(chosen.values())
    for key, g in visits:
        if not count_after:
            counts[key] += 1
        with np.errstate(divide="ignore", invalid="ignore"):
            size = 0.1 if step == "constant" else np.float64(1.0) / counts[key]
            table[key] += size * (g - table[key])
        if count_after:
            counts[key] += 1
    return table, counts


@pytest.mark.parametrize("kwargs, diagnosis", [
    ({"which": "every"}, "you averaged every visit"),
    ({"which": "last"}, "return of the *last* visit"),
    ({"forwards": True}, "returns run backwards"),
    ({"step": "constant"}, "a sample average moves by 1 / N"),
    ({"count_after": True}, "count the visit first"),
    ({"pairs_by_state": True}, "a new pair"),
])
def test_first_visit_update_rejects(kwargs, diagnosis, capsys):
    assert_rejected("first_visit_update", lambda *a: visit_update(*a, **kwargs), capsys, diagnosis)


def test_first_visit_update_asks_for_both_tables(capsys):
    assert_rejected("first_visit_update", lambda *a: visit_update(*a)[0], capsys,
                    "return the pair (table, counts)")
    assert_rejected("first_visit_update", lambda table, counts, *a: (table, counts), capsys,
                    "nothing changed")


def first_visit_in_place(table, counts, keys, rewards, gamma):
    """Right numbers, but written into the caller's arrays (review F4)."""
    G = rc.mc_returns(rewards, gamma)
    seen = set()
    for key, g in zip(keys, G):
        key = tuple(int(k) for k in key) if np.ndim(key) else int(key)
        if key not in seen:
            seen.add(key)
            counts[key] += 1
            table[key] += (g - table[key]) / counts[key]
    return table, counts


def test_first_visit_update_rejects_an_answer_that_changes_the_callers_tables(capsys):
    assert_rejected("first_visit_update", first_visit_in_place, capsys,
                    "you changed the caller's table and counts in place", every_case=True)


# ------------------------------------------------------------------ mc_control (the loop)


def student_mc_control(env, episodes, gamma, epsilons, seed, *, bug=None):
    Q = np.zeros((env.num_states, env.num_actions))
    counts = np.zeros_like(Q)
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    for k in range(episodes):
        if bug == "reset":
            s = int(env.reset(seed=seed)[0])
        eps = {"greedy": 0.0, "first": epsilons[0]}.get(bug, epsilons[k])
        pairs, rewards = [], []
        while True:
            if bug == "argmax":
                a = int(np.argmax(Q[s])) if rng.random() >= eps else int(rng.integers(4))
            else:
                a = rc.epsilon_greedy(Q[s], eps, rng)
            step = env.step(np.array([a]))
            pairs.append((s, a))
            rewards.append(float(step.reward[0]))
            if step.done[0]:
                break
            s = int(step.obs[0])
        Q, counts = visit_update(Q, counts, pairs, rewards, gamma,
                                 which="every" if bug == "every" else "first")
        s = int(step.final_obs[0]) if bug == "final_obs" else int(step.obs[0])
    return Q


def test_mc_control_accepts_a_student_loop():
    assert exercises.check("mc_control", student_mc_control, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("every", "you averaged every visit of a pair"),
    ("greedy", "your agent never explores"),
    ("first", "every episode used epsilons[0]"),
    ("final_obs", "you went on from final_obs"),
    ("reset", "you reset the environment with the same seed before every episode"),
    ("argmax", "Check step 2 first, then the draws"),
])
def test_mc_control_rejects(bug, diagnosis, capsys):
    assert_rejected("mc_control", lambda *a: student_mc_control(*a, bug=bug), capsys, diagnosis)


def test_mc_control_cases_never_reach_their_time_limits():
    # The student's loop is not asked to handle truncations, so a correct run must not meet one.
    for case in bank._mc_control_cases():
        env, episodes, gamma, eps, seed = case.args
        res = control._mc_control(env, episodes, gamma, eps, True, seed, None, 0.0,
                                  rng=np.random.default_rng(seed))
        assert res.episode_lengths.max() < env.max_steps // 2, case.label


def test_mc_control_reference_is_the_library_loop_and_the_banks_replay():
    env = rc.GridWorld(size=3, slip=0.2, step_reward=-0.1)
    eps = np.linspace(1.0, 0.1, 25)
    lib = bank._mc_control_reference(env, 25, 0.9, eps, 3)
    np.testing.assert_array_equal(lib, student_mc_control(env, 25, 0.9, eps, 3))
    np.testing.assert_array_equal(lib, bank._mc_control_variant(env, 25, 0.9, eps, 3, None))


# ------------------------------------------------------------------ constant_alpha_weights


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda a, n: np.r_[(1 - a) ** n, a * (1 - a) ** np.arange(n)], "from the oldest to the newest"),
    (lambda a, n: a * (1 - a) ** np.arange(n - 1, -1, -1), "you left out the initial value"),
    (lambda a, n: np.r_[0.0, np.full(n, 1.0 / n)], "sample average's weights"),
    (lambda a, n: np.r_[(1 - a) ** n, a * (1 - a) ** np.arange(n, 0, -1)], "off by one power"),
])
def test_constant_alpha_weights_rejects(wrong, diagnosis, capsys):
    assert_rejected("constant_alpha_weights", wrong, capsys, diagnosis)


# ------------------------------------------------------------------ importance_sampling_mc


def student_is(episodes, target, behaviour, S, gamma, weighted, *, ratio="from t", swap=False,
               no_ratio=False, nan=False, first_visit=False):
    total, weights, visits = np.zeros(S), np.zeros(S), np.zeros(S)
    for ep in episodes:
        seen = set()
        s, a = ep.states[:-1], ep.actions
        with np.errstate(divide="ignore", invalid="ignore"):  # as in a notebook: a warning
            per_step = behaviour[s, a] / target[s, a] if ratio == "inverted" else \
                target[s, a] / behaviour[s, a]
            rho = np.cumprod(per_step[::-1])[::-1]
        if ratio == "from t+1":
            rho = np.r_[rho[1:], 1.0]
        elif ratio == "whole":
            rho = np.full(len(rho), rho[0])
        if no_ratio:
            rho = np.ones(len(rho))
        G = rc.mc_returns(ep.rewards, gamma)
        with np.errstate(invalid="ignore"):
            for t in range(len(G)):
                if first_visit and int(s[t]) in seen:
                    continue
                seen.add(int(s[t]))
                total[s[t]] += rho[t] * G[t]
                weights[s[t]] += rho[t]
                visits[s[t]] += 1
    use_weights = weighted != swap
    with np.errstate(divide="ignore", invalid="ignore"):
        if nan:
            return total / (weights if use_weights else visits)
        den = weights if use_weights else visits
        return np.divide(total, den, out=np.zeros(S), where=den > 0)


@pytest.mark.parametrize("kwargs, diagnosis", [
    ({"ratio": "from t+1"}, "includes the action taken at t"),
    ({"ratio": "whole"}, "the whole episode's ratio"),
    ({"ratio": "inverted"}, "the ratio is target / behaviour"),
    ({"swap": True}, "that is the other estimator"),
    ({"no_ratio": True}, "without any ratio"),
    ({"nan": True}, "NaN"),
    ({"first_visit": True}, "every-visit IS"),
])
def test_importance_sampling_mc_rejects(kwargs, diagnosis, capsys):
    assert_rejected("importance_sampling_mc", lambda *a: student_is(*a, **kwargs), capsys,
                    diagnosis)


# ------------------------------------------------------------------ off_policy_mc_control


def student_off_policy(episodes, behaviour, S, A, gamma, *, bug=None):
    Q, C = np.zeros((S, A)), np.zeros((S, A))
    for ep in episodes:
        G, W = 0.0, 1.0
        for t in reversed(range(len(ep.rewards))):
            s, a = int(ep.states[t]), int(ep.actions[t])
            G = gamma * G + ep.rewards[t]
            if bug == "break first" and a != int(np.argmax(Q[s])):
                break
            C[s, a] += 1.0 if bug == "count" else W
            Q[s, a] += W / C[s, a] * (G - Q[s, a])
            if bug != "no break" and a != int(np.argmax(Q[s])):
                break
            W /= behaviour[s, a]
    return Q


@pytest.mark.parametrize("bug, diagnosis", [
    ("no break", "stop the backward loop there"),
    ("break first", "you stopped before updating Q(S_t, A_t)"),
    ("count", "weighted IS accumulates C(s, a) += W"),
])
def test_off_policy_mc_control_rejects(bug, diagnosis, capsys):
    assert_rejected("off_policy_mc_control", lambda *a: student_off_policy(*a, bug=bug), capsys,
                    diagnosis)


def test_where_exploring_loses_explains_each_wrong_letter(capsys):
    for letter, why in [("a", "its greedy part is already the best"),
                        ("c", "the holes take 0.104 and discounting the later arrival 0.021"),
                        ("d", "nothing is estimated")]:
        assert_rejected("where_exploring_loses", lambda letter=letter: letter, capsys, why)
    assert_rejected("where_exploring_loses", lambda: "e", capsys, "answer with one letter")
    assert exercises.check("where_exploring_loses", lambda: " B ", verbose=False)


def test_the_holes_cost_exploring_more_than_the_detours():
    """The numbers behind (b) and the explanation of (c), computed independently: the best
    epsilon-soft policy's value / V*, its chance of reaching the goal (by simulation), and
    the split of the loss."""
    kept, reach, kept_if_reached = bank.lake_exploring_loss()
    assert kept == pytest.approx(reach * kept_if_reached)
    assert 1 - reach > 3 * (reach - kept)  # the holes cost over three times what delay does
    lake = rc.FrozenLake(is_slippery=False)
    P, R, T = lake.P, lake.R, lake.terminal
    v_star = rc.value_iteration(P, R, 0.95, T)[0]
    P_eps = 0.9 * P + 0.1 * P.mean(axis=1, keepdims=True)
    r = (P * R).sum(axis=2)
    r_eps = np.repeat((0.9 * r + 0.1 * r.mean(axis=1, keepdims=True))[:, :, None], 16, axis=2)
    pi = rc.value_iteration(P_eps, r_eps, 0.95, T)[1]
    probs = rc.epsilon_greedy_probs(np.eye(4)[pi], 0.1)
    assert kept == pytest.approx(rc.policy_evaluation(P, R, probs, 0.95, T)[0] / v_star[0])
    episodes = rc.record_episodes(lake, probs, 4000, seed=0)
    reached = np.mean([ep.rewards.sum() > 0 for ep in episodes])
    assert abs(reached - reach) < 0.02



# ================================================================== lesson 05
# ------------------------------------------------------------------ td0 (the loop)


def student_td0(env, episodes, alpha, gamma, seed, init=0.0, *, bug=None):
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        while True:
            step = env.step(np.zeros(1, dtype=int))
            r = float(step.reward[0])
            nxt = int(step.obs[0]) if bug == "obs" else int(step.final_obs[0])
            end = step.done[0] if bug == "cut" else step.terminated[0]
            target = r + gamma * V[nxt] if (bug == "terminal" or not end) else r
            where = nxt if bug == "next" else s
            V[where] += alpha * (target - V[where])
            s = int(step.final_obs[0]) if (bug == "continue" and step.done[0]) else int(step.obs[0])
            if step.done[0]:
                break
    return V


def test_td0_accepts_a_student_loop():
    assert exercises.check("td0", student_td0, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("terminal", "you bootstrapped from the terminal state"),
    ("cut", "you treated a time limit as a terminal state"),
    ("obs", "you bootstrapped from step.obs"),
    ("next", "you updated the state the step led to"),
    ("continue", "continue from step.obs"),
])
def test_td0_rejects(bug, diagnosis, capsys):
    assert_rejected("td0", lambda *a, **k: student_td0(*a, **k, bug=bug), capsys, diagnosis)


def test_td0_loop_that_draws_its_own_walk_is_told_to_use_the_seed(capsys):
    def reseeded(env, episodes, alpha, gamma, seed, init=0.0):
        return student_td0(env, episodes, alpha, gamma, seed + 1, init)

    assert_rejected("td0", reseeded, capsys, "reset it once with the seed")


# ------------------------------------------------------------------ n_step_target


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda r, v, term, g: sum(g**k * x for k, x in enumerate(r)) + (
        0.0 if term else g ** (len(r) - 1) * v), "not gamma ** (m - 1)"),
    (lambda r, v, term, g: sum(g**k * x for k, x in enumerate(r)) + g ** len(r) * v,
     "you bootstrapped from the terminal state"),
    (lambda r, v, term, g: sum(g**k * x for k, x in enumerate(r)), "add gamma ** m"),
    (lambda r, v, term, g: sum(g ** (k + 1) * x for k, x in enumerate(r)) + (
        0.0 if term else g ** len(r) * v), "the first by gamma ** 0"),
])
def test_n_step_target_rejects(wrong, diagnosis, capsys):
    assert_rejected("n_step_target", wrong, capsys, diagnosis)


# ------------------------------------------------------------------ n_step_td (the loop)


def student_n_step(env, episodes, n, alpha, gamma, seed, init=0.0, *, bug=None):
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    width = n - 1 if bug == "short" else n
    for _ in range(episodes):
        states, rewards = [s], []
        while True:
            step = env.step(np.zeros(1, dtype=int))
            rewards.append(float(step.reward[0]))
            states.append(int(step.final_obs[0]))
            tau = len(rewards) - width
            if width > 0 and tau >= 0 and not step.done[0]:
                G = rc.n_step_target(rewards[tau:], V[states[-1]], False, gamma)
                V[states[tau]] += alpha * (G - V[states[tau]])
            if step.done[0]:
                break
        T = len(rewards)
        terminated = bool(step.terminated[0]) and bug != "terminal"
        if bug != "no flush":
            for tau in range(max(T - width, 0), T):
                G = rc.n_step_target(rewards[tau:], V[states[T]], terminated, gamma)
                V[states[tau]] += alpha * (G - V[states[tau]])
        s = int(step.obs[0])
    return V


def test_n_step_td_accepts_a_student_loop():
    assert exercises.check("n_step_td", student_n_step, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("no flush", "were never updated"),
    ("terminal", "when flushing"),
    ("short", "your windows hold n - 1 rewards"),
])
def test_n_step_td_rejects(bug, diagnosis, capsys):
    assert_rejected("n_step_td", lambda *a, **k: student_n_step(*a, **k, bug=bug), capsys,
                    diagnosis)


# ------------------------------------------------------------------ td_lambda (the loop)


def student_td_lambda(env, episodes, lam, alpha, gamma, seed, replacing=False, *, bug=None):
    V, e = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    replace = replacing != (bug == "swap")
    for _ in range(episodes):
        while True:
            step = env.step(np.zeros(1, dtype=int))
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            if bug == "bump first":
                e[s] = 1.0 if replace else e[s] + 1.0
                e *= gamma * lam
            else:
                e *= gamma * lam
                e[s] = 1.0 if replace else e[s] + 1.0
            boot = 0.0 if (step.terminated[0] and bug != "terminal") else V[s_final]
            delta = r + gamma * boot - V[s]
            if bug == "only s":
                V[s] += alpha * delta
            else:
                V += alpha * delta * e
            s = int(step.obs[0])
            if step.done[0]:
                break
        if bug != "keep" and not (bug == "terminated only" and not step.terminated[0]):
            e[:] = 0.0
    return V


def test_td_lambda_accepts_a_student_loop():
    assert exercises.check("td_lambda", student_td_lambda, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("keep", "your traces survived the end of an episode"),
    ("terminated only", "your traces survived a time limit"),
    ("swap", "replacing traces set e[s] = 1"),
    ("bump first", "decay every trace first"),
    ("only s", "you updated only the current state"),
])
def test_td_lambda_rejects(bug, diagnosis, capsys):
    assert_rejected("td_lambda", lambda *a, **k: student_td_lambda(*a, **k, bug=bug), capsys,
                    diagnosis)


# ------------------------------------------------------------------ lambda_returns


def student_lambda_returns(rewards, values, terminated, gamma, lam, *, bug=None):
    T = len(rewards)
    last = 0.0 if (terminated or bug == "cut") and bug != "terminal" else values[T]
    G, g = np.zeros(T), last
    for t in reversed(range(T)):
        nxt = last if t == T - 1 else values[t + 1]
        if bug == "own":
            nxt = values[t]
        if bug == "weights" and t < T - 1:
            g = rewards[t] + gamma * (nxt + lam * g)
        else:
            g = rewards[t] + gamma * ((1 - lam) * nxt + lam * g)
        G[t] = g
    return G


@pytest.mark.parametrize("bug, diagnosis", [
    ("terminal", "only if s_T is not terminal"),
    ("cut", "a time limit is not a terminal state"),
    ("own", "uses the *next* state's value"),
    ("weights", "the weights must sum to 1"),
])
def test_lambda_returns_rejects(bug, diagnosis, capsys):
    assert_rejected("lambda_returns", lambda *a: student_lambda_returns(*a, bug=bug), capsys,
                    diagnosis)


# ------------------------------------------------------------------ td_errors


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda r, v, term, g: np.asarray(r) + g * np.asarray(v[1:]) - np.asarray(v[:-1]),
     "its value is 0, whatever values[T] holds"),
    (lambda r, v, term, g: np.asarray(r) + g * np.r_[v[1:-1], 0.0] - np.asarray(v[:-1]),
     "the last TD error bootstraps from values[T]"),
    (lambda r, v, term, g: -bank._td_errors(r, v, term, g), "sign"),
    (lambda r, v, term, g: np.asarray(r) + g * np.asarray(v[:-1]) - np.asarray(v[1:]),
     "your indexes are shifted"),
])
def test_td_errors_rejects(wrong, diagnosis, capsys):
    assert_rejected("td_errors", wrong, capsys, diagnosis)


# ------------------------------------------------------------------ lambda_return_from_td_errors


def from_errors(rewards, values, terminated, gamma, lam, *, factor="gamma lam", add=True):
    # the TD errors written out here: an answer that calls the bank's own helper does not count
    values = np.asarray(values, dtype=float)
    nxt = values[1:].copy()
    if terminated:
        nxt[-1] = 0.0
    delta = np.asarray(rewards, dtype=float) + gamma * nxt - values[:-1]
    k = {"gamma lam": gamma * lam, "gamma": gamma, "lam": lam}[factor]
    out, acc = np.zeros(len(delta)), 0.0
    for t in reversed(range(len(delta))):
        acc = delta[t] + k * acc
        out[t] = acc
    return out + np.asarray(values[:-1]) if add else out


@pytest.mark.parametrize("kwargs, diagnosis", [
    ({"factor": "gamma"}, "by gamma alone"),
    ({"add": False}, "add values[t]"),
    ({"factor": "lam"}, "by lambda alone"),
])
def test_lambda_return_from_td_errors_rejects(kwargs, diagnosis, capsys):
    assert exercises.check("lambda_return_from_td_errors", from_errors, verbose=False)
    assert_rejected("lambda_return_from_td_errors", lambda *a: from_errors(*a, **kwargs), capsys,
                    diagnosis)


# ------------------------------------------------------------------ true_online_td_lambda


def student_true_online(env, episodes, lam, alpha, gamma, seed, *, dutch=True, correct=True,
                        own=True, reset_v_old=True):
    V, e = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    v_old = 0.0
    for _ in range(episodes):
        v_old = 0.0 if reset_v_old else v_old
        while True:
            step = env.step(np.zeros(1, dtype=int))
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            v, v_next = V[s], (0.0 if step.terminated[0] else V[s_final])
            delta = r + gamma * v_next - v
            e_s = e[s]
            e *= gamma * lam
            e[s] += (1.0 - alpha * gamma * lam * e_s) if dutch else 1.0
            if correct:
                V += alpha * (delta + v - v_old) * e
                if own:
                    V[s] -= alpha * (v - v_old)
            else:
                V += alpha * delta * e
            v_old = v_next
            s = int(step.obs[0])
            if step.done[0]:
                break
        e[:] = 0.0
    return V


@pytest.mark.parametrize("kwargs, diagnosis", [
    ({"dutch": False}, "those are accumulating traces"),
    ({"correct": False}, "you left out the correction"),
    ({"dutch": False, "correct": False}, "your values match plain TD(lambda)"),
    ({"own": False}, "you left out the last line, V(s) -= alpha (v - v_old)"),
])
def test_true_online_td_lambda_rejects(kwargs, diagnosis, capsys):
    assert exercises.check("true_online_td_lambda", student_true_online, verbose=False)
    assert_rejected("true_online_td_lambda", lambda *a: student_true_online(*a, **kwargs), capsys,
                    diagnosis)


def test_true_online_v_old_reset_is_harmless():
    """The exercise says so: with e = 0 at an episode's start the v_old terms cancel."""
    assert exercises.check("true_online_td_lambda",
                           lambda *a: student_true_online(*a, reset_v_old=False), verbose=False)


def test_true_online_with_lambda_zero_is_td0():
    walk = bank._walk(19, -1.0, 1.0)
    np.testing.assert_allclose(bank._true_online(walk, 5, 0.0, 0.3, 1.0, 2),
                               bank._td0_reference(walk, 5, 0.3, 1.0, 2), atol=1e-12)


# ================================================================== lesson 06
# ------------------------------------------------------------------ epsilon_greedy_probs


def argmax_probs(q, eps):
    q = np.asarray(q, dtype=float)
    return eps / q.shape[-1] + (1 - eps) * np.eye(q.shape[-1])[q.argmax(axis=-1)]


def no_share_probs(q, eps):  # the greedy actions split 1 - epsilon and get nothing else
    q = np.asarray(q, dtype=float)
    best = q == q.max(axis=-1, keepdims=True)
    return np.where(best, (1 - eps) / best.sum(axis=-1, keepdims=True), eps / q.shape[-1])


def explore_others(q, eps):  # exploring picks one of the non-greedy actions
    q = np.asarray(q, dtype=float)
    best = q == q.max(axis=-1, keepdims=True)
    k = best.sum(axis=-1, keepdims=True)
    return np.where(best, (1 - eps) / k, eps / np.maximum(q.shape[-1] - k, 1))


def test_expected_sarsa_update_does_not_care_how_ties_split():
    # Tied actions have equal values, so giving one of them all the greedy mass (argmax) gives
    # the same expectation: not a mistake here, although it is one for the probabilities.
    assert exercises.check("expected_sarsa_update",
                           lambda *a: student_expected_update(*a, bug="argmax"), verbose=False)


def minus_one_probs(q, eps):
    p = rc.epsilon_greedy_probs(q, eps)
    A = np.shape(q)[-1]
    return np.where(p > eps / A + 1e-12, 1 - eps, eps / (A - 1))


@pytest.mark.parametrize("wrong, diagnosis", [
    (argmax_probs, "tied greedy actions must share"),
    (no_share_probs, "plus* its share epsilon / A"),
    (minus_one_probs, "not epsilon / (A - 1)"),
])
def test_epsilon_greedy_probs_rejects(wrong, diagnosis, capsys):
    assert_rejected("epsilon_greedy_probs", wrong, capsys, diagnosis)


def table_only_probs(q, eps):  # axis=1: right on every table, crashes on a row Q[s]
    q = np.asarray(q, dtype=float)
    best = q == q.max(axis=1, keepdims=True)
    return eps / q.shape[1] + (1 - eps) * best / best.sum(axis=1, keepdims=True)


def test_epsilon_greedy_probs_rejects_an_answer_for_tables_only(capsys):
    out = assert_rejected("epsilon_greedy_probs", table_only_probs, capsys,
                          "reduce over the last axis")
    assert "5/6 cases pass" in out


# ------------------------------------------------------------------ sarsa_update


def student_sarsa_update(Q, s, a, r, s_next, a_next, terminated, alpha, gamma, *, bug=None):
    Q = np.array(Q, dtype=float)
    future = {"a": Q[s_next, a], "max": Q[s_next].max(), "s": Q[s, a_next]}.get(
        bug, Q[s_next, a_next])
    target = r if terminated else r + gamma * future
    if bug == "update next":
        Q[s_next, a_next] += alpha * (target - Q[s_next, a_next])
    elif bug == "sign":
        Q[s, a] -= alpha * (target - Q[s, a])
    elif bug == "alpha on target":
        Q[s, a] = Q[s, a] + alpha * target
    else:
        Q[s, a] += alpha * (target - Q[s, a])
    return Q


def test_sarsa_update_bootstrapping_from_the_action_taken_fails_every_case(capsys):
    out = assert_rejected("sarsa_update", lambda *a: student_sarsa_update(*a, bug="a"), capsys,
                          "you bootstrapped from Q[s', a], the action you just took",
                          every_case=True)
    assert "0/4 cases pass" in out and "Q-learning" not in out


@pytest.mark.parametrize("bug, diagnosis, every_case", [
    ("max", "that is Q-learning", True),
    ("s", "you bootstrapped from Q[s, a_next]", False),  # right when s' is s (a wall)
    ("update next", "you updated Q[s', a'] instead of Q[s, a]", True),
    ("sign", "opposite sign", True),
    ("alpha on target", "alpha scales the TD error", True),
])
def test_sarsa_update_rejects(bug, diagnosis, every_case, capsys):
    assert_rejected("sarsa_update", lambda *a: student_sarsa_update(*a, bug=bug), capsys,
                    diagnosis, every_case=every_case)


def test_sarsa_update_asks_for_the_table(capsys):
    assert_rejected("sarsa_update", lambda Q, s, a, *rest: Q[s], capsys, "return the whole")


# ------------------------------------------------------------------ q_learning_update


def student_q_update(Q, s, a, r, s_next, terminated, alpha, gamma, *, bug=None):
    Q = np.array(Q, dtype=float)
    future = {"mean": Q[s_next].mean(), "a": Q[s_next, a], "row": Q[s].max(),
              "abs": np.abs(Q[s_next]).max()}.get(bug, Q[s_next].max())
    target = r + gamma * future if (bug == "terminal" or not terminated) else r
    Q[s, a] += alpha * (target - Q[s, a])
    return Q


@pytest.mark.parametrize("bug, diagnosis", [
    ("terminal", "you bootstrapped from the terminal state"),
    ("mean", "not the mean"),
    ("a", "uses max_a' Q(s', a')"),
    ("row", "not the current one"),
    ("abs", "you took the largest |Q(s', .)|"),
])
def test_q_learning_update_rejects(bug, diagnosis, capsys):
    assert_rejected("q_learning_update", lambda *a: student_q_update(*a, bug=bug), capsys,
                    diagnosis)


def q_update_in_place(Q, s, a, r, s_next, terminated, alpha, gamma):
    Q[s, a] += alpha * (r + (0.0 if terminated else gamma * Q[s_next].max()) - Q[s, a])
    return Q


def sarsa_update_in_place(Q, s, a, r, s_next, a_next, terminated, alpha, gamma):
    Q[s, a] += alpha * (r + (0.0 if terminated else gamma * Q[s_next, a_next]) - Q[s, a])
    return Q


def expected_update_in_place(Q, s, a, r, s_next, terminated, alpha, gamma, epsilon):
    row = Q[s_next]
    best = row == row.max()
    probs = epsilon / row.size + (1 - epsilon) * best / best.sum()
    Q[s, a] += alpha * (r + (0.0 if terminated else gamma * probs @ row) - Q[s, a])
    return Q


def double_update_in_place(Q1, Q2, s, a, r, s_next, terminated, alpha, gamma, first):
    learner, other = (Q1, Q2) if first else (Q2, Q1)
    future = 0.0 if terminated else other[s_next, learner[s_next].argmax()]
    learner[s, a] += alpha * (r + gamma * future - learner[s, a])
    return Q1, Q2


@pytest.mark.parametrize("name, fn, which", [
    ("q_learning_update", q_update_in_place, "Q"),
    ("sarsa_update", sarsa_update_in_place, "Q"),
    ("expected_sarsa_update", expected_update_in_place, "Q"),
    ("double_q_update", double_update_in_place, "Q"),
])
def test_updates_reject_writing_into_the_callers_table(name, fn, which, capsys):
    """Right numbers, written into the caller's table (review F4): Double Q-learning's other
    table, or any copy a loop keeps, would change under it."""
    assert_rejected(name, fn, capsys, f"you changed the caller's {which}", every_case=True)


# ------------------------------------------------------------------ expected_sarsa_update


def student_expected_update(Q, s, a, r, s_next, terminated, alpha, gamma, epsilon, *, bug=None):
    Q = np.array(Q, dtype=float)
    row = Q[s_next]
    probs = {"argmax": argmax_probs, "no share": no_share_probs, "others": explore_others}.get(
        bug, rc.epsilon_greedy_probs)(row, epsilon)
    future = row.max() if bug == "max" else probs @ row
    target = r + gamma * future if (bug == "terminal" or not terminated) else r
    Q[s, a] += alpha * (target - Q[s, a])
    return Q


@pytest.mark.parametrize("bug, diagnosis", [
    ("terminal", "you bootstrapped from the terminal state"),
    ("max", "that is Q-learning's target"),
    ("no share", "also gets its epsilon / A share"),
    ("others", "not epsilon spread over the other actions only"),
])
def test_expected_sarsa_update_rejects(bug, diagnosis, capsys):
    assert_rejected("expected_sarsa_update", lambda *a: student_expected_update(*a, bug=bug),
                    capsys, diagnosis)


# ------------------------------------------------------------------ sarsa (the loop)


def student_sarsa(env, episodes, alpha, gamma, epsilon, seed, *, bug=None):
    Q = np.zeros((env.num_states, env.num_actions))
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    a = rc.epsilon_greedy(Q[s], epsilon, rng)
    for k in range(episodes):
        if k > 0 and bug != "no new draw":  # a new episode: choose in its first state
            a = rc.epsilon_greedy(Q[s], epsilon, rng)
        while True:
            step = env.step(np.array([a]))
            r = float(step.reward[0])
            s_boot = int(step.obs[0]) if bug == "obs" else int(step.final_obs[0])
            a_next = rc.epsilon_greedy(Q[s_boot], epsilon, rng)
            ended = step.done[0] if bug == "cut" else step.terminated[0]
            if bug == "a":
                Q = student_sarsa_update(Q, s, a, r, s_boot, a_next, bool(ended), alpha, gamma,
                                         bug="a")
            elif bug == "greedy":
                Q = student_sarsa_update(Q, s, a, r, s_boot, a_next, bool(ended), alpha, gamma,
                                         bug="max")
            elif bug == "terminal":
                Q = student_sarsa_update(Q, s, a, r, s_boot, a_next, False, alpha, gamma)
            else:
                Q = student_sarsa_update(Q, s, a, r, s_boot, a_next, bool(ended), alpha, gamma)
            if bug == "fresh":
                a_next = rc.epsilon_greedy(Q[int(step.obs[0])], epsilon, rng)
            s, a = int(step.obs[0]), a_next
            if step.done[0]:
                break
    return Q


def test_sarsa_accepts_a_student_loop():
    assert exercises.check("sarsa", student_sarsa, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("a", "you bootstrapped from Q[s', a] (check step 2)"),
    ("greedy", "that is Q-learning"),
    ("fresh", "you drew a' for the target and then another action to act"),
    ("cut", "you treated a time limit as a terminal state"),
    ("obs", "draw a' and bootstrap at step.final_obs"),
    ("no new draw", "draw the first action of the next episode"),
])
def test_sarsa_rejects(bug, diagnosis, capsys):
    assert_rejected("sarsa", lambda *a: student_sarsa(*a, bug=bug), capsys, diagnosis)


def test_a_loop_that_bootstraps_from_terminal_states_is_harmless_from_zero():
    # Terminal rows are never updated, so from Q = 0 (V = 0) bootstrapping from them adds 0:
    # the loops' checkers accept it, and the update steps (which start from any table) catch it.
    assert exercises.check("sarsa", lambda *a: student_sarsa(*a, bug="terminal"), verbose=False)
    assert exercises.check("td_lambda", lambda *a, **k: student_td_lambda(*a, **k, bug="terminal"),
                           verbose=False)


def test_sarsa_loop_with_other_draws_is_told_the_protocol(capsys):
    def own_generator(env, episodes, alpha, gamma, epsilon, seed):
        return student_sarsa(env, episodes, alpha, gamma, epsilon, seed + 1)

    assert_rejected("sarsa", own_generator, capsys, "rng = np.random.default_rng(seed)")


def test_sarsa_reference_is_the_library_loop():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=10)
    lib = control._td_control(env, 12, 0.3, 0.9, 0.2, 1, 0.0, "sarsa",
                              rng=np.random.default_rng(1), lockstep=True).Q
    np.testing.assert_array_equal(lib, student_sarsa(env, 12, 0.3, 0.9, 0.2, 1))


# ------------------------------------------------------------------ double_q_update


def student_double(Q1, Q2, s, a, r, s_next, terminated, alpha, gamma, first, *, bug=None):
    Q1, Q2 = np.array(Q1, dtype=float), np.array(Q2, dtype=float)
    if bug == "flag":
        first = not first
    learner, other = (Q1, Q2) if first else (Q2, Q1)
    pick, value = {"same": (learner, learner), "swap": (other, learner),
                   "other max": (other, other)}.get(bug, (learner, other))
    future = value[s_next, pick[s_next].argmax()]
    target = r + gamma * future if (bug == "terminal" or not terminated) else r
    learner[s, a] += alpha * (target - learner[s, a])
    return Q1, Q2


@pytest.mark.parametrize("bug, diagnosis", [
    ("terminal", "you bootstrapped from the terminal state"),
    ("same", "that is plain Q-learning"),
    ("swap", "the roles are swapped"),
    ("other max", "the other table valued its *own* best action"),
    ("flag", "True means Q1"),
])
def test_double_q_update_rejects(bug, diagnosis, capsys):
    assert_rejected("double_q_update", lambda *a: student_double(*a, bug=bug), capsys, diagnosis)


def test_double_q_update_asks_for_both_tables(capsys):
    assert_rejected("double_q_update", lambda *a: student_double(*a)[0], capsys,
                    "return the pair (Q1, Q2)")


# ------------------------------------------------------------------ max_estimators


def student_estimators(samples, *, bug=None):
    x = np.asarray(samples, dtype=float)
    half = x.shape[1] // 2
    m1, m2 = x[:, :half].mean(axis=1), x[:, half:].mean(axis=1)
    if bug == "even odd":
        m1, m2 = x[:, ::2].mean(axis=1), x[:, 1::2].mean(axis=1)
    single = x.max(axis=0).mean() if bug == "mean of max" else x.mean(axis=1).max()
    double = {"same half": m1.max(), "one way": m2[m1.argmax()],
              "own pick": 0.5 * (m1.max() + m2.max())}.get(
        bug, 0.5 * (m2[m1.argmax()] + m1[m2.argmax()]))
    return float(single), float(double)


@pytest.mark.parametrize("bug, diagnosis", [
    ("same half", "picked and valued with the same half"),
    ("one way", "only one direction"),
    ("own pick", "each half valued its own pick"),
    ("mean of max", "not the mean of maxima"),
    ("even odd", "you split the samples even/odd"),
])
def test_max_estimators_rejects(bug, diagnosis, capsys):
    assert_rejected("max_estimators", lambda x: student_estimators(x, bug=bug), capsys, diagnosis)


def test_why_decaying_sarsa_stays_safe_explains_each_wrong_letter(capsys):
    for letter, why in [("a", "Singh et al."), ("b", "the values do settle"),
                        ("d", "nothing about the cliff changes")]:
        assert_rejected("why_decaying_sarsa_stays_safe", lambda letter=letter: letter, capsys, why)
    assert_rejected("why_decaying_sarsa_stays_safe", lambda: 3, capsys, "answer with one letter")


# ------------------------------------------------------------------ n_step_sarsa


def student_n_step_sarsa(env, episodes, n, alpha, gamma, epsilon, seed, *, bug=None):
    Q = np.zeros((env.num_states, env.num_actions))
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    width = n - 1 if bug == "short" else n
    for _ in range(episodes):
        a = rc.epsilon_greedy(Q[s], epsilon, rng)
        states, actions, rewards = [s], [a], []
        while True:
            step = env.step(np.array([a]))
            rewards.append(float(step.reward[0]))
            s_final = int(step.final_obs[0])
            a = rc.epsilon_greedy(Q[s_final], epsilon, rng)
            states.append(s_final)
            actions.append(a)
            tau = len(rewards) - width
            if width > 0 and tau >= 0 and not step.done[0]:
                boot = Q[states[-1]].max() if bug == "max" else Q[states[-1], actions[-1]]
                G = rc.n_step_target(rewards[tau:], boot, False, gamma)
                Q[states[tau], actions[tau]] += alpha * (G - Q[states[tau], actions[tau]])
            if step.done[0]:
                break
        T = len(rewards)
        if bug != "no flush":
            for tau in range(max(T - width, 0), T):
                end = step.done[0] if bug == "cut as end" else step.terminated[0]
                G = rc.n_step_target(rewards[tau:], Q[states[T], actions[T]],
                                     bool(end) and bug != "terminal", gamma)
                Q[states[tau], actions[tau]] += alpha * (G - Q[states[tau], actions[tau]])
        s = int(step.obs[0])
    return Q


def test_n_step_sarsa_with_n_1_is_sarsa():
    env = rc.CliffWalking()
    np.testing.assert_array_equal(student_n_step_sarsa(env, 4, 1, 0.5, 1.0, 0.1, 3),
                                  student_sarsa(env, 4, 0.5, 1.0, 0.1, 3))
    assert exercises.check("n_step_sarsa", student_n_step_sarsa, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("no flush", "flush them when it ends"),
    ("short", "your windows hold n - 1 rewards"),
    ("max", "n-step SARSA uses the action it took there"),
    ("cut as end", "you treated a time limit as a terminal state when flushing"),
])
def test_n_step_sarsa_rejects(bug, diagnosis, capsys):
    assert_rejected("n_step_sarsa", lambda *a: student_n_step_sarsa(*a, bug=bug), capsys,
                    diagnosis)


# ------------------------------------------------------------------ sarsa_lambda


def student_sarsa_lambda(env, episodes, lam, alpha, gamma, epsilon, seed, *, bug=None):
    Q = np.zeros((env.num_states, env.num_actions))
    z = np.zeros_like(Q)
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        a = rc.epsilon_greedy(Q[s], epsilon, rng)
        while True:
            step = env.step(np.array([a]))
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            a_next = rc.epsilon_greedy(Q[s_final], epsilon, rng)
            boot = 0.0 if (step.terminated[0] and bug != "terminal") else Q[s_final, a_next]
            delta = r + gamma * boot - Q[s, a]
            z *= gamma * lam
            if bug == "accumulating":
                z[s, a] += 1.0
            elif bug == "state":
                z[s] = 1.0
            else:
                z[s, a] = 1.0
            Q += alpha * delta * z
            s, a = int(step.obs[0]), a_next
            if step.done[0]:
                break
        if bug != "keep":
            z[:] = 0.0
    return Q


def test_sarsa_lambda_with_lambda_0_is_sarsa():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=10)
    np.testing.assert_allclose(student_sarsa_lambda(env, 8, 0.0, 0.3, 0.9, 0.2, 5),
                               student_sarsa(env, 8, 0.3, 0.9, 0.2, 5), atol=1e-12)
    assert exercises.check("sarsa_lambda", student_sarsa_lambda, verbose=False)


@pytest.mark.parametrize("bug, diagnosis", [
    ("keep", "your traces survived the end of an episode"),
    ("accumulating", "those are accumulating traces"),
    ("state", "not every action of the state"),
])
def test_sarsa_lambda_rejects(bug, diagnosis, capsys):
    assert_rejected("sarsa_lambda", lambda *a: student_sarsa_lambda(*a, bug=bug), capsys,
                    diagnosis)


# ------------------------------------------------------------------ loops in the bank


def test_bank_loops_without_a_bug_are_the_references():
    bug = None
    walk = bank._walk(5, 0.0, 1.0, max_steps=6)
    np.testing.assert_allclose(bank._td0_variant(walk, 20, 0.2, 0.9, 3, 0.5, bug),
                               bank._td0_reference(walk, 20, 0.2, 0.9, 3, 0.5), atol=1e-12)
    np.testing.assert_allclose(bank._n_step_variant(walk, 20, 3, 0.2, 0.9, 3, 0.5, bug),
                               bank._n_step_reference(walk, 20, 3, 0.2, 0.9, 3, 0.5), atol=1e-12)
    np.testing.assert_allclose(bank._td_lambda_variant(walk, 20, 0.7, 0.2, 0.9, 3, False, bug),
                               bank._td_lambda_reference(walk, 20, 0.7, 0.2, 0.9, 3), atol=1e-12)
    grid = rc.GridWorld(size=4, slip=0.2, max_steps=10)
    np.testing.assert_array_equal(bank._sarsa_loop_variant(grid, 10, 0.3, 0.9, 0.2, 4, bug),
                                  bank._sarsa_loop_reference(grid, 10, 0.3, 0.9, 0.2, 4))


# ---------------------------------------------------------------------------------------------
# Moved from tests/test_tabular.py: a terminal-bootstrap bug fails and is explained in lesson terms


def test_exercises_catch_and_explain_a_terminal_bootstrap(capsys):
    def leaky_q_update(Q, s, a, r, s_next, terminated, alpha, gamma):
        Q = np.array(Q, dtype=float)
        Q[s, a] += alpha * (r + gamma * np.max(Q[s_next]) - Q[s, a])
        return Q

    assert not rc.exercises.check("q_learning_update", leaky_q_update)
    assert not rc.exercises.check("td0", lambda *a, **k: student_td0(*a, **k, bug="terminal"))
    assert capsys.readouterr().out.count("you bootstrapped from the terminal state") >= 2


# ---------------------------------------------------------------------------------------------
# The remaining explain branches: shapes, normalisation, unanswered questions, other draws


def test_epsilon_greedy_probs_names_shape_and_normalisation(capsys):
    assert_rejected("epsilon_greedy_probs", lambda q, eps: np.ones(np.shape(q)[-1] + 1),
                    capsys, "one probability per action and state")
    assert_rejected("epsilon_greedy_probs", lambda q, eps: 2 * rc.epsilon_greedy_probs(q, eps)
                    + 0.01, capsys, "each row must sum to 1")


def test_max_estimators_asks_for_both(capsys):
    assert_rejected("max_estimators", lambda x: student_estimators(x)[1], capsys,
                    "return the pair (single, double)")


def test_unanswered_question_says_so(capsys):
    assert_rejected("why_decaying_sarsa_stays_safe", lambda: None, capsys, "not answered yet")


def test_n_step_sarsa_and_sarsa_lambda_with_other_draws_are_told_the_protocol(capsys):
    assert_rejected("n_step_sarsa", lambda env, e, n, a, g, eps, seed: student_n_step_sarsa(
        env, e, n, a, g, eps, seed + 1), capsys, "check the draws")
    assert_rejected("sarsa_lambda", lambda env, e, lam, a, g, eps, seed: student_sarsa_lambda(
        env, e, lam, a, g, eps, seed + 1), capsys, "same draws as your SARSA loop")


def test_a_hanging_wrong_answer_is_cut_by_the_cases_time_limits(capsys):
    # A loop that never learns and acts greedily would walk into a wall forever on a grid
    # without a time limit; the cases' limits end its episodes, so the check finishes and fails.
    def frozen(env, episodes, gamma, epsilons, seed):
        Q = np.zeros((env.num_states, env.num_actions))
        env.reset(seed=seed)
        for _ in range(episodes):
            while not env.step(np.array([rc.LEFT])).done[0]:
                pass
        return Q

    assert not exercises.check("mc_control", frozen)
    capsys.readouterr()
