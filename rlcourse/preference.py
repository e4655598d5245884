"""Learning from preferences and from verifiers: Bradley-Terry, DPO, IPO and GRPO.

Three layers: the losses on plain numbers (``preference_loss``, ``dpo_loss``, ``ipo_loss``,
``grpo_advantages``, ``grpo_loss``); DPO/IPO fine-tuning of the tiny LM of ``rc.lm`` on
preference pairs (``train_on_preferences``, with the toy ``review_task``); and GRPO on the tiny
LM with a verifier as the reward (``grpo_step``, ``grpo_train``).

Conventions (as in Hugging Face TRL, see REFERENCE.md):

- A *preference pair* is (prompt, chosen completion, rejected completion). The log-probs that
  ``dpo_loss`` takes are sequence log-probs, ``log pi(completion | prompt)`` summed over the
  completion's tokens only (``rc.sequence_log_prob`` with a mask that is false on the prompt
  and the padding), one number per pair, shape ``[B]``.
- The policy log-probs carry the gradient; the reference log-probs never do (they are wrapped
  in ``stop_gradient``, so passing traced reference values cannot move the reference).
- GRPO's group of ``G`` samples of one prompt sits in ``G`` consecutive rows of the batch.
  Its per-token log-probs ``[B, T]`` are aligned with ``tokens[:, 1:]`` and go with
  ``mask[:, 1:]``, as everywhere in ``rc.llm``.

Every loss returns a scalar (a ``Tensor`` when its inputs are traced, so it works inside
``value_and_grad``); every reported statistic (rewards, accuracy) is a plain number or array.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_float_array, as_int_array, check_shape
from .blas import single_thread_blas
from .llm import exact_kl, kl_estimate, ppo_clip_loss, token_log_probs
from .lm import Tokenizer, completion_log_prob, generate, lm_logits
from .optim import Adam

__all__ = [
    "PreferenceResult",
    "PreferencePairs",
    "PreferenceTraining",
    "ReviewTask",
    "review_task",
    "preference_loss",
    "dpo_loss",
    "ipo_loss",
    "make_preference_pairs",
    "pair_log_probs",
    "evaluate_pairs",
    "train_on_preferences",
    "grpo_advantages",
    "GRPOLoss",
    "grpo_loss",
    "GRPOHistory",
    "grpo_step",
    "grpo_train",
]


class PreferenceResult(NamedTuple):
    """What ``dpo_loss`` and ``ipo_loss`` return.

    ``loss`` is the scalar to minimise (a Tensor when traced). ``chosen_rewards`` and
    ``rejected_rewards`` [B] are the implicit rewards ``beta * (logp - ref_logp)`` of each
    completion (plain arrays); ``accuracy`` is the fraction of pairs whose chosen reward is
    strictly larger than the rejected one (a tie counts as wrong).
    """

    loss: object
    chosen_rewards: np.ndarray
    rejected_rewards: np.ndarray
    accuracy: float


def _values(name: str, x, shape: tuple | None = None, against: str | None = None):
    """Check a 1-D batch of finite numbers, traced or not; return the plain values."""
    arr = as_float_array(name, ad.stop_gradient(x), ndim=1)
    if arr.size == 0:
        raise ValueError(f"{name}: expected at least one pair, got an empty array")
    if shape is not None:
        check_shape(name, arr, shape, against)
    return arr


def _positive(name: str, value) -> float:
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name}: expected a finite number > 0, got {value}")
    return value


def preference_loss(r_chosen, r_rejected, margin=0.0):
    """Bradley-Terry reward-model loss: mean over pairs of ``-log sigmoid(r_c - r_r - margin)``.

    ``r_chosen``, ``r_rejected`` [B]: the reward model's scores of the preferred and the other
    completion (traced, to train the reward model). ``margin``: a scalar or [B] array that the
    chosen score must beat the rejected one by (0 = plain Bradley-Terry, where
    ``sigmoid(r_c - r_r)`` is the modelled probability that the chosen one wins).
    Uses ``log_sigmoid``, so a large score gap gives a finite loss and gradient.
    """
    chosen = _values("r_chosen", r_chosen)
    _values("r_rejected", r_rejected, chosen.shape, "r_chosen")
    margin_arr = as_float_array("margin", margin)
    if margin_arr.ndim > 1 or (margin_arr.ndim == 1 and margin_arr.shape != chosen.shape):
        raise ValueError(
            f"margin: expected a scalar or shape {chosen.shape} (the shape of r_chosen), "
            f"got shape {margin_arr.shape}"
        )
    return -ad.mean(ad.log_sigmoid(r_chosen - r_rejected - margin_arr))


def _pair_log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected):
    """Validate the four [B] log-prob arrays; return the traced log-ratios and their values."""
    chosen = _values("policy_chosen", policy_chosen)
    for name, x in (("policy_rejected", policy_rejected), ("ref_chosen", ref_chosen),
                    ("ref_rejected", ref_rejected)):
        _values(name, x, chosen.shape, "policy_chosen")
    ref_c = np.asarray(ad.stop_gradient(ref_chosen))
    ref_r = np.asarray(ad.stop_gradient(ref_rejected))
    return policy_chosen - ref_c, policy_rejected - ref_r


def _result(loss, beta, chosen_ratio, rejected_ratio) -> PreferenceResult:
    chosen_rewards = beta * np.asarray(ad.stop_gradient(chosen_ratio), dtype=np.float64)
    rejected_rewards = beta * np.asarray(ad.stop_gradient(rejected_ratio), dtype=np.float64)
    accuracy = float(np.mean(chosen_rewards > rejected_rewards))
    return PreferenceResult(loss, chosen_rewards, rejected_rewards, accuracy)


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=0.1,
             label_smoothing=0.0) -> PreferenceResult:
    """Direct Preference Optimisation loss on a batch of B preference pairs.

    Inputs [B] are sequence log-probs summed over completion tokens: the policy's (traced) and
    the frozen reference's, of the chosen and the rejected completion. With the log-ratio
    margin ``z = (logp_c - ref_c) - (logp_r - ref_r)`` the loss is the mean over pairs of
    ``-(1 - e) log sigmoid(beta z) - e log sigmoid(-beta z)``, ``e = label_smoothing``
    (0 = plain DPO; e > 0 assumes each label is flipped with probability e, "conservative DPO").
    ``beta > 0`` is the strength of the KL pull towards the reference: the implicit reward of a
    completion is ``beta * (logp - ref_logp)``. Returns ``PreferenceResult``.
    """
    beta = _positive("beta", beta)
    label_smoothing = float(label_smoothing)
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(
            f"label_smoothing: expected a number in [0, 0.5) (the assumed probability that a "
            f"label is flipped), got {label_smoothing}"
        )
    chosen_ratio, rejected_ratio = _pair_log_ratios(
        policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    logits = beta * (chosen_ratio - rejected_ratio)
    per_pair = -(1.0 - label_smoothing) * ad.log_sigmoid(logits)
    if label_smoothing > 0:
        per_pair = per_pair - label_smoothing * ad.log_sigmoid(-logits)
    return _result(ad.mean(per_pair), beta, chosen_ratio, rejected_ratio)


def ipo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, tau=0.1,
             chosen_lengths=None, rejected_lengths=None) -> PreferenceResult:
    """Identity Preference Optimisation loss: mean over pairs of ``(z' - 1/(2 tau))**2``.

    ``z'`` is DPO's log-ratio margin computed from *length-averaged* log-probs (per-token means
    over the completion), as in IPO as implemented in TRL. Pass the same summed sequence
    log-probs as to ``dpo_loss`` together with ``chosen_lengths`` and ``rejected_lengths`` [B]
    (the number of completion tokens each sum ran over, e.g. ``mask[:, 1:].sum(1)``), and the
    function divides by them. Pass neither if your log-probs are already per-token averages.

    Unlike DPO, whose loss keeps falling as ``z`` grows (so on a pair that is always preferred
    the margin runs off to infinity), IPO regresses ``z'`` onto the finite target ``1/(2 tau)``:
    smaller ``tau`` = larger target margin = weaker pull to the reference. The implicit rewards
    reported are ``tau * (mean logp - mean ref_logp)``.
    """
    tau = _positive("tau", tau)
    chosen_ratio, rejected_ratio = _pair_log_ratios(
        policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    if (chosen_lengths is None) != (rejected_lengths is None):
        raise ValueError("chosen_lengths and rejected_lengths: pass both (summed log-probs) or "
                         "neither (log-probs already averaged per token)")
    if chosen_lengths is not None:
        batch = np.shape(ad.stop_gradient(policy_chosen))
        for name, lengths in (("chosen_lengths", chosen_lengths),
                              ("rejected_lengths", rejected_lengths)):
            arr = _values(name, lengths, batch, "policy_chosen")
            if (arr <= 0).any():
                raise ValueError(f"{name}: every completion needs at least one token, "
                                 f"got a length of {arr.min()}")
        chosen_ratio = chosen_ratio / np.asarray(chosen_lengths, dtype=np.float64)
        rejected_ratio = rejected_ratio / np.asarray(rejected_lengths, dtype=np.float64)
    margin = chosen_ratio - rejected_ratio
    loss = ad.mean(ad.square(margin - 1.0 / (2.0 * tau)))
    return _result(loss, tau, chosen_ratio, rejected_ratio)


def grpo_advantages(rewards, group_size: int, eps: float = 1e-4, scale: bool = True) -> np.ndarray:
    """Group-relative advantages: ``(r - mean_g) / (std_g + eps)`` within each group.

    ``rewards`` [B]: one scalar reward per sampled completion, the G = ``group_size`` samples of
    one prompt in consecutive rows (B must be a multiple of G). ``std_g`` is the *sample*
    standard deviation (ddof=1) and ``eps = 1e-4``, as in TRL; so G must be >= 2. A group whose
    rewards are all equal carries no signal about which sample was better and gets advantage 0
    (never NaN). ``scale=False`` skips the division by the std (the "Dr. GRPO" variant, which
    keeps easy and hard prompts on the reward's own scale). The advantages of each group sum
    to zero. Returns float64 [B]; rewards are data, not traced.
    """
    r = as_float_array("rewards", rewards, ndim=1).astype(np.float64)
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 2:
        raise ValueError(f"group_size: expected an integer >= 2 (the sample std needs two "
                         f"samples per prompt), got {group_size!r}")
    if r.size == 0 or r.size % group_size:
        raise ValueError(f"rewards: expected a batch that is a whole number of groups of "
                         f"group_size={group_size}, got {r.size} rewards")
    eps = float(eps)
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps: expected a finite number > 0, got {eps}")
    groups = r.reshape(-1, group_size)
    centred = groups - groups.mean(axis=1, keepdims=True)
    # exactly 0, not a rounding residue of the mean divided by eps
    centred[np.ptp(groups, axis=1) == 0] = 0.0
    if scale:
        centred = centred / (groups.std(axis=1, ddof=1, keepdims=True) + eps)
    return centred.reshape(-1)


# ---------------------------------------------------------------- a toy preference task

class ReviewTask(NamedTuple):
    """A toy preference task: "praise film" or "roast plot", answered by a few adjectives.

    ``tokenizer`` (word level), ``prompts`` (the 8 instructions), ``words`` (the 9 words a
    completion is made of: 3 positive, 3 negative, 3 neutral) and ``score(prompt, completion)``,
    the hidden annotator: positive minus negative words for "praise", the opposite for "roast".
    """

    tokenizer: Tokenizer
    prompts: list
    words: list
    score: object


_POSITIVE, _NEGATIVE, _NEUTRAL = ("good", "great", "fun"), ("bad", "dull", "awful"), ("very", "quite", "and")


def _review_score(prompt: str, completion: str) -> int:
    words = completion.split()
    tone = sum(w in _POSITIVE for w in words) - sum(w in _NEGATIVE for w in words)
    return tone if prompt.split()[0] == "praise" else -tone


def review_task() -> ReviewTask:
    """The praise/roast task of lesson 13 (see ``ReviewTask``)."""
    subjects = ["film", "plot", "cast", "music"]
    words = list(_POSITIVE + _NEGATIVE + _NEUTRAL)
    tokenizer = Tokenizer(["praise", "roast"] + subjects + words)
    prompts = [f"{mode} {s}" for mode in ("praise", "roast") for s in subjects]
    return ReviewTask(tokenizer, prompts, words, _review_score)


# ---------------------------------------------------------------- training a tiny LM on pairs

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
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps: expected a positive integer, got {steps!r}")
    if len(pairs) == 0:
        raise ValueError("pairs: expected at least one preference pair, got none")
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
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


# ---------------------------------------------------------------- GRPO on a tiny LM

class GRPOLoss(NamedTuple):
    """What ``grpo_loss`` returns (a tuple whose first item is the loss, so it can be returned
    from a function given to ``value_and_grad``). ``loss = policy_loss + kl_coef * kl``;
    ``kl`` is the aggregated k3 estimate of ``KL(pi || ref)`` per token (plain float);
    ``clip_fraction`` and ``approx_kl`` are ``ppo_clip_loss``'s token-mean diagnostics."""

    loss: object
    policy_loss: float
    kl: float
    clip_fraction: float
    approx_kl: float


def grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip: float = 0.2, kl_coef: float = 0.04,
              aggregate: str = "token") -> GRPOLoss:
    """GRPO's loss: PPO's clipped surrogate with one advantage per completion, plus a k3 KL
    penalty to the frozen reference, both aggregated over action tokens in the same way.

    ``logp`` ``[B, T]`` (traced), ``old_logp`` (the sampling policy's) and ``ref_logp`` (the
    reference's) ``[B, T]``, aligned with ``tokens[:, 1:]``; ``advantages`` ``[B]`` (from
    ``grpo_advantages``) or ``[B, T]``; ``mask`` ``[B, T]`` True on action tokens
    (``mask[:, 1:]``). The KL term is ``k3 = exp(d) - d - 1`` with ``d = ref_logp - logp`` on
    each action token: >= 0, unbiased for ``KL(pi || ref)`` on tokens sampled from pi, and with
    a gradient that pulls ``logp`` towards ``ref_logp`` (``kl_coef = 0.04`` as in DeepSeekMath;
    0 drops it). ``aggregate="token"`` averages over all action tokens of the batch,
    ``"sequence"`` over each completion's tokens first, then over completions (GRPO's paper).
    """
    kl_coef = float(kl_coef)
    if not (np.isfinite(kl_coef) and kl_coef >= 0):
        raise ValueError(f"kl_coef: expected a finite number >= 0, got {kl_coef}")
    policy = ppo_clip_loss(logp, old_logp, advantages, mask, clip=clip, aggregate=aggregate)
    mask = np.asarray(mask, dtype=bool)
    ref = np.asarray(ad.stop_gradient(ref_logp))
    check_shape("ref_logp", ref, mask.shape, "mask")
    # padding positions may hold -inf log-probs; they are replaced before any arithmetic
    per_token = kl_estimate(ad.where(mask, logp, 0.0), np.where(mask, ref, 0.0), kind="k3")
    per_token = ad.where(mask, per_token, 0.0)
    counts = mask.sum(axis=1)
    if aggregate == "token":
        kl = ad.sum(per_token) / int(counts.sum())
    else:
        kl = ad.mean(ad.sum(per_token, axis=1) / counts)
    loss = policy.loss + kl_coef * kl
    return GRPOLoss(loss, float(ad.stop_gradient(policy.loss)), float(ad.stop_gradient(kl)),
                    policy.clip_fraction, policy.approx_kl)


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
    group = np.repeat(np.asarray(prompts), group_size, axis=0)
    tokens, mask = generate(policy, group, max_new, rng)
    action = mask[:, 1:]
    old_logits = lm_logits(policy, tokens)[:, :-1]
    ref_logits = lm_logits(ref, tokens)[:, :-1]
    old_logp = token_log_probs(old_logits, tokens)
    ref_logp = token_log_probs(ref_logits, tokens)
    rewards = as_float_array("reward_fn(tokens, mask)", reward_fn(tokens, mask), ndim=1)
    check_shape("reward_fn(tokens, mask)", rewards, (len(tokens),), "the batch of N * group_size")
    advantages = grpo_advantages(rewards, group_size)

    def loss_fn(params):
        logp = token_log_probs(lm_logits(params, tokens)[:, :-1], tokens)
        return grpo_loss(logp, old_logp, ref_logp, advantages, action, clip, kl_coef, aggregate)

    step = ad.value_and_grad(loss_fn)
    for _ in range(epochs):
        (_, _, _, clip_fraction, approx_kl), grads = step(policy)
        policy, opt_state = opt.step(policy, grads, opt_state)
    stats = {
        "tokens": tokens, "mask": mask, "rewards": rewards, "advantages": advantages,
        "reward": float(rewards.mean()),
        "kl": float(exact_kl(old_logits, ref_logits, mask).mean()),
        "length": float(action.sum(axis=1).mean()),
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
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations: expected a positive integer, got {iterations!r}")
    if prompts.ndim != 2 or len(prompts) == 0:
        raise ValueError(f"prompts: expected token ids [N, P] with N >= 1, got shape {prompts.shape}")
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
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
