"""Many PPO or A2C runs side by side: one batched network pass serves every run.

A claim about learning needs several seeds, and an ablation several settings. Run one after
another, small networks spend most of their time in Python overhead, paid once per run. Here
``S`` runs (*members*) advance in lockstep: one environment step for all their copies, one
forward pass of the stacked networks (``[S, B, ...]`` batched matrix products), one backward
pass. Each member keeps its own seed, initial parameters, optimiser state, minibatch order,
gradient clipping, advantage normalisation, learning-rate and clip schedules, early stop and
episode log, so each is the run that :func:`~rlcourse.algos.ppo.ppo` (or
:func:`~rlcourse.algos.actor_critic.actor_critic`) makes with the same settings:
``tests/test_sweep.py`` checks this against single runs, update by update.

Members differ in the settings listed in ``PER_MEMBER`` (learning rate, clip, lambda, ...);
the structure of an update (``rollout``, ``epochs``, ``minibatch``, ``total_steps``) is shared.
The networks must be :func:`~rlcourse.algos.models.make_actor_critic`'s (tanh MLPs of any
sizes, the same sizes for every member).
"""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import agent_rng, float_dtype
from ..core.blas import single_thread_blas
from ..core.distributions import categorical_entropy, categorical_log_prob
from ..core.kl import kl_estimate
from ..core.returns import _gae
from . import actor_critic as _a2c
from . import ppo as _ppo
from .models import _check_inputs
from .rollout import explained_variance
from .trainer import TrainingLog, average, check_env, check_params

__all__ = ["ppo_sweep", "actor_critic_sweep"]

PER_MEMBER = {
    "ppo": ("seed", "lr", "gamma", "lam", "clip", "vf_coef", "ent_coef", "max_grad_norm",
            "anneal_lr", "anneal_clip", "norm_adv", "target_kl", "vf_clip"),
    "a2c": ("seed", "lr", "gamma", "lam", "vf_coef", "ent_coef", "max_grad_norm", "norm_adv",
            "anneal_lr"),
}


def ppo_sweep(env, params, total_steps: int, members: list[dict], *, rollout: int = 128,
              epochs: int = 4, minibatch: int = 256, dtype=np.float32, **shared):
    """Train ``len(members)`` PPO runs side by side; returns one ``TrainResult`` per member.

    Args:
        env: one vector environment whose ``n`` copies are shared out in order (member ``m``
            owns copies ``m*k .. m*k + k - 1``, ``k = n / S``; reset once with the first
            member's seed), or a list of ``S`` environments, one per member (each reset with
            its member's seed, exactly as ``rc.ppo`` resets its env).
        params: ``S`` initial parameter trees from ``make_actor_critic`` (one per member), or
            one tree for all.
        members: one dict per member: ``seed`` and any of ``rc.ppo``'s ``lr, gamma, lam, clip,
            vf_coef, ent_coef, max_grad_norm, anneal_lr, anneal_clip, norm_adv, target_kl,
            vf_clip``; a setting a member leaves out comes from ``shared``, else from
            ``rc.ppo``'s default.
        rollout, epochs, minibatch, total_steps, dtype: as in ``rc.ppo``, shared by all members.

    The optimiser is ``rc.ppo``'s default, Adam with ``eps=1e-5``. Each result's ``settings``
    are its member's, and its history has ``rc.ppo``'s keys; ``wall_time`` is the whole sweep's.
    """
    return _sweep("ppo", env, params, total_steps, members, rollout, epochs, minibatch, dtype,
                  shared)


def actor_critic_sweep(env, params, total_steps: int, members: list[dict], *, rollout: int = 8,
                       dtype=np.float32, **shared):
    """Train ``len(members)`` A2C runs side by side; returns one ``TrainResult`` per member.

    Arguments as in :func:`ppo_sweep`, with ``rc.actor_critic``'s settings (``seed, lr, gamma,
    lam, vf_coef, ent_coef, max_grad_norm, norm_adv, anneal_lr``) and optimiser (Adam with
    ``eps=1e-8``): one gradient step on each member's whole batch per update.
    """
    return _sweep("a2c", env, params, total_steps, members, rollout, 1, None, dtype, shared)


# ---------------------------------------------------------------- the engine

