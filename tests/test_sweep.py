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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dqn_sweep_members_are_single_dqn_runs_bit_for_bit(dtype):
    """Each member differs from the other in every per-member setting; each must be the run
    rc.dqn makes with its settings, bit for bit: parameters, target network, episodes and
    history (so a sweep's member can stand in for rc.dqn's run in a lesson)."""
    params = [rc.mlp_init([4, 16, 2], seed=s) for s in (3, 5)]
    runs = rc.dqn_sweep([rc.CartPole(), rc.CartPole()], params, 1_250, DQN_MEMBERS, dtype=dtype,
                        **DQN_SHARED)
    for member, p, run in zip(DQN_MEMBERS, params, runs):
        alone = rc.dqn(rc.CartPole(), _q_net, p, 1_250, **DQN_SHARED, **member, dtype=dtype)
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
