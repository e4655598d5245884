"""Exercises of lessons 04-06: Monte Carlo returns, updates and control, importance sampling;
TD(0), n-step TD, TD(lambda), lambda-returns and true online TD(lambda); the updates and loops of
SARSA, Q-learning, Expected SARSA and Double Q-learning, the double estimator, n-step SARSA and
SARSA(lambda).

Every checker knows the mistakes people make with its method: ``explain`` recomputes each typical
wrong answer on the case at hand and names the one the reader's result matches. The loops are
graded exactly, so their docstrings in the lessons fix how random numbers are drawn:
``rng = np.random.default_rng(seed)``, ``env.reset(seed=seed)``, and one
``rc.epsilon_greedy(Q[s], epsilon, rng)`` per action chosen (``rlcourse.tabular.exploration``).
"""

from __future__ import annotations

import numpy as np

from ...envs.gridworld import CliffWalking, GridWorld
from ...envs.tabular import TabularMDP
from ...tabular import control as _control
from ...tabular.exploration import epsilon_greedy, epsilon_greedy_probs
from ...tabular.prediction import n_step_td, record_episodes, td0, td_lambda
from ...tabular.targets import lambda_returns, mc_returns, n_step_target
from ..registry import Case, default_compare, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _close(a, b) -> bool:
    try:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-7, atol=1e-9, equal_nan=True))


def _first_match(got, candidates):
    """The message of the first ``(message, wrong_answer)`` whose wrong answer equals ``got``
    (``wrong_answer`` a value, or a function computing it, called only when needed)."""
    for message, wrong in candidates:
        with np.errstate(all="ignore"):
            value = wrong() if callable(wrong) else wrong
        if isinstance(value, tuple):
            if isinstance(got, tuple) and len(got) == len(value) and all(
                    _close(g, v) for g, v in zip(got, value)):
                return message
        elif _close(got, value):
            return message
    return None


class _WroteInput:
    """What an answer returned after writing into the arrays it was given: the caller's tables
    changed, which the docstrings ("updated copies") rule out."""

    def __init__(self, result, names):
        self.result, self.names = result, names


def _copies_only(arg_names):
    """``call``, ``compare`` and ``explain`` wrappers that fail an answer which changes its input
    arrays in place (it may return the right numbers, but a loop that keeps the old table, e.g.
    Double Q-learning's second table or a saved copy, would see them change under it)."""

    def call(fn, *args, **kwargs):
        before = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
        out = fn(*args, **kwargs)
        changed = [arg_names[i] for i, (a, b) in enumerate(zip(args, before))
                   if b is not None and not (np.shape(a) == b.shape and np.array_equal(a, b))]
        return _WroteInput(out, changed) if changed else out

    def message(got):
        return (f"you changed the caller's {' and '.join(got.names)} in place: return an updated "
                f"copy (np.array(table, dtype=float)) and leave the input as it was")

    def wrap_compare(compare):
        return lambda got, expected: (message(got) if isinstance(got, _WroteInput)
                                      else compare(got, expected))

    def wrap_explain(explain):
        def wrapped(case, got, expected):
            if isinstance(got, _WroteInput):
                return message(got)
            return explain(case, got, expected) if explain else None
        return wrapped

    return call, wrap_compare, wrap_explain


def _register_copying(name, reference, cases, arg_names, explain, hint):
    """Register an update exercise whose answer must return copies, not change its inputs."""
    call, wrap_compare, wrap_explain = _copies_only(arg_names)
    register(name, reference, cases, compare=wrap_compare(default_compare),
             explain=wrap_explain(explain), hint=hint, call=call)


