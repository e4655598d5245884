"""PPO: the clip direction, the loss gradient, rollout bootstrapping, and learning CartPole."""

import importlib

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.core import autodiff as ad

# the module, not the function `ppo` that rlcourse.algos re-exports under the same name
ppo_module = importlib.import_module("rlcourse.algos.ppo")

EPS = 0.2
RATIOS = np.array([0.5, 0.7, 0.79, 0.8, 0.81, 0.95, 1.0, 1.05, 1.19, 1.2, 1.21, 1.3, 1.6, 2.5])


def clip_gradient(objective, advantage):
    adv = np.full(RATIOS.shape, advantage)
    _, g = ad.value_and_grad(lambda p: ad.sum(objective(p["r"], adv, EPS)))({"r": RATIOS.copy()})
    return g["r"]


def check_clip_direction(objective):
    """Zero gradient exactly where the clipped branch is active in the advantage's direction."""
    for advantage in (1.5, -0.7):
        g = clip_gradient(objective, advantage)
        if advantage > 0:
            blocked = RATIOS > 1 + EPS
        else:
            blocked = RATIOS < 1 - EPS
        np.testing.assert_array_equal(g[blocked], 0.0)
        np.testing.assert_allclose(g[~blocked], advantage)  # the unclipped slope, nonzero


def test_clip_gradient_is_zero_exactly_where_the_clip_is_active():
    check_clip_direction(rc.ppo_clip_objective)


def test_clip_objective_values():
    adv = np.array([2.0, 2.0, -1.0, -1.0])
    ratio = np.array([1.5, 0.5, 1.5, 0.5])
    # A > 0: capped at (1 + eps) A above, unclipped below; A < 0 the other way round
    np.testing.assert_allclose(rc.ppo_clip_objective(ratio, adv, EPS), [2.4, 1.0, -1.5, -0.8])


def _flipped_min(ratio, adv, clip):
    return ad.maximum(ratio * adv, ad.clip(ratio, 1 - clip, 1 + clip) * adv)


def _clip_ignores_advantage_sign(ratio, adv, clip):
    # clips the ratio for every sample, as if the objective were clip(ratio) * A alone
    return ad.clip(ratio, 1 - clip, 1 + clip) * adv


def _flipped_bounds(ratio, adv, clip):
    return ad.minimum(ratio * adv, ad.clip(ratio, 1 + clip, 1 + 3 * clip) * adv)


@pytest.mark.parametrize("broken", [_flipped_min, _clip_ignores_advantage_sign, _flipped_bounds])
def test_planted_clip_bugs_are_caught(broken):
    with pytest.raises(AssertionError):
        check_clip_direction(broken)


def test_planted_bug_in_the_loss_is_caught(monkeypatch):
    """The loss PPO trains with must route through the checked objective."""
    monkeypatch.setattr(ppo_module, "ppo_clip_objective", _flipped_min)
    model, params, batch = _tiny_problem()
    obs, actions, old_logp, adv, ret = batch
    old_logp = old_logp - 1.0  # ratios e ~ 2.7: beyond 1 + eps for every sample
    adv = np.abs(adv)
    _, g = ad.value_and_grad(rc.ppo_loss)(params, model, obs, actions, old_logp, adv, ret, 0.2, 0.0)
    actor_grad = np.concatenate([np.ravel(x) for x in ad.tree_leaves(g["actor"])])
    assert np.abs(actor_grad).max() > 0  # the correct objective gives exactly 0 here


def test_loss_blocks_the_policy_gradient_where_clipped():
    model, params, (obs, actions, old_logp, adv, ret) = _tiny_problem()
    _, g = ad.value_and_grad(rc.ppo_loss)(params, model, obs, actions, old_logp - 1.0,
                                          np.abs(adv), ret, 0.2, 0.0)
    for leaf in ad.tree_leaves(g["actor"]):
        np.testing.assert_array_equal(leaf, 0.0)


def _tiny_problem(dtype=np.float64):
    model, params = rc.make_actor_critic(3, 4, hidden=(5,), seed=1, dtype=dtype)
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(6, 3)).astype(dtype)
    actions = rng.integers(0, 4, 6)
    logits, _ = model(params, obs)
    old_logp = rc.categorical_log_prob(logits, actions) + rng.normal(size=6) * 0.3
    return model, params, (obs, actions, old_logp, rng.normal(size=6), rng.normal(size=6))


