"""A batch of completions sampled from the policy, with the log-probs the post-training losses need.

RLHF and GRPO start every iteration the same way: sample completions of the prompts from the
current policy, then score every sampled token under that policy (the "old" log-probs the PPO
ratio divides by) and under the frozen reference (for the KL). Shapes follow
:mod:`rlcourse.core.tokens`: sequences ``[B, L]``, per-token arrays ``[B, L-1]`` aligned with
``tokens[:, 1:]`` and the action mask ``mask[:, 1:]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..core._checks import as_bool_array, check_shape
from ..core.lm import generate, lm_logits
from ..core.tokens import token_log_probs
from ._inputs import (
    call_scorer,
    check_model,
    check_models,
    check_prompts,
    check_rng,
    check_scorer,
    check_token_ids,
)

__all__ = ["TokenRollout", "sample_rollout", "policy_token_log_probs", "rollout_rewards"]


class TokenRollout(NamedTuple):
    """``tokens``, ``mask`` ``[B, L]`` as ``generate`` returns them; ``action = mask[:, 1:]``;
    ``old_logits``/``ref_logits`` ``[B, L-1, V]`` of the sampling policy and the reference;
    ``old_logp``/``ref_logp`` ``[B, L-1]``, the log-probs of the sampled tokens under each."""

    tokens: np.ndarray
    mask: np.ndarray
    action: np.ndarray
    old_logits: np.ndarray
    ref_logits: np.ndarray
    old_logp: np.ndarray
    ref_logp: np.ndarray


def policy_token_log_probs(params, tokens):
    """``log pi(tokens[:, t+1] | tokens[:, :t+1])`` under the model ``params``: ``[B, L-1]``
    (traced when ``params`` is)."""
    tokens = check_token_ids("tokens", tokens, check_model("params", params), "params")
    return token_log_probs(lm_logits(params, tokens)[:, :-1], tokens)


def sample_rollout(policy, ref, prompts, max_new: int, rng: np.random.Generator) -> TokenRollout:
    """Sample one completion per row of ``prompts`` ``[B, P]`` from ``policy`` and score its tokens
    under ``policy`` and the frozen ``ref``."""
    prompts, max_new = check_prompts(prompts, max_new, check_models(policy=policy, ref=ref))
    check_rng(rng)
    tokens, mask = generate(policy, prompts, max_new, rng)
    old_logits = lm_logits(policy, tokens)[:, :-1]
    ref_logits = lm_logits(ref, tokens)[:, :-1]
    return TokenRollout(tokens, mask, mask[:, 1:], old_logits, ref_logits,
                        token_log_probs(old_logits, tokens), token_log_probs(ref_logits, tokens))


def rollout_rewards(reward_fn: Callable, rollout: TokenRollout) -> np.ndarray:
    """``reward_fn(tokens, mask)`` checked to be one finite number per completion: ``[B]``."""
    check_scorer("reward_fn", reward_fn)
    if not isinstance(rollout, TokenRollout):
        raise TypeError(f"rollout: expected a TokenRollout from sample_rollout, got {type(rollout).__name__}")
    check_shape("rollout.mask", as_bool_array("rollout.mask", rollout.mask), np.shape(rollout.tokens),
                "rollout.tokens")
    return call_scorer("reward_fn", reward_fn, rollout.tokens, rollout.mask)
