"""Lesson 14's exercises (GRPO with a verifier).

- Build it: ``group_advantages`` (GRPO's and Dr. GRPO's advantage), ``kl_estimators`` (k1, k2,
  k3), ``token_aggregation`` (TRL's ``loss_type``: ``grpo``, ``dapo``, ``dr_grpo``) and
  ``grpo_loss_value`` (the clipped surrogate plus the KL term, with TRL's KL correction);
- Exercises: ``rloo_advantages`` and ``rloo_factor`` (a number), ``pass_at_k`` (the unbiased
  estimator of Chen et al. 2021) and ``gspo_loss`` (GSPO's sequence-level ratio, graded through
  ``value_and_grad``).

Each ``explain`` recomputes the typical wrong answers (the population std, a batch-wide
baseline, a flipped log-ratio, padding counted, the other aggregation, a missing ``min``, the
plug-in pass@k, a summed log-ratio, ...) and names the one that matches.
"""

import math

import numpy as np

from ...core import autodiff as ad
from ...core.kl import kl_estimate
from ...core.losses import (
    aggregate_token_loss,
    grpo_advantages,
    grpo_loss,
    ppo_clip_objective,
    rloo_advantages,
)
from ...search.decoding import pass_at_k
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _matches(got, candidate, rtol=1e-7, atol=1e-10) -> bool:
    """True if ``got`` has ``candidate``'s shape and (finite) values: a wrong answer we know."""
    try:
        got, candidate = np.asarray(got, dtype=float), np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return (got.shape == candidate.shape and bool(np.all(np.isfinite(got)))
            and bool(np.all(np.isfinite(candidate)))
            and np.allclose(got, candidate, rtol=rtol, atol=atol))


def _has_nan(got) -> bool:
    try:
        return bool(np.isnan(np.asarray(got, dtype=float)).any())
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------ Build it 1: group_advantages

def _group_advantages_reference(rewards, group_size, scale=True):
    return grpo_advantages(rewards, group_size, scale=scale)


def _group_advantages_cases():
    rng = np.random.default_rng(14)
    graded = np.array([1.0, 0.0, 3.0, 2.0, 5.0, 4.0, 4.0, 7.0])
    return [
        Case("two groups of 4 verifier rewards, scale=True",
             (np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]), 4, True)),
        Case("graded rewards, two groups whose means differ, scale=True", (graded, 4, True)),
        Case("an all-wrong group next to a mixed one, scale=True",
             (np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.0]), 3, True)),
        Case("Dr. GRPO: the graded rewards with scale=False", (graded, 4, False)),
        Case("8 groups of 8 random 0/1 rewards, scale=True",
             (rng.integers(0, 2, size=64).astype(float), 8, True)),
    ]


def _group_advantages_explain(case, got, expected):
    rewards, g, scale = case.args
    if _has_nan(got):
        return ("NaN: a group whose rewards are all equal has std 0; add eps = 1e-4 to the std "
                "(its advantages are then exactly 0)")
    if np.shape(got) != np.shape(expected):
        return f"return one advantage per completion, shape {np.shape(expected)}"
    groups = rewards.reshape(-1, g)
    centred = groups - groups.mean(axis=1, keepdims=True)
    std1 = groups.std(axis=1, ddof=1, keepdims=True)
    if scale and _matches(got, (centred / (groups.std(axis=1, keepdims=True) + 1e-4)).ravel()):
        return "you used the population std (ddof=0); GRPO, like TRL, divides by the sample std (ddof=1)"
    if _matches(got, (rewards - rewards.mean()) / (rewards.std(ddof=1) + 1e-4)) or \
            _matches(got, rewards - rewards.mean()):
        return ("you used one mean for the whole batch: each prompt's group of G consecutive "
                "completions needs its own mean")
    if scale and _matches(got, centred.ravel() / (rewards.std(ddof=1) + 1e-4)):
        return ("you divided by the std of the whole batch (TRL's scale_rewards='batch'); "
                "scale=True divides each group by its own std")
    strided = rewards.reshape(g, -1).T
    s_centred = strided - strided.mean(axis=1, keepdims=True)
    if _matches(got, (s_centred / (strided.std(axis=1, ddof=1, keepdims=True) + 1e-4)).T.ravel()) \
            or _matches(got, s_centred.T.ravel()):
        return ("your groups are strided (every B/G-th row): a group is G *consecutive* rows, "
                "rewards.reshape(-1, G)")
    if scale and _matches(got, (centred / np.sqrt(std1**2 + 1e-4)).ravel()):
        return "eps goes outside the square root, as in TRL: (std + 1e-4)"
    if not scale and _matches(got, (centred / (std1 + 1e-4)).ravel()):
        return "scale=False (Dr. GRPO) means no division by the std: return r - mean of the group"
    if scale and _matches(got, centred.ravel()):
        return "scale=True divides each group's centred rewards by its sample std + 1e-4"
    return None


