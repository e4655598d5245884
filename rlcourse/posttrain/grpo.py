"""GRPO on the tiny language model: a group of samples per prompt, rewards from a verifier,
group-relative advantages and no critic."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import autodiff as ad
from ..core._checks import as_rng, check_count
from ..core.blas import single_thread_blas
from ..core.heap import keep_freed_memory
from ..core.kl import exact_kl
from ..core.losses import grpo_advantages, grpo_loss
from ..core.optim import Adam
from .rollout import policy_token_log_probs, rollout_rewards, sample_rollout

__all__ = ["GRPOHistory", "grpo_step", "grpo_train"]


class GRPOHistory(NamedTuple):
    """What ``grpo_train`` returns: the final ``params`` and, per iteration, ``reward`` (mean
    reward of the sampled completions), ``kl`` (mean exact ``KL(pi || ref)`` per completion,
    nats), ``length`` (mean completion length in tokens), ``clip_fraction`` and ``approx_kl``
    (of the last epoch) and ``solved`` (fraction of groups with at least one nonzero advantage,
    i.e. whose rewards were not all equal: the only groups that teach anything)."""

    params: dict
    reward: np.ndarray
    kl: np.ndarray
    length: np.ndarray
    clip_fraction: np.ndarray
    approx_kl: np.ndarray
    solved: np.ndarray


def grpo_step(policy, ref, reward_fn, prompts, rng: np.random.Generator, opt, opt_state,
              group_size: int = 8, kl_coef: float = 0.04, max_new: int = 4, epochs: int = 1,
              clip: float = 0.2, aggregate: str = "token"):
    """One GRPO iteration on the tiny LM: a group of samples per prompt, verifier rewards,
    group-relative advantages, then ``epochs`` Adam steps on ``grpo_loss``.

    ``prompts`` ``[N, P]`` (left-padded ``Tokenizer.encode_prompts``): each row is repeated
    ``group_size`` times and sampled from ``policy``; ``reward_fn(tokens, mask) -> [N*G]`` scores
    the completions (a verifier: 1 right, 0 wrong). No critic: a completion's advantage is its
    reward against its own group's. Only completion tokens enter the loss. Returns
    ``(policy, opt_state, stats)``, ``stats`` a dict with the rollout (``tokens``, ``mask``,
    ``rewards``, ``advantages``) and the figures ``GRPOHistory`` records.
    """
    epochs = check_count("epochs", epochs)
    group = np.repeat(np.asarray(prompts), group_size, axis=0)
    data = sample_rollout(policy, ref, group, max_new, rng)
    rewards = rollout_rewards(reward_fn, data)
    advantages = grpo_advantages(rewards, group_size)

    def loss_fn(params):
        logp = policy_token_log_probs(params, data.tokens)
        return grpo_loss(logp, data.old_logp, data.ref_logp, advantages, data.action, clip,
                         kl_coef, aggregate)

    step = ad.value_and_grad(loss_fn)
    for _ in range(epochs):
        (_, _, _, clip_fraction, approx_kl), grads = step(policy)
        policy, opt_state = opt.step(policy, grads, opt_state)
    stats = {
        "tokens": data.tokens, "mask": data.mask, "rewards": rewards, "advantages": advantages,
        "reward": float(rewards.mean()),
        "kl": float(exact_kl(data.old_logits, data.ref_logits, data.mask).mean()),
        "length": float(data.action.sum(axis=1).mean()),
        "clip_fraction": clip_fraction, "approx_kl": approx_kl,
        "solved": float(np.mean(np.ptp(rewards.reshape(-1, group_size), axis=1) > 0)),
    }
    return policy, opt_state, stats


@single_thread_blas()
def grpo_train(policy, ref, reward_fn, prompts, iterations: int, group_size: int = 8,
               prompts_per_step: int = 16, kl_coef: float = 0.04, lr: float = 5e-3, seed=0,
               max_new: int = 4, epochs: int = 1, clip: float = 0.2,
               aggregate: str = "token") -> GRPOHistory:
    """``iterations`` of ``grpo_step``, each on ``prompts_per_step`` prompts drawn without
    replacement from ``prompts`` ``[N, P]``, ``group_size`` samples each.

    ``ref`` stays frozen (usually the SFT model ``policy`` starts from). Deterministic given
    ``seed``.
    """
    prompts = np.asarray(prompts)
    check_count("iterations", iterations)
    if prompts.ndim != 2 or len(prompts) == 0:
        raise ValueError(f"prompts: expected token ids [N, P] with N >= 1, got shape {prompts.shape}")
    rng = as_rng(seed)
    keep_freed_memory()  # the model's 0.25-4 MB activations: reuse freed memory, no page faults
    opt = Adam(lr=lr)
    state = opt.init(policy)
    keys = ("reward", "kl", "length", "clip_fraction", "approx_kl", "solved")
    history = {k: np.empty(iterations) for k in keys}
    for i in range(iterations):
        rows = rng.choice(len(prompts), size=min(prompts_per_step, len(prompts)), replace=False)
        policy, state, stats = grpo_step(policy, ref, reward_fn, prompts[rows], rng, opt, state,
                                         group_size, kl_coef, max_new, epochs, clip, aggregate)
        for k in keys:
            history[k][i] = stats[k]
    return GRPOHistory(policy, *(history[k] for k in keys))
