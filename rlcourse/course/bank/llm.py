"""Exercises of lesson 12 (reward models and RLHF): the five Build-it steps and the exercises.

Build it: ``preference_loss``, ``sequence_log_prob``, ``penalize_missing_eos``,
``kl_penalized_rewards``, ``rlhf_advantages``. Exercises: ``length_penalized_scores`` and
``length_penalty_question``, ``ensemble_reward`` and ``ensemble_question``, ``token_gae``.
Each ``explain`` recomputes the typical wrong answers on the case and names the one that
matches (tests/test_exercises_lesson_12.py submits each of them).
"""

import numpy as np

from ...core.kl import kl_penalized_rewards
from ...core.tokens import sequence_log_prob
from ...posttrain.rlhf import penalize_missing_eos, rlhf_advantages
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export

PAD, BOS, EOS = 0, 1, 2


def _same(got, variant) -> bool:
    got, variant = np.asarray(got), np.asarray(variant)
    if got.shape != variant.shape or got.dtype.kind not in "fiub":
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(got.astype(float), variant.astype(float), rtol=1e-6, atol=1e-8,
                                equal_nan=True))


def _first_match(got, variants):
    """The message of the first ``(message, wrong_answer)`` whose wrong answer equals ``got``."""
    for message, value in variants:
        if _same(got, value):
            return message
    return None


def _as_float(got):
    try:
        return np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None


# ================================================================ step 1: Bradley-Terry loss


def _bt_reference(r_chosen, r_rejected):
    return float(np.mean(np.logaddexp(0.0, -(np.asarray(r_chosen) - np.asarray(r_rejected)))))


def _bt_cases():
    return [
        Case("three pairs, by hand", (np.array([2.0, 0.5, -1.0]), np.array([1.0, 1.5, -3.0]))),
        Case("both scores shifted by +30 (only the difference counts)",
             (np.array([32.0, 30.5, 29.0]), np.array([31.0, 31.5, 27.0]))),
        Case("a gap of 800 each way", (np.array([800.0, -800.0, 0.0, 1.0]), np.zeros(4))),
    ]


def _bt_explain(case, got, expected):
    rc_, rr = case.args
    x = rc_ - rr
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != ():
        return f"return one number, the mean over the {len(x)} pairs (got shape {g.shape})"
    if not np.isfinite(g):
        return ("the loss overflowed to inf/NaN at a large score gap: -log sigmoid(x) = "
                "log(1 + e^-x) must be computed as np.logaddexp(0, -x), which never overflows")
    with np.errstate(over="ignore"):
        pointwise = float(np.mean(np.logaddexp(0, -rc_) + np.logaddexp(0, rr)))
    variants = [
        ("sign flipped: the loss must fall as the chosen score rises above the rejected one; "
         "it is -log sigmoid(r_chosen - r_rejected)", float(np.mean(np.logaddexp(0.0, x)))),
        ("the mean over pairs, not the sum", len(x) * expected),
        ("the loss is -log sigmoid(...), which is never negative: a minus sign is missing", -expected),
        ("the median over pairs; the loss is the MEAN of -log sigmoid(r_c - r_r) (the "
         "log-likelihood of the labels, averaged)",
         float(np.median(np.logaddexp(0.0, -x)))),
        ("that scores each completion on its own (binary cross-entropy with chosen = 1, rejected "
         "= 0); Bradley-Terry sees only the difference r_chosen - r_rejected, so shifting both "
         "scores by the same amount changes nothing", pointwise),
    ]
    return _first_match(g, variants)


register(
    "preference_loss", _bt_reference, _bt_cases, explain=_bt_explain,
    hint="Bradley-Terry: P(chosen wins) = sigmoid(r_c - r_r); average -log of it over the pairs, "
         "in a form that stays finite for any score gap",
)

# ================================================================ step 2: sequence log-probs


def _slp_reference(logits, tokens, mask):
    return np.asarray(sequence_log_prob(logits, tokens, mask), dtype=float)


