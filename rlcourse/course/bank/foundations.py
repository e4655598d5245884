"""Lesson 00's exercises.

- the worked example of the orientation: ``episode_return``;
- Build it: ``numerical_grad`` (central differences), ``mse_grad`` (a gradient by hand),
  ``mse_loss`` (the same loss written for autodiff, graded through ``value_and_grad``),
  ``adam_step``;
- Exercises: ``sgd_momentum_step``, ``complex_step_grad``, ``why_error_floor`` (multiple choice),
  ``hessian_vector_product``.

Each ``explain`` recomputes the typical wrong answers (a forward difference, a missing factor 2,
a missing bias correction, another momentum convention, ...) and names the one that matches.
"""

import numpy as np

from ...core import autodiff as ad
from ...core.optim import SGD, Adam
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _matches(got, candidate, rtol=1e-8, atol=1e-12) -> bool:
    """True if ``got`` has ``candidate``'s shape and values (a wrong answer we recognise)."""
    try:
        got, candidate = np.asarray(got, dtype=float), np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return (got.shape == candidate.shape and bool(np.all(np.isfinite(got)))
            and np.allclose(got, candidate, rtol=rtol, atol=atol))


def _compare_arrays(rtol, atol):
    """A compare for one real array: shape, dtype kind, then values within rtol/atol."""
    def compare(got, expected):
        expected = np.asarray(expected)
        if isinstance(got, tuple):
            return f"expected one array of shape {expected.shape}, got a tuple"
        got = np.asarray(got)
        if np.iscomplexobj(got):
            return "your result is a complex array: return the real gradient (a float array)"
        if got.shape != expected.shape:
            return f"expected shape {expected.shape} (the shape of x), got shape {got.shape}"
        if got.dtype.kind not in "fiu":
            return f"expected an array of floats, got dtype {got.dtype}"
        got = got.astype(float)
        if not np.all(np.isfinite(got)):
            return "your result contains inf or NaN"
        if not np.allclose(got, expected, rtol=rtol, atol=atol):
            worst = np.argmax(np.abs(got - expected) / (atol + rtol * np.abs(expected)))
            where = np.unravel_index(worst, expected.shape)
            return (f"entry {tuple(int(i) for i in where)}: expected {expected[where]:.12g}, "
                    f"got {got[where]:.12g}")
        return None
    return compare


# ------------------------------------------------------------ orientation: episode_return
# The worked example of how a check reads: the return of one episode from its rewards.

def _episode_return_reference(rewards):
    return float(np.sum(rewards))


def _episode_return_cases():
    return [
        Case("CartPole-like: eight rewards of 1", (np.ones(8),)),
        Case("FrozenLake-like: only the last step pays", (np.array([0.0, 0.0, 0.0, 1.0]),)),
        Case("CliffWalking-like: -1 a step, -100 for the cliff",
             (np.array([-1.0, -1.0, -100.0, -1.0, -1.0]),)),
    ]


def _episode_return_explain(case, got, expected):
    (rewards,) = case.args
    if _matches(got, len(rewards)):
        return ("you counted the steps: that equals the return only when every reward is 1, "
                "as in CartPole")
    if _matches(got, np.sum(rewards[:-1])):
        return "you left out the last reward: the reward of the final step belongs to the episode"
    if _matches(got, np.mean(rewards)):
        return "you averaged the rewards: the return is their sum"
    return None


register(
    "episode_return", _episode_return_reference, _episode_return_cases,
    explain=_episode_return_explain,
    hint="the return of an episode adds up every reward it received, whatever their values",
)


# ------------------------------------------------------------ Build it 1: numerical_grad

def _numerical_grad_reference(f, x, eps=1e-6):
    return ad.numerical_grad(f, x, eps=eps)


def _sum_of_squares(x):
    return float(np.sum(x**2))


def _sum_exp3(x):
    return float(np.sum(np.exp(3 * x)))


def _matrix_fn(W):
    return float(np.sum(np.tanh(W @ np.array([1.0, -1.0, 0.5]))))


def _square_of_sum(x):
    return float(np.sum(x) ** 2 + x[0] * x[-1])


