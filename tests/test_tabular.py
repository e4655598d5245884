"""Tests of rlcourse.tabular: equivalences between the methods, the time semantics (terminal,
truncation, traces), convergence to the dynamic-programming answer, the cliff, input checks."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.tabular import _episodes, control, prediction, targets

# ---------------------------------------------------------------------------------------------
# Small MDPs

def patch_tabular(monkeypatch, name, fn):
    """Plant ``fn`` as ``name`` in every tabular module that uses it (each imported it by name)."""
    modules = [m for m in (targets, _episodes, prediction, control) if hasattr(m, name)]
    assert modules, name
    for module in modules:
        monkeypatch.setattr(module, name, fn)



def random_walk(k=5, left_reward=0.0, right_reward=1.0, max_steps=None):
    """Sutton & Barto's random walk: ``k`` states in a row between two terminals (states 0 and
    k + 1), start in the middle, one action that moves left or right with probability 1/2."""
    S = k + 2
    P = np.zeros((S, 1, S))
    R = np.zeros((S, 1, S))
    for s in range(1, S - 1):
        P[s, 0, s - 1] = P[s, 0, s + 1] = 0.5
    P[0, 0, 0] = P[S - 1, 0, S - 1] = 1.0
    R[1, 0, 0] = left_reward
    R[S - 2, 0, S - 1] = right_reward
    terminal = np.zeros(S, dtype=bool)
    terminal[[0, S - 1]] = True
    start = np.zeros(S)
    start[S // 2] = 1.0
    return rc.TabularMDP(P, R, terminal, start, max_steps=max_steps)


def one_step_mdp(reward=1.0, num_actions=2):
    """State 0 -> terminal state 1 with ``reward``, whatever the action."""
    P = np.zeros((2, num_actions, 2))
    P[:, :, 1] = 1.0
    R = np.zeros((2, num_actions, 2))
    R[0, :, 1] = reward
    return rc.TabularMDP(P, R, np.array([False, True]), np.array([1.0, 0.0]))


def loop_mdp(max_steps=1):
    """Non-terminal states 0 <-> 1 (reward 0 from 0, 1 from 1), start 0, a time limit."""
    P = np.zeros((2, 1, 2))
    P[0, 0, 1] = P[1, 0, 0] = 1.0
    R = np.zeros((2, 1, 2))
    R[1, 0, 0] = 1.0
    return rc.TabularMDP(P, R, np.array([False, False]), np.array([1.0, 0.0]), max_steps=max_steps)


def two_chains():
    """Two disjoint chains, each episode in one of them (start 0 or 3, probability 1/2):
    0 -> 1 -> 2 (terminal) and 3 -> 4 -> 5 (terminal), reward 1 on every step."""
    S = 6
    P = np.zeros((S, 1, S))
    for s, s2 in [(0, 1), (1, 2), (2, 2), (3, 4), (4, 5), (5, 5)]:
        P[s, 0, s2] = 1.0
    R = np.ones((S, 1, S))
    terminal = np.array([False, False, True, False, False, True])
    start = np.array([0.5, 0, 0, 0.5, 0, 0])
    return rc.TabularMDP(P, R, terminal, start)


def uniform(env):
    return np.full((env.num_states, env.num_actions), 1.0 / env.num_actions)


PREDICTORS = {
    "mc": lambda env, pol, **kw: rc.mc_prediction(env, pol, kw.pop("episodes"), kw.pop("gamma"),
                                                  **kw),
    "td0": lambda env, pol, **kw: rc.td0(env, pol, kw.pop("episodes"), kw.pop("alpha"),
                                         kw.pop("gamma"), **kw),
    "n_step": lambda env, pol, **kw: rc.n_step_td(env, pol, kw.pop("episodes"), 3, kw.pop("alpha"),
                                                  kw.pop("gamma"), **kw),
    "td_lambda": lambda env, pol, **kw: rc.td_lambda(env, pol, kw.pop("episodes"), 0.7,
                                                     kw.pop("alpha"), kw.pop("gamma"), **kw),
}
CONTROLLERS = {"q_learning": rc.q_learning, "sarsa": rc.sarsa,
               "expected_sarsa": rc.expected_sarsa,
               "mc_control": lambda env, episodes, alpha, **kw: rc.mc_control(env, episodes,
                                                                              alpha=alpha, **kw)}

# ---------------------------------------------------------------------------------------------
# Equivalences


def test_td_lambda_zero_is_td0_bit_for_bit():
    for env in (random_walk(19, -1.0, 1.0), rc.GridWorld(size=4, slip=0.2, max_steps=15)):
        pol = uniform(env)
        alphas = np.array([0.05, 0.2, 0.6])
        a = rc.td0(env, pol, 30, alphas, 0.9, seed=3, init=0.5)
        b = rc.td_lambda(env, pol, 30, 0.0, alphas, 0.9, seed=3, init=0.5)
        c = rc.td_lambda(env, pol, 30, 0.0, alphas, 0.9, traces="replacing", seed=3, init=0.5)
        np.testing.assert_array_equal(a.V_history, b.V_history)
        np.testing.assert_array_equal(a.V_history, c.V_history)


def test_n_step_with_n_1_is_td0_bit_for_bit():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=15)  # truncations happen too
    a = rc.td0(env, uniform(env), 40, 0.3, 0.95, seed=1)
    b = rc.n_step_td(env, uniform(env), 40, 1, 0.3, 0.95, seed=1)
    assert (a.episode_lengths == 15).any()
    np.testing.assert_array_equal(a.V_history, b.V_history)


def test_n_step_longer_than_episodes_is_constant_alpha_every_visit_mc():
    env = random_walk(5)
    a = rc.n_step_td(env, uniform(env), 50, 10_000, 0.1, 0.9, seed=2)
    b = rc.mc_prediction(env, uniform(env), 50, 0.9, first_visit=False, alpha=0.1, seed=2)
    np.testing.assert_allclose(a.V_history, b.V_history, rtol=0, atol=1e-12)


def test_td_lambda_one_is_every_visit_mc_to_first_order_in_alpha():
    # With lambda = gamma = 1 and accumulating traces, the TD errors of an episode add up to the
    # Monte Carlo error of every visit; online updates change V within the episode only by
    # O(alpha^2), so with a tiny alpha the updates divided by alpha agree.
    env = random_walk(5)
    a = rc.td_lambda(env, uniform(env), 1, 1.0, 1e-6, 1.0, seed=4)
    b = rc.mc_prediction(env, uniform(env), 1, 1.0, first_visit=False, alpha=1e-6, seed=4)
    np.testing.assert_allclose(a.V / 1e-6, b.V / 1e-6, atol=1e-4)


def recorded_episode(seed=0):
    env = rc.GridWorld(size=3, slip=0.3, step_reward=-0.1)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    rewards = []
    while True:
        st = env.step(rng.integers(4, size=1))
        rewards.append(float(st.reward[0]))
        if st.terminated[0]:
            break
    values = rng.normal(size=len(rewards) + 1)
    return np.array(rewards), values


def test_targets_on_a_recorded_episode():
    rewards, values = recorded_episode()
    T, gamma = len(rewards), 0.9
    assert T >= 3
    mc = rc.mc_returns(rewards, gamma)
    for start in range(T):
        # n = 1 is the TD target; no bootstrap at the terminal end.
        td = rc.td_target(rewards[start], values[start + 1], start + 1 == T, gamma)
        got = rc.n_step_target(rewards[start:start + 1], values[start + 1], start + 1 == T, gamma)
        assert got == td
        # n >= the rest of the episode is the Monte Carlo return.
        got = rc.n_step_target(rewards[start:], values[T], True, gamma)
        np.testing.assert_allclose(got, mc[start], rtol=1e-12)
        for n in (1, 2, 3, T):
            end = min(start + n, T)
            ours = rc.n_step_target(rewards[start:end], values[end], end == T, gamma)
            np.testing.assert_allclose(ours, rc.n_step_return(rewards, values, start, n, gamma),
                                       rtol=1e-12)
    # A truncated episode's returns start from the value of the state it stopped in.
    cut = rc.mc_returns(rewards, gamma, final_value=values[T])
    np.testing.assert_allclose(cut - mc, gamma ** np.arange(T, 0, -1) * values[T], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Time semantics, each with a planted bug that the check must catch


def assert_terminal_never_bootstraps():
    """Value 5 everywhere, terminal state included; after one step into it with alpha = 1 the
    start's value must be the reward alone (5 would leak in through a bootstrap)."""
    env = one_step_mdp(reward=1.0)
    for name, learn in PREDICTORS.items():
        alpha = {} if name == "mc" else {"alpha": 1.0}
        res = learn(env, uniform(env), episodes=3, gamma=0.9, init=5.0, **alpha)
        assert res.V[0] == 1.0, f"{name}: V[start] = {res.V[0]}, expected the reward 1.0"
        assert res.V[1] == 5.0, f"{name}: the terminal state's entry was updated"
    for name, learn in CONTROLLERS.items():
        res = learn(env, 5, alpha=1.0, gamma=0.9, init=5.0)
        np.testing.assert_array_equal(res.Q[0], [1.0, 1.0], err_msg=name)