def _slp_cases():
    rng = np.random.default_rng(15)
    logits = rng.normal(size=(3, 5, 4))
    tokens = rng.integers(0, 4, size=(3, 6))
    mask = np.zeros((3, 6), dtype=bool)
    mask[0, 3:] = True
    mask[1, 2:5] = True
    mask[2, 5] = True
    one = (np.array([[[0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [3.0, 0.0, 0.0]]]), np.array([[0, 2, 1, 0]]),
           np.array([[False, False, True, True]]))
    big = (logits * 400.0, tokens, mask)
    excluded = ~mask[:, 1:]
    noisy = logits + 50.0 * excluded[..., None] * rng.normal(size=logits.shape)
    return [Case("one sequence, by hand", one),
            Case("a batch of 3 with prompts and padding", (logits, tokens, mask)),
            Case("the same batch with noise of size 50 on the logits of every excluded position "
                 "(prompt and padding never count: the answer must not change)",
                 (noisy, tokens, mask)),
            Case("logits in the hundreds (as an untempered model can give)", big)]


def _log_softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    top = z.max(axis=axis, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=axis, keepdims=True))


def _slp_explain(case, got, expected):
    logits, tokens, mask = case.args
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        return f"expected one number per sequence, shape {expected.shape}, got shape {g.shape}"
    if not np.isfinite(g).all():
        return ("NaN/inf: exp of large logits overflows; subtract each row's largest logit before "
                "exponentiating (log-softmax = z - max - log sum exp(z - max))")
    lp = _log_softmax(logits)
    right = np.take_along_axis(lp, tokens[:, 1:, None], -1)[..., 0]
    wrong_tok = np.take_along_axis(lp, tokens[:, :-1, None], -1)[..., 0]
    lp_axis = _log_softmax(logits, axis=1)
    axis_pick = np.take_along_axis(lp_axis, tokens[:, 1:, None], -1)[..., 0]
    counted = mask[:, 1:]
    variants = [
        ("you scored the prompt (and padding) tokens too: only positions where mask[:, 1:] is "
         "True count", right.sum(1)),
        ("mask shifted the wrong way: logits[:, t] predicts tokens[:, t+1], which mask[:, t+1] "
         "marks; use mask[:, 1:]", np.where(mask[:, :-1], right, 0).sum(1)),
        ("off by one: logits[:, t] predicts tokens[:, t+1], not tokens[:, t]",
         np.where(counted, wrong_tok, 0).sum(1)),
        ("log-softmax over the wrong axis: normalise over the vocabulary (the last axis), not "
         "over positions", np.where(counted, axis_pick, 0).sum(1)),
        ("that is the mean log-prob per token; the log-prob of a completion is the sum over its "
         "tokens", np.where(counted, right, 0).sum(1) / np.maximum(counted.sum(1), 1)),
    ]
    return _first_match(g, variants)


register(
    "sequence_log_prob", _slp_reference, _slp_cases, explain=_slp_explain,
    hint="a stable log-softmax over the vocabulary; logits at t score the token at t+1; sum "
         "where the shifted mask is True",
)

# ================================================================ step 3: missing-EOS penalty


def _eos_reference(scores, tokens, mask, penalty):
    return np.asarray(penalize_missing_eos(scores, tokens, mask, penalty), dtype=float)


def _eos_case():
    # prompts of 3 columns (left-padded, BOS first), then up to 5 sampled tokens
    tokens = np.array([
        [0, 1, 5, 6, 7, EOS, PAD, PAD],   # finished early: the last column is padding
        [1, 4, 5, 6, 6, 6, 6, 6],         # cut at the limit
        [1, EOS, 4, 7, 7, 7, 7, 7],       # a prompt holding an earlier turn's EOS; cut
        [1, 4, 5, EOS, PAD, PAD, PAD, PAD],  # EOS at once
        [1, 4, 5, 6, 7, 8, 9, EOS],       # finished on the last column
    ])
    mask = np.zeros_like(tokens, dtype=bool)
    mask[:, 3:] = tokens[:, 3:] != PAD
    return np.array([1.5, 3.0, 2.0, -0.5, 0.25]), tokens, mask


def _eos_cases():
    scores, tokens, mask = _eos_case()
    return [Case("five completions: finished early, cut, EOS only in the prompt, EOS at once, "
                 "finished on the last column", (scores, tokens, mask, 10.0)),
            Case("the same with penalty 1", (scores, tokens, mask, 1.0))]


