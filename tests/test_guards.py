"""Issue 12's reproducers that the bad-input table does not cover: loops that could run forever,
empty inputs, and settings that used to pass silently. Each must end with a clear error naming
what is wrong, or return the right value."""

import math

import numpy as np
import pytest

import rlcourse as rc
import rlcourse.tabular._episodes as episodes

NO_EXIT = ["S.", ".."]  # a grid with no goal, no hole and no time limit: episodes never end


@pytest.fixture
def short_guard(monkeypatch):
    monkeypatch.setattr(episodes, "MAX_EPISODE_STEPS", 500)


@pytest.mark.parametrize("learn", [
    lambda env: rc.q_learning(env, episodes=1),
    lambda env: rc.sarsa(env, episodes=1),
    lambda env: rc.mc_control(env, episodes=1),
    lambda env: rc.td0(env, np.full((4, 4), 0.25), episodes=1, alpha=0.1, gamma=0.9),
    lambda env: rc.mc_prediction(env, np.full((4, 4), 0.25), episodes=1, gamma=0.9),
], ids=["q_learning", "sarsa", "mc_control", "td0", "mc_prediction"])
def test_an_episode_that_never_ends_is_an_error_not_a_hang(short_guard, learn):
    with pytest.raises(RuntimeError, match=r"env: an episode has run 500 steps without ending"):
        learn(rc.GridWorld(layout=NO_EXIT))


def test_the_guard_leaves_a_time_limited_episode_alone(short_guard):
    result = rc.q_learning(rc.GridWorld(layout=NO_EXIT, max_steps=400), episodes=3)
    assert np.all(result.episode_lengths == 400)


@pytest.mark.parametrize("solve", [rc.value_iteration, rc.policy_iteration])
def test_dp_needs_at_least_one_iteration(solve):
    env = rc.GridWorld(size=3)
    with pytest.raises(ValueError, match=r"^max_iters: expected a positive integer, got 0"):
        solve(env.P, env.R, 0.9, terminal=env.terminal, max_iters=0)


def test_greedy_refuses_a_nan_tolerance():
    with pytest.raises(ValueError, match=r"^tol: "):
        rc.greedy(np.zeros((2, 2)), tol=math.nan)


def test_td_target_refuses_a_nan_reward():
    with pytest.raises(ValueError, match=r"^reward: expected a finite number"):
        rc.td_target(math.nan, 0.5, False, 0.9)


def test_no_steps_give_no_returns():
    empty, done = np.zeros((0, 2)), np.zeros((0, 2), bool)
    assert rc.discounted_returns(empty, done, done, 0.9).shape == (0, 2)
    advantages, returns = rc.gae(empty, empty, empty, done, done, 0.9, 0.95)
    assert advantages.shape == returns.shape == (0, 2)


def test_gaussian_log_prob_accepts_lists():
    assert rc.gaussian_log_prob([[0.0]], [0.0], [[0.0]]) == pytest.approx(-0.5 * math.log(2 * math.pi))


def test_policy_iteration_on_a_large_grid_equals_value_iteration():
    # the exact solve no longer computes a condition number at gamma < 1 (a full SVD per step)
    env = rc.GridWorld(size=12)
    v_pi, _ = rc.policy_iteration(env.P, env.R, 0.9, terminal=env.terminal)
    v_vi, _ = rc.value_iteration(env.P, env.R, 0.9, terminal=env.terminal)
    np.testing.assert_allclose(v_pi, v_vi, atol=1e-8)


def test_policy_evaluation_exact_still_refuses_a_singular_system_at_gamma_1():
    P = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])  # two states that swap forever, no terminal
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        rc.policy_evaluation_exact(P, np.zeros((2, 1)), np.ones((2, 1)), 1.0)


def _actor_critic_batch():
    model, params = rc.make_actor_critic(4, 2, hidden=(8,), seed=0)
    obs = np.zeros((5, 4), np.float32)
    actions = np.array([0, 1, 0, 1, 0])
    return model, params, obs, actions, np.full(5, -0.7), np.ones(5), np.ones(5)


@pytest.mark.parametrize("which, value, message", [
    ("advantages", np.array([np.nan, 1, 1, 1, 1.0]), r"^advantages: expected finite values"),
    ("returns", np.full(5, np.inf), r"^returns: expected finite values"),
    ("vf_coef", -1.0, r"^vf_coef: expected a finite number >= 0"),
    ("ent_coef", math.nan, r"^ent_coef: expected a finite number >= 0"),
])
def test_the_deep_rl_losses_refuse_nan_batches_and_bad_coefficients(which, value, message):
    model, params, obs, actions, old_logp, adv, ret = _actor_critic_batch()
    ppo_args = {"advantages": adv, "returns": ret, "vf_coef": 0.5, "ent_coef": 0.0, which: value}
    with pytest.raises(ValueError, match=message):
        rc.ppo_loss(params, model, obs, actions, old_logp, **ppo_args)
    with pytest.raises(ValueError, match=message):
        rc.actor_critic_loss(params, model, obs, actions, **ppo_args)


@pytest.mark.parametrize("make, message", [
    (lambda: rc.GradientBandit(3, alpha=math.inf), r"^alpha: expected a finite number > 0"),
    (lambda: rc.UCB(3, c=math.inf), r"^c: expected a finite number >= 0"),
    (lambda: rc.UCB(3, c="2"), r"^c: expected a number"),
])
def test_bandit_agents_refuse_infinite_settings(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_dqn_loss_names_nan_targets():
    model, params = rc.make_actor_critic(4, 2, hidden=(8,), seed=0)
    with pytest.raises(ValueError, match=r"^targets: expected finite values"):
        rc.dqn_loss(params, lambda p, o: model(p, o)[0], np.zeros((5, 4), np.float32),
                    np.array([0, 1, 0, 1, 0]), np.full(5, np.nan))
