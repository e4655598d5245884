"""Lesson 11's exercises: importance weights, the ordinary and weighted estimators, a scale-free
effective sample size, per-decision IS and the doubly robust estimator (the Build-it steps); then
per-decision IS with truncated per-step ratios, self-normalised DR, off-policy evaluation of a
softmax policy, the share of a log a greedy policy can use, and two questions (the exercises).

Every checker has cases that reject the usual wrong answers, and an ``explain`` that names them;
``tests/test_exercises_lesson_11.py`` submits each wrong answer and checks the diagnosis.
"""

from __future__ import annotations

import functools

import numpy as np

from ...core import importance
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _safe(explain):
    """An ``explain`` must never crash the check on an odd answer: fall back on the comparison."""

    @functools.wraps(explain)
    def wrapped(case, got, expected):
        try:
            with np.errstate(all="ignore"):
                return explain(case, got, expected)
        except Exception:  # noqa: BLE001 - any answer shape we did not foresee
            return None

    return wrapped


def _close(got, value) -> bool:
    got, value = np.asarray(got, dtype=float), np.asarray(value, dtype=float)
    return got.shape == value.shape and bool(np.allclose(got, value, rtol=1e-6, atol=1e-9))


def _pair(got) -> tuple[float, float] | None:
    if isinstance(got, (tuple, list)) and len(got) == 2:
        return float(got[0]), float(got[1])
    return None


def _probs(rng, shape):
    x = rng.random(shape) + 0.05
    return x / x.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- Build it, step 1: weights

def _iw_reference(target_probs, behavior_probs, actions):
    return importance.importance_weights(target_probs, behavior_probs, actions)


def _iw_cases():
    rng = np.random.default_rng(110)
    t, b = _probs(rng, (6, 3)), _probs(rng, (6, 3))
    return [
        Case("one shared row [5]",
             (np.array([0.05, 0.20, 0.05, 0.50, 0.20]), np.array([0.50, 0.20, 0.15, 0.10, 0.05]),
              np.array([0, 3, 3, 4, 1, 2]))),
        Case("one row per sample [6, 3]", (t, b, np.array([0, 2, 1, 1, 0, 2]))),
        Case("the behaviour never takes action 2, and neither does the target: nothing to refuse",
             (np.array([[0.7, 0.3, 0.0], [0.2, 0.8, 0.0]]), np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]),
              np.array([0, 1]))),
        Case("no support: the target takes action 2, the behaviour never does",
             (np.array([0.2, 0.5, 0.3]), np.array([0.5, 0.5, 0.0]), np.array([0, 1, 0])),
             raises=ValueError),
        Case("no support, in one row of [2, 3], at a logged action",
             (np.array([[0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]), np.array([[0.5, 0.5, 0.0], [0.2, 0.4, 0.4]]),
              np.array([2, 1])),
             raises=ValueError),
        Case("no support in the LAST row of [3, 3], at an action nobody logged",
             (np.array([[0.2, 0.5, 0.3], [0.3, 0.3, 0.4], [0.3, 0.3, 0.4]]),
              np.array([[0.2, 0.4, 0.4], [0.5, 0.2, 0.3], [0.5, 0.5, 0.0]]), np.array([0, 1, 1])),
             raises=ValueError),
        Case("a logged action has behaviour probability 0 (and target probability 0): this log did "
             "not come from the behaviour",
             (np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.5, 0.0]), np.array([0, 2, 1])),
             raises=ValueError),
    ]


