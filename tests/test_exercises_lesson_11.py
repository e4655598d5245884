"""Lesson 11's exercises reject the usual wrong answers, each with the right diagnosis.

Every wrong answer below is one a student really writes; each must fail its checker, and the
printed reason must name the mistake (each ``explain`` branch is reached by one of them).
"""

import numpy as np
import pytest

from rlcourse.course import exercises

NAMES = ["importance_weights", "is_estimates", "effective_sample_size", "per_decision_is", "doubly_robust",
         "truncated_per_decision", "truncated_pd_question", "sndr_question", "weighted_doubly_robust",
         "softmax_policy_dr", "greedy_weight_fraction"]


def quiet(fn):
    """Wrong answers divide by zero or overflow; numpy's warnings are errors under pytest here."""

    def wrapped(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapped


def rejects(name, fn, capsys, *reasons):
    assert not exercises.check(name, quiet(fn)), f"a wrong answer passed {name}"
    out = capsys.readouterr().out
    for reason in reasons:
        assert reason in out, f"{name}: expected the diagnosis {reason!r} in:\n{out}"
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_passes(name, capsys):
    assert exercises.check(name, exercises.get(name).reference)
    assert "cases pass" in capsys.readouterr().out


# ---------------------------------------------------------------- importance_weights

def pick(p, a):
    p, a = np.asarray(p), np.asarray(a)
    return p[a] if p.ndim == 1 else np.take_along_axis(p, a[:, None], -1)[:, 0]


def test_weights_that_return_inf_without_support_fail(capsys):
    def no_check(t, b, a):
        return pick(t, a) / pick(b, a)

    out = rejects("importance_weights", no_check, capsys, "you returned inf where b(a) = 0",
                  "no reweighting can recover its value", "this log was not drawn from behavior_probs")
    assert "[pass] one shared row [5]" in out  # right wherever there is support
    assert "3/7 cases pass" in out


def test_weights_that_refuse_too_eagerly_fail(capsys):
    def refuses_any_zero(t, b, a):
        if (np.asarray(b) == 0).any():
            raise ValueError("the behaviour has a zero")
        return pick(t, a) / pick(b, a)

    out = rejects("importance_weights", refuses_any_zero, capsys,
                  "[fail] the behaviour never takes action 2, and neither does the target")
    assert "6/7 cases pass" in out


def test_weights_inverted_or_unnormalised_or_misindexed_fail(capsys):
    def checked(fn):
        def answer(t, b, a):
            if ((np.asarray(b) == 0) & (np.asarray(t) > 0)).any():
                raise ValueError("no support")
            return fn(np.asarray(t), np.asarray(b), np.asarray(a))
        return answer

    rejects("importance_weights", checked(lambda t, b, a: pick(b, a) / pick(t, a)), capsys, "inverted")
    rejects("importance_weights", checked(lambda t, b, a: pick(t, a)), capsys, "you returned pi(a)")
    rejects("importance_weights", checked(lambda t, b, a: t[a] / b[a]), capsys,
            "you indexed the rows with the actions")
    # the ratio of every action, not the logged one's
    rejects("importance_weights", checked(lambda t, b, a: t / b), capsys,
            "you returned the ratio of every action")
    # np.take without an axis flattens [n, A]
    rejects("importance_weights", checked(lambda t, b, a: np.take(t, a) / np.take(b, a)), capsys,
            "np.take without an axis flattens")


def test_weights_that_check_support_only_in_the_first_row_or_only_at_logged_actions_fail(capsys):
    def first_row_only(t, b, a):
        t, b = np.asarray(t), np.asarray(b)
        if ((np.atleast_2d(b)[0] == 0) & (np.atleast_2d(t)[0] > 0)).any():
            raise ValueError("no support")
        return pick(t, a) / pick(b, a)

    out = rejects("importance_weights", first_row_only, capsys,
                  "in any row, whether or not that action was logged")
    assert "[fail] no support in the LAST row" in out

    def logged_only(t, b, a):
        if (pick(b, a) == 0).any():
            raise ValueError("a logged action has probability 0")
        return pick(t, a) / pick(b, a)

    out = rejects("importance_weights", logged_only, capsys, "no reweighting can recover its value")
    assert "[pass] no support, in one row of [2, 3], at a logged action" in out


def test_weights_that_return_nan_for_a_logged_action_the_behaviour_never_takes_fail(capsys):
    def nan_for_impossible_logs(t, b, a):  # checks support, but 0/0 at a logged action with b = t = 0
        t, b = np.asarray(t), np.asarray(b)
        if ((b == 0) & (t > 0)).any():
            raise ValueError("no support")
        return pick(t, a) / pick(b, a)

    out = rejects("importance_weights", nan_for_impossible_logs, capsys,
                  "a logged action has behaviour probability 0, so this log was not drawn")
    assert "6/7 cases pass" in out


# ---------------------------------------------------------------- is_estimates

def right_estimates(g, w):
    if np.sum(w) == 0:
        raise ValueError("every weight is 0")
    return np.mean(w * g), np.sum(w * g) / np.sum(w)


def test_estimates_wrong_answers(capsys):
    def swap(g, w):
        return right_estimates(g, w)[::-1]

    def weighted_by_n(g, w):
        return np.mean(w * g), np.mean(w * g) if np.sum(w) else 0.0

    def ordinary_by_sum(g, w):
        o, wt = right_estimates(g, w)
        return wt, wt

    def no_weights(g, w):
        if np.sum(w) == 0:
            raise ValueError
        return np.mean(g), np.mean(g)

    def normalised_twice(g, w):
        return np.mean(w * g), np.mean(w / np.sum(w) * g)

    def nan_when_all_zero(g, w):
        return np.mean(w * g), np.sum(w * g) / np.sum(w)

    rejects("is_estimates", swap, capsys, "swapped")
    rejects("is_estimates", weighted_by_n, capsys, "your 'weighted' estimate divides by n")
    rejects("is_estimates", ordinary_by_sum, capsys, "your 'ordinary' estimate is the weighted one")
    rejects("is_estimates", no_weights, capsys, "plain mean of the returns")
    rejects("is_estimates", normalised_twice, capsys, "and then also divided by n")
    out = rejects("is_estimates", nan_when_all_zero, capsys, "raise ValueError instead of returning a number")
    assert "3/4 cases pass" in out
    rejects("is_estimates", lambda g, w: np.mean(w * g), capsys, "return the pair")

    def zero_when_all_zero(g, w):
        return (0.0, 0.0) if np.sum(w) == 0 else right_estimates(g, w)

    rejects("is_estimates", zero_when_all_zero, capsys, "instead of returning a number (NaN or 0)")

    def product_of_means(g, w):
        return np.mean(w) * np.mean(g), right_estimates(g, w)[1]

    rejects("is_estimates", product_of_means, capsys, "mean(w) * mean(G) is not mean(w G)")


def test_estimates_that_refuse_any_zero_weight_fail(capsys):
    def refuses_any_zero(g, w):
        if (np.asarray(w) == 0).any():
            raise ValueError("a weight is 0")
        return right_estimates(g, w)

    out = rejects("is_estimates", refuses_any_zero, capsys, "[fail] some weights are 0")
    assert "3/4 cases pass" in out


# ---------------------------------------------------------------- effective_sample_size

def test_ess_wrong_answers(capsys):
    def naive(w):
        w = np.asarray(w, dtype=float)
        if w.sum() == 0:
            raise ValueError
        return w.sum() ** 2 / np.sum(w**2)

    out = rejects("effective_sample_size", naive, capsys, "numerically unstable")
    assert "[fail] huge weights" in out and "[fail] tiny weights" in out
    assert "[pass] random weights [50]" in out

    def stable(fn):
        def answer(w):
            w = np.asarray(w, dtype=float)
            if w.max() == 0:
                raise ValueError
            return fn(w / w.max(), len(w), w)
        return answer

    rejects("effective_sample_size", stable(lambda u, n, w: np.sum(u * u) / u.sum() ** 2), capsys,
            "upside down")
    rejects("effective_sample_size", stable(lambda u, n, w: u.sum() ** 2 / np.sum(u * u) / n), capsys,
            "you divided by n")
    # the formula for weights normalised to sum 1, used on raw weights
    rejects("effective_sample_size", lambda w: 1 / np.sum(np.asarray(w, float) ** 2) if np.sum(w) else
            np.nan, capsys, "1 / sum(w^2) is the ESS only of weights normalised to sum 1")
    def zero_when_all_zero(w):
        return 0.0 if np.max(w) == 0 else naive(np.asarray(w) / np.max(w))

    out = rejects("effective_sample_size", zero_when_all_zero, capsys, "with every weight 0 the ESS is 0/0")
    assert "6/7 cases pass" in out

    rejects("effective_sample_size", stable(lambda u, n, w: n / (1 + np.var(u, ddof=1) / np.mean(u) ** 2)),
            capsys, "Kong's n / (1 + cv^2) with the sample variance")
    rejects("effective_sample_size", stable(lambda u, n, w: n / np.mean(u * u)), capsys,
            "assumes the weights average 1")

    def perplexity(u, n, w):
        p = u / u.sum()
        p = p[p > 0]
        return np.exp(-np.sum(p * np.log(p)))

    rejects("effective_sample_size", stable(perplexity), capsys, "that is the perplexity")

    def by_smallest(w):  # divides by the smallest non-zero weight: the largest squares still overflow
        w = np.asarray(w, dtype=float)
        if w.max() == 0:
            raise ValueError
        u = w / w[w > 0].min()
        return u.sum() ** 2 / np.sum(u * u)

    rejects("effective_sample_size", by_smallest, capsys, "numerically unstable")
    # a correct formula written differently passes: n / mean(v^2) with v the weights scaled to mean 1
    assert exercises.check("effective_sample_size", stable(lambda u, n, w: n / np.mean((u / u.mean()) ** 2)),
                           verbose=False)


# ---------------------------------------------------------------- per_decision_is

def pd(weights_fn, discount_fn=lambda gamma, T: gamma ** np.arange(T), weighted_fn=None):
    def answer(r, rho, gamma):
        r, rho = np.asarray(r, float), np.asarray(rho, float)
        w = weights_fn(rho)
        d = discount_fn(gamma, r.shape[1])
        ordinary = np.mean(np.sum(d * w * r, axis=1))
        weighted = (weighted_fn or (lambda: np.sum(d * np.sum(w * r, axis=0) / np.sum(w, axis=0))))()
        return ordinary, weighted
    return answer


def right_weights(rho):
    return np.cumprod(rho, axis=1)


def test_per_decision_wrong_answers(capsys):
    assert exercises.check("per_decision_is", pd(right_weights), verbose=False)
    def whole_episode(rho):
        return np.repeat(rho.prod(axis=1, keepdims=True), rho.shape[1], axis=1)

    rejects("per_decision_is", pd(whole_episode), capsys, "ordinary IS on the return")
    rejects("per_decision_is", pd(lambda rho: np.cumprod(rho, axis=0)), capsys,
            "you multiplied the weights across episodes")
    rejects("per_decision_is", pd(lambda rho: np.concatenate(
        [np.ones((rho.shape[0], 1)), np.cumprod(rho, axis=1)[:, :-1]], axis=1)), capsys, "off by one")
    rejects("per_decision_is", pd(right_weights, lambda gamma, T: np.ones(T)), capsys, "forgot the discount")
    rejects("per_decision_is", pd(right_weights, lambda gamma, T: gamma ** np.arange(1, T + 1)), capsys,
            "the first reward is not discounted")

    def swapped(r, rho, gamma):
        return pd(right_weights)(r, rho, gamma)[::-1]

    rejects("per_decision_is", swapped, capsys, "swapped")

    def weighted_by_n(r, rho, gamma):
        o, _ = pd(right_weights)(r, rho, gamma)
        w, d = np.cumprod(rho, axis=1), gamma ** np.arange(r.shape[1])
        return o, np.sum(d * np.mean(w * r, axis=0))

    rejects("per_decision_is", weighted_by_n, capsys, "your weighted estimate divides by n")

    def weighted_total(r, rho, gamma):
        o, _ = pd(right_weights)(r, rho, gamma)
        w, d = np.cumprod(rho, axis=1), gamma ** np.arange(r.shape[1])
        return o, np.sum(d * w * r) / np.sum(w)

    rejects("per_decision_is", weighted_total, capsys, "normalises each step's weights separately")
    rejects("per_decision_is", lambda r, rho, gamma: 0.0, capsys, "return the pair")

    def weighted_without_discount(r, rho, gamma):
        o, _ = pd(right_weights)(r, rho, gamma)
        w = np.cumprod(rho, axis=1)
        return o, np.sum(np.sum(w * r, axis=0) / np.sum(w, axis=0))

    rejects("per_decision_is", weighted_without_discount, capsys, "your weighted estimate lost the discount")

    def mean_over_all_entries(r, rho, gamma):
        _, wt = pd(right_weights)(r, rho, gamma)
        w, d = np.cumprod(rho, axis=1), gamma ** np.arange(r.shape[1])
        return np.mean(d * w * r), wt

    rejects("per_decision_is", mean_over_all_entries, capsys, "you averaged over all n * T entries")
    rejects("per_decision_is", pd(lambda rho: np.cumprod(rho[:, ::-1], axis=1)[:, ::-1]), capsys,
            "from step t to the END of the episode")

    def weighted_by_full_weights(r, rho, gamma):
        o, _ = pd(right_weights)(r, rho, gamma)
        w, d = np.cumprod(rho, axis=1), gamma ** np.arange(r.shape[1])
        return o, np.sum(d * np.sum(w * r, axis=0)) / np.sum(rho.prod(axis=1))

    rejects("per_decision_is", weighted_by_full_weights, capsys, "sum of the whole-episode weights")


# ---------------------------------------------------------------- doubly robust, plain and self-normalised

def dr_parts(r, a, p, pi, q):
    r, a, p, pi, q = (np.asarray(x) for x in (r, a, p, pi, q))
    rows = np.arange(len(r))
    return np.sum(pi * q, axis=1), q[rows, a], pi[rows, a] / p, r


def test_doubly_robust_wrong_answers(capsys):
    def make(formula):
        return lambda *args: formula(*dr_parts(*args), *args)

    cases = [
        (lambda v, qa, w, r, *_: np.mean(v), "the direct method alone"),
        (lambda v, qa, w, r, *_: np.mean(w * r), "plain importance sampling"),
        (lambda v, qa, w, r, *_: np.mean(v + w * (qa - r)), "sign flipped"),
        (lambda v, qa, w, r, *_: np.mean(v + (r - qa) / w), "inverted weights"),
        (lambda v, qa, w, r, *_: np.mean(qa + w * (r - qa)), "not q_hat at the logged action"),
        (lambda v, qa, w, r, *_: np.mean(v) + np.sum(w * (r - qa)) / np.sum(w), "that is self-normalised DR"),
        (lambda v, qa, w, r, _r, a, p, pi, q: np.mean(v + w * (r - q[:, 0])), "q_hat[i, actions[i]]"),
        (lambda v, qa, w, r, _r, a, p, pi, q: np.mean(np.mean(q, axis=1) + w * (r - qa)),
         "averages q_hat over the actions uniformly"),
        (lambda v, qa, w, r, *_: np.mean(v + (r - qa)), "the correction is not weighted"),
        (lambda v, qa, w, r, _r, a, p, pi, q: np.mean(v + w * p * (r - qa)),
         "you weighted the correction by pi(a|x) alone"),
    ]
    right = make(lambda v, qa, w, r, *_: np.mean(v + w * (r - qa)))
    assert exercises.check("doubly_robust", right, verbose=False)
    for formula, reason in cases:
        rejects("doubly_robust", make(formula), capsys, reason)


def test_weighted_doubly_robust_wrong_answers(capsys):
    def make(formula):
        return lambda *args: formula(*dr_parts(*args))

    right = make(lambda v, qa, w, r: np.mean(v) + np.sum(w * (r - qa)) / np.sum(w))
    assert exercises.check("weighted_doubly_robust", right, verbose=False)
    rejects("weighted_doubly_robust", make(lambda v, qa, w, r: np.mean(v + w * (r - qa))), capsys,
            "that is DR")
    rejects("weighted_doubly_robust", make(lambda v, qa, w, r: np.sum(w * (v + r - qa)) / np.sum(w)), capsys,
            "only the correction is self-normalised")
    rejects("weighted_doubly_robust", make(lambda v, qa, w, r: np.mean(v) + np.sum(w * (qa - r)) / np.sum(w)),
            capsys, "sign flipped")
    rejects("weighted_doubly_robust", make(lambda v, qa, w, r: np.sum(w * r) / np.sum(w)), capsys,
            "that is weighted IS")
    rejects("weighted_doubly_robust", make(lambda v, qa, w, r: np.mean(v) + np.sum(w / np.sum(w) * (r - qa)) /
                                           len(r)), capsys, "and then also divided by n")
    rejects("weighted_doubly_robust",
            make(lambda v, qa, w, r: np.mean(v) + np.mean(w * (r - qa)) / np.sum(w)), capsys,
            "and then also divided by n")


# ---------------------------------------------------------------- the questions

@pytest.mark.parametrize("answer, reason", [("a", "biased for finite n like weighted IS"),
                                            ("c", "tends to 1 as n grows")])
def test_sndr_question(answer, reason, capsys):
    rejects("sndr_question", lambda: answer, capsys, reason)


# ---------------------------------------------------------------- softmax_policy_dr

def softmax(z, axis=-1, stable=True):
    z = z - z.max(axis=axis, keepdims=True) if stable else z
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def spd(policy_fn, dm_at_logged=False, inverted=False, propensities_fn=None):
    def answer(scores, temperature, kinds, articles, clicks, propensities, q_table):
        scores, q_table = np.asarray(scores, float), np.asarray(q_table, float)
        if propensities_fn is not None:
            propensities = propensities_fn(np.asarray(propensities), np.asarray(articles))
        pi = policy_fn(scores, temperature)[kinds] if policy_fn.__code__.co_argcount == 2 else \
            policy_fn(scores, temperature, kinds)
        rows = np.arange(len(kinds))
        q = q_table[kinds]
        q_a = q[rows, articles]
        w = propensities / pi[rows, articles] if inverted else pi[rows, articles] / propensities
        v = q_a if dm_at_logged else np.sum(pi * q, axis=1)
        return np.mean(v + w * (clicks - q_a))
    return answer


def test_softmax_policy_dr_wrong_answers(capsys):
    assert exercises.check("softmax_policy_dr", spd(lambda s, t: softmax(s / t)), verbose=False)
    out = rejects("softmax_policy_dr", spd(lambda s, t: softmax(s / t, stable=False)), capsys,
                  "exp(scores / temperature) overflows")
    assert "[fail] scores near 1000" in out and "2/5 cases pass" in out

    def table_max(s, t):  # stabilised with one max for the whole [kinds, articles] table
        z = s / t
        e = np.exp(z - z.max())
        return e / e.sum(axis=-1, keepdims=True)

    out = rejects("softmax_policy_dr", spd(table_max), capsys, "not one max for the whole table")
    assert "[pass] scores near 1000" in out and "[fail] temperature 0.01, one kind's scores far below" in out
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s / t), propensities_fn=lambda p, a: p[a]), capsys,
            "use it as it is, not indexed by the article")
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s / t),
                                     propensities_fn=lambda p, a: np.full(len(p), np.mean(p))), capsys,
            "not their mean")

    def whole_table(s, t):
        z = s / t
        e = np.exp(z - z.max())
        return e / e.sum()

    rejects("softmax_policy_dr", spd(whole_table), capsys, "softmax over the whole [kinds, articles] table")
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s)), capsys, "you ignored the temperature")
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s * t)), capsys,
            "the temperature divides the scores")
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s / t, axis=0)), capsys,
            "softmax over the wrong axis")
    rejects("softmax_policy_dr", spd(lambda s, t, k: np.repeat(softmax(s[:1] / t), len(k), axis=0)), capsys,
            "every visitor got kind 0's policy")
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s / t), dm_at_logged=True), capsys,
            "not q_table at the logged article")
    rejects("softmax_policy_dr", spd(lambda s, t: softmax(s / t), inverted=True), capsys, "inverted weights")


