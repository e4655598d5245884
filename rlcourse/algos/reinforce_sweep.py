"""Many REINFORCE runs side by side: one batched policy pass serves every run.

REINFORCE on a small network spends most of its time collecting episodes, one vector step at a
time, and most of each step is Python overhead paid per run. Here ``S`` runs (*members*) step
together: one stacked forward pass of their policies (``[S, n, d] @ [S, d, h]``), one softmax
for all, one environment computation for all their copies (:class:`CartPoleGroup` when every
env is a CartPole). A member learns as soon as its own batch of whole episodes is complete,
whatever the others are doing, so the runs need not wait for each other. Each member keeps its
own seed and random stream, initial parameters, optimiser, critic and settings, and each is the
run :func:`~rlcourse.algos.reinforce.reinforce` makes with the same settings, bit for bit:
``tests/test_sweep.py`` checks this against single runs.
"""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import check_count
from ..core.blas import single_thread_blas
from ..core.distributions import _categorical_cdf, _inverse_cdf
from ..core.nn import _ACTIVATIONS, mlp
from ..envs.cartpole import CartPole, CartPoleGroup
from . import reinforce as _reinforce
from .models import actor_critic_model
from .sweep import _stack, _stacked_mlp, member_envs_and_callbacks, members_settings

__all__ = ["reinforce_sweep"]

REINFORCE_PER_MEMBER = ("seed", "lr", "gamma", "baseline", "reward_to_go", "discount_steps",
                        "value_lr", "value_steps", "max_grad_norm")


