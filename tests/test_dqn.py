"""DQN: targets (terminal vs truncation, Double DQN), Huber, the replay buffer, what the loop
stores, determinism, bad input, the final params solving CartPole on three seeds, and keep-best
evaluation."""

import inspect
import sys

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.core import autodiff as ad
from rlcourse.envs.cartpole import THETA_THRESHOLD, X_THRESHOLD, CartPole

GAMMA = 0.9


def _batch():
    """Three transitions whose next states are worth 10 under both networks (same argmax)."""
    rewards = np.array([1.0, 2.0, 3.0])
    next_q = np.array([[10.0, 4.0], [0.0, 10.0], [10.0, -1.0]])
    return rewards, next_q


def _assert_terminal_never_bootstraps(targets_fn):
    rewards, next_q = _batch()
    terminated = np.array([False, True, False])  # transition 1 ended in a terminal state
    got = targets_fn(rewards, terminated, next_q, next_q, GAMMA)
    assert got[1] == rewards[1], "a terminal transition's target must be its reward alone"
    # The others, including one cut by a time limit (passed with terminated=False), bootstrap.
    np.testing.assert_allclose(got[[0, 2]], rewards[[0, 2]] + GAMMA * 10.0)


def test_terminal_never_bootstraps_truncation_does():
    _assert_terminal_never_bootstraps(rc.dqn_targets)


def test_planted_bug_target_without_terminal_mask_is_caught():
    def no_mask(rewards, terminated, next_q_online, next_q_target, gamma, double=True):
        best = np.argmax(next_q_online, axis=1)
        return rewards + gamma * next_q_target[np.arange(len(rewards)), best]

    with pytest.raises(AssertionError, match="terminal"):
        _assert_terminal_never_bootstraps(no_mask)


def test_double_dqn_selects_with_online_and_evaluates_with_target():
    rewards = np.zeros(2)
    terminated = np.zeros(2, dtype=bool)
    online = np.array([[1.0, 5.0], [3.0, 2.0]])  # online argmax: action 1, then action 0
    target = np.array([[10.0, 2.0], [-4.0, 7.0]])  # target argmax: the other action each time
    double = rc.dqn_targets(rewards, terminated, online, target, 1.0, double=True)
    plain = rc.dqn_targets(rewards, terminated, online, target, 1.0, double=False)
    np.testing.assert_array_equal(double, [2.0, -4.0])  # target's values at the online argmax
    np.testing.assert_array_equal(plain, [10.0, 7.0])  # target's own max
    # Selecting with the target net, or evaluating with the online one, gives other numbers.
    assert not np.array_equal(double, target.max(axis=1))
    assert not np.array_equal(double, online.max(axis=1))


def test_double_dqn_reduces_the_max_bias_on_noisy_estimates():
    # All true action values are 0; noisy estimates from two independent nets. max over noise
    # is biased up by about E[max of 4 normals] ~ 1.03; Double DQN's estimate is unbiased.
    rng = np.random.default_rng(0)
    online, target = rng.normal(size=(2, 20_000, 4))
    zeros = np.zeros(20_000)
    plain = rc.dqn_targets(zeros, zeros.astype(bool), online, target, 1.0, double=False)
    double = rc.dqn_targets(zeros, zeros.astype(bool), online, target, 1.0, double=True)
    assert plain.mean() > 0.9
    assert abs(double.mean()) < 0.05


def test_huber_value_and_gradient():
    x = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5])
    expected = np.where(np.abs(x) <= 1.0, 0.5 * x**2, np.abs(x) - 0.5)
    np.testing.assert_allclose(rc.huber(x), expected)
    g = ad.grad(lambda p: ad.sum(rc.huber(p["x"], delta=2.0)))({"x": x})["x"]
    np.testing.assert_allclose(g, np.clip(x, -2.0, 2.0))  # the gradient is the clipped error
    # Continuous at the joint: both branches agree at |x| = delta.
    assert rc.huber(np.array([2.0]), delta=2.0)[0] == pytest.approx(0.5 * 2.0**2)
    with pytest.raises(ValueError, match="delta"):
        rc.huber(x, delta=0.0)


def test_dqn_loss_gradient_matches_finite_differences():
    model = lambda p, o: rc.mlp(p, o, "relu")
    params = rc.mlp_init([3, 5, 2], seed=1, dtype=np.float64)
    rng = np.random.default_rng(0)
    obs, actions, targets = rng.normal(size=(6, 3)), rng.integers(0, 2, 6), 3 * rng.normal(size=6)
    (_, _), g = ad.value_and_grad(rc.dqn_loss)(params, model, obs, actions, targets)

    def f(w):
        changed = [dict(params[0], w=w), params[1]]
        return rc.dqn_loss(changed, model, obs, actions, targets)[0]

    np.testing.assert_allclose(g[0]["w"], ad.numerical_grad(f, params[0]["w"]), atol=1e-6)


