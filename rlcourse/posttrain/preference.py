"""DPO and IPO fine-tuning of the tiny language model on preference pairs."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import autodiff as ad
from ..core._checks import (
    as_bool_array,
    as_float_array,
    as_int_array,
    as_rng,
    check_callable,
    check_count,
    check_nonnegative,
    check_shape,
    real_scalar,
)
from ..core.blas import single_thread_blas
from ..core.heap import keep_freed_memory
from ..core.kl import exact_kl
from ..core.lm import completion_log_prob, generate, lm_logits
from ..core.losses import PreferenceResult, _values, dpo_loss, ipo_loss
from ..core.optim import Adam
from ..core.tokenizer import PAD
from ._inputs import check_callback, check_models, check_prompts, check_rng, check_token_ids

__all__ = ["PreferencePairs", "make_preference_pairs", "pair_log_probs", "evaluate_pairs",
           "PreferenceTraining", "train_on_preferences", "SampleReport", "rate_samples"]


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


def _make_pairs(cls, iterable):
    """NamedTuple's ``_make`` (behind ``_replace``) checks ``len`` of the new tuple, which
    ``__len__`` makes the number of pairs: ``_replace`` failed unless there were exactly 4."""
    result = tuple.__new__(cls, iterable)
    if tuple.__len__(result) != len(cls._fields):
        raise TypeError(f"{cls.__name__}: expected {len(cls._fields)} arrays, got {tuple.__len__(result)}")
    return result


PreferencePairs._make = classmethod(_make_pairs)


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
    pairs = _check_pairs(pairs, check_models(params=params))
    n = len(pairs)
    width = max(pairs.chosen.shape[1], pairs.rejected.shape[1])
    tokens = np.concatenate([_pad_to(pairs.chosen, width), _pad_to(pairs.rejected, width)])
    mask = np.concatenate([_pad_to(pairs.chosen_mask, width), _pad_to(pairs.rejected_mask, width)])
    logp = completion_log_prob(params, tokens, mask)
    return logp[:n], logp[n:]


def _check_pairs(pairs, configs: dict) -> PreferencePairs:
    """``pairs`` as a ``PreferencePairs`` of at least one pair: ids in the vocabulary of the
    models (``configs``: name -> sizes, from ``check_models``), rows within each one's context,
    masks of the tokens' shapes with a counted token in every row, as many rejected rows as
    chosen ones."""
    model, config = next(iter(configs.items()))
    if not isinstance(pairs, PreferencePairs):
        raise TypeError(f"pairs: expected PreferencePairs (make_preference_pairs), got "
                        f"{type(pairs).__name__}")
    if hasattr(pairs.chosen, "__len__") and len(pairs.chosen) == 0:
        raise ValueError("pairs: expected at least one preference pair, got none "
                         "(make_preference_pairs drops ties: did every pair score the same?)")
    arrays = []
    for side in ("chosen", "rejected"):
        tokens = check_token_ids(f"pairs.{side}", getattr(pairs, side), config, model)
        mask = as_bool_array(f"pairs.{side}_mask", getattr(pairs, f"{side}_mask"))
        check_shape(f"pairs.{side}_mask", mask, tokens.shape, f"pairs.{side}")
        empty = np.flatnonzero(~mask[:, 1:].any(axis=1))
        if empty.size:
            raise ValueError(f"pairs.{side}_mask: pair {int(empty[0])} has no completion token in "
                             f"mask[:, 1:]")
        arrays += [tokens, mask]
        longest = int((tokens != PAD).sum(axis=1).max())
        for name, cfg in configs.items():
            if longest > cfg.context:
                raise ValueError(f"{name}: its context of {cfg.context} tokens cannot hold "
                                 f"pairs.{side}, whose rows hold up to {longest} real tokens")
    if len(arrays[2]) != len(arrays[0]):
        raise ValueError(f"pairs.rejected: expected {len(arrays[0])} rows (one per chosen row), got "
                         f"{len(arrays[2])}")
    return PreferencePairs(*arrays)


def _check_settings(loss, beta, tau, label_smoothing) -> None:
    _check_kind(loss)
    check_nonnegative("beta", beta, positive=True)
    check_nonnegative("tau", tau, positive=True)
    label_smoothing = real_scalar("label_smoothing", label_smoothing)
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing: expected a number in [0, 0.5), got {label_smoothing}")
    if loss == "ipo" and label_smoothing > 0:
        raise ValueError(f"label_smoothing: label smoothing is DPO's (conservative DPO); "
                         f"loss='ipo' has none, got label_smoothing={label_smoothing}")


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
    pairs = _check_pairs(pairs, check_models(params=params, ref_params=ref_params))
    _check_settings(loss, beta, tau, label_smoothing)
    pol = pair_log_probs(params, pairs)
    ref = pair_log_probs(ref_params, pairs)
    return _pair_loss(loss, *pol, *ref, _completion_lengths(pairs), beta, tau, label_smoothing)


def _check_kind(loss: str) -> None:
    if not isinstance(loss, str) or loss not in ("dpo", "ipo"):
        raise ValueError(f"loss: expected 'dpo' or 'ipo', got {loss!r}")


class PreferenceTraining(NamedTuple):
    """What ``train_on_preferences`` returns: the trained ``params`` and, per step [steps],
    the minibatch ``losses``, ``accuracies`` (implicit-reward accuracy) and ``margins`` (mean
    log-ratio margin z of DPO, or z' of IPO), all measured before the step's update. At step 0
    the policy is the reference, so ``accuracies[0]`` and ``margins[0]`` are exactly 0."""

    params: dict
    losses: np.ndarray
    accuracies: np.ndarray
    margins: np.ndarray


@single_thread_blas()
def train_on_preferences(params, pairs: PreferencePairs, loss: str = "dpo", beta: float = 0.1,
                         tau: float = 0.1, label_smoothing: float = 0.0, steps: int = 200,
                         lr: float = 1e-3, batch: int = 64, seed=0, callback=None) -> PreferenceTraining:
    """DPO or IPO fine-tuning of a tiny LM (``rc.lm_logits`` params) on preference pairs.

    The reference is ``params`` as passed in, frozen: only the policy moves. Each step draws
    ``batch`` pairs without replacement and takes one Adam step on ``dpo_loss`` (``loss="dpo"``,
    with ``beta`` and ``label_smoothing``) or ``ipo_loss`` (``loss="ipo"``, with ``tau`` and the
    completion lengths read from the masks).

    The reference's log-probs of each minibatch are computed with the minibatch, by the same
    function as the policy's (a forward pass with no gradient; TRL's default too). Computing
    them once for all pairs would be cheaper but not the same numbers: in float32 a row's
    log-prob depends in its last bits on the batch it was computed in, and at step 0 that noise
    alone can rank a sizable fraction of the pairs "right" (lesson 13 measures it). This way the
    first step sees ``z = 0`` exactly.

    ``callback(info)`` runs after every update with a dict: ``update`` (0-based), ``steps``
    (updates so far), ``params`` (the policy after it; never modified later), ``loss``,
    ``accuracy``, ``margin`` (the update's minibatch figures, measured before it) and ``last``.
    Returning ``False`` stops the run; the history then holds the steps taken.
    """
    pairs = _check_pairs(pairs, check_models(params=params))
    _check_settings(loss, beta, tau, label_smoothing)
    check_count("steps", steps)
    check_count("batch", batch)
    check_callback(callback)
    rng = as_rng(seed)
    keep_freed_memory()  # the model's 0.25-4 MB activations: reuse freed memory, no page faults
    ref_params = params
    lengths = _completion_lengths(pairs)
    scale = beta if loss == "dpo" else tau

    def objective(p, batch_pairs, ref_c, ref_r, batch_lengths):
        pol_c, pol_r = pair_log_probs(p, batch_pairs)
        return _pair_loss(loss, pol_c, pol_r, ref_c, ref_r, batch_lengths, beta, tau, label_smoothing)

    step = ad.value_and_grad(objective)
    opt = Adam(lr=lr)
    state = opt.init(params)
    history = np.empty((3, steps))
    size = min(batch, len(pairs))
    for i in range(steps):
        rows = rng.choice(len(pairs), size=size, replace=False)
        batch_pairs = pairs.take(rows)
        ref_c, ref_r = pair_log_probs(ref_params, batch_pairs)
        (value, chosen, rejected, accuracy), grads = step(
            params, batch_pairs, ref_c, ref_r, (lengths[0][rows], lengths[1][rows]))
        history[:, i] = value, accuracy, np.mean(chosen - rejected) / scale
        params, state = opt.step(params, grads, state)
        if callback is not None:
            info = {"update": i, "steps": i + 1, "params": params, "loss": float(value),
                    "accuracy": float(accuracy), "margin": float(history[2, i]),
                    "last": i == steps - 1}
            if callback(info) is False:
                history = history[:, :i + 1]
                break
    return PreferenceTraining(params, *history)


class SampleReport(NamedTuple):
    """What ``rate_samples`` returns, one entry per sampled answer: ``tokens`` and ``mask``
    ``[B, L]`` as ``rc.generate`` returns them, the task's ``scores`` [B] and ``well_formed``
    [B], and ``kl`` [B], the exact ``KL(pi || ref)`` of the policy's next-token distribution
    summed over the answer's positions (see ``rate_samples``). Their means are the figures."""

    tokens: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    well_formed: np.ndarray
    kl: np.ndarray


@single_thread_blas()
def rate_samples(params, ref_params, prompts, rate, rng: np.random.Generator,
                 max_new: int = 4) -> SampleReport:
    """Judge a policy by what it generates: sample one answer per row of ``prompts`` ``[B, P]``
    (left-padded, ``Tokenizer.encode_prompts``), rate it with the task's hidden scorer
    ``rate(tokens, P) -> (scores [B], well_formed [B])``, and measure how far the policy is
    from the reference on it.

    ``kl[b]`` sums, over the positions where the policy chose a token of answer b, the exact
    KL between the policy's and the reference's next-token distributions (``rc.exact_kl``).
    Its mean over answers sampled from the policy is an unbiased estimate of the sequence-level
    ``KL(pi || ref)`` per answer, with far less variance than the mean of
    ``log pi(y) - log ref(y)`` over the same answers, because every position sums over the
    whole vocabulary instead of one sampled token.
    """
    prompts, max_new = check_prompts(prompts, max_new, check_models(params=params, ref_params=ref_params))
    check_callable("rate", rate, 2, "a function (tokens, prompt_len) -> (scores [B], well_formed [B])")
    check_rng(rng)
    tokens, mask = generate(params, prompts, max_new, rng)
    scores, well_formed = _rated(rate(tokens, prompts.shape[1]), len(tokens))
    kl = exact_kl(lm_logits(params, tokens)[:, :-1], lm_logits(ref_params, tokens)[:, :-1], mask)
    return SampleReport(tokens, mask, scores, well_formed, np.asarray(kl, dtype=np.float64))


def _rated(rated, batch: int):
    """``rate``'s ``(scores [B], well_formed [B])`` checked: finite scores, booleans."""
    if not isinstance(rated, (tuple, list)) or len(rated) != 2:
        raise TypeError(f"rate: expected it to return a pair (scores [B], well_formed [B]), got "
                        f"{type(rated).__name__}")
    scores = as_float_array("rate(tokens, prompt_len)[0] (scores)", rated[0], ndim=1).astype(np.float64)
    check_shape("rate(tokens, prompt_len)[0] (scores)", scores, (batch,), "the batch")
    well_formed = as_bool_array("rate(tokens, prompt_len)[1] (well_formed)", rated[1])
    check_shape("rate(tokens, prompt_len)[1] (well_formed)", well_formed, (batch,), "the batch")
    return scores, well_formed