def test_ppo_loss_gradient_matches_finite_differences():
    model, params, (obs, actions, old_logp, adv, ret) = _tiny_problem()

    def loss_of(p):
        return rc.ppo_loss(p, model, obs, actions, old_logp, adv, ret, 0.2, 0.5, 0.01)[0]

    _, g = ad.value_and_grad(lambda p: loss_of(p))(params)
    for part in ("actor", "critic"):
        for i, layer in enumerate(params[part]):
            for key in ("w", "b"):
                def f(x, part=part, i=i, key=key):
                    changed = ad.tree_map(lambda a: a, params)
                    changed[part][i] = dict(changed[part][i], **{key: x})
                    return float(loss_of(changed))

                num = ad.numerical_grad(f, layer[key])
                np.testing.assert_allclose(g[part][i][key], num, rtol=1e-5, atol=1e-7)


def test_ppo_loss_stats_at_the_old_policy():
    model, params, (obs, actions, _, adv, ret) = _tiny_problem()
    logits, _ = model(params, obs)
    old_logp = rc.categorical_log_prob(logits, actions)
    loss, stats = rc.ppo_loss(params, model, obs, actions, old_logp, adv, ret)
    assert stats["approx_kl"] == pytest.approx(0.0, abs=1e-12)
    assert stats["clip_fraction"] == 0.0
    assert stats["policy_loss"] == pytest.approx(-adv.mean())
    assert stats["entropy"] == pytest.approx(float(np.mean(rc.categorical_entropy(logits))))


def test_clipped_value_loss_matches_its_definition_and_blocks_its_gradient():
    model, params, (obs, actions, old_logp, adv, ret) = _tiny_problem()
    values = np.asarray(model(params, obs)[1])
    old_values = values + np.array([0.5, -0.5, 0.05, -0.05, 2.0, -2.0])  # some beyond 0.2
    moved = old_values + np.clip(values - old_values, -0.2, 0.2)
    expected = 0.5 * np.mean(np.maximum((values - ret) ** 2, (moved - ret) ** 2))
    _, stats = rc.ppo_loss(params, model, obs, actions, old_logp, adv, ret, 0.2, 1.0, 0.0,
                           old_values, 0.2)
    assert stats["value_loss"] == pytest.approx(expected, rel=1e-12)
    _, plain = rc.ppo_loss(params, model, obs, actions, old_logp, adv, ret, 0.2, 1.0, 0.0)
    assert stats["value_loss"] >= plain["value_loss"]
    # the gradient w.r.t. each value: V - G where the plain error is the larger, 0 where the
    # clipped (flat) one is
    _, g = ad.value_and_grad(lambda p: rc.ppo_loss(
        {"actor": params["actor"], "critic": params["critic"]},
        lambda q, o: (model(params, o)[0], p["v"]), obs, actions, old_logp, adv, ret, 0.2, 1.0,
        0.0, old_values, 0.2)[0])({"v": values.copy()})
    flat = (moved - ret) ** 2 > (values - ret) ** 2
    assert flat.any() and (~flat).any()
    np.testing.assert_array_equal(g["v"][flat], 0.0)
    np.testing.assert_allclose(g["v"][~flat], ((values - ret) / len(ret))[~flat], rtol=1e-10)


def test_vf_clip_needs_old_values_and_a_positive_range():
    model, params, (obs, actions, old_logp, adv, ret) = _tiny_problem()
    with pytest.raises(ValueError, match="old_values"):
        rc.ppo_loss(params, model, obs, actions, old_logp, adv, ret, vf_clip=0.2)
    with pytest.raises(ValueError, match="vf_clip"):
        rc.ppo(rc.CartPole(n=2, seed=0), model, params, 64, rollout=32, vf_clip=0.0)


def test_target_kl_stops_epochs_early_and_a_huge_target_changes_nothing():
    def run(**kw):
        model, params = rc.make_actor_critic(4, 2, hidden=(16,), seed=0)
        return rc.ppo(rc.CartPole(n=4, seed=0), model, params, 1_024, rollout=32, epochs=8,
                      minibatch=64, lr=1e-2, seed=0, **kw)

    plain, huge, tight = run(), run(target_kl=1e9), run(target_kl=1e-3)
    assert np.all(plain.history["epochs"] == 8)
    for key in plain.history:
        np.testing.assert_array_equal(plain.history[key], huge.history[key])
    assert np.all(tight.history["epochs"] >= 1) and np.any(tight.history["epochs"] < 8)
    # stopping early keeps the updates smaller
    assert np.median(tight.history["approx_kl"]) < np.median(plain.history["approx_kl"])


