"""The contract every deep-RL trainer keeps (rlcourse/algos/trainer.py, docs/architecture.md):
one signature, one result type, one callback schema, an agent stream independent of the
environment's, the caller's parameters left alone, bit-identical reruns."""

import inspect

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.core._checks import agent_rng


def _logits_model(params, obs):
    return rc.mlp(params, obs, "tanh")


def _q_model(params, obs):
    return rc.mlp(params, obs, "relu")


# (trainer, model, params factory, budget, settings that keep the run to a fraction of a second)
TRAINERS = {
    "ppo": (rc.ppo, rc.actor_critic_model, lambda: rc.make_actor_critic(4, 2, hidden=(8,), seed=0)[1],
            256, dict(rollout=16, epochs=2, minibatch=32)),
    "actor_critic": (rc.actor_critic, rc.actor_critic_model,
                     lambda: rc.make_actor_critic(4, 2, hidden=(8,), seed=0)[1], 256, dict(rollout=8)),
    "reinforce": (rc.reinforce, _logits_model, lambda: rc.mlp_init([4, 8, 2], seed=0, out_scale=0.01),
                  200, {}),
    "dqn": (rc.dqn, _q_model, lambda: rc.mlp_init([4, 8, 2], seed=0), 400,
            dict(learning_starts=100, train_freq=50, gradient_steps=4, target_update=4)),
}


def run(name, seed=0, **extra):
    trainer, model, make_params, budget, settings = TRAINERS[name]
    return trainer(rc.CartPole(n=2, seed=seed), model, make_params(), budget, **settings, seed=seed,
                   **extra)


@pytest.mark.parametrize("name", TRAINERS)
def test_one_signature(name):
    parameters = inspect.signature(TRAINERS[name][0]).parameters
    positional = [p.name for p in parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == ["env", "model", "params", "total_steps"]
    keyword_only = {p.name for p in parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert {"opt", "dtype", "seed", "callback", "progress"} <= keyword_only
    assert parameters["seed"].default == 0 and parameters["callback"].default is None
    assert parameters["progress"].default is None and parameters["opt"].default is None


@pytest.mark.parametrize("name", TRAINERS)
def test_one_result_type(name):
    budget = TRAINERS[name][3]
    result = run(name)
    assert isinstance(result, rc.TrainResult)
    assert isinstance(result.steps, int) and result.steps >= budget
    h = result.history
    assert {"steps", "mean_return"} <= set(h)
    assert h["steps"].dtype == np.int64 and (np.diff(h["steps"]) > 0).all()
    assert h["steps"][-1] == result.steps
    assert all(len(v) == result.updates for v in h.values())
    assert len(result.episode_returns) == len(result.episode_end_steps) > 0
    assert (np.diff(result.episode_end_steps) >= 0).all()
    assert result.episode_end_steps[-1] <= result.steps
    assert result.settings["seed"] == 0 and result.settings["total_steps"] == budget
    # mean_return is the mean of the last (up to) 20 episodes that had ended at each update
    k = np.searchsorted(result.episode_end_steps, h["steps"][-1], side="right")
    np.testing.assert_allclose(h["mean_return"][-1], result.episode_returns[max(0, k - 20):k].mean())


@pytest.mark.parametrize("name", TRAINERS)
def test_one_callback_schema_and_stopping(name):
    seen = []
    result = run(name, callback=lambda info: seen.append(info) or info["update"] < 1)
    assert [info["update"] for info in seen] == [0, 1] and result.updates == 2
    for info in seen:
        assert {"update", "steps", "params", "mean_return", "episode_returns", "last"} <= set(info)
        assert not info["last"]
        diagnostics = set(info) - {"update", "steps", "params", "mean_return", "episode_returns",
                                   "last"}
        assert diagnostics == set(result.history) - {"steps", "mean_return"}
    assert seen[-1]["steps"] == result.steps
    # the params handed to the callback are snapshots, not views that training keeps changing
    first = rc.tree_leaves(seen[0]["params"])
    assert any(not np.array_equal(a, b) for a, b in zip(first, rc.tree_leaves(result.params)))
    lasts = []
    run(name, callback=lambda info: lasts.append(info["last"]))
    assert lasts[-1] and not any(lasts[:-1])


@pytest.mark.parametrize("name", TRAINERS)
def test_same_seed_same_bits_and_the_callers_params_untouched(name):
    trainer, model, make_params, budget, settings = TRAINERS[name]
    params = make_params()
    before = [np.copy(x) for x in rc.tree_leaves(params)]
    a = trainer(rc.CartPole(n=2, seed=0), model, params, budget, **settings, seed=0)
    for x, y in zip(before, rc.tree_leaves(params)):
        np.testing.assert_array_equal(x, y)
    b, c = run(name, seed=0), run(name, seed=1)
    for x, y in zip(rc.tree_leaves(a.params), rc.tree_leaves(b.params)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.episode_returns, b.episode_returns)
    assert not all(np.array_equal(x, y) for x, y in zip(rc.tree_leaves(a.params),
                                                          rc.tree_leaves(c.params)))


@pytest.mark.parametrize("name", TRAINERS)
def test_opt_and_dtype_are_used(name):
    default = run(name)
    sgd = run(name, opt=rc.SGD(lr=1e-3))
    assert not all(np.array_equal(x, y) for x, y in zip(rc.tree_leaves(default.params),
                                                          rc.tree_leaves(sgd.params)))
    wide = run(name, dtype=np.float64)
    assert all(x.dtype == np.float64 for x in rc.tree_leaves(wide.params))
    assert wide.settings["dtype"] == "float64"


def test_the_agent_stream_is_independent_of_the_environment_copies():
    for seed in (0, 1, 7):
        env_stream = np.random.default_rng(seed).random(8)
        assert not np.allclose(agent_rng(seed).random(8), env_stream)
        np.testing.assert_array_equal(agent_rng(seed).random(8), agent_rng(seed).random(8))


@pytest.mark.parametrize("name", TRAINERS)
def test_bad_contract_arguments_raise(name):
    with pytest.raises(ValueError, match="total_steps"):
        TRAINERS[name][0](rc.CartPole(), TRAINERS[name][1], TRAINERS[name][2](), 0)
    with pytest.raises(TypeError, match="callback"):
        run(name, callback="print")
    with pytest.raises(TypeError, match="opt"):
        run(name, opt="adam")