def _sum_pow_1_5(x):
    return float(np.sum(np.asarray(x, dtype=float) ** 1.5))


def _numerical_grad_cases():
    return [
        Case("sum(x**2) at [1, -2]", (_sum_of_squares, np.array([1.0, -2.0]))),
        Case("sum(exp(3x)) at [0.5, 1, -0.3]",
             (_sum_exp3, np.array([0.5, 1.0, -0.3]))),
        Case("a 2x3 matrix argument", (_matrix_fn, np.array([[0.1, -0.4, 0.3], [0.9, 0.2, -1.1]]))),
        Case("sum(x)**2 + x0*x2 at 3 points",
             (_square_of_sum, np.array([0.3, -1.2, 2.0]))),
        Case("an integer x = [1, 2, 3] of sum(x**1.5)", (_sum_pow_1_5, np.array([1, 2, 3]))),
    ]


def _one_sided(f, x, eps, sign):
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    base = f(x)
    for i in range(x.size):
        shifted = x.copy()
        shifted.flat[i] += sign * eps
        g.flat[i] = sign * (f(shifted) - base) / eps
    return g


def _not_restored(f, x, eps):
    """Central differences that leave x[i] at x[i] - eps before moving on to x[i+1]."""
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + eps
        up = f(x)
        x.flat[i] = old - eps
        g.flat[i] = (up - f(x)) / (2 * eps)
    return g


def _numerical_grad_explain(case, got, expected):
    f, x = case.args
    eps = case.kwargs.get("eps", 1e-6)
    arr = np.asarray(got)
    if arr.shape != expected.shape:
        if arr.size == expected.size:
            return (f"shape {arr.shape}: return the gradient shaped like x {expected.shape} "
                    "(x.flat and g.flat index any shape)")
        return None
    if arr.dtype.kind in "iu" or (np.issubdtype(np.asarray(x).dtype, np.integer)
                                  and np.allclose(arr, np.round(arr))):
        return ("integer results: x came in as integers, so x + eps (or np.zeros_like(x)) rounds "
                "back to integers. Convert x to float64 first: np.array(x, dtype=np.float64)")
    if arr.dtype == np.float32:
        return ("a float32 result: float32 rounding, divided by 2*eps, swamps the derivative; "
                "compute in float64")
    if _matches(got, 2 * expected):
        return "twice the gradient: a central difference divides by 2*eps, not eps"
    xf = np.asarray(x, dtype=float)
    if _matches(got, np.full(xf.shape, (f(xf + eps) - f(xf - eps)) / (2 * eps))):
        return ("every entry is the same number: you moved all coordinates at once; move one "
                "coordinate at a time (x + eps * e_i)")
    if _matches(got, 0.5 * expected):
        return "half the gradient: divide f(x + eps) - f(x - eps) by 2*eps, not 4*eps"
    for sign, name in ((1, "forward"), (-1, "backward")):
        one_sided = _one_sided(f, x, eps, sign)
        if _matches(got, one_sided):
            return (f"that is a {name} difference: its error shrinks like eps, a central "
                    "difference's like eps**2. Use (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)")
        if _matches(got, one_sided / 2):
            return (f"a {name} difference divided by 2*eps: step both ways, "
                    "f(x + eps e_i) - f(x - eps e_i)")
    if _matches(got, _not_restored(f, x, eps)):
        return ("x[i] is not restored after its two evaluations, so the next partial derivative "
                "is taken at a shifted point: put the old value back (or perturb a copy)")
    return None


register(
    "numerical_grad", _numerical_grad_reference, _numerical_grad_cases,
    compare=_compare_arrays(rtol=1e-7, atol=1e-9), explain=_numerical_grad_explain,
    hint="move one coordinate at a time, the same small step both ways, and leave x as you found it",
)


# ------------------------------------------------------------ Build it 2: mse_grad

def _mse_traced(params, X, y):
    return ad.mean(ad.square(X @ params["w"] + params["b"] - y))


def _mse_grad_reference(X, w, b, y):
    _, g = ad.value_and_grad(_mse_traced)({"w": np.asarray(w, float), "b": np.asarray(float(b))},
                                          X, y)
    return g["w"], float(g["b"])


