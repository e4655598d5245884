"""Bandit agents: UCB's first sweep, greedy lock-in, optimism, sample averages, the gradient
bandit's update, and run_bandit's vectorisation, seeding and input checks."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.tabular import bandits


class FixedBandit:
    """Noise-free bandit: arm ``a`` of copy ``i`` always pays ``means[i, a]``."""

    def __init__(self, means):
        self.means = np.asarray(means, dtype=float)
        self.n, self.num_actions = self.means.shape
        self.optimal_arm = self.means.argmax(axis=1)

    def reset(self, seed=None):
        return np.zeros(self.n, dtype=np.int64)

    def step(self, actions):
        return self.means[np.arange(self.n), actions]


def play(agent, env, steps, seed=0):
    """Actions ``[steps, n]`` of ``agent`` on ``env``."""
    rng = np.random.default_rng(seed)
    actions = np.empty((steps, env.n), dtype=np.int64)
    for t in range(steps):
        actions[t] = agent.act(rng)
        agent.update(actions[t], env.step(actions[t]))
    return actions


# -- UCB -------------------------------------------------------------------------------------

def first_sweep_tries_every_arm(agent_cls) -> bool:
    arms, n = 6, 50
    env = rc.Bandit(arms, n, seed=1)
    actions = play(agent_cls(arms, n, c=2.0), env, arms)
    return all(sorted(actions[:, i]) == list(range(arms)) for i in range(n))


def test_ucb_tries_every_arm_once_first():
    assert first_sweep_tries_every_arm(rc.UCB)


def test_planted_bug_ucb_without_infinite_bonus_for_untried_arms_is_caught(monkeypatch):
    def scores_without_untried_rule(Q, N, t, c=2.0):
        return Q + c * np.sqrt(np.log(t) / np.maximum(N, 1))

    monkeypatch.setattr(bandits, "ucb_scores", scores_without_untried_rule)
    assert not first_sweep_tries_every_arm(rc.UCB)


def test_ucb_scores_by_hand():
    Q = np.array([[0.5, 1.0, 0.0]])
    N = np.array([[4, 1, 0]])
    scores = rc.ucb_scores(Q, N, t=10, c=2.0)
    np.testing.assert_allclose(scores[0, :2], [0.5 + 2 * np.sqrt(np.log(10) / 4),
                                               1.0 + 2 * np.sqrt(np.log(10))])
    assert scores[0, 2] == np.inf
    # At t = 1 ln t = 0: no bonus, the estimates alone.
    np.testing.assert_allclose(rc.ucb_scores(Q[:, :2], N[:, :2], t=1)[0], [0.5, 1.0])


def test_ucb_finds_the_best_arm_of_a_noise_free_bandit():
    env = FixedBandit(np.tile([0.2, 0.9, 0.5, 0.1], (3, 1)))
    actions = play(rc.UCB(4, 3, c=0.5), env, 300)
    assert np.mean(actions[-100:] == 1) > 0.9


# -- epsilon-greedy --------------------------------------------------------------------------

def test_greedy_with_zero_epsilon_locks_onto_its_first_arm():
    """All arms pay a positive reward: after the first pull its estimate beats the untried 0s,
    so epsilon = 0 never pulls anything else, and only the copies that happened to start on the
    best arm find it (about 1 in 3 here)."""
    n = 300
    env = FixedBandit(np.tile([1.0, 2.0, 3.0], (n, 1)))
    actions = play(rc.EpsilonGreedy(3, n, epsilon=0.0), env, 50)
    assert np.all(actions == actions[0])
    on_best = np.mean(actions[0] == 2)
    assert 0.2 < on_best < 0.5


def test_exploration_escapes_the_lock_in():
    n = 300
    env = FixedBandit(np.tile([1.0, 2.0, 3.0], (n, 1)))
    actions = play(rc.EpsilonGreedy(3, n, epsilon=0.1), env, 200)
    # Greedy is on the best arm almost everywhere; exploration costs about epsilon * 2/3.
    assert np.mean(actions[-50:] == 2) > 1 - 0.1 * 2 / 3 - 0.05


def test_optimistic_initial_values_try_every_arm_then_settle_on_the_best():
    """Initial estimates above every reward: each pulled arm's average drops below the untried
    arms' 5.0, so the first sweep is a permutation and then greedy settles on the best arm."""
    n, arms = 40, 4
    rng = np.random.default_rng(0)
    env = FixedBandit(rng.uniform(0, 1, size=(n, arms)))
    actions = play(rc.EpsilonGreedy(arms, n, epsilon=0.0, initial=5.0), env, 20)
    assert all(sorted(actions[:arms, i]) == list(range(arms)) for i in range(n))
    np.testing.assert_array_equal(actions[arms:], np.tile(env.optimal_arm, (20 - arms, 1)))


