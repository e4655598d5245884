"""Lesson 14's exercises reject the usual wrong answers, each with the right diagnosis.

Every wrong answer below is one a student really writes; each must fail its checker, and the
printed reason must name the mistake (each ``explain`` branch is reached by one of them).
"""

import math

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises

NAMES = ["group_advantages", "kl_estimators", "token_aggregation", "grpo_loss_value",
         "rloo_advantages", "rloo_factor", "pass_at_k", "gspo_loss", "gspo_sum_question"]


def quiet(fn):
    """Wrong answers divide by zero or overflow; numpy's warnings are errors under pytest here."""
    if not callable(fn):
        return fn

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
    ref = exercises.get(name).reference
    assert exercises.check(name, ref() if name in ("rloo_factor", "gspo_sum_question") else ref)
    assert "cases pass" in capsys.readouterr().out


# ---------------------------------------------------------------- group_advantages

def advantages(*, ddof=1, eps_inside=False, eps=1e-4, batch_mean=False, batch_std=False,
               strided=False, never_scale=False, always_scale=False, flat=True):
    def fn(rewards, group_size, scale=True):
        r = np.asarray(rewards, dtype=float)
        groups = r.reshape(group_size, -1).T if strided else r.reshape(-1, group_size)
        mean = r.mean() if batch_mean else groups.mean(axis=1, keepdims=True)
        centred = groups - mean
        if (scale or always_scale) and not never_scale:
            if batch_std:
                std = r.std(ddof=1)
            else:
                std = groups.std(axis=1, ddof=ddof, keepdims=True)
            centred = centred / (np.sqrt(std**2 + eps) if eps_inside else std + eps)
        out = centred.T if strided else centred
        return out.reshape(-1) if flat else out
    return fn


def test_advantages_without_eps_give_nan(capsys):
    rejects("group_advantages", advantages(eps=0.0), capsys, "add eps = 1e-4 to the std")


def test_advantages_of_the_wrong_shape(capsys):
    rejects("group_advantages", advantages(flat=False), capsys, "return one advantage per completion")


def test_advantages_with_the_population_std(capsys):
    rejects("group_advantages", advantages(ddof=0), capsys, "population std (ddof=0)")


def test_advantages_with_one_batch_mean(capsys):
    rejects("group_advantages", advantages(batch_mean=True, batch_std=True), capsys,
            "one mean for the whole batch")
    rejects("group_advantages", advantages(batch_mean=True, never_scale=True), capsys,
            "one mean for the whole batch")


def test_advantages_with_the_batch_std(capsys):
    rejects("group_advantages", advantages(batch_std=True), capsys, "scale_rewards='batch'")


def test_advantages_of_strided_groups(capsys):
    rejects("group_advantages", advantages(strided=True), capsys, "your groups are strided")


def test_advantages_with_eps_inside_the_root(capsys):
    rejects("group_advantages", advantages(eps_inside=True), capsys, "eps goes outside the square root")


def test_advantages_that_ignore_scale(capsys):
    rejects("group_advantages", advantages(always_scale=True), capsys,
            "scale=False (Dr. GRPO) means no division")
    rejects("group_advantages", advantages(never_scale=True), capsys,
            "scale=True divides each group's centred rewards")


# ---------------------------------------------------------------- kl_estimators

def estimators(k1=lambda d: -d, k2=lambda d: 0.5 * d * d, k3=lambda d: np.exp(d) - d - 1,
               order=(0, 1, 2)):
    def fn(logp, ref_logp):
        d = np.asarray(ref_logp) - np.asarray(logp)
        out = (k1(d), k2(d), k3(d))
        return tuple(out[i] for i in order)
    return fn


def test_kl_estimators_not_a_triple(capsys):
    rejects("kl_estimators", lambda lp, rp: np.exp(rp - lp) - (rp - lp) - 1, capsys,
            "return the tuple (k1, k2, k3)")


def test_kl_estimators_in_the_wrong_order(capsys):
    rejects("kl_estimators", estimators(order=(2, 1, 0)), capsys, "the order is (k1, k2, k3)")


def test_kl_estimators_wrong_sign_of_k1(capsys):
    rejects("kl_estimators", estimators(k1=lambda d: d), capsys, "k1 = -d")


def test_kl_estimators_k2_without_the_half(capsys):
    rejects("kl_estimators", estimators(k2=lambda d: d * d), capsys, "you left out the 1/2")


def test_kl_estimators_k3_with_d_flipped(capsys):
    rejects("kl_estimators", estimators(k3=lambda d: np.exp(-d) + d - 1), capsys, "you flipped d")


