"""Many DQN runs side by side: one batched network pass serves every run.

DQN on a small network spends most of its time in Python overhead: each gradient step is a
few dozen numpy calls on a minibatch of 64, whatever the network computes. Here ``S`` runs
(*members*) advance in lockstep: one environment step for all of them, one stacked forward
pass to act (``[S, n, d] @ [S, d, h]``), and per gradient step one forward and backward pass
of the stacked networks on every member's own minibatch. Each member keeps its own seed and
random stream, initial parameters, replay buffer, epsilon schedule, Adam state, learning rate
and its annealing, gradient clipping, target network and target period, and Double or plain
targets, so each is the run :func:`~rlcourse.algos.dqn.dqn` makes with the same settings:
``tests/test_sweep.py`` checks this against single runs, update by update.

Members differ in the settings listed in ``DQN_PER_MEMBER``; the timing of the loop
(``total_steps``, ``batch_size``, ``learning_starts``, ``train_freq``, ``gradient_steps``)
is shared, so every member trains at the same steps. The network is an MLP from
:func:`~rlcourse.core.nn.mlp_init` applied as :func:`~rlcourse.core.nn.mlp` with
``activation`` (the same sizes for every member).
"""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import agent_rng
from ..core.blas import single_thread_blas
from ..core.heap import keep_freed_memory
from ..core.losses import huber
from ..core.nn import mlp
from ..core.optim import linear_schedule
from . import dqn as _dqn
from .sweep import _adam, _stack, _stacked_mlp, member_envs_and_callbacks, members_settings
from .trainer import TrainingLog, model_output

__all__ = ["dqn_sweep"]

DQN_PER_MEMBER = ("seed", "lr", "gamma", "buffer_size", "target_update", "tau", "epsilon_start",
                  "epsilon_end", "exploration_fraction", "double", "max_grad_norm", "anneal_lr")
_SHARED = ("batch_size", "learning_starts", "train_freq", "gradient_steps")


