"""Bad-input specs for rlcourse.algos.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.

The trainers' valid calls are tiny (CartPole with 2 copies, a few dozen steps, hidden layers of
4 units), so every case runs in milliseconds. The kinds below are the ones only this layer
needs: environments, models, parameter trees, optimisers, callbacks, flags and dtypes.
"""

from __future__ import annotations

import math

import numpy as np
from bad_input_kinds import EXTRA, RNG, SHORT, F, ints_below, without

import rlcourse as rc

# ---------------------------------------------------------------------------------------------
# Fixtures: a user's own vector env, models and parameter trees


class OtherEnv:
    """A user's vector env: CartPole's dynamics with observations of another size (zero-padded
    or cut) or another number of actions (the extra ones act as action 1)."""

    def __init__(self, obs_dim: int = 4, num_actions: int = 2, n: int = 2):
        self._env = rc.CartPole(n=n, seed=0)
        self.n, self.observation_shape, self.num_actions = n, (obs_dim,), num_actions
        self.episode_returns = self._env.episode_returns

    def _obs(self, obs):
        out = np.zeros((len(obs), self.observation_shape[0]), dtype=obs.dtype)
        k = min(4, self.observation_shape[0])
        out[:, :k] = obs[:, :k]
        return out

    def reset(self, seed=None):
        return self._obs(self._env.reset(seed=seed))

    def step(self, actions):
        out = self._env.step(np.minimum(np.asarray(actions), 1))
        return out._replace(obs=self._obs(out.obs), final_obs=self._obs(out.final_obs))


def env2():
    return rc.CartPole(n=2, seed=0)


def ac_params():
    """make_actor_critic's tree for CartPole (4 observations, 2 actions), hidden layer of 4."""
    return rc.make_actor_critic(4, 2, hidden=(4,), seed=0)[1]


def mlp_params(out=2, n_in=4):
    return rc.mlp_init([n_in, 4, out], seed=0, out_scale=0.01)


def q_model(params, obs):
    return rc.mlp(params, obs, "relu")


def logits_model(params, obs):
    return rc.mlp(params, obs)


# ---------------------------------------------------------------------------------------------
# Kinds of this layer (each: valid value -> [(label, bad value), ...])


def env_kind(*skip):
    """A vector env a discrete-action model with 4 inputs and 2 actions cannot run on.

    (The library has no continuous-action env: ``from_gymnasium`` refuses a non-Discrete
    action space, tested in tests/test_envs.py.)"""

    def bads(valid):
        n = valid.n
        return [(label, bad) for label, bad in [
            ("a string", "CartPole"), ("None", None), ("the class, not an instance", rc.CartPole),
            ("observations of another size", OtherEnv(obs_dim=3, n=n)),
            ("another number of actions", OtherEnv(num_actions=3, n=n)),
            ("a tabular env", rc.GridWorld(size=3, n=n, seed=0)),
        ] if label not in skip]

    return bads


def _params_tree_bads(valid):
    """Bad parameter trees, whatever the structure: a string, None, NaN and complex leaves."""
    def with_leaf(fn):
        leaves = iter([fn(leaf) if i == 0 else np.copy(leaf)
                       for i, leaf in enumerate(rc.tree_leaves(valid))])
        return rc.tree_map(lambda _: next(leaves), valid)

    def nan(leaf):
        leaf = np.array(leaf, dtype=np.float64)
        leaf.flat[0] = np.nan
        return leaf

    return [("a string", "params"), ("None", None), ("a NaN weight", with_leaf(nan)),
            ("complex weights", with_leaf(lambda leaf: np.asarray(leaf) + 1j)),
            ("string weights", with_leaf(lambda leaf: np.asarray(leaf).astype(str)))]