def _walk(k, left_reward, right_reward, max_steps=None, terminal_value_trap=False):
    """Sutton & Barto's random walk: states 1..k between terminal states 0 and k + 1, one action
    moving left or right with probability 1/2, start in the middle."""
    S = k + 2
    P, R = np.zeros((S, 1, S)), np.zeros((S, 1, S))
    for s in range(1, S - 1):
        P[s, 0, s - 1] = P[s, 0, s + 1] = 0.5
    P[0, 0, 0] = P[S - 1, 0, S - 1] = 1.0
    R[1, 0, 0], R[S - 2, 0, S - 1] = left_reward, right_reward
    terminal = np.zeros(S, dtype=bool)
    terminal[[0, S - 1]] = True
    start = np.zeros(S)
    start[S // 2] = 1.0
    return TabularMDP(P, R, terminal, start, max_steps=max_steps)


# ================================================================== lesson 04: Monte Carlo
# ------------------------------------------------------------------ mc_returns


def _mc_returns_cases():
    return [
        Case("three rewards, gamma 0.5", (np.array([1.0, 0.0, 2.0]), 0.5)),
        Case("undiscounted, gamma 1", (np.array([-1.0, -1.0, -1.0, 10.0]), 1.0)),
        Case("one reward", (np.array([3.0]), 0.9)),
        Case("cut by a time limit: final_value 4", (np.array([1.0, 1.0, 2.0]), 0.9),
             {"final_value": 4.0}),
    ]


def _mc_returns_explain(case, got, expected):
    rewards, gamma = case.args
    final = case.kwargs.get("final_value", 0.0)
    powers = gamma ** np.arange(len(rewards))
    return _first_match(got, [
        ("your returns run forwards: G[t] is the reward at t plus the discounted rewards *after* "
         "t, so accumulate from the episode's end backwards",
         lambda: np.cumsum(rewards * powers)),
        ("the episode was cut by a time limit: the backward sum starts from final_value (the "
         "value of the state it stopped in), not from 0",
         lambda: mc_returns(rewards, gamma)),
        ("final_value is one step beyond the last reward, so it is discounted too: "
         "G[T-1] = rewards[T-1] + gamma * final_value",
         lambda: _returns_final_undiscounted(rewards, gamma, final)),
        ("you forgot to discount: each step further away multiplies by gamma",
         lambda: np.cumsum(rewards[::-1])[::-1] + final),
        ("the reward of the step taken at t is not discounted: G[t] = rewards[t] + gamma * "
         "G[t + 1], so rewards[t] enters with weight 1",
         lambda: gamma * mc_returns(rewards, gamma, final)),
    ])


def _returns_final_undiscounted(rewards, gamma, final):
    G, g = np.zeros(len(rewards)), None
    for t in reversed(range(len(rewards))):
        g = rewards[t] + final if g is None else rewards[t] + gamma * g
        G[t] = g
    return G


register(
    "mc_returns", mc_returns, _mc_returns_cases, explain=_mc_returns_explain,
    hint="the return at t is the reward at t plus the discounted return at t + 1, and the return "
         "after the last step is final_value: which end do you start from?",
)


# ------------------------------------------------------------------ first_visit_update


def _first_visit_reference(table, counts, keys, rewards, gamma):
    table, counts = np.array(table, dtype=float), np.array(counts, dtype=float)
    returns = mc_returns(rewards, gamma)
    seen = set()
    for key, g in zip(_keys(keys), returns):
        if key in seen:
            continue
        seen.add(key)
        counts[key] += 1
        table[key] += (g - table[key]) / counts[key]
    return table, counts


def _keys(keys):
    """States as ints, (state, action) pairs as tuples of ints."""
    return [tuple(int(x) for x in k) if np.ndim(k) else int(k) for k in keys]


def _visit_variant(table, counts, keys, rewards, gamma, variant):
    table, counts = np.array(table, dtype=float), np.array(counts, dtype=float)
    returns = mc_returns(rewards, gamma)
    keys = _keys(keys)
    if variant == "forwards":
        returns = np.cumsum(np.asarray(rewards) * gamma ** np.arange(len(rewards)))
    steps = list(zip(keys, returns))
    if variant == "last":
        last = {k: g for k, g in steps}
        steps = list(last.items())
    elif variant == "state only":  # first visit of the *state*, whatever the action
        seen, kept = set(), []
        for k, g in steps:
            if k[0] not in seen:
                seen.add(k[0])
                kept.append((k, g))
        steps = kept
    elif variant != "every":
        seen, kept = set(), []
        for k, g in steps:
            if k not in seen:
                seen.add(k)
                kept.append((k, g))
        steps = kept
    for k, g in steps:
        counts[k] += 1
        size = 0.1 if variant == "constant step" else 1.0 / counts[k]
        if variant == "count before":
            size = 1.0 / max(counts[k] - 1, 1)
        table[k] += size * (g - table[k])
    return table, counts


def _first_visit_cases():
    pairs = np.array([[0, 1], [1, 0], [0, 1], [0, 2], [2, 1]])
    return [
        Case("states, no revisits, fresh table", (np.zeros(4), np.zeros(4), np.array([0, 1, 2]),
                                                  np.array([0.0, 0.0, 1.0]), 0.9)),
        Case("state 1 visited twice", (np.zeros(4), np.zeros(4), np.array([0, 1, 2, 1]),
                                       np.array([-1.0, -1.0, -1.0, 5.0]), 1.0)),
        Case("a table with history", (np.array([0.5, 2.0, -1.0]), np.array([2.0, 4.0, 1.0]),
                                      np.array([2, 0, 2, 0, 1]),
                                      np.array([1.0, 0.0, 1.0, 0.0, 3.0]), 0.8)),
        Case("(state, action) pairs: pair (0, 1) twice, state 0 with two actions",
             (np.full((3, 3), 0.5), np.ones((3, 3)), pairs,
              np.array([1.0, -1.0, 2.0, 0.0, 4.0]), 0.9)),
    ]


def _first_visit_explain(case, got, expected):
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (table, counts), both updated copies"
    args = case.args
    if not np.isfinite(np.asarray(got[0], dtype=float)).all():
        return ("inf or NaN: you divided by the count before counting this visit (0 on a first "
                "visit); count the visit first, then step by 1 / N")
    found = _first_match(got, [
        ("you averaged every visit: first-visit MC uses only the return that follows a key's "
         "*first* visit in the episode", lambda: _visit_variant(*args, "every")),
        ("you kept the return of the *last* visit (a later visit overwrote the first): the "
         "first visit's return is the one that covers the whole rest of the episode",
         lambda: _visit_variant(*args, "last")),
        ("returns run backwards from the episode's end: G[t] is the reward at t plus the "
         "discounted rewards after t", lambda: _visit_variant(*args, "forwards")),
        ("a sample average moves by 1 / N(key), counting this visit: a constant step size is "
         "a different estimator", lambda: _visit_variant(*args, "constant step")),
        ("count the visit first, then step by 1 / N with the new count (the first return must "
         "replace the initial value completely)", lambda: _visit_variant(*args, "count before")),
    ])
    if found:
        return found
    if np.ndim(args[2]) == 2 and _close(got[0], _visit_variant(*args, "state only")[0]):
        return ("for Q the keys are (state, action) pairs: the state visited again with a "
                "different action is a new pair, with its own first visit")
    if _close(got[0], args[0]) and _close(got[1], args[1]):
        return "nothing changed: return updated copies of the table and the counts"
    return None


_register_copying(
    "first_visit_update", _first_visit_reference, _first_visit_cases, ("table", "counts"),
    explain=_first_visit_explain,
    hint="the return that follows a key's first visit covers everything that happened after it; "
         "an average can be kept up to date with a count and one step towards each new sample. "
         "Index the table with the key itself (an int, or an (s, a) tuple)",
)


# ------------------------------------------------------------------ mc_control (the loop)


def _mc_control_reference(env, episodes, gamma, epsilons, seed):
    return _control._mc_control(env, episodes, gamma, np.asarray(epsilons, dtype=float), True,
                                seed, None, 0.0, rng=np.random.default_rng(seed)).Q


def _mc_control_variant(env, episodes, gamma, epsilons, seed, bug):
    """The reader's loop with one typical bug (first-visit averages, as the lesson asks)."""
    S, A = env.num_states, env.num_actions
    rng = np.random.default_rng(seed)
    Q, counts = np.zeros((S, A)), np.zeros((S, A))
    s = int(env.reset(seed=seed)[0])
    for k in range(episodes):
        eps = {"greedy": 0.0, "first epsilon": epsilons[0]}.get(bug, epsilons[k])
        if bug == "reset every episode":
            s = int(env.reset(seed=seed)[0])
        pairs, rewards = [], []
        while True:
            a = epsilon_greedy(Q[s], eps, rng)
            step = env.step(np.array([a]))
            pairs.append((s, a))
            rewards.append(float(step.reward[0]))
            if step.done[0]:
                break
            s = int(step.obs[0])
        variant = "every" if bug == "every visit" else "first"
        Q, counts = _visit_variant(Q, counts, pairs, rewards, gamma, variant)
        s = int(step.final_obs[0]) if bug == "final_obs" else int(step.obs[0])
    return Q


def _mc_control_cases():
    # The time limits are never reached by a loop that learns (a test checks), but they end the
    # episodes of a wrong answer that would otherwise walk into a wall forever.
    grid = GridWorld(size=3, slip=0.2, step_reward=-0.1, max_steps=200)
    holes = GridWorld(layout=["S..", ".H.", "..G"], step_reward=-0.05, max_steps=200)
    return [
        Case("3x3 slippery grid, 40 episodes, epsilon 0.2", (grid, 40, 0.9, np.full(40, 0.2), 0)),
        Case("3x3 grid with a hole, epsilon decaying from 1 to 0",
             (holes, 60, 0.95, np.linspace(1.0, 0.0, 60), 1)),
        Case("3x3 slippery grid, another seed, epsilon 0.5", (grid, 30, 1.0, np.full(30, 0.5), 7)),
    ]


def _mc_control_explain(case, got, expected):
    args = case.args
    found = _first_match(got, [
        ("you averaged every visit of a pair: this exercise asks for first-visit MC (step 2)",
         lambda: _mc_control_variant(*args, "every visit")),
        ("your agent never explores: act with rc.epsilon_greedy(Q[s], epsilons[k], rng), not "
         "greedily", lambda: _mc_control_variant(*args, "greedy")),
        ("every episode used epsilons[0]: episode k explores with epsilons[k] (a schedule)",
         lambda: _mc_control_variant(*args, "first epsilon")),
        ("after an episode ends, step.obs is already the next episode's first state; you went "
         "on from final_obs, the state the old episode ended in",
         lambda: _mc_control_variant(*args, "final_obs")),
        ("you reset the environment with the same seed before every episode, so every episode "
         "replays the same random numbers: reset once, before the first episode",
         lambda: _mc_control_variant(*args, "reset every episode")),
    ])
    if found:
        return found
    got = np.asarray(got)
    if got.shape == expected.shape:
        return ("your table differs from the reference run. Check step 2 first, then the draws: "
                "rng = np.random.default_rng(seed), env.reset(seed=seed) once, and exactly one "
                "rc.epsilon_greedy(Q[s], epsilons[k], rng) per step, before env.step")
    return None


register(
    "mc_control", _mc_control_reference, _mc_control_cases, explain=_mc_control_explain,
    hint="play a whole episode with the current epsilon-greedy policy, remembering each "
         "(state, action) pair and reward; only then update Q with step 2's function; the next "
         "episode starts where the environment says (obs), not where the last one ended",
)


# ------------------------------------------------------------------ exercise: constant-alpha weights


def _constant_alpha_weights(alpha, n):
    return np.r_[(1 - alpha) ** n, alpha * (1 - alpha) ** np.arange(n - 1, -1, -1)]


def _weights_cases():
    return [
        Case("alpha 0.5, three returns", (0.5, 3)),
        Case("alpha 0.1, ten returns", (0.1, 10)),
        Case("alpha 1: only the last return counts", (1.0, 4)),
    ]


def _weights_explain(case, got, expected):
    alpha, n = case.args
    return _first_match(got, [
        ("weights run from the oldest to the newest: the newest return gets alpha, the initial "
         "value (1 - alpha)**n first", lambda: np.r_[expected[0], expected[1:][::-1]]),
        ("you left out the initial value V_0: it keeps weight (1 - alpha)**n, and with it the "
         "weights sum to 1", lambda: expected[1:]),
        ("those are the sample average's weights (1/n each): a constant step forgets old returns "
         "geometrically", lambda: np.r_[0.0, np.full(n, 1.0 / n)]),
        ("off by one power: after n updates the oldest return has been shrunk n - 1 times",
         lambda: np.r_[(1 - alpha) ** n, alpha * (1 - alpha) ** np.arange(n, 0, -1)]),
    ])


register(
    "constant_alpha_weights", _constant_alpha_weights, _weights_cases, explain=_weights_explain,
    hint="unroll V_n = V_(n-1) + alpha (G_n - V_(n-1)) = (1 - alpha) V_(n-1) + alpha G_n a few "
         "times and read off what multiplies V_0 and each G_i",
)


# ------------------------------------------------------------------ exercise: IS prediction


def _is_prediction(episodes, target, behaviour, num_states, gamma, weighted, variant=None):
    """Every-visit off-policy MC prediction of V^target from episodes of ``behaviour``."""
    num, den, count = np.zeros(num_states), np.zeros(num_states), np.zeros(num_states)
    for ep in episodes:
        s, a = ep.states[:-1], ep.actions
        ratio = target[s, a] / behaviour[s, a]
        if variant == "inverted":
            ratio = behaviour[s, a] / target[s, a]
        # rho[t] = product of the ratios from t to the end (the action at t included)
        rho = np.cumprod(ratio[::-1])[::-1]
        if variant == "from t+1":
            rho = np.r_[rho[1:], 1.0]
        elif variant == "whole episode":
            rho = np.full(len(rho), rho[0])
        G = mc_returns(ep.rewards, gamma)
        seen = set()
        for t in range(len(G)):
            if variant == "first visit":
                if int(s[t]) in seen:
                    continue
                seen.add(int(s[t]))
            num[s[t]] += rho[t] * G[t]
            den[s[t]] += rho[t]
            count[s[t]] += 1
    if weighted:
        if variant == "nan":
            with np.errstate(invalid="ignore", divide="ignore"):
                return num / den
        return np.divide(num, den, out=np.zeros(num_states), where=den > 0)
    return np.divide(num, count, out=np.zeros(num_states), where=count > 0)


def _is_cases():
    env = GridWorld(size=3, slip=0.1, step_reward=-0.1, max_steps=None)
    behaviour = np.full((9, 4), 0.25)
    target = np.full((9, 4), 0.05)
    target[np.arange(9), [2, 2, 1, 2, 2, 1, 2, 2, 1]] = 0.85  # mostly right, then down
    greedy = np.eye(4)[[2, 2, 1, 2, 2, 1, 2, 2, 1]]
    episodes = record_episodes(env, behaviour, 40, seed=3)
    return [
        Case("ordinary IS, a stochastic target", (episodes, target, behaviour, 9, 0.9, False)),
        Case("weighted IS, a stochastic target", (episodes, target, behaviour, 9, 0.9, True)),
        Case("weighted IS, a greedy target (many weights are 0)",
             (episodes, greedy, behaviour, 9, 1.0, True)),
        Case("ordinary IS, a greedy target", (episodes, greedy, behaviour, 9, 1.0, False)),
    ]


def _is_explain(case, got, expected):
    episodes, target, behaviour, S, gamma, weighted = case.args
    found = _first_match(got, [
        ("the ratio at time t includes the action taken at t: V(S_t) is the value of *acting* "
         "with the target policy from S_t, so A_t needs correcting too (from t + 1 on is the "
         "ratio for Q(S_t, A_t))",
         lambda: _is_prediction(episodes, target, behaviour, S, gamma, weighted, "from t+1")),
        ("you weighted every return with the whole episode's ratio: the return from t depends "
         "only on the actions from t on",
         lambda: _is_prediction(episodes, target, behaviour, S, gamma, weighted,
                                "whole episode")),
        ("the ratio is target / behaviour: it reweights what the behaviour did into what the "
         "target would have done",
         lambda: _is_prediction(episodes, target, behaviour, S, gamma, weighted, "inverted")),
        ("that is the other estimator: ordinary IS divides by the number of visits, weighted IS "
         "by the sum of the ratios",
         lambda: _is_prediction(episodes, target, behaviour, S, gamma, not weighted)),
        ("you averaged the returns without any ratio: that is the behaviour policy's value",
         lambda: _is_prediction(episodes, behaviour, behaviour, S, gamma, weighted)),
        ("you used only each state's first visit per episode: this exercise asks for "
         "every-visit IS, so every visit adds its own rho_t G_t (and, for ordinary IS, counts once)",
         lambda: _is_prediction(episodes, target, behaviour, S, gamma, weighted, "first visit")),
    ])
    if found is None and np.isnan(np.asarray(got, dtype=float)).any():
        return ("NaN: a state whose weights are all 0 (the target never takes the behaviour's "
                "actions there) has no weighted estimate; leave it at 0 instead of 0 / 0")
    return found


register(
    "importance_sampling_mc", _is_prediction, _is_cases, explain=_is_explain,
    hint="a return from time t was produced by the behaviour's actions from t to the end: how "
         "much more (or less) likely were those actions under the target? Ordinary IS averages "
         "the reweighted returns over visits; weighted IS normalises by the weights themselves",
)


# ------------------------------------------------------------------ exercise: off-policy MC control


def _off_policy_control(episodes, behaviour, num_states, num_actions, gamma, variant=None):
    """Sutton & Barto's off-policy MC control (section 5.7): weighted IS, a greedy target."""
    Q, C = np.zeros((num_states, num_actions)), np.zeros((num_states, num_actions))
    for ep in episodes:
        G, W = 0.0, 1.0
        for t in reversed(range(len(ep.rewards))):
            s, a = int(ep.states[t]), int(ep.actions[t])
            G = gamma * G + ep.rewards[t]
            if variant == "break first" and a != int(np.argmax(Q[s])):
                break
            C[s, a] += 1.0 if variant == "ordinary" else W
            Q[s, a] += W / C[s, a] * (G - Q[s, a])
            if variant != "no break" and a != int(np.argmax(Q[s])):
                break
            W /= behaviour[s, a]
    return Q


def _off_policy_cases():
    grid = GridWorld(size=3, slip=0.1, step_reward=-0.1)
    uniform = np.full((9, 4), 0.25)
    lean = np.tile([0.1, 0.35, 0.35, 0.2], (9, 1))
    return [
        Case("uniform behaviour, 30 episodes", (record_episodes(grid, uniform, 30, seed=0),
                                               uniform, 9, 4, 0.9)),
        Case("a behaviour that leans down and right", (record_episodes(grid, lean, 30, seed=1),
                                                      lean, 9, 4, 1.0)),
    ]


def _off_policy_explain(case, got, expected):
    args = case.args
    return _first_match(got, [
        ("the target policy is greedy: once the behaviour took a non-greedy action A_t, every "
         "earlier step's ratio is 0, so stop the backward loop there (break)",
         lambda: _off_policy_control(*args, "no break")),
        ("you stopped before updating Q(S_t, A_t): the pair the behaviour took is learned "
         "first (its return needs no correction for A_t), and only then, if A_t is not greedy "
         "in the updated Q, the earlier steps are dropped",
         lambda: _off_policy_control(*args, "break first")),
        ("weighted IS accumulates C(s, a) += W and steps by W / C; counting visits (C += 1) is "
         "not an average of anything", lambda: _off_policy_control(*args, "ordinary")),
    ])


register(
    "off_policy_mc_control", _off_policy_control, _off_policy_cases,
    explain=_off_policy_explain,
    hint="walk each episode backwards keeping the return G and the weight W of the actions "
         "already passed; a greedy target gives weight 0 to everything before an action it would "
         "not take",
)


# ================================================================== lesson 05: TD learning
# ------------------------------------------------------------------ td0 (the loop)


def _td0_reference(env, episodes, alpha, gamma, seed, init=0.0):
    return td0(env, np.ones((env.num_states, 1)), episodes, alpha, gamma, seed=seed, init=init).V


def _td0_variant(env, episodes, alpha, gamma, seed, init, bug):
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=np.int64)
    for _ in range(episodes):
        while True:
            step = env.step(action)
            r, s_final, s_obs = float(step.reward[0]), int(step.final_obs[0]), int(step.obs[0])
            end = bool(step.done[0]) if bug == "cut as end" else bool(step.terminated[0])
            nxt = s_obs if bug == "obs" else s_final
            target = r + gamma * V[nxt] if (bug == "terminal" or not end) else r
            if bug == "next state":
                V[nxt] += alpha * (target - V[nxt])
            else:
                V[s] += alpha * (target - V[s])
            s = s_final if (bug == "final_obs continue" and step.done[0]) else s_obs
            if step.done[0]:
                break
    return V