def test_terminal_never_bootstraps():
    assert_terminal_never_bootstraps()


def test_planted_bug_bootstrapping_through_terminal_is_caught(monkeypatch):
    patch_tabular(monkeypatch, "_bootstrap", lambda value, terminated: value)
    with pytest.raises(AssertionError):
        assert_terminal_never_bootstraps()


def assert_truncation_bootstraps_from_final_obs(wrap=lambda env: env):
    """Loop 0 -> 1 cut after one step: the start's target is 0 + gamma V(1), where state 1 is
    final_obs. obs is already state 0 of the next episode, so V(obs) would give 0.5 * 0."""
    env = wrap(loop_mdp(max_steps=1))
    init = np.array([0.0, 4.0])
    for name, learn in PREDICTORS.items():
        alpha = {} if name == "mc" else {"alpha": 1.0}
        res = learn(env, uniform(env), episodes=2, gamma=0.5, init=init, **alpha)
        np.testing.assert_array_equal(res.V, [2.0, 4.0], err_msg=name)
        assert (res.episode_lengths == 1).all()
    for name, learn in CONTROLLERS.items():
        res = learn(env, 2, alpha=1.0, gamma=0.5, epsilon=0.0, init=init[:, None])
        np.testing.assert_array_equal(res.Q[:, 0], [2.0, 4.0], err_msg=name)


