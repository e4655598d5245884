"""Runs side by side: each member of a sweep is the run rc.ppo / rc.actor_critic makes."""

import numpy as np
import pytest

import rlcourse as rc


def _gap(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(rc.tree_leaves(a), rc.tree_leaves(b)))


PPO_SHARED = dict(rollout=16, epochs=3, minibatch=32)
PPO_MEMBERS = [
    dict(seed=3, lr=1e-2, anneal_clip=True, target_kl=0.0005),
    dict(seed=5, lr=1e-3, norm_adv=False, max_grad_norm=None, vf_clip=0.2, lam=0.9,
         anneal_lr=False, ent_coef=0.01),
]


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-9), (np.float32, 1e-4)])
def test_ppo_sweep_members_are_single_ppo_runs(dtype, tol):
    seeds = [m["seed"] for m in PPO_MEMBERS]
    envs = [rc.CartPole(n=4, seed=s, max_steps=20) for s in seeds]
    params = [rc.make_actor_critic(4, 2, hidden=(8, 8), seed=s, dtype=dtype)[1] for s in seeds]
    runs = rc.ppo_sweep(envs, params, 1_280, PPO_MEMBERS, dtype=dtype, **PPO_SHARED)
    stopped_early = False
    for member, run in zip(PPO_MEMBERS, runs):
        model, p = rc.make_actor_critic(4, 2, hidden=(8, 8), seed=member["seed"], dtype=dtype)
        alone = rc.ppo(rc.CartPole(n=4, seed=member["seed"], max_steps=20), model, p, 1_280,
                       dtype=dtype, progress=False, **PPO_SHARED, **member)
        assert _gap(alone.params, run.params) < tol
        assert np.array_equal(alone.episode_returns, run.episode_returns)
        assert list(alone.history) == list(run.history)
        for key in alone.history:
            np.testing.assert_allclose(run.history[key], alone.history[key], atol=tol, rtol=tol)
        assert run.settings == alone.settings and run.steps == alone.steps
        stopped_early |= bool(np.any(alone.history["epochs"] < PPO_SHARED["epochs"]))
    assert stopped_early, "the case must exercise target_kl's early stop"


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-9), (np.float32, 1e-4)])
def test_actor_critic_sweep_members_are_single_a2c_runs(dtype, tol):
    members = [dict(seed=3, lr=3e-3), dict(seed=5, lr=1e-3, norm_adv=True, lam=0.5,
                                           max_grad_norm=None, anneal_lr=True)]
    envs = [rc.CartPole(n=4, seed=m["seed"], max_steps=20) for m in members]
    params = [rc.make_actor_critic(4, 2, hidden=(8, 8), seed=m["seed"], dtype=dtype)[1]
              for m in members]
    runs = rc.actor_critic_sweep(envs, params, 960, members, rollout=8, dtype=dtype)
    for member, run in zip(members, runs):
        model, p = rc.make_actor_critic(4, 2, hidden=(8, 8), seed=member["seed"], dtype=dtype)
        alone = rc.actor_critic(rc.CartPole(n=4, seed=member["seed"], max_steps=20), model, p,
                                960, rollout=8, dtype=dtype, progress=False, **member)
        assert _gap(alone.params, run.params) < tol
        assert np.array_equal(alone.episode_returns, run.episode_returns)
        assert list(alone.history) == list(run.history)
        for key in alone.history:
            np.testing.assert_allclose(run.history[key], alone.history[key], atol=tol, rtol=tol)


def test_members_of_one_env_are_independent_and_reproducible():
    """A member with lr=0 never moves, whatever its neighbours do; its episodes come only from its
    own copies (here: copies that never end, so it has none while the other member's end)."""
    params = [rc.make_actor_critic(4, 2, hidden=(8,), seed=s)[1] for s in (0, 1)]
    members = [dict(seed=0, lr=0.0), dict(seed=1, lr=1e-2)]
    env = rc.CartPole(n=8, seed=0)
    runs = rc.ppo_sweep(env, params, 1_024, members, rollout=32, epochs=2, minibatch=64)
    assert _gap(runs[0].params, params[0]) == 0.0
    assert _gap(runs[1].params, params[1]) > 0.0
    assert len(runs[0].episode_returns) > 0 and runs[0].steps == runs[1].steps == 1_024
    again = rc.ppo_sweep(rc.CartPole(n=8, seed=0), params, 1_024, members, rollout=32, epochs=2,
                         minibatch=64)
    assert _gap(again[1].params, runs[1].params) == 0.0
    assert np.array_equal(again[0].episode_returns, runs[0].episode_returns)