def _td0_cases():
    return [
        Case("5-state walk, values start at 0.5 (terminal entries too)",
             (_walk(5, 0.0, 1.0), 30, 0.1, 1.0, 1), {"init": 0.5}),
        Case("5-state walk cut after 4 steps (truncations)",
             (_walk(5, 0.0, 1.0, max_steps=4), 30, 0.2, 0.9, 2), {"init": 0.5}),
        Case("19-state walk, rewards -1 and +1", (_walk(19, -1.0, 1.0), 10, 0.3, 1.0, 3)),
    ]


_TD0_BUGS = [
    ("terminal", "you bootstrapped from the terminal state: its value is 0 whatever the table "
                 "holds, so the target of a terminated step is the reward alone"),
    ("cut as end", "you treated a time limit as a terminal state: a truncated step bootstraps "
                   "from V(final_obs), the state the clock stopped in"),
    ("obs", "you bootstrapped from step.obs, which after an episode ends is already the next "
            "episode's first state: the target uses step.final_obs"),
    ("next state", "you updated the state the step led to: TD(0) moves V of the state the step "
                   "started from towards r + gamma V(next)"),
    ("final_obs continue", "after an episode ends, continue from step.obs (the new episode's "
                           "first state), not from final_obs"),
]


def _loop_explain(variant, bugs):
    def explain(case, got, expected):
        found = _first_match(got, [(message, (lambda b=bug: variant(case, b)))
                                   for bug, message in bugs])
        if found is None and np.shape(got) == np.shape(expected):
            return ("your values differ from the reference run; each step's randomness comes "
                    "from the environment alone, so reset it once with the seed and take one "
                    "env.step per step")
        return found
    return explain


register(
    "td0", _td0_reference, _td0_cases,
    explain=_loop_explain(lambda case, bug: _td0_variant(*case.args, case.kwargs.get("init", 0.0),
                                                         bug), _TD0_BUGS),
    hint="after every step move V of the state you were in towards the reward plus the "
         "discounted value of where the step took you; what is that value when the step ended "
         "the episode, and when a clock cut it?",
)


# ------------------------------------------------------------------ n_step_target


def _n_step_cases():
    return [
        Case("one reward (TD(0))", (np.array([1.0]), 2.0, False, 0.9)),
        Case("three rewards, bootstrap", (np.array([1.0, 0.0, -1.0]), 5.0, False, 0.5)),
        Case("episode ends inside the window", (np.array([1.0, 2.0]), 5.0, True, 0.9)),
        Case("gamma 1, four rewards", (np.array([-1.0, -1.0, -1.0, -1.0]), 3.0, False, 1.0)),
    ]


def _n_step_explain(case, got, expected):
    rewards, value, terminated, gamma = case.args
    m = len(rewards)
    discounted = float(np.sum(gamma ** np.arange(m) * rewards))
    candidates = [
        ("the bootstrap value is m steps away: discount it by gamma ** m, not gamma ** (m - 1)",
         discounted + gamma ** (m - 1) * value),
        ("every reward is discounted by its distance from the window's start: the first by "
         "gamma ** 0", float(np.sum(gamma ** np.arange(1, m + 1) * rewards)) + (
             0.0 if terminated else gamma ** m * value)),
    ]
    if terminated:
        candidates.insert(0, ("you bootstrapped from the terminal state: its value is 0, so the "
                              "target is the discounted rewards alone",
                              discounted + gamma ** m * value))
    else:
        candidates.insert(0, ("the window did not reach a terminal state: add gamma ** m * "
                              "bootstrap_value", discounted))
    return _first_match(got, candidates)


