"""Lessons 13 and 14's exercises: the DPO loss, the IPO loss, the DPO gradient, GRPO advantages,
the k3 KL penalty and the clipped token loss with its two aggregations."""

import numpy as np

from ...core import autodiff as ad
from ...core.losses import dpo_loss, grpo_advantages, grpo_loss, ipo_loss, ppo_clip_loss
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


# ---------------------------------------------------------------- GRPO advantages

def _grpo_reference(rewards, group_size):
    return grpo_advantages(rewards, group_size)


def _grpo_cases():
    rng = np.random.default_rng(4)
    return [
        Case("two groups of 4", (np.array([1.0, 0.0, 0.0, 1.0, 3.0, 1.0, 2.0, 2.0]), 4)),
        Case("a constant-reward group (all wrong) next to a mixed one",
             (np.array([0.0, 0.0, 0.0, 1.0, 0.0, 1.0]), 3)),
        Case("8 groups of 8 random rewards", (rng.integers(0, 2, size=64).astype(float), 8)),
    ]


def _grpo_explain(case, got, expected):
    got = np.asarray(got, dtype=float)
    rewards, g = case.args
    if np.isnan(got).any():
        return "a constant-reward group gave NaN: add eps (1e-4) to the std before dividing"
    if got.shape != expected.shape:
        return f"return one advantage per sample, shape {expected.shape}"
    groups = rewards.reshape(-1, g)
    centred = groups - groups.mean(1, keepdims=True)
    if np.allclose(got, (centred / (groups.std(1, keepdims=True) + 1e-4)).ravel()):
        return "you used the population std (ddof=0); this course, like TRL, uses the sample std (ddof=1)"
    if np.allclose(got, (rewards - rewards.mean()) / (rewards.std(ddof=1) + 1e-4)):
        return "you normalised over the whole batch: each prompt's group needs its own mean and std"
    return None


register(
    "grpo_advantages", _grpo_reference, _grpo_cases, explain=_grpo_explain,
    hint="reshape to [B/G, G]; (r - mean) / (std(ddof=1) + 1e-4) along axis 1; reshape back",
)


# ---------------------------------------------------------------- k3 KL penalty

def _rollout(seed, batch=4, steps=5):
    rng = np.random.default_rng(seed)
    logp = -rng.gamma(2.0, 0.5, size=(batch, steps))
    ref = logp + rng.normal(0.0, 0.4, size=(batch, steps))
    lengths = rng.integers(1, steps + 1, size=batch)
    mask = np.arange(steps)[None, :] < lengths[:, None]
    ref[~mask] = -np.inf  # padding the reference rules out
    return logp, ref, mask


def _kl_penalty_reference(logp, ref_logp, mask):
    return grpo_loss(logp, logp, ref_logp, np.zeros(len(logp)), mask, kl_coef=1.0).kl


def _kl_penalty_cases():
    return [
        Case("one completion of 3 tokens", (np.array([[-1.0, -0.5, -2.0]]), np.array([[-0.9, -0.6, -2.5]]),
                                             np.ones((1, 3), bool))),
        Case("4 completions of different lengths (padding ref_logp = -inf)", _rollout(5)),
    ]


def _kl_penalty_explain(case, got, expected):
    logp, ref, mask = case.args
    got = float(np.asarray(got))
    if np.isnan(got):
        return "NaN: a padding token's ref_logp is -inf; replace padding positions before the arithmetic"
    k1 = float(np.mean((logp - ref)[mask]))
    if np.isclose(got, k1):
        return ("that is k1, logp - ref_logp: unbiased but can go negative; k3 = exp(d) - d - 1 "
                "with d = ref_logp - logp is never negative")
    d = np.where(mask, ref - logp, 0.0)
    if np.isclose(got, float(np.mean(np.exp(d) - d - 1))):
        return "you averaged over padding positions too: divide by the number of action tokens"
    return None


register(
    "grpo_kl_penalty", _kl_penalty_reference, _kl_penalty_cases, explain=_kl_penalty_explain,
    hint="d = ref_logp - logp on action tokens; mean of exp(d) - d - 1 over the mask",
)


# ---------------------------------------------------------------- clipped token loss

def _clip_loss_reference(logp, old_logp, advantages, mask, aggregate):
    return float(ppo_clip_loss(logp, old_logp, advantages, mask, clip=0.2, aggregate=aggregate).loss)


def _clip_loss_cases():
    logp, _, mask = _rollout(6)
    old = logp + np.random.default_rng(7).normal(0.0, 0.2, size=logp.shape)
    adv = np.array([1.2, -0.4, -0.8, 0.0])
    return [
        Case("token mean, 4 completions of different lengths", (logp, old, adv, mask, "token")),
        Case("sequence mean, the same rollout", (logp, old, adv, mask, "sequence")),
    ]


def _clip_loss_explain(case, got, expected):
    logp, old, adv, mask, aggregate = case.args
    other = _clip_loss_reference(logp, old, adv, mask, "sequence" if aggregate == "token" else "token")
    if np.isclose(float(got), other):
        return (f"you computed the other aggregation: '{aggregate}' means "
                + ("one mean over all action tokens of the batch" if aggregate == "token"
                   else "a mean over each completion's tokens, then over completions"))
    if np.isclose(float(got), -expected):
        return "wrong sign: the loss is the negated objective, to be minimised"
    return None


register(
    "grpo_clip_loss", _clip_loss_reference, _clip_loss_cases, explain=_clip_loss_explain,
    hint="r = exp(logp - old); o = min(r A, clip(r, 0.8, 1.2) A) on the mask; token: -sum(o)/count; "
         "sequence: -mean over rows of (row sum / row count)",
)