def ac_params_kind(*skip):
    """make_actor_critic trees that do not fit CartPole's 4 observations and 2 actions."""
    def bads(valid):
        wrong_in = rc.make_actor_critic(3, 2, hidden=(4,), seed=0)[1]
        wrong_out = rc.make_actor_critic(4, 3, hidden=(4,), seed=0)[1]
        return [(label, bad) for label, bad in [
            *_params_tree_bads(valid),
            ("missing the critic", {"actor": valid["actor"]}),
            ("a layer missing its bias", {"actor": [{"w": valid["actor"][0]["w"]},
                                                    valid["actor"][1]],
                                          "critic": valid["critic"]}),
            ("inputs of another size", wrong_in), ("another number of actions", wrong_out),
        ] if label not in skip]

    return bads


def mlp_params_kind(*skip):
    """rc.mlp_init trees that do not fit CartPole's 4 observations and 2 actions."""
    def bads(valid):
        return [(label, bad) for label, bad in [
            *_params_tree_bads(valid),
            ("a layer missing its bias", [{"w": valid[0]["w"]}, valid[1]]),
            ("inputs of another size", mlp_params(n_in=3)),
            ("another number of actions", mlp_params(out=3)),
        ] if label not in skip]

    return bads


def ac_model_kind(valid):
    """Models that do not return ``(logits [B, A], values [B])``."""
    return [("a string", "actor_critic_model"), ("None", None),
            ("logits only", lambda p, obs: rc.mlp(p["actor"], obs)),
            ("values of shape [B, 1]", lambda p, obs: (rc.mlp(p["actor"], obs),
                                                       rc.mlp(p["critic"], obs)))]


def logits_model_kind(valid):
    """Models that do not return logits ``[B, A]``."""
    return [("a string", "mlp"), ("None", None),
            ("one number per row", lambda p, obs: rc.sum(rc.mlp(p, obs), axis=-1))]


def q_model_kind(valid):
    return logits_model_kind(valid)


def _opt_bads(valid):
    class NoLr:  # an optimiser without the lr attribute the trainers read
        def init(self, params):
            return rc.SGD(lr=0.1).init(params)

        def step(self, params, grads, state, lr=None):
            return rc.SGD(lr=0.1).step(params, grads, state, lr)

    return [("a string", "adam"), ("the class, not an instance", rc.Adam),
            ("an optimiser without lr", NoLr())]


def _callback_bads(valid):  # None is valid: no callback
    return [("a string", "print"), ("an int", 1)]


def _flag_bads(valid):
    return [("a string", "False"), ("a float", 0.5), ("None", None)]


def _progress_bads(valid):  # None is valid: auto
    return [("a string", "no"), ("a float", 0.5)]


def _dtype_bads(valid):
    return [("an integer dtype", np.int32), ("complex", np.complex128), ("not a dtype", "banana")]


def _count0_bads(valid):  # a count that may be 0
    return [("negative", -3), ("a float", 2.5), ("a bool", True), ("a string", "3")]


def _hidden_bads(valid):
    return [("a zero width", (0,)), ("a negative width", (-4,)), ("a float width", (2.5,)),
            ("a string", "64"), ("an int, not a sequence", 64)]


def _obs_shape_bads(valid):
    return [("a negative size", (-1,)), ("a float size", (2.5,)), ("a string", "4"),
            ("an int, not a tuple", 4)]


def _members_bads(valid):
    return [("an empty list", []), ("a dict, not a list", {"seed": 0}),
            ("a member without a seed", [{"lr": 1e-3}, {"seed": 1}]),
            ("a member with a negative lr", [{"seed": 0, "lr": -1.0}, {"seed": 1}]),
            ("a member with gamma 1.5", [{"seed": 0, "gamma": 1.5}, {"seed": 1}]),
            ("a member with a negative seed", [{"seed": -1}, {"seed": 1}]),
            ("a member with a setting every member shares", [{"seed": 0, "rollout": 8},
                                                             {"seed": 1}])]


def _baseline_bads(valid):
    return [("an unknown name", "mean"), ("a number", 0.5)]


def _policy_bads(valid):
    return [("a string", "greedy"), ("None", None),
            ("float actions", lambda obs: np.zeros(len(obs))),
            ("actions out of range", lambda obs: np.full(len(obs), 5)),
            ("one action for all copies", lambda obs: 0)]