def _mse_grad_cases():
    rng = np.random.default_rng(3)
    X1 = rng.normal(size=(32, 3))
    y1 = X1 @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=32)
    X2 = rng.normal(size=(5, 2))
    X3 = rng.normal(size=(4, 4))
    return [
        Case("32 points, 3 features, at w = 0, b = 0", (X1, np.zeros(3), 0.0, y1)),
        Case("5 points, 2 features, w and b not zero",
             (X2, np.array([0.5, -1.0]), -0.7, rng.normal(size=5))),
        Case("a square X (4 points, 4 features)",
             (X3, rng.normal(size=4), 0.4, rng.normal(size=4))),
    ]


def _mse_grad_explain(case, got, expected):
    X, w, b, y = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (dL/dw, dL/db)"
    gw, gb = got
    ew, eb = expected
    n = len(y)
    r = X @ w + b - y
    if np.shape(gw) != np.shape(ew):
        return f"dL/dw must have w's shape {np.shape(ew)}, got {np.shape(gw)}"
    if _matches(gw, ew):
        if _matches(gb, np.mean(r)):
            return "dL/db lacks the factor 2 from the derivative of the square"
        if _matches(gb, 2 * np.sum(r)) or _matches(gb, np.sum(r)):
            return "dL/db is a sum: the loss is a mean, so divide by N"
        return "dL/dw is right; dL/db = (2/N) * sum(residual)"
    if _matches(gw, ew / 2):
        return "half the gradient: the derivative of (residual)**2 is 2 * residual"
    if _matches(gw, n * ew) or _matches(gw, n * ew / 2):
        return "N times the gradient: the loss is a mean, so divide by N"
    if _matches(gw, -ew):
        return "wrong sign: the residual is prediction - target, X @ w + b - y"
    if _matches(gw, 2 * X.T @ (X @ w - y) / n):
        return "b is missing from the prediction: the residual is X @ w + b - y"
    if X.shape[0] == X.shape[1] and _matches(gw, 2 * X @ r / n):
        return "X where X.T belongs: dL/dw = (2/N) X.T @ residual (shapes only agree for square X)"
    return None


def _mse_explain_error(case, err):
    if "matmul" in str(err) or "shapes" in str(err) or "aligned" in str(err):
        return "a shape mismatch: dL/dw = (2/N) X.T @ residual, where X is [N, d]"
    return None


register(
    "mse_grad", _mse_grad_reference, _mse_grad_cases, explain=_mse_grad_explain,
    explain_error=_mse_explain_error,
    hint="differentiate (x_i . w + b - y_i)**2 for one i, then average over i; X.T sums over points",
)


# ------------------------------------------------------------ Build it 3: mse_loss (traced)

def _mse_loss_call(fn, params, X, y):
    return ad.value_and_grad(fn)(params, X, y)


def _mse_loss_cases():
    rng = np.random.default_rng(4)
    X1 = rng.normal(size=(32, 3))
    X2 = rng.normal(size=(5, 2))
    return [
        Case("32 points, at w = 0, b = 0",
             ({"w": np.zeros(3), "b": np.array(0.0)}, X1, X1 @ np.array([1.5, -2.0, 0.5]) + 0.3)),
        Case("5 points, w and b not zero",
             ({"w": np.array([0.5, -1.0]), "b": np.array(-0.7)}, X2, rng.normal(size=5))),
    ]


def _mse_loss_explain(case, got, expected):
    params, X, y = case.args
    value, grads = got
    e_value, e_grads = expected
    n = len(y)
    if np.isclose(value, e_value, rtol=1e-9):
        if all(not np.any(g) for g in ad.tree_leaves(grads)):
            return ("the value is right but every gradient is zero: the loss was not built from "
                    "the traced params (np.* functions, .value or stop_gradient cut the path)")
        if isinstance(grads, dict) and "b" in grads and not np.any(grads["b"]) \
                and np.any(e_grads["b"]):
            return ("dL/db is zero: b is missing from the prediction (here b = 0, so the value "
                    "agrees): X @ params['w'] + params['b']")
        return None
    if np.isclose(value, n * e_value, rtol=1e-9):
        return "N times the loss: use rc.mean, not rc.sum"
    if np.isclose(value, np.mean((X @ params["w"] - y) ** 2), rtol=1e-9):
        return "b is missing from the prediction: X @ params['w'] + params['b']"
    if np.isclose(value, np.sqrt(e_value), rtol=1e-9):
        return "that is the root of the mean squared error; the loss is the mean squared error"
    return None