@_safe
def _iw_explain(case, got, expected):
    t, b, a = (np.asarray(x) for x in case.args)
    got = np.asarray(got, dtype=float)
    if expected is None:
        b_a = b[a] if t.ndim == 1 else np.take_along_axis(b, a[:, None], -1)[:, 0]
        if (b_a == 0).any() and not ((b == 0) & (t > 0)).any():
            return ("a logged action has behaviour probability 0, so this log was not drawn from "
                    "behavior_probs (you returned a weight, or nan, for it): raise ValueError")
        if not np.isfinite(got).all():
            return ("you returned inf where b(a) = 0: a weight cannot be computed there. Check support "
                    "first: raise ValueError wherever the behaviour gives 0 to an action the target takes")
        return ("you returned weights, but the behaviour never takes an action the target takes: no "
                "reweighting can recover its value, so refuse (raise ValueError) whenever "
                "behavior_probs is 0 where target_probs is > 0, in any row, whether or not that "
                "action was logged")
    if _close(got, t / b):
        return ("you returned the ratio of every action: pick the logged one, "
                "target_probs[i, actions[i]] / behavior_probs[i, actions[i]]")
    if t.ndim > 1 and _close(got, t[a] / b[a]):
        return "you indexed the rows with the actions (t[a]): pick each sample's own entry t[i, a_i]"
    if t.ndim > 1 and _close(got, np.take(t, a) / np.take(b, a)):
        return ("np.take without an axis flattens [n, A], so you picked from the first row: pick "
                "each sample's own entry t[i, a_i] (np.take_along_axis, or t[np.arange(n), a])")
    pick = (lambda p: p[a]) if t.ndim == 1 else (lambda p: np.take_along_axis(p, a[:, None], -1)[:, 0])
    with np.errstate(divide="ignore"):
        if _close(got, pick(b) / pick(t)):
            return "inverted: the weight is target / behaviour, pi(a) / b(a), not b(a) / pi(a)"
    if _close(got, pick(t)):
        return "you returned pi(a): divide by the probability b(a) with which the data was drawn"
    return None


register(
    "importance_weights", _iw_reference, _iw_cases, explain=_iw_explain,
    hint="how much more often does the target take the logged action than the behaviour did? "
         "Before dividing, refuse data in which the behaviour never takes an action the target takes",
)


# ---------------------------------------------------------------- step 2: the two estimators

def _est_reference(returns, weights):
    est = importance.importance_estimate(returns, weights)
    return est.ordinary, est.weighted


def _est_cases():
    rng = np.random.default_rng(111)
    return [
        Case("three samples", (np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.0]))),
        Case("random [40], sum of weights != n", (rng.normal(size=40), 2.0 * rng.exponential(size=40))),
        Case("some weights are 0 (the target never takes those logged actions): still an estimate",
             (np.array([1.0, 2.0, 0.5, 3.0]), np.array([0.0, 1.5, 0.0, 2.0]))),
        Case("every weight 0: the weighted estimate is 0/0",
             (np.array([1.0, 0.0, 1.0]), np.zeros(3)), raises=ValueError),
    ]


@_safe
def _est_explain(case, got, expected):
    g, w = (np.asarray(x, dtype=float) for x in case.args)
    if expected is None:
        return ("the weighted estimate sum(w G) / sum(w) is undefined when every weight is 0 (the target "
                "never takes a logged action): raise ValueError instead of returning a number "
                "(NaN or 0)")
    pair = _pair(got)
    if pair is None:
        return "return the pair (ordinary, weighted)"
    ordinary, weighted = np.mean(w * g), np.sum(w * g) / np.sum(w)
    if np.isclose(pair[0], weighted) and np.isclose(pair[1], ordinary):
        return "swapped: ordinary = mean(w G) comes first, weighted = sum(w G) / sum(w) second"
    if np.isclose(pair[0], np.mean(g)) or np.isclose(pair[1], np.mean(g)):
        return "that is the plain mean of the returns: the behaviour's value, with no weights at all"
    if np.isclose(pair[0], weighted):
        return "your 'ordinary' estimate is the weighted one: ordinary divides by n, not by sum(w)"
    if np.isclose(pair[1], ordinary):
        return "your 'weighted' estimate divides by n: it divides by the sum of the weights"
    if np.isclose(pair[1], weighted / len(g)):
        return "you normalised the weights to sum 1 and then also divided by n: divide once, by sum(w)"
    if np.isclose(pair[0], np.mean(w) * np.mean(g)):
        return ("mean(w) * mean(G) is not mean(w G): each return is multiplied by its own sample's "
                "weight before averaging")
    return None


register(
    "is_estimates", _est_reference, _est_cases, explain=_est_explain,
    hint="both average w * G; they differ in what they divide by. What is sum(w) / n on average?",
)


# ---------------------------------------------------------------- step 3: effective sample size

def _ess_cases():
    rng = np.random.default_rng(112)
    return [
        Case("equal weights: ESS = n", (np.ones(5),)),
        Case("one weight carries everything", (np.array([0.0, 0.0, 3.0, 0.0]),)),
        Case("random weights [50]", (rng.exponential(size=50),)),
        Case("huge weights [2**600, 0, 1] (their squares overflow)", (np.array([2.0**600, 0.0, 1.0]),)),
        Case("tiny weights [1e-200, 1e-200] (their squares underflow to 0)", (np.array([1e-200, 1e-200]),)),
        Case("random weights [20] times 1e200", (1e200 * rng.exponential(size=20),)),
        Case("every weight 0: no sample says anything about the target",
             (np.zeros(4),), raises=ValueError),
    ]


