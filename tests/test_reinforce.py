"""REINFORCE: the weights (reward-to-go, leave-one-out baseline), the softmax score, the
estimator's unbiasedness and variance, bad input, and learning CartPole."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.core import autodiff as ad
from rlcourse.envs.cartpole import CartPole


def _two_episodes():
    rewards = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 100.0]])  # 100 is padding of episode 1
    mask = np.array([[True, True], [True, True], [True, False]])
    return rewards, mask


def test_weights_by_hand():
    rewards, mask = _two_episodes()
    # gamma 0.5: episode 0 has G = [1.75, 1.5, 1], episode 1 has G = [1.5, 1].
    full = rc.reinforce_weights(rewards, mask, 0.5, reward_to_go=False, baseline=False)
    np.testing.assert_allclose(full, [[1.75, 1.5], [1.75, 1.5], [1.75, 0.0]])
    rtg = rc.reinforce_weights(rewards, mask, 0.5, reward_to_go=True, baseline=False)
    np.testing.assert_allclose(rtg, [[1.75, 1.5], [1.5, 1.0], [1.0, 0.0]])
    # Leave-one-out baseline: the other episode's G at the same t (none running at t = 2).
    based = rc.reinforce_weights(rewards, mask, 0.5, reward_to_go=True, baseline=True)
    np.testing.assert_allclose(based, [[0.25, -0.25], [0.5, -0.5], [1.0, 0.0]])


def _pool(n=300, seed=0):
    """Episodes of a fixed linear-softmax policy on CartPole (short ones: it is untrained)."""
    model = lambda p, o: rc.linear(p, o)
    params = rc.linear_init(4, 2, seed=seed, scale=0.5, dtype=np.float64)
    env = CartPole(n=n, seed=seed)
    obs, actions, rewards, mask, _ = rc.collect_episodes(env, model, params,
                                                         np.random.default_rng(seed))
    return model, params, obs.astype(np.float64), actions, rewards, mask


def _per_episode(weights_fn, pool):
    model, params, obs, actions, rewards, mask = pool
    weights = weights_fn(rewards, mask, actions)
    return rc.policy_gradient_estimate(model, params, obs, actions, weights, mask, per_episode=True)


def _assert_same_mean(a, b, z=4.5):
    """Paired test: every component of mean(a - b) within z standard errors of zero."""
    d = a - b
    se = d.std(axis=0, ddof=1) / np.sqrt(len(d))
    worst = np.max(np.abs(d.mean(axis=0)) / se)
    assert worst < z, f"estimators differ in mean by {worst:.1f} standard errors"


def _weights(rtg, baseline, discount_steps=False):
    return lambda r, m, a: rc.reinforce_weights(r, m, 0.99, reward_to_go=rtg, baseline=baseline,
                                                discount_steps=discount_steps)


def test_reward_to_go_and_baseline_keep_the_mean_and_cut_the_variance():
    """G_0 on every step, gamma^t G_t, and gamma^t G_t minus the leave-one-out baseline: the same
    mean (all three are unbiased for the discounted objective), falling variance."""
    pool = _pool()
    full = _per_episode(_weights(False, False), pool)
    rtg = _per_episode(_weights(True, False, True), pool)
    based = _per_episode(_weights(True, True, True), pool)
    _assert_same_mean(full, rtg)
    _assert_same_mean(rtg, based)
    var = [g.var(axis=0).sum() for g in (full, rtg, based)]
    assert var[0] > 2 * var[1] > 0 and var[1] > 1.3 * var[2] > 0, var


def test_planted_bug_action_dependent_baseline_is_caught():
    pool = _pool()
    rtg = _per_episode(_weights(True, False), pool)
    # "Baseline" that looks at the action taken: it biases the gradient.
    biased = _per_episode(lambda r, m, a: rc.reinforce_weights(r, m, 0.99, baseline=False) - 5.0 * a * m,
                          pool)
    with pytest.raises(AssertionError, match="standard errors"):
        _assert_same_mean(rtg, biased)


def test_discount_steps_by_hand():
    rewards, mask = _two_episodes()
    # gamma 0.5: G = [1.75, 1.5, 1] and [1.5, 1]; gamma^t = 1, 0.5, 0.25.
    w = rc.reinforce_weights(rewards, mask, 0.5, baseline=False, discount_steps=True)
    np.testing.assert_allclose(w, [[1.75, 1.5], [0.75, 0.5], [0.25, 0.0]])
    values = np.array([[1.0, 0.5], [0.5, 0.5], [0.0, 7.0]])  # 7 is padding: ignored
    w = rc.reinforce_weights(rewards, mask, 0.5, baseline="value", values=values)
    np.testing.assert_allclose(w, [[0.75, 1.0], [1.0, 0.5], [1.0, 0.0]])
    w = rc.reinforce_weights(rewards, mask, 0.5, baseline="value", values=values, discount_steps=True)
    np.testing.assert_allclose(w, [[0.75, 1.0], [0.5, 0.25], [0.25, 0.0]])
    with pytest.raises(ValueError, match="values"):
        rc.reinforce_weights(rewards, mask, 0.5, baseline="value")
    with pytest.raises(ValueError, match="values"):
        rc.reinforce_weights(rewards, mask, 0.5, baseline=False, values=values)
    with pytest.raises(ValueError, match="discount_steps"):
        rc.reinforce_weights(rewards, mask, 0.5, reward_to_go=False, discount_steps=True)
    with pytest.raises(ValueError, match="baseline"):
        rc.reinforce_weights(rewards, mask, 0.5, baseline="mean")


def _corridor(p, n, rng):
    """Sutton & Barto's short corridor (Example 13.1) under P(right) = p: went_right, mask [T, n]."""
    cell, running = np.zeros(n, dtype=int), np.ones(n, dtype=bool)
    rights, masks = [], []
    while running.any():
        right = rng.random(n) < p
        move = np.where(right, 1, -1) * np.where(cell == 1, -1, 1)  # the middle cell reverses
        cell = np.where(running, np.maximum(cell + move, 0), cell)
        rights.append(right)
        masks.append(running.copy())
        running &= cell < 3
    return np.array(rights), np.array(masks)