register(
    "group_advantages", _group_advantages_reference, _group_advantages_cases,
    explain=_group_advantages_explain,
    hint="one row per prompt: reshape to [B/G, G]; subtract each row's mean; with scale, divide "
         "by that row's sample std plus 1e-4; constant rows must come out 0",
)


# ------------------------------------------------------------ Build it 2: kl_estimators

def _kl_estimators_reference(logp, ref_logp):
    return tuple(np.asarray(kl_estimate(logp, ref_logp, kind)) for kind in ("k1", "k2", "k3"))


def _kl_estimators_cases():
    rng = np.random.default_rng(3)
    logp = -rng.gamma(2.0, 0.6, size=(3, 4))
    return [
        Case("one token likelier under the policy, one under the reference",
             (np.array([-0.5, -2.0]), np.array([-1.5, -0.7]))),
        Case("a batch of per-token log-probs [3, 4]", (logp, logp + rng.normal(0.0, 0.8, size=(3, 4)))),
        Case("policy = reference: every estimate is 0", (np.array([-1.2, -0.1, -3.0]),) * 2),
    ]


def _kl_estimators_explain(case, got, expected):
    logp, ref = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return "return the tuple (k1, k2, k3), each shaped like logp"
    d = ref - logp
    k1, k2, k3 = got
    e1, e2, e3 = expected
    if _matches(k1, e3) and _matches(k3, e1):
        return "the order is (k1, k2, k3)"
    if not _matches(k1, e1) and _matches(k1, d):
        return "k1 = -d = logp - ref_logp, with d = ref_logp - logp (the log of ref/pi): wrong sign"
    if not _matches(k2, e2) and _matches(k2, d * d):
        return "k2 is d**2 / 2: you left out the 1/2"
    if not _matches(k3, e3):
        if _matches(k3, np.exp(-d) + d - 1):
            return "k3 = exp(d) - d - 1 with d = ref_logp - logp; you flipped d"
        if _matches(k3, np.exp(d) - d):
            return "k3 = exp(d) - d - 1: without the -1 it is 1, not 0, where the policy equals the reference"
        if _matches(k3, np.exp(d) + d - 1):
            return ("k3 = exp(d) - d - 1: you added d; the -d is what makes k3 >= 0 "
                    "(exp(d) >= 1 + d) and 0 where the policy equals the reference")
    return None


register(
    "kl_estimators", _kl_estimators_reference, _kl_estimators_cases,
    explain=_kl_estimators_explain,
    hint="all three are functions of one number per token, d = ref_logp - logp (the log of "
         "ref/pi at the sampled token); each must be 0 where the policy equals the reference",
)


# ------------------------------------------------------------ Build it 3: token_aggregation

def _aggregation_reference(per_token, mask, loss_type, max_completion_length=None):
    return float(aggregate_token_loss(per_token, mask, loss_type, max_completion_length))


def _aggregation_case_data(seed):
    rng = np.random.default_rng(seed)
    lengths = np.array([1, 4, 2])  # the longest (4) is shorter than the array (5)
    mask = np.arange(5)[None, :] < lengths[:, None]
    per_token = rng.normal(0.0, 1.0, size=(3, 5))
    per_token[~mask] = 50.0  # what padding holds must never count
    return per_token, mask