def test_sample_average_estimates_are_the_mean_reward_of_each_arm():
    arms, n = 3, 5
    env = rc.Bandit(arms, n, seed=2)
    agent = rc.EpsilonGreedy(arms, n, epsilon=0.5)
    rng = np.random.default_rng(0)
    log_a, log_r = [], []
    for _ in range(100):
        a = agent.act(rng)
        r = env.step(a)
        agent.update(a, r)
        log_a.append(a)
        log_r.append(r)
    log_a, log_r = np.array(log_a), np.array(log_r)
    for i in range(n):
        for a in range(arms):
            pulled = log_a[:, i] == a
            if pulled.any():
                np.testing.assert_allclose(agent.Q[i, a], log_r[pulled, i].mean(), atol=1e-12)
                assert agent.N[i, a] == pulled.sum()


def test_constant_step_size_weights_recent_rewards_exponentially():
    agent = rc.EpsilonGreedy(1, 1, epsilon=0.0, step_size=0.5)
    for r in (1.0, 2.0, 4.0):
        agent.update([0], [r])
    # Q = 0.5*4 + 0.25*2 + 0.125*1 + 0.125*0 (the initial estimate)
    np.testing.assert_allclose(agent.Q[0, 0], 2.625)


# -- gradient bandit -------------------------------------------------------------------------

def test_gradient_bandit_update_moves_preferences_toward_rewarding_arm():
    agent = rc.GradientBandit(3, 2, alpha=0.1)
    agent.update([0, 0], [0.0, 0.0])  # first reward is its own baseline: nothing moves
    np.testing.assert_array_equal(agent.H, 0.0)
    agent.update([1, 1], [1.0, -1.0])  # baseline 0: copy 0 above it, copy 1 below
    pi = np.full(3, 1 / 3)
    np.testing.assert_allclose(agent.H[0], 0.1 * 1.0 * (np.eye(3)[1] - pi))
    np.testing.assert_allclose(agent.H[1], 0.1 * -1.0 * (np.eye(3)[1] - pi))
    np.testing.assert_allclose(agent.H.sum(axis=1), 0.0, atol=1e-15)
    np.testing.assert_allclose(agent.probs.sum(axis=1), 1.0)


def test_gradient_bandit_learns_to_prefer_the_better_arm():
    n = 200
    env = FixedBandit(np.tile([4.0, 5.0], (n, 1)))  # all rewards positive: baseline matters
    agent = rc.GradientBandit(2, n, alpha=0.1)
    play(agent, env, 300)
    assert agent.probs[:, 1].mean() > 0.9


def test_gradient_bandit_samples_from_its_policy():
    agent = rc.GradientBandit(3, 20_000)
    agent.H[:] = np.log([0.2, 0.3, 0.5])
    counts = np.bincount(agent.act(np.random.default_rng(0)), minlength=3) / 20_000
    np.testing.assert_allclose(counts, [0.2, 0.3, 0.5], atol=0.02)


# -- run_bandit ------------------------------------------------------------------------------