def _corridor_exact(p, gamma, discounted_visits):
    """The corridor's exact dJ/dtheta for p = sigmoid(theta) (discounted visits), or the mean of
    the G_t-weighted estimate (plain visits): sum_s w(s) p (1 - p) (Q(s, right) - Q(s, left))."""
    P = np.zeros((3, 2, 3))
    P[0, 0, 0] = P[0, 1, 1] = P[1, 0, 2] = P[1, 1, 0] = P[2, 0, 1] = 1.0
    P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
    V = np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))
    Q = -1.0 + gamma * P @ V
    w = np.linalg.solve((np.eye(3) - (gamma if discounted_visits else 1.0) * P_pi).T, np.eye(3)[0])
    return float(w @ (p * (1 - p) * (Q[:, 1] - Q[:, 0])))


def test_gamma_t_g_t_is_unbiased_and_g_t_is_not():
    """On the short corridor with gamma 0.9 the exact gradient is known: the mean of the
    gamma^t G_t estimate (and of G_0) matches it; plain G_t estimates something else (its own
    exact mean, with undiscounted visits), many standard errors away from dJ/dtheta."""
    gamma, p = 0.9, 0.5
    went_right, mask = _corridor(p, 50_000, np.random.default_rng(0))
    score = np.where(went_right, 1 - p, -p)  # d log pi / d theta for p = sigmoid(theta)
    rewards = -1.0 * mask
    true_grad = _corridor_exact(p, gamma, discounted_visits=True)
    g_t_mean = _corridor_exact(p, gamma, discounted_visits=False)
    assert abs(g_t_mean - true_grad) > 0.3 * abs(true_grad)  # the two directions differ here

    def z(mean_of, **kind):
        per = (mask * score * rc.reinforce_weights(rewards, mask, gamma, **kind)).sum(axis=0)
        return (per.mean() - mean_of) / (per.std(ddof=1) / np.sqrt(per.size))

    assert abs(z(true_grad, baseline=False, discount_steps=True)) < 4
    assert abs(z(true_grad, reward_to_go=False, baseline=False)) < 4
    assert abs(z(g_t_mean, baseline=False)) < 4
    assert abs(z(true_grad, baseline=False)) > 6  # about 10 expected at 50,000 episodes


def test_batch_estimate_is_the_mean_of_per_episode_estimates_and_minus_the_loss_gradient():
    model, params, obs, actions, rewards, mask = _pool(n=20)
    weights = rc.reinforce_weights(rewards, mask)
    batch = rc.policy_gradient_estimate(model, params, obs, actions, weights, mask)
    per = rc.policy_gradient_estimate(model, params, obs, actions, weights, mask, per_episode=True)
    flat = np.concatenate([np.ravel(g) for g in ad.tree_leaves(batch)])
    np.testing.assert_allclose(flat, per.mean(axis=0), rtol=1e-10, atol=1e-12)
    g = ad.grad(lambda p: rc.reinforce_loss(model(p, obs), actions, weights, mask))(params)
    np.testing.assert_allclose(g["w"], -batch["w"], rtol=1e-10, atol=1e-12)


def test_softmax_score_is_the_gradient_of_log_pi():
    rng = np.random.default_rng(0)
    logits, actions = rng.normal(size=(5, 3)), rng.integers(0, 3, 5)
    score = rc.softmax_score(logits, actions)
    # Rows are independent, so row i of the gradient of the summed log-probs is row i's score.
    g = ad.grad(lambda p: ad.sum(rc.categorical_log_prob(p["z"], actions)))({"z": logits})["z"]
    np.testing.assert_allclose(score, g, atol=1e-12)
    np.testing.assert_allclose(score.sum(axis=1), 0.0, atol=1e-12)