register(
    "n_step_target", n_step_target, _n_step_cases, compare=default_compare,
    explain=_n_step_explain,
    hint="real rewards for the steps you have, each discounted by how far it is from the start, "
         "then the estimate for everything after, discounted by the window's length, unless "
         "nothing comes after",
)


# ------------------------------------------------------------------ n_step_td (the loop)


def _n_step_reference(env, episodes, n, alpha, gamma, seed, init=0.0):
    return n_step_td(env, np.ones((env.num_states, 1)), episodes, n, alpha, gamma, seed=seed,
                     init=init).V


def _n_step_variant(env, episodes, n, alpha, gamma, seed, init, bug):
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=np.int64)
    width = n - 1 if bug == "window n-1" else n
    for _ in range(episodes):
        states, rewards = [s], []
        while True:
            step = env.step(action)
            rewards.append(float(step.reward[0]))
            states.append(int(step.final_obs[0]))
            done = bool(step.done[0])
            tau = len(rewards) - width
            if tau >= 0 and not done and width > 0:
                G = n_step_target(rewards[tau:], V[states[-1]], False, gamma)
                V[states[tau]] += alpha * (G - V[states[tau]])
            if done:
                break
        T = len(rewards)
        terminated = bool(step.terminated[0])
        if bug == "terminal":
            terminated = False
        if bug != "no flush":
            for tau in range(max(T - width, 0), T):
                G = n_step_target(rewards[tau:], V[states[T]], terminated, gamma)
                V[states[tau]] += alpha * (G - V[states[tau]])
        s = int(step.obs[0])
    return V


def _n_step_loop_cases():
    return [
        Case("19-state walk, n = 4", (_walk(19, -1.0, 1.0), 10, 4, 0.2, 1.0, 2)),
        Case("5-state walk, n = 3, terminal entries hold 0.5",
             (_walk(5, 0.0, 1.0), 20, 3, 0.1, 0.9, 4), {"init": 0.5}),
        Case("5-state walk cut after 6 steps, n = 2",
             (_walk(5, 0.0, 1.0, max_steps=6), 20, 2, 0.3, 0.9, 5), {"init": 0.5}),
    ]


_N_STEP_BUGS = [
    ("no flush", "the last n - 1 states of every episode were never updated: when the episode "
                 "ends, update the states still waiting with the rewards that are left"),
    ("terminal", "you bootstrapped from the terminal state when flushing: a window that reaches "
                 "a termination uses the rewards alone"),
    ("window n-1", "your windows hold n - 1 rewards: the state visited n steps ago is the one "
                   "whose n rewards are now known"),
]
register(
    "n_step_td", _n_step_reference, _n_step_loop_cases,
    explain=_loop_explain(lambda case, bug: _n_step_variant(
        *case.args, case.kwargs.get("init", 0.0), bug), _N_STEP_BUGS),
    hint="keep the episode's states and rewards; once a state has n rewards after it, update it "
         "with step 2's target; when the episode ends, the states still waiting get the rewards "
         "that are left",
)


# ------------------------------------------------------------------ td_lambda (the loop)


def _td_lambda_reference(env, episodes, lam, alpha, gamma, seed, replacing=False):
    kind = "replacing" if replacing else "accumulating"
    return td_lambda(env, np.ones((env.num_states, 1)), episodes, lam, alpha, gamma,
                     traces=kind, seed=seed).V


def _td_lambda_variant(env, episodes, lam, alpha, gamma, seed, replacing, bug):
    V, e = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=np.int64)
    if bug == "swapped traces":
        replacing = not replacing
    for _ in range(episodes):
        while True:
            step = env.step(action)
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            if bug == "bump then decay":
                e[s] = 1.0 if replacing else e[s] + 1.0
                e *= gamma * lam
            else:
                e *= gamma * lam
                e[s] = 1.0 if replacing else e[s] + 1.0
            boot = bug == "terminal" or not step.terminated[0]
            delta = r + gamma * V[s_final] * boot - V[s]
            if bug == "no trace":
                V[s] += alpha * delta
            else:
                V += alpha * delta * e
            s = int(step.obs[0])
            if step.done[0]:
                break
        if bug != "no reset" and not (bug == "reset on termination" and not step.terminated[0]):
            e[:] = 0.0
    return V


def _td_lambda_cases():
    chains = np.zeros((6, 1, 6))
    for a, b in [(0, 1), (1, 2), (2, 2), (3, 4), (4, 5), (5, 5)]:
        chains[a, 0, b] = 1.0
    two_chains = TabularMDP(chains, np.ones((6, 1, 6)), np.array([0, 0, 1, 0, 0, 1], dtype=bool),
                            np.array([0.5, 0, 0, 0.5, 0, 0]))
    return [
        Case("19-state walk, accumulating traces", (_walk(19, -1.0, 1.0), 10, 0.8, 0.2, 1.0, 3)),
        Case("19-state walk, replacing traces", (_walk(19, -1.0, 1.0), 10, 0.8, 0.2, 1.0, 3),
             {"replacing": True}),
        Case("two separate chains: an episode may only change its own chain",
             (two_chains, 12, 0.9, 0.5, 0.9, 6)),
        Case("5-state walk cut after 5 steps", (_walk(5, 0.0, 1.0, max_steps=5), 15, 0.6, 0.3,
                                                0.9, 8)),
    ]


_TD_LAMBDA_BUGS = [
    ("no reset", "your traces survived the end of an episode, so the next episode's TD errors "
                 "also moved the states of the last one: zero the traces when an episode ends"),
    ("reset on termination", "your traces survived a time limit: an episode cut by the clock "
                             "ends too, so zero the traces on done (terminated or truncated), "
                             "not only on terminated"),
    ("swapped traces", "accumulating traces add 1 to e[s]; replacing traces set e[s] = 1"),
    ("bump then decay", "decay every trace first, then bump the current state's: its trace must "
                        "be 1 (or +1) when this step's TD error is applied"),
    ("no trace", "you updated only the current state: TD(lambda) moves every state by alpha * "
                 "delta * e(s)"),
]
register(
    "td_lambda", _td_lambda_reference, _td_lambda_cases,
    explain=_loop_explain(lambda case, bug: _td_lambda_variant(
        *case.args, case.kwargs.get("replacing", False), bug), _TD_LAMBDA_BUGS),
    hint="one trace per state: fade them all, mark the state you are leaving, then let this "
         "step's TD error move every state in proportion to its trace; an episode's end wipes "
         "the memory",
)


# ------------------------------------------------------------------ lambda_returns


def _lambda_cases():
    values = np.array([0.5, -1.0, 2.0, 0.0, 3.0])
    return [
        Case("terminated, lambda 0.5", (np.array([1.0, 0.0, 2.0, -1.0]), values, True, 0.9, 0.5)),
        Case("cut by a time limit, lambda 0.8",
             (np.array([1.0, 0.0, 2.0, -1.0]), values, False, 0.9, 0.8)),
        Case("lambda 0: one-step TD targets", (np.array([0.0, 1.0, 1.0, 0.0]), values, True,
                                               1.0, 0.0)),
        Case("lambda 1, cut: the return with a bootstrap",
             (np.array([2.0, -1.0, 0.5, 1.0]), values, False, 0.5, 1.0)),
    ]


def _lambda_explain(case, got, expected):
    rewards, values, terminated, gamma, lam = case.args

    def variant(kind):
        T = len(rewards)
        last = 0.0 if (terminated and kind != "terminal") else values[T]
        if kind == "cut as end":
            last = 0.0
        g, out = last, np.zeros(T)
        for t in reversed(range(T)):
            nxt = last if t == T - 1 else values[t + 1]
            if kind == "own value":
                nxt = values[t]
            if kind == "no (1 - lam)" and t < T - 1:
                g = rewards[t] + gamma * (nxt + lam * g)
            else:
                g = rewards[t] + gamma * ((1 - lam) * nxt + lam * g)
            out[t] = g
        return out

    candidates = [
        ("the last step bootstraps from V(s_T) only if s_T is not terminal",
         lambda: variant("terminal")),
        ("a time limit is not a terminal state: the return after the cut is estimated by "
         "V(s_T) = values[T]", lambda: variant("cut as end")),
        ("the one-step part uses the *next* state's value, values[t + 1]",
         lambda: variant("own value")),
        ("the next state's value has weight 1 - lambda and the rest of the lambda-return weight "
         "lambda: the weights must sum to 1", lambda: variant("no (1 - lam)")),
    ]
    return _first_match(got, candidates)


register(
    "lambda_returns", lambda_returns, _lambda_cases, explain=_lambda_explain,
    hint="the lambda-return at t mixes two views of the future after the first reward: the "
         "next state's estimate (weight 1 - lambda) and the lambda-return from t + 1 (weight "
         "lambda); work backwards from the end, where the future is V(s_T) or nothing",
)