@_safe
def _ess_explain(case, got, expected):
    w = np.asarray(case.args[0], dtype=float)
    if expected is None:
        return "with every weight 0 the ESS is 0/0: raise ValueError instead of returning a number or NaN"
    got = float(np.asarray(got, dtype=float))
    if not np.isfinite(got) or got == 0:
        return ("numerically unstable: the squares of these weights overflow or underflow. The ESS does "
                "not change when every weight is scaled, so divide by the largest weight first")
    u = w / w.max()
    ess, n = u.sum() ** 2 / np.sum(u * u), len(w)
    if np.isclose(got, 1 / ess):
        return "upside down: ESS = (sum w)^2 / sum w^2, which is n for equal weights"
    if np.isclose(got, ess / n):
        return "you divided by n: the ESS is a count of samples, not a fraction"
    if np.isclose(got, 1 / np.sum(w**2)):
        return ("1 / sum(w^2) is the ESS only of weights normalised to sum 1; these are not: use "
                "(sum w)^2 / sum w^2")
    if n > 1 and np.isclose(got, n / (1 + np.var(u, ddof=1) / np.mean(u) ** 2)):
        return ("that is Kong's n / (1 + cv^2) with the sample variance (ddof=1): with the population "
                "variance (ddof=0) it equals (sum w)^2 / sum w^2, the convention here")
    if np.isclose(got, n / np.mean(u * u)) or np.isclose(got, n * n / np.sum(u * u)):
        return ("n^2 / sum w^2 assumes the weights average 1 (sum w = n); these need not: use "
                "(sum w)^2 / sum w^2")
    p = u / u.sum()
    p = p[p > 0]
    if np.isclose(got, np.exp(-np.sum(p * np.log(p)))):
        return ("that is the perplexity exp(entropy of w / sum w), another effective-size convention; "
                "this lesson's ESS is (sum w)^2 / sum w^2")
    return None


register(
    "effective_sample_size", importance.effective_sample_size, _ess_cases, explain=_ess_explain,
    hint="(sum w)^2 / sum w^2 does not change when every weight is multiplied by the same number: "
         "use that to keep the numbers near 1",
)


# ---------------------------------------------------------------- step 4: per-decision IS

def _pd_reference(rewards, ratios, gamma):
    return tuple(importance.per_decision_estimate(rewards, ratios, gamma))


def _pd_cases():
    rng = np.random.default_rng(113)
    by_hand = (np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]]),
               np.array([[2.0, 0.5, 1.0], [0.5, 2.0, 0.5]]), 1.0)

    def random(n, T, gamma):
        return rng.normal(size=(n, T)), rng.exponential(size=(n, T)), gamma

    return [
        Case("two episodes of 3 steps, by hand", by_hand),
        Case("5 episodes of 4 steps, gamma 0.9", random(5, 4, 0.9)),
        Case("4 episodes of 4 steps, gamma 1", random(4, 4, 1.0)),
        Case("3 episodes of 6 steps, gamma 0.5", random(3, 6, 0.5)),
    ]


def _pd_variants(r, rho, gamma):
    """The usual wrong answers, as (ordinary, weighted) pairs."""
    T = r.shape[1]
    disc = gamma ** np.arange(T)

    def both(w, d=disc):
        return np.mean(np.sum(d * w * r, axis=1)), np.sum(d * np.sum(w * r, axis=0) / np.sum(w, axis=0))

    right = np.cumprod(rho, axis=1)
    shifted = np.concatenate([np.ones((r.shape[0], 1)), right[:, :-1]], axis=1)
    return {
        "full": both(np.repeat(rho.prod(axis=1, keepdims=True), T, axis=1)),
        "episodes": both(np.cumprod(rho, axis=0)),
        "shifted": both(shifted),
        "no_discount": both(right, np.ones(T)),
        "late_discount": both(right, gamma * disc),
        "weighted_by_n": (both(right)[0], np.sum(disc * np.mean(right * r, axis=0))),
        "weighted_total": (both(right)[0], np.sum(disc * right * r) / np.sum(right) * 1.0),
        "weighted_no_discount": (both(right)[0], both(right, np.ones(T))[1]),
        "mean_all": (np.mean(disc * right * r), both(right)[1]),
        "reverse": both(np.cumprod(rho[:, ::-1], axis=1)[:, ::-1]),
        "weighted_by_full": (both(right)[0],
                             np.sum(disc * np.sum(right * r, axis=0)) / np.sum(rho.prod(axis=1))),
    }