@single_thread_blas()
def dqn_sweep(envs, params, total_steps: int, members: list[dict], *, activation: str = "relu",
              batch_size: int = 64, learning_starts: int = 1_000, train_freq: int = 256,
              gradient_steps: int = 128, dtype=np.float32, callbacks=None, **shared):
    """Train ``len(members)`` DQN runs side by side; returns one ``TrainResult`` per member.

    Args:
        envs: one vector environment per member, all with the same ``n``; member ``m``'s is
            reset with its seed, exactly as ``rc.dqn`` resets its env.
        params: one :func:`~rlcourse.core.nn.mlp_init` tree per member (all the same sizes),
            or one tree for all; the network is ``rc.mlp(params, obs, activation)``.
        total_steps, batch_size, learning_starts, train_freq, gradient_steps, dtype: as in
            ``rc.dqn``, shared by all members.
        members: one dict per member: ``seed`` and any of ``rc.dqn``'s ``lr, gamma,
            buffer_size, target_update, tau, epsilon_start, epsilon_end, exploration_fraction,
            double, max_grad_norm, anneal_lr``; a setting a member leaves out comes from
            ``shared`` (the other keyword arguments, e.g. ``**rc.DQN_CARTPOLE``), else from
            ``rc.dqn``'s default.
        callbacks: None, or one callback per member (each None or a function), called as
            ``rc.dqn`` calls its callback, with the same ``info``. A callback that returns
            False (asks to stop) raises an error: the members move in lockstep, so one cannot
            stop early (with ``rc.dqn`` it could).

    The optimiser is ``rc.dqn``'s default, Adam with ``eps=1e-8``. Each result's ``settings``
    are its member's; its history has ``rc.dqn``'s keys, and ``extras["target_params"]`` its
    target network; ``wall_time`` is the whole sweep's.
    """
    settings = _member_settings(total_steps, members, batch_size, learning_starts, train_freq,
                                gradient_steps, dtype, shared)
    S = len(settings)
    if activation not in _ACTIVATIONS_BY_HAND:
        raise ValueError(f"activation: expected one of {sorted(_ACTIVATIONS_BY_HAND)}, got "
                         f"{activation!r}")
    act = _ACTIVATIONS_BY_HAND[activation][0]
    callbacks = member_envs_and_callbacks(envs, callbacks, S)
    k, num_actions, obs_shape = envs[0].n, envs[0].num_actions, envs[0].observation_shape
    params_list = list(params) if isinstance(params, (list, tuple)) and \
        isinstance(params[0], (list, tuple)) else [params] * S
    if len(params_list) != S:
        raise ValueError(f"params: expected one tree per member ({S}), got {len(params_list)}")
    dtype = np.dtype(dtype)
    probe = np.zeros((1, *obs_shape), dtype=dtype)
    for m, tree in enumerate(params_list):
        model_output(lambda p, obs: mlp(p, obs, activation), tree, probe, "q", num_actions,
                     f"envs[{m}]'s observations")
    keep_freed_memory()  # the float64 Adam temporaries: reuse freed memory, no page faults
    theta, stacked, member_params = _stack(params_list, dtype)
    target_theta, target_stacked, target_member = _stack(params_list, dtype)
    m1, m2, t_adam = np.zeros_like(theta), np.zeros_like(theta), np.zeros(S, dtype=np.int64)
    everyone = np.ones(S, dtype=bool)
    col = {key: [s[key] for s in settings] for key in DQN_PER_MEMBER}
    max_norm = np.array([np.inf if v is None else v for v in col["max_grad_norm"]])
    double, gamma = np.array(col["double"]), np.array(col["gamma"], dtype=dtype)[:, None]
    rngs = [agent_rng(s["seed"]) for s in settings]
    epsilons = [linear_schedule(s["epsilon_start"], s["epsilon_end"],
                                max(1, int(s["exploration_fraction"] * total_steps)))
                for s in settings]
    buffers = [_dqn.ReplayBuffer(min(s["buffer_size"], total_steps), obs_shape, dtype)
               for s in settings]
    logs = [TrainingLog(envs[m], f"dqn member {m}", total_steps, False, callbacks[m],
                        settings[m]) for m in range(S)]

    obs = np.concatenate([np.asarray(e.reset(seed=s["seed"]), dtype=dtype)
                          for e, s in zip(envs, settings)])
    q = _stacked_mlp(stacked, obs.reshape(S, k, -1), act)
    if q.shape != (S, k, num_actions):
        raise ValueError(f"params: expected Q-values of shape {(k, num_actions)} per member "
                         f"([n, num_actions]), got {q.shape[1:]}")
    step, gradient_step = 0, 0
    next_train, next_update = max(learning_starts, train_freq), train_freq
    losses, q_means = [], []
    phase_lr = np.array(col["lr"], dtype=np.float64)
    explore = np.zeros((S, k), dtype=bool)
    member_rows = [slice(m * k, (m + 1) * k) for m in range(S)]
    random_actions = np.zeros((S, k), dtype=np.int64)
    # picks [member, row, action] out of [S, batch_size, num_actions] arrays
    pick = (np.arange(S)[:, None], np.arange(batch_size)[None, :])
    phase_diffs = np.zeros((gradient_steps, S, batch_size), dtype=dtype)
    phase_q_taken = np.zeros((gradient_steps, S, batch_size), dtype=dtype)
    while step < total_steps:
        # Act: each member draws from its own stream exactly as rc.dqn does. With one copy the
        # draws are scalars: the same numbers from the stream as size=1, for a third of the cost.
        for m, (rng, eps) in enumerate(zip(rngs, epsilons)):
            if k == 1:
                explore[m, 0] = rng.random() < eps(step)
                random_actions[m, 0] = rng.integers(0, num_actions)
            else:
                explore[m] = rng.random(k) < eps(step)
                random_actions[m] = rng.integers(0, num_actions, size=k)
        greedy = np.argmax(_stacked_mlp(stacked, obs.reshape(S, k, -1), act), axis=2)
        actions = np.where(explore, random_actions, greedy).reshape(S * k)
        outs = [member_env.step(actions[rows]) for member_env, rows in zip(envs, member_rows)]
        for m, (out, rows) in enumerate(zip(outs, member_rows)):
            buffers[m].add(obs[rows], actions[rows], out.reward, out.final_obs, out.terminated)
            logs[m].record_steps(out.terminated, out.truncated)
        obs = np.concatenate([out.obs for out in outs])
        obs = obs if obs.dtype == dtype else obs.astype(dtype)
        step += k
        if step >= next_train:
            next_train += train_freq
            phase_lr = np.array([s["lr"] * (1.0 - (step - train_freq) / total_steps)
                                 if s["anneal_lr"] else s["lr"] for s in settings])
            # Each member's minibatches for the whole phase (rc.dqn draws them up front too).
            phase = [b.batch(b.sample_indices(rng, (gradient_steps, batch_size)))
                     for b, rng in zip(buffers, rngs)]
            b_obs, b_actions, b_rewards, b_next, b_term = (np.stack(x, axis=1) for x in zip(*phase))
            for g in range(gradient_steps):
                next_online = _stacked_mlp(stacked, b_next[g], act)
                next_target = _stacked_mlp(target_stacked, b_next[g], act)
                best = np.where(double[:, None], np.argmax(next_online, axis=2),
                                np.argmax(next_target, axis=2))
                next_value = next_target[(*pick, best)]
                targets = (b_rewards[g] + gamma * np.where(b_term[g], 0.0, next_value)
                           ).astype(dtype, copy=False)
                grads = _loss_and_grads(stacked, b_obs[g], b_actions[g], targets, activation,
                                        pick, phase_diffs[g], phase_q_taken[g])
                flat = np.concatenate([np.reshape(x, (S, -1)) for x in ad.tree_leaves(grads)],
                                      axis=1).astype(dtype, copy=False)
                _clip_rows(flat, max_norm, dtype)
                _adam(theta, flat, m1, m2, t_adam, everyone, phase_lr, 1e-8, 0.9, 0.999, dtype,
                      step_dtype=np.float64)
                gradient_step += 1
                for m, s in enumerate(settings):
                    if gradient_step % s["target_update"] == 0:
                        target_theta[m] = theta[m] if s["tau"] == 1.0 else \
                            (1 - s["tau"]) * target_theta[m] + s["tau"] * theta[m]
            # each gradient step's mean loss and mean Q per member, as rc.dqn logs them
            losses.extend(np.mean(huber(phase_diffs, 1.0), axis=2).astype(np.float64))
            q_means.extend(np.mean(phase_q_taken, axis=2).astype(np.float64))
        if step >= next_update or step >= total_steps:
            next_update += train_freq
            for m in range(S):
                keep_going = logs[m].end_update(
                    member_params(m) if callbacks[m] is not None else None,
                    last=step >= total_steps, epsilon=epsilons[m](step),
                    lr=float(phase_lr[m]) if losses else settings[m]["lr"],
                    loss=np.mean([x[m] for x in losses]) if losses else np.nan,
                    q_mean=np.mean([x[m] for x in q_means]) if q_means else np.nan)
                if not keep_going:
                    raise ValueError(f"callbacks[{m}]: asked to stop at step {step}, but the "
                                     f"members of a sweep move in lockstep and cannot stop "
                                     f"early; train this member with rc.dqn instead")
            losses, q_means = [], []
    return [logs[m].result(member_params(m), target_params=target_member(m)) for m in range(S)]