def _aggregation_cases():
    per_token, mask = _aggregation_case_data(7)
    with_inf = per_token.copy()
    with_inf[~mask] = -np.inf  # as padding log-probs can be
    return [
        Case("'grpo' (the sequence mean), completions of 1, 4 and 2 tokens", (per_token, mask, "grpo")),
        Case("'dapo' (the token mean), the same completions", (per_token, mask, "dapo")),
        Case("'dr_grpo', max_completion_length=6", (per_token, mask, "dr_grpo", 6)),
        Case("'dapo' with -inf on every padding entry", (with_inf, mask, "dapo")),
    ]


def _aggregation_explain(case, got, expected):
    per_token, mask, loss_type = case.args[:3]
    if _has_nan(got):
        return ("NaN: padding holds -inf here and -inf * 0 is NaN; select the action tokens "
                "(np.where(mask, x, 0)) instead of multiplying by the mask")
    x = np.where(mask, per_token, 0.0)
    counts = mask.sum(axis=1)
    b, t = mask.shape
    seq_mean = float(np.mean(x.sum(axis=1) / counts))
    tok_mean = float(x.sum() / counts.sum())
    finite = np.isfinite(per_token).all()
    if finite and _matches(got, float(np.mean(per_token))):
        return "the padding entries entered the mean: only entries where mask is True count"
    if finite and _matches(got, float(np.mean(per_token.sum(axis=1) / counts))):
        return "the padding entries entered the sums: only entries where mask is True count"
    if loss_type == "grpo" and _matches(got, tok_mean):
        return ("'grpo' averages each completion over its own tokens first, then the completions; "
                "that was 'dapo'")
    if loss_type == "dapo" and _matches(got, seq_mean):
        return ("'dapo' is one mean over all action tokens of the batch; that was 'grpo' (the "
                "sequence mean)")
    if loss_type == "grpo" and _matches(got, float(np.sum(x.sum(axis=1) / counts))):
        return "after averaging each completion, average over the completions (divide by B)"
    if loss_type == "grpo" and _matches(got, float(np.mean(x.sum(axis=1) / t))):
        return ("you divided each completion's sum by the array's width; 'grpo' divides by that "
                "completion's own number of action tokens, mask.sum(axis=1)")
    if loss_type == "dr_grpo":
        length = case.args[3]
        if _matches(got, tok_mean):
            return ("'dr_grpo' divides by a constant, B * max_completion_length, not by the "
                    "number of tokens in the batch (that is 'dapo')")
        if _matches(got, x.sum() / (b * t)):
            return ("you divided by B times the array's width; Dr. GRPO's constant is B * "
                    "max_completion_length, the sampling limit, whatever the padding")
        if _matches(got, x.sum() / (b * counts.max())):
            return ("you divided by B times the longest completion in this batch, which changes "
                    "from batch to batch; the constant is B * max_completion_length")
        if _matches(got, x.sum() / length):
            return "divide by B * max_completion_length: the number of completions is missing"
    return None


register(
    "token_aggregation", _aggregation_reference, _aggregation_cases, explain=_aggregation_explain,
    hint="keep the action tokens (np.where(mask, x, 0)); 'grpo': mean over each row's own tokens, "
         "then over rows; 'dapo': sum / number of action tokens; 'dr_grpo': sum / (B * max length)",
)


# ------------------------------------------------------------ Build it 4: grpo_loss_value

def _loss_reference(logp, old_logp, ref_logp, advantages, mask, clip=0.2, beta=0.04,
                    loss_type="dapo", max_completion_length=None, kl_correction=False):
    return float(grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip=clip, kl_coef=beta,
                           aggregate=loss_type, max_completion_length=max_completion_length,
                           kl_correction=kl_correction).loss)