@single_thread_blas()
def reinforce_sweep(envs, params, total_steps: int, members: list[dict], *,
                    activation: str = "tanh", dtype=np.float32, callbacks=None,
                    max_steps: int = 100_000, **shared):
    """Train ``len(members)`` REINFORCE runs side by side; returns one ``TrainResult`` per member.

    Args:
        envs: one vector environment per member, all with the same ``n``; member ``m``'s is
            reset with its seed, exactly as ``rc.reinforce`` resets its env.
        params: one tree per member (or one tree for all): an :func:`~rlcourse.core.nn.mlp_init`
            policy, applied as ``rc.mlp(params, obs, activation)``, or a
            :func:`~rlcourse.make_actor_critic` tree, applied as ``rc.actor_critic_model``
            (needed for ``baseline="value"``). The policies (the ``"actor"`` of the latter)
            must all have the same sizes.
        total_steps, dtype: as in ``rc.reinforce``, shared by all members.
        members: one dict per member: ``seed`` and any of ``rc.reinforce``'s ``lr, gamma,
            baseline, reward_to_go, discount_steps, value_lr, value_steps, max_grad_norm``; a
            setting a member leaves out comes from ``shared`` (the other keyword arguments),
            else from ``rc.reinforce``'s default.
        callbacks: None, or one callback per member (each None or a function), called as
            ``rc.reinforce`` calls its callback; one that returns False stops its member only.
        max_steps: the longest episode allowed, as in ``rc.collect_episodes``.

    The optimiser is ``rc.reinforce``'s default, Adam. Each result's ``settings`` are its
    member's; ``wall_time`` is the member's time from the start of the sweep to its end.
    """
    settings = members_settings(members, REINFORCE_PER_MEMBER, _reinforce.reinforce,
                                _reinforce._checked_settings, shared,
                                dict(total_steps=total_steps, dtype=dtype))
    S = len(settings)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation: expected one of {sorted(_ACTIVATIONS)}, got {activation!r}")
    act = _ACTIVATIONS[activation]
    callbacks = member_envs_and_callbacks(envs, callbacks, S)
    k = envs[0].n
    max_steps = check_count("max_steps", max_steps)
    params_list = [params] * S if _is_tree(params) else list(params)
    if len(params_list) != S:
        raise ValueError(f"params: expected one tree per member ({S}), got {len(params_list)}")
    models = []
    for m, tree in enumerate(params_list):
        if not _is_tree(tree):
            raise ValueError(f"params[{m}]: expected an mlp_init list of layers or a "
                             f"make_actor_critic tree, got {type(tree).__name__}")
        if settings[m]["baseline"] == "value" and not isinstance(tree, dict):
            raise ValueError(f"members[{m}]: baseline='value' needs a critic: params[{m}] as "
                             f"{{'actor': ..., 'critic': ...}} (e.g. rc.make_actor_critic), got a "
                             f"list of layers")
        if isinstance(tree, dict):
            if activation != "tanh":
                raise ValueError(f"params[{m}]: an actor-critic tree is applied with tanh (as "
                                 f"rc.actor_critic_model does), but activation={activation!r}")
            models.append(actor_critic_model)
        else:
            models.append(lambda p, obs: mlp(p, obs, act))

    runs = [_reinforce._Run(env, model, tree, s, None, callback, False, f"reinforce member {m}")
            for m, (env, model, tree, s, callback)
            in enumerate(zip(envs, models, params_list, settings, callbacks))]
    obs = [env.reset(seed=s["seed"]) for env, s in zip(envs, settings)]
    for m, (run, first) in enumerate(zip(runs, obs)):
        run.check_model(first, f"envs[{m}]")
    theta, stacked, _ = _stack([_actor(run.params) for run in runs], np.dtype(dtype))
    cartpoles = all(type(env) is CartPole for env in envs)
    groups = {}  # the members still running -> their CartPoleGroup
    x = np.stack([np.asarray(o, dtype=theta.dtype) for o in obs])  # [S, k, ...], kept current
    batches = [_Batch() for _ in range(S)]
    active = list(range(S))
    while active:
        # One forward pass and one softmax for every member; each draws from its own stream.
        cdf = _categorical_cdf(_stacked_mlp(stacked, x, act))
        uniform = np.zeros((S, k))
        for m in active:
            uniform[m] = runs[m].rng.random(k)
        actions = _inverse_cdf(cdf, uniform)
        if cartpoles:
            key = tuple(active)
            if key not in groups:
                groups[key] = CartPoleGroup([envs[m] for m in active])
            steps = dict(zip(active, groups[key].step(actions[active].reshape(-1))))
        else:
            steps = {m: envs[m].step(actions[m]) for m in active}
        finished = []
        for m in active:
            batch, step = batches[m], steps[m]
            if len(batch.obs) == max_steps:
                raise RuntimeError(f"reinforce_sweep: member {m}'s episodes had not all ended "
                                   f"after max_steps={max_steps} steps; give the environment a "
                                   "time limit or raise max_steps")
            batch.add(x[m].copy(), actions[m], step)
            next_obs = step.obs
            if not batch.running.any():
                # The member's batch is complete: reset its env, learn, start the next batch.
                next_obs = envs[m].reset()
                keep_going = runs[m].learn(*batch.arrays())
                theta[m] = np.concatenate([np.ravel(leaf) for leaf
                                           in ad.tree_leaves(_actor(runs[m].params))])
                batches[m] = _Batch()
                if not keep_going or runs[m].log.steps >= total_steps:
                    finished.append(m)
            x[m] = next_obs
        active = [m for m in active if m not in finished]
    return [run.log.result(run.params) for run in runs]


def _is_tree(params) -> bool:
    """A make_actor_critic tree, or an mlp_init list of layers."""
    if isinstance(params, dict):
        return "actor" in params
    return isinstance(params, (list, tuple)) and bool(params) and isinstance(params[0], dict) \
        and "w" in params[0]


def _actor(params):
    """The policy's parameters: the ``"actor"`` of an actor-critic tree, else the tree."""
    return params["actor"] if isinstance(params, dict) else params


class _Batch:
    """One member's episodes being collected, as ``rc.collect_episodes`` collects them."""

    def __init__(self):
        self.obs, self.actions, self.rewards, self.mask = [], [], [], []
        self.running = None

    def add(self, obs, actions, step) -> None:
        if self.running is None:
            self.running = np.ones(len(actions), dtype=bool)
        self.obs.append(obs)
        self.actions.append(actions)
        self.rewards.append(step.reward)
        self.mask.append(self.running.copy())
        self.running &= ~(step.terminated | step.truncated)

    def arrays(self):
        return (np.stack(self.obs), np.stack(self.actions), np.stack(self.rewards),
                np.stack(self.mask))