@_safe
def _pd_explain(case, got, expected):
    r, rho, gamma = np.asarray(case.args[0], float), np.asarray(case.args[1], float), case.args[2]
    pair = _pair(got)
    if pair is None:
        return "return the pair (ordinary, weighted)"
    if np.allclose(pair, expected[::-1]):
        return "swapped: ordinary first, weighted second"
    v = _pd_variants(r, rho, gamma)
    if np.allclose(pair, v["full"]):
        return ("every reward got the whole episode's product of ratios: that is ordinary IS on the "
                "return. Weight the reward at step t by the ratios of steps 0..t only")
    if np.allclose(pair, v["episodes"]):
        return ("you multiplied the weights across episodes (cumprod over axis 0): each episode's "
                "weight is a product over its own steps, axis 1")
    if np.allclose(pair, v["shifted"]):
        return ("off by one: the reward at step t follows action a_t, so its weight includes the ratio "
                "of step t itself (ratios[:, 0] * ... * ratios[:, t])")
    if gamma != 1 and np.allclose(pair, v["no_discount"]):
        return "you forgot the discount gamma^t on the reward at step t"
    if gamma != 1 and np.allclose(pair, v["late_discount"]):
        return "the first reward is not discounted: gamma^t with t starting at 0"
    if np.isclose(pair[0], expected[0]) and np.isclose(pair[1], v["weighted_by_n"][1]):
        return "your weighted estimate divides by n: at each step divide by that step's sum of weights"
    if np.isclose(pair[0], expected[0]) and np.isclose(pair[1], v["weighted_total"][1]):
        return ("you normalised by the sum of the weights over all steps: the weighted estimate "
                "normalises each step's weights separately")
    if np.isclose(pair[0], expected[0]) and np.isclose(pair[1], v["weighted_by_full"][1]):
        return ("you normalised every step by the sum of the whole-episode weights: step t's weights "
                "are normalised by their own sum over episodes, sum_i w[i, t]")
    if gamma != 1 and np.isclose(pair[0], expected[0]) and np.isclose(pair[1], v["weighted_no_discount"][1]):
        return "your weighted estimate lost the discount gamma^t (the ordinary one has it)"
    if np.isclose(pair[0], v["mean_all"][0]):
        return ("you averaged over all n * T entries: sum the discounted weighted rewards over each "
                "episode's steps, then average over episodes")
    if np.allclose(pair, v["reverse"]):
        return ("your weights multiply the ratios from step t to the END of the episode: the reward at "
                "t depends on the steps before it, so w[t] = ratios[0] * ... * ratios[t]")
    return None


register(
    "per_decision_is", _pd_reference, _pd_cases, explain=_pd_explain,
    hint="the reward at step t cannot depend on the actions after t, so its weight only needs the "
         "ratios up to and including t; a running product along each episode gives them all",
)


# ---------------------------------------------------------------- step 5: doubly robust

def _dr_cases():
    rng = np.random.default_rng(114)
    n, A = 20, 4
    by_hand = (np.array([1.0, 0.0]), np.array([1, 0]), np.array([0.25, 0.5]),
               np.array([[0.5, 0.5], [0.9, 0.1]]), np.array([[1.0, 0.0], [0.2, 0.6]]))
    return [
        Case("two samples, by hand", by_hand),
        Case("random [20] with 4 actions",
             (rng.random(n), rng.integers(0, A, size=n), rng.uniform(0.1, 0.9, size=n),
              _probs(rng, (n, A)), rng.random((n, A)))),
        Case("random [30] with 3 actions, rewards in {0, 1}",
             ((rng.random(30) < 0.4).astype(float), rng.integers(0, 3, size=30),
              rng.uniform(0.2, 0.7, size=30), _probs(rng, (30, 3)), rng.random((30, 3)))),
    ]


