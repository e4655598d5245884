"""Exercises of lessons 09-10: TD errors, bootstrap values, GAE and n-step advantages with episode
boundaries, the truncation bias, the PPO clipped objective, its diagnostics and value clipping.

Each ``explain`` recomputes the answer with one typical mistake and, if the reader's output
matches it, names that mistake in the lesson's terms.
"""

import numpy as np

from ...algos.ppo import ppo_clip_objective
from ...core import autodiff as ad
from ...core.returns import _gae, gae
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


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


def _bootstrap_values_reference(v_next_obs, v_final_obs, terminated, truncated):
    return np.where(terminated, 0.0, np.where(truncated, v_final_obs, v_next_obs))


def _bootstrap_cases():
    rng = np.random.default_rng(4)
    v_next, v_final = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    terminated = np.zeros((6, 3), dtype=bool)
    truncated = np.zeros((6, 3), dtype=bool)
    terminated[2, 0] = True
    truncated[4, 1] = True
    both_term, both_trunc = terminated.copy(), truncated.copy()
    both_term[5, 2] = both_trunc[5, 2] = True
    return [
        Case("no episode ends", (v_next, v_final, np.zeros((6, 3), bool), np.zeros((6, 3), bool))),
        Case("terminated at t=2, truncated at t=4",
             (v_next, v_final, terminated, truncated)),
        Case("the pole falls on the time limit's step (t=5)",
             (v_next, v_final, both_term, both_trunc)),
    ]


def _bootstrap_explain(case, got, expected):
    v_next, v_final, term, trunc = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    cut = trunc & ~term
    if np.any(got[term] != 0.0):
        return ("a terminated step's next state is terminal: its value is 0 whatever the critic "
                "says, even when the time limit strikes on the same step")
    if np.allclose(got[cut], v_next[cut]):
        return ("at the truncated step you bootstrap from V(obs), but after the autoreset obs is "
                "already the next episode's first state: use V(final_obs)")
    if np.allclose(got[cut], 0.0):
        return ("you zero the bootstrap at a truncated step: the time limit cut the episode, the "
                "state is not terminal, so it is worth V(final_obs)")
    return None


register(
    "bootstrap_values", _bootstrap_values_reference, _bootstrap_cases,
    explain=_bootstrap_explain,
    hint="0 where terminated, else v_final_obs where truncated, else v_next_obs (np.where twice)",
)


def _n_step_reference(rewards, values, next_values, terminated, truncated, gamma, n,
                      stop_at_done=True, terms=None, discount=True):
    """Sum of ``terms`` (default n) TD errors from t, each weighted gamma^k, cut at done."""
    deltas = _td_errors_reference(rewards, values, next_values, terminated, gamma)
    done = terminated | truncated
    terms = n if terms is None else terms
    advantages = np.zeros_like(deltas)
    for t in range(len(deltas)):
        running = np.ones(deltas.shape[1:])
        for k in range(min(terms, len(deltas) - t)):
            advantages[t] += running * (gamma**k if discount else 1.0) * deltas[t + k]
            if stop_at_done:
                running = running * (1.0 - done[t + k])
    return advantages


def _n_step_cases():
    r, v, nv, term, trunc = _rollout_case(5)
    return [
        Case("n=1 is the TD error", (r, v, nv, term, trunc, 0.9, 1)),
        Case("n=3, terminated at t=3, truncated at t=5", (r, v, nv, term, trunc, 0.9, 3)),
        Case("n=8 covers the whole rollout (GAE with lam=1)", (r, v, nv, term, trunc, 0.9, 8)),
    ]


def _n_step_explain(case, got, expected):
    r, v, nv, term, trunc, gamma, n = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n, stop_at_done=False)):
        return ("your sum runs past the end of an episode (terminated at t=3 in copy 0, truncated "
                "at t=5 in copy 1) into the next episode's TD errors: stop after a done step")
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n, terms=n + 1)):
        return "you sum n + 1 TD errors: the n-step advantage is delta_t + ... + gamma^(n-1) delta_(t+n-1)"
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n, discount=False)):
        return "weigh the k-th TD error by gamma^k, as GAE weighs it by (gamma lam)^k"
    return None


register(
    "n_step_advantages", _n_step_reference, _n_step_cases, explain=_n_step_explain,
    hint="for each t: add gamma^k * delta[t+k] for k < n, stopping after a step where "
         "terminated | truncated, and at the rollout's end",
)


def _average_truncated_return_reference(gamma, H):
    steps_left = np.arange(1, H + 1)
    return float(np.mean((1 - gamma**steps_left) / (1 - gamma)))