def _loss_variant(logp, old, ref, adv, mask, clip=0.2, beta=0.04, loss_type="dapo",
                  max_completion_length=None, kl_correction=False, *, objective="min",
                  sign=1.0, kl_sign=1.0, flip_d=False, kl_token_mean=False, inverse_ratio=False):
    """A numpy GRPO loss with one mistake switched on (for the explanations)."""
    x = lambda a: np.where(mask, a, 0.0)  # noqa: E731
    ratio = np.exp(x(logp) - x(old))
    a = adv[:, None] * np.ones_like(logp)
    clipped = np.clip(ratio, 1 - clip, 1 + clip)
    surrogate = {"min": np.minimum(ratio * a, clipped * a), "max": np.maximum(ratio * a, clipped * a),
                 "ratio": ratio * a, "clipped": clipped * a}[objective]
    d = x(ref) - x(logp)
    d = -d if flip_d else d
    k3 = np.exp(d) - d - 1
    if kl_correction:
        k3 = k3 * (1.0 / ratio if inverse_ratio else ratio)

    def agg(v, kind):
        return float(aggregate_token_loss(v, mask, kind, max_completion_length))

    kl = agg(k3, "dapo" if kl_token_mean else loss_type)
    return sign * -agg(surrogate, loss_type) + kl_sign * beta * kl


def _loss_case_data(seed):
    rng = np.random.default_rng(seed)
    lengths = np.array([2, 5, 3, 1])
    mask = np.arange(5)[None, :] < lengths[:, None]
    old = -rng.gamma(2.0, 0.5, size=(4, 5))
    logp = old + rng.normal(0.0, 0.35, size=(4, 5))  # ratios inside and outside [0.8, 1.2]
    ref = old + rng.normal(0.0, 0.5, size=(4, 5))
    ref[~mask] = -np.inf
    adv = np.array([1.3, -0.6, 0.9, -1.1])
    return logp, old, ref, adv, mask


def _loss_cases():
    data = _loss_case_data(11)
    return [
        Case("'dapo', ratios inside and outside [0.8, 1.2], advantages of both signs", data),
        Case("'grpo' (sequence mean), beta=0.5", data, {"beta": 0.5, "loss_type": "grpo"}),
        Case("'dr_grpo', max_completion_length=6", data,
             {"loss_type": "dr_grpo", "max_completion_length": 6}),
        Case("kl_correction=True, beta=0.5", data, {"beta": 0.5, "kl_correction": True}),
        Case("a tighter clip, 0.1", data, {"clip": 0.1}),
    ]


def _loss_explain(case, got, expected):
    try:
        got = float(got)
    except (TypeError, ValueError):
        return "return the loss as one number"
    if np.isnan(got):
        return "NaN: padding holds -inf in ref_logp; select action tokens before any arithmetic"
    kwargs = dict(case.kwargs)
    corrected = bool(kwargs.get("kl_correction"))
    # (arguments changed, mistake switched on, diagnosis)
    checks = [
        ({}, {"objective": "clipped"}, "you always used the clipped ratio: take min(r A, clip(r) A), "
                                       "so the clip only removes gains beyond the trust region"),
        ({}, {"objective": "ratio"}, "the ratio was never clipped: min(r A, clip(r, 1-clip, 1+clip) A)"),
        ({}, {"objective": "max"}, "max instead of min: the pessimistic (smaller) objective is kept"),
        ({}, {"sign": -1.0}, "wrong sign on the surrogate: the loss is minus the clipped objective"),
        ({}, {"kl_sign": -1.0}, "the KL term is a penalty: add beta * k3 to the loss"),
        ({}, {"flip_d": True}, "k3 uses d = ref_logp - logp: exp(d) - d - 1"),
        ({}, {"kl_token_mean": True}, "the KL term is aggregated like the surrogate (the same loss_type)"),
        ({"beta": 0.0}, {}, "the KL term is missing: add beta times the aggregated k3"),
    ]
    if kwargs.get("clip", 0.2) != 0.2:
        checks.append(({"clip": 0.2}, {}, "you clipped to [0.8, 1.2] whatever the clip argument: use clip"))
    if corrected:
        checks += [
            ({}, {"inverse_ratio": True},
             "the correction multiplies k3 by r = pi/pi_old = exp(logp - old_logp)"),
            ({"kl_correction": False}, {}, "kl_correction=True multiplies each token's k3 by its ratio r"),
        ]
    for changed, mistake, why in checks:
        if _matches(got, _loss_variant(*case.args, **{**kwargs, **changed}, **mistake), rtol=1e-6):
            return why
    return None