def test_replay_buffer_wraps_around():
    buf = rc.ReplayBuffer(5, (2,))
    for start, k in ((0, 3), (3, 4)):  # 7 transitions into 5 rows
        ids = np.arange(start, start + k)
        buf.add(np.stack([ids, ids], 1), ids, ids * 1.0, np.stack([ids, ids], 1) + 100, ids % 2 == 0)
    assert len(buf) == 5 and buf.pos == 2
    # Rows 0-1 were overwritten by transitions 5 and 6; rows 2-4 hold 2, 3, 4.
    np.testing.assert_array_equal(buf.actions, [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(buf.next_obs[:, 0], [105, 106, 102, 103, 104])
    np.testing.assert_array_equal(buf.terminated, [False, True, True, False, True])
    with pytest.raises(ValueError, match="capacity"):
        buf.add(np.zeros((6, 2)), np.zeros(6, int), np.zeros(6), np.zeros((6, 2)), np.zeros(6, bool))


def test_replay_buffer_samples_are_seeded_and_only_from_filled_rows():
    buf = rc.ReplayBuffer(100, (1,))
    buf.add(np.arange(10.0)[:, None], np.arange(10), np.zeros(10), np.zeros((10, 1)), np.zeros(10, bool))
    a = buf.sample(64, np.random.default_rng(3))
    b = buf.sample(64, np.random.default_rng(3))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert a[1].max() < 10  # never an unwritten (all-zero) row beyond the 10 filled ones
    assert len(np.unique(a[1])) > 5
    with pytest.raises(ValueError, match="empty"):
        rc.ReplayBuffer(4, (1,)).sample(2, np.random.default_rng(0))


def test_loop_stores_final_obs_and_only_true_terminations(monkeypatch):
    stored = []

    class Recording(rc.ReplayBuffer):
        def add(self, obs, actions, rewards, next_obs, terminated):
            stored.append((np.array(next_obs), np.array(terminated)))
            super().add(obs, actions, rewards, next_obs, terminated)

    monkeypatch.setattr(sys.modules["rlcourse.algos.dqn"], "ReplayBuffer", Recording)
    env = CartPole(n=2, max_steps=15)  # short time limit: both kinds of episode end occur
    model = lambda p, o: rc.mlp(p, o, "relu")
    # Random actions throughout (epsilon stays 1): a random policy fails within 15 steps in
    # about a third of the episodes, so both endings occur whatever the seed (checked on 0-3).
    rc.dqn(env, model, rc.mlp_init([4, 8, 2], seed=0), 400, learning_starts=10_000, seed=0,
           epsilon_end=1.0)
    next_obs = np.concatenate([s[0] for s in stored])
    terminated = np.concatenate([s[1] for s in stored])
    outside = (np.abs(next_obs[:, 0]) > X_THRESHOLD) | (np.abs(next_obs[:, 2]) > THETA_THRESHOLD)
    assert terminated.any() and not terminated.all()
    # A terminated transition's next_obs is the failed state (final_obs), not the reset state.
    np.testing.assert_array_equal(outside, terminated)
    # Time-limit endings happened (episodes of 15 steps) and were stored as non-terminal.
    assert len(env.episode_lengths) > terminated.sum()


def _short_run(seed):
    model = lambda p, o: rc.mlp(p, o, "relu")
    return rc.dqn(CartPole(), model, rc.mlp_init([4, 16, 2], seed=0), 1_500, learning_starts=500,
                  train_freq=100, gradient_steps=20, target_update=20, seed=seed)


def test_same_seed_same_bits():
    a, b, c = _short_run(5), _short_run(5), _short_run(6)
    np.testing.assert_array_equal(a.history["loss"], b.history["loss"])
    for x, y in zip(ad.tree_leaves(a.params), ad.tree_leaves(b.params)):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.history["loss"], c.history["loss"])
    # One history row per 100 steps; training phases at steps 500, 600, ..., 1500: 11 of them.
    assert a.updates == 15 and np.isfinite(a.history["loss"]).sum() == 11 and a.steps == 1_500


def test_callback_can_stop_the_run():
    seen = []
    model = lambda p, o: rc.mlp(p, o, "relu")
    res = rc.dqn(CartPole(), model, rc.mlp_init([4, 8, 2], seed=0), 5_000, train_freq=100,
                 callback=lambda info: seen.append(info["steps"]) or len(seen) < 3)
    assert seen == [100, 200, 300] and res.steps == 300


def test_bad_input_raises():
    model = lambda p, o: rc.mlp(p, o, "relu")
    params = rc.mlp_init([4, 8, 2], seed=0)
    with pytest.raises(ValueError, match="gamma"):
        rc.dqn(CartPole(), model, params, 100, gamma=1.5)
    with pytest.raises(ValueError, match="total_steps"):
        rc.dqn(CartPole(), model, params, 0)
    with pytest.raises(ValueError, match="tau"):
        rc.dqn(CartPole(), model, params, 100, tau=0.0)
    with pytest.raises(ValueError, match="model"):
        rc.dqn(CartPole(), model, rc.mlp_init([4, 8, 3], seed=0), 100)
    r, q = _batch()
    with pytest.raises(ValueError, match="terminated"):
        rc.dqn_targets(r, np.zeros(2, bool), q, q, GAMMA)
    with pytest.raises(ValueError, match="next_q_target"):
        rc.dqn_targets(r, np.zeros(3, bool), q, q[:2], GAMMA)
    with pytest.raises(ValueError, match="next_q_online"):
        rc.dqn_targets(r, np.zeros(3, bool), q[:, :1], q, GAMMA)
    with pytest.raises(ValueError, match="next_q_target"):
        rc.dqn_targets(r, np.zeros(3, bool), q, np.where(q > 5, np.nan, q), GAMMA)
    with pytest.raises(ValueError, match="actions"):
        rc.dqn_loss(params, model, np.zeros((2, 4), np.float32), np.array([0, 2]), np.zeros(2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dqn_final_params_solve_cartpole_in_50k_steps(seed):
    """CartPole-v1 counts as solved at 475 (of a maximum 500). The params ``rc.dqn`` returns
    after 50k environment steps -- the final ones, not the best seen along the way -- must score
    that greedily on 20 fresh episodes (start states no training or evaluation used)."""
    model = lambda p, o: rc.mlp(p, o, "relu")
    res = rc.dqn(CartPole(), model, rc.mlp_init([4, 64, 64, 2], seed=seed), 50_000,
                 **rc.DQN_CARTPOLE, seed=seed)
    score = rc.evaluate(CartPole(n=10), rc.greedy_policy(model, res.params), 20, seed=12_345).mean
    assert score >= 475, f"final greedy score {score} after {res.steps} steps"


def test_defaults_are_the_cartpole_preset():
    defaults = {k: v.default for k, v in inspect.signature(rc.dqn).parameters.items()}
    assert {k: defaults[k] for k in rc.DQN_CARTPOLE} == rc.DQN_CARTPOLE


def _keep_best_run(callback):
    """8k steps on a small net: long enough for the greedy score to rise and fall again (seed 2:
    about 10 at step 500, 45 at 5,500, 9 at the end)."""
    model = lambda p, o: rc.mlp(p, o, "relu")
    return rc.dqn(CartPole(), model, rc.mlp_init([4, 32, 2], seed=0), 8_000, learning_starts=500,
                  train_freq=100, gradient_steps=50, target_update=50, exploration_fraction=0.3,
                  anneal_lr=False, seed=2, callback=callback)


def _assert_best_is_honest(checkpoints, final_params, eval_env, episodes, eval_seed):
    model = lambda p, o: rc.mlp(p, o, "relu")

    def score(params):
        return rc.evaluate(eval_env, rc.greedy_policy(model, params), episodes, seed=eval_seed).mean

    best = int(np.argmax(checkpoints.returns))
    assert checkpoints.best_return == checkpoints.returns[best], "best_return must be the best recorded"
    assert checkpoints.best_step == checkpoints.steps[best]
    assert score(checkpoints.best_params) == checkpoints.best_return, \
        "best_params must score what best_return says"
    assert score(final_params) == checkpoints.returns[-1], "the last evaluation is of the final params"


def _checkpoints():
    return rc.Checkpoints(CartPole(n=5), lambda p, o: rc.mlp(p, o, "relu"), every=500, episodes=10,
                          seed=7)


def test_checkpoints_keep_the_params_of_the_best_evaluation():
    seen = {}
    checkpoints = _checkpoints()

    def callback(info):
        seen[info["steps"]] = info["params"]
        return checkpoints(info)

    res = _keep_best_run(callback)
    np.testing.assert_array_equal(checkpoints.steps, np.arange(500, 8_001, 500))
    # The run must rise and fall for the test to mean anything: the final params are not the best.
    assert checkpoints.returns[-1] < checkpoints.best_return
    _assert_best_is_honest(checkpoints, res.params, CartPole(n=5), 10, 7)
    # Each recorded score is the deterministic evaluation of the params at that step.
    model = lambda p, o: rc.mlp(p, o, "relu")
    for step, recorded in zip(checkpoints.steps[:4], checkpoints.returns[:4]):
        again = rc.evaluate(CartPole(n=5), rc.greedy_policy(model, seen[step]), 10, seed=7).mean
        assert again == recorded


def test_planted_bug_best_params_left_as_the_final_ones_is_caught():
    checkpoints = _checkpoints()
    res = _keep_best_run(checkpoints)
    checkpoints.best_params = res.params
    with pytest.raises(AssertionError, match="best_params"):
        _assert_best_is_honest(checkpoints, res.params, CartPole(n=5), 10, 7)


def test_evaluation_does_not_change_training():
    plain = _short_run(5)
    model = lambda p, o: rc.mlp(p, o, "relu")
    checkpoints = rc.Checkpoints(CartPole(n=2), model, every=300)
    watched = rc.dqn(CartPole(), model, rc.mlp_init([4, 16, 2], seed=0), 1_500, learning_starts=500,
                     train_freq=100, gradient_steps=20, target_update=20, seed=5,
                     callback=checkpoints)
    assert len(checkpoints.returns) == 5
    np.testing.assert_array_equal(plain.history["loss"], watched.history["loss"])
    for x, y in zip(ad.tree_leaves(plain.params), ad.tree_leaves(watched.params)):
        np.testing.assert_array_equal(x, y)


def test_checkpoints_bad_input_raises():
    model = lambda p, o: rc.mlp(p, o, "relu")
    with pytest.raises(ValueError, match="every"):
        rc.Checkpoints(CartPole(), model, every=0)
    with pytest.raises(ValueError, match="episodes"):
        rc.Checkpoints(CartPole(), model, episodes=-1)


def test_anneal_lr_falls_linearly_to_zero_at_total_steps(monkeypatch):
    used = []
    real_step = rc.Adam.step

    def recording_step(self, params, grads, state, lr=None):
        used.append(self.lr if lr is None else lr)
        return real_step(self, params, grads, state, lr=lr)

    monkeypatch.setattr(rc.Adam, "step", recording_step)
    model = lambda p, o: rc.mlp(p, o, "relu")
    rc.dqn(CartPole(), model, rc.mlp_init([4, 8, 2], seed=0), 1_000, lr=1e-3, learning_starts=250,
           train_freq=250, gradient_steps=2, anneal_lr=True)
    # Phases at steps 250, 500, 750, 1000 use the rate 250 steps earlier: 1, 3/4, 1/2, 1/4 of lr.
    np.testing.assert_allclose(used, np.repeat(1e-3 * np.array([1.0, 0.75, 0.5, 0.25]), 2))
    used.clear()
    rc.dqn(CartPole(), model, rc.mlp_init([4, 8, 2], seed=0), 1_000, lr=1e-3, learning_starts=250,
           train_freq=250, gradient_steps=2, anneal_lr=False)
    assert used == [1e-3] * 8


def test_callback_sees_the_final_params_when_train_freq_does_not_divide_total_steps():
    # 1,050 steps with a phase every 100: updates at 100, ..., 1,000 and one more at 1,050 with
    # last=True and the params the run returns (the review found `last` never fired at 50k/256).
    seen = []
    model = lambda p, o: rc.mlp(p, o, "relu")
    res = rc.dqn(CartPole(), model, rc.mlp_init([4, 8, 2], seed=0), 1_050, learning_starts=500,
                 train_freq=100, gradient_steps=5, target_update=5, seed=0,
                 callback=lambda info: seen.append((info["steps"], info["last"], info["params"])))
    assert [s for s, _, _ in seen] == list(range(100, 1_001, 100)) + [1_050]
    assert [last for _, last, _ in seen] == [False] * 10 + [True]
    for x, y in zip(ad.tree_leaves(seen[-1][2]), ad.tree_leaves(res.params)):
        np.testing.assert_array_equal(x, y)
    assert res.steps == 1_050 and res.history["steps"][-1] == 1_050
    assert np.isnan(res.history["loss"][-1]), "no training phase in the last 50 steps"