def _mse_loss_explain_error(case, err):
    text = str(err)
    if "ufunc" in text or "Tensor" in text:
        return ("a numpy function was applied to traced parameters: inside the loss use rc.mean, "
                "rc.square (and + - * / @ **), which record themselves on the tape")
    if "scalar" in text:
        return "the loss must be one number: reduce the squared residuals with rc.mean"
    if isinstance(err, KeyError):
        return "params holds the keys 'w' and 'b'"
    return None


register(
    "mse_loss", _mse_traced, _mse_loss_cases, call=_mse_loss_call, explain=_mse_loss_explain,
    explain_error=_mse_loss_explain_error,
    hint="the same mean squared error as before, written with rc operations on params['w'] and "
         "params['b'] so that value_and_grad can trace it",
)


# ------------------------------------------------------------ Build it 4: adam_step

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
        Case("t=2, b1=0.5, b2=0.9, eps=0.01 (passed as keywords)",
             (p, g, 0.2 * rng.normal(size=3), 1e-4 * np.abs(rng.normal(size=3)), 2, 0.05),
             {"b1": 0.5, "b2": 0.9, "eps": 0.01}),
    ]


def _adam_variants(params, grads, m, v, t, lr, b1, b2, eps):
    """The usual wrong Adam steps, by name: (new_params, new_m, new_v) of each."""
    def step(m_new, v_new, m_hat, v_hat, p_new=None, state=None):
        p_out = params - lr * m_hat / (np.sqrt(v_hat) + eps) if p_new is None else p_new
        return (p_out, *(state or (m_new, v_new)))

    m1 = b1 * m + (1 - b1) * grads
    v1 = b2 * v + (1 - b2) * grads**2
    mh, vh = m1 / (1 - b1**t), v1 / (1 - b2**t)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "no bias correction: divide m by (1 - b1**t) and v by (1 - b2**t)":
                step(m1, v1, m1, v1),
            "bias correction with t + 1: the first step is t = 1, so divide by (1 - b**t)":
                step(m1, v1, m1 / (1 - b1 ** (t + 1)), v1 / (1 - b2 ** (t + 1))),
            "eps inside the square root: the step is m_hat / (sqrt(v_hat) + eps)":
                step(m1, v1, mh, vh, p_new=params - lr * mh / np.sqrt(vh + eps)),
            "v must average the squared gradient g**2, not g or |g|":
                step(m1, b2 * v + (1 - b2) * np.abs(grads), mh,
                     (b2 * v + (1 - b2) * np.abs(grads)) / (1 - b2**t)),
            "the returned state must be the raw averages m and v, not the bias-corrected ones":
                step(m1, v1, mh, vh, state=(mh, vh)),
            "wrong sign: Adam moves against the gradient, params - lr * ...":
                step(m1, v1, mh, vh, p_new=params + lr * mh / (np.sqrt(vh) + eps)),
            "b1 and b2 swapped: m uses b1 (0.9 by default), v uses b2 (0.999)":
                _adam_reference(params, grads, m, v, t, lr, b2, b1, eps),
            "the keyword arguments b1, b2, eps were ignored: use the ones passed in":
                _adam_reference(params, grads, m, v, t, lr),
        }


