"""DQN diagnostics: action gap, relative change per update, greedy flips, the value ceiling,
overestimation, and the greedy policy's realised discounted return from chosen states."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.algos import dqn_diagnostics as dd


def test_action_gap_is_best_minus_second_best():
    q = np.array([[1.0, 3.0], [5.0, 4.5], [2.0, 2.0]])
    np.testing.assert_allclose(dd.action_gap(q), [2.0, 0.5, 0.0])
    q3 = np.array([[0.0, 7.0, 6.0], [9.0, -1.0, 3.0]])
    np.testing.assert_allclose(dd.action_gap(q3), [1.0, 6.0])  # not best minus worst
    # Adding a per-state constant (a change of V, not of the preference) leaves it unchanged.
    np.testing.assert_allclose(dd.action_gap(q3 + np.array([[100.0], [-3.0]])), [1.0, 6.0])
    with pytest.raises(ValueError, match="2 actions"):
        dd.action_gap(np.ones((3, 1)))


def test_relative_change_ignores_shifts_and_bounds_flips():
    q = np.array([[1.0, 3.0], [5.0, 4.5]])
    # Every action of a state moved by the same amount: the preference did not change.
    np.testing.assert_allclose(dd.relative_change(q, q + np.array([[10.0], [-2.0]])), [0.0, 0.0])
    np.testing.assert_allclose(dd.relative_change(q, q + np.array([[0.0, 1.5], [1.0, -1.0]])),
                               [1.5, 2.0])
    # On random updates: wherever the greedy action flipped, the change reached the gap.
    rng = np.random.default_rng(0)
    before = rng.normal(size=(5_000, 3))
    after = before + 0.5 * rng.normal(size=(5_000, 3))
    flips = dd.greedy_flips(before, after)
    change, gap = dd.relative_change(before, after), dd.action_gap(before)
    assert 0.05 < flips.mean() < 0.95  # both kinds of state occur, so the check means something
    assert np.all(change[flips] >= gap[flips])
    with pytest.raises(ValueError, match="q_after"):
        dd.relative_change(q, q[:1])


def test_planted_bug_largest_absolute_change_is_not_the_relative_change():
    def largest_change(q_before, q_after):
        return np.abs(q_after - q_before).max(axis=1)

    q = np.array([[1.0, 3.0]])
    shifted = q + 10.0
    assert largest_change(q, shifted)[0] != dd.relative_change(q, shifted)[0]


def test_greedy_flips():
    before = np.array([[1.0, 2.0], [3.0, 0.0], [1.0, 1.0]])
    after = np.array([[2.5, 2.0], [3.0, 0.0], [1.0, 1.5]])
    np.testing.assert_array_equal(dd.greedy_flips(before, after), [True, False, True])


def test_value_ceiling_and_overestimation():
    assert dd.value_ceiling(0.99) == pytest.approx(100.0)
    assert dd.value_ceiling(0.9, max_reward=2.0) == pytest.approx(20.0)
    assert dd.value_ceiling(1.0) == float("inf")
    q = np.array([[10.0, 12.0], [30.0, 20.0]])
    assert dd.overestimation(q, [11.0, 25.0]) == pytest.approx((12 + 30) / 2 - (11 + 25) / 2)
    with pytest.raises(ValueError, match="returns"):
        dd.overestimation(q, [1.0, 2.0, 3.0])


def _always_right(params, obs):
    return np.tile([0.0, 1.0], (len(obs), 1))


def test_greedy_discounted_returns_match_a_step_by_step_rollout():
    gamma = 0.9
    states = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -0.1, -0.5], [1.0, 1.0, 0.05, 0.2]])
    got = dd.greedy_discounted_returns(rc.CartPole(n=3, max_steps=None), _always_right, None,
                                       states, gamma)
    for i, start in enumerate(states):  # pushing right always: every state fails within steps
        env = rc.CartPole(n=1, max_steps=None)
        env.reset(seed=0)
        env.state = start[None]
        k = 0
        while True:
            k += 1
            if env.step(np.array([1])).terminated[0]:
                break
        # Reward 1 on each of the k steps, the terminating one included.
        assert got[i] == pytest.approx((1 - gamma**k) / (1 - gamma)), f"state {i}: {k} steps"
    assert len(set(np.round(got, 6))) == 3  # three different episode lengths: a real check
    # The horizon cuts the sum: at most 1 + 0.9 after two steps.
    cut = dd.greedy_discounted_returns(rc.CartPole(n=3, max_steps=None), _always_right, None,
                                       states, gamma, horizon=2)
    np.testing.assert_allclose(cut, np.minimum(got, 1 + gamma))


def test_greedy_discounted_returns_bad_input():
    states = np.zeros((2, 4))
    with pytest.raises(ValueError, match="max_steps"):
        dd.greedy_discounted_returns(rc.CartPole(n=2), _always_right, None, states, 0.9)
    with pytest.raises(ValueError, match="states"):
        dd.greedy_discounted_returns(rc.CartPole(n=3, max_steps=None), _always_right, None,
                                     states, 0.9)


def test_recent_states_keeps_the_last_observations_and_changes_nothing():
    env, plain = rc.RecentStates(rc.CartPole(n=3, seed=0), keep=5), rc.CartPole(n=3, seed=0)
    seen = [env.reset(seed=1)]
    np.testing.assert_array_equal(seen[0], plain.reset(seed=1))
    assert env.n == 3 and env.num_actions == 2 and len(env.states()) == 3
    for t in range(4):
        out, ref = env.step(np.array([0, 1, t % 2])), plain.step(np.array([0, 1, t % 2]))
        np.testing.assert_array_equal(out.obs, ref.obs)
        seen.append(out.obs)
    last5 = np.concatenate(seen)[-5:]
    kept = env.states()
    assert kept.shape == (5, 4)
    assert sorted(map(tuple, kept.tolist())) == sorted(map(tuple, last5.tolist()))
    with pytest.raises(ValueError, match="keep"):
        rc.RecentStates(rc.CartPole(), keep=0)