def test_bad_input_raises():
    rewards, mask = _two_episodes()
    with pytest.raises(ValueError, match="rewards"):
        rc.reinforce_weights(np.where(mask, rewards, np.nan), mask)
    with pytest.raises(ValueError, match="mask"):
        rc.reinforce_weights(rewards, mask[:2])
    with pytest.raises(ValueError, match="mask"):
        rc.reinforce_weights(rewards, np.array([[True, True], [False, True], [True, False]]))
    with pytest.raises(ValueError, match="gamma"):
        rc.reinforce_weights(rewards, mask, gamma=-0.1)
    with pytest.raises(ValueError, match="actions"):
        rc.softmax_score(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match="logits"):
        rc.softmax_score(np.array([[0.0, np.nan]]), np.array([0]))
    with pytest.raises(ValueError, match="weights"):
        rc.reinforce_loss(np.zeros((3, 2)), np.zeros(3, int), np.zeros(4))
    with pytest.raises(ValueError, match="actions"):
        rc.reinforce_loss(np.zeros((3, 2)), np.array([0, 1, 2]), np.zeros(3))
    with pytest.raises(ValueError, match="total_steps"):
        rc.reinforce(CartPole(), lambda p, o: rc.linear(p, o), rc.linear_init(4, 2), 0)
    with pytest.raises(ValueError, match="model"):
        rc.reinforce(CartPole(), lambda p, o: (rc.linear(p, o), o[:, 0]), rc.linear_init(4, 2), 4)


def _model(p, o):
    return rc.mlp(p, o, "tanh")


def test_same_seed_same_bits():
    runs = [rc.reinforce(CartPole(n=4), _model, rc.mlp_init([4, 8, 2], seed=0, out_scale=0.01), 300,
                         seed=s) for s in (3, 3, 4)]
    np.testing.assert_array_equal(runs[0].episode_returns, runs[1].episode_returns)
    np.testing.assert_array_equal(runs[0].history["loss"], runs[1].history["loss"])
    assert not np.array_equal(runs[0].episode_returns, runs[2].episode_returns)


def test_reinforce_solves_cartpole():
    """CartPole-v1 counts as solved at a mean of 475 (of 500) over recent episodes; 200k steps
    in batches of 16 whole episodes is the lesson's budget."""
    res = rc.reinforce(CartPole(n=16), _model, rc.mlp_init([4, 32, 2], seed=0, out_scale=0.01),
                       200_000, lr=1e-2, seed=0)
    assert res.steps >= 200_000 and res.episode_end_steps[-1] == res.steps
    assert res.episode_returns[-20:].mean() >= 475


def test_value_baseline_trains_the_critic_and_checks_its_params():
    model, params = rc.make_actor_critic(4, 2, hidden=(8,), seed=0)
    # lr 0 holds the policy fixed, so the critic regresses on returns of one policy: its error on
    # each new batch (measured before it learns from it) must fall well below V = 0's.
    res = rc.reinforce(CartPole(n=8), model, params, 6_000, lr=0.0, seed=0, baseline="value",
                       value_steps=10, value_lr=3e-2)
    loss = np.asarray(res.history["value_loss"])
    assert len(loss) == len(res.history["loss"]) and np.all(np.isfinite(loss))
    assert loss[-10:].mean() < 0.5 * loss[0], (loss[0], loss[-10:])
    np.testing.assert_array_equal(res.params["actor"][0]["w"], params["actor"][0]["w"])
    assert not np.allclose(res.params["critic"][0]["w"], params["critic"][0]["w"])
    with pytest.raises(ValueError, match="params"):
        rc.reinforce(CartPole(), model, params["actor"], 4, baseline="value")
    with pytest.raises(ValueError, match="model"):
        rc.reinforce(CartPole(), lambda p, o: _model(p["actor"], o), params, 4, baseline="value")
    with pytest.raises(ValueError, match="discount_steps"):
        rc.reinforce(CartPole(), _model, params["actor"], 4, reward_to_go=False, discount_steps=True)


def test_collect_episodes_refuses_to_run_forever():
    """A grid without a goal or time limit never ends an episode: an error, not a hang."""
    env = rc.GridWorld(layout=["S.", ".."])
    with pytest.raises(RuntimeError, match="had not ended after max_steps=300"):
        rc.collect_episodes(env, lambda p, o: np.zeros((len(o), 4)), None,
                            np.random.default_rng(0), max_steps=300)
    with pytest.raises(ValueError, match="max_steps"):
        rc.collect_episodes(env, lambda p, o: np.zeros((len(o), 4)), None,
                            np.random.default_rng(0), max_steps=0)