register(
    "grpo_loss_value", _loss_reference, _loss_cases, explain=_loss_explain,
    hint="per action token: r = exp(logp - old_logp), -min(r A, clip(r, 1-clip, 1+clip) A) + "
         "beta * k3 (times r with kl_correction); aggregate both with your token aggregation",
)


# ------------------------------------------------------------ Exercise 1: rloo_advantages

def _rloo_reference(rewards, group_size):
    return rloo_advantages(rewards, group_size)


def _rloo_cases():
    rng = np.random.default_rng(5)
    return [
        Case("two groups of 4 verifier rewards", (np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]), 4)),
        Case("graded rewards, groups of 3 with different means",
             (np.array([2.0, 0.0, 1.0, 7.0, 4.0, 4.0]), 3)),
        Case("G = 2: each completion's baseline is the other one", (np.array([1.0, 0.0, 3.0, 3.0]), 2)),
        Case("6 groups of 5 random rewards", (rng.normal(size=30), 5)),
    ]


def _rloo_explain(case, got, expected):
    rewards, g = case.args
    if np.shape(got) != np.shape(expected):
        return f"return one advantage per completion, shape {np.shape(expected)}"
    groups = rewards.reshape(-1, g)
    total = groups.sum(axis=1, keepdims=True)
    if _matches(got, (groups - groups.mean(axis=1, keepdims=True)).ravel()):
        return ("your baseline includes the completion itself (that is r - mean, GRPO's): RLOO's "
                "baseline is the mean of the *other* G - 1 rewards")
    if _matches(got, (groups - (total - groups) / g).ravel()):
        return "the other rewards are G - 1, not G: divide their sum by G - 1"
    n = rewards.size
    if _matches(got, rewards - (rewards.sum() - rewards) / (n - 1)):
        return "leave one out within each prompt's group of G consecutive rows, not over the whole batch"
    centred = groups - groups.mean(axis=1, keepdims=True)
    if _matches(got, (centred / (groups.std(axis=1, ddof=1, keepdims=True) + 1e-4)).ravel()):
        return "that is GRPO's scaled advantage; RLOO neither includes the sample nor divides by a std"
    return None


register(
    "rloo_advantages", _rloo_reference, _rloo_cases, explain=_rloo_explain,
    hint="in each group, the baseline of completion i is the average reward of the others",
)


def _rloo_factor_reference():
    return 8 / 7


def _rloo_factor_explain(case, got, expected):
    try:
        value = float(got)
    except (TypeError, ValueError):
        return "answer with a number"
    if np.isclose(value, 7 / 8):
        return "the other way round: r_i - mean_{-i} is the larger one"
    if np.isclose(value, 1.0):
        return "they differ: r_i - mean includes r_i itself in the mean"
    if abs(value - 8 / 7) < 5e-3:
        return "close: give it to 6 digits (a fraction like 8 / 7 is fine)"
    return None


register(
    "rloo_factor", _rloo_factor_reference, [Case("G = 8")], explain=_rloo_factor_explain,
    hint="write mean_{-i} in terms of the group mean and r_i, then simplify r_i - mean_{-i}",
)


# ------------------------------------------------------------ Exercise 2: pass_at_k

def _pass_at_k_reference(n, c, k):
    return float(pass_at_k(n, c, k))


def _pass_at_k_cases():
    return [
        Case("n=10 samples, c=3 passed, k=1", (10, 3, 1)),
        Case("n=10, c=3, k=5", (10, 3, 5)),
        Case("n=200, c=0, k=10: nothing passed", (200, 0, 10)),
        Case("n=20, c=18, k=5: every 5 samples include a pass", (20, 18, 5)),
        Case("n=5, c=5, k=2: every sample passed", (5, 5, 2)),
        Case("n=5000, c=10, k=1000: binomials far beyond a float", (5000, 10, 1000)),
    ]


