"""A tiny causal language model in numpy: the model, its log-probs and sampling from it.

The model reads a fixed window of the last ``context`` tokens: each token is embedded
(``embed`` ``[V, D]``), the ``context`` embeddings are concatenated and pass through one tanh
layer and a linear head to next-token logits. ``lm_logits(params, tokens)[:, t]`` depends on
``tokens[:, t-context+1 : t+1]`` only (causal), and predicts ``tokens[:, t+1]``. Positions
before the start of a sequence read as ``PAD``, so a prompt left-padded with ``PAD`` gets
exactly the logits of the unpadded prompt.
"""

from __future__ import annotations

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_int_array, as_rng, check_shape
from .blas import single_thread_blas
from .nn import linear_init
from .sampling import sample_token
from .tokenizer import EOS, PAD
from .tokens import completion_mask, sequence_log_prob, token_log_probs

__all__ = ["lm_init", "lm_logits", "lm_next_logits", "lm_nll", "completion_log_prob", "generate"]


def lm_init(vocab: int, context: int, dim: int, seed=0, hidden: int = 128, dtype=np.float32) -> dict:
    """Parameters ``{"embed": [V, D], "hidden": {"w": [C*D, H], "b"}, "out": {"w": [H, V], "b"}}``.

    The context length is read back from the shapes (``C = hidden.w.shape[0] // D``), so the
    tree holds arrays only. The head starts small (gain 0.1): an untrained model is close to
    uniform over the vocabulary.
    """
    for name, v in (("vocab", vocab), ("context", context), ("dim", dim), ("hidden", hidden)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    if vocab <= EOS:
        raise ValueError(f"vocab: expected more than the 3 special tokens, got {vocab}")
    rng = as_rng(seed)
    return {
        "embed": rng.normal(0.0, 1.0, (vocab, dim)).astype(dtype),
        "hidden": linear_init(context * dim, hidden, rng, scale=1.0, dtype=dtype),
        "out": linear_init(hidden, vocab, rng, scale=0.1, dtype=dtype),
    }


def _shape_of(params) -> tuple[int, int, int]:
    """``(vocab, context, dim)`` read from the parameter shapes."""
    vocab, dim = np.shape(params["embed"])
    fan_in = np.shape(params["hidden"]["w"])[0]
    if fan_in % dim:
        raise ValueError(f"params: hidden.w has {fan_in} rows, not a multiple of the embedding size {dim}")
    return vocab, fan_in // dim, dim


def _check_tokens(tokens, vocab: int) -> np.ndarray:
    tokens = as_int_array("tokens", tokens, low=0, high=vocab)
    if tokens.ndim != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens: expected shape [B, L] with L >= 1, got {tokens.shape}")
    return tokens


def _forward(params, windows: np.ndarray):
    """Logits ``[N, V]`` for windows ``[N, C]`` of token ids (oldest first)."""
    vocab, context, dim = _shape_of(params)
    embed = params["embed"]
    # A one-hot matrix times the table is the embedding lookup as one matmul, whose gradient
    # is one matmul too (indexing would scatter-add row by row on the way back).
    onehot = np.eye(vocab, dtype=ad.stop_gradient(embed).dtype)[windows.reshape(-1)]
    x = ad.reshape(onehot @ embed, (windows.shape[0], context * dim))
    h = ad.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def lm_logits(params, tokens):
    """Next-token logits ``[B, L, V]`` for ``tokens`` ``[B, L]``.

    ``logits[:, t]`` is the model's prediction of ``tokens[:, t+1]`` from ``tokens[:, :t+1]``
    (the last ``context`` of them); the prediction at the last position is of the token after
    the sequence. To score a sequence use ``logits[:, :-1]`` against ``tokens[:, 1:]``.
    """
    vocab, context, _ = _shape_of(params)
    tokens = _check_tokens(tokens, vocab)
    batch, length = tokens.shape
    padded = np.concatenate([np.full((batch, context - 1), PAD, dtype=tokens.dtype), tokens], axis=1)
    windows = padded[:, np.arange(length)[:, None] + np.arange(context)[None, :]]
    logits = _forward(params, windows.reshape(batch * length, context))
    return ad.reshape(logits, (batch, length, vocab))


def lm_next_logits(params, tokens) -> np.ndarray:
    """Logits ``[B, V]`` of the token that follows ``tokens`` ``[B, L]`` (``lm_logits(...)[:, -1]``)."""
    vocab, context, _ = _shape_of(params)
    tokens = _check_tokens(tokens, vocab)
    batch = tokens.shape[0]
    padded = np.concatenate([np.full((batch, context), PAD, dtype=tokens.dtype), tokens], axis=1)
    return _forward(params, padded[:, -context:])


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
    filtering, the tokens are drawn from exactly the distribution ``lm_logits`` scores.
    """
    vocab, _, _ = _shape_of(params)
    prompts = _check_tokens(prompts, vocab)
    if isinstance(max_new, bool) or not isinstance(max_new, (int, np.integer)) or max_new < 1:
        raise ValueError(f"max_new: expected a positive integer, got {max_new!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    batch, prompt_len = prompts.shape
    tokens = np.concatenate([prompts, np.full((batch, max_new), PAD, dtype=prompts.dtype)], axis=1)
    done = np.zeros(batch, dtype=bool)
    for t in range(prompt_len, prompt_len + max_new):
        logits = lm_next_logits(params, tokens[:, :t])
        nxt = np.asarray(sample_token(logits, rng, temperature, top_k, top_p))
        tokens[:, t] = np.where(done, PAD, nxt)
        done |= nxt == eos
        if done.all():
            break
    return tokens, completion_mask(tokens, prompt_len, eos)
