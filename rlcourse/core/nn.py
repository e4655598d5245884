"""Small neural networks as plain dicts of arrays: orthogonal init, linear layers, MLPs.

A layer is ``{"w": [in, out], "b": [out]}``; an MLP is a list of layers. Networks default to
float32 (matrix products run about 3x faster than float64); pass ``dtype=np.float64`` for
gradient checks. Every function works on plain arrays and on traced ``Tensor`` values alike.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_rng
from .autodiff import relu, tanh, tree_leaves

__all__ = [
    "orthogonal", "linear_init", "linear", "mlp_init", "mlp", "count_params",
]

_ACTIVATIONS = {"tanh": tanh, "relu": relu}


def orthogonal(shape: tuple[int, int], gain: float = 1.0, seed=0, dtype=np.float32) -> np.ndarray:
    """A ``[rows, cols]`` matrix with orthonormal rows or columns, times ``gain``.

    Orthogonal init keeps the scale of activations through deep stacks; RL code (CleanRL, SB3)
    uses gain sqrt(2) for hidden layers, 0.01 for a policy head and 1.0 for a value head.
    """
    rows, cols = shape
    a = as_rng(seed).standard_normal((max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))  # makes the result uniformly distributed over orthogonal matrices
    if rows < cols:
        q = q.T
    return np.ascontiguousarray(gain * q, dtype=dtype)


def linear_init(n_in: int, n_out: int, seed=0, scale: float = 1.0, dtype=np.float32) -> dict:
    """``{"w": orthogonal [n_in, n_out] with gain scale, "b": zeros [n_out]}``."""
    for name, v in (("n_in", n_in), ("n_out", n_out)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    return {
        "w": orthogonal((n_in, n_out), scale, seed, dtype),
        "b": np.zeros(n_out, dtype=dtype),
    }


def linear(params: dict, x):
    """``x @ w + b``: x ``[B, in]`` -> ``[B, out]``."""
    return x @ params["w"] + params["b"]


def mlp_init(
    sizes: list[int],
    seed=0,
    out_scale: float = 1.0,
    hidden_scale: float = np.sqrt(2),
    dtype=np.float32,
) -> list[dict]:
    """Layers for ``sizes = [in, h1, ..., out]``: hidden gains ``hidden_scale``, last ``out_scale``.

    ``seed`` is an int or a Generator; the same seed gives identical parameters.
    """
    if len(sizes) < 2:
        raise ValueError(f"sizes: expected at least [in, out], got {sizes!r}")
    rng = as_rng(seed)
    return [
        linear_init(n_in, n_out, rng, out_scale if i == len(sizes) - 2 else hidden_scale, dtype)
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]))
    ]


def mlp(params: list[dict], x, activation=tanh):
    """Apply every layer, ``activation`` between them (not after the last): ``[B, in] -> [B, out]``.

    ``activation`` is a function or one of ``"tanh"``, ``"relu"``.
    """
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation: expected one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        activation = _ACTIVATIONS[activation]
    first = params[0]["w"]
    if np.shape(x)[-1] != np.shape(first)[0]:
        raise ValueError(
            f"x: expected last dimension {np.shape(first)[0]} (the input size of the first layer), "
            f"got shape {np.shape(x)}"
        )
    for layer in params[:-1]:
        x = activation(x @ layer["w"] + layer["b"])
    last = params[-1]
    return x @ last["w"] + last["b"]


def count_params(params) -> int:
    """Total number of scalars in a parameter tree."""
    return int(sum(np.size(leaf) for leaf in tree_leaves(params)))