def test_truncation_bootstraps_from_final_obs():
    assert_truncation_bootstraps_from_final_obs()


class Tampered:
    """The environment as a buggy learner would read it: ``change(step) -> step`` plants the
    bug in every step the learner sees."""

    def __init__(self, env, change):
        self.env, self.change = env, change

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, actions):
        return self.change(self.env.step(actions))


def test_planted_bug_bootstrapping_from_next_episode_obs_is_caught():
    obs_as_final = lambda st: st._replace(final_obs=st.obs)
    with pytest.raises(AssertionError):
        assert_truncation_bootstraps_from_final_obs(lambda env: Tampered(env, obs_as_final))


def test_planted_bug_treating_truncation_as_terminal_is_caught():
    cut_as_end = lambda st: st._replace(terminated=st.terminated | st.truncated)
    with pytest.raises(AssertionError):
        assert_truncation_bootstraps_from_final_obs(lambda env: Tampered(env, cut_as_end))


def assert_traces_stop_at_episode_ends(traces):
    """Each episode lies in one of two disjoint chains, so an episode may change only the values
    of its own chain; a trace carried over would update the other chain too."""
    env = two_chains()
    res = rc.td_lambda(env, uniform(env), 40, 0.9, 0.5, 0.9, traces=traces, seed=0)
    before = np.vstack([np.zeros(6), res.V_history[:-1]])
    changed = res.V_history != before
    chains = [{0, 1, 2}, {3, 4, 5}]
    switches = 0
    for k in range(1, 40):
        touched = set(np.flatnonzero(changed[k]).tolist())
        assert touched, f"episode {k} changed nothing"
        assert any(touched <= c for c in chains), f"episode {k} changed states {sorted(touched)}"
        switches += touched != set(np.flatnonzero(changed[k - 1]).tolist())
    assert switches > 5  # the check saw many episodes follow one in the other chain