def test_one_tree_for_all_members_and_history_per_member():
    _, p = rc.make_actor_critic(4, 2, hidden=(8,), seed=0)
    runs = rc.actor_critic_sweep(rc.CartPole(n=6, seed=0), p, 480, [dict(seed=s) for s in range(3)])
    assert len(runs) == 3 and all(r.updates == 30 for r in runs)  # 2 copies x 8 steps each
    assert runs[0].settings["seed"] == 0 and runs[2].settings["seed"] == 2


def test_bad_arguments_raise():
    _, p = rc.make_actor_critic(4, 2, hidden=(8,), seed=0)
    env = rc.CartPole(n=4, seed=0)
    with pytest.raises(ValueError, match="split evenly"):
        rc.ppo_sweep(env, p, 256, [dict(seed=s) for s in range(3)])
    with pytest.raises(ValueError, match="seed"):
        rc.ppo_sweep(env, p, 256, [dict(lr=1e-3), dict(seed=1)])
    with pytest.raises(TypeError, match="cannot differ between members"):
        rc.ppo_sweep(env, p, 256, [dict(seed=0, epochs=3), dict(seed=1)])
    with pytest.raises(TypeError, match="not a per-member setting"):
        rc.actor_critic_sweep(env, p, 256, [dict(seed=0), dict(seed=1)], clip=0.2)
    with pytest.raises(ValueError, match="one tree per member"):
        rc.ppo_sweep(env, [p, p, p], 256, [dict(seed=0), dict(seed=1)])
    with pytest.raises(ValueError, match="gamma"):
        rc.ppo_sweep(env, p, 256, [dict(seed=0, gamma=1.5), dict(seed=1)])
    with pytest.raises(ValueError, match="max_grad_norm"):
        rc.actor_critic_sweep(env, p, 256, [dict(seed=0, max_grad_norm=-1.0), dict(seed=1)])
    with pytest.raises(ValueError, match="same network shapes"):
        other = rc.make_actor_critic(4, 2, hidden=(4,), seed=0)[1]
        rc.ppo_sweep(env, [p, other], 256, [dict(seed=0), dict(seed=1)])
    with pytest.raises(ValueError, match="one env per member"):
        rc.ppo_sweep([rc.CartPole(n=2, seed=0)], p, 256, [dict(seed=0), dict(seed=1)])
    broken = rc.tree_map(np.copy, p)
    broken["actor"][-1]["w"][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"params\[1\]\['actor'\]"):  # refused at entry
        rc.ppo_sweep(env, [p, broken], 256, [dict(seed=0), dict(seed=1)])


# ---------------------------------------------------------------- DQN

DQN_SHARED = dict(batch_size=32, learning_starts=300, train_freq=100, gradient_steps=8)
DQN_MEMBERS = [
    dict(seed=3, lr=3e-3, double=False, target_update=1, buffer_size=250, max_grad_norm=0.5),
    dict(seed=5, lr=1e-3, anneal_lr=False, tau=0.5, target_update=16, epsilon_end=0.2,
         exploration_fraction=0.5, max_grad_norm=None, gamma=0.9),
]


def _q_net(params, obs):
    return rc.mlp(params, obs, "relu")


@pytest.mark.parametrize("dtype, activation, sizes, batch_size", [
    (np.float64, "relu", [4, 16, 2], 32), (np.float32, "relu", [4, 16, 2], 32),
    (np.float32, "tanh", [4, 16, 16, 2], 24), (np.float64, "tanh", [4, 8, 8, 2], 20),
    (np.float32, "relu", [4, 12, 12, 2], 17)])