def _pass_at_k_explain(case, got, expected):
    n, c, k = case.args
    try:
        got = float(got)
    except (TypeError, ValueError):
        return "return one number"
    if np.isnan(got):
        return ("NaN: C(n, k) overflowed (inf / inf); use the product form "
                "1 - prod_{i=n-c+1}^{n} (1 - k/i), or exact integers (math.comb)")
    # exact comparisons (_matches), tried in this order: near 1 the plug-in and the off-by-one
    # product are both within np.isclose's default tolerance of the right answer
    if _matches(got, 1 - (1 - c / n) ** k) and not _matches(got, expected):
        return ("that is the plug-in 1 - (1 - c/n)^k, which treats the k tries as drawn with "
                "replacement; it is biased low: use 1 - C(n-c, k)/C(n, k)")
    if _matches(got, c / n) and k > 1:
        return "c/n is pass@1; pass@k is the chance that k of the n samples include a pass"
    lo = 1.0 - math.prod(1.0 - k / i for i in range(n - c, n + 1)) if n - c >= 1 else None
    hi = 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n)) if c >= 1 else None
    if (lo is not None and _matches(got, lo)) or (hi is not None and _matches(got, hi)):
        return "off by one in the product: i runs from n - c + 1 to n (c factors)"
    return None


def _pass_at_k_explain_error(case, err):
    if isinstance(err, OverflowError):
        return ("C(n, k) does not fit in a float; use the product form "
                "1 - prod_{i=n-c+1}^{n} (1 - k/i), or divide the exact integers")
    if isinstance(err, ZeroDivisionError):
        return "a division by zero: the product runs over i = n - c + 1 ... n, never i = 0"
    return None


register(
    "pass_at_k", _pass_at_k_reference, _pass_at_k_cases, explain=_pass_at_k_explain,
    explain_error=_pass_at_k_explain_error,
    hint="pass@k = 1 - P(all k picked samples failed), picking k of the n without replacement",
)


# ------------------------------------------------------------ Exercise 3: gspo_loss

def _gspo_reference(logp, old_logp, advantages, mask, clip=0.2):
    lr = ad.where(mask, logp - old_logp, 0.0)
    seq = ad.sum(lr, axis=1) / mask.sum(axis=1).astype(np.float64)
    ratio = ad.exp(seq)
    return -ad.mean(ppo_clip_objective(ratio, advantages, clip))


def _gspo_call(fn, logp, old_logp, advantages, mask, clip=0.2):
    value, grad = ad.value_and_grad(lambda lp: fn(lp, old_logp, advantages, mask, clip))(logp)
    return float(value), np.asarray(grad, dtype=float)


def _gspo_case_data(seed, spread):
    rng = np.random.default_rng(seed)
    lengths = np.array([1, 6, 3, 4])
    mask = np.arange(6)[None, :] < lengths[:, None]
    old = -rng.gamma(2.0, 0.5, size=(4, 6))
    logp = old + rng.normal(0.0, spread, size=(4, 6))
    logp[~mask] = -30.0  # padding: whatever it holds must not count
    return logp, old, np.array([1.0, -0.5, 0.8, -1.2]), mask


def _gspo_cases():
    return [
        Case("sequence ratios inside [0.8, 1.2]", (*_gspo_case_data(2, 0.05), 0.2)),
        Case("some sequence ratios outside [0.8, 1.2]", (*_gspo_case_data(4, 0.5), 0.2)),
        Case("a tight clip, 0.05", (*_gspo_case_data(6, 0.15), 0.05)),
    ]


def _gspo_variant(logp, old, adv, mask, clip, *, reduce="mean", per_token=False, objective="min"):
    lr = np.where(mask, logp - old, 0.0)
    counts = mask.sum(axis=1)
    if per_token:
        r = np.exp(lr)
        o = np.minimum(r * adv[:, None], np.clip(r, 1 - clip, 1 + clip) * adv[:, None])
        return float(-np.mean(np.where(mask, o, 0.0).sum(axis=1) / counts))
    s = {"mean": lr.sum(axis=1) / counts, "sum": lr.sum(axis=1),
         "width": lr.sum(axis=1) / mask.shape[1]}[reduce]
    r = np.exp(s)
    o = {"min": np.minimum(r * adv, np.clip(r, 1 - clip, 1 + clip) * adv), "ratio": r * adv}[objective]
    return float(-np.mean(o))