@pytest.mark.parametrize("traces", ["accumulating", "replacing"])
def test_traces_stop_at_episode_ends(traces):
    assert_traces_stop_at_episode_ends(traces)


def test_planted_bug_traces_kept_across_episodes_is_caught(monkeypatch):
    patch_tabular(monkeypatch, "_clear_traces", lambda traces: None)
    with pytest.raises(AssertionError):
        assert_traces_stop_at_episode_ends("accumulating")


def test_replacing_traces_cap_at_one():
    # A state revisited within an episode: accumulating traces exceed 1, replacing ones do not,
    # so with lam = gamma = 1 the first update differs exactly when a state repeats.
    env = random_walk(5, left_reward=-1.0)
    acc = rc.td_lambda(env, uniform(env), 1, 1.0, 0.1, 1.0, seed=7)
    rep = rc.td_lambda(env, uniform(env), 1, 1.0, 0.1, 1.0, traces="replacing", seed=7)
    assert acc.episode_lengths[0] > 5  # some state was visited twice
    assert not np.array_equal(acc.V, rep.V)


# ---------------------------------------------------------------------------------------------
# Convergence to the dynamic-programming answer


def test_mc_prediction_converges_to_dp_answer():
    env = random_walk(5)
    truth = rc.policy_evaluation_exact(env.P, env.R, uniform(env), 1.0, env.terminal)
    np.testing.assert_allclose(truth[1:6], np.arange(1, 6) / 6)  # Sutton & Barto, Example 6.2
    for first_visit in (True, False):
        res = rc.mc_prediction(env, uniform(env), 1000, 1.0, first_visit=first_visit, seed=0)
        # Returns lie in [0, 1]: a mean of >= 400 of them (every state gets a visit in at least
        # 40% of episodes) has standard error <= 0.5 / 20 = 0.025; allow two of them.
        assert np.abs(res.V - truth).max() < 0.05


def test_td_methods_converge_to_dp_answer():
    env = random_walk(5)
    truth = rc.policy_evaluation_exact(env.P, env.R, uniform(env), 1.0, env.terminal)
    for res in (rc.td0(env, uniform(env), 1000, 0.02, 1.0, seed=0),
                rc.n_step_td(env, uniform(env), 1000, 3, 0.02, 1.0, seed=0),
                rc.td_lambda(env, uniform(env), 1000, 0.5, 0.02, 1.0, seed=0)):
        # A constant step keeps each iterate noisy, by about sqrt(alpha / 2) * std(target)
        # ~ 0.1 * 0.5 = 0.05; the mean of the last 500 iterates is centred on the truth and
        # several times less noisy (they decorrelate within ~1 / alpha = 50 updates of a state).
        assert np.abs(res.V_history[500:].mean(axis=0) - truth).max() < 0.06


def test_q_learning_reaches_q_star_on_a_deterministic_mdp():
    env = rc.GridWorld(size=3, step_reward=-0.1)
    V, _ = rc.value_iteration(env.P, env.R, 0.9, env.terminal)
    q_star = rc.q_from_v(env.P, env.R, V, 0.9, env.terminal)
    # Off-policy: behaving uniformly at random, it still learns the greedy policy's values.
    res = rc.q_learning(env, 1500, alpha=0.5, gamma=0.9, epsilon=1.0, seed=0)
    live = ~env.terminal
    # Deterministic transitions: targets are exact, so the error contracts to rounding.
    np.testing.assert_allclose(res.Q[live], q_star[live], atol=1e-6)


