"""Lesson 00's exercises: a stable softmax, a finite-difference gradient, one Adam step."""

import numpy as np

from ...core import autodiff as ad
from ...core.optim import Adam
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _softmax_reference(logits):
    return ad.softmax(np.asarray(logits, dtype=np.float64))


def _softmax_cases():
    rng = np.random.default_rng(0)
    return [
        Case("small logits [3]", (np.array([1.0, 2.0, 3.0]),)),
        Case("a batch [4, 5]", (rng.normal(size=(4, 5)),)),
        Case("huge logits [1000, 999, -1000]", (np.array([1000.0, 999.0, -1000.0]),)),
    ]


def _softmax_explain(case, got, expected):
    got = np.asarray(got, dtype=float)
    if np.isnan(got).any():
        return "NaN: exp(1000) overflows; subtract the max logit before exponentiating"
    if got.shape == expected.shape and not np.allclose(got.sum(-1), 1.0):
        return "your probabilities do not sum to 1 along the last axis"
    return None


register(
    "softmax", _softmax_reference, _softmax_cases, explain=_softmax_explain,
    hint="exp(x - max(x)) / sum(exp(x - max(x))) along the last axis",
)


def _f_cubic(x):
    return float(np.sum(x**3) + np.prod(np.sin(x)))


def _numerical_grad_reference(f, x):
    return ad.numerical_grad(f, x, eps=1e-5)


def _numerical_grad_cases():
    return [
        Case("sum of squares at [1, -2]", (lambda x: float(np.sum(x**2)), np.array([1.0, -2.0]))),
        Case("cubic + product of sines at 3 points", (_f_cubic, np.array([0.3, -1.2, 2.0]))),
    ]


def _numerical_grad_compare(got, expected):
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return f"expected shape {expected.shape}, got {got.shape}"
    if not np.allclose(got, expected, rtol=1e-4, atol=1e-6):
        return f"expected about {np.round(expected, 4)}, got {np.round(got, 4)}"
    return None


def _numerical_grad_explain(case, got, expected):
    got = np.asarray(got, dtype=float)
    if got.shape == expected.shape and np.allclose(got, 2 * expected, rtol=1e-3):
        return "twice the gradient: divide the central difference by 2*eps, not eps"
    return None


register(
    "numerical_grad", _numerical_grad_reference, _numerical_grad_cases,
    compare=_numerical_grad_compare, explain=_numerical_grad_explain,
    hint="for each i: (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), restoring x[i] afterwards",
)


def _adam_reference(params, grads, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    opt = Adam(lr=lr, betas=(b1, b2), eps=eps)
    new, state = opt.step({"p": params}, {"p": grads}, {"t": t - 1, "m": {"p": m}, "v": {"p": v}})
    return new["p"], state["m"]["p"], state["v"]["p"]


def _adam_cases():
    rng = np.random.default_rng(1)
    p, g = rng.normal(size=3), rng.normal(size=3)
    return [
        Case("first step (t=1) from zero moments", (p, g, np.zeros(3), np.zeros(3), 1, 0.1)),
        Case("step t=5 with running moments",
             (p, g, 0.1 * rng.normal(size=3), np.abs(0.1 * rng.normal(size=3)), 5, 0.01)),
    ]


def _adam_explain(case, got, expected):
    params, grads, m, v, t, lr = case.args
    if not isinstance(got, tuple) or len(got) != 3:
        return "return the triple (new_params, new_m, new_v)"
    uncorrected = params - lr * (0.9 * m + 0.1 * grads) / (
        np.sqrt(0.999 * v + 0.001 * grads**2) + 1e-8)
    if np.allclose(got[0], uncorrected, rtol=1e-6):
        return "no bias correction: divide m by (1 - b1^t) and v by (1 - b2^t)"
    return None


register(
    "adam_step", _adam_reference, _adam_cases, explain=_adam_explain,
    hint="update m and v, bias-correct both with t, then p - lr * m_hat / (sqrt(v_hat) + eps)",
)
