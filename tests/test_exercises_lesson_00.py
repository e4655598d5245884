"""Lesson 00's exercises: each typical wrong answer fails its checker with the right diagnosis.

One test per (exercise, wrong answer): the answer must fail, and the printed output must name
the mistake (each ``explain`` / ``explain_error`` branch is reached by one of them). The right
answers, written the way a student would, must pass.
"""

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


# ------------------------------------------------------------------ mse_grad


def mg_right(X, w, b, y):
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), 2 * np.mean(r)


def mg_no_two(X, w, b, y):
    r = X @ w + b - y
    return X.T @ r / len(y), np.mean(r)


def mg_sum(X, w, b, y):
    r = X @ w + b - y
    return 2 * X.T @ r, 2 * np.sum(r)


def mg_sign(X, w, b, y):
    r = y - X @ w - b
    return 2 * X.T @ r / len(y), 2 * np.mean(r)


def mg_no_b(X, w, b, y):
    r = X @ w - y
    return 2 * X.T @ r / len(y), 2 * np.mean(r)


def mg_no_transpose(X, w, b, y):
    r = X @ w + b - y
    return 2 * X @ r / len(y), 2 * np.mean(r)


def mg_b_no_two(X, w, b, y):
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), np.mean(r)


def mg_b_sum(X, w, b, y):
    r = X @ w + b - y
    return 2 * X.T @ r / len(y), 2 * np.sum(r)


def mg_one_item(X, w, b, y):
    return 2 * X.T @ (X @ w + b - y) / len(y)


# ------------------------------------------------------------------ mse_loss (graded through value_and_grad)


def ml_right(params, X, y):
    return rc.mean(rc.square(X @ params["w"] + params["b"] - y))


def ml_numpy(params, X, y):
    return np.mean(np.square(X @ params["w"] + params["b"] - y))


def ml_sum(params, X, y):
    return rc.sum(rc.square(X @ params["w"] + params["b"] - y))


def ml_no_b(params, X, y):
    return rc.mean(rc.square(X @ params["w"] - y))


def ml_cut(params, X, y):
    w, b = rc.stop_gradient(params["w"]), rc.stop_gradient(params["b"])
    return rc.mean(rc.square(X @ w + b - y))


def ml_not_reduced(params, X, y):
    return rc.square(X @ params["w"] + params["b"] - y)


def ml_wrong_key(params, X, y):
    return rc.mean(rc.square(X @ params["weights"] + params["b"] - y))


def ml_root(params, X, y):
    return rc.sqrt(rc.mean(rc.square(X @ params["w"] + params["b"] - y)))


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


# ------------------------------------------------------------------ hessian_vector_product


def hvp_right(loss, w, v, eps=1e-5):
    g = rc.grad(loss)
    return (g(w + eps * v) - g(w - eps * v)) / (2 * eps)


def hvp_forward(loss, w, v, eps=1e-5):
    g = rc.grad(loss)
    return (g(w + eps * v) - g(w)) / eps


def hvp_over_eps(loss, w, v, eps=1e-5):
    g = rc.grad(loss)
    return (g(w + eps * v) - g(w - eps * v)) / eps


def hvp_sign(loss, w, v, eps=1e-5):
    g = rc.grad(loss)
    return (g(w - eps * v) - g(w + eps * v)) / (2 * eps)


def hvp_normalised(loss, w, v, eps=1e-5):
    return hvp_right(loss, w, v / np.linalg.norm(v), eps)


def hvp_scalar(loss, w, v, eps=1e-5):
    return (loss(w + eps * v) - 2 * loss(w) + loss(w - eps * v)) / eps**2