def _eos_explain(case, got, expected):
    scores, tokens, mask, penalty = case.args
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        return f"return one score per completion, shape {expected.shape}, got shape {g.shape}"
    if np.asarray(got).dtype == bool:
        return "return the penalised scores, not the finished/cut flags"
    finished = ((tokens == EOS) & mask).any(1)

    def pen(cut):
        return np.where(cut, scores - penalty, scores)

    variants = [
        ("a completion that finished early ends in PAD, not EOS: look for EOS among its sampled "
         "tokens (where mask is True), not in the last column", pen(tokens[:, -1] != EOS)),
        ("an EOS in the prompt is not the completion's: only count EOS where mask is True",
         pen(~(tokens == EOS).any(1))),
        ("mask and tokens are aligned: mask[:, t] marks tokens[:, t] (no shift here)",
         pen(~((tokens[:, 1:] == EOS) & mask[:, :-1]).any(1))),
        ("sign: a cut completion loses the penalty (scores - penalty)",
         np.where(finished, scores, scores + penalty)),
        ("inverted: the completions WITH an EOS are finished answers; penalise the others",
         pen(finished)),
        ("only completions without EOS are penalised", scores - penalty),
    ]
    return _first_match(g, variants)


register(
    "penalize_missing_eos", _eos_reference, _eos_cases, explain=_eos_explain,
    hint="a completion is finished if EOS is among its own sampled tokens; the others were cut "
         "by the length limit and lose the penalty",
)

# ================================================================ step 4: KL-penalised rewards


def _rewards_reference(scores, logp, ref_logp, mask, beta):
    return kl_penalized_rewards(scores, logp, ref_logp, mask, beta)


def _rewards_cases():
    logp = np.array([[-1.0, -2.0, -0.5, 0.0, -1.0], [-0.3, -0.7, -0.2, 0.0, -2.0],
                     [-0.9, -0.1, -1.3, -0.4, -0.6]])
    ref_logp = np.array([[-1.5, -1.0, -0.5, -3.0, -0.2], [-0.3, -1.7, -1.0, -3.0, -0.1],
                         [-0.2, -0.6, -0.3, -1.4, -2.6]])
    mask = np.array([[True, True, True, False, False], [False, True, True, True, False],
                     [False, False, True, True, True]])
    return [Case("three completions of unequal length, beta 0.1",
                 (np.array([2.0, -1.0, 0.5]), logp, ref_logp, mask), {"beta": 0.1}),
            Case("the same, beta 0.7", (np.array([2.0, -1.0, 0.5]), logp, ref_logp, mask),
                 {"beta": 0.7})]


def _rewards_explain(case, got, expected):
    scores, logp, ref_logp, mask = case.args
    beta = case.kwargs["beta"]
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        return f"expected per-token rewards of shape {expected.shape}, got shape {g.shape}"
    rows = np.arange(len(scores))
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
    first = np.argmax(mask, axis=1)
    k1 = np.where(mask, logp - ref_logp, 0.0)
    d = ref_logp - logp
    k3 = np.where(mask, np.exp(d) - d - 1, 0.0)

    def with_score(penalty, where):
        out = np.where(mask, -penalty, 0.0)
        out[rows, where] += scores
        return out

    every = np.where(mask, -beta * k1 + scores[:, None], 0.0)
    overwrite = np.where(mask, -beta * k1, 0.0)
    overwrite[rows, last] = scores
    seq = np.zeros_like(expected)
    seq[rows, last] = scores - beta * k1.sum(1)
    variants = [
        ("the penalty's sign: reward = -beta * (logp - ref_logp), so drifting from ref costs",
         with_score(-beta * k1, last)),
        ("the score goes on each completion's LAST action token, not its first",
         with_score(beta * k1, first)),
        ("the score goes on each completion's last action token, not the last column (that is "
         "padding for a short completion)", with_score(beta * k1, np.full_like(last, mask.shape[1] - 1))),
        ("the score belongs to the finished completion: add it once, at the last action token, "
         "not to every token (which would pay for length)", every),
        ("that is k3 = exp(d) - d - 1; this step puts k1 = logp - ref_logp in the reward, whose "
         "policy gradient is exactly that of KL(pi || ref)", with_score(beta * k3, last)),
        ("you put the whole KL penalty on the last token (a sequence-level penalty); here each "
         "token pays its own -beta * (logp - ref_logp)", seq),
        ("beta is missing: the penalty is -beta * (logp - ref_logp)", with_score(k1, last)),
        ("the score REPLACED the last token's KL penalty (= instead of +=): that token pays its "
         "-beta * (logp - ref_logp) too, and the score is added on top", overwrite),
        ("that is k2 = (logp - ref_logp)^2 / 2; this step puts k1 = logp - ref_logp in the "
         "reward, whose policy gradient is exactly that of KL(pi || ref)",
         with_score(beta * np.where(mask, 0.5 * d ** 2, 0.0), last)),
        ("abs(logp - ref_logp) is not a KL estimate: k1 is the signed log-ratio (a token the "
         "reference likes more than the policy does earns a little reward), and only its "
         "average over samples is the KL", with_score(beta * np.abs(k1), last)),
    ]
    found = _first_match(g, variants)
    if found is None and not np.allclose(g[~mask], 0):
        return "padding tokens got a reward: everything outside the mask is 0"
    return found