@_safe
def _dr_explain(case, got, expected):
    r, a, p, pi, q = (np.asarray(x) for x in case.args)
    got = float(np.asarray(got, dtype=float))
    rows = np.arange(len(r))
    v, q_a, w = np.sum(pi * q, axis=1), q[rows, a], pi[rows, a] / p
    if np.isclose(got, np.mean(v)):
        return "that is the direct method alone: add the weighted error of the model, w (r - q_hat(x, a))"
    if np.isclose(got, np.mean(w * r)):
        return "that is plain importance sampling: DR starts from the model's value sum_a pi q_hat"
    if np.isclose(got, np.mean(v + w * (q_a - r))):
        return "sign flipped: the correction is w * (r - q_hat(x, a)), the reward minus the model"
    if np.isclose(got, np.mean(v + p / pi[rows, a] * (r - q_a))):
        return "inverted weights: w = pi(a|x) / propensity, target over behaviour"
    if np.isclose(got, np.mean(q_a + w * (r - q_a))):
        return ("the model's term is sum_a pi(a|x) q_hat(x, a), the value of the target's actions, not "
                "q_hat at the logged action")
    if np.isclose(got, np.mean(v) + np.sum(w * (r - q_a)) / np.sum(w)):
        return ("you normalised the correction by sum(w): that is self-normalised DR (an exercise); "
                "DR divides by n")
    if np.isclose(got, np.mean(v + w * (r - q[:, 0]))):
        return "q_hat at the logged action: q_hat[i, actions[i]], not one column for every sample"
    if np.isclose(got, np.mean(np.mean(q, axis=1) + w * (r - q_a))):
        return ("the model's term averages q_hat over the actions uniformly: weight it by the target, "
                "sum_a pi(a|x) q_hat(x, a)")
    if np.isclose(got, np.mean(v + (r - q_a))):
        return "the correction is not weighted: multiply r - q_hat(x, a) by w = pi(a|x) / propensity"
    if np.isclose(got, np.mean(v + pi[rows, a] * (r - q_a))):
        return ("you weighted the correction by pi(a|x) alone: the weight is pi(a|x) / propensity, "
                "because the logged actions were drawn from the behaviour")
    return None


register(
    "doubly_robust", importance.doubly_robust_estimate, _dr_cases, explain=_dr_explain,
    hint="start from what the model predicts the target earns, then add the importance-weighted error "
         "the model makes on the actions that were logged",
)


# ---------------------------------------------------------------- multiple-choice questions

def _choice_compare(options: dict[str, str]):
    def compare(got, expected):
        answer = str(got).strip().lower() if got is not None else ""
        if answer == expected:
            return None
        if answer not in options:
            return f"answer with one of {', '.join(repr(k) for k in options)}"
        return f"not {answer!r}"
    return compare


def _choice_explain(reasons: dict[str, str]):
    def explain(case, got, expected):
        if got is None:
            return "not answered yet: set the answer to one of the letters"
        return reasons.get(str(got).strip().lower())
    return explain


# ---------------------------------------------------------------- exercise (easy): truncated per-step ratios

def _tpd_reference(rewards, ratios, cap, gamma):
    r, rho = np.asarray(rewards, dtype=float), np.asarray(ratios, dtype=float)
    w = np.cumprod(np.minimum(rho, cap), axis=1)
    return float(np.mean(np.sum(gamma ** np.arange(r.shape[1]) * w * r, axis=1)))


def _tpd_cases():
    rng = np.random.default_rng(117)
    by_hand = (np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]]), np.array([[2.0, 0.5, 3.0], [0.5, 2.0, 0.5]]),
               1.5, 1.0)

    def random(n, T, cap, gamma):
        return rng.random((n, T)), rng.exponential(size=(n, T)), cap, gamma

    small = random(4, 5, 1.0, 0.9)
    return [
        Case("two episodes of 3 steps, cap 1.5, by hand", by_hand),
        Case("6 episodes of 4 steps, cap 1.2, gamma 0.9", random(6, 4, 1.2, 0.9)),
        Case("5 episodes of 6 steps, cap 2, gamma 0.5", random(5, 6, 2.0, 0.5)),
        Case("cap 1 (Retrace's choice), gamma 0.9", small),
        Case("a cap above every ratio changes nothing: per-decision IS",
             (small[0], small[1], float(small[1].max()) + 1.0, 0.9)),
    ]


