"""DPO and IPO fine-tuning of the tiny language model on preference pairs."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import autodiff as ad
from ..core._checks import as_bool_array, as_int_array, as_rng, check_count, check_shape
from ..core.blas import single_thread_blas
from ..core.heap import keep_freed_memory
from ..core.lm import completion_log_prob
from ..core.losses import PreferenceResult, _values, dpo_loss, ipo_loss
from ..core.optim import Adam

__all__ = ["PreferencePairs", "make_preference_pairs", "pair_log_probs", "evaluate_pairs",
           "PreferenceTraining", "train_on_preferences"]


class PreferencePairs(NamedTuple):
    """N preference pairs as token arrays for ``rc.lm_logits``.

    ``chosen``/``rejected`` ``[N, L]`` are whole sequences (prompt, completion, padding) and
    ``chosen_mask``/``rejected_mask`` ``[N, L]`` are True on the completion tokens only (EOS
    included), as ``rc.generate`` returns them. Row i of both is the same prompt.
    """

    chosen: np.ndarray
    chosen_mask: np.ndarray
    rejected: np.ndarray
    rejected_mask: np.ndarray

    def __len__(self):
        return len(self.chosen)

    def take(self, rows) -> PreferencePairs:
        """The pairs at ``rows`` (an index array or slice)."""
        return PreferencePairs(*(a[rows] for a in self))


def make_preference_pairs(tokens_a, mask_a, tokens_b, mask_b, score_a, score_b) -> PreferencePairs:
    """Label two completions per prompt by a score: the higher one is chosen, ties dropped.

    ``tokens_a``/``tokens_b`` ``[N, L]`` (two samples for the same N prompts, with their
    completion masks) and ``score_a``/``score_b`` [N], e.g. an annotator's or a rule's rating.
    A tie says nothing about which is better, so that pair is left out.
    """
    tokens_a, tokens_b = as_int_array("tokens_a", tokens_a, low=0), as_int_array("tokens_b", tokens_b, low=0)
    mask_a, mask_b = as_bool_array("mask_a", mask_a), as_bool_array("mask_b", mask_b)
    if tokens_a.ndim != 2:
        raise ValueError(f"tokens_a: expected shape [N, L], got {tokens_a.shape}")
    for name, arr in (("mask_a", mask_a), ("tokens_b", tokens_b), ("mask_b", mask_b)):
        check_shape(name, arr, tokens_a.shape, "tokens_a")
    n = (len(tokens_a),)
    score_a = _values("score_a", score_a, n, "tokens_a' rows")
    score_b = _values("score_b", score_b, n, "tokens_a' rows")
    keep = score_a != score_b
    a_wins = (score_a > score_b)[keep, None]
    return PreferencePairs(
        np.where(a_wins, tokens_a[keep], tokens_b[keep]), np.where(a_wins, mask_a[keep], mask_b[keep]),
        np.where(a_wins, tokens_b[keep], tokens_a[keep]), np.where(a_wins, mask_b[keep], mask_a[keep]),
    )


def pair_log_probs(params, pairs: PreferencePairs):
    """``(logp_chosen [N], logp_rejected [N])``: completion log-probs summed over the mask.

    Both sides go through the model in one batch (traced if ``params`` is).
    """
    n = len(pairs)
    width = max(pairs.chosen.shape[1], pairs.rejected.shape[1])
    tokens = np.concatenate([_pad_to(pairs.chosen, width), _pad_to(pairs.rejected, width)])
    mask = np.concatenate([_pad_to(pairs.chosen_mask, width), _pad_to(pairs.rejected_mask, width)])
    logp = completion_log_prob(params, tokens, mask)
    return logp[:n], logp[n:]


def _pad_to(arr: np.ndarray, width: int) -> np.ndarray:
    return np.pad(arr, ((0, 0), (0, width - arr.shape[1])))


def _completion_lengths(pairs: PreferencePairs):
    return pairs.chosen_mask[:, 1:].sum(axis=1), pairs.rejected_mask[:, 1:].sum(axis=1)


def _pair_loss(kind: str, pol_c, pol_r, ref_c, ref_r, lengths, beta, tau, label_smoothing):
    if kind == "dpo":
        return dpo_loss(pol_c, pol_r, ref_c, ref_r, beta=beta, label_smoothing=label_smoothing)
    return ipo_loss(pol_c, pol_r, ref_c, ref_r, tau=tau, chosen_lengths=lengths[0],
                    rejected_lengths=lengths[1])


def evaluate_pairs(params, ref_params, pairs: PreferencePairs, loss: str = "dpo", beta: float = 0.1,
                   tau: float = 0.1, label_smoothing: float = 0.0) -> PreferenceResult:
    """The loss, implicit rewards and accuracy of ``params`` on ``pairs`` (e.g. held out)."""
    _check_kind(loss)
    pol = pair_log_probs(params, pairs)
    ref = pair_log_probs(ref_params, pairs)
    return _pair_loss(loss, *pol, *ref, _completion_lengths(pairs), beta, tau, label_smoothing)


def _check_kind(loss: str) -> None:
    if loss not in ("dpo", "ipo"):
        raise ValueError(f"loss: expected 'dpo' or 'ipo', got {loss!r}")


class PreferenceTraining(NamedTuple):
    """What ``train_on_preferences`` returns: the trained ``params`` and, per step [steps],
    the minibatch ``losses``, ``accuracies`` (implicit-reward accuracy) and ``margins`` (mean
    log-ratio margin z of DPO, or z' of IPO, before the step's update)."""

    params: dict
    losses: np.ndarray
    accuracies: np.ndarray
    margins: np.ndarray


@single_thread_blas()
def train_on_preferences(params, pairs: PreferencePairs, loss: str = "dpo", beta: float = 0.1,
                         tau: float = 0.1, label_smoothing: float = 0.0, steps: int = 200,
                         lr: float = 1e-3, batch: int = 64, seed=0) -> PreferenceTraining:
    """DPO or IPO fine-tuning of a tiny LM (``rc.lm_logits`` params) on preference pairs.

    The reference is ``params`` as passed in: its log-probs of every pair are computed once,
    up front, and never change (the reference is frozen; only the policy moves). Each step draws
    ``batch`` pairs without replacement and takes one Adam step on ``dpo_loss`` (``loss="dpo"``,
    with ``beta`` and ``label_smoothing``) or ``ipo_loss`` (``loss="ipo"``, with ``tau`` and the
    completion lengths read from the masks).
    """
    _check_kind(loss)
    check_count("steps", steps)
    if len(pairs) == 0:
        raise ValueError("pairs: expected at least one preference pair, got none")
    rng = as_rng(seed)
    keep_freed_memory()  # the model's 0.25-4 MB activations: reuse freed memory, no page faults
    ref_c, ref_r = pair_log_probs(params, pairs)
    lengths = _completion_lengths(pairs)
    scale = beta if loss == "dpo" else tau

    def objective(p, rows):
        pol_c, pol_r = pair_log_probs(p, pairs.take(rows))
        return _pair_loss(loss, pol_c, pol_r, ref_c[rows], ref_r[rows],
                          (lengths[0][rows], lengths[1][rows]), beta, tau, label_smoothing)

    step = ad.value_and_grad(objective)
    opt = Adam(lr=lr)
    state = opt.init(params)
    history = np.empty((3, steps))
    size = min(batch, len(pairs))
    for i in range(steps):
        rows = rng.choice(len(pairs), size=size, replace=False)
        (value, chosen, rejected, accuracy), grads = step(params, rows)
        history[:, i] = value, accuracy, np.mean(chosen - rejected) / scale
        params, state = opt.step(params, grads, state)
    return PreferenceTraining(params, *history)