def test_kl_estimators_k3_without_minus_one(capsys):
    rejects("kl_estimators", estimators(k3=lambda d: np.exp(d) - d), capsys, "without the -1")


def test_kl_estimators_k3_plus_d(capsys):  # review F10: was only "expected x, got y"
    rejects("kl_estimators", estimators(k3=lambda d: np.exp(d) + d - 1), capsys, "you added d")


# ---------------------------------------------------------------- token_aggregation

def aggregate(*, times_mask=False, mean_all=False, pad_in_sums=False, grpo_as="seq", dapo_as="tok",
              dr_as="const", grpo_sum=False):
    def fn(per_token, mask, loss_type, max_completion_length=None):
        per_token, mask = np.asarray(per_token, dtype=float), np.asarray(mask)
        x = per_token * mask if times_mask else np.where(mask, per_token, 0.0)
        if pad_in_sums:
            x = per_token
        counts = mask.sum(axis=1)
        b, t = mask.shape
        forms = {"seq": float(np.mean(x.sum(axis=1) / counts)), "tok": float(x.sum() / counts.sum()),
                 "seqsum": float(np.sum(x.sum(axis=1) / counts)),
                 "const": float(x.sum() / (b * (max_completion_length or 1))),
                 "width": float(x.sum() / (b * t)),
                 "rowwidth": float(np.mean(x.sum(axis=1) / t)),
                 "longest": float(x.sum() / (b * counts.max())),
                 "nobatch": float(x.sum() / (max_completion_length or 1))}
        if mean_all:
            return float(np.mean(per_token))
        if loss_type == "grpo":
            return forms["seqsum" if grpo_sum else grpo_as]
        if loss_type == "dapo":
            return forms[dapo_as]
        return forms[dr_as]
    return fn


def test_aggregation_that_multiplies_by_the_mask(capsys):
    rejects("token_aggregation", aggregate(times_mask=True), capsys, "-inf * 0 is NaN")


def test_aggregation_over_padding(capsys):
    rejects("token_aggregation", aggregate(mean_all=True), capsys,
            "the padding entries entered the mean")
    rejects("token_aggregation", aggregate(pad_in_sums=True), capsys,
            "the padding entries entered the sums")


def test_aggregation_that_swaps_grpo_and_dapo(capsys):
    rejects("token_aggregation", aggregate(grpo_as="tok"), capsys, "that was 'dapo'")
    rejects("token_aggregation", aggregate(dapo_as="seq"), capsys, "that was 'grpo' (the sequence mean)")


def test_sequence_mean_over_the_array_width(capsys):  # review F10: was only "expected x, got y"
    rejects("token_aggregation", aggregate(grpo_as="rowwidth"), capsys,
            "divided each completion's sum by the array's width")


def test_aggregation_that_sums_over_completions(capsys):
    rejects("token_aggregation", aggregate(grpo_sum=True), capsys, "average over the completions")


def test_dr_grpo_with_the_wrong_constant(capsys):
    rejects("token_aggregation", aggregate(dr_as="tok"), capsys, "not by the number of tokens in the batch")
    rejects("token_aggregation", aggregate(dr_as="width"), capsys, "times the array's width")
    rejects("token_aggregation", aggregate(dr_as="longest"), capsys, "longest completion in this batch")
    rejects("token_aggregation", aggregate(dr_as="nobatch"), capsys, "the number of completions is missing")


# ---------------------------------------------------------------- grpo_loss_value

def grpo_loss(*, objective="min", sign=1.0, kl_sign=1.0, flip_d=False, kl_token_mean=False,
              no_kl=False, inverse_ratio=False, no_correction=False, no_select=False):
    """A student's numpy GRPO loss with one mistake switched on."""
    def agg(v, mask, loss_type, length):
        v = v * mask if no_select else np.where(mask, v, 0.0)  # -inf * False is NaN
        counts = mask.sum(axis=1)
        if loss_type == "grpo":
            return float(np.mean(v.sum(axis=1) / counts))
        if loss_type == "dapo":
            return float(v.sum() / counts.sum())
        return float(v.sum() / (len(mask) * length))

    def fn(logp, old_logp, ref_logp, advantages, mask, clip=0.2, beta=0.04, loss_type="dapo",
           max_completion_length=None, kl_correction=False):
        sel = (lambda a: a) if no_select else (lambda a: np.where(mask, a, 0.0))
        ratio = np.exp(sel(logp) - sel(old_logp))
        a = np.asarray(advantages)[:, None]
        c = np.clip(ratio, 1 - clip, 1 + clip)
        s = {"min": np.minimum(ratio * a, c * a), "max": np.maximum(ratio * a, c * a),
             "ratio": ratio * a, "clipped": c * a}[objective]
        d = sel(ref_logp) - sel(logp)
        d = -d if flip_d else d
        k3 = np.exp(d) - d - 1
        if kl_correction and not no_correction:
            k3 = k3 / ratio if inverse_ratio else k3 * ratio
        kl = agg(k3, mask, "dapo" if kl_token_mean else loss_type, max_completion_length)
        b = 0.0 if no_kl else beta
        return -sign * agg(s, mask, loss_type, max_completion_length) + kl_sign * b * kl
    return fn