def test_dqn_sweep_members_are_single_dqn_runs_bit_for_bit(dtype, activation, sizes, batch_size):
    """Each member differs from the other in every per-member setting; each must be the run
    rc.dqn makes with its settings, bit for bit: parameters, target network, episodes and
    history (so a sweep's member can stand in for rc.dqn's run in a lesson). The sweep writes
    the gradient out by hand, so depths, both activations and batch sizes that are not powers
    of 2 (the mean's 1/B is then rounded) are covered."""
    params = [rc.mlp_init(sizes, seed=s) for s in (3, 5)]
    shared = {**DQN_SHARED, "batch_size": batch_size}
    runs = rc.dqn_sweep([rc.CartPole(), rc.CartPole()], params, 1_250, DQN_MEMBERS, dtype=dtype,
                        activation=activation, **shared)
    for member, p, run in zip(DQN_MEMBERS, params, runs):
        alone = rc.dqn(rc.CartPole(), lambda q, obs: rc.mlp(q, obs, activation), p, 1_250,
                       **shared, **member, dtype=dtype)
        assert _gap(alone.params, run.params) == 0.0
        assert _gap(alone.extras["target_params"], run.extras["target_params"]) == 0.0
        assert np.array_equal(alone.episode_returns, run.episode_returns)
        assert list(alone.history) == list(run.history)
        for key in alone.history:
            np.testing.assert_array_equal(run.history[key], alone.history[key])
        assert run.settings == alone.settings and run.steps == alone.steps


def test_dqn_sweep_calls_each_members_callback_with_its_own_params():
    params = [rc.mlp_init([4, 16, 2], seed=s) for s in (0, 1)]
    seen = {0: [], 1: []}
    callbacks = [lambda info, m=m: seen[m].append((info["steps"], info["params"], info["last"]))
                 for m in (0, 1)]
    runs = rc.dqn_sweep([rc.CartPole(), rc.CartPole()], params, 450, [dict(seed=0), dict(seed=1, lr=0.0)],
                        callbacks=callbacks, **DQN_SHARED)
    assert [s for s, _, _ in seen[0]] == [100, 200, 300, 400, 450] == [s for s, _, _ in seen[1]]
    assert seen[0][-1][2] and not seen[0][-2][2]
    assert _gap(seen[0][-1][1], runs[0].params) == 0.0 and _gap(seen[1][-1][1], params[1]) == 0.0
    assert _gap(runs[0].params, params[0]) > 0.0


def test_dqn_sweep_callback_info_is_rc_dqns_with_several_copies_per_member():
    """What a member's callback sees is what rc.dqn's sees, key by key, value and type, also
    with 4 environment copies per member; a callback that asks to stop is an error."""
    def recorder(store):
        return lambda info: store.append(info)

    params = [rc.mlp_init([4, 16, 2], seed=s) for s in (3, 5)]
    swept = ([], [])
    rc.dqn_sweep([rc.CartPole(n=4), rc.CartPole(n=4)], params, 1_200, DQN_MEMBERS,
                 callbacks=[recorder(swept[0]), recorder(swept[1])], **DQN_SHARED)
    for member, p, infos in zip(DQN_MEMBERS, params, swept):
        alone = []
        rc.dqn(rc.CartPole(n=4), _q_net, p, 1_200, **DQN_SHARED, **member, callback=recorder(alone))
        assert len(alone) == len(infos) > 3
        for a, b in zip(alone, infos):
            assert list(a) == list(b)
            for key in a:
                if key == "params":
                    assert _gap(a[key], b[key]) == 0.0
                else:
                    assert type(a[key]) is type(b[key]), key
                    np.testing.assert_array_equal(a[key], b[key])
    with pytest.raises(ValueError, match=r"callbacks\[1\]: asked to stop"):
        rc.dqn_sweep([rc.CartPole(), rc.CartPole()], params, 600, [dict(seed=0), dict(seed=1)],
                     callbacks=[None, lambda info: info["steps"] < 200], **DQN_SHARED)