_ALREADY_SHIFTED = ("`mask` here is already the shifted [B, T] mask, aligned with logp and "
                    "ref_logp (the caller passes mask[:, 1:]); use it as it is, do not slice it "
                    "again")


def _rewards_explain_error(case, err):
    if isinstance(err, (ValueError, IndexError)) and ("broadcast" in str(err) or "shape" in str(err)):
        return _ALREADY_SHIFTED
    return None


register(
    "kl_penalized_rewards", _rewards_reference, _rewards_cases, explain=_rewards_explain,
    explain_error=_rewards_explain_error,
    hint="every action token pays -beta times its log-ratio to the reference; the reward "
         "model's score is added once per completion, where it ends",
)

# ================================================================ step 5: advantages


def _adv_reference(rewards, mask):
    return rlhf_advantages(rewards, mask)


def _adv_cases():
    rewards = np.array([[0.1, -0.2, 1.5, 9.0, 9.0], [0.3, 0.0, -0.1, 0.4, 9.0],
                        [-0.2, 0.2, 0.0, -1.0, 0.5], [0.0, 0.6, 9.0, 9.0, 9.0]])
    mask = np.array([[True, True, True, False, False], [True, True, True, True, False],
                     [True, True, True, True, True], [True, True, False, False, False]])
    rng = np.random.default_rng(12)
    r2 = rng.normal(size=(6, 7))
    lengths = np.array([7, 3, 5, 2, 6, 4])
    m2 = np.arange(7)[None, :] < lengths[:, None]
    r2[~m2] = 5.0
    return [Case("four completions of unequal length (padding holds 9.0: not a reward)",
                 (rewards, mask)),
            Case("six random completions", (r2, m2))]