# ------------------------------------------------------------------ exercise: td_errors


def _td_errors(rewards, values, terminated, gamma):
    rewards, values = np.asarray(rewards, dtype=float), np.asarray(values, dtype=float)
    nxt = values[1:].copy()
    if terminated:
        nxt[-1] = 0.0
    return rewards + gamma * nxt - values[:-1]


def _td_errors_cases():
    values = np.array([0.5, -1.0, 2.0, 4.0])
    return [
        Case("terminated", (np.array([1.0, 0.0, 2.0]), values, True, 0.9)),
        Case("cut by a time limit", (np.array([1.0, 0.0, 2.0]), values, False, 0.9)),
        Case("gamma 1, one step", (np.array([-1.0]), np.array([2.0, 7.0]), True, 1.0)),
    ]


def _td_errors_explain(case, got, expected):
    rewards, values, terminated, gamma = case.args
    return _first_match(got, [
        ("the last step ended in a terminal state: its value is 0, whatever values[T] holds",
         lambda: _td_errors(rewards, values, False, gamma)),
        ("a time limit is not a terminal state: the last TD error bootstraps from values[T]",
         lambda: _td_errors(rewards, values, True, gamma)),
        ("sign: delta = r + gamma V(next) - V(current), positive when the step went better than "
         "expected", lambda: -expected),
        ("delta_t compares V(s_t) = values[t] with r_t + gamma V(s_(t+1)) = values[t + 1]: your "
         "indexes are shifted", lambda: rewards + gamma * values[:-1] - values[1:]),
    ])


register(
    "td_errors", _td_errors, _td_errors_cases, explain=_td_errors_explain,
    hint="one TD error per step: what the step showed (reward plus the discounted value of "
         "where it led) minus what you expected before it",
)


# ------------------------------------------------------------------ exercise: lambda-return from TD errors


def _lambda_from_errors_cases():
    values = np.array([0.5, -1.0, 2.0, 0.0, 3.0])
    rewards = np.array([1.0, 0.0, 2.0, -1.0])
    return [
        Case("terminated, lambda 0.5", (rewards, values, True, 0.9, 0.5)),
        Case("cut, lambda 0.8", (rewards, values, False, 0.9, 0.8)),
        Case("lambda 1, gamma 1", (rewards, values, True, 1.0, 1.0)),
    ]


def _lambda_from_errors_explain(case, got, expected):
    rewards, values, terminated, gamma, lam = case.args
    delta = _td_errors(rewards, values, terminated, gamma)

    def discounted(factor, add_values=True):
        out, acc = np.zeros(len(delta)), 0.0
        for t in reversed(range(len(delta))):
            acc = delta[t] + factor * acc
            out[t] = acc
        return out + values[:-1] if add_values else out

    return _first_match(got, [
        ("you discounted the TD errors by gamma alone: that sums to the Monte Carlo error, the "
         "lambda = 1 case; each step further away weighs (gamma * lambda) more",
         lambda: discounted(gamma)),
        ("that is the advantage G^lambda_t - V(s_t): add values[t] to get the lambda-return",
         lambda: discounted(gamma * lam, False)),
        ("you discounted by lambda alone: the factor per step is gamma * lambda",
         lambda: discounted(lam)),
    ])


register(
    "lambda_return_from_td_errors", lambda_returns, _lambda_from_errors_cases,
    explain=_lambda_from_errors_explain,
    hint="write G^lambda_t - V(s_t) using the recursion of the lambda-return and the TD error "
         "delta_t: what multiplies the same quantity at t + 1?",
)


# ------------------------------------------------------------------ exercise: true online TD(lambda)


def _true_online(env, episodes, lam, alpha, gamma, seed, variant=None):
    """True online TD(lambda) with Dutch traces (van Seijen et al., 2016), tabular."""
    V, z = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=np.int64)
    for _ in range(episodes):
        v_old = 0.0
        while True:
            step = env.step(action)
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            v = V[s]
            v_next = 0.0 if step.terminated[0] else V[s_final]
            delta = r + gamma * v_next - v
            if variant == "accumulating":
                z *= gamma * lam
                z[s] += 1.0
            else:
                z_s = z[s]
                z *= gamma * lam
                z[s] += 1.0 - alpha * gamma * lam * z_s
            if variant == "no correction":
                V += alpha * delta * z
            elif variant == "no own correction":
                V += alpha * (delta + v - v_old) * z
            else:
                V += alpha * (delta + v - v_old) * z
                V[s] -= alpha * (v - v_old)
            v_old = v_next
            s = int(step.obs[0])
            if step.done[0]:
                break
        z[:] = 0.0
    return V


def _true_online_cases():
    return [
        Case("19-state walk, lambda 0.8, alpha 0.3", (_walk(19, -1.0, 1.0), 8, 0.8, 0.3, 1.0, 1)),
        Case("5-state walk cut after 5 steps, lambda 0.9",
             (_walk(5, 0.0, 1.0, max_steps=5), 15, 0.9, 0.5, 0.9, 2)),
        Case("19-state walk, lambda 1, alpha 0.1", (_walk(19, -1.0, 1.0), 6, 1.0, 0.1, 1.0, 3)),
    ]


def _true_online_explain(case, got, expected):
    return _first_match(got, [
        ("those are accumulating traces: the Dutch trace bumps e(s) by 1 - alpha gamma lambda "
         "e(s), so it never exceeds what the forward view allows",
         lambda: _true_online(*case.args, "accumulating")),
        ("you left out the last line, V(s) -= alpha (v - v_old): the term alpha (v - v_old) e "
         "also moved the current state through its own trace, and that part must be taken back",
         lambda: _true_online(*case.args, "no own correction")),
        ("you left out the correction alpha (V - V_old)(e - x): without it, Dutch traces alone "
         "do not reproduce the online lambda-return",
         lambda: _true_online(*case.args, "no correction")),
        ("your values match plain TD(lambda) with accumulating traces: true online TD(lambda) "
         "changes both the trace and the update",
         lambda: _td_lambda_reference(*case.args)),
    ])


register(
    "true_online_td_lambda", _true_online, _true_online_cases, explain=_true_online_explain,
    hint="van Seijen et al.'s update: keep V_old, the value of the state you are in as it was "
         "bootstrapped from on the previous step; the Dutch trace's bump is discounted by what "
         "the state's trace already holds",
)


# ================================================================== lesson 06: control
# ------------------------------------------------------------------ epsilon_greedy_probs


def _probs_cases():
    return [
        Case("one best action", (np.array([[0.0, 1.0, 0.5]]), 0.3)),
        Case("two tied best actions", (np.array([[2.0, 2.0, 0.0, 1.0]]), 0.2)),
        Case("greedy (epsilon 0), several states", (np.array([[1.0, 0.0], [0.0, 0.0]]), 0.0)),
        Case("uniform (epsilon 1)", (np.array([[3.0, 1.0, 2.0]]), 1.0)),
        Case("one row Q(s, .) (a 1-D array), two tied maxima", (np.array([1.0, 3.0, 3.0, 0.0]),
                                                                  0.2)),
        Case("a whole table [S, A] with ties in some rows",
             (np.array([[0.0, 0.0, 0.0, 0.0], [-1.0, -2.0, -1.0, -3.0], [5.0, 4.0, 3.0, 2.0]]),
              0.1)),
    ]


def _probs_explain(case, got, expected):
    got = np.asarray(got, dtype=float)
    q, eps = case.args
    A = q.shape[-1]
    if got.shape != expected.shape:
        return f"one probability per action and state: expected shape {expected.shape}"
    first = eps / A + (1 - eps) * np.eye(A)[q.argmax(axis=-1)]
    best = q == q.max(axis=-1, keepdims=True)
    found = _first_match(got, [
        ("tied greedy actions must share the 1 - epsilon equally (argmax picks only the first), "
         "as random tie-breaking does", first),
        ("the greedy action gets 1 - epsilon *plus* its share epsilon / A of the random choice",
         np.where(best, (1 - eps) / best.sum(axis=-1, keepdims=True), eps / A)),
        ("epsilon is the probability of acting at random, which can also pick the greedy "
         "action: each action gets epsilon / A from it, not epsilon / (A - 1)",
         lambda: np.where(expected > eps / A + 1e-12, 1 - eps, eps / max(A - 1, 1))),
    ])
    if found:
        return found
    if not np.allclose(got.sum(axis=-1), 1.0):
        return "each row must sum to 1: epsilon / A to every action, plus 1 - epsilon to the greedy"
    return None


def _probs_error(case, err):
    if isinstance(err, (np.exceptions.AxisError, IndexError)) and np.ndim(case.args[0]) == 1:
        return ("step 3 calls this on one row Q(s, .) too: reduce over the last axis (axis=-1, "
                "keepdims=True), which works for a row and for a table alike")
    return None


register(
    "epsilon_greedy_probs", epsilon_greedy_probs, _probs_cases, explain=_probs_explain,
    explain_error=_probs_error,
    hint="with probability epsilon the action is uniform over all A actions (the greedy one "
         "included); otherwise it is a greedy one, chosen uniformly among the tied maxima",
)


# ------------------------------------------------------------------ sarsa_update


def _sarsa_reference(Q, s, a, r, s_next, a_next, terminated, alpha, gamma):
    Q = np.array(Q, dtype=float)
    future = 0.0 if terminated else Q[s_next, a_next]
    Q[s, a] += alpha * (r + gamma * future - Q[s, a])
    return Q