def _adam_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return "return the triple (new_params, new_m, new_v)"
    params, grads, m, v, t, lr = case.args
    kw = {"b1": 0.9, "b2": 0.999, "eps": 1e-8, **case.kwargs}
    for why, variant in _adam_variants(params, grads, m, v, t, lr, kw["b1"], kw["b2"],
                                       kw["eps"]).items():
        if all(_matches(g, w, rtol=1e-9) for g, w in zip(got, variant)):
            return why
    b1, b2 = kw["b1"], kw["b2"]
    if t == 1 and not np.all(np.isfinite(np.asarray(got[0], dtype=float))):
        return ("inf or NaN at t = 1: the bias correction divided by zero; t counts from 1, so "
                "divide by (1 - b**t), not (1 - b**(t - 1))")
    if t > 1:
        m1 = b1 * m + (1 - b1) * grads
        v1 = b2 * v + (1 - b2) * grads**2
        mh, vh = m1 / (1 - b1 ** (t - 1)), v1 / (1 - b2 ** (t - 1))
        if _matches(got[0], params - lr * mh / (np.sqrt(vh) + kw["eps"]), rtol=1e-9):
            return "bias correction with t - 1: t counts from 1, so divide by (1 - b**t)"
    if all(_matches(g, e) for g, e in zip(got[1:], expected[1:])):
        return "m and v are right but the parameter step is not: p - lr * m_hat / (sqrt(v_hat) + eps)"
    return None


register(
    "adam_step", _adam_reference, _adam_cases, explain=_adam_explain,
    hint="update both running averages first, correct each for its start at zero (it depends on t), "
         "then step each parameter against its corrected mean, scaled by its corrected spread",
)


# ------------------------------------------------------------ Exercise 1: sgd_momentum_step

def _momentum_reference(params, grads, velocity, lr, beta=0.9):
    new, state = SGD(lr=lr, momentum=beta).step({"p": params}, {"p": grads},
                                                {"velocity": {"p": velocity}})
    return new["p"], state["velocity"]["p"]


def _momentum_cases():
    rng = np.random.default_rng(2)
    p, g = rng.normal(size=4), rng.normal(size=4)
    return [
        Case("from zero velocity, lr 0.1", (p, g, np.zeros(4), 0.1)),
        Case("with a running velocity, lr 0.05", (p, g, rng.normal(size=4), 0.05)),
        Case("beta = 0.5 passed as a keyword, lr 0.2", (p, g, rng.normal(size=4), 0.2),
             {"beta": 0.5}),
    ]


def _momentum_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (new_params, new_velocity)"
    params, grads, velocity, lr = case.args
    beta = case.kwargs.get("beta", 0.9)
    v_new = beta * velocity + grads
    ema = beta * velocity + (1 - beta) * grads
    folded = beta * velocity + lr * grads
    variants = {
        "params and velocity swapped: return (new_params, new_velocity)":
            (v_new, params - lr * v_new),
        "the (1 - beta) * g average is another convention; here v = beta * v + g (as in "
        "PyTorch's SGD and rc.SGD)": (params - lr * ema, ema),
        "the step used the old velocity: update v first, then params - lr * v_new":
            (params - lr * velocity, v_new),
        "wrong sign: move against the velocity, params - lr * v":
            (params + lr * v_new, v_new),
        "lr folded into the velocity (v = beta * v + lr * g, another convention): here the "
        "velocity is beta * v + g and lr multiplies it in the step": (params - folded, folded),
        "that is Nesterov's look-ahead step (params - lr * (g + beta * v_new)); this exercise "
        "asks for plain momentum": (params - lr * (grads + beta * v_new), v_new),
        "beta passed as a keyword was ignored": _momentum_reference(params, grads, velocity, lr),
        "the velocity returned is the old one: return the updated velocity, the state of the "
        "next step": (params - lr * v_new, velocity),
    }
    for why, variant in variants.items():
        if all(_matches(a, b, rtol=1e-9) for a, b in zip(got, variant)):
            return why
    return None


register(
    "sgd_momentum_step", _momentum_reference, _momentum_cases, explain=_momentum_explain,
    hint="the velocity is a decaying sum of past gradients (nothing damps the new one); the "
         "parameters then move against the new velocity",
)


# ------------------------------------------------------------ Exercise 2: complex_step_grad

def _complex_step_reference(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.shape)
    for i in range(x.size):
        z = x.astype(np.complex128)
        z.flat[i] += 1j * h
        g.flat[i] = np.imag(f(z)) / h
    return g