def _adv_explain(case, got, expected):
    rewards, mask = case.args
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        if g.shape == (expected.shape[0], expected.shape[1] - 1):
            return (f"expected shape {expected.shape}, got {g.shape}: {_ALREADY_SHIFTED} (rewards "
                    "and mask have the same shape)")
        return f"expected one advantage per token, shape {expected.shape}, got shape {g.shape}"
    if not np.allclose(g[~mask], 0):
        return "padding positions got an advantage: they are not actions, leave them at 0"
    r = np.where(mask, rewards, 0.0)

    def finish(to_go, baseline="column", std="mask", ddof=0):
        to_go = np.where(mask, to_go, 0.0)
        if baseline == "column":
            b = to_go.sum(0) / np.maximum(mask.sum(0), 1)
        elif baseline == "batch":
            b = to_go.sum(0) / len(to_go)
        elif baseline == "global":
            b = to_go[mask].mean()
        elif baseline == "row":
            b = (to_go.sum(1) / np.maximum(mask.sum(1), 1))[:, None]
        elif baseline == "loo":
            n = mask.sum(0)
            b = (to_go.sum(0) - to_go) / np.maximum(n - 1, 1)
        else:
            b = 0.0
        adv = np.where(mask, to_go - b, 0.0)
        if std == "mask":
            return adv / adv[mask].std(ddof=ddof)
        if std == "all":
            return adv / adv.std()
        return adv

    to_go = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]
    raw_to_go = np.cumsum(rewards[:, ::-1], axis=1)[:, ::-1]
    discounted = np.zeros_like(r)
    for gamma_ in (0.99,):
        acc = np.zeros(len(r))
        for t in range(r.shape[1] - 1, -1, -1):
            acc = r[:, t] + gamma_ * acc
            discounted[:, t] = acc
    variants = [
        ("that sums the rewards so far; the reward-to-go sums from t to the END of the completion",
         finish(np.cumsum(r, axis=1))),
        ("rewards outside the mask entered the sums: padding holds no reward (mask the rewards "
         "before summing)", finish(raw_to_go)),
        ("the baseline at a position averages over the completions that ACT there; dividing by "
         "the batch size counts padding as zeros", finish(to_go, baseline="batch")),
        ("one baseline for all positions; this step's baseline is the mean reward-to-go at each "
         "position (column)", finish(to_go, baseline="global")),
        ("no baseline subtracted", finish(to_go, baseline="none")),
        ("a per-row baseline (each completion's own mean reward-to-go) removes the very signal "
         "that tells completions apart; this step's baseline is the mean over the completions "
         "acting at the same position", finish(to_go, baseline="row")),
        ("that is a leave-one-out (RLOO) baseline, the mean of the OTHER completions at the "
         "position; a fine method, but this step's baseline includes every completion acting "
         "there", finish(to_go, baseline="loo")),
        ("discounted: RLHF uses gamma = 1 inside a completion (a plain sum of the rewards to "
         "go); the score at the end must reach the first token undiminished",
         finish(discounted)),
        ("not normalised: divide by the standard deviation over the action tokens",
         finish(to_go, std="none")),
        ("the standard deviation includes the padding zeros; take it over action tokens only",
         finish(to_go, std="all")),
        ("the standard deviation with ddof=1; this step uses the population std (ddof=0, "
         "np.std's default)", finish(to_go, ddof=1)),
    ]
    return _first_match(g, variants)


register(
    "rlhf_advantages", _adv_reference, _adv_cases, explain=_adv_explain,
    hint="reward-to-go within each completion; subtract the mean reward-to-go of the completions "
         "acting at the same position; divide by the spread over all action tokens",
)

# ================================================================ exercise 1: length penalty


def _length_reference(scores, mask, alpha):
    return np.asarray(scores, dtype=float) - alpha * np.asarray(mask).sum(axis=1)


def _length_cases():
    scores, tokens, mask = _eos_case()
    return [Case("five completions, alpha 0.3", (scores, mask, 0.3)),
            Case("the same, alpha 2", (scores, mask, 2.0))]


def _length_explain(case, got, expected):
    scores, mask, alpha = case.args
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        return f"return one score per completion, shape {expected.shape}, got shape {g.shape}"
    n = mask.sum(1)
    _, tokens, _ = _eos_case()
    has_eos = ((tokens == EOS) & mask).any(1)
    variants = [
        ("count the completion's tokens (where mask is True), not every column of the row",
         scores - alpha * mask.shape[1]),
        ("sign: a longer completion must score LOWER (scores - alpha * length)", scores + alpha * n),
        ("EOS is a sampled token too: count it in the length (the mask includes it)",
         scores - alpha * (n - has_eos)),
        ("alpha is missing", scores - n),
    ]
    return _first_match(g, variants)


register(
    "length_penalized_scores", _length_reference, _length_cases, explain=_length_explain,
    hint="the length of a completion is the number of tokens it sampled",
)

_LENGTH_CHOICES = {
    "a": "yes: any alpha above the reward of one 'great' stops it",
    "b": ("no: 'great great .' is as long as 'is great .' and the reward model scores it higher, "
          "so no per-token penalty can put the fluent one first"),
    "c": "yes: the hacked completions are longer, so a large enough alpha always wins",
    "d": "no: a length penalty changes every score by the same amount",
}


def _choice(name, choices, answer, why, question, hint):
    def reference():
        return answer

    def compare(got, expected):
        if got is None:
            return "not answered yet: set the answer to one letter"
        if not isinstance(got, str) or got.strip().lower() not in choices:
            return f"answer with one of the letters {', '.join(choices)}, got {got!r}"
        return None if got.strip().lower() == expected else "not that one"

    def explain(case, got, expected):
        return why.get(got.strip().lower()) if isinstance(got, str) else None

    register(name, reference, [Case(question)], compare=compare, explain=explain,
             hint=hint)