def _member_settings(total_steps, members, batch_size, learning_starts, train_freq,
                     gradient_steps, dtype, shared) -> list[dict]:
    """Each member's full settings, checked by ``rc.dqn``'s own checks."""
    for key in shared:
        if key in _SHARED:
            raise TypeError(f"{key}: passed twice")
        if key not in DQN_PER_MEMBER:
            raise TypeError(f"{key}: not a setting of the DQN sweep; expected one of "
                            f"{', '.join(DQN_PER_MEMBER + _SHARED)}")
    fixed = dict(total_steps=total_steps, batch_size=batch_size, learning_starts=learning_starts,
                 train_freq=train_freq, gradient_steps=gradient_steps, dtype=dtype)
    return members_settings(members, DQN_PER_MEMBER, _dqn.dqn, _dqn._checked_settings, shared,
                            fixed)


# Each activation as autodiff's relu and tanh compute it on arrays, and g times its derivative as
# their backward pass writes it (input z, output y); dqn_sweep refuses an activation not listed.
_ACTIVATIONS_BY_HAND = {
    "relu": (lambda v: np.maximum(v, 0), lambda g, z, y: g * (z > 0)),
    "tanh": (np.tanh, lambda g, z, y: g * (1 - y * y)),
}


def _loss_and_grads(stacked, obs, actions, targets, activation: str, pick, diff, q_taken):
    """The gradient of each member's ``rc.dqn_loss`` (mean Huber, delta 1), written out: the
    same numpy operations, in the same order, as the autodiff pass over the stacked networks (so
    the same bits as ``rc.dqn``), without its bookkeeping, which costs more than the arithmetic
    at these sizes. Writes the TD errors into ``diff [S, B]`` and the Q-values of the actions
    taken into ``q_taken [S, B]``; ``pick`` indexes ``[S, B, A]`` arrays by member and row."""
    act, derivative = _ACTIVATIONS_BY_HAND[activation]
    inputs, pre = [obs], []
    x = obs
    for layer in stacked[:-1]:
        z = x @ layer["w"] + layer["b"]
        x = act(z)
        pre.append(z)
        inputs.append(x)
    q = x @ stacked[-1]["w"] + stacked[-1]["b"]
    q_taken[...] = q[(*pick, actions)]
    np.subtract(q_taken, targets, out=diff)
    # d mean(huber(diff)) / d diff = clip(diff, -1, 1) / B, to the bit as autodiff takes it
    per_row = np.ones(1, dtype=q.dtype) / diff.shape[1]
    g = np.zeros_like(q)
    g[(*pick, actions)] = np.clip(diff, -1.0, 1.0) * per_row
    grads = [None] * len(stacked)
    for i in range(len(stacked) - 1, -1, -1):
        grads[i] = {"w": np.swapaxes(inputs[i], -1, -2) @ g, "b": g.sum(axis=(1,), keepdims=True)}
        if i:
            g = g @ np.swapaxes(stacked[i]["w"], -1, -2)
            g = derivative(g, pre[i - 1], inputs[i])
    return grads


def _clip_rows(flat, max_norm, dtype):
    """Each member's gradient ``flat [S, P]`` scaled to global norm at most its
    ``max_grad_norm``, in place (the norm of the flat vector, as ``rc.dqn``'s learner takes it)."""
    norms = np.sqrt(np.sum(np.square(flat, dtype=np.float64), axis=1))
    if not np.isfinite(norms).all():
        raise ValueError("grads: NaN or inf in a member's gradients; the update would destroy "
                         "its parameters")
    over = norms > max_norm
    if over.any():
        scale = np.where(over, max_norm / np.where(over, norms, 1.0), 1.0)
        flat[...] = (flat * scale.astype(dtype)[:, None]).astype(dtype)
