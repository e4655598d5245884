"""Exercises of lesson 12 (reward models and RLHF); lesson 11's are in ``importance``."""

import numpy as np

from ...core.kl import kl_estimate, kl_penalized_rewards
from ...core.tokens import sequence_log_prob
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _probs(rng, shape):
    x = rng.random(shape) + 0.05
    return x / x.sum(axis=-1, keepdims=True)


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