def test_mc_control_finds_the_shortest_path():
    env = rc.GridWorld(size=4, step_reward=-0.1)
    res = rc.mc_control(env, 800, gamma=0.9, epsilon=0.2, seed=0)
    V, best = rc.value_iteration(env.P, env.R, 0.9, env.terminal)
    q_star = rc.q_from_v(env.P, env.R, V, 0.9, env.terminal)
    s, steps = 0, 0
    while not env.terminal[s] and steps < 20:
        assert q_star[s, res.policy[s]] == pytest.approx(V[s]), f"non-optimal action in {s}"
        s = int(np.argmax(env.P[s, res.policy[s]]))
        steps += 1
    assert steps == 6  # the shortest path from corner to corner of a 4x4 grid


# ---------------------------------------------------------------------------------------------
# CliffWalking (Sutton & Barto, Example 6.6)


def greedy_path(env, policy, limit=100):
    s = int(np.argmax(env.start))
    cells = [s]
    while not env.terminal[s] and len(cells) <= limit:
        s = int(np.argmax(env.P[s, policy[s]]))
        cells.append(s)
    return cells


def test_cliff_sarsa_safe_q_learning_edge_sarsa_earns_more():
    env = rc.CliffWalking()
    edge = [36] + list(range(24, 36)) + [47]  # up, along the row above the cliff, down
    earned_q, earned_s = [], []
    for seed in range(4):
        q = rc.q_learning(env, 500, alpha=0.1, gamma=1.0, epsilon=0.1, seed=seed)
        s = rc.sarsa(env, 500, alpha=0.1, gamma=1.0, epsilon=0.1, seed=seed)
        assert greedy_path(env, q.policy) == edge
        safe = greedy_path(env, s.policy)
        assert safe[-1] == 47 and len(safe) > len(edge)
        on_edge = [c for c in safe if 25 <= c <= 34]  # row 2, beside the cliff
        assert len(on_edge) <= 1, safe
        earned_q.append(q.episode_returns[100:].mean())
        earned_s.append(s.episode_returns[100:].mean())
    # While exploring, Q-learning's edge path falls off with epsilon-greedy slips: every SARSA run
    # earns more than every Q-learning run.
    assert min(earned_s) > max(earned_q)


def max_bias_mdp(n=1, actions=10):
    """Sutton & Barto's Example 6.7: from A (state 0) action 0 goes left to B, the others right to
    the end (reward 0); every action of B ends the episode with reward +0.9 or -1.1 (mean -0.1)."""
    P, R = np.zeros((5, actions, 5)), np.zeros((5, actions, 5))
    P[0, 0, 1] = 1.0
    P[0, 1:, 2] = 1.0
    P[1, :, 3] = P[1, :, 4] = 0.5
    R[1, :, 3], R[1, :, 4] = 0.9, -1.1
    for s in (2, 3, 4):
        P[s, :, s] = 1.0
    return rc.TabularMDP(P, R, np.array([False, False, True, True, True]),
                         np.array([1.0, 0, 0, 0, 0]), n=n)


def test_double_q_learning_removes_the_maximisation_bias():
    env = max_bias_mdp(n=500)
    q = rc.q_learning(env, 100, alpha=0.1, gamma=1.0, epsilon=0.1, seed=0)
    d = rc.double_q_learning(env, 100, alpha=0.1, gamma=1.0, epsilon=0.1, seed=0)
    left_q = (q.episode_lengths == 2).mean(axis=0)  # two steps: went left, through B
    left_d = (d.episode_lengths == 2).mean(axis=0)
    # Left is worth -0.1 < 0: Q-learning's max over B's noisy estimates makes it look better.
    assert left_q[20:60].mean() > 0.4 and left_d[20:60].mean() < left_q[20:60].mean() / 2


def test_double_q_learning_reaches_q_star_on_a_deterministic_mdp():
    env = rc.GridWorld(size=3, step_reward=-0.1)
    V, _ = rc.value_iteration(env.P, env.R, 0.9, env.terminal)
    q_star = rc.q_from_v(env.P, env.R, V, 0.9, env.terminal)
    res = rc.double_q_learning(env, 1500, alpha=0.5, gamma=0.9, epsilon=1.0, seed=0)
    np.testing.assert_allclose(res.Q[~env.terminal], q_star[~env.terminal], atol=1e-6)