def _sarsa_cases():
    # In every case Q[s', a] differs from Q[s', a'] and from max Q[s', .], and a' is not greedy,
    # so bootstrapping from the wrong action shows in every case and is told apart from
    # Q-learning.
    Q = np.array([[0.0, 1.0, -2.0], [2.0, -1.0, 0.5], [4.0, 3.0, -4.0]])
    return [
        Case("a' is not the greedy action", (Q, 0, 1, 1.0, 1, 2, False, 0.5, 0.9)),
        Case("s' is s itself (a bump into a wall)", (Q, 2, 1, -1.0, 2, 2, False, 0.5, 1.0)),
        Case("alpha 1: the entry becomes the target", (Q, 1, 2, 0.0, 2, 1, False, 1.0, 0.9)),
        Case("a step cut by a time limit: bootstrap from final_obs",
             (Q, 1, 0, 2.0, 0, 2, False, 0.1, 0.95)),
    ]


def _sarsa_explain(case, got, expected):
    Q, s, a, r, s_next, a_next, terminated, alpha, gamma = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != Q.shape:
        return f"return the whole updated table, shape {Q.shape}"

    def with_future(future, where=(s, a)):
        out = Q.copy()
        out[where] += alpha * (r + gamma * future - Q[where])
        return out

    return _first_match(got, [
        ("you bootstrapped from Q[s', a], the action you just took, instead of Q[s', a'], the "
         "action you will take next", lambda: with_future(Q[s_next, a])),
        ("you used max_a Q(s', a): that is Q-learning. SARSA bootstraps from the action it will "
         "actually take next, a_next", lambda: with_future(Q[s_next].max())),
        ("you bootstrapped from Q[s, a_next]: the next action belongs to the next state s'",
         lambda: with_future(Q[s, a_next])),
        ("you updated Q[s', a'] instead of Q[s, a]: the entry that learns is the pair you "
         "just left", lambda: with_future(Q[s_next, a_next], (s_next, a_next))),
        ("the TD error is target - Q[s, a]: yours has the opposite sign",
         lambda: 2 * Q - expected),
        ("alpha scales the TD error, not the target alone",
         lambda: _assign(Q, (s, a), Q[s, a] + alpha * (r + gamma * Q[s_next, a_next]))),
    ])


def _assign(Q, where, value):
    out = Q.copy()
    out[where] = value
    return out


_register_copying(
    "sarsa_update", _sarsa_reference, _sarsa_cases, ("Q",), explain=_sarsa_explain,
    hint="S, A, R, S', A': every letter is used. The pair you leave learns; its target is the "
         "reward plus the discounted value of the pair you will act from next",
)


# ------------------------------------------------------------------ q_learning_update


def _q_update_reference(Q, s, a, r, s_next, terminated, alpha, gamma):
    Q = np.array(Q, dtype=float)
    future = 0.0 if terminated else Q[s_next].max()
    Q[s, a] += alpha * (r + gamma * future - Q[s, a])
    return Q


def _q_update_cases():
    Q = np.array([[0.0, 1.0, -2.0], [2.0, -1.0, 0.5], [9.0, 9.0, 9.0]])
    return [
        Case("an ordinary step", (Q, 0, 1, 1.0, 1, False, 0.5, 0.9)),
        Case("into the terminal state 2 (its row holds 9s)", (Q, 1, 2, 1.0, 2, True, 0.5, 0.9)),
        # every future a mistake could use differs here: max Q[s'] -0.5, mean -2.17,
        # Q[s', a] -2, max |Q[s']| 4, max Q[s] -1
        Case("negative values, gamma 1", (np.array([[-3.0, -1.0, -2.0], [-2.0, -4.0, -0.5],
                                                    [0.0, 0.0, 0.0]]), 0, 0, -1.0, 1, False,
                                          0.3, 1.0)),
    ]


def _q_update_explain(case, got, expected):
    Q, s, a, r, s_next, terminated, alpha, gamma = case.args

    def with_future(future):
        out = np.array(Q, dtype=float)
        out[s, a] += alpha * (r + gamma * future - Q[s, a])
        return out

    return _first_match(got, [
        ("you bootstrapped from the terminal state: its value is 0, whatever its row holds",
         lambda: with_future(Q[s_next].max())),
        ("Q-learning bootstraps from the *best* next action (max), not the mean",
         lambda: with_future(0.0 if terminated else Q[s_next].mean())),
        ("you bootstrapped from Q[s', a], the action just taken: Q-learning uses max_a' Q(s', a')",
         lambda: with_future(0.0 if terminated else Q[s_next, a])),
        ("max over the next state's row, not the current one",
         lambda: with_future(0.0 if terminated else Q[s].max())),
        ("you took the largest |Q(s', .)|: the max is over the values themselves, signs included "
         "(with costs, the best action is the least negative one)",
         lambda: with_future(0.0 if terminated else np.abs(Q[s_next]).max())),
    ])


_register_copying(
    "q_learning_update", _q_update_reference, _q_update_cases, ("Q",), explain=_q_update_explain,
    hint="whatever you will really do next, the target assumes you act greedily from s'; and "
         "nothing follows a terminal state",
)


# ------------------------------------------------------------------ expected_sarsa_update


def _expected_sarsa_reference(Q, s, a, r, s_next, terminated, alpha, gamma, epsilon):
    Q = np.array(Q, dtype=float)
    future = 0.0 if terminated else float(epsilon_greedy_probs(Q[s_next], epsilon) @ Q[s_next])
    Q[s, a] += alpha * (r + gamma * future - Q[s, a])
    return Q


def _expected_sarsa_cases():
    Q = np.array([[0.0, 1.0, 3.0], [2.0, 2.0, -1.0], [5.0, 0.0, 5.0]])
    return [
        Case("one greedy action", (Q, 1, 0, 1.0, 0, False, 0.5, 0.9, 0.1)),
        Case("two tied greedy actions", (Q, 0, 2, 0.0, 1, False, 0.5, 1.0, 0.3)),
        Case("epsilon 1: the plain mean", (Q, 1, 1, 0.5, 0, False, 1.0, 0.9, 1.0)),
        Case("into the terminal state 2", (Q, 0, 0, 1.0, 2, True, 0.5, 0.9, 0.1)),
    ]


def _expected_sarsa_explain(case, got, expected):
    Q, s, a, r, s_next, terminated, alpha, gamma, epsilon = case.args

    def with_future(future):
        out = np.array(Q, dtype=float)
        out[s, a] += alpha * (r + gamma * future - Q[s, a])
        return out

    row = Q[s_next]
    best = row == row.max()
    no_share = np.where(best, (1 - epsilon) / best.sum(), epsilon / row.size)
    others = np.where(best, (1 - epsilon) / best.sum(), epsilon / max(row.size - best.sum(), 1))
    return _first_match(got, [
        ("you bootstrapped from the terminal state: its value is 0",
         lambda: with_future(float(epsilon_greedy_probs(row, epsilon) @ row))),
        ("that is Q-learning's target: average Q(s', .) under the epsilon-greedy policy",
         lambda: with_future(0.0 if terminated else row.max())),
        ("the greedy action also gets its epsilon / A share of the random choice (your "
         "probabilities sum to less than 1)",
         lambda: with_future(0.0 if terminated else float(no_share @ row))),
        ("exploring picks among all A actions, the greedy one included: epsilon / A each, not "
         "epsilon spread over the other actions only",
         lambda: with_future(0.0 if terminated else float(others @ row))),
    ])


_register_copying(
    "expected_sarsa_update", _expected_sarsa_reference, _expected_sarsa_cases, ("Q",),
    explain=_expected_sarsa_explain,
    hint="instead of the value of the one action you will take, use the value you expect under "
         "the policy you follow: step 1's probabilities",
)


# ------------------------------------------------------------------ sarsa (the loop)


def _sarsa_loop_reference(env, episodes, alpha, gamma, epsilon, seed):
    return _control._td_control(env, episodes, alpha, gamma, epsilon, seed, 0.0, "sarsa",
                                rng=np.random.default_rng(seed), lockstep=False).Q


def _sarsa_loop_variant(env, episodes, alpha, gamma, epsilon, seed, bug):
    Q = np.zeros((env.num_states, env.num_actions))
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    finished = 0
    a = epsilon_greedy(Q[s], epsilon, rng)
    while finished < episodes:
        step = env.step(np.array([a]))
        r, s_final = float(step.reward[0]), int(step.final_obs[0])
        terminated = bool(step.terminated[0])
        if bug == "cut as end":
            terminated = bool(step.done[0])
        s_boot = int(step.obs[0]) if bug == "obs" else s_final
        a_next = epsilon_greedy(Q[s_boot], epsilon, rng)
        if bug == "greedy":
            future = Q[s_boot].max()
        elif bug == "a":
            future = Q[s_boot, a]
        else:
            future = Q[s_boot, a_next]
        if bug == "terminal" or not terminated:
            target = r + gamma * future
        else:
            target = r
        Q[s, a] += alpha * (target - Q[s, a])
        if bug == "fresh draw":
            a_next = epsilon_greedy(Q[int(step.obs[0])], epsilon, rng)
        s, a = int(step.obs[0]), a_next
        if step.done[0]:
            finished += 1
            if bug != "no new draw":
                a = epsilon_greedy(Q[s], epsilon, rng)
    return Q