def _squire_trapp(x):
    return np.sum(np.exp(x) / np.sqrt(np.sin(x) ** 3 + np.cos(x) ** 3))


def _cubic_sine(x):
    return np.sum(x**3 * np.sin(x)) + np.prod(x)


def _matrix_exp(W):
    return np.sum(np.exp(W) @ np.array([1.0, -2.0]))


def _complex_step_cases():
    return [
        Case("Squire & Trapp's e^x / sqrt(sin^3 x + cos^3 x) at [1.5, 0.5]",
             (_squire_trapp, np.array([1.5, 0.5]))),
        Case("sum(x**3 sin x) + prod(x) at 3 points", (_cubic_sine, np.array([0.3, -1.2, 2.0]))),
        Case("a 2x2 matrix argument", (_matrix_exp, np.array([[0.1, -0.4], [0.9, 0.2]]))),
    ]


def _complex_step_explain(case, got, expected):
    f, x = case.args
    if np.iscomplexobj(got):
        return ("a complex result: the derivative is the imaginary part divided by h, a real "
                "number; np.zeros(x.shape) (float) holds it")
    arr = np.asarray(got, dtype=float)
    if arr.shape != expected.shape:
        return None
    if not np.any(arr):
        return ("all zeros: the imaginary step was dropped. Make the perturbed x complex "
                "(x.astype(complex)) before adding 1j * h; a float array discards it")
    if _matches(arr, expected / 2):
        return "half the derivative: divide the imaginary part by h, not 2h"
    xf = np.asarray(x, dtype=float)
    if _matches(arr, np.full(xf.shape, np.imag(f(xf + 1e-20j)) / 1e-20), rtol=1e-9):
        return ("every entry is the same number: you moved all coordinates at once; step one "
                "coordinate at a time, x + i h e_k")
    for eps in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
        if _matches(arr, ad.numerical_grad(lambda z: float(np.real(f(z))), x, eps=eps), rtol=1e-9):
            return ("that is a central finite difference (correct to about 10 digits); the "
                    "complex step f(x + i h e_k) needs no subtraction and is exact to ~16")
    if np.allclose(arr, expected, rtol=1e-6):
        return ("close but not exact: a complex step with a tiny h (1e-20) has no cancellation, "
                "so it matches to about 15 digits; a finite difference does not")
    return None


def _complex_step_explain_error(case, err):
    if "complex" in str(err).lower() or "single item" in str(err):
        return ("x is a float array, which cannot hold x + 1j * h: perturb a complex copy, "
                "x.astype(complex)")
    return None


register(
    "complex_step_grad", _complex_step_reference, _complex_step_cases,
    compare=_compare_arrays(rtol=1e-12, atol=0.0), explain=_complex_step_explain,
    explain_error=_complex_step_explain_error,
    hint="for an analytic f, f(x + i h) = f(x) + i h f'(x) + O(h**2): the derivative sits in the "
         "imaginary part, with nothing subtracted",
)


# ------------------------------------------------------------ Exercise 2b: why_error_floor

_FLOOR_CHOICES = {
    "A": "the truncation error of the central difference grows as eps shrinks",
    "B": "f(x + eps) and f(x - eps) agree in their leading digits, the subtraction cancels them "
         "and leaves their rounding errors (about 1e-16 of f each), which dividing by 2 eps "
         "magnifies",
    "C": "float64 cannot represent numbers as small as 1e-8",
    "D": "np.exp is only accurate to about 8 digits",
}


def _why_floor_reference():
    return "B"


def _choice_compare(got, expected):
    choice = str(got).strip().upper() if got is not None else ""
    if choice not in _FLOOR_CHOICES:
        return f"answer with one letter of {', '.join(_FLOOR_CHOICES)}, got {got!r}"
    return None if choice == expected else "not this one"


def _why_floor_explain(case, got, expected):
    choice = str(got).strip().upper()
    return {
        "A": "no: the truncation error shrinks like eps**2; it is what falls on the right of the plot",
        "C": "no: float64 represents numbers down to about 1e-308; x + eps is what loses digits",
        "D": "no: np.exp is accurate to the last bit or so (about 1e-16 relative)",
    }.get(choice)