# Envs a caller that has no model and params yet (evaluate, Checkpoints, RecentStates) cannot
# refuse: any vector env is fine there, and the fit is checked where the model first meets it.
ANY_ENV = ("another number of actions", "observations of another size", "a tabular env")

CALLBACK, FLAG, PROGRESS, DTYPE, OPT = (_callback_bads, _flag_bads, _progress_bads, _dtype_bads,
                                        _opt_bads)

# The contract's own arguments, the same for every trainer
CONTRACT = dict(opt=OPT, dtype=DTYPE, seed="seed", callback=CALLBACK, progress=PROGRESS)


def trainer_kinds(params_kind, model_kind, **more):
    return dict(env=env_kind(), model=model_kind, params=params_kind, total_steps="count",
                lr="nonneg", gamma="unit", max_grad_norm="positive", **CONTRACT, **more)


# A loss or a policy step has no env: a head of 3 actions is as valid as one of 2.
LOSS_PARAMS = ("another number of actions",)
# greedy_policy only hands params to the model, later: None is fine for a model without
# parameters (the functions that call the model at once refuse it through the model's error).
PASSED_ON_PARAMS = ("None",)

# ---------------------------------------------------------------------------------------------
# Valid calls


def _ppo():
    return dict(env=env2(), model=rc.actor_critic_model, params=ac_params(), total_steps=16,
                rollout=4, epochs=1, minibatch=4, lr=1e-3, gamma=0.9, lam=0.9, clip=0.2,
                vf_coef=0.5, ent_coef=0.01, max_grad_norm=0.5, anneal_lr=True, anneal_clip=True,
                norm_adv=True, target_kl=0.5, vf_clip=0.2, opt=None, dtype=np.float32, seed=0,
                callback=lambda info: None, progress=False)


def _a2c():
    return dict(env=env2(), model=rc.actor_critic_model, params=ac_params(), total_steps=16,
                rollout=4, lr=1e-3, gamma=0.9, lam=0.9, vf_coef=0.5, ent_coef=0.01,
                max_grad_norm=0.5, norm_adv=True, anneal_lr=True, opt=None, dtype=np.float32,
                seed=0, callback=lambda info: None, progress=False)


def _reinforce():
    return dict(env=env2(), model=logits_model, params=mlp_params(), total_steps=8, lr=1e-2,
                gamma=0.9, baseline=True, reward_to_go=True, discount_steps=False, value_lr=1e-2,
                value_steps=1, max_grad_norm=1.0, opt=None, dtype=np.float32, seed=0,
                callback=lambda info: None, progress=False)


def _dqn():
    return dict(env=env2(), model=q_model, params=mlp_params(), total_steps=8, lr=1e-3, gamma=0.9,
                buffer_size=8, batch_size=4, learning_starts=4, train_freq=4, gradient_steps=1,
                target_update=1, tau=1.0, epsilon_start=1.0, epsilon_end=0.1,
                exploration_fraction=0.5, double=True, max_grad_norm=10.0, anneal_lr=True,
                opt=None, dtype=np.float32, seed=0, callback=lambda info: None, progress=False)


def _sweep(**more):
    return lambda: dict(env=env2(), params=ac_params(), total_steps=8,
                        members=[{"seed": 0}, {"seed": 1, "lr": 2e-3}], rollout=4,
                        dtype=np.float32, gamma=0.9, **more)


def _ppo_loss():
    return dict(params=ac_params(), model=rc.actor_critic_model, obs=F(4, 4),
                actions=np.array([0, 1, 1, 0]), old_log_probs=F(4, low=-1.0, high=-0.5, seed=1),
                advantages=F(4, seed=2), returns=F(4, seed=3), clip=0.2, vf_coef=0.5,
                ent_coef=0.01, old_values=F(4, seed=4), vf_clip=0.2)


def _a2c_loss():
    return dict(params=ac_params(), model=rc.actor_critic_model, obs=F(4, 4),
                actions=np.array([0, 1, 1, 0]), advantages=F(4, seed=2), returns=F(4, seed=3),
                vf_coef=0.5, ent_coef=0.01)