# ---------------------------------------------------------------- truncated_per_decision and its question

def tpd(weights_fn, discount_fn=lambda gamma, T: gamma ** np.arange(T), weighted=False):
    def answer(r, rho, cap, gamma):
        r, rho = np.asarray(r, float), np.asarray(rho, float)
        w = weights_fn(rho, cap)
        d = discount_fn(gamma, r.shape[1])
        if weighted:
            return np.sum(d * np.sum(w * r, axis=0) / np.sum(w, axis=0))
        return np.mean(np.sum(d * w * r, axis=1))
    return answer


def capped_product(rho, cap):
    return np.cumprod(np.minimum(rho, cap), axis=1)


def test_truncated_per_decision_wrong_answers(capsys):
    assert exercises.check("truncated_per_decision", tpd(capped_product), verbose=False)
    rejects("truncated_per_decision", tpd(lambda rho, c: np.minimum(np.cumprod(rho, axis=1), c)), capsys,
            "you capped the product w[t]")
    out = rejects("truncated_per_decision", tpd(lambda rho, c: np.cumprod(rho, axis=1)), capsys,
                  "no ratio was capped")
    assert "[pass] a cap above every ratio changes nothing" in out
    rejects("truncated_per_decision", tpd(lambda rho, c: np.cumprod(np.maximum(rho, c), axis=1)), capsys,
            "truncation is min(ratio, cap)")
    rejects("truncated_per_decision", tpd(lambda rho, c: np.cumprod(np.clip(rho, 1 / c, c), axis=1)), capsys,
            "caps from above only")

    def last_only(rho, c):
        full = np.cumprod(rho, axis=1)
        return np.concatenate([np.ones((rho.shape[0], 1)), full[:, :-1]], axis=1) * np.minimum(rho, c)

    rejects("truncated_per_decision", tpd(last_only), capsys, "only the current step's ratio is capped")

    def shifted(rho, c):
        w = capped_product(rho, c)
        return np.concatenate([np.ones((rho.shape[0], 1)), w[:, :-1]], axis=1)

    rejects("truncated_per_decision", tpd(shifted), capsys, "off by one")
    rejects("truncated_per_decision", tpd(capped_product, lambda gamma, T: np.ones(T)), capsys,
            "you forgot the discount")
    rejects("truncated_per_decision", tpd(capped_product, weighted=True), capsys,
            "return the ordinary estimate")
    rejects("truncated_per_decision", tpd(lambda rho, c: np.cumprod(np.minimum(rho, c), axis=0)), capsys,
            "you multiplied across episodes")