def _sarsa_loop_cases():
    return [  # time limits end the episodes of a wrong answer that never learns
        Case("CliffWalking, 3 episodes", (CliffWalking(max_steps=2000), 3, 0.5, 1.0, 0.1, 0)),
        Case("4x4 slippery grid cut after 10 steps",
             (GridWorld(size=4, slip=0.2, max_steps=10), 12, 0.3, 0.9, 0.2, 1)),
        Case("3x3 grid, epsilon 0.5", (GridWorld(size=3, step_reward=-0.5, max_steps=500), 10, 0.5,
                                       1.0, 0.5, 2)),
    ]


_SARSA_LOOP_BUGS = [
    ("a", "you bootstrapped from Q[s', a] (check step 2): the target uses a', the next action"),
    ("greedy", "your target used the greedy next action: that is Q-learning. SARSA's target uses "
               "the action a' it draws and then takes"),
    ("fresh draw", "you drew a' for the target and then another action to act: SARSA takes the "
                   "a' it bootstrapped from (one draw per step)"),
    ("cut as end", "you treated a time limit as a terminal state: a truncated step still "
                   "bootstraps, from Q[final_obs, a']"),
    ("obs", "you bootstrapped from step.obs, which after an episode ends is already the next "
            "episode's first state: draw a' and bootstrap at step.final_obs"),
    ("no new draw", "when an episode ends, draw the first action of the next episode at its "
                    "first state (step.obs); a' was drawn in the old episode's last state"),
]


def _sarsa_loop_explain(case, got, expected):
    found = _first_match(got, [(message, (lambda b=bug: _sarsa_loop_variant(*case.args, b)))
                               for bug, message in _SARSA_LOOP_BUGS])
    if found is None and np.shape(got) == np.shape(expected):
        return ("your table differs from the reference run. The draws: rng = "
                "np.random.default_rng(seed), env.reset(seed=seed) once, one "
                "rc.epsilon_greedy(Q[s], epsilon, rng) for the first action of each episode and "
                "one for a' after each step (drawn at final_obs before the update)")
    return found


register(
    "sarsa", _sarsa_loop_reference, _sarsa_loop_cases, explain=_sarsa_loop_explain,
    hint="choose the first action; then, every step: act, see where you landed, choose the next "
         "action there, learn with step 2, and move on with that very action. A new episode "
         "starts with a fresh choice in its first state",
)


# ------------------------------------------------------------------ double_q_update


def _double_q_reference(Q1, Q2, s, a, r, s_next, terminated, alpha, gamma, update_first):
    Q1, Q2 = np.array(Q1, dtype=float), np.array(Q2, dtype=float)
    learner, other = (Q1, Q2) if update_first else (Q2, Q1)
    future = 0.0 if terminated else other[s_next, learner[s_next].argmax()]
    learner[s, a] += alpha * (r + gamma * future - learner[s, a])
    return Q1, Q2


def _double_q_cases():
    Q1 = np.array([[0.0, 1.0, -1.0], [3.0, 0.5, 1.0], [6.0, 6.0, 6.0]])
    Q2 = np.array([[0.5, 0.0, 2.0], [-1.0, 2.0, 4.0], [7.0, 7.0, 7.0]])
    return [
        Case("Q1 learns", (Q1, Q2, 0, 1, 1.0, 1, False, 0.5, 0.9, True)),
        Case("Q2 learns", (Q1, Q2, 0, 2, 1.0, 1, False, 0.5, 0.9, False)),
        Case("into the terminal state 2", (Q1, Q2, 1, 0, -1.0, 2, True, 0.5, 0.9, True)),
        Case("Q2 learns, gamma 1", (Q1, Q2, 1, 1, 0.0, 0, False, 1.0, 1.0, False)),
    ]


def _double_q_explain(case, got, expected):
    Q1, Q2, s, a, r, s_next, terminated, alpha, gamma, first = case.args
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (Q1, Q2)"

    def variant(pick, value, learn_first=first):
        q1, q2 = np.array(Q1, dtype=float), np.array(Q2, dtype=float)
        learner = q1 if learn_first else q2
        future = 0.0 if terminated else value[s_next, pick[s_next].argmax()]
        learner[s, a] += alpha * (r + gamma * future - learner[s, a])
        return q1, q2

    learner, other = (Q1, Q2) if first else (Q2, Q1)
    return _first_match(got, [
        ("you bootstrapped from the terminal state: its value is 0",
         lambda: _double_q_reference(Q1, Q2, s, a, r, s_next, False, alpha, gamma, first)),
        ("one table both picked and valued the next action: that is plain Q-learning, with its "
         "maximisation bias. The learning table picks (argmax), the other one values",
         lambda: variant(learner, learner)),
        ("the roles are swapped: the table that learns picks the action, the other one values it",
         lambda: variant(other, learner)),
        ("the other table valued its *own* best action: that is max of the other table, not "
         "the other table's value of the learner's choice", lambda: variant(other, other)),
        ("update_first says which table learns this step: True means Q1",
         lambda: _double_q_reference(Q1, Q2, s, a, r, s_next, terminated, alpha, gamma,
                                     not first)),
    ])


_register_copying(
    "double_q_update", _double_q_reference, _double_q_cases, ("Q1", "Q2"),
    explain=_double_q_explain,
    hint="two estimates: let the one that learns choose the best next action, and the other "
         "one say what that action is worth; their noise is independent, so a lucky "
         "overestimate in one is not confirmed by the other",
)


# ------------------------------------------------------------------ exercise: double estimator


def _estimators(samples):
    """(single, double) estimates of max_a E[X_a] from ``samples [A, N]`` (N even): the max of
    the sample means, and the mean of the two cross-estimates of the two halves."""
    x = np.asarray(samples, dtype=float)
    half = x.shape[1] // 2
    m1, m2 = x[:, :half].mean(axis=1), x[:, half:].mean(axis=1)
    single = float(x.mean(axis=1).max())
    double = 0.5 * (m2[m1.argmax()] + m1[m2.argmax()])
    return single, float(double)


def _estimator_cases():
    rng = np.random.default_rng(11)
    return [
        Case("10 actions of equal mean -0.1, 6 samples each", (rng.normal(-0.1, 1.0, (10, 6)),)),
        Case("3 actions, one clearly best", (np.array([[0.0, 1.0, 0.5, 1.5], [3.0, 2.0, 4.0, 3.0],
                                                       [1.0, 1.0, 1.0, 1.0]]),)),
        Case("2 actions, 2 samples", (np.array([[1.0, -1.0], [0.5, 0.0]]),)),
    ]


def _estimator_explain(case, got, expected):
    (x,) = case.args
    half = x.shape[1] // 2
    m1, m2 = x[:, :half].mean(axis=1), x[:, half:].mean(axis=1)
    if not isinstance(got, tuple) or len(got) != 2:
        return "return the pair (single, double)"
    single = expected[0]
    return _first_match(got, [
        ("your double estimate picked and valued with the same half: max of one half's means is "
         "the single estimator again, on half the data", (single, float(m1.max()))),
        ("only one direction: average the two cross-estimates (half 1 picks, half 2 values; "
         "and the reverse), which halves the variance", (single, float(m2[m1.argmax()]))),
        ("each half valued its own pick: that is the single estimator on each half, biased the "
         "same way", (single, 0.5 * float(m1.max() + m2.max()))),
        ("the single estimator is the max of the means over all samples, not the mean of maxima",
         (float(x.max(axis=0).mean()), expected[1])),
        ("you split the samples even/odd: the halves are the first N/2 columns and the last N/2",
         lambda: (single, _cross(x[:, ::2].mean(axis=1), x[:, 1::2].mean(axis=1)))),
    ])


def _cross(m1, m2):
    return 0.5 * float(m2[m1.argmax()] + m1[m2.argmax()])


register(
    "max_estimators", _estimators, _estimator_cases, explain=_estimator_explain,
    hint="the single estimator picks and values the best action with the same noisy means; "
         "the double one splits the samples so that the half that picks is not the half that "
         "values",
)


# ------------------------------------------------------------------ exercise: n-step SARSA


def _n_step_sarsa(env, episodes, n, alpha, gamma, epsilon, seed, variant=None):
    """n-step SARSA (Sutton & Barto, section 7.2), the lesson's draw protocol: a' drawn at
    final_obs after every step, the next episode's first action drawn at obs after the flush."""
    Q = np.zeros((env.num_states, env.num_actions))
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    width = n - 1 if variant == "window n-1" else n
    for _ in range(episodes):
        a = epsilon_greedy(Q[s], epsilon, rng)
        states, actions, rewards = [s], [a], []
        while True:
            step = env.step(np.array([a]))
            rewards.append(float(step.reward[0]))
            s_final = int(step.final_obs[0])
            a_next = epsilon_greedy(Q[s_final], epsilon, rng)
            states.append(s_final)
            actions.append(a_next)
            done = bool(step.done[0])
            tau = len(rewards) - width
            if tau >= 0 and not done and width > 0:
                boot = Q[states[-1], actions[-1]]
                if variant == "max":
                    boot = Q[states[-1]].max()
                G = n_step_target(rewards[tau:], boot, False, gamma)
                Q[states[tau], actions[tau]] += alpha * (G - Q[states[tau], actions[tau]])
            if done:
                break
            a = a_next
        T = len(rewards)
        terminated = bool(step.terminated[0]) and variant != "terminal"
        if variant == "cut as end":
            terminated = bool(step.done[0])
        if variant != "no flush":
            for tau in range(max(T - width, 0), T):
                boot = Q[states[T], actions[T]]
                G = n_step_target(rewards[tau:], boot, terminated, gamma)
                Q[states[tau], actions[tau]] += alpha * (G - Q[states[tau], actions[tau]])
        s = int(step.obs[0])
    return Q