def _episodes():
    """Two episodes as columns: obs [3, 2, 4], the second one two steps long."""
    mask = np.array([[True, True], [True, True], [True, False]])
    return dict(obs=F(3, 2, 4), actions=np.array([[0, 1], [1, 1], [0, 0]]),
                weights=F(3, 2, seed=1) * mask, mask=mask)


def _collect_episodes():
    env = env2()
    return dict(env=env, model=logits_model, params=mlp_params(), rng=RNG(0),
                obs=env.reset(seed=0), max_steps=1_000)


def _collect_rollout():
    env = env2()
    return dict(env=env, model=rc.actor_critic_model, params=ac_params(), obs=env.reset(seed=0),
                steps=3, rng=RNG(0), dtype=np.float32)


def _greedy_returns():
    return dict(env=rc.CartPole(n=2, seed=0, max_steps=None), model=q_model,
                params=mlp_params(), states=F(2, 4, low=-0.05, high=0.05), gamma=0.9,
                horizon=5)


# ---------------------------------------------------------------------------------------------

SPECS: dict[str, tuple] = {
    # the trainers
    "ppo": (_ppo, trainer_kinds(
        ac_params_kind(), ac_model_kind, rollout="count", epochs="count", minibatch="count",
        lam="unit", clip="unit", vf_coef="nonneg", ent_coef="nonneg", anneal_lr=FLAG,
        anneal_clip=FLAG, norm_adv=FLAG, target_kl="positive", vf_clip="positive")),
    "actor_critic": (_a2c, trainer_kinds(
        ac_params_kind(), ac_model_kind, rollout="count", lam="unit", vf_coef="nonneg",
        ent_coef="nonneg", norm_adv=FLAG, anneal_lr=FLAG)),
    "reinforce": (_reinforce, trainer_kinds(
        mlp_params_kind(), logits_model_kind, baseline=_baseline_bads, reward_to_go=FLAG,
        discount_steps=FLAG, value_lr="nonneg", value_steps=_count0_bads)),
    "dqn": (_dqn, trainer_kinds(
        mlp_params_kind(), q_model_kind, buffer_size="count", batch_size="count",
        learning_starts=_count0_bads, train_freq="count", gradient_steps="count",
        target_update="count", tau="unit", epsilon_start="unit", epsilon_end="unit",
        exploration_fraction="unit", double=FLAG, anneal_lr=FLAG)),
    "ppo_sweep": (_sweep(epochs=1, minibatch=4),
                  dict(env=env_kind(), params=ac_params_kind(), total_steps="count",
                       members=_members_bads, rollout="count", epochs="count",
                       minibatch="count", dtype=DTYPE, gamma="unit")),
    "actor_critic_sweep": (_sweep(), dict(env=env_kind(), params=ac_params_kind(),
                                          total_steps="count", members=_members_bads,
                                          rollout="count", dtype=DTYPE, gamma="unit")),
    # the losses, on one minibatch of B = 4 samples
    "ppo_loss": (_ppo_loss, dict(
        params=ac_params_kind(*LOSS_PARAMS), model=ac_model_kind, obs="floats",
        actions=ints_below(2), old_log_probs="floats", advantages="floats", returns="floats",
        clip="unit", vf_coef="nonneg", ent_coef="nonneg", old_values="floats",
        vf_clip="positive")),
    "actor_critic_loss": (_a2c_loss, dict(
        params=ac_params_kind(*LOSS_PARAMS), model=ac_model_kind, obs="floats",
        actions=ints_below(2), advantages="floats", returns="floats", vf_coef="nonneg",
        ent_coef="nonneg")),
    "dqn_loss": (lambda: dict(params=mlp_params(), model=q_model, obs=F(4, 4),
                              actions=np.array([0, 1, 1, 0]), targets=F(4, seed=1), delta=1.0),
                 dict(params=mlp_params_kind(*LOSS_PARAMS), model=q_model_kind, obs="floats",
                      actions=ints_below(2), targets="floats", delta="positive")),
    "reinforce_loss": (lambda: dict(logits=F(3, 2, 2), actions=np.array([[0, 1], [1, 1], [0, 0]]),
                                    weights=F(3, 2, seed=1), mask=np.ones((3, 2), bool)),
                       dict(logits="logits", actions=ints_below(2), weights="floats",
                            mask="bools")),
    "policy_gradient_estimate": (lambda: dict(model=logits_model, params=mlp_params(),
                                              per_episode=False, **_episodes()),
                                 dict(model=logits_model_kind,
                                      params=mlp_params_kind("another number of actions"),
                                      obs="floats", actions=ints_below(2), weights="floats",
                                      mask="bools", per_episode=FLAG)),
    # rollouts
    "policy_step": (lambda: dict(model=rc.actor_critic_model, params=ac_params(), obs=F(2, 4),
                                 rng=RNG(0)),
                    dict(model=ac_model_kind,
                         params=ac_params_kind("another number of actions"),
                         obs=without("floats", SHORT), rng="rng")),
    "collect_rollout": (_collect_rollout, dict(
        env=env_kind(), model=ac_model_kind, params=ac_params_kind(), obs="floats",
        steps="count", rng="rng", dtype=DTYPE)),
    "collect_episodes": (_collect_episodes, dict(
        env=env_kind(), model=logits_model_kind, params=mlp_params_kind(), rng="rng",
        obs="floats", max_steps="count")),
    # models
    "make_actor_critic": (lambda: dict(obs_dim=4, num_actions=2, hidden=(4,), seed=0,
                                       dtype=np.float32),
                          dict(obs_dim="count", num_actions="count", hidden=_hidden_bads,
                               seed="seed", dtype=DTYPE)),
    "actor_critic_model": (lambda: dict(params=ac_params(), obs=F(3, 4)),
                           dict(params=ac_params_kind(*LOSS_PARAMS), obs=without("floats", SHORT))),
    # evaluation
    "evaluate": (lambda: dict(env=env2(), policy=lambda obs: np.zeros(len(obs), dtype=int),
                              episodes=2, seed=0, max_steps=1_000),
                 dict(env=env_kind(*ANY_ENV),
                      policy=_policy_bads, episodes="count", seed="seed", max_steps="count")),
    "greedy_policy": (lambda: dict(model=q_model, params=mlp_params()),
                      dict(model="callable",
                           params=without(_params_tree_bads, *PASSED_ON_PARAMS))),
    "Checkpoints": (lambda: dict(eval_env=env2(), model=q_model, every=8, episodes=2, seed=0,
                                 keep_best=True),
                    dict(eval_env=env_kind(*ANY_ENV),
                         model="callable", every="count", episodes="count", seed="seed",
                         keep_best=FLAG)),
    # DQN's replay buffer and diagnostics
    "ReplayBuffer": (lambda: dict(capacity=8, obs_shape=(4,), dtype=np.float32),
                     dict(capacity="count", obs_shape=_obs_shape_bads, dtype=DTYPE)),
    "relative_change": (lambda: dict(q_before=F(3, 2), q_after=F(3, 2, seed=1)),
                        dict(q_before="floats", q_after="floats")),
    "greedy_flips": (lambda: dict(q_before=F(3, 2), q_after=F(3, 2, seed=1)),
                     dict(q_before="floats", q_after="floats")),
    "overestimation": (lambda: dict(q=F(3, 2), returns=F(3, seed=1)),
                       dict(q="floats", returns="floats")),
    "greedy_discounted_returns": (_greedy_returns, dict(
        env=env_kind(), model=q_model_kind, params=mlp_params_kind(), states="floats", gamma="unit",
        horizon="count")),
    "RecentStates": (lambda: dict(env=env2(), keep=4),
                     dict(env=env_kind(*ANY_ENV), keep="count")),
}

EXEMPT: dict[str, str] = {}


_ = (EXTRA, math)  # kept for specs that need them