@pytest.mark.parametrize("method", ["q_learning", "sarsa", "expected_sarsa", "double_q_learning"])
def test_lockstep_loop_with_one_copy_is_the_single_copy_loop_bit_for_bit(method):
    # The n-copy loop is an optimisation of the one-copy loop: with one copy it draws the same
    # numbers in the same order, so every table entry and episode agrees exactly.
    for env, eps in [(rc.CliffWalking(), 0.1), (rc.GridWorld(size=4, slip=0.2, max_steps=15),
                                                np.linspace(0.5, 0.0, 30))]:
        a = control._td_control(env, 30, 0.3, 0.95, eps, 3, 0.0, method, lockstep=False)
        b = control._td_control(env, 30, 0.3, 0.95, eps, 3, 0.0, method, lockstep=True)
        np.testing.assert_array_equal(a.Q, b.Q)
        np.testing.assert_array_equal(a.episode_returns, b.episode_returns)
        np.testing.assert_array_equal(a.episode_lengths, b.episode_lengths)


def test_copies_learn_independently_each_with_its_own_step_size():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=30, n=3)
    res = rc.sarsa(env, 40, alpha=np.array([0.1, 0.5, 0.5]), seed=0)
    assert res.Q.shape == (3, 16, 4) and res.episode_returns.shape == (3, 40)
    assert res.policy.shape == (3, 16)
    assert not np.array_equal(res.Q[1], res.Q[2])  # same step size, different experience
    # Each copy's record holds its own first 40 episodes: lengths within the time limit, and the
    # environment saw at least as many episodes as the copies finished.
    assert (res.episode_lengths <= 30).all() and len(env.episode_lengths) >= 120


def test_epsilon_schedule_gives_each_episode_its_own_epsilon():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=20)
    for learn in (rc.q_learning, rc.sarsa, rc.expected_sarsa, rc.double_q_learning,
                  lambda env, episodes, alpha, **kw: rc.mc_control(env, episodes, alpha=alpha, **kw)):
        a = learn(env, 25, alpha=0.3, epsilon=np.full(25, 0.2), seed=4)
        b = learn(env, 25, alpha=0.3, epsilon=0.2, seed=4)
        np.testing.assert_array_equal(a.Q, b.Q)
        c = learn(env, 25, alpha=0.3, epsilon=np.r_[np.full(24, 0.2), 1.0], seed=4)
        # the last episode explores at random: the first 24 episodes are the same
        np.testing.assert_array_equal(c.episode_lengths[:24], b.episode_lengths[:24])
        assert not np.array_equal(c.Q, b.Q)


def test_epsilon_greedy_one_row_and_many_rows_follow_the_same_rule():
    from rlcourse.tabular.exploration import _epsilon_greedy_action, _epsilon_greedy_rows

    rng = np.random.default_rng(0)
    q = rng.integers(0, 3, size=(500, 4)).astype(float)  # many ties
    eps = rng.choice([0.0, 0.3, 1.0], size=500)
    u = rng.random((500, 2))
    rows = _epsilon_greedy_rows(q, eps, u)

    class Replay:  # hands out the same uniforms, two per call
        def __init__(self):
            self.k = 0

        def random(self, size):
            self.k += 1
            return u[self.k - 1]

    replay = Replay()
    assert [_epsilon_greedy_action(q[i], eps[i], replay) for i in range(500)] == rows.tolist()


def test_record_episodes_are_the_episodes_mc_prediction_learns_from():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=12)
    episodes = rc.record_episodes(env, uniform(env), 60, seed=5)
    res = rc.mc_prediction(env, uniform(env), 60, 0.9, first_visit=False, alpha=0.2, seed=5)
    V = np.zeros(16)
    for ep in episodes:
        assert len(ep.states) == len(ep.rewards) + 1 == len(ep.actions) + 1
        final = 0.0 if ep.terminated else V[ep.states[-1]]
        for s, g in zip(ep.states[:-1], rc.mc_returns(ep.rewards, 0.9, final)):
            V[s] += 0.2 * (g - V[s])
    assert not all(ep.terminated for ep in episodes)  # the time limit cut some
    np.testing.assert_allclose(V, res.V, atol=1e-12)
    np.testing.assert_array_equal([ep.rewards.sum() for ep in episodes], res.episode_returns)


