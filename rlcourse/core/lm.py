"""The course's language model: a tiny causal transformer, its log-probs and sampling from it.

The model is :mod:`rlcourse.core.transformer` (GPT-2's architecture in numpy); this module is
the API the lessons and the post-training trainers use. ``lm_logits(params, tokens)[:, t]``
predicts ``tokens[:, t+1]`` from ``tokens[:, :t+1]`` only, and ``PAD`` tokens are invisible, so a
prompt left-padded with ``PAD`` gets the logits of the unpadded prompt.
"""

from __future__ import annotations

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, check_count, check_nonnegative, check_probability, check_shape
from .blas import single_thread_blas
from .sampling import sample_token
from .tokenizer import EOS, PAD
from .tokens import completion_mask, sequence_log_prob, token_log_probs
from .transformer import (
    _check_context,
    _check_tokens,
    _decode,
    _prefill,
    transformer_config,
    transformer_init,
    transformer_logits,
    transformer_prefill,
)

__all__ = ["lm_init", "lm_logits", "lm_next_logits", "lm_nll", "completion_log_prob", "generate"]


def lm_init(vocab: int, context: int = 16, dim: int = 32, seed=0, heads: int = 4, layers: int = 2,
            hidden: int | None = None, dtype=np.float32) -> dict:
    """A causal transformer for a vocabulary of ``vocab`` tokens (``transformer_init``).

    ``context`` is the most real (non-``PAD``) tokens a row may hold, prompt and completion
    together; ``dim`` the width, split into ``heads`` heads; ``layers`` blocks; ``hidden`` the MLP
    width (default ``4 * dim``). The defaults suit the course's toy tasks (about 25k parameters).
    """
    return transformer_init(vocab, context, dim, heads, layers, seed=seed, hidden=hidden, dtype=dtype)


def lm_logits(params, tokens):
    """Next-token logits ``[B, L, V]`` for ``tokens`` ``[B, L]``.

    ``logits[:, t]`` is the model's prediction of ``tokens[:, t+1]`` from ``tokens[:, :t+1]``;
    the prediction at the last position is of the token after the sequence. To score a
    sequence use ``logits[:, :-1]`` against ``tokens[:, 1:]``.
    """
    return transformer_logits(params, tokens)


def lm_next_logits(params, tokens):
    """Logits ``[B, V]`` of the token that follows ``tokens`` ``[B, L]`` (``lm_logits(...)[:, -1]``)."""
    return _prefill(params, tokens, 0, "tokens")[0]


def completion_log_prob(params, tokens, mask):
    """``log pi(completion | prompt)`` ``[B]`` under the model: the sum over ``mask[:, 1:]``."""
    return sequence_log_prob(lm_logits(params, tokens)[:, :-1], tokens, mask)


def lm_nll(params, tokens, mask):
    """Mean negative log-likelihood per counted token (``mask[:, 1:]``): a scalar, in nats."""
    mask = as_bool_array("mask", mask)
    lp = token_log_probs(lm_logits(params, tokens)[:, :-1], tokens)
    check_shape("mask", mask, np.shape(tokens), "tokens")
    counted = mask[:, 1:]
    if not counted.any():
        raise ValueError("mask: no position is True in mask[:, 1:]; there is nothing to fit")
    # a Python int keeps float32 float32 (a numpy int64 would promote the whole backward pass)
    return -ad.sum(ad.where(counted, lp, 0.0)) / int(counted.sum())


@single_thread_blas()
def generate(params, prompts, max_new: int, rng: np.random.Generator, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, eos: int = EOS):
    """Sample up to ``max_new`` tokens after each prompt: ``(tokens [B, P+max_new], mask)``.

    ``prompts`` ``[B, P]`` (left-padded, see ``Tokenizer.encode_prompts``). Each row samples
    from ``sample_token(logits, rng, temperature, top_k, top_p)`` until it draws ``eos``; later
    columns hold ``PAD``. ``mask`` ``[B, P+max_new]`` is True on the sampled tokens (``eos``
    included): the actions a policy-gradient loss is computed on. With ``temperature=1`` and no
    filtering, the tokens are drawn from exactly the distribution ``lm_logits`` scores. The
    prompts run once; each new token then runs alone against a cache of the earlier tokens'
    keys and values (``transformer_decode``). Raises unless the longest prompt (in real
    tokens) plus ``max_new`` fits the model's context.
    """
    config = transformer_config(params)
    prompts = _check_tokens(prompts, config.vocab, "prompts")
    max_new = check_count("max_new", max_new)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    check_nonnegative("temperature", temperature, positive=True)
    if top_k is not None:
        check_count("top_k", top_k)
    if top_p is not None and check_probability("top_p", top_p) == 0.0:
        raise ValueError("top_p: expected a number in (0, 1], got 0.0")
    if check_count("eos", eos, low=0) >= config.vocab:
        raise ValueError(f"eos: expected a token id below the vocabulary size {config.vocab}, got {eos}")
    _check_context("prompts", int((prompts != PAD).sum(axis=1).max()) + max_new, config.context,
                   f"a prompt plus max_new={max_new} sampled tokens could reach")
    batch, prompt_len = prompts.shape
    tokens = np.concatenate([prompts, np.full((batch, max_new), PAD, dtype=prompts.dtype)], axis=1)
    done = np.zeros(batch, dtype=bool)
    logits, cache = transformer_prefill(params, prompts, max_new - 1)
    for t in range(prompt_len, prompt_len + max_new):
        nxt = np.asarray(sample_token(logits, rng, temperature, top_k, top_p))
        tokens[:, t] = np.where(done, PAD, nxt)
        done |= nxt == eos
        if done.all() or t == prompt_len + max_new - 1:
            break
        logits = _decode(params, cache, tokens[:, t], config)
    return tokens, completion_mask(tokens, prompt_len, eos)