register(
    "why_error_floor", _why_floor_reference, [Case("your choice")], compare=_choice_compare,
    explain=_why_floor_explain,
    hint="compare how many digits f(x + eps) and f(x - eps) share when eps is 1e-8",
)


# ------------------------------------------------------------ Exercise 3: hessian_vector_product

class _LogisticLoss:
    """Mean logistic loss of a linear classifier, traced; its Hessian X.T diag(p(1-p)) X / N."""

    def __init__(self, X, labels):
        self.X, self.labels = X, labels

    def __call__(self, w):
        z = self.X @ w
        return -ad.mean(self.labels * ad.log_sigmoid(z) + (1 - self.labels) * ad.log_sigmoid(-z))

    def hessian(self, w):
        p = 1 / (1 + np.exp(-(self.X @ w)))
        return self.X.T @ (self.X * (p * (1 - p))[:, None]) / len(self.labels)

    def __repr__(self):
        return f"logistic loss on {self.X.shape[0]} points"


class _QuarticLoss:
    """sum(w**4) / 4 + a . w; its Hessian diag(3 w**2)."""

    def __init__(self, a):
        self.a = a

    def __call__(self, w):
        return ad.sum(w**4) / 4 + ad.sum(w * self.a)

    def hessian(self, w):
        return np.diag(3 * w**2)

    def __repr__(self):
        return "sum(w**4)/4 + a.w"


def _hvp_reference(loss, w, v, eps=1e-5):
    return loss.hessian(w) @ v


def _hvp_cases():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    labels = (X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=40) > 0).astype(float)
    logistic = _LogisticLoss(X, labels)
    return [
        Case("logistic loss, 3 weights", (logistic, np.array([0.2, -0.5, 0.1]),
                                          np.array([1.0, 0.5, -2.0]))),
        Case("sum(w**4)/4 + a.w, 4 weights, |v| = 3",
             (_QuarticLoss(rng.normal(size=4)), np.array([1.0, -2.0, 0.5, 1.5]),
              np.array([2.0, -1.0, 2.0, 0.0]))),
        Case("logistic loss, eps = 1e-4 passed as a keyword",
             (logistic, np.array([-0.3, 0.4, 0.0]), np.array([0.0, 1.0, 1.0])), {"eps": 1e-4}),
    ]


def _hvp_explain(case, got, expected):
    loss, w, v = case.args
    eps = case.kwargs.get("eps", 1e-5)
    arr = np.asarray(got, dtype=float)
    if arr.shape != expected.shape:
        if arr.ndim == 0:
            return ("one number: that is v.H.v (a second difference of the loss); H v is a vector, "
                    "a difference of two gradients")
        return None
    gradient = ad.grad(loss)
    forward = (gradient(w + eps * v) - gradient(w)) / eps
    central = (gradient(w + eps * v) - gradient(w - eps * v)) / (2 * eps)
    norm = np.linalg.norm(v)
    if _matches(arr, forward, rtol=1e-7):
        return ("a forward difference of gradients: its error shrinks like eps; step both ways, "
                "(g(w + eps v) - g(w - eps v)) / (2 eps)")
    if _matches(arr, 2 * expected, rtol=1e-6):
        return "twice H v: divide the difference of the two gradients by 2*eps"
    if _matches(arr, -expected, rtol=1e-6):
        return "wrong sign: g(w + eps v) comes first"
    if norm != 1 and _matches(arr, expected / norm, rtol=1e-6):
        return "v was normalised: H v is linear in v, so use v as given"
    if _matches(arr, central, rtol=1e-7):
        return None  # right formula: the tolerance, not the method, is the issue
    return None


register(
    "hessian_vector_product", _hvp_reference, _hvp_cases,
    compare=_compare_arrays(rtol=1e-6, atol=1e-9), explain=_hvp_explain,
    hint="H v is the directional derivative of the gradient along v: differentiate the gradient "
         "(from rc.grad) by central differences along v",
)