def _member_settings(kind, total_steps, members, rollout, epochs, minibatch, dtype, shared):
    """Each member's full settings, checked by the single-run trainer's own checks."""
    allowed = PER_MEMBER[kind]
    for key in shared:
        if key not in allowed:
            raise TypeError(f"{key}: not a per-member setting of the {kind} sweep; "
                            f"expected one of {', '.join(allowed)}")
    module = _ppo if kind == "ppo" else _a2c
    fixed = dict(total_steps=total_steps, rollout=rollout, dtype=dtype)
    if kind == "ppo":
        fixed.update(epochs=epochs, minibatch=minibatch)
    return members_settings(members, allowed, module.ppo if kind == "ppo" else module.actor_critic,
                            module._checked_settings, shared, fixed)


def members_settings(members, allowed: tuple, trainer, check, shared: dict, fixed: dict) -> list:
    """For each member dict (a ``seed`` and settings among ``allowed``): the trainer's defaults,
    then ``shared``, then the member's own, plus the ``fixed`` settings of the whole sweep, all
    checked by the trainer's ``check``; an error about a member's setting names the member."""
    if not isinstance(members, (list, tuple)) or not members:
        raise ValueError(f"members: expected a non-empty list of dicts, got {members!r}")
    defaults = {k: v.default for k, v in _signature_defaults(trainer).items() if k in allowed}
    out = []
    for i, member in enumerate(members):
        if not isinstance(member, dict) or "seed" not in member:
            raise ValueError(f"members[{i}]: expected a dict with at least a 'seed', got {member!r}")
        unknown = set(member) - set(allowed)
        if unknown:
            raise TypeError(f"members[{i}]: {', '.join(sorted(unknown))} cannot differ between "
                            f"members; expected keys among {', '.join(allowed)}")
        out.append(checked_member(i, member, check, {**defaults, **shared, **member, **fixed}))
    return out


def member_envs_and_callbacks(envs, callbacks, S: int) -> list:
    """Check ``envs`` (one vector env per member, all with the same ``n``) and ``callbacks``
    (None, or one callback or None per member); returns the callbacks as a list of ``S``."""
    if not isinstance(envs, (list, tuple)) or len(envs) != S:
        raise ValueError(f"envs: expected a list of one env per member ({S}), got "
                         f"{type(envs).__name__}")
    for m, member_env in enumerate(envs):
        check_env(member_env, f"envs[{m}]")
    if any(env.n != envs[0].n for env in envs):
        raise ValueError(f"envs: every member's env must have the same n, got "
                         f"{sorted({env.n for env in envs})}")
    if callbacks is not None and not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks: expected None or a list of one callback per member ({S}), "
                        f"got {type(callbacks).__name__}")
    callbacks = [None] * S if callbacks is None else list(callbacks)
    if len(callbacks) != S:
        raise ValueError(f"callbacks: expected one per member ({S}), got {len(callbacks)}")
    return callbacks


def checked_member(i: int, member: dict, check, settings: dict) -> dict:
    """``check(**settings)``; an error about a setting the member gave names the member."""
    try:
        return check(**settings)
    except (ValueError, TypeError) as err:
        if str(err).split(":")[0] in member:
            raise type(err)(f"members[{i}]: {err}") from None
        raise


def _check_networks(params_list, env, one_tree: bool) -> None:
    """Each tree is make_actor_critic's, for ``env``'s observation size and actions."""
    obs_size = int(np.prod(env.observation_shape))
    for i, tree in enumerate(params_list[:1] if one_tree else params_list):
        name = "params" if one_tree else f"params[{i}]"
        check_params(name, tree)
        try:
            _check_inputs(tree, np.zeros((1, obs_size)))
        except (ValueError, TypeError) as err:
            raise type(err)(f"{name} (for env's observations of size {obs_size}): {err}") from err
        actions = np.shape(tree["actor"][-1]["w"])[-1]
        if actions != env.num_actions or np.shape(tree["critic"][-1]["w"])[-1] != 1:
            raise ValueError(f"{name}: expected an actor with {env.num_actions} outputs "
                             f"(num_actions of env) and a critic with 1, got "
                             f"{actions} and {np.shape(tree['critic'][-1]['w'])[-1]}")