def _tpd_variants(r, rho, cap, gamma):
    disc = gamma ** np.arange(r.shape[1])

    def ordinary(w, d=disc):
        return np.mean(np.sum(d * w * r, axis=1))

    capped = np.minimum(rho, cap)
    full = np.cumprod(rho, axis=1)
    right = np.cumprod(capped, axis=1)
    return {
        "product": ordinary(np.minimum(full, cap)),
        "uncapped": ordinary(full),
        "max": ordinary(np.cumprod(np.maximum(rho, cap), axis=1)),
        "two_sided": ordinary(np.cumprod(np.clip(rho, 1 / cap, cap), axis=1)),
        "last_only": ordinary(np.concatenate([np.ones((r.shape[0], 1)), full[:, :-1]], axis=1) * capped),
        "shifted": ordinary(np.concatenate([np.ones((r.shape[0], 1)), right[:, :-1]], axis=1)),
        "no_discount": ordinary(right, np.ones(r.shape[1])),
        "weighted": np.sum(disc * np.sum(right * r, axis=0) / np.sum(right, axis=0)),
        "episodes": ordinary(np.cumprod(capped, axis=0)),
    }


@_safe
def _tpd_explain(case, got, expected):
    r, rho, cap, gamma = np.asarray(case.args[0], float), np.asarray(case.args[1], float), *case.args[2:]
    got = float(np.asarray(got, dtype=float))
    v = _tpd_variants(r, rho, cap, gamma)
    reasons = [
        ("product", "you capped the product w[t]: cap each step's ratio first, then multiply, "
                    "prod_s min(ratio_s, cap)"),
        ("uncapped", "no ratio was capped: that is per-decision IS; use min(ratio, cap) at every step"),
        ("max", "max(ratio, cap) raises every ratio to at least the cap: truncation is min(ratio, cap)"),
        ("two_sided", "you also raised small ratios to 1 / cap: truncation caps from above only"),
        ("last_only", "only the current step's ratio is capped: cap every ratio in the product"),
        ("shifted", "off by one: the reward at step t follows action a_t, so its product includes step "
                    "t's own (capped) ratio"),
        ("no_discount", "you forgot the discount gamma^t on the reward at step t"),
        ("weighted", "you normalised each step's weights by their sum: return the ordinary estimate, "
                     "a mean over episodes"),
        ("episodes", "you multiplied across episodes (axis 0): each episode's product runs over its own "
                     "steps, axis 1"),
    ]
    for key, reason in reasons:
        if key == "no_discount" and gamma == 1:
            continue
        if np.isclose(got, v[key]) and not np.isclose(v[key], expected):
            return reason
    return None


register(
    "truncated_per_decision", _tpd_reference, _tpd_cases, explain=_tpd_explain,
    hint="the trace coefficient of each step is the step's ratio, capped; the weight of the reward at "
         "step t is the product of the coefficients up to t",
)

_TPD = {
    "a": "never higher: biased low, unless no ratio exceeds the cap",
    "b": "unbiased, like per-decision IS",
    "c": "sometimes higher, sometimes lower",
    "d": "never lower: biased high",
}
register(
    "truncated_pd_question", lambda: "a",
    [Case("rewards >= 0: the truncated estimate against per-decision IS on the same log")],
    compare=_choice_compare(_TPD),
    explain=_choice_explain({
        "b": ("min(ratio, cap) <= ratio, so every product of capped ratios is at most the uncapped one: "
              "the cap removes weight, and per-decision IS is the unbiased one"),
        "c": ("compare term by term: each factor min(ratio, cap) <= ratio and every reward is >= 0, so "
              "no term can grow"),
        "d": "min(ratio, cap) can only lower a ratio, never raise it",
    }),
    hint="compare the two estimates term by term on the same log: which factor can the cap change, "
         "and in which direction?",
)


_SNDR = {
    "a": "yes, exactly, for every n",
    "b": "no: biased for finite n, but the bias vanishes as n grows",
    "c": "no, and the bias stays as n grows",
}
register(
    "sndr_question", lambda: "b",
    [Case("is self-normalised DR unbiased with right propensities and a wrong model?")],
    compare=_choice_compare(_SNDR),
    explain=_choice_explain({
        "a": ("dividing by the random sum(w) instead of n makes it a ratio of two averages, biased for "
              "finite n like weighted IS (you measured that bias in Check it)"),
        "c": "sum(w) / n tends to 1 as n grows, so the self-normalised correction tends to DR's",
    }),
    hint="compare it with weighted IS: what does dividing by sum(w) instead of n do for small n and large n?",
)


# ---------------------------------------------------------------- exercise (medium): self-normalised DR