def test_run_bandit_is_seeded_and_resets_the_agent():
    env = rc.Bandit(5, 30)
    agent = rc.EpsilonGreedy(5, 30, epsilon=0.1)
    first = rc.run_bandit(env, agent, 100, seed=4)
    again = rc.run_bandit(env, agent, 100, seed=4)
    np.testing.assert_array_equal(first.rewards, again.rewards)
    np.testing.assert_array_equal(first.optimal, again.optimal)
    other = rc.run_bandit(env, agent, 100, seed=5)
    assert not np.array_equal(first.rewards, other.rewards)


def test_run_bandit_steps_all_copies_together():
    class CountingUCB(rc.UCB):
        calls = 0

        def act(self, rng=None):
            CountingUCB.calls += 1
            return super().act(rng)

    n, steps = 1000, 40
    env = rc.Bandit(4, n)
    result = rc.run_bandit(env, CountingUCB(4, n), steps, seed=0)
    assert CountingUCB.calls == steps  # one call per time step, not per copy
    assert result.rewards.shape == (steps, n) and result.optimal.shape == (steps, n)
    assert result.optimal.dtype == bool
    # The optimal flags agree with the environment's own count of optimal pulls.
    np.testing.assert_array_equal(result.optimal.sum(axis=0), env.optimal_pulls)


def test_ucb_and_epsilon_greedy_beat_pure_greedy_on_the_testbed():
    """Sutton & Barto's testbed result, in a band wide enough for 500 runs: pure greedy gets
    stuck below the exploring agents in % optimal action after 500 steps."""
    n, steps = 500, 500
    env = rc.Bandit(10, n)
    greedy = rc.run_bandit(env, rc.EpsilonGreedy(10, n, epsilon=0.0), steps, seed=0)
    eps = rc.run_bandit(env, rc.EpsilonGreedy(10, n, epsilon=0.1), steps, seed=0)
    ucb = rc.run_bandit(env, rc.UCB(10, n, c=2.0), steps, seed=0)
    late = slice(steps - 100, steps)
    assert greedy.optimal[late].mean() < 0.5
    assert eps.optimal[late].mean() > greedy.optimal[late].mean() + 0.2
    assert ucb.optimal[late].mean() > greedy.optimal[late].mean() + 0.2


# -- input checks ----------------------------------------------------------------------------