def test_vf_clip_run_is_recorded_and_differs():
    def run(**kw):
        model, params = rc.make_actor_critic(4, 2, hidden=(16,), seed=0)
        return rc.ppo(rc.CartPole(n=4, seed=0), model, params, 512, rollout=32, epochs=4,
                      minibatch=64, seed=0, **kw)

    clipped, plain = run(vf_clip=0.01), run()
    assert clipped.settings["vf_clip"] == 0.01 and plain.settings["vf_clip"] is None
    assert not np.allclose(clipped.history["value_loss"], plain.history["value_loss"])


def test_make_actor_critic_builds_separate_networks():
    model, params = rc.make_actor_critic(4, 2, seed=0)
    assert [layer["w"].shape for layer in params["actor"]] == [(4, 64), (64, 64), (64, 2)]
    assert [layer["w"].shape for layer in params["critic"]] == [(4, 64), (64, 64), (64, 1)]
    assert params["actor"][0]["w"].dtype == np.float32
    # orthogonal heads: singular values equal the gains 0.01 (actor) and 1.0 (critic)
    np.testing.assert_allclose(np.linalg.svd(params["actor"][2]["w"], compute_uv=False), 0.01, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(params["critic"][2]["w"]), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.svd(params["actor"][1]["w"], compute_uv=False), np.sqrt(2),
                               rtol=1e-5)
    assert not np.array_equal(params["actor"][0]["w"], params["critic"][0]["w"])
    logits, values = model(params, np.zeros((3, 4), np.float32))
    assert logits.shape == (3, 2) and values.shape == (3,)


class RecordingEnv:
    """Wraps a vector env and keeps every Step, to check what the rollout did with it."""

    def __init__(self, env):
        self.env, self.steps = env, []
        self.n, self.observation_shape, self.num_actions = env.n, env.observation_shape, env.num_actions

    @property
    def episode_returns(self):
        return self.env.episode_returns

    def reset(self, seed=None):
        return self.env.reset(seed=seed)

    def step(self, actions):
        step = self.env.step(actions)
        self.steps.append(step)
        return step


def test_rollout_bootstraps_from_final_obs_only_where_truncated():
    model, params = rc.make_actor_critic(4, 2, seed=3)
    env = RecordingEnv(rc.CartPole(n=4, seed=0, max_steps=7))
    obs = env.reset(seed=0)
    data = rc.collect_rollout(env, model, params, obs, 30, np.random.default_rng(0))
    assert data.truncated.any()
    for t, step in enumerate(env.steps):
        v_final = model(params, step.final_obs)[1]
        v_next = model(params, step.obs)[1]
        for i in range(env.n):
            if step.terminated[i]:
                assert data.next_values[t, i] == 0.0
            elif step.truncated[i]:
                assert data.next_values[t, i] == pytest.approx(v_final[i], rel=1e-6)
                assert v_final[i] != pytest.approx(v_next[i], rel=1e-6)  # not the new episode's
            else:
                assert data.next_values[t, i] == pytest.approx(v_next[i], rel=1e-6)


def test_callback_stops_and_runs_are_reproducible(capsys):
    def run(callback=None):
        model, params = rc.make_actor_critic(4, 2, seed=0)
        return rc.ppo(rc.CartPole(n=2, seed=0), model, params, total_steps=640, rollout=32,
                      epochs=2, minibatch=32, seed=5, callback=callback)

    a, b = run(), run()
    for x, y in zip(ad.tree_leaves(a.params), ad.tree_leaves(b.params)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.history["approx_kl"], b.history["approx_kl"])
    assert a.updates == 10 and a.history["approx_kl"].shape == (10,) and a.steps == 640
    assert np.all((a.history["clip_fraction"] >= 0) & (a.history["clip_fraction"] <= 1))
    assert len(a.episode_end_steps) == len(a.episode_returns)
    seen = []
    stopped = run(lambda info: seen.append(info["steps"]) or info["update"] < 2)
    assert stopped.updates == 3 and seen == [64, 128, 192]
    assert capsys.readouterr().err == ""  # progress is off when stderr is not a terminal


