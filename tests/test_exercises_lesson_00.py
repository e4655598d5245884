"""Lesson 00's exercises: each typical wrong answer fails its checker with the right diagnosis.

One test per (exercise, wrong answer): the answer must fail, and the printed output must name
the mistake (each ``explain`` / ``explain_error`` branch is reached by one of them). The right
answers, written the way a student would, must pass. The cheats an independent reviewer used
(wrappers of the reference, functools.partial, the exercise's own reference fetched from the
grader, an exact Hessian on the test loss, trying every answer in a loop) must not pass.
"""

import functools
import json
import warnings

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises

# ------------------------------------------------------------------ episode_return (worked example)


def ret_sum(rewards):
    return float(np.sum(rewards))


def ret_count(rewards):
    return len(rewards)


def ret_drop_last(rewards):
    return float(np.sum(rewards[:-1]))


def ret_mean(rewards):
    return float(np.mean(rewards))


# ------------------------------------------------------------------ numerical_grad


def ng_central(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        g.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return g


def ng_forward(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    g, base = np.zeros_like(x), f(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        g.flat[i] = (f(x + step) - base) / eps
    return g


def ng_backward(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    g, base = np.zeros_like(x), f(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        g.flat[i] = (base - f(x - step)) / eps
    return g


def ng_forward_over_2eps(f, x, eps=1e-6):
    return ng_forward(f, x, eps) / 2


def ng_over_eps(f, x, eps=1e-6):
    return 2 * ng_central(f, x, eps)


def ng_over_4eps(f, x, eps=1e-6):
    return ng_central(f, x, eps) / 2


def ng_int_dtype(f, x, eps=1e-6):
    g = np.zeros_like(x)  # an integer x gives an integer gradient
    for i in range(x.size):
        step = np.zeros(x.shape)
        step.flat[i] = eps
        g.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return g


def ng_not_restored(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + eps
        up = f(x)
        x.flat[i] = old - eps
        g.flat[i] = (up - f(x)) / (2 * eps)  # x[i] stays at old - eps
    return g


def ng_float32(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float32)
    g = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        g.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return g


def ng_all_at_once(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    return np.full(x.shape, (f(x + eps) - f(x - eps)) / (2 * eps))


def ng_flattened(f, x, eps=1e-6):
    shape = np.shape(x)
    return ng_central(lambda flat: f(flat.reshape(shape)), np.ravel(x), eps)


def ng_ignores_eps(f, x, eps=1e-6):
    return ng_central(f, x, 1e-6)


def ng_mutates(f, x, eps=1e-6):
    g = ng_central(f, x, eps)
    x += 0.5  # the caller's array changes
    return g


def ng_mutates_in_place(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)  # no copy for a float input: x is the caller's
    g = np.zeros_like(x)
    for i in range(x.size):
        x.flat[i] += eps
        up = f(x)
        x.flat[i] -= 2 * eps
        g.flat[i] = (up - f(x)) / (2 * eps)  # x[i] left at x[i] - eps
    return g


# ------------------------------------------------------------------ matmul_vjp


def mv_right(G, A, B):
    return G @ B.T, A.T @ G


def mv_no_transpose(G, A, B):
    return G @ B, A.T @ G


def mv_b_no_transpose(G, A, B):
    return G @ B.T, A @ G


def mv_transposed(G, A, B):
    return (G @ B.T).T, (A.T @ G).T


def mv_swapped(G, A, B):
    return A.T @ G, G @ B.T


def mv_one(G, A, B):
    return G @ B.T


def mv_wrong_b(G, A, B):
    return G @ B.T, A.T @ G * 2


# ------------------------------------------------------------------ backprop


def _forward(params, X):
    z = X @ params[0]["w"] + params[0]["b"]
    h = np.tanh(z)
    return z, h, h @ params[1]["w"] + params[1]["b"]


def bp(params, X, y, *, local="right", scale=2.0, per_point=True, bias=np.sum, sign=1.0,
       hidden="right"):
    z, h, pred = _forward(params, X)
    dpred = sign * scale * (pred - y) / (len(X) if per_point else 1)
    dh = dpred @ params[1]["w"].T
    dz = dh * {"right": 1 - h**2, "none": 1.0, "z": 1 - z**2}[local]
    if hidden == "wrong":
        dz = dz * 0.5
    b1 = dz if bias is None else bias(dz, axis=0)
    b2 = dpred if bias is None else bias(dpred, axis=0)
    return [{"w": X.T @ dz, "b": b1}, {"w": h.T @ dpred, "b": b2}]


def bp_right(params, X, y):
    return bp(params, X, y)


def bp_no_tanh(params, X, y):
    return bp(params, X, y, local="none")


def bp_tanh_of_z(params, X, y):
    return bp(params, X, y, local="z")


def bp_no_two(params, X, y):
    return bp(params, X, y, scale=1.0)


def bp_sum_not_mean(params, X, y):
    return bp(params, X, y, per_point=False)


def bp_sign(params, X, y):
    return bp(params, X, y, sign=-1.0)


def bp_bias_mean(params, X, y):
    return bp(params, X, y, bias=np.mean)


def bp_bias_not_summed(params, X, y):
    return bp(params, X, y, bias=None)


def bp_hidden_wrong(params, X, y):
    return bp(params, X, y, hidden="wrong")


def bp_no_w2_transpose(params, X, y):
    z, h, pred = _forward(params, X)
    dpred = 2 * (pred - y) / len(X)
    dh = dpred @ params[1]["w"]  # [N, 1] @ [k, 1]: shapes do not fit
    dz = dh * (1 - h**2)
    return [{"w": X.T @ dz, "b": dz.sum(0)}, {"w": h.T @ dpred, "b": dpred.sum(0)}]


def bp_no_b1(params, X, y):
    p = [{"w": params[0]["w"], "b": 0 * params[0]["b"]}, params[1]]
    return bp(p, X, y)


def bp_no_b2(params, X, y):
    p = [params[0], {"w": params[1]["w"], "b": 0 * params[1]["b"]}]
    return bp(p, X, y)


def bp_w2_transposed(params, X, y):
    grads = bp(params, X, y)
    grads[1]["w"] = grads[1]["w"].T
    return grads


def bp_flat(params, X, y):
    return {"w1": bp_right(params, X, y)[0]["w"]}


def bp_autodiff(params, X, y):
    return rc.grad(lambda p: rc.mean(rc.square(rc.mlp(p, X) - y)))(params)


# ------------------------------------------------------------------ adam_step


def _adam(p, g, m, v, t, lr, b1, b2, eps, *, g2=None, t_shift=0, correct=True, eps_inside=False,
          corrected_state=False, sign=-1):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * (g**2 if g2 is None else g2)
    m_hat = m / (1 - b1 ** (t + t_shift)) if correct else m
    v_hat = v / (1 - b2 ** (t + t_shift)) if correct else v
    denom = np.sqrt(v_hat + eps) if eps_inside else np.sqrt(v_hat) + eps
    new_p = p + sign * lr * m_hat / denom
    return (new_p, m_hat, v_hat) if corrected_state else (new_p, m, v)


def adam_right(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps)


def adam_no_correction(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, correct=False)


def adam_t_plus_one(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, t_shift=1)


def adam_eps_inside(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, eps_inside=True)


def adam_abs_g(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, g2=np.abs(g))


def adam_corrected_state(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, corrected_state=True)


def adam_plus(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, sign=+1)


def adam_swapped_betas(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b2, b1, eps)


def adam_ignores_keywords(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, 0.9, 0.999, 1e-8)


def adam_t_minus_one(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps, t_shift=-1)


def adam_params_only(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, eps)[0]


def adam_wrong_step_only(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    new_p, m, v = _adam(p, g, m, v, t, lr, b1, b2, eps)
    return p - lr * m / (np.sqrt(v) + eps) * 0.5, m, v


# ------------------------------------------------------------------ sgd_momentum_step


def mom_right(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + grads
    return params - lr * velocity, velocity


def mom_ema(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + (1 - beta) * grads
    return params - lr * velocity, velocity


def mom_old_velocity(params, grads, velocity, lr, beta=0.9):
    return params - lr * velocity, beta * velocity + grads


def mom_swapped(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + grads
    return velocity, params - lr * velocity


def mom_plus(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + grads
    return params + lr * velocity, velocity


def mom_lr_folded(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + lr * grads
    return params - velocity, velocity


def mom_nesterov(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + grads
    return params - lr * (grads + beta * velocity), velocity


def mom_fixed_beta(params, grads, velocity, lr, beta=0.9):
    velocity = 0.9 * velocity + grads
    return params - lr * velocity, velocity


def mom_old_velocity_returned(params, grads, velocity, lr, beta=0.9):
    return params - lr * (beta * velocity + grads), velocity


def mom_params_only(params, grads, velocity, lr, beta=0.9):
    return params - lr * (beta * velocity + grads)


# ------------------------------------------------------------------ complex_step_grad


def cs_right(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.shape)
    for i in range(x.size):
        z = x.astype(complex)
        z.flat[i] += 1j * h
        g.flat[i] = np.imag(f(z)) / h
    return g


def cs_over_2h(f, x, h=1e-20):
    return cs_right(f, x, h) / 2


def cs_complex_result(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.shape, dtype=complex)
    for i in range(x.size):
        z = x.astype(complex)
        z.flat[i] += 1j * h
        g.flat[i] = np.imag(f(z)) / h + 0j
    return g


def cs_float_copy(f, x, h=1e-20):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under pytest's -W error: the ComplexWarning raises
        x = np.asarray(x, dtype=np.float64)
        g = np.zeros(x.shape)
        for i in range(x.size):
            z = x.copy()
            z[np.unravel_index(i, x.shape)] += 1j * h  # a float array cannot hold it
            g.flat[i] = np.imag(f(z)) / h
    return g


def cs_float_copy_silent(f, x, h=1e-20):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = np.asarray(x, dtype=np.float64)
        g = np.zeros(x.shape)
        for i in range(x.size):
            z = x.copy()
            z[np.unravel_index(i, x.shape)] += 1j * h  # ComplexWarning silenced: imag dropped
            g.flat[i] = np.imag(f(z)) / h
    return g


def cs_all_at_once(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    return np.full(x.shape, np.imag(f(x + 1j * h)) / h)


def cs_central(f, x, h=1e-20):
    return rc.numerical_grad(lambda z: float(np.real(f(z))), x, eps=1e-6)


def cs_big_h(f, x, h=1e-20):
    return cs_right(f, x, h=1e-3)  # a complex step whose h**2 error shows


def adam_no_eps(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return _adam(p, g, m, v, t, lr, b1, b2, 0.0)


def adam_kingma_eps_hat(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g**2
    step = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
    return p - step * m / (np.sqrt(v) + eps), m, v


def adam_correction_outside_sqrt(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g**2
    return p - lr * (m / (1 - b1**t)) / (np.sqrt(v) / (1 - b2**t) + eps), m, v


def adam_v_with_b1(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g**2
    return p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b1**t)) + eps), m, v


def adam_via_rc(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    opt = rc.Adam(lr=lr, betas=(b1, b2), eps=eps)
    new, state = opt.step({"p": p}, {"p": g}, {"t": t - 1, "m": {"p": m}, "v": {"p": v}})
    return new["p"], state["m"]["p"], state["v"]["p"]


def mom_sutskever(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity - lr * grads
    return params + velocity, velocity


def mom_beta_missing_in_step(params, grads, velocity, lr, beta=0.9):
    return params - lr * (velocity + grads), beta * velocity + grads


def mom_via_rc(params, grads, velocity, lr, beta=0.9):
    new, state = rc.SGD(lr=lr, momentum=beta).step({"p": params}, {"p": grads},
                                                   {"velocity": {"p": velocity}})
    return new["p"], state["velocity"]["p"]


def cs_minus(f, x, h=1e-20):
    return -cs_right(f, x, -h)  # steps to x - i h and divides by +h


def cs_real_part(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.shape)
    for i in range(x.size):
        z = x.astype(complex)
        z.flat[i] += 1j * h
        g.flat[i] = np.real(f(z)) / h
    return g


# ------------------------------------------------------------------ best_eps


def be_right(f_x, f3_x, u=2.0**-53):
    return (3 * u * abs(f_x) / abs(f3_x)) ** (1 / 3)


def be_balanced(f_x, f3_x, u=2.0**-53):
    return (6 * u * abs(f_x) / abs(f3_x)) ** (1 / 3)


def be_no_three(f_x, f3_x, u=2.0**-53):
    return (u * abs(f_x) / abs(f3_x)) ** (1 / 3)


def be_square_root(f_x, f3_x, u=2.0**-53):
    return (2 * u * abs(f_x) / abs(f3_x)) ** 0.5


def be_inverted(f_x, f3_x, u=2.0**-53):
    return (3 * u * abs(f3_x) / abs(f_x)) ** (1 / 3)


def be_fixed_u(f_x, f3_x, u=2.0**-53):
    return (3 * 2.0**-53 * abs(f_x) / abs(f3_x)) ** (1 / 3)


def be_no_abs(f_x, f3_x, u=2.0**-53):
    return np.cbrt(3 * u * f_x / f3_x)


def be_no_abs_python(f_x, f3_x, u=2.0**-53):
    return (3 * u * f_x / f3_x) ** (1 / 3)  # a complex number when the ratio is negative


def be_positional_only(f_x, f3_x):
    return (3 * 2.0**-53 * abs(f_x) / abs(f3_x)) ** (1 / 3)


def be_read_off_the_plot(f_x, f3_x, u=2.0**-53):
    return 1e-5


# ------------------------------------------------------------------ newton_cg


def _cg(loss, w, iters, hvp=None, conjugate=True, sign=1.0):
    g = rc.grad(loss)
    g0 = g(w)
    eps = 1e-5
    hvp = hvp or (lambda v: (g(w + eps * v) - g(w - eps * v)) / (2 * eps))
    x, r = np.zeros_like(w), -sign * g0
    p, rr = r.copy(), r @ r
    for _ in range(iters):
        Hp = hvp(p)
        alpha = rr / (p @ Hp)
        x, r = x + alpha * p, r - alpha * Hp
        rr_new = r @ r
        p = r + (rr_new / rr) * p if conjugate else r.copy()
        rr = rr_new
    return x


def cg_right(loss, w, iters):
    return _cg(loss, w, iters)


def cg_small_eps(loss, w, iters):
    g = rc.grad(loss)
    return _cg(loss, w, iters, hvp=lambda v: (g(w + 1e-6 * v) - g(w - 1e-6 * v)) / 2e-6)


def cg_forward(loss, w, iters):
    g = rc.grad(loss)
    g0 = g(w)
    return _cg(loss, w, iters, hvp=lambda v: (g(w + 1e-5 * v) - g0) / 1e-5)


def cg_sign(loss, w, iters):
    return _cg(loss, w, iters, sign=-1.0)


def cg_no_conjugation(loss, w, iters):
    return _cg(loss, w, iters, conjugate=False)


def cg_ignores_iters(loss, w, iters):
    return _cg(loss, w, len(w))


def cg_gradient_step(loss, w, iters):
    return -rc.grad(loss)(w)


def cg_solve(loss, w, iters):
    g = rc.grad(loss)
    H = np.stack([(g(w + 1e-5 * e) - g(w - 1e-5 * e)) / 2e-5 for e in np.eye(len(w))])
    return np.linalg.solve(H, -g(w))


def cg_big_eps(loss, w, iters):
    g = rc.grad(loss)
    return _cg(loss, w, iters, hvp=lambda v: (g(w + 1e-2 * v) - g(w - 1e-2 * v)) / 2e-2)


def cg_one_iteration_short(loss, w, iters):
    return _cg(loss, w, iters - 1) if iters > 1 else _cg(loss, w, 1)


# ------------------------------------------------------------------ the table

WRONG = [
    ("episode_return", ret_count, "you counted the steps"),
    ("episode_return", ret_drop_last, "you left out the last reward"),
    ("episode_return", ret_mean, "you averaged the rewards"),
    ("numerical_grad", ng_forward, "that is a forward difference"),
    ("numerical_grad", ng_backward, "that is a backward difference"),
    ("numerical_grad", ng_forward_over_2eps, "a forward difference divided by 2*eps"),
    ("numerical_grad", ng_over_eps, "divides by 2*eps, not eps"),
    ("numerical_grad", ng_over_4eps, "not 4*eps"),
    ("numerical_grad", ng_int_dtype, "x came in as integers"),
    ("numerical_grad", ng_not_restored, "x[i] is not restored"),
    ("numerical_grad", ng_flattened, "return the gradient shaped like x"),
    ("numerical_grad", ng_float32, "a float32 result"),
    ("numerical_grad", ng_all_at_once, "you moved all coordinates at once"),
    ("numerical_grad", ng_ignores_eps, "the eps passed in (0.01) was ignored"),
    ("numerical_grad", ng_mutates, "your function changed the caller's x"),
    ("numerical_grad", ng_mutates_in_place, "your function changed the caller's x"),
    ("matmul_vjp", mv_no_transpose, "dL/dA = G @ B is missing a transpose"),
    ("matmul_vjp", mv_no_transpose, "a shape mismatch"),
    ("matmul_vjp", mv_b_no_transpose, "dL/dB = A @ G is missing a transpose"),
    ("matmul_vjp", mv_transposed, "dL/dA is transposed"),
    ("matmul_vjp", mv_swapped, "the pair is swapped"),
    ("matmul_vjp", mv_one, "return the pair (dL/dA, dL/dB)"),
    ("backprop", bp_no_tanh, "the tanh's vjp is missing"),
    ("backprop", bp_tanh_of_z, "you used 1 - z**2"),
    ("backprop", bp_no_two, "half the gradient"),
    ("backprop", bp_sum_not_mean, "N times the gradient"),
    ("backprop", bp_sign, "wrong sign"),
    ("backprop", bp_bias_mean, "the biases' gradients are averaged over the points"),
    ("backprop", bp_bias_not_summed, "a bias gradient has a batch axis"),
    ("backprop", bp_hidden_wrong, "the output layer is right, the hidden layer is not"),
    ("backprop", bp_no_w2_transpose, "a shape mismatch"),
    ("backprop", bp_flat, "a list of two dicts"),
    ("backprop", bp_no_b1, "b1 is missing from the forward pass"),
    ("backprop", bp_no_b2, "b2 is missing from the forward pass"),
    ("backprop", bp_w2_transposed, "a weight gradient is transposed"),
    ("backprop", bp_autodiff, "[reference] your function uses rc.grad"),
    ("adam_step", adam_no_correction, "no bias correction"),
    ("adam_step", adam_t_plus_one, "bias correction with t + 1"),
    ("adam_step", adam_eps_inside, "eps inside the square root"),
    ("adam_step", adam_no_eps, "eps is missing from the denominator"),
    ("adam_step", adam_kingma_eps_hat, "Kingma & Ba's 'efficient' form"),
    ("adam_step", adam_correction_outside_sqrt, "applied outside the square root"),
    ("adam_step", adam_v_with_b1, "v corrected with b1"),
    ("adam_step", adam_abs_g, "v must average the squared gradient"),
    ("adam_step", adam_corrected_state, "the returned state must be the raw averages"),
    ("adam_step", adam_plus, "wrong sign"),
    ("adam_step", adam_swapped_betas, "b1 and b2 swapped"),
    ("adam_step", adam_ignores_keywords, "the keyword arguments b1, b2, eps were ignored"),
    ("adam_step", adam_params_only, "return the triple"),
    ("adam_step", adam_t_minus_one, "the bias correction divided by zero"),
    ("adam_step", adam_t_minus_one, "bias correction with t - 1"),
    ("adam_step", adam_wrong_step_only, "m and v are right but the parameter step is not"),
    ("adam_step", adam_via_rc, "[reference] your function uses rc.Adam"),
    ("sgd_momentum_step", mom_ema, "the (1 - beta) * g average is another convention"),
    ("sgd_momentum_step", mom_old_velocity, "the step used the old velocity"),
    ("sgd_momentum_step", mom_swapped, "params and velocity swapped"),
    ("sgd_momentum_step", mom_plus, "wrong sign"),
    ("sgd_momentum_step", mom_lr_folded, "lr folded into the velocity"),
    ("sgd_momentum_step", mom_sutskever, "Sutskever et al.'s convention"),
    ("sgd_momentum_step", mom_beta_missing_in_step, "beta is missing"),
    ("sgd_momentum_step", mom_nesterov, "Nesterov's look-ahead step"),
    ("sgd_momentum_step", mom_fixed_beta, "beta passed as a keyword was ignored"),
    ("sgd_momentum_step", mom_old_velocity_returned, "the velocity returned is the old one"),
    ("sgd_momentum_step", mom_params_only, "return the pair (new_params, new_velocity)"),
    ("sgd_momentum_step", mom_via_rc, "[reference] your function uses rc.SGD"),
    ("complex_step_grad", cs_over_2h, "divide the imaginary part by h, not 2h"),
    ("complex_step_grad", cs_complex_result, "a complex result"),
    ("complex_step_grad", cs_float_copy, "perturb a complex copy"),
    ("complex_step_grad", cs_float_copy_silent, "the imaginary step was dropped"),
    ("complex_step_grad", cs_central, "that is a central finite difference"),
    ("complex_step_grad", cs_all_at_once, "you moved all coordinates at once"),
    ("complex_step_grad", cs_big_h, "a complex step with h = 0.001"),
    ("complex_step_grad", cs_minus, "minus the derivative"),
    ("complex_step_grad", cs_real_part, "the real part"),
    ("best_eps", be_balanced, "you set the two terms equal"),
    ("best_eps", be_no_three, "the factor 3 is missing"),
    ("best_eps", be_square_root, "a square root: that is the forward difference's optimum"),
    ("best_eps", be_inverted, "are inverted"),
    ("best_eps", be_fixed_u, "the float64 u was used"),
    ("best_eps", be_no_abs, "f / f''' is negative here"),
    ("best_eps", be_no_abs_python, "f / f''' is negative here"),
    ("best_eps", be_positional_only, "takes u as a keyword argument"),
    ("best_eps", be_read_off_the_plot, "expected 6.93176e-06, got 1e-05"),
    ("newton_cg", cg_forward, "H v by a forward difference of gradients"),
    ("newton_cg", cg_sign, "wrong sign: the Newton step solves H x = -g"),
    ("newton_cg", cg_no_conjugation, "the search directions are not conjugated"),
    ("newton_cg", cg_ignores_iters, "you solved H x = -g completely"),
    ("newton_cg", cg_gradient_step, "a plain gradient step"),
    ("newton_cg", cg_solve, "[reference] your function uses np.linalg.solve"),
    ("newton_cg", cg_one_iteration_short, "iterations instead of"),
    ("newton_cg", cg_big_eps, "H v by central differences with eps = 0.01"),
]


@pytest.mark.parametrize("name, wrong, diagnosis", WRONG,
                         ids=[f"{n}-{w.__name__}-{i}" for i, (n, w, _) in enumerate(WRONG)])
def test_wrong_answer_fails_with_its_diagnosis(name, wrong, diagnosis, capsys):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert not exercises.check(name, wrong)
    out = capsys.readouterr().out
    assert diagnosis in out, out


@pytest.mark.parametrize("name, right", [
    ("episode_return", ret_sum), ("numerical_grad", ng_central), ("matmul_vjp", mv_right),
    ("backprop", bp_right), ("adam_step", adam_right), ("sgd_momentum_step", mom_right),
    ("complex_step_grad", cs_right), ("best_eps", be_right), ("newton_cg", cg_right),
    ("newton_cg", cg_small_eps),
])
def test_a_students_right_answer_passes(name, right):
    assert exercises.check(name, right, verbose=False)


@pytest.mark.parametrize("answer, diagnosis", [
    (9, "that is beta / (1 - beta)"),
    (100, "1 / (1 - beta)**2"),
    (1, "momentum would change nothing"),
    (0.1, "that is 1 - beta"),
    (1.9, "that is 1 + beta"),
    (42, "not this number"),
    ("ten", "answer with a number"),
    (None, "[todo] your number: not answered yet"),
])
def test_momentum_speedup_explains_each_wrong_number(answer, diagnosis, capsys):
    assert not exercises.check("momentum_speedup", answer)
    assert diagnosis in capsys.readouterr().out


def test_momentum_speedup_accepts_the_number_in_any_form():
    for answer in (10, 10.0, np.float64(10.0)):
        assert exercises.check("momentum_speedup", answer, verbose=False)


def test_a_forward_difference_fails_even_with_a_tiny_step():
    """A forward difference with a smaller step still fails: its rounding error grows instead."""
    for eps in (1e-7, 1e-8, 1e-9):
        assert not exercises.check("numerical_grad", lambda f, x, eps=eps: ng_forward(f, x, eps),
                                   verbose=False)


def test_the_complex_step_needs_no_particular_h():
    for h in (1e-10, 1e-30, 1e-100):
        assert exercises.check("complex_step_grad", lambda f, x, h=h: cs_right(f, x, h), verbose=False)


def test_best_eps_is_checked_against_a_measured_sweep(capsys):
    """The error model's eps (6.9e-6 for e^x in float64) is within a factor 2 of the best step a
    fine sweep measures; an eps 3 times too large passes the formula's cases only if it is the
    formula, so it fails both."""
    assert exercises.check("best_eps", be_right)
    assert "[pass] e^x on [-1, 1]: your eps against the best one a fine sweep measures" in \
        capsys.readouterr().out
    assert not exercises.check("best_eps", lambda f_x, f3_x, u=2.0**-53: 3 * be_right(f_x, f3_x, u))
    out = capsys.readouterr().out
    assert "times larger than the measured best" in out


# ------------------------------------------------------------------ cheats (the review's T1)


def ng_wrapper(f, x, eps=1e-6):
    return rc.numerical_grad(f, x, eps=eps)


def ng_via_get(f, x, eps=1e-6):
    return rc.exercises.get("numerical_grad").reference(f, x, eps)


def _helper(f, x, eps):
    return rc.core.autodiff.numerical_grad(f, x, eps)


def ng_via_helper(f, x, eps=1e-6):
    return _helper(f, x, eps)


ng_lambda = lambda f, x, eps=1e-6: rc.numerical_grad(f, x, eps)  # noqa: E731


def adam_via_get(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    return rc.exercises.get("adam_step").reference(p, g, m, v, t, lr, b1, b2, eps)


def mv_via_autodiff(G, A, B):
    _, (ga, gb) = rc.value_and_grad(lambda a, b: rc.sum((a @ b) * G), argnums=(0, 1))(A, B)
    return ga, gb


def cg_via_hessian_attribute(loss, w, iters):
    return -np.linalg.inv(loss.hessian(w)) @ rc.grad(loss)(w)


CHEATS = [
    ("numerical_grad", ng_wrapper, "rc.numerical_grad"),
    ("numerical_grad", ng_via_get, "the grader"),
    ("numerical_grad", ng_via_helper, "rc.numerical_grad"),
    ("numerical_grad", ng_lambda, "rc.numerical_grad"),
    ("numerical_grad", rc.numerical_grad, "rc.numerical_grad"),
    ("numerical_grad", functools.partial(exercises.get("numerical_grad").reference),
     "the exercise's reference"),
    ("complex_step_grad", functools.partial(exercises.get("complex_step_grad").reference),
     "the exercise's reference"),
    ("matmul_vjp", mv_via_autodiff, "rc.value_and_grad"),
    ("backprop", bp_autodiff, "rc.grad"),
    ("adam_step", adam_via_rc, "rc.Adam"),
    ("adam_step", adam_via_get, "the grader"),
    ("sgd_momentum_step", mom_via_rc, "rc.SGD"),
    ("newton_cg", cg_solve, "np.linalg.solve"),
    ("newton_cg", cg_via_hessian_attribute, ".hessian"),
]


@pytest.mark.parametrize("name, cheat, named", CHEATS,
                         ids=[f"{n}-{getattr(c, '__name__', 'partial')}" for n, c, _ in CHEATS])
def test_a_wrapper_of_the_reference_does_not_pass(name, cheat, named, capsys):
    """The review's cheats: each passes every case (or would), and none is graded as passed."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert not exercises.check(name, cheat)
    out = capsys.readouterr().out
    assert "[reference]" in out and named in out, out
    assert "not your own code" in out


def test_the_test_losses_carry_no_exact_hessian():
    """The answer is out of reach: newton_cg's losses are plain functions, no .hessian."""
    for case in exercises.get("newton_cg").cases():
        loss = case.args[0]
        assert type(loss).__name__ == "function" and not hasattr(loss, "hessian")


def test_a_question_is_graded_on_its_first_answer(tmp_path, monkeypatch, capsys):
    """Trying every number in a loop: each try is shown, only the first is recorded as graded."""
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv(exercises.RESULTS_ENV, str(results))
    monkeypatch.setattr(exercises, "_FIRST_ANSWERS", {})
    found = next(a for a in (1, 9, 10, 100) if exercises.check("momentum_speedup", a, verbose=False))
    assert found == 10
    exercises.check("momentum_speedup", found)
    assert "a later answer: shown, not graded" in capsys.readouterr().out
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    graded = [e for e in lines if e["graded"]]
    assert [e["passed"] for e in graded] == [False]  # the first answer, 1
    assert all(e["question"] for e in lines)


def test_conjugate_gradient_run_to_the_end_is_the_exact_newton_step():
    """The cases whose iters equals the number of weights: CG gives np.linalg.solve's step."""
    from rlcourse.course.bank.foundations import _EXACT_HESSIANS

    full = [c for c in exercises.get("newton_cg").cases() if c.args[2] == len(c.args[1])]
    assert len(full) == 2
    for case in full:
        loss, w, iters = case.args
        newton = np.linalg.solve(_EXACT_HESSIANS[loss](w), -rc.grad(loss)(w))
        assert np.allclose(exercises.get("newton_cg").reference(*case.args), newton, rtol=1e-9)
    stopped = [c for c in exercises.get("newton_cg").cases() if c.args[2] < len(c.args[1])]
    for case in stopped:  # stopped early it is not the Newton step: the iters cases mean something
        loss, w, iters = case.args
        newton = np.linalg.solve(_EXACT_HESSIANS[loss](w), -rc.grad(loss)(w))
        assert not np.allclose(exercises.get("newton_cg").reference(*case.args), newton, rtol=1e-3)


def hessian(loss, w, v, eps=1e-5):  # a reader's own helper that shares a forbidden name
    g = rc.grad(loss)
    return (g(w + eps * v) - g(w - eps * v)) / (2 * eps)


def cg_own_helper_named_hessian(loss, w, iters):
    return _cg(loss, w, iters, hvp=lambda v: hessian(loss, w, v))


def test_a_helper_of_ones_own_is_not_mistaken_for_the_forbidden_attribute():
    assert exercises.check("newton_cg", cg_own_helper_named_hessian, verbose=False)