def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="epsilon"):
        rc.EpsilonGreedy(3, 2, epsilon=1.5)
    with pytest.raises(ValueError, match="step_size"):
        rc.EpsilonGreedy(3, 2, step_size=0.0)
    with pytest.raises(ValueError, match="arms"):
        rc.UCB(0, 2)
    with pytest.raises(ValueError, match="c:"):
        rc.UCB(3, 2, c=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        rc.GradientBandit(3, 2, alpha=0.0)
    with pytest.raises(ValueError, match="t:"):
        rc.ucb_scores(np.zeros(3), np.ones(3), t=0)


def test_bad_updates_raise():
    agent = rc.EpsilonGreedy(3, 2)
    with pytest.raises(ValueError, match="actions: values must be < 3"):
        agent.update([0, 3], [1.0, 1.0])
    with pytest.raises(ValueError, match="rewards: expected shape"):
        agent.update([0, 1], [1.0])
    with pytest.raises(ValueError, match="rewards: expected finite"):
        agent.update([0, 1], [1.0, np.nan])
    with pytest.raises(TypeError, match="actions"):
        agent.update([0.0, 1.0], [1.0, 1.0])


def test_run_bandit_rejects_mismatched_agent():
    with pytest.raises(ValueError, match="n=4"):
        rc.run_bandit(rc.Bandit(3, 4), rc.UCB(3, 5), 10)
    with pytest.raises(ValueError, match="steps"):
        rc.run_bandit(rc.Bandit(3, 4), rc.UCB(3, 4), 0)


# -- run_bandit's record: actions and regret -------------------------------------------------

def test_run_bandit_records_actions_and_the_regret_of_each_pull():
    n, steps = 40, 60
    env = rc.Bandit(5, n)
    result = rc.run_bandit(env, rc.EpsilonGreedy(5, n, epsilon=0.3), steps, seed=2)
    assert result.actions.shape == (steps, n) and result.regret.shape == (steps, n)
    rows = np.arange(n)
    expected = env.means.max(axis=1) - env.means[rows, result.actions]
    np.testing.assert_allclose(result.regret, expected)
    np.testing.assert_allclose(result.regret.sum(axis=0), env.regret)
    np.testing.assert_array_equal(result.optimal, result.actions == env.optimal_arm)
    # the regret is noise-free: it depends on the arms pulled, not on the rewards received
    assert (result.regret >= 0).all() and (result.regret[result.optimal] == 0).all()


def test_run_bandit_regret_is_nan_for_an_env_without_means():
    class NoMeans(FixedBandit):
        def __init__(self, means):
            super().__init__(means)
            self.hidden = self.means
            del self.means

        def step(self, actions):
            return self.hidden[np.arange(self.n), actions]

    result = rc.run_bandit(NoMeans(np.tile([0.0, 1.0], (3, 1))), rc.UCB(2, 3), 5)
    assert np.isnan(result.regret).all() and result.actions.shape == (5, 3)


# -- Bandit: shifted and drifting means ------------------------------------------------------

def test_bandit_mean_shifts_every_arm():
    a, b = rc.Bandit(4, 100, seed=1), rc.Bandit(4, 100, seed=1, mean=4.0)
    np.testing.assert_allclose(b.means, a.means + 4.0)
    np.testing.assert_array_equal(a.optimal_arm, b.optimal_arm)
    with pytest.raises(ValueError, match="mean"):
        rc.Bandit(4, 2, mean=np.inf)


def test_drifting_bandit_moves_every_mean_by_a_random_walk():
    env = rc.Bandit(3, 20_000, seed=0, drift=0.1)
    start = env.means.copy()
    for _ in range(4):
        env.step(np.zeros(20_000, dtype=int))
    steps = env.means - start
    assert abs(steps.std() - 0.1 * np.sqrt(4)) < 0.01 and abs(steps.mean()) < 0.01
    np.testing.assert_array_equal(env.optimal_arm, env.means.argmax(axis=1))
    env.reset()  # starts over from the same problems
    np.testing.assert_array_equal(env.means, start)
    assert not np.shares_memory(env.means, start)
    with pytest.raises(ValueError, match="drift"):
        rc.Bandit(3, 2, drift=-1.0)


def test_drifting_regret_uses_the_means_of_each_step():
    n, steps = 50, 200
    env = rc.Bandit(4, n, drift=0.05)
    result = rc.run_bandit(env, rc.EpsilonGreedy(4, n, epsilon=0.2), steps, seed=3)
    np.testing.assert_allclose(result.regret.sum(axis=0), env.regret)
    assert (result.regret >= 0).all()
    # the optimal arm changes during the run, so a stationary regret would disagree
    final = env.means.max(axis=1)[None] - env.means[np.arange(n), result.actions]
    assert not np.allclose(final, result.regret)
    assert (result.optimal == (result.regret == 0)).all()


def test_constant_step_tracks_drifting_arms_better_than_sample_averages():
    """Sutton & Barto's exercise 2.5 in a band wide enough for 200 runs and 3000 steps."""
    n, steps = 200, 3000
    env = rc.Bandit(10, n, drift=0.02)
    averages = rc.run_bandit(env, rc.EpsilonGreedy(10, n, epsilon=0.1), steps, seed=1)
    constant = rc.run_bandit(env, rc.EpsilonGreedy(10, n, epsilon=0.1, step_size=0.1), steps,
                             seed=1)
    late = slice(steps - 500, steps)
    assert constant.optimal[late].mean() > averages.optimal[late].mean() + 0.1