def test_dqn_sweep_bad_arguments_raise():
    p = rc.mlp_init([4, 8, 2], seed=0)
    envs = [rc.CartPole(), rc.CartPole()]
    with pytest.raises(ValueError, match="envs: expected a list of one env per member"):
        rc.dqn_sweep(rc.CartPole(), p, 200, [dict(seed=0), dict(seed=1)])
    with pytest.raises(ValueError, match="seed"):
        rc.dqn_sweep(envs, p, 200, [dict(lr=1e-3), dict(seed=1)])
    with pytest.raises(TypeError, match="cannot differ between members"):
        rc.dqn_sweep(envs, p, 200, [dict(seed=0, batch_size=8), dict(seed=1)])
    with pytest.raises(TypeError, match="batch_size: passed twice|not a setting"):
        rc.dqn_sweep(envs, p, 200, [dict(seed=0), dict(seed=1)], foo=1)
    with pytest.raises(ValueError, match="one tree per member"):
        rc.dqn_sweep(envs, [p, p, p], 200, [dict(seed=0), dict(seed=1)])
    with pytest.raises(ValueError, match="gamma"):
        rc.dqn_sweep(envs, p, 200, [dict(seed=0, gamma=1.5), dict(seed=1)])
    with pytest.raises(ValueError, match="callbacks"):
        rc.dqn_sweep(envs, p, 200, [dict(seed=0), dict(seed=1)], callbacks=[None])
    with pytest.raises(ValueError, match="activation"):
        rc.dqn_sweep(envs, p, 200, [dict(seed=0), dict(seed=1)], activation="sigmoid")
    with pytest.raises(ValueError, match=r"expected Q-values .* \(num_actions = 2 of env\)"):
        rc.dqn_sweep(envs, rc.mlp_init([4, 8, 3], seed=0), 200, [dict(seed=0), dict(seed=1)])
    with pytest.raises(ValueError, match=r"do params fit envs\[0\]'s observations"):
        rc.dqn_sweep(envs, rc.mlp_init([3, 8, 2], seed=0), 200, [dict(seed=0), dict(seed=1)])
    with pytest.raises(TypeError, match=r"envs\[1\]: expected a vector environment"):
        rc.dqn_sweep([rc.CartPole(), "env"], p, 200, [dict(seed=0), dict(seed=1)])


# ---------------------------------------------------------------- REINFORCE

REINFORCE_MEMBERS = [
    dict(seed=3, baseline=False, lr=2e-2, gamma=0.9),
    dict(seed=5, baseline=True, discount_steps=True, max_grad_norm=0.5),
    dict(seed=7, baseline="value", value_lr=3e-2, value_steps=3, reward_to_go=True),
    dict(seed=9, baseline=True, reward_to_go=False),
]


def _reinforce_params(member, dtype, hidden=8):
    if member["baseline"] == "value":
        return rc.make_actor_critic(4, 2, hidden=(hidden,), seed=member["seed"], dtype=dtype)
    return (lambda p, obs: rc.mlp(p, obs, "tanh"),
            rc.mlp_init([4, hidden, 2], seed=member["seed"], out_scale=0.01, dtype=dtype))


def _same_run(a, b):
    return (_gap(a.params, b.params) == 0.0 and np.array_equal(a.episode_returns, b.episode_returns)
            and np.array_equal(a.episode_end_steps, b.episode_end_steps)
            and list(a.history) == list(b.history)
            and all(np.array_equal(a.history[k], b.history[k], equal_nan=True) for k in a.history)
            and a.settings == b.settings and a.steps == b.steps)


@pytest.mark.parametrize("dtype, wrap", [(np.float32, False), (np.float64, False),
                                         (np.float32, True)])
def test_reinforce_sweep_members_are_single_reinforce_runs_bit_for_bit(dtype, wrap):
    """Every baseline kind, reward-to-go off, gamma^t, clipping, a critic: each member is the run
    rc.reinforce makes with its settings, bit for bit, although the members' batches end at
    different steps. ``wrap`` puts each CartPole in a RecentStates, so the envs are stepped one
    by one instead of as one CartPoleGroup: both paths must give the single runs."""
    def env(max_steps):
        cartpole = rc.CartPole(n=3, max_steps=max_steps)
        return rc.RecentStates(cartpole) if wrap else cartpole

    limits = (40, 60, 25, 80)  # unequal episode caps: the members' batches never line up
    params = [_reinforce_params(m, dtype)[1] for m in REINFORCE_MEMBERS]
    swept = rc.reinforce_sweep([env(cap) for cap in limits], params, 900, REINFORCE_MEMBERS,
                               lr=1e-2, dtype=dtype)
    for member, cap, run in zip(REINFORCE_MEMBERS, limits, swept):
        model, p = _reinforce_params(member, dtype)
        alone = rc.reinforce(env(cap), model, p, 900, dtype=dtype, progress=False,
                             **{"lr": 1e-2, **member})
        assert _same_run(alone, run), member


