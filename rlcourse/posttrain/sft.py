"""Supervised fine-tuning of the course's language model on the completion tokens of examples."""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import as_bool_array, as_rng, check_count, check_shape
from ..core.blas import single_thread_blas
from ..core.heap import keep_freed_memory
from ..core.lm import lm_nll
from ..core.optim import Adam
from ._inputs import check_model, check_token_ids

__all__ = ["sft"]


@single_thread_blas()  # the model's matrices are small: BLAS threads mostly wait for busy cores
def sft(params, tokens, mask, steps: int = 300, lr: float = 3e-3, seed=0, batch: int = 64):
    """Supervised fine-tuning: Adam on ``lm_nll`` over random minibatches of rows.

    ``tokens``/``mask`` ``[N, L]`` as from ``Tokenizer.encode_pairs``: only the masked tokens
    (the completions) are fitted. Returns ``(params, losses)``, ``losses`` ``[steps]`` being each
    minibatch's loss before its update. Every row must have a counted token.
    """
    tokens = check_token_ids("tokens", tokens, check_model("params", params), "params")
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, tokens.shape, "tokens")
    empty = np.flatnonzero(~mask[:, 1:].any(axis=1))
    if empty.size:
        raise ValueError(f"mask: row {int(empty[0])} has no token to fit in mask[:, 1:]")
    steps = check_count("steps", steps)
    batch = check_count("batch", batch)
    rng = as_rng(seed)
    keep_freed_memory()  # the model's 0.25-4 MB activations: reuse freed memory, no page faults
    opt = Adam(lr=lr)
    state = opt.init(params)
    step = ad.value_and_grad(lm_nll)
    losses = np.empty(steps)
    size = min(batch, len(tokens))
    for i in range(steps):
        rows = rng.choice(len(tokens), size=size, replace=False)
        losses[i], grads = step(params, tokens[rows], mask[rows])
        params, state = opt.step(params, grads, state)
    return params, losses
