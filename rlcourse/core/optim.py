"""Optimisers on parameter trees: SGD with momentum, Adam, global-norm clipping, schedules.

Functional: ``state = opt.init(params)`` then ``params, state = opt.step(params, grads, state)``
returns new arrays and leaves its inputs untouched. ``lr=`` on ``step`` overrides the learning
rate for that step (for schedules such as linear annealing).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._checks import check_nonnegative, check_probability, check_tree, real_scalar
from .autodiff import tree_leaves, tree_map

__all__ = ["SGD", "Adam", "clip_by_global_norm", "global_norm", "linear_schedule"]


def _check_grads(params, grads) -> None:
    p_leaves, g_leaves = tree_leaves(params), tree_leaves(grads)
    if len(p_leaves) != len(g_leaves):
        raise ValueError(f"grads: expected {len(p_leaves)} arrays like params, got {len(g_leaves)}")
    for i, (p, g) in enumerate(zip(p_leaves, g_leaves)):
        if np.asarray(p).dtype.kind != "f":
            raise TypeError(f"params: leaf {i} has dtype {np.asarray(p).dtype}; an optimiser needs "
                            "float parameters (cast with .astype(np.float32))")
        if np.shape(p) != np.shape(g):
            raise ValueError(f"grads: leaf {i} has shape {np.shape(g)}, its parameter {np.shape(p)}")
        if not np.isfinite(g).all():
            raise ValueError(f"grads: leaf {i} contains NaN or inf; the update would destroy params")


def _check_lr(lr) -> float:
    return check_nonnegative("lr", lr)


def _check_params(params) -> None:
    """Parameters an optimiser can move: floating-point arrays (an integer array would round
    every small step away to nothing)."""
    for i, p in enumerate(tree_leaves(params)):
        dtype = np.asarray(p).dtype
        if dtype.kind != "f":
            raise TypeError(f"params: leaf {i} has dtype {dtype}; an optimiser needs float "
                            "parameters (cast with .astype(np.float32))")


class SGD:
    """``v = momentum * v + g``; ``p = p - lr * v`` (plain SGD when momentum is 0)."""

    def __init__(self, lr: float, momentum: float = 0.0):
        self.lr = _check_lr(lr)
        self.momentum = check_probability("momentum", momentum)
        if self.momentum == 1.0:
            raise ValueError("momentum: expected a number in [0, 1), got 1.0")

    def init(self, params) -> dict:
        _check_params(params)
        return {"velocity": tree_map(np.zeros_like, params)}

    def step(self, params, grads, state, lr: float | None = None):
        _check_grads(params, grads)
        lr = self.lr if lr is None else _check_lr(lr)
        velocity = tree_map(lambda v, g: self.momentum * v + g, state["velocity"], grads)
        params = tree_map(lambda p, v: (p - lr * v).astype(p.dtype), params, velocity)
        return params, {"velocity": velocity}


class Adam:
    """Adam (Kingma & Ba, 2015) with bias correction.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``. The first step therefore
    moves each parameter by ``lr * g / (|g| + eps)``, about ``lr * sign(g)``. RL code often uses
    ``eps=1e-5`` (CleanRL, SB3's PPO) for steadier steps when gradients are tiny.
    """

    def __init__(self, lr: float = 3e-4, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.lr = _check_lr(lr)
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"betas: expected two numbers in [0, 1), got {betas}")
        self.betas, self.eps = (b1, b2), check_nonnegative("eps", eps, positive=True)

    def init(self, params) -> dict:
        _check_params(params)
        return {"t": 0, "m": tree_map(np.zeros_like, params), "v": tree_map(np.zeros_like, params)}

    def step(self, params, grads, state, lr: float | None = None):
        _check_grads(params, grads)
        lr = self.lr if lr is None else _check_lr(lr)
        b1, b2 = self.betas
        t = state["t"] + 1
        m = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
        v = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), state["v"], grads)
        # Fold both bias corrections into one step size, as the paper's efficient form does.
        step_size = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        eps_hat = self.eps * np.sqrt(1 - b2**t)
        params = tree_map(
            lambda p, m, v: (p - step_size * m / (np.sqrt(v) + eps_hat)).astype(p.dtype),
            params, m, v,
        )
        return params, {"t": t, "m": m, "v": v}


def global_norm(tree) -> float:
    """sqrt of the sum of squares of every entry of every leaf (NaN if one is NaN).

    Finite entries give a finite norm: were the squares to overflow (or all underflow to 0),
    the sum is taken again of the entries divided by the largest |entry|."""
    leaves = [getattr(g, "value", g) for g in check_tree("tree", tree)]
    norm = _sum_of_squares(leaves, 1.0)
    if norm == np.inf or norm == 0.0:
        scale = max((float(np.max(np.abs(g), initial=0.0)) for g in leaves), default=0.0)
        if 0.0 < scale < np.inf:
            norm = scale * _sum_of_squares(leaves, scale)
    return norm


def _sum_of_squares(leaves: list, scale: float) -> float:
    """sqrt(sum((g / scale)^2)) over every entry, in float64."""
    with np.errstate(over="ignore", under="ignore"):
        return float(np.sqrt(sum(float(np.sum(np.square(g if scale == 1.0 else g / scale,
                                                        dtype=np.float64))) for g in leaves)))


def clip_by_global_norm(grads, max_norm: float):
    """Scale all gradients together so their global norm is at most ``max_norm``.

    Returns ``(clipped_grads, norm_before_clipping)``; directions are kept, only the length changes.
    """
    max_norm = check_nonnegative("max_norm", max_norm, positive=True)
    norm = global_norm(grads)
    if not np.isfinite(norm):
        raise ValueError("grads: global norm is not finite (NaN or inf in the gradients)")
    if norm <= max_norm:
        return grads, norm
    scale = max_norm / norm
    return tree_map(lambda g: (g * scale).astype(g.dtype), grads), norm


def linear_schedule(start: float, end: float, duration: int) -> Callable[[int], float]:
    """``f(step)`` going linearly from ``start`` at step 0 to ``end`` at ``duration``, then flat."""
    for name, value in (("start", start), ("end", end)):
        if not np.isfinite(real_scalar(name, value)):
            raise ValueError(f"{name}: expected a finite number, got {value}")
    duration = check_nonnegative("duration", duration, positive=True)

    def value(step: int) -> float:
        frac = min(max(step / duration, 0.0), 1.0)
        return start + frac * (end - start)

    return value