def _average_truncated_cases():
    return [
        Case("the lesson's demo: gamma=0.95, H=50", (0.95, 50)),
        Case("a short limit: gamma=0.9, H=10", (0.9, 10)),
        Case("CartPole's limit: gamma=0.99, H=500", (0.99, 500)),
    ]


def _average_truncated_explain(case, got, expected):
    gamma, H = case.args
    got = float(np.asarray(got))
    left = (1 - gamma ** np.arange(0, H + 2)) / (1 - gamma)
    if np.isclose(got, left[:H].mean()):
        return ("you average over 0..H-1 steps left: on the episode's last step one reward is still "
                "to come, so the steps left run from 1 to H")
    if np.isclose(got, 1 / (1 - gamma)):
        return ("that is the true value, what a critic that bootstraps at the time limit learns; "
                "the biased critic treats the cut as terminal, so the return left shrinks as the "
                "clock runs")
    if np.isclose(got, left[H]):
        return ("that is the return left from the first step only; the critic cannot see the "
                "time, so it averages over all H steps of the episode")
    if np.isclose(got, left[1:H + 1].sum()):
        return "that is the sum over the H steps: divide by H for their mean"
    return None


register(
    "average_truncated_return", _average_truncated_return_reference, _average_truncated_cases,
    explain=_average_truncated_explain,
    hint="mean over k = 1..H of (1 - gamma**k) / (1 - gamma)",
)


def _clip_fraction_reference(ratio, eps):
    return float(np.mean(np.abs(np.asarray(ratio, float) - 1.0) > eps))


def _clip_fraction_cases():
    rng = np.random.default_rng(6)
    return [
        Case("every ratio inside the range", (np.exp(rng.normal(scale=0.02, size=50)), 0.2)),
        Case("ratios on both sides, clip 0.2", (np.exp(rng.normal(scale=0.3, size=200)), 0.2)),
        Case("ratios on both sides, clip 0.1", (np.exp(rng.normal(scale=0.3, size=200)), 0.1)),
    ]


def _clip_fraction_explain(case, got, expected):
    ratio, eps = case.args
    got = float(np.asarray(got))
    if np.isclose(got, np.mean(ratio > 1 + eps)):
        return ("you count only ratios above 1 + eps; a ratio below 1 - eps has left the clip "
                "range too")
    if np.isclose(got, np.mean(np.abs(ratio - 1.0) <= eps)):
        return "that is the share inside the range: the clip fraction counts the ratios outside it"
    if np.isclose(got, np.sum(np.abs(ratio - 1.0) > eps)):
        return "that is a count: divide by the number of samples for a share"
    return None


register(
    "clip_fraction", _clip_fraction_reference, _clip_fraction_cases,
    explain=_clip_fraction_explain,
    hint="np.mean(np.abs(ratio - 1) > eps)",
)


def _clipped_value_loss_reference(values, old_values, returns, eps):
    clipped = old_values + np.clip(values - old_values, -eps, eps)
    return float(0.5 * np.mean(np.maximum((values - returns) ** 2, (clipped - returns) ** 2)))


def _clipped_value_cases():
    rng = np.random.default_rng(7)
    old, returns = rng.normal(size=40), rng.normal(size=40)
    return [
        Case("the critic has not moved", (old.copy(), old, returns, 0.2)),
        Case("small moves, all inside eps", (old + rng.uniform(-0.1, 0.1, 40), old, returns, 0.2)),
        Case("large moves, both towards and away from the targets",
             (old + rng.normal(scale=1.0, size=40), old, returns, 0.2)),
    ]


def _clipped_value_explain(case, got, expected):
    v, old, g, eps = case.args
    got = float(np.asarray(ad.stop_gradient(got)))
    unclipped = (v - g) ** 2
    clipped = (old + np.clip(v - old, -eps, eps) - g) ** 2
    if np.isclose(got, 0.5 * np.mean(np.minimum(unclipped, clipped))):
        return ("you take the min: a loss is minimised, so the pessimistic choice is the larger "
                "error (the mirror of the min in L^CLIP, which is maximised)")
    if np.isclose(got, 0.5 * np.mean(clipped)):
        return ("you use the clipped error alone: a value that moved more than eps the wrong way "
                "would no longer be penalised for it; take the max with the unclipped error")
    if np.isclose(got, 2 * expected):
        return "the value loss is 1/2 the mean squared error, as in the lesson's loss"
    return None


register(
    "clipped_value_loss", _clipped_value_loss_reference, _clipped_value_cases,
    explain=_clipped_value_explain,
    hint="V_clip = V_old + clip(V - V_old, -eps, eps); 0.5 * mean(max((V - G)^2, (V_clip - G)^2))",
)
