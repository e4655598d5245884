"""Exercises of lessons 11 (importance sampling) and 12 (reward models and RLHF)."""

import numpy as np

from ...core import importance
from ...core.kl import kl_estimate, kl_penalized_rewards
from ...core.tokens import sequence_log_prob
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _probs(rng, shape):
    x = rng.random(shape) + 0.05
    return x / x.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- lesson 11

def _ess_cases():
    rng = np.random.default_rng(11)
    return [
        Case("equal weights: ESS = n", (np.ones(5),)),
        Case("one weight carries everything", (np.array([0.0, 0.0, 3.0, 0.0]),)),
        Case("random weights [50]", (rng.exponential(size=50),)),
    ]


def _ess_explain(case, got, expected):
    w = case.args[0]
    if np.isclose(got, np.sum(w**2) / np.sum(w) ** 2):
        return "upside down: ESS = (sum w)^2 / sum w^2, which is n for equal weights"
    if np.isclose(got, np.sum(w) ** 2 / np.sum(w**2) / len(w)):
        return "you divided by n: the ESS is a count of samples, not a fraction"
    return None


register(
    "effective_sample_size", importance.effective_sample_size, _ess_cases, explain=_ess_explain,
    hint="(w.sum() ** 2) / (w ** 2).sum()",
)


def _iw_reference(target_probs, behavior_probs, actions):
    return importance.importance_weights(target_probs, behavior_probs, actions)


def _iw_cases():
    rng = np.random.default_rng(12)
    t, b = _probs(rng, (6, 3)), _probs(rng, (6, 3))
    return [
        Case("one shared row [3]",
             (np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.25, 0.5]), np.array([0, 1, 2, 2]))),
        Case("one row per sample [6, 3]", (t, b, rng.integers(0, 3, size=6))),
    ]


def _iw_explain(case, got, expected):
    t, b, a = (np.asarray(x) for x in case.args)
    pick = (lambda p: p[a]) if t.ndim == 1 else (lambda p: np.take_along_axis(p, a[:, None], -1)[:, 0])
    got = np.asarray(got, dtype=float)
    if got.shape == expected.shape and np.allclose(got, pick(b) / pick(t)):
        return "inverted: the weight is target / behaviour, pi(a) / b(a), not b(a) / pi(a)"
    if got.shape == expected.shape and np.allclose(got, pick(t)):
        return "you returned pi(a): divide by the probability b(a) with which the data was drawn"
    return None


register(
    "importance_weights", _iw_reference, _iw_cases, explain=_iw_explain,
    hint="pick each sample's action probability from both rows, then target / behaviour",
)


def _estimate_cases():
    rng = np.random.default_rng(13)
    return [
        Case("three samples", (np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.0]))),
        Case("random [40]", (rng.normal(size=40), rng.exponential(size=40))),
    ]


def _estimate_explain(case, got, expected):
    g, w = case.args
    if not isinstance(got, tuple) or len(got) != 3:
        return "return the triple (ordinary, weighted, ess)"
    if np.isclose(got[0], np.sum(w * g) / np.sum(w)):
        return "your 'ordinary' estimate is the weighted one: ordinary divides by n, not by sum(w)"
    if np.isclose(got[1], np.mean(w * g)):
        return "your 'weighted' estimate divides by n: it divides by the sum of the weights"
    return None


register(
    "importance_estimate", lambda g, w: tuple(importance.importance_estimate(g, w)), _estimate_cases,
    explain=_estimate_explain,
    hint="ordinary = mean(w g); weighted = sum(w g) / sum(w); ess as before",
)


# ---------------------------------------------------------------- lesson 12

def _k3_cases():
    rng = np.random.default_rng(14)
    return [
        Case("equal log-probs: 0", (np.array([-1.0, -2.0]), np.array([-1.0, -2.0]))),
        Case("ref likes the token more and less", (np.array([-1.0, -2.0]), np.array([-1.5, -0.5]))),
        Case("random [4, 5]", (-rng.exponential(size=(4, 5)), -rng.exponential(size=(4, 5)))),
    ]


def _k3_explain(case, got, expected):
    logp, ref_logp = case.args
    got = np.asarray(got, dtype=float)
    flipped = logp - ref_logp
    if got.shape == expected.shape and np.allclose(got, np.exp(flipped) - flipped - 1):
        return "sign flipped: d = ref_logp - logp (this estimates KL(pi || ref) from tokens sampled from pi)"
    if got.shape == expected.shape and np.allclose(got, logp - ref_logp):
        return "that is k1 = -d; k3 = exp(d) - d - 1, which is never negative"
    return None


register(
    "kl_estimate_k3", lambda logp, ref_logp: kl_estimate(logp, ref_logp, "k3"), _k3_cases,
    explain=_k3_explain, hint="d = ref_logp - logp; return exp(d) - d - 1",
)


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
    return [Case("one sequence, by hand", one),
            Case("a batch of 3 with prompts and padding", (logits, tokens, mask))]


def _slp_explain(case, got, expected):
    logits, tokens, mask = case.args
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return f"expected one number per sequence, shape {expected.shape}"
    right = np.take_along_axis(lp, tokens[:, 1:, None], -1)[..., 0]
    if np.allclose(got, right.sum(1)):
        return "you scored the prompt tokens: only positions where mask[:, 1:] is true count"
    if np.allclose(got, (right * mask[:, :-1]).sum(1)):
        return "mask shifted the wrong way: logits[:, t] predicts tokens[:, t+1], which mask[:, t+1] marks"
    wrong = np.take_along_axis(lp, tokens[:, :-1, None], -1)[..., 0]
    if np.allclose(got, (wrong * mask[:, 1:]).sum(1)):
        return "off by one: logits[:, t] predicts tokens[:, t+1], not tokens[:, t]"
    return None


register(
    "sequence_log_prob", sequence_log_prob, _slp_cases, explain=_slp_explain,
    hint="log_softmax the logits, pick tokens[:, 1:], sum where mask[:, 1:] is True",
)


def _rewards_cases():
    logp = np.array([[-1.0, -2.0, -0.5, 0.0], [-0.3, -0.7, 0.0, 0.0]])
    ref_logp = np.array([[-1.5, -1.0, -0.5, -3.0], [-0.3, -1.7, 0.0, -3.0]])
    mask = np.array([[True, True, True, False], [False, True, False, False]])
    return [Case("two completions of unequal length, beta 0.1",
                 (np.array([2.0, -1.0]), logp, ref_logp, mask), {"beta": 0.1})]


def _rewards_explain(case, got, expected):
    scores, logp, ref_logp, mask = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return f"expected per-token rewards of shape {expected.shape}"
    if not np.allclose(got[~mask], 0):
        return "padding tokens got a reward: everything outside the mask is 0"
    if np.allclose(got.sum(1), expected.sum(1)) and not np.allclose(got, expected):
        return "the score goes on each completion's last action token, nowhere else"
    if np.allclose(got - expected, np.where(mask, 0.2 * (logp - ref_logp), 0)):
        return "the penalty's sign: reward = -beta * (logp - ref_logp), so drifting from ref costs"
    return None


register(
    "kl_penalized_rewards", lambda s, lp, rp, m, beta: kl_penalized_rewards(s, lp, rp, m, beta),
    _rewards_cases, explain=_rewards_explain,
    hint="-beta * (logp - ref_logp) where mask, 0 elsewhere, plus the score at each row's last True",
)
