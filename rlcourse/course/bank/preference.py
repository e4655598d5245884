"""Lesson 13's exercises: the DPO loss, the IPO loss, the DPO gradient. (Lesson 14's GRPO
exercises are in :mod:`rlcourse.course.bank.grpo`.)"""

import numpy as np

from ...core import autodiff as ad
from ...core.losses import dpo_loss, ipo_loss
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _pairs(seed, n):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(-6.0, 2.0, size=n) for _ in range(4))


# ---------------------------------------------------------------- DPO loss

def _dpo_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    return tuple(dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=beta))


def _dpo_cases():
    return [
        Case("two pairs, beta=0.5", (np.array([-5.0, -3.0]), np.array([-6.0, -2.0]),
                                     np.array([-5.5, -3.0]), np.array([-5.5, -2.5]), 0.5)),
        Case("16 random pairs, beta=0.1", (*_pairs(0, 16), 0.1)),
        Case("policy = reference (every pair a tie)", (*(np.full(4, -3.0),) * 4, 0.1)),
    ]


def _dpo_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 4:
        return "return the tuple (loss, chosen_rewards, rejected_rewards, accuracy)"
    pc, pr, rc_, rr, beta = case.args
    no_ref = float(np.mean(np.logaddexp(0, -beta * (pc - pr))))
    if np.isclose(float(got[0]), no_ref) and not np.isclose(no_ref, expected[0]):
        return ("you used the policy log-probs alone: DPO's reward is beta*(logp - ref_logp), "
                "so z = (logp_c - ref_c) - (logp_r - ref_r)")
    unscaled = float(np.mean(np.logaddexp(0, -((pc - rc_) - (pr - rr)))))
    if np.isclose(float(got[0]), unscaled) and not np.isclose(unscaled, expected[0]):
        return "you forgot beta: the loss is -log sigmoid(beta * z)"
    if np.any(expected[1]) and np.allclose(np.asarray(got[1], dtype=float), expected[1] / beta):
        return "the implicit rewards are beta * (logp - ref_logp): you left out beta"
    if np.isclose(float(got[0]), expected[0]) and float(got[3]) != expected[3]:
        return ("accuracy is the fraction of pairs whose chosen reward is strictly larger than "
                "the rejected one (a tie is not a win)")
    return None


register(
    "dpo_loss", _dpo_reference, _dpo_cases, explain=_dpo_explain,
    hint="z = (pc - rc) - (pr - rr); loss = mean(-log sigmoid(beta z)); rewards beta*(logp - ref)",
)


# ---------------------------------------------------------------- IPO loss

def _ipo_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths,
                   rejected_lengths, tau):
    return float(ipo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, tau=tau,
                          chosen_lengths=chosen_lengths, rejected_lengths=rejected_lengths).loss)


def _ipo_cases():
    rng = np.random.default_rng(1)
    return [
        Case("two pairs of lengths (2, 5) and (4, 1), tau=0.25",
             (np.array([-5.0, -3.0]), np.array([-6.0, -2.0]), np.array([-5.5, -3.0]),
              np.array([-5.5, -2.5]), np.array([2, 4]), np.array([5, 1]), 0.25)),
        Case("12 random pairs, tau=0.1",
             (*_pairs(2, 12), rng.integers(1, 8, size=12), rng.integers(1, 8, size=12), 0.1)),
    ]


def _ipo_explain(case, got, expected):
    pc, pr, rc_, rr, lc, lr, tau = case.args
    summed = float(np.mean(((pc - rc_) - (pr - rr) - 1 / (2 * tau)) ** 2))
    if np.isclose(float(got), summed):
        return ("you used summed log-probs: IPO's margin uses per-token averages, divide each "
                "log-ratio by its completion's length")
    z = (pc - rc_) / lc - (pr - rr) / lr
    if np.isclose(float(got), float(np.mean((z - 1 / tau) ** 2))):
        return "the target margin is 1/(2 tau), not 1/tau"
    return None


register(
    "ipo_loss", _ipo_reference, _ipo_cases, explain=_ipo_explain,
    hint="z' = (pc - rc)/lc - (pr - rr)/lr; loss = mean((z' - 1/(2 tau))**2)",
)


# ---------------------------------------------------------------- DPO gradient

def _dpo_gradient_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    def loss(p):
        return dpo_loss(p["c"], p["r"], ref_chosen, ref_rejected, beta=beta).loss

    grads = ad.grad(loss)({"c": policy_chosen, "r": policy_rejected})
    return grads["c"], grads["r"]


def _dpo_gradient_cases():
    return [
        Case("8 random pairs, beta=0.1", (*_pairs(3, 8), 0.1)),
        Case("a pair already won by a wide margin, beta=1", (np.array([0.0, -1.0]), np.array([-30.0, -1.0]),
                                                             np.zeros(2), np.zeros(2), 1.0)),
    ]


def _dpo_gradient_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (d loss / d policy_chosen, d loss / d policy_rejected)"
    got_c = np.asarray(got[0], dtype=float)
    if got_c.shape == expected[0].shape and np.allclose(got_c, expected[0] * len(got_c)):
        return "the loss is a mean over the B pairs: divide each pair's gradient by B"
    if got_c.shape == expected[0].shape and np.allclose(got_c, -expected[0]):
        return "wrong sign: raising a chosen log-prob must lower the loss (a negative gradient)"
    return None


register(
    "dpo_gradient", _dpo_gradient_reference, _dpo_gradient_cases, explain=_dpo_gradient_explain,
    hint="d/d logp_c of -log sigmoid(beta z) is -beta * sigmoid(-beta z); the rejected side has +",
)