def test_reinforce_sweep_a_callback_that_stops_stops_its_member_only():
    stop_after = 3
    infos = [[], []]

    def stopper(info):
        infos[0].append(info["update"])
        return info["update"] + 1 < stop_after

    members = [dict(seed=0), dict(seed=1)]
    params = [rc.mlp_init([4, 8, 2], seed=m["seed"], out_scale=0.01) for m in members]
    runs = rc.reinforce_sweep([rc.CartPole(n=2, max_steps=30) for _ in members], params, 600,
                              members, callbacks=[stopper, infos[1].append])
    assert runs[0].updates == stop_after and infos[0] == list(range(stop_after))
    assert runs[1].steps >= 600 and len(infos[1]) == runs[1].updates > stop_after
    alone = rc.reinforce(rc.CartPole(n=2, max_steps=30), lambda p, o: rc.mlp(p, o, "tanh"),
                         params[0], 600, seed=0, progress=False,
                         callback=lambda info: info["update"] + 1 < stop_after)
    assert _same_run(alone, runs[0])


def test_reinforce_sweep_planted_bug_a_shared_random_stream_is_caught():
    """The check above can fail: members that drew their actions from one shared generator
    (a tempting shortcut for the batched sampling) are not the single runs."""
    from rlcourse.algos import reinforce as module

    members = [dict(seed=0), dict(seed=1)]
    params = [rc.mlp_init([4, 8, 2], seed=m["seed"], out_scale=0.01) for m in members]
    original = module._Run.__init__

    def shared_rng(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.rng = shared

    shared = np.random.default_rng(0)
    module._Run.__init__ = shared_rng
    try:
        runs = rc.reinforce_sweep([rc.CartPole(n=2, max_steps=30) for _ in members], params, 300,
                                  members)
    finally:
        module._Run.__init__ = original
    alone = rc.reinforce(rc.CartPole(n=2, max_steps=30), lambda p, o: rc.mlp(p, o, "tanh"),
                         params[1], 300, seed=1, progress=False)
    assert not _same_run(alone, runs[1])


def test_reinforce_sweep_bad_arguments_raise():
    envs = [rc.CartPole(n=2), rc.CartPole(n=2)]
    p = rc.mlp_init([4, 8, 2], seed=0)
    with pytest.raises(ValueError, match=r"members\[1\]: baseline='value' needs a critic"):
        rc.reinforce_sweep(envs, p, 100, [dict(seed=0), dict(seed=1, baseline="value")])
    with pytest.raises(TypeError, match="value_steps|not a per-member|cannot differ"):
        rc.reinforce_sweep(envs, p, 100, [dict(seed=0, dtype=np.float64), dict(seed=1)])
    with pytest.raises(ValueError, match="same n"):
        rc.reinforce_sweep([rc.CartPole(n=2), rc.CartPole(n=3)], p, 100, [dict(seed=0), dict(seed=1)])
    with pytest.raises(ValueError, match="activation"):
        rc.reinforce_sweep(envs, [rc.make_actor_critic(4, 2, hidden=(8,), seed=s)[1] for s in (0, 1)],
                           100, [dict(seed=0), dict(seed=1)], activation="relu")


def test_dqn_sweep_refuses_an_activation_whose_derivative_it_does_not_know(monkeypatch):
    """The sweep writes the backward pass out by hand: a new activation in rc.mlp's table must
    not be differentiated as another one (review 07f, G5)."""
    from rlcourse.core import nn

    monkeypatch.setitem(nn._ACTIVATIONS, "sigmoid", rc.sigmoid)
    assert rc.mlp(rc.mlp_init([4, 3, 2]), np.zeros((1, 4)), "sigmoid").shape == (1, 2)
    with pytest.raises(ValueError, match="activation"):
        rc.dqn_sweep([rc.CartPole(), rc.CartPole()], rc.mlp_init([4, 8, 2]), 200,
                     [dict(seed=0), dict(seed=1)], activation="sigmoid")