@pytest.mark.parametrize("terminated", [True, False])
def test_lambda_returns_are_the_weighted_n_step_returns(terminated):
    rewards, values = recorded_episode(seed=2)
    T, gamma, lam = len(rewards), 0.9, 0.7
    got = rc.lambda_returns(rewards, values, terminated, gamma, lam)
    for t in range(T):
        window = [rc.n_step_target(rewards[t:min(t + n, T)], values[min(t + n, T)],
                                   terminated and t + n >= T, gamma) for n in range(1, T - t + 1)]
        weights = (1 - lam) * lam ** np.arange(T - t)
        weights[-1] = lam ** (T - t - 1)  # the full return takes the remaining weight
        np.testing.assert_allclose(got[t], np.dot(weights, window), rtol=1e-12)
    # lam = 0: the one-step targets; lam = 1: the Monte Carlo returns
    last = 0.0 if terminated else values[T]
    td = rewards + gamma * np.r_[values[1:T], last]
    np.testing.assert_allclose(rc.lambda_returns(rewards, values, terminated, gamma, 0.0), td)
    np.testing.assert_allclose(rc.lambda_returns(rewards, values, terminated, gamma, 1.0),
                               rc.mc_returns(rewards, gamma, last))
    # and GAE's returns (advantages + values) are the same lambda-returns
    _, gae_returns = rc.gae(rewards[:, None], values[:T, None], np.r_[values[1:T], values[T]][:, None],
                            np.r_[np.zeros(T - 1, bool), terminated][:, None],
                            np.r_[np.zeros(T - 1, bool), not terminated][:, None], gamma, lam)
    np.testing.assert_allclose(gae_returns[:, 0], got, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Exploration, determinism, results


def test_epsilon_greedy_ties_and_frequencies():
    rng = np.random.default_rng(0)
    q = np.array([1.0, 3.0, 3.0, 0.0])
    draws = np.array([rc.epsilon_greedy(q, 0.2, rng) for _ in range(20_000)])
    freq = np.bincount(draws, minlength=4) / draws.size
    expected = rc.epsilon_greedy_probs(q, 0.2)
    np.testing.assert_allclose(expected, [0.05, 0.45, 0.45, 0.05])
    np.testing.assert_allclose(freq, expected, atol=0.015)  # ~4 standard errors
    table = np.array([[0.0, 1.0], [2.0, 2.0]])
    acts = rc.epsilon_greedy(table, 0.0, np.random.default_rng(1))
    assert acts.shape == (2,) and acts[0] == 1


def test_same_seed_same_numbers_other_seed_other_numbers():
    env = rc.CliffWalking()
    a = rc.expected_sarsa(env, 20, alpha=0.5, seed=5)
    b = rc.expected_sarsa(env, 20, alpha=0.5, seed=5)
    c = rc.expected_sarsa(env, 20, alpha=0.5, seed=6)
    np.testing.assert_array_equal(a.Q, b.Q)
    np.testing.assert_array_equal(a.episode_returns, b.episode_returns)
    assert not np.array_equal(a.episode_returns, c.episode_returns)


def test_episode_returns_match_the_environment():
    env = rc.GridWorld(size=4, slip=0.2, max_steps=30)
    res = rc.sarsa(env, 25, seed=0)
    np.testing.assert_allclose(res.episode_returns, env.episode_returns[-25:])
    np.testing.assert_array_equal(res.episode_lengths, env.episode_lengths[-25:])
    assert res.policy.shape == (16,)


def test_vector_alpha_learns_each_step_size_as_a_single_run():
    env = random_walk(5)
    both = rc.td_lambda(env, uniform(env), 10, 0.6, np.array([0.1, 0.4]), 1.0, seed=0)
    one = rc.td_lambda(env, uniform(env), 10, 0.6, 0.4, 1.0, seed=0)
    assert both.V.shape == (2, 7) and both.V_history.shape == (10, 2, 7)
    np.testing.assert_array_equal(both.V[1], one.V)


# ---------------------------------------------------------------------------------------------
# Input validation


@pytest.mark.parametrize("call, match", [
    (lambda env, pol: rc.td0(env, pol, 5, 0.1, 1.5), "gamma"),
    (lambda env, pol: rc.td0(env, pol, 5, 0.0, 0.9), "alpha"),
    (lambda env, pol: rc.td0(env, pol, 5, np.array([0.1, 1.2]), 0.9), "alpha"),
    (lambda env, pol: rc.td_lambda(env, pol, 5, -0.1, 0.1, 0.9), "lam"),
    (lambda env, pol: rc.td_lambda(env, pol, 5, 0.5, 0.1, 0.9, traces="dutch"), "traces"),
    (lambda env, pol: rc.n_step_td(env, pol, 5, 0, 0.1, 0.9), "n"),
    (lambda env, pol: rc.td0(env, pol, 0, 0.1, 0.9), "episodes"),
    (lambda env, pol: rc.td0(env, pol * 2, 5, 0.1, 0.9), "sum to 1"),
    (lambda env, pol: rc.td0(env, pol[:, :1], 5, 0.1, 0.9), "policy"),
    (lambda env, pol: rc.td0(env, np.where(pol > 0, np.nan, 0), 5, 0.1, 0.9), "finite"),
    (lambda env, pol: rc.mc_prediction(env, pol, 5, 0.9, seed=-1), "seed"),
    (lambda env, pol: rc.td0(env, pol, 5, 0.1, 0.9, init=np.zeros(3)), "init"),
    (lambda env, pol: rc.q_learning(env, 5, epsilon=1.1), "epsilon"),
    (lambda env, pol: rc.sarsa(env, 5, alpha=-0.1), "alpha"),
    (lambda env, pol: rc.expected_sarsa(env, 5, gamma=-1), "gamma"),
    (lambda env, pol: rc.mc_control(env, 5, init=np.zeros((16, 3))), "init"),
    (lambda env, pol: rc.td0(rc.GridWorld(size=4, n=2), np.ones((16, 4)) / 4, 5, 0.1, 0.9), "n=1"),
    (lambda env, pol: rc.mc_control(rc.GridWorld(size=4, n=2), 5), "n=1"),
    (lambda env, pol: rc.sarsa(rc.GridWorld(size=4, n=2), 5, alpha=np.ones(3) / 2), "per copy"),
    (lambda env, pol: rc.q_learning(env, 5, epsilon=np.full(4, 0.1)), "one value per episode"),
    (lambda env, pol: rc.q_learning(env, 3, epsilon=np.array([0.1, 1.5, 0.1])), "epsilon"),
    (lambda env, pol: rc.mc_control(env, 5, alpha=np.array([0.1, 0.2])), "alpha"),
    (lambda env, pol: rc.lambda_returns([1.0, 2.0], [0.0, 0.0], True, 0.9, 0.5), "values"),
    (lambda env, pol: rc.lambda_returns([1.0], [0.0, 0.0], True, 0.9, 1.5), "lam"),
    (lambda env, pol: rc.record_episodes(env, pol[:, :2], 3), "policy"),
    (lambda env, pol: rc.q_learning("grid", 5), "env"),
    (lambda env, pol: rc.epsilon_greedy(np.zeros(3), 0.1, 0), "rng"),
    (lambda env, pol: rc.epsilon_greedy(np.zeros((2, 2, 2)), 0.1, np.random.default_rng()),
     "q_row_or_table"),
    (lambda env, pol: rc.n_step_target([], 0.0, True, 0.9), "rewards"),
    (lambda env, pol: rc.td_target(1.0, 0.0, 1, 0.9), "terminated"),
])
def test_bad_input_raises_a_clear_error(call, match):
    env = rc.GridWorld(size=4)
    with pytest.raises((ValueError, TypeError), match=match):
        call(env, uniform(env))