_choice(
    "length_penalty_question", _LENGTH_CHOICES, "b",
    {"a": ("no: subtracting alpha per token leaves the gap between two completions of the same "
           "length untouched; 'great great .' still beats 'is great .'"),
     "c": ("no: the hack does not need length; 'great great .' has as many tokens as "
           "'is great .' (4, EOS included) and scores about twice as much"),
     "d": ("no: the penalty depends on each completion's length, so it does move scores apart; "
           "it just cannot separate two completions of equal length")},
    "can a length penalty make every fluent completion outscore every hack?",
    "compute both scores for a hack and a fluent completion of the same length",
)

# ================================================================ exercise 2: ensembles


def _ensemble_reference(member_scores, lam):
    s = np.asarray(member_scores, dtype=float)
    return s.mean(axis=0) - lam * s.var(axis=0)


def _ensemble_cases():
    rng = np.random.default_rng(21)
    three = np.array([[2.0, 1.0, 4.0, 0.5], [2.2, 0.4, 5.0, 0.5], [1.8, 1.0, 3.4, 0.5]])
    return [Case("3 members, 4 completions, lam 0.5", (three, 0.5)),
            Case("5 members, 6 completions, lam 2", (rng.normal(size=(5, 6)), 2.0))]


def _ensemble_explain(case, got, expected):
    s, lam = case.args
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        return (f"one score per completion, shape {expected.shape} (average over the members, "
                f"axis 0), got shape {g.shape}")
    variants = [
        ("that penalises the standard deviation; uncertainty-weighted optimisation subtracts "
         "lam times the VARIANCE", s.mean(0) - lam * s.std(0)),
        ("variance with ddof=1; use the members' population variance (np.var's default)",
         s.mean(0) - lam * s.var(0, ddof=1)),
        ("sign: disagreement must LOWER the score (mean - lam * var)", s.mean(0) + lam * s.var(0)),
        ("that is the worst case over members (min); this exercise asks for mean - lam * var",
         s.min(0)),
        ("lam is missing", s.mean(0) - s.var(0)),
    ]
    return _first_match(g, variants)


register(
    "ensemble_reward", _ensemble_reference, _ensemble_cases, explain=_ensemble_explain,
    hint="average the members' scores of each completion, then subtract lam times how much "
         "they disagree about it",
)

_ENSEMBLE_CHOICES = {
    "a": "yes: the members disagree most about the hack, so any lam > 0 puts the fluent one first",
    "b": ("not at any sensible lam: every bag-of-words member rewards each 'great', so they agree "
          "the hack is good; their variance is a few hundredths per 'great' while the mean "
          "gains about 2 per 'great', so lam must be in the tens"),
    "c": "no: an ensemble's mean is always the same as a single reward model's score",
    "d": "yes: the hack contains no verb, which every member punishes",
}

_choice(
    "ensemble_question", _ENSEMBLE_CHOICES, "b",
    {"a": ("no: measure it; the members do disagree more about the hack, but their variance on "
           "'is great great .' is a few hundredths against a mean about 2 higher, so the lam "
           "that flips the order is in the tens"),
     "c": ("no: the mean of members trained on resampled data differs from one model's score "
           "(slightly); the question is whether the penalty flips the order"),
     "d": ("no: the members only count words, and the verb weights are small; a verb is not "
           "required to score high")},
    "does the ensemble penalty make 'is quite great .' outscore 'is great great .'?",
    "measure how much the members disagree about each completion, and the lam that would flip them",
)

# ================================================================ exercise 3: token GAE