def test_the_numpy_loss_without_mistakes_passes(capsys):
    assert exercises.check("grpo_loss_value", quiet(grpo_loss()))


@pytest.mark.parametrize("mistake, reason", [
    ({"objective": "clipped"}, "you always used the clipped ratio"),
    ({"objective": "ratio"}, "the ratio was never clipped"),
    ({"objective": "max"}, "max instead of min"),
    ({"sign": -1.0}, "wrong sign on the surrogate"),
    ({"kl_sign": -1.0}, "the KL term is a penalty"),
    ({"flip_d": True}, "k3 uses d = ref_logp - logp"),
    ({"kl_token_mean": True}, "aggregated like the surrogate"),
    ({"no_kl": True}, "the KL term is missing"),
    ({"inverse_ratio": True}, "multiplies k3 by r = pi/pi_old"),
    ({"no_correction": True}, "kl_correction=True multiplies each token's k3 by its ratio"),
    ({"no_select": True}, "NaN: padding holds -inf in ref_logp"),
])
def test_grpo_loss_mistakes(mistake, reason, capsys):
    rejects("grpo_loss_value", grpo_loss(**mistake), capsys, reason)


def test_grpo_loss_with_a_hard_coded_clip(capsys):
    right = grpo_loss()

    def clip_02(logp, old_logp, ref_logp, advantages, mask, clip=0.2, **kwargs):
        return right(logp, old_logp, ref_logp, advantages, mask, 0.2, **kwargs)
    out = rejects("grpo_loss_value", clip_02, capsys, "whatever the clip argument")
    assert "4/5 cases pass" in out


def test_grpo_loss_that_returns_an_array(capsys):
    rejects("grpo_loss_value", lambda *a, **k: np.array([1.0, 2.0]), capsys, "return the loss as one number")


# ---------------------------------------------------------------- rloo_advantages, rloo_factor

def rloo(*, include_self=False, divide_by_g=False, whole_batch=False, grpo=False, flat=True):
    def fn(rewards, group_size):
        r = np.asarray(rewards, dtype=float)
        if whole_batch:
            return r - (r.sum() - r) / (len(r) - 1)
        g = r.reshape(-1, group_size)
        total = g.sum(axis=1, keepdims=True)
        if grpo:
            out = (g - g.mean(axis=1, keepdims=True)) / (g.std(axis=1, ddof=1, keepdims=True) + 1e-4)
        elif include_self:
            out = g - g.mean(axis=1, keepdims=True)
        else:
            out = g - (total - g) / (group_size if divide_by_g else group_size - 1)
        return out.reshape(-1) if flat else out
    return fn


@pytest.mark.parametrize("mistake, reason", [
    ({"include_self": True}, "your baseline includes the completion itself"),
    ({"divide_by_g": True}, "the other rewards are G - 1, not G"),
    ({"whole_batch": True}, "leave one out within each prompt's group"),
    ({"grpo": True}, "that is GRPO's scaled advantage"),
    ({"flat": False}, "return one advantage per completion"),
])
def test_rloo_mistakes(mistake, reason, capsys):
    rejects("rloo_advantages", rloo(**mistake), capsys, reason)


@pytest.mark.parametrize("answer, reason", [
    (7 / 8, "the other way round"), (1.0, "they differ"), (1.14, "close: give it to 6 digits"),
    ("eight sevenths", "answer with a number"),
])
def test_rloo_factor_mistakes(answer, reason, capsys):
    rejects("rloo_factor", answer, capsys, reason)


# ---------------------------------------------------------------- pass_at_k

def test_pass_at_k_with_float_binomials_overflows(capsys):
    rejects("pass_at_k", lambda n, c, k: 1 - float(math.comb(n - c, k)) / float(math.comb(n, k)), capsys,
            "C(n, k) does not fit in a float")


def test_pass_at_k_with_inf_over_inf_is_nan(capsys):
    def gamma_binomials(n, c, k):
        def comb(a, b):
            top = np.prod(np.arange(a - b + 1, a + 1, dtype=float))
            return top / np.prod(np.arange(1, b + 1, dtype=float))
        return float(1 - comb(n - c, k) / comb(n, k))
    rejects("pass_at_k", gamma_binomials, capsys, "NaN: C(n, k) overflowed")


