"""Token maths for a causal language model: per-token log-probs, sequence log-probs, masks.

Conventions shared by every function here and by :mod:`rlcourse.core.kl` and the token losses:

- ``tokens`` ``[B, L]`` holds whole sequences (prompt, completion, padding). A causal LM's
  ``logits[:, t]`` predicts ``tokens[:, t + 1]``, so the logits that score a sequence are
  ``lm_logits(params, tokens)[:, :-1]``, of shape ``[B, L-1, V]``.
- ``mask`` ``[B, L]`` is True on the tokens the policy chose (the completion, EOS included).
  Only ``mask[:, 1:]`` can count: token 0 has no logits predicting it. Prompt, padding and
  observation tokens are False and never enter a loss, a KL or a gradient.
- Functions of per-token arrays take ``logp``, ``ref_logp``, ``advantages`` aligned with
  ``tokens[:, 1:]``, shape ``[B, T]`` with ``T = L-1`` (as ``token_log_probs`` returns them),
  and the mask aligned with them: ``mask[:, 1:]``.

Every function works on plain arrays and on traced values inside ``value_and_grad``.
"""

from __future__ import annotations

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_int_array, check_count, check_logits, check_shape

__all__ = ["token_log_probs", "sequence_log_prob", "completion_mask"]


def _check_logits(name: str, logits) -> np.ndarray:
    """The value of ``logits`` (traced or not) as ``[B, L-1, V]``, checked by the rule every
    function uses (:func:`~rlcourse.core._checks.check_logits`: ``-inf`` rules a token out)."""
    value = check_logits(name, ad.stop_gradient(logits))
    if value.ndim != 3:
        raise ValueError(f"{name}: expected shape [B, L-1, V], got {value.shape}")
    return value


def _check_tokens(logits_value: np.ndarray, tokens, logits_name: str = "logits",
                  name: str = "tokens") -> np.ndarray:
    """``tokens`` ``[B, L]`` in ``[0, V)`` whose shape fits logits ``[B, L-1, V]``; errors
    name the argument ``name``."""
    batch, steps, vocab = logits_value.shape
    tokens = as_int_array(name, tokens, low=0, high=vocab)
    if tokens.ndim != 2 or tokens.shape != (batch, steps + 1):
        raise ValueError(
            f"{name}: expected shape {(batch, steps + 1)} (one more position than {logits_name} "
            f"{logits_value.shape}, because logits[:, t] predicts tokens[:, t+1]), got {tokens.shape}"
        )
    return tokens


def _check_mask(mask, tokens_shape: tuple, against: str = "tokens") -> np.ndarray:
    """``mask`` ``[B, L]`` as bools, with at least one counted token (``mask[:, 1:]``) per row."""
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, tokens_shape, against)
    counted = mask[:, 1:].sum(axis=1)
    if not counted.any():
        raise ValueError("mask: no position is True in mask[:, 1:]; there are no action tokens to score")
    empty = np.flatnonzero(counted == 0)
    if empty.size:
        raise ValueError(
            f"mask: sequence {int(empty[0])} has no action token in mask[:, 1:] "
            f"({empty.size} such sequences); its log-prob or KL would be an empty sum"
        )
    return mask


def token_log_probs(logits, tokens):
    """``log pi(tokens[:, t+1] | tokens[:, :t+1])`` for every t: ``[B, L-1]``.

    ``logits`` ``[B, L-1, V]`` (``lm_logits(...)[:, :-1]``) and ``tokens`` ``[B, L]`` ints in
    ``[0, V)``. Entry ``[b, t]`` is the log-probability of ``tokens[b, t+1]``; nothing is masked.
    """
    value = _check_logits("logits", logits)
    tokens = _check_tokens(value, tokens)
    logp = ad.log_softmax(logits, axis=-1)
    return ad.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]


def sequence_log_prob(logits, tokens, mask):
    """``log pi(completion | prompt)`` per sequence: ``[B]``.

    The sum of ``token_log_probs(logits, tokens)`` over the positions where ``mask[:, 1:]`` is
    True. Masked positions get exactly zero gradient, even where their log-prob is ``-inf``.
    Raises if a sequence has no counted token.
    """
    value = _check_logits("logits", logits)
    tokens = _check_tokens(value, tokens)
    mask = _check_mask(mask, tokens.shape)
    lp = token_log_probs(logits, tokens)
    # where, not multiply: 0 * -inf would be NaN at a ruled-out padding token
    return ad.sum(ad.where(mask[:, 1:], lp, 0.0), axis=1)


def completion_mask(tokens, prompt_len, eos: int = 2) -> np.ndarray:
    """True on the completion tokens of ``tokens`` ``[B, L]``: ``[B, L]`` bool.

    A completion starts at position ``prompt_len`` (an int, or one per row ``[B]``) and runs up
    to and including the first ``eos`` at or after it; what follows (padding) is False, and so
    is the whole prompt. A row with no ``eos`` is a completion cut at the length limit: every
    position from ``prompt_len`` on is True.
    """
    tokens = as_int_array("tokens", tokens, low=0)
    eos = check_count("eos", eos, low=0)
    if tokens.ndim != 2:
        raise ValueError(f"tokens: expected shape [B, L], got {tokens.shape}")
    batch, length = tokens.shape
    starts = as_int_array("prompt_len", prompt_len, low=0, high=length + 1)
    starts = np.broadcast_to(starts, (batch,)) if starts.ndim == 0 else starts
    check_shape("prompt_len", starts, (batch,), "tokens' batch")
    pos = np.arange(length)[None, :]
    after = pos >= starts[:, None]
    is_eos = (tokens == eos) & after
    # positions strictly after the first eos of the completion
    past_eos = (np.cumsum(is_eos, axis=1) - is_eos) > 0
    return after & ~past_eos