def hvp_huge_eps(loss, w, v, eps=1e-5):
    return hvp_right(loss, w, v, eps=1e-1)


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
    ("mse_grad", mg_no_two, "half the gradient"),
    ("mse_grad", mg_sum, "N times the gradient"),
    ("mse_grad", mg_sign, "wrong sign"),
    ("mse_grad", mg_no_b, "b is missing from the prediction"),
    ("mse_grad", mg_no_transpose, "X where X.T belongs"),
    ("mse_grad", mg_no_transpose, "a shape mismatch"),
    ("mse_grad", mg_b_no_two, "dL/db lacks the factor 2"),
    ("mse_grad", mg_b_sum, "dL/db is a sum"),
    ("mse_grad", mg_one_item, "return the pair (dL/dw, dL/db)"),
    ("mse_loss", ml_numpy, "a numpy function was applied to traced parameters"),
    ("mse_loss", ml_sum, "N times the loss"),
    ("mse_loss", ml_no_b, "b is missing from the prediction: X @ params"),
    ("mse_loss", ml_no_b, "dL/db is zero"),
    ("mse_loss", ml_cut, "every gradient is zero"),
    ("mse_loss", ml_not_reduced, "the loss must be one number"),
    ("mse_loss", ml_wrong_key, "params holds the keys 'w' and 'b'"),
    ("mse_loss", ml_root, "the root of the mean squared error"),
    ("adam_step", adam_no_correction, "no bias correction"),
    ("adam_step", adam_t_plus_one, "bias correction with t + 1"),
    ("adam_step", adam_eps_inside, "eps inside the square root"),
    ("adam_step", adam_abs_g, "v must average the squared gradient"),
    ("adam_step", adam_corrected_state, "the returned state must be the raw averages"),
    ("adam_step", adam_plus, "wrong sign"),
    ("adam_step", adam_swapped_betas, "b1 and b2 swapped"),
    ("adam_step", adam_ignores_keywords, "the keyword arguments b1, b2, eps were ignored"),
    ("adam_step", adam_params_only, "return the triple"),
    ("adam_step", adam_t_minus_one, "the bias correction divided by zero"),
    ("adam_step", adam_t_minus_one, "bias correction with t - 1"),
    ("adam_step", adam_wrong_step_only, "m and v are right but the parameter step is not"),
    ("sgd_momentum_step", mom_ema, "the (1 - beta) * g average is another convention"),
    ("sgd_momentum_step", mom_old_velocity, "the step used the old velocity"),
    ("sgd_momentum_step", mom_swapped, "params and velocity swapped"),
    ("sgd_momentum_step", mom_plus, "wrong sign"),
    ("sgd_momentum_step", mom_lr_folded, "lr folded into the velocity"),
    ("sgd_momentum_step", mom_nesterov, "Nesterov's look-ahead step"),
    ("sgd_momentum_step", mom_fixed_beta, "beta passed as a keyword was ignored"),
    ("sgd_momentum_step", mom_old_velocity_returned, "the velocity returned is the old one"),
    ("sgd_momentum_step", mom_params_only, "return the pair (new_params, new_velocity)"),
    ("complex_step_grad", cs_over_2h, "divide the imaginary part by h, not 2h"),
    ("complex_step_grad", cs_complex_result, "a complex result"),
    ("complex_step_grad", cs_float_copy, "perturb a complex copy"),
    ("complex_step_grad", cs_float_copy_silent, "the imaginary step was dropped"),
    ("complex_step_grad", cs_central, "that is a central finite difference"),
    ("complex_step_grad", cs_all_at_once, "you moved all coordinates at once"),
    ("complex_step_grad", cs_big_h, "close but not exact"),
    ("hessian_vector_product", hvp_forward, "a forward difference of gradients"),
    ("hessian_vector_product", hvp_over_eps, "twice H v"),
    ("hessian_vector_product", hvp_sign, "wrong sign"),
    ("hessian_vector_product", hvp_normalised, "v was normalised"),
    ("hessian_vector_product", hvp_scalar, "that is v.H.v"),
    ("hessian_vector_product", hvp_huge_eps, "hessian_vector_product: "),
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
    ("episode_return", ret_sum), ("numerical_grad", ng_central), ("mse_grad", mg_right),
    ("mse_loss", ml_right), ("adam_step", adam_right), ("sgd_momentum_step", mom_right),
    ("complex_step_grad", cs_right), ("hessian_vector_product", hvp_right),
])
def test_a_students_right_answer_passes(name, right):
    assert exercises.check(name, right, verbose=False)


@pytest.mark.parametrize("answer, diagnosis", [
    ("A", "the truncation error shrinks like eps**2"),
    ("C", "float64 represents numbers down to about 1e-308"),
    ("D", "accurate to the last bit"),
    ("E", "answer with one letter of A, B, C, D"),
    (None, "[todo] your choice: not answered yet"),
])
def test_why_error_floor_explains_each_wrong_choice(answer, diagnosis, capsys):
    assert not exercises.check("why_error_floor", answer)
    assert diagnosis in capsys.readouterr().out


def test_why_error_floor_accepts_the_letter_in_any_case():
    assert exercises.check("why_error_floor", " b ", verbose=False)


def test_a_forward_difference_fails_even_with_a_tiny_step():
    """A forward difference with a smaller step still fails: its rounding error grows instead."""
    for eps in (1e-7, 1e-8, 1e-9):
        assert not exercises.check("numerical_grad", lambda f, x, eps=eps: ng_forward(f, x, eps),
                                   verbose=False)


def test_the_complex_step_needs_no_particular_h():
    for h in (1e-10, 1e-30, 1e-100):
        assert exercises.check("complex_step_grad", lambda f, x, h=h: cs_right(f, x, h), verbose=False)


def test_hvp_accepts_other_reasonable_steps():
    for eps in (1e-4, 1e-6):
        assert exercises.check("hessian_vector_product",
                               lambda loss, w, v, eps=eps: hvp_right(loss, w, v, eps=eps), verbose=False)