def _signature_defaults(fn):
    import inspect

    return {k: p for k, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


class _Episodes:
    """What a member's :class:`TrainingLog` reads: the returns of its finished episodes."""

    def __init__(self):
        self.episode_returns: list[float] = []


class _EnvList:
    """A list of ``S`` vector envs of ``k`` copies each, stepped as one env of ``S * k``."""

    def __init__(self, envs):
        self.envs = list(envs)
        sizes = {env.n for env in self.envs}
        if len(sizes) != 1:
            raise ValueError(f"env: every member's env must have the same n, got {sorted(sizes)}")
        self.n = sizes.pop() * len(self.envs)
        self.num_actions = self.envs[0].num_actions
        self.observation_shape = self.envs[0].observation_shape

    def reset(self, seeds):
        return np.concatenate([env.reset(seed=s) for env, s in zip(self.envs, seeds)])

    def step(self, actions):
        k = self.envs[0].n
        steps = [env.step(actions[i * k:(i + 1) * k]) for i, env in enumerate(self.envs)]
        return type(steps[0])(*(np.concatenate([np.asarray(getattr(s, f)) for s in steps])
                                for f in steps[0]._fields))


def _stack(params_list, dtype):
    """Stack ``S`` make_actor_critic trees: ``w [S, in, out]``, ``b [S, 1, out]``; returns the
    flat parameters ``theta [S, P]``, the stacked tree of views into it and a function giving
    member ``m``'s own tree (a copy)."""
    first = ad.tree_leaves(params_list[0])
    shapes = [np.shape(leaf) for leaf in first]
    for i, tree in enumerate(params_list):
        if [np.shape(leaf) for leaf in ad.tree_leaves(tree)] != shapes:
            raise ValueError(f"params[{i}]: expected the same network shapes as params[0]")
    theta = np.stack([np.concatenate([np.ravel(np.asarray(leaf, dtype=dtype))
                                      for leaf in ad.tree_leaves(tree)]) for tree in params_list])
    S = len(params_list)
    ends = np.cumsum([int(np.prod(s)) for s in shapes]).tolist()
    bounds = list(zip([0, *ends[:-1]], ends))
    views = [theta[:, a:b].reshape(S, *(shape if len(shape) > 1 else (1, *shape)))
             for (a, b), shape in zip(bounds, shapes)]
    if not all(np.shares_memory(v, theta) for v in views):
        raise RuntimeError("internal: a stacked parameter is not a view of theta")
    leaves = iter(views)
    stacked = ad.tree_map(lambda _: next(leaves), params_list[0])

    def member(m):
        parts = iter([theta[m, a:b].reshape(shape).copy() for (a, b), shape in zip(bounds, shapes)])
        return ad.tree_map(lambda _: next(parts), params_list[0])

    return theta, stacked, member


def _stacked_mlp(stacked, obs, act):
    """``rc.mlp`` on stacked layers (``w [S, in, out]``, ``b [S, 1, out]``): obs ``[S, B, d]``
    -> ``[S, B, out]``, the same operations as ``rc.mlp`` batched over members."""
    x = obs
    for layer in stacked[:-1]:
        x = act(x @ layer["w"] + layer["b"])
    return x @ stacked[-1]["w"] + stacked[-1]["b"]


def _forward(params, obs):
    """make_actor_critic's model on stacked parameters: obs ``[S, B, d]`` -> logits ``[S, B, A]``,
    values ``[S, B]`` (the same operations as ``rc.mlp``, batched over members)."""
    def mlp(layers, x):
        for layer in layers[:-1]:
            x = ad.tanh(x @ layer["w"] + layer["b"])
        return x @ layers[-1]["w"] + layers[-1]["b"]

    values = mlp(params["critic"], obs)
    return mlp(params["actor"], obs), ad.reshape(values, np.shape(values)[:-1])


def _loss(params, kind, obs, actions, old_logp, adv, returns, old_values, lo, hi, clip, vf_coef,
          ent_coef, vf_clip):
    """The sum over members of each member's loss (so each member's gradient is its own)."""
    logits, values = _forward(params, obs)
    logp = categorical_log_prob(logits, actions)
    stats = {}
    if kind == "ppo":
        ratio = ad.exp(logp - old_logp)
        objective = ad.minimum(ratio * adv, ad.clip(ratio, lo, hi) * adv)
        policy = -ad.mean(objective, axis=1)
        r = ad.stop_gradient(ratio)
        stats["approx_kl"] = np.mean(kl_estimate(old_logp, ad.stop_gradient(logp), "k3"), axis=1)
        stats["clip_fraction"] = np.mean(np.abs(r - 1.0) > clip, axis=1)
    else:
        policy = -ad.mean(logp * adv, axis=1)
    squared = ad.square(values - returns)
    if vf_clip is not None:  # members without value clipping have vf_clip = inf: no change
        moved = old_values + ad.clip(values - old_values, -vf_clip, vf_clip)
        squared = ad.maximum(squared, ad.square(moved - returns))
    value = 0.5 * ad.mean(squared, axis=1)
    with_entropy = bool(np.any(ent_coef))
    entropy = ad.mean(categorical_entropy(logits if with_entropy else ad.stop_gradient(logits)),
                      axis=1)
    loss = ad.sum(policy + vf_coef * value - ent_coef * entropy)
    stats.update(policy_loss=ad.stop_gradient(policy), value_loss=ad.stop_gradient(value),
                 entropy=ad.stop_gradient(entropy))
    return loss, stats


@single_thread_blas()
def _sweep(kind, env, params, total_steps, members, rollout, epochs, minibatch, dtype, shared):
    if isinstance(env, (list, tuple)):
        for i, one in enumerate(env):
            check_env(one, f"env[{i}]")
        if not env:
            raise ValueError("env: expected an env or a non-empty list of envs, got []")
    else:
        check_env(env)
    settings = _member_settings(kind, total_steps, members, rollout, epochs, minibatch, dtype,
                                shared)
    S = len(settings)
    dtype = float_dtype("dtype", dtype)
    col = {key: np.array([s[key] for s in settings]) for key in settings[0]
           if key in PER_MEMBER[kind] and key != "seed"}
    if isinstance(env, (list, tuple)):
        if len(env) != S:
            raise ValueError(f"env: expected one env per member ({S}), got {len(env)}")
        env = _EnvList(env)
        reset = lambda: env.reset([s["seed"] for s in settings])  # noqa: E731
    else:
        reset = lambda: env.reset(seed=settings[0]["seed"])  # noqa: E731
    if env.n % S:
        raise ValueError(f"env: its n = {env.n} copies must split evenly among {S} members")
    k = env.n // S
    params_list = list(params) if isinstance(params, (list, tuple)) else [params] * S
    if len(params_list) != S:
        raise ValueError(f"params: expected one tree per member ({S}), got {len(params_list)}")
    _check_networks(params_list, env, not isinstance(params, (list, tuple)))
    theta, stacked, member_params = _stack(params_list, dtype)
    adam_eps = 1e-5 if kind == "ppo" else 1e-8
    b1, b2 = 0.9, 0.999
    m1, m2, t_adam = np.zeros_like(theta), np.zeros_like(theta), np.zeros(S, dtype=np.int64)
    max_norm = np.array([np.inf if s["max_grad_norm"] is None else s["max_grad_norm"]
                         for s in settings])
    rngs = [agent_rng(s["seed"]) for s in settings]
    batch = rollout * k
    minibatch = batch if minibatch is None else minibatch
    num_updates = max(total_steps // batch, 1)
    episodes = [_Episodes() for _ in range(S)]
    logs = [TrainingLog(episodes[m], f"{kind} member {m}", num_updates * batch, False, None,
                        settings[m]) for m in range(S)]
    running = np.zeros(env.n)
    gamma_copies, lam_copies = np.repeat(col["gamma"], k), np.repeat(col["lam"], k)
    vf_clip = None
    if kind == "ppo" and any(s["vf_clip"] is not None for s in settings):
        vf_clip = np.array([np.inf if s["vf_clip"] is None else s["vf_clip"]
                            for s in settings], dtype=dtype)[:, None]
    vf_coef, ent_coef = col["vf_coef"].astype(dtype), col["ent_coef"].astype(dtype)
    loss_and_grad = ad.value_and_grad(_loss)
    obs = np.asarray(reset())
    for update in range(num_updates):
        remaining = 1.0 - update / num_updates
        step_lr = col["lr"] * np.where(col["anneal_lr"], remaining, 1.0)
        step_clip = (col["clip"] * np.where(col["anneal_clip"], remaining, 1.0)
                     if kind == "ppo" else np.zeros(S))
        # 1. One rollout of every member's copies (rc.collect_rollout, batched over members)
        data = _rollout(env, stacked, obs, rollout, rngs, S, k, dtype)
        obs = data["last_obs"]
        for t in range(rollout):
            running += data["rewards_raw"][t]
            for i in np.flatnonzero(data["terminated"][t] | data["truncated"][t]).tolist():
                episodes[i // k].episode_returns.append(float(running[i]))
                running[i] = 0.0
        adv, ret = _gae(data["rewards"], data["values"], data["next_values"], data["terminated"],
                        data["truncated"], gamma_copies, lam_copies)

        # 2. Member-major batches [S, batch], time-major within a member as in rc.ppo
        def per_member(x):
            x = x.reshape(rollout, S, k, *x.shape[2:])
            return np.ascontiguousarray(np.swapaxes(x, 0, 1)).reshape(S, batch, *x.shape[3:])

        b_obs, b_actions, b_logp, b_values, b_adv, b_ret = (
            per_member(x) for x in (data["obs"], data["actions"], data["log_probs"],
                                    data["values"], adv, ret))
        for m in range(S):
            logs[m].record_steps(data["terminated"][:, m * k:(m + 1) * k],
                                 data["truncated"][:, m * k:(m + 1) * k])
        # 3. Epochs of minibatch steps; a member whose KL passed its target sits the rest out
        lo = (1.0 - step_clip).astype(dtype)[:, None]
        hi = (1.0 + step_clip).astype(dtype)[:, None]
        clip_now = step_clip.astype(dtype)[:, None]
        active = np.ones(S, dtype=bool)
        stats = [[] for _ in range(S)]
        epochs_run = np.zeros(S, dtype=np.int64)
        grad_norms = np.zeros(S)
        rows = np.arange(S)[:, None]
        for _ in range(epochs):
            # rc.ppo shuffles every epoch it runs (a stopped member draws nothing); A2C never
            order = np.stack([rng.permutation(batch) if kind == "ppo" and active[m]
                              else np.arange(batch) for m, rng in enumerate(rngs)])
            epoch_stats = [[] for _ in range(S)]
            for start in range(0, batch, minibatch):
                idx = order[:, start:start + minibatch]
                a = b_adv[rows, idx]
                if kind == "ppo" or np.any(col["norm_adv"]):
                    a = np.where(col["norm_adv"][:, None], _standardise_rows(a), a).astype(dtype)
                (_, step_stats), grads = loss_and_grad(
                    stacked, kind, b_obs[rows, idx], b_actions[rows, idx], b_logp[rows, idx], a,
                    b_ret[rows, idx], b_values[rows, idx], lo, hi, clip_now, vf_coef, ent_coef,
                    vf_clip)
                flat = np.concatenate([np.reshape(g, (S, -1)) for g in ad.tree_leaves(grads)],
                                      axis=1).astype(dtype, copy=False)
                grad_norms = np.sqrt(np.sum(np.square(flat, dtype=np.float64), axis=1))
                over = grad_norms > max_norm
                if over.any():
                    scale = np.where(over, max_norm / np.where(over, grad_norms, 1.0), 1.0)
                    flat = (flat * scale.astype(dtype)[:, None]).astype(dtype)
                _adam(theta, flat, m1, m2, t_adam, active, step_lr, adam_eps, b1, b2, dtype)
                for m in np.flatnonzero(active).tolist():
                    epoch_stats[m].append({key: float(v[m]) for key, v in step_stats.items()})
            for m in np.flatnonzero(active).tolist():
                stats[m].extend(epoch_stats[m])
                epochs_run[m] += 1
                target = settings[m].get("target_kl")
                if target is not None and average(epoch_stats[m])["approx_kl"] > target:
                    active[m] = False
            if not active.any():
                break
        for m in range(S):
            diagnostics = average(stats[m])
            ev = explained_variance(b_values[m], b_ret[m])
            if kind == "ppo":
                order_keys = ("policy_loss", "value_loss", "entropy", "approx_kl",
                              "clip_fraction")
                logs[m].end_update(None, last=update == num_updates - 1,
                                   **{key: diagnostics[key] for key in order_keys},
                                   explained_variance=ev, epochs=int(epochs_run[m]),
                                   lr=float(step_lr[m]), clip=float(step_clip[m]))
            else:
                logs[m].end_update(None, last=update == num_updates - 1,
                                   **{key: diagnostics[key] for key in
                                      ("policy_loss", "value_loss", "entropy")},
                                   grad_norm=float(grad_norms[m]), lr=float(step_lr[m]),
                                   explained_variance=ev)
    return [logs[m].result(member_params(m)) for m in range(S)]


def _standardise_rows(x):
    """Each row to zero mean and unit standard deviation, as ``trainer.standardise`` does."""
    if x.shape[1] <= 1:
        return x
    return (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-8)


def _adam(theta, grads, m1, m2, t, active, lr, eps, b1, b2, dtype, step_dtype=None):
    """``rc.Adam``'s step (bias corrections folded into the step size) for each active row.

    ``step_dtype=np.float64`` computes the step as ``rc.Adam`` does, bit for bit (its step size
    is a float64 scalar); the default rounds the step size to ``dtype`` first (1 ulp apart)."""
    if not np.isfinite(grads).all():
        raise ValueError("grads: NaN or inf in a member's gradients; the update would destroy "
                         "its parameters")
    t_new = t + 1
    step_dtype = dtype if step_dtype is None else step_dtype
    step_size = (lr * np.sqrt(1 - b2**t_new) / (1 - b1**t_new)).astype(step_dtype)[:, None]
    eps_hat = (eps * np.sqrt(1 - b2**t_new)).astype(step_dtype)[:, None]
    if active.all():  # the usual case: no member has stopped early
        _adam_in_place(theta, m1, m2, grads, step_size, eps_hat, b1, b2)
        t[...] = t_new
        return
    new_theta, new_m1, new_m2 = theta.copy(), m1.copy(), m2.copy()
    _adam_in_place(new_theta, new_m1, new_m2, grads, step_size, eps_hat, b1, b2)
    rows = active[:, None]
    theta[...] = np.where(rows, new_theta, theta)
    m1[...] = np.where(rows, new_m1, m1)
    m2[...] = np.where(rows, new_m2, m2)
    t[...] = np.where(active, t_new, t)


def _adam_in_place(theta, m1, m2, grads, step_size, eps_hat, b1, b2):
    """One Adam step of every row, in place: ``m1 = b1 m1 + (1 - b1) g``, ``m2 = b2 m2 +
    (1 - b2) g^2``, ``theta -= step_size m1 / (sqrt(m2) + eps_hat)`` (the change computed in
    ``step_size``'s dtype, then rounded into ``theta``'s)."""
    m1 *= b1
    m1 += (1 - b1) * grads
    squared = grads * grads
    squared *= 1 - b2
    m2 *= b2
    m2 += squared
    change = step_size * m1
    change /= np.sqrt(m2) + eps_hat
    theta[...] = theta - change


def _rollout(env, stacked, obs, steps, rngs, S, k, dtype):
    """``rc.collect_rollout`` for every member at once: arrays ``[T, S * k]``."""
    n = env.n
    obs_buf = np.empty((steps, *np.shape(obs)), dtype=dtype)
    actions = np.empty((steps, n), dtype=np.int64)
    log_probs = np.empty((steps, n), dtype=dtype)
    values = np.empty((steps + 1, n), dtype=dtype)
    rewards = np.empty((steps, n), dtype=dtype)
    rewards_raw = np.empty((steps, n))
    terminated = np.empty((steps, n), dtype=bool)
    truncated = np.empty((steps, n), dtype=bool)
    patches = []

    def value_of(x):
        _, v = _forward(stacked, np.asarray(x, dtype=dtype).reshape(S, k, -1))
        return np.asarray(v, dtype=dtype).reshape(n)

    for t in range(steps):
        obs_buf[t] = obs
        logits, v = _forward(stacked, obs_buf[t].reshape(S, k, -1))
        if not np.isfinite(logits).all():
            bad = sorted({int(i) // k for i in np.flatnonzero(~np.isfinite(logits).all(-1))})
            raise ValueError(f"logits: NaN or inf in the policy of member(s) {bad}: the "
                             f"network diverged")
        # categorical_sample, one generator per member: the same draws as rc.ppo's
        probs = ad.softmax(np.asarray(logits))
        cdf = np.cumsum(probs, axis=-1)
        u = np.stack([rng.random(k) for rng in rngs]) * cdf[..., -1]
        picked = np.minimum((u[..., None] >= cdf).sum(axis=-1), probs.shape[-1] - 1)
        actions[t] = picked.reshape(n)
        log_probs[t] = np.asarray(categorical_log_prob(logits, picked)).reshape(n)
        values[t] = np.asarray(v).reshape(n)
        step = env.step(actions[t])
        rewards_raw[t] = step.reward
        rewards[t], terminated[t], truncated[t] = step.reward, step.terminated, step.truncated
        cut = np.flatnonzero(step.truncated & ~step.terminated)
        if cut.size:
            patches.append((t, cut, value_of(step.final_obs)[cut]))
        obs = np.asarray(step.obs)
    values[steps] = value_of(obs)
    next_values = values[1:].copy()
    next_values[terminated] = 0.0
    for t, cut, v in patches:
        next_values[t, cut] = v
    return dict(obs=obs_buf, actions=actions, log_probs=log_probs, values=values[:-1],
                rewards=rewards, rewards_raw=rewards_raw, terminated=terminated,
                truncated=truncated, next_values=next_values, last_obs=obs)