def _token_gae_reference(rewards, values, mask, finished, last_values, lam):
    rewards = np.asarray(rewards, dtype=float)
    values = np.asarray(values, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    adv = np.zeros_like(rewards)
    for b in range(len(rewards)):
        cols = np.flatnonzero(mask[b])
        following = 0.0 if finished[b] else float(last_values[b])
        running = 0.0
        for t in cols[::-1]:
            delta = rewards[b, t] + following - values[b, t]
            running = delta + lam * running
            adv[b, t] = running
            following = values[b, t]
    return adv


def _token_gae_cases():
    rewards = np.array([[0.0, -0.1, 0.2, 1.5, 0.0], [0.0, 0.1, -0.3, 0.0, 0.4],
                        [0.0, 0.0, 0.5, 0.0, 0.0]])
    values = np.array([[7.0, 0.8, 1.0, 1.2, 7.0], [7.0, 0.3, 0.6, 0.2, 0.9],
                       [7.0, 7.0, 0.4, 7.0, 7.0]])  # 7.0: values at non-action positions
    mask = np.array([[False, True, True, True, False], [False, True, True, True, True],
                     [False, False, True, False, False]])
    finished = np.array([True, False, False])
    last_values = np.array([3.0, 2.0, -1.0])
    args = (rewards, values, mask, finished, last_values)
    return [Case("three completions: finished, cut, cut after one token; lam 0.95", args + (0.95,)),
            Case("the same, lam 0.5", args + (0.5,))]


def _token_gae_explain(case, got, expected):
    rewards, values, mask, finished, last_values, lam = case.args
    g = _as_float(got)
    if g is None:
        return None
    if g.shape != expected.shape:
        return f"one advantage per token, shape {expected.shape}, got shape {g.shape}"
    if not np.allclose(g[~mask], 0):
        return "positions outside the mask got an advantage: they are not actions, leave them at 0"

    def run(fin=finished, last=last_values, lam_=lam, next_from_row=False, gamma=1.0,
            lam_on_delta=False):
        adv = np.zeros_like(rewards)
        for b in range(len(rewards)):
            cols = np.flatnonzero(mask[b])
            following = 0.0 if fin[b] else float(last[b])
            if next_from_row and cols[-1] + 1 < rewards.shape[1]:
                following = values[b, cols[-1] + 1]
            running = 0.0
            for t in cols[::-1]:
                delta = rewards[b, t] + gamma * following - values[b, t]
                running = (lam_ * delta + running) if lam_on_delta else (delta + gamma * lam_ * running)
                adv[b, t] = running
                following = values[b, t]
        return adv

    right = run()
    whitened = np.where(mask, (right - right[mask].mean()) / right[mask].std(), 0.0)
    flat = np.zeros_like(rewards)
    running, following = 0.0, 0.0
    order = [(b, t) for b in range(len(rewards)) for t in np.flatnonzero(mask[b])]
    for b, t in order[::-1]:
        delta = rewards[b, t] + following - values[b, t]
        running = delta + lam * running
        flat[b, t] = running
        following = values[b, t]
    variants = [
        ("a completion that ended with EOS is terminal: nothing follows it, so the value after "
         "its last token is 0, not last_values", run(fin=np.zeros_like(finished))),
        ("the length limit is a truncation, not an end: a cut completion's last delta bootstraps "
         "from last_values (lesson 09)", run(fin=np.ones_like(finished))),
        ("after a completion's last action token the next column is padding (or nothing): its "
         "value is not the next state's; use 0 (finished) or last_values (cut)",
         run(next_from_row=True)),
        ("that is the one-step TD error (lam = 0); GAE sums lam^k delta_{t+k}", run(lam_=0.0)),
        ("that is lam = 1 (Monte Carlo minus V); GAE weights later deltas by lam^k", run(lam_=1.0)),
        ("the recursion ran across completions: each completion is its own episode",
         flat),
        ("those are the returns (advantage + value); return the advantages",
         np.where(mask, run() + values, 0.0)),
        ("discounted: this exercise (like TRL's PPO) uses gamma = 1 inside a completion",
         run(gamma=0.99)),
        ("whitened: return the raw GAE advantages; normalising them (as PPO often does) is a "
         "separate step of the trainer", whitened),
        ("lam multiplies the running sum of later deltas, not the current delta: A_t = delta_t "
         "+ lam * A_{t+1}", run(lam_on_delta=True)),
    ]
    return _first_match(g, variants)


register(
    "token_gae", _token_gae_reference, _token_gae_cases, explain=_token_gae_explain,
    hint="lesson 09's GAE with gamma = 1, one completion at a time: what is the state after a "
         "completion's last token worth if it ended with EOS, and what if the length limit cut it?",
)