@pytest.mark.parametrize("answer, reason", [("b", "per-decision IS is the unbiased one"),
                                            ("c", "no term can grow"), ("d", "can only lower a ratio"),
                                            (None, "not answered yet"), ("e", "answer with one of")])
def test_truncated_pd_question(answer, reason, capsys):
    rejects("truncated_pd_question", lambda: answer, capsys, reason)
    assert exercises.check("truncated_pd_question", lambda: " A ", verbose=False)


# ---------------------------------------------------------------- greedy_weight_fraction

def test_greedy_weight_fraction_wrong_answers(capsys):
    def right(p_x, b, scores):
        best = np.argmax(scores, axis=1)
        return float(np.asarray(p_x) @ np.asarray(b)[np.arange(len(best)), best])

    assert exercises.check("greedy_weight_fraction", right, verbose=False)
    rejects("greedy_weight_fraction", lambda p_x, b, s: 1 / np.shape(b)[1], capsys,
            "the behaviour does not show")
    rejects("greedy_weight_fraction", lambda p_x, b, s: float(np.mean(np.asarray(b)[np.arange(len(b)),
                                                                                    np.argmax(s, axis=1)])),
            capsys, "weight each kind's share by visitor_mix")
    rejects("greedy_weight_fraction", lambda p_x, b, s: float(np.asarray(p_x) @ np.max(b, axis=1)), capsys,
            "its OWN favourite article")
    rejects("greedy_weight_fraction", lambda p_x, b, s: 1 - right(p_x, b, s), capsys,
            "the share of visits whose weight is 0")