def _n_step_sarsa_reference(env, episodes, n, alpha, gamma, epsilon, seed):
    return _n_step_sarsa(env, episodes, n, alpha, gamma, epsilon, seed)


def _n_step_sarsa_cases():
    return [
        Case("n = 1 is SARSA (CliffWalking, 3 episodes)",
             (CliffWalking(max_steps=2000), 3, 1, 0.5, 1.0, 0.1, 0)),
        Case("n = 4 on CliffWalking, 5 episodes",
             (CliffWalking(max_steps=2000), 5, 4, 0.5, 1.0, 0.1, 1)),
        Case("n = 3 on a grid cut after 8 steps",
             (GridWorld(size=4, slip=0.2, max_steps=8), 15, 3, 0.3, 0.9, 0.2, 2)),
    ]


def _n_step_sarsa_explain(case, got, expected):
    found = _first_match(got, [
        ("the last n - 1 pairs of every episode were never updated: flush them when it ends",
         lambda: _n_step_sarsa(*case.args, "no flush")),
        ("your windows hold n - 1 rewards: the pair from n steps ago is the one whose n rewards "
         "are known", lambda: _n_step_sarsa(*case.args, "window n-1")),
        ("you bootstrapped from max_a Q(S_(t+n), a): n-step SARSA uses the action it took there",
         lambda: _n_step_sarsa(*case.args, "max")),
        ("you treated a time limit as a terminal state when flushing: a window cut by the clock "
         "still bootstraps, from Q[final_obs, a'] (only terminated means nothing follows)",
         lambda: _n_step_sarsa(*case.args, "cut as end")),
    ])
    if found is None and np.shape(got) == np.shape(expected):
        return ("your table differs from the reference run: check the draws (one "
                "rc.epsilon_greedy per action chosen: the first of each episode, then a' at "
                "final_obs after each step)")
    return found


register(
    "n_step_sarsa", _n_step_sarsa_reference, _n_step_sarsa_cases, explain=_n_step_sarsa_explain,
    hint="lesson 05's n-step window, with (state, action) pairs instead of states and the value "
         "of the pair you will act from n steps later instead of V",
)


# ------------------------------------------------------------------ exercise: SARSA(lambda)


def _sarsa_lambda(env, episodes, lam, alpha, gamma, epsilon, seed, variant=None):
    """SARSA(lambda) with replacing traces on (state, action) pairs (S&B section 12.7)."""
    Q = np.zeros((env.num_states, env.num_actions))
    z = np.zeros_like(Q)
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    finished = 0
    a = epsilon_greedy(Q[s], epsilon, rng)
    while finished < episodes:
        step = env.step(np.array([a]))
        r, s_final = float(step.reward[0]), int(step.final_obs[0])
        a_next = epsilon_greedy(Q[s_final], epsilon, rng)
        boot = 0.0 if (step.terminated[0] and variant != "terminal") else Q[s_final, a_next]
        delta = r + gamma * boot - Q[s, a]
        z *= gamma * lam
        if variant == "state trace":
            z[s, :] = 1.0
        elif variant == "accumulating":
            z[s, a] += 1.0
        else:
            z[s, a] = 1.0
        Q += alpha * delta * z
        s, a = int(step.obs[0]), a_next
        if step.done[0]:
            finished += 1
            if variant != "no reset":
                z[:] = 0.0
            a = epsilon_greedy(Q[s], epsilon, rng)
    return Q


def _sarsa_lambda_cases():
    return [
        Case("lambda 0 is SARSA (CliffWalking, 3 episodes)",
             (CliffWalking(max_steps=2000), 3, 0.0, 0.5, 1.0, 0.1, 0)),
        Case("lambda 0.9 on CliffWalking, 4 episodes",
             (CliffWalking(max_steps=2000), 4, 0.9, 0.5, 1.0, 0.1, 1)),
        Case("lambda 0.8 on a grid cut after 10 steps",
             (GridWorld(size=4, slip=0.2, max_steps=10), 12, 0.8, 0.3, 0.9, 0.2, 2)),
    ]


def _sarsa_lambda_explain(case, got, expected):
    found = _first_match(got, [
        ("your traces survived the end of an episode: zero them when it ends",
         lambda: _sarsa_lambda(*case.args, "no reset")),
        ("those are accumulating traces (e += 1); this exercise asks for replacing ones (e = 1)",
         lambda: _sarsa_lambda(*case.args, "accumulating")),
        ("the trace marks the (state, action) pair taken, not every action of the state",
         lambda: _sarsa_lambda(*case.args, "state trace")),
    ])
    if found is None and np.shape(got) == np.shape(expected):
        return ("your table differs from the reference run: same draws as your SARSA loop; "
                "decay all traces, set the pair's trace to 1, then move every entry by "
                "alpha * delta * z")
    return found


register(
    "sarsa_lambda", _sarsa_lambda, _sarsa_lambda_cases, explain=_sarsa_lambda_explain,
    hint="your SARSA loop plus lesson 05's traces, one per (state, action) pair: every step's "
         "TD error also reaches the pairs that led here, faded by gamma * lambda per step",
)


# ------------------------------------------------------------------ multiple-choice questions


def _register_choice(name, answer, options, hint):
    """A multiple-choice question: the reader's function returns one letter; ``options`` says
    why each wrong letter is wrong."""
    letters = sorted({answer, *options})

    def compare(got, expected):
        if got is None:
            return "not answered yet: set your answer to one letter"
        if not isinstance(got, str) or got.strip().lower() not in letters:
            return f"answer with one letter of {letters}, got {got!r}"
        return None if got.strip().lower() == expected else "not this one"

    def explain(case, got, expected):
        letter = got.strip().lower() if isinstance(got, str) else None
        if letter not in options:
            return None
        why = options[letter]
        return f"({letter}) is not it: {why() if callable(why) else why}"

    register(name, lambda: answer, [Case("your answer")], compare=compare, explain=explain,
             hint=hint)


_register_choice(
    "why_decaying_sarsa_stays_safe", "c",
    {"a": "SARSA can learn the optimal policy; with a schedule that decays slowly enough and "
          "enough episodes it does (Singh et al., 2000)",
     "b": "the step size is the same for both schedules, and the values do settle on the safe "
          "path",
     "d": "the edge path is optimal for the greedy policy; nothing about the cliff changes"},
    hint="which entries of Q must change for the edge to look good, and how often are they "
         "updated once epsilon is small?",
)
def lake_exploring_loss(epsilon=0.1, gamma=0.95):
    """Where the best epsilon-soft policy loses value on the deterministic FrozenLake:
    (share of V* it keeps, probability it reaches the goal, share of V* kept by the episodes
    that reach it). The lake pays 1 on reaching the goal and nothing else, so
    V / V* = P(goal) * E[gamma^(extra steps) | goal]: 1 - P(goal) is lost to the holes, the rest
    to discounting the detours."""
    from ...envs.gridworld import FrozenLake
    from ...tabular.dp import policy_evaluation, value_iteration

    lake = FrozenLake(is_slippery=False)
    P, R, T = lake.P, lake.R, lake.terminal
    v_star = value_iteration(P, R, gamma, T)[0]
    P_eps = (1 - epsilon) * P + epsilon * P.mean(axis=1, keepdims=True)
    r = (P * R).sum(axis=2)
    r_eps = (1 - epsilon) * r + epsilon * r.mean(axis=1, keepdims=True)
    pi = value_iteration(P_eps, np.repeat(r_eps[:, :, None], len(P), axis=2), gamma, T)[1]
    probs = epsilon_greedy_probs(np.eye(P.shape[1])[pi], epsilon)
    kept = policy_evaluation(P, R, probs, gamma, T)[0] / v_star[0]
    reach = policy_evaluation(P, R, probs, 1.0, T)[0]
    return float(kept), float(reach), float(kept / reach)


def _detour_cost():
    kept, reach, kept_if_reached = lake_exploring_loss()
    return (f"detours cost little: the best epsilon-soft policy reaches the goal with probability "
            f"{reach:.3f}, and the episodes that do keep {kept_if_reached:.3f} of V*; of the "
            f"{1 - kept:.3f} lost, the holes take {1 - reach:.3f} and discounting the later "
            f"arrival {reach - kept:.3f}")


_register_choice(
    "where_exploring_loses", "b",
    {"a": "this is the best epsilon-soft policy, found by DP from the model: its greedy part is "
          "already the best that exploring allows",
     "c": _detour_cost,
     "d": "DP computes this value from the model: nothing is estimated, so there is no noise"},
    hint="the lake pays 1 at the goal and nothing else: V / V* is P(reach the goal) times the "
         "average discount of the extra steps. Which factor is further from 1?",
)