def test_bad_arguments_raise():
    model, params = rc.make_actor_critic(4, 2, seed=0)
    env = rc.CartPole(n=2, seed=0)
    with pytest.raises(ValueError, match="rollout"):
        rc.ppo(env, model, params, rollout=0)
    with pytest.raises(ValueError, match="gamma"):
        rc.ppo(env, model, params, gamma=1.5)
    with pytest.raises(ValueError, match="clip"):
        rc.ppo(env, model, params, clip=-0.1)
    with pytest.raises(ValueError, match="advantages"):
        rc.ppo_loss(params, model, np.zeros((3, 4), np.float32), np.zeros(3, int), np.zeros(3),
                    np.zeros(2), np.zeros(3))
    nan_params = ad.tree_map(lambda p: p.copy(), params)
    nan_params["actor"][2]["w"][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"params\['actor'\]\[2\]\['w'\]"):  # at the cause
        rc.collect_rollout(env, model, nan_params, env.reset(seed=0), 2, np.random.default_rng(0))
    # a network that diverges between checks still cannot sample: NaN logits raise
    nan_model = lambda p, obs: (model(p, obs)[0] * np.nan, model(p, obs)[1])  # noqa: E731
    with pytest.raises(ValueError, match="logits"):
        rc.collect_rollout(env, nan_model, params, env.reset(seed=0), 2, np.random.default_rng(0))


def test_nan_params_are_refused_by_a_loss_called_directly():
    """A NaN weight never turns into a silently NaN loss: the losses name the leaf, inside
    value_and_grad or not."""
    model, params = rc.make_actor_critic(4, 2, hidden=(4,), seed=0)
    params["critic"][0]["w"][0, 0] = np.nan
    obs, actions, data = np.ones((3, 4)), np.array([0, 1, 0]), np.zeros(3)
    for loss in (lambda p: rc.ppo_loss(p, model, obs, actions, data - 1.0, data, data),
                 lambda p: rc.actor_critic_loss(p, model, obs, actions, data, data),
                 ad.value_and_grad(lambda p: rc.ppo_loss(p, model, obs, actions, data - 1.0, data,
                                                         data))):
        with pytest.raises(ValueError, match=r"params\['critic'\]\[0\]\['w'\]"):
            loss(params)


# ---- learning: thresholds from the task (CartPole-v1 is capped at 500)

def _greedy_eval(model, params):
    return rc.evaluate(rc.CartPole(n=1), rc.greedy_policy(model, params), episodes=10, seed=1000)


def test_ppo_solves_cartpole_with_200k_steps():
    model, params = rc.make_actor_critic(4, 2, hidden=(64, 64), seed=0)
    result = rc.ppo(rc.CartPole(n=8, seed=0), model, params, total_steps=200_000, epochs=10,
                    lr=1e-3, seed=0)
    assert _greedy_eval(model, result.params).mean == 500.0


def test_ppo_cartpole_preset_over_five_seeds():
    """What PPO_CARTPOLE's comment says: the greedy policy scores 500 on at least four of seeds
    0-4. The five runs go side by side (each is rc.ppo's run: tests/test_sweep.py)."""
    seeds = range(5)
    settings = {k: v for k, v in rc.PPO_CARTPOLE.items()
                if k not in ("total_steps", "rollout", "epochs", "minibatch")}
    runs = rc.ppo_sweep([rc.CartPole(n=8, seed=s) for s in seeds],
                        [rc.make_actor_critic(4, 2, seed=s)[1] for s in seeds],
                        rc.PPO_CARTPOLE["total_steps"], [dict(settings, seed=s) for s in seeds],
                        rollout=rc.PPO_CARTPOLE["rollout"], epochs=rc.PPO_CARTPOLE["epochs"],
                        minibatch=rc.PPO_CARTPOLE["minibatch"])
    scores = [_greedy_eval(rc.actor_critic_model, run.params).mean for run in runs]
    assert all(run.steps <= 50_000 for run in runs)
    assert sum(score == 500.0 for score in scores) >= 4, scores


def test_callback_params_are_snapshots_and_dtype_option(capsys):
    kept = []
    model, params = rc.make_actor_critic(4, 2, seed=0, dtype=np.float64)
    result = rc.ppo(rc.CartPole(n=2, seed=0), model, params, total_steps=256, rollout=32,
                    epochs=2, minibatch=32, dtype=np.float64, progress=True,
                    callback=lambda info: kept.append(info["params"]))
    assert result.params["actor"][0]["w"].dtype == np.float64
    first, last = ad.tree_leaves(kept[0]), ad.tree_leaves(result.params)
    assert any(not np.array_equal(a, b) for a, b in zip(first, last))  # not mutated afterwards
    assert "ppo:" in capsys.readouterr().err  # progress forced on
