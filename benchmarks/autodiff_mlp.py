"""Forward + backward of a 4-64-64-2 tanh MLP on a minibatch of 256: autodiff vs the floor.

The floor is the same network's backward pass written by hand in numpy: the fewest array
operations the job needs. Run: ``python benchmarks/autodiff_mlp.py``. Prints microseconds per
step (best of repeats, the least disturbed by other load) for both, in float32 and float64, and
their ratio (goal: <= 1.5).
"""

import time

import numpy as np

import rlcourse as rc

SIZES, BATCH, REPEATS, STEPS = [4, 64, 64, 2], 256, 7, 300


def mse_loss(params, x, y):
    return rc.mean(rc.square(rc.mlp(params, x) - y))


def hand_value_and_grad(params, x, y):
    (l1, l2, l3) = params
    h1 = np.tanh(x @ l1["w"] + l1["b"])
    h2 = np.tanh(h1 @ l2["w"] + l2["b"])
    out = h2 @ l3["w"] + l3["b"]
    diff = out - y
    loss = np.mean(diff * diff)
    d_out = diff * (2.0 / diff.size)
    d_h2 = (d_out @ l3["w"].T) * (1 - h2 * h2)
    d_h1 = (d_h2 @ l2["w"].T) * (1 - h1 * h1)
    grads = [
        {"w": x.T @ d_h1, "b": d_h1.sum(0)},
        {"w": h1.T @ d_h2, "b": d_h2.sum(0)},
        {"w": h2.T @ d_out, "b": d_out.sum(0)},
    ]
    return float(loss), grads


def time_per_step(fn, *args) -> float:
    """Best over repeats of the mean microseconds per call."""
    fn(*args)
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(STEPS):
            fn(*args)
        samples.append((time.perf_counter() - start) / STEPS * 1e6)
    return min(samples)


def measure(autodiff, dtype) -> None:
    """Check both gradients agree, then time both and print one row."""
    rng = np.random.default_rng(0)
    params = rc.mlp_init(SIZES, seed=0, dtype=dtype)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(dtype)
    y = rng.normal(size=(BATCH, SIZES[-1])).astype(dtype)
    _, grads = autodiff(params, x, y)
    _, ref_grads = hand_value_and_grad(params, x, y)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for g, r in zip(rc.tree_leaves(grads), rc.tree_leaves(ref_grads)):
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
    t_auto = time_per_step(autodiff, params, x, y)
    t_hand = time_per_step(hand_value_and_grad, params, x, y)
    print(f"{np.dtype(dtype).name:8} {t_auto:20.1f} {t_hand:18.1f} {t_auto / t_hand:7.2f}")


def main():
    # As inside the trainers: one BLAS thread and a heap that is not trimmed after every step
    # (rlcourse/blas.py says why); both measurements run with the same process settings.
    autodiff = rc.value_and_grad(mse_loss)
    print(f"{'dtype':8} {'value_and_grad (us)':>20} {'hand-written (us)':>18} {'ratio':>7}")
    with rc.single_thread_blas():
        for dtype in (np.float32, np.float64):
            measure(autodiff, dtype)


if __name__ == "__main__":
    main()