def _sndr_reference(rewards, actions, propensities, target_probs, q_hat):
    r, a, p = (np.asarray(x) for x in (rewards, actions, propensities))
    pi, q = np.asarray(target_probs, float), np.asarray(q_hat, float)
    rows = np.arange(len(r))
    w = pi[rows, a] / p
    return float(np.mean(np.sum(pi * q, axis=1)) + np.sum(w * (r - q[rows, a])) / np.sum(w))


@_safe
def _sndr_explain(case, got, expected):
    r, a, p, pi, q = (np.asarray(x) for x in case.args)
    got = float(np.asarray(got, dtype=float))
    rows = np.arange(len(r))
    v, q_a, w = np.sum(pi * q, axis=1), q[rows, a], pi[rows, a] / p
    if np.isclose(got, np.mean(v + w * (r - q_a))):
        return "that is DR: the self-normalised version divides the correction by sum(w), not by n"
    if np.isclose(got, np.sum(v * w) / np.sum(w) + np.sum(w * (r - q_a)) / np.sum(w)):
        return "only the correction is self-normalised: the model's term is still a plain mean over the log"
    if np.isclose(got, np.mean(v) + np.sum(w * (q_a - r)) / np.sum(w)):
        return "sign flipped: the correction is r - q_hat(x, a)"
    if np.isclose(got, np.sum(w * r) / np.sum(w)):
        return "that is weighted IS: add the model's term and weight the model's error, not the reward"
    if np.isclose(got, np.mean(v) + np.sum(w * (r - q_a)) / np.sum(w) / len(r)):
        return ("you normalised the correction by sum(w) and then also divided by n: divide once, by "
                "sum(w)")
    return None


register(
    "weighted_doubly_robust", _sndr_reference, _dr_cases, explain=_sndr_explain,
    hint="weighted IS is to ordinary IS what this estimator is to DR",
)


# ---------------------------------------------------------------- exercise (hard): a softmax policy

def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _spd_reference(scores, temperature, kinds, articles, clicks, propensities, q_table):
    scores, q_table = np.asarray(scores, float), np.asarray(q_table, float)
    kinds = np.asarray(kinds)
    pi = _softmax(scores / float(temperature))[kinds]
    return importance.doubly_robust_estimate(clicks, articles, propensities, pi, q_table[kinds])


def _spd_cases():
    rng = np.random.default_rng(116)
    K, A, n = 3, 5, 40
    behaviour = _probs(rng, (K, A))

    def log(n):  # visits logged by a behaviour that differs by kind: propensities vary
        kinds = rng.integers(0, K, size=n)
        articles = np.array([rng.choice(A, p=behaviour[k]) for k in kinds])
        return kinds, articles, (rng.random(n) < 0.3).astype(float), behaviour[kinds, articles]

    scores = rng.uniform(-10.0, 10.0, size=(K, A))
    q_table = rng.random((K, A))
    far_apart = np.stack([rng.uniform(-30.0, -20.0, A), rng.uniform(10.0, 20.0, A),
                          rng.uniform(-5.0, 5.0, A)])
    return [
        Case("temperature 1", (scores, 1.0, *log(n), q_table)),
        Case("temperature 4 (flatter)", (scores, 4.0, *log(n), q_table)),
        Case("scores near 1000 at temperature 1 (exp(scores) overflows)",
             (1000.0 + rng.uniform(0.0, 5.0, size=(K, A)), 1.0, *log(n), q_table)),
        Case("temperature 0.01 (nearly greedy: exp(scores / 0.01) overflows)",
             (scores, 0.01, *log(n), q_table)),
        Case("temperature 0.01, one kind's scores far below another's (-30..-20 vs 10..20): one max "
             "for the whole table underflows that kind's row to 0/0",
             (far_apart, 0.01, *log(n), q_table)),
    ]


def _global_softmax(z):  # the usual wrong stabilisation: one max for the whole table
    e = np.exp(z - z.max())
    return e / e.sum(axis=-1, keepdims=True)