def _gspo_explain(case, got, expected):
    if not isinstance(got, tuple) or len(got) != 2:
        return None
    value, grad = got
    e_value, e_grad = expected
    args = case.args
    if np.isclose(value, e_value, rtol=1e-9):
        if not np.any(grad):
            return ("the value is right but the gradient is zero: the loss was not built from the "
                    "traced logp (np.* functions or .value cut the path); use rc operations")
        return None
    for flags, why in (
        ({"reduce": "sum"}, "the sequence ratio is exp of the *mean* token log-ratio (a geometric "
                            "mean), not of the sum: a summed log-ratio makes long completions' "
                            "ratios explode or vanish"),
        ({"per_token": True}, "that is GRPO's per-token ratio; GSPO uses one ratio per completion"),
        ({"reduce": "width"}, "the mean runs over each completion's own tokens (mask), not over the "
                              "array's width"),
        ({"objective": "ratio"}, "the sequence ratio is clipped too: min(s A, clip(s) A)"),
    ):
        if np.isclose(value, _gspo_variant(*args, **flags), rtol=1e-9):
            return why
    if np.isclose(value, -e_value, rtol=1e-9):
        return "wrong sign: the loss is minus the clipped objective"
    return None


def _gspo_explain_error(case, err):
    text = str(err)
    if "ufunc" in text or "Tensor" in text:
        return ("a numpy function was applied to the traced logp: use rc.exp, rc.where, rc.sum, "
                "rc.minimum, rc.clip, rc.mean")
    return None


register(
    "gspo_loss", _gspo_reference, _gspo_cases, call=_gspo_call, explain=_gspo_explain,
    explain_error=_gspo_explain_error,
    hint="one ratio per completion, s = exp(mean of its tokens' log-ratios); then PPO's clipped "
         "objective with that s, averaged over completions; write it with rc operations",
)


# ------------------------------------------------------------ Exercise 3b: why the mean (a question)

_GSPO_SUM = {
    "a": "nothing changes: the clip keeps every ratio inside [1 - eps, 1 + eps] anyway",
    "b": "a long answer's ratio becomes a product of many token ratios, so tiny per-token changes "
         "throw it outside [1 - eps, 1 + eps], where the clip cuts its gradient: how far an answer "
         "may move would depend on its length",
    "c": "long answers would get smaller ratios, so they would be pushed harder",
    "d": "only the loss's value changes, not its gradient",
}


def _gspo_sum_compare(got, expected):
    answer = str(got).strip().lower() if got is not None else ""
    if answer == expected:
        return None
    if answer not in _GSPO_SUM:
        return f"answer with one of {', '.join(repr(k) for k in _GSPO_SUM)}"
    return f"not {answer!r}"


def _gspo_sum_explain(case, got, expected):
    if got is None:
        return "not answered yet: set the answer to one of the letters"
    return {
        "a": ("the clip bounds the clipped branch only; min(s A, clip(s) A) keeps the smaller, and "
              "once s is outside the range on the side that matters the gradient is zero"),
        "c": ("exp(sum) is not smaller for long answers in general: it multiplies the token ratios, "
              "so it moves further from 1 in whichever direction the tokens moved"),
        "d": ("the gradient of exp(sum of log-ratios) is s times the sum of token gradients: both the "
              "scale and the clipping (a zero gradient outside the range) change"),
    }.get(str(got).strip().lower())


register(
    "gspo_sum_question", lambda: "b",
    [Case("what goes wrong for long answers if s = exp(sum of token log-ratios)?")],
    compare=_gspo_sum_compare, explain=_gspo_sum_explain,
    hint="an answer of 100 tokens, each of whose ratios moved by 1%: what is the product of the 100 ratios?",
)
