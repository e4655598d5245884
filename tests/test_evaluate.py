"""evaluate: whole episodes only, a fixed quota per copy, deterministic given the seed."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.envs.cartpole import CartPole


def _balance(obs):
    # A hand-written controller that keeps CartPole up for the full 500 steps.
    return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)


def test_counts_exactly_the_requested_whole_episodes():
    res = rc.evaluate(CartPole(n=3), lambda o: np.zeros(len(o), dtype=np.int64), episodes=7, seed=0)
    assert res.returns.shape == (7,) and res.lengths.shape == (7,)
    # Always pushing left ends every episode by termination long before the time limit.
    assert (res.lengths < 500).all() and (res.lengths > 0).all()
    np.testing.assert_array_equal(res.returns, res.lengths)  # reward 1 per step
    assert res.mean == pytest.approx(res.returns.mean())


def test_a_good_controller_scores_the_time_limit():
    res = rc.evaluate(CartPole(n=4), _balance, episodes=4, seed=3)
    np.testing.assert_array_equal(res.returns, 500.0)


def test_same_seed_same_result_and_seed_matters():
    policy = lambda o: (o[:, 2] > 0).astype(np.int64)
    a = rc.evaluate(CartPole(n=2), policy, episodes=6, seed=11)
    b = rc.evaluate(CartPole(n=2), policy, episodes=6, seed=11)
    c = rc.evaluate(CartPole(n=2), policy, episodes=6, seed=12)
    np.testing.assert_array_equal(a.returns, b.returns)
    assert not np.array_equal(a.returns, c.returns)


def test_episodes_before_the_reset_do_not_count():
    env = CartPole(n=1)
    env.reset(seed=0)
    for _ in range(5):  # a half-finished episode: its return must not leak into the evaluation
        env.step(np.array([0]))
    res = rc.evaluate(env, lambda o: np.zeros(len(o), dtype=np.int64), episodes=2, seed=4)
    fresh = rc.evaluate(CartPole(n=1), lambda o: np.zeros(len(o), dtype=np.int64), episodes=2, seed=4)
    np.testing.assert_array_equal(res.returns, fresh.returns)


def test_quota_per_copy_does_not_oversample_short_episodes():
    # Copy 0 balances (500-step episodes), copy 1 falls at once. "First 4 to finish" would give
    # four short episodes; a quota per copy gives two of each.
    def policy(obs):
        actions = _balance(obs)
        actions[1] = 0
        return actions

    res = rc.evaluate(CartPole(n=2), policy, episodes=4, seed=0)
    assert sorted(res.returns == 500.0) == [False, False, True, True]


def test_greedy_policy_takes_argmax_and_first_item_of_tuples():
    q = np.array([[0.1, 0.5, -1.0], [2.0, 2.0, 1.0]])
    np.testing.assert_array_equal(rc.greedy_policy(lambda p, o: q, None)(None), [1, 0])
    np.testing.assert_array_equal(rc.greedy_policy(lambda p, o: (q, q[:, 0]), None)(None), [1, 0])


def test_bad_input_raises():
    with pytest.raises(ValueError, match="episodes"):
        rc.evaluate(CartPole(), _balance, episodes=0)
    with pytest.raises(TypeError, match="policy"):
        rc.evaluate(CartPole(), "left", episodes=1)
    with pytest.raises(ValueError, match="actions"):
        rc.evaluate(CartPole(), lambda o: np.full(len(o), 2), episodes=1)
    with pytest.raises(RuntimeError, match="max_steps"):
        rc.evaluate(CartPole(max_steps=None), _balance, episodes=1, max_steps=50)