def test_pass_at_k_plug_in(capsys):
    out = rejects("pass_at_k", lambda n, c, k: 1 - (1 - c / n) ** k, capsys, "that is the plug-in")
    # review F9: on n=20, c=18, k=5 the plug-in (0.99999) was diagnosed as an off-by-one
    assert "off by one" not in out, out


def test_pass_at_k_plug_in_near_one(capsys):
    assert not exercises.check("pass_at_k", lambda n, c, k: 1 - (1 - c / n) ** k if c == 18 else
                               float(rc.pass_at_k(n, c, k)))
    out = capsys.readouterr().out
    assert "that is the plug-in" in out and "off by one" not in out, out


def test_pass_at_k_as_pass_at_1(capsys):
    rejects("pass_at_k", lambda n, c, k: c / n, capsys, "c/n is pass@1")


def test_pass_at_k_off_by_one(capsys):
    def one_factor_too_many(n, c, k):
        if n - c < k:
            return 1.0
        return 1.0 - math.prod(1.0 - k / i for i in range(n - c, n + 1))
    rejects("pass_at_k", one_factor_too_many, capsys, "off by one in the product")


def test_pass_at_k_dividing_by_zero(capsys):
    def no_shortcut(n, c, k):  # forgets n - c < k, and starts the product one too early
        return 1.0 - math.prod(1.0 - k / i for i in range(n - c, n + 1))
    rejects("pass_at_k", no_shortcut, capsys, "the product runs over i = n - c + 1")


def test_pass_at_k_that_returns_an_array(capsys):
    rejects("pass_at_k", lambda n, c, k: [0.5, 0.5], capsys, "return one number")


# ---------------------------------------------------------------- gspo_loss

def gspo(*, reduce="mean", per_token=False, clip_it=True, sign=1.0):
    def fn(logp, old_logp, advantages, mask, clip=0.2):
        log_ratio = rc.where(mask, logp - old_logp, 0.0)
        if per_token:
            r = rc.exp(log_ratio)
            a = advantages[:, None]
            o = rc.where(mask, rc.minimum(r * a, rc.clip(r, 1 - clip, 1 + clip) * a), 0.0)
            return -rc.mean(rc.sum(o, axis=1) / mask.sum(axis=1))
        denom = {"mean": mask.sum(axis=1), "sum": 1.0, "width": mask.shape[1]}[reduce]
        s = rc.exp(rc.sum(log_ratio, axis=1) / denom)
        o = rc.minimum(s * advantages, rc.clip(s, 1 - clip, 1 + clip) * advantages) if clip_it \
            else s * advantages
        return -sign * rc.mean(o)
    return fn


@pytest.mark.parametrize("mistake, reason", [
    ({"reduce": "sum"}, "not of the sum"),
    ({"per_token": True}, "that is GRPO's per-token ratio"),
    ({"reduce": "width"}, "not over the array's width"),
    ({"clip_it": False}, "the sequence ratio is clipped too"),
    ({"sign": -1.0}, "wrong sign"),
])
def test_gspo_mistakes(mistake, reason, capsys):
    rejects("gspo_loss", gspo(**mistake), capsys, reason)


def test_gspo_with_a_cut_gradient_path(capsys):
    def detached(logp, old_logp, advantages, mask, clip=0.2):
        value = gspo()(rc.stop_gradient(logp), old_logp, advantages, mask, clip)
        return value + 0.0 * rc.sum(logp)
    rejects("gspo_loss", detached, capsys, "the gradient is zero")


def test_gspo_with_numpy_on_the_traced_logp(capsys):
    def numpy_exp(logp, old_logp, advantages, mask, clip=0.2):
        log_ratio = np.where(mask, logp - old_logp, 0.0)
        s = np.exp(log_ratio.sum(axis=1) / mask.sum(axis=1))
        return -np.mean(np.minimum(s * advantages, np.clip(s, 1 - clip, 1 + clip) * advantages))
    rejects("gspo_loss", numpy_exp, capsys, "a numpy function was applied to the traced logp")


@pytest.mark.parametrize("answer, reason", [
    ("a", "the clip bounds the clipped branch only"), ("c", "exp(sum) is not smaller"),
    ("d", "both the scale and the clipping"), ("e", "answer with one of"),
    (None, "not answered yet"),
])
def test_gspo_sum_question_wrong_answers(answer, reason, capsys):
    assert not exercises.check("gspo_sum_question", lambda: answer)
    out = capsys.readouterr().out
    assert reason in out, out
