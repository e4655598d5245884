"""Exercises of lessons 09-10: TD errors, GAE with episode boundaries, the PPO clipped objective.

Each ``explain`` recomputes the answer with one typical mistake and, if the reader's output
matches it, names that mistake in the lesson's terms.
"""

import numpy as np

from .. import autodiff as ad
from ..algos.ppo import ppo_clip_objective
from ..exercises import Case, register
from ..returns import _gae, gae


def _td_errors_reference(rewards, values, next_values, terminated, gamma):
    return rewards + gamma * np.where(terminated, 0.0, next_values) - values


def _rollout_case(seed, T=8, n=2):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, n))
    values = rng.normal(size=(T, n))
    next_values = rng.normal(size=(T, n))
    terminated = np.zeros((T, n), dtype=bool)
    truncated = np.zeros((T, n), dtype=bool)
    terminated[3, 0] = True
    truncated[5, 1] = True
    return rewards, values, next_values, terminated, truncated


def _td_cases():
    r, v, nv, term, _ = _rollout_case(0)
    return [
        Case("no episode ends", (r[:, :1], v[:, :1], nv[:, :1], np.zeros((8, 1), bool), 0.9)),
        Case("terminal at t=3 in copy 0", (r, v, nv, term, 0.9)),
    ]


def _td_explain(case, got, expected):
    r, v, nv, term, gamma = case.args
    got = np.asarray(got, dtype=float)
    if got.shape == expected.shape and np.allclose(got, r + gamma * nv - v):
        return ("you bootstrap from the terminal state at t=3: a terminal state's value is 0, "
                "so multiply next_values by (1 - terminated)")
    return None


register(
    "td_errors", _td_errors_reference, _td_cases, explain=_td_explain,
    hint="delta = r + gamma * (1 - terminated) * next_values - values, elementwise",
)


def _gae_cases():
    r, v, nv, term, trunc = _rollout_case(1)
    return [
        Case("one episode, lam=0.95", (r[:, :1], v[:, :1], nv[:, :1], np.zeros((8, 1), bool),
                                       np.zeros((8, 1), bool), 0.99, 0.95)),
        Case("lam=0 is the TD error", (r, v, nv, term, trunc, 0.9, 0.0)),
        Case("terminated at t=3, truncated at t=5", (r, v, nv, term, trunc, 0.9, 0.8)),
    ]


def _gae_explain(case, got, expected):
    r, v, nv, term, trunc, gamma, lam = case.args
    if not (isinstance(got, tuple) and len(got) == 2):
        return "return a pair (advantages, returns)"
    adv = np.asarray(got[0], dtype=float)
    if adv.shape != expected[0].shape:
        return None
    if np.allclose(adv, expected[0]) and not np.allclose(got[1], expected[1]):
        return "the advantages are right; the returns are advantages + values"
    if np.allclose(adv, _gae_no_stop(r, v, nv, term, gamma, lam)):
        return ("your advantage at t=3 includes TD errors from the next episode: stop the "
                "recursion where terminated | truncated")
    if np.allclose(adv, _gae(r, v, nv, term, np.zeros_like(trunc), gamma, lam)[0]):
        return ("your advantage at t=5 runs on into the next episode: a truncated step ends the "
                "episode too, so stop the recursion there (and still bootstrap from next_values)")
    if np.allclose(adv, _gae(r, v, nv, term | trunc, trunc, gamma, lam)[0]):
        return ("you treat the time limit at t=5 as a terminal state: truncated steps still "
                "bootstrap from next_values (V(final_obs)); only terminated zeroes it")
    if np.allclose(adv, _gae(r, v, nv, np.zeros_like(term), term | trunc, gamma, lam)[0]):
        return ("you bootstrap from the terminal state at t=3: its value is 0, so delta there is "
                "r - V(s)")
    return None


def _gae_no_stop(r, v, nv, term, gamma, lam):
    deltas = r + gamma * np.where(term, 0.0, nv) - v
    adv = np.zeros_like(deltas)
    following = np.zeros(deltas.shape[1:])
    for t in range(len(deltas) - 1, -1, -1):
        following = deltas[t] + gamma * lam * following
        adv[t] = following
    return adv


register(
    "gae", gae, _gae_cases, explain=_gae_explain,
    hint="loop t backwards: A = delta[t] + gamma * lam * (1 - done[t]) * A; returns = A + values",
)


def _clip_cases():
    ratio = np.array([0.5, 0.8, 0.95, 1.0, 1.1, 1.2, 1.5, 3.0])
    return [
        Case("positive advantages", (ratio, np.full(8, 2.0), 0.2)),
        Case("negative advantages", (ratio, np.full(8, -1.0), 0.2)),
        Case("mixed signs, clip 0.1", (ratio, np.array([1.0, -1.0] * 4), 0.1)),
    ]


def _clip_explain(case, got, expected):
    ratio, adv, eps = case.args
    got = np.asarray(ad.stop_gradient(got), dtype=float)
    if got.shape != expected.shape:
        return None
    clipped = np.clip(ratio, 1 - eps, 1 + eps) * adv
    if np.allclose(got, np.maximum(ratio * adv, clipped)):
        return ("you take the max: the objective is pessimistic, min(ratio*A, clip(ratio)*A), "
                "so a big ratio can never earn more than (1+eps)*A")
    if np.allclose(got, clipped):
        return ("you always clip: for A > 0 and ratio < 1 - eps (or A < 0 and ratio > 1 + eps) "
                "the unclipped term is smaller and must be used, so the policy can undo a bad move")
    return None


register(
    "ppo_clip_objective", ppo_clip_objective, _clip_cases, explain=_clip_explain,
    hint="np.minimum(ratio * A, np.clip(ratio, 1 - eps, 1 + eps) * A)",
)


def _approx_kl_reference(new_log_probs, old_log_probs):
    log_ratio = np.asarray(new_log_probs, float) - np.asarray(old_log_probs, float)
    return float(np.mean(np.expm1(log_ratio) - log_ratio))


def _approx_kl_cases():
    rng = np.random.default_rng(3)
    old = np.log(rng.uniform(0.05, 0.95, size=64))
    return [
        Case("the same policy", (old.copy(), old)),
        Case("a small step", (old + rng.normal(scale=0.05, size=64), old)),
        Case("a large step", (old + rng.normal(scale=0.5, size=64), old)),
    ]


def _approx_kl_explain(case, got, expected):
    new, old = case.args
    got = float(np.asarray(got))
    if np.isclose(got, np.mean(old - new)):
        return ("that is the k1 estimate mean(log pi_old - log pi_new): unbiased but it can be "
                "negative on a sample; use mean((r - 1) - log r), which is >= 0 per sample")
    if np.isclose(got, -expected) or got < 0:
        return "a KL estimate must be >= 0: check the sign of (r - 1) - log r"
    return None


register(
    "approx_kl", _approx_kl_reference, _approx_kl_cases, explain=_approx_kl_explain,
    hint="r = exp(new - old); mean((r - 1) - log r)",
)