@_safe
def _spd_explain(case, got, expected):
    scores, temp, kinds, articles, clicks, prop, q_table = case.args
    got = float(np.asarray(got, dtype=float))
    if not np.isfinite(got):
        with np.errstate(all="ignore"):
            table_max_fails = not np.isfinite(_global_softmax(scores / temp)).all()
        if table_max_fails:
            return ("NaN or inf: a whole row of exp(...) under- or overflowed. Subtract each row's own "
                    "max before exp, not one max for the whole table (a row far below it becomes "
                    "exp(-large) = 0 everywhere, then 0/0)")
        return "NaN or inf: exp(scores / temperature) overflows; subtract each row's max before exp"

    def dr_with(pi, p=prop):  # the formula without input checks: a wrong pi need not be a distribution
        rows = np.arange(len(kinds))
        q = q_table[kinds]
        w = pi[rows, articles] / p
        return np.mean(np.sum(pi * q, axis=1) + w * (clicks - q[rows, articles]))

    pi = _softmax(scores / temp)[kinds]
    if np.isclose(got, dr_with(pi, np.asarray(prop)[articles])):
        return ("propensities[i] is already the probability of visit i's logged article: use it as it "
                "is, not indexed by the article")
    if np.isclose(got, dr_with(pi, np.full(len(kinds), np.mean(prop)))):
        return "each visit has its own propensity: use propensities[i], not their mean"
    if temp != 1 and np.isclose(got, dr_with(_softmax(scores)[kinds])):
        return "you ignored the temperature: softmax(scores / temperature)"
    if np.isclose(got, dr_with(_softmax(scores * temp)[kinds])):
        return "the temperature divides the scores: softmax(scores / temperature)"
    if np.isclose(got, dr_with((_softmax(scores.T / temp).T)[kinds])):
        return "softmax over the wrong axis: each kind's row of scores is a distribution over articles"
    z = scores / temp
    whole = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    if np.isclose(got, dr_with(whole[kinds])):
        return "softmax over the whole [kinds, articles] table: normalise each kind's row separately"
    if np.isclose(got, dr_with(np.repeat(_softmax(scores[:1] / temp), len(kinds), axis=0))):
        return "every visitor got kind 0's policy: index the policy (and q_table) by each visitor's kind"
    rows = np.arange(len(kinds))
    w = pi[rows, articles] / prop
    q_a = q_table[kinds, articles]
    if np.isclose(got, np.mean(q_a + w * (clicks - q_a))):
        return "the model's term is sum_a pi(a|x) q_table[x, a], not q_table at the logged article"
    v = np.sum(pi * q_table[kinds], axis=1)
    if np.isclose(got, np.mean(v + prop / pi[rows, articles] * (clicks - q_a))):
        return "inverted weights: pi(a|x) / propensity"
    return None


register(
    "softmax_policy_dr", _spd_reference, _spd_cases, explain=_spd_explain,
    hint="first turn each kind's scores into probabilities over articles (stably, at this temperature); "
         "then it is the doubly robust estimate you built",
)


# ---------------------------------------------------------------- exercise (hard): a greedy policy's share

def _greedy_reference(visitor_mix, behavior, scores):
    p_x, b, scores = (np.asarray(x, dtype=float) for x in (visitor_mix, behavior, scores))
    best = np.argmax(scores, axis=1)
    return float(p_x @ b[np.arange(len(best)), best])


def _greedy_cases():
    rng = np.random.default_rng(118)
    return [
        Case("3 kinds, 5 articles",
             (np.array([0.5, 0.3, 0.2]), _probs(rng, (3, 5)), rng.normal(size=(3, 5)))),
        Case("4 kinds, 3 articles, uneven visitors",
             (np.array([0.1, 0.2, 0.3, 0.4]), _probs(rng, (4, 3)), rng.normal(size=(4, 3)))),
    ]


@_safe
def _greedy_explain(case, got, expected):
    p_x, b, scores = (np.asarray(x, dtype=float) for x in case.args)
    got = float(np.asarray(got, dtype=float))
    best = np.argmax(scores, axis=1)
    b_best = b[np.arange(len(best)), best]
    if np.isclose(got, 1 / b.shape[1]):
        return "that is 1 / (number of articles): the behaviour does not show articles uniformly"
    if np.isclose(got, np.mean(b_best)):
        return "kinds of visitor do not come equally often: weight each kind's share by visitor_mix"
    if np.isclose(got, p_x @ b.max(axis=1)):
        return ("that is how often the behaviour shows its OWN favourite article; the greedy target's "
                "article is the one with the highest score")
    if np.isclose(got, 1 - expected):
        return "that is the share of visits whose weight is 0; the question asks for the non-zero ones"
    return None


register(
    "greedy_weight_fraction", _greedy_reference, _greedy_cases, explain=_greedy_explain,
    hint="a greedy policy gives probability 1 to one article per kind and 0 to the others: which "
         "logged visits have pi(a|x) > 0, and how often does the behaviour produce them?",
)
