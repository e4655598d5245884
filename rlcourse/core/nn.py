"""Small neural networks as plain dicts of arrays: orthogonal init, linear layers, MLPs.

A layer is ``{"w": [in, out], "b": [out]}``; an MLP is a list of layers. Networks default to
float32 (matrix products run about 3x faster than float64); pass ``dtype=np.float64`` for
gradient checks. Every function works on plain arrays and on traced ``Tensor`` values alike.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, as_rng, check_count, check_tree, float_dtype, real_scalar
from .autodiff import Tensor, relu, tanh

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
    gain = real_scalar("gain", gain)
    dtype = float_dtype("dtype", dtype)
    if not np.isfinite(gain):
        raise ValueError(f"gain: expected a finite number, got {gain}")
    a = as_rng(seed).standard_normal((max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))  # makes the result uniformly distributed over orthogonal matrices
    if rows < cols:
        q = q.T
    return np.ascontiguousarray(gain * q, dtype=dtype)


def linear_init(n_in: int, n_out: int, seed=0, scale: float = 1.0, dtype=np.float32) -> dict:
    """``{"w": orthogonal [n_in, n_out] with gain scale, "b": zeros [n_out]}``."""
    check_count("n_in", n_in)
    check_count("n_out", n_out)
    dtype = float_dtype("dtype", dtype)
    return {
        "w": orthogonal((n_in, n_out), scale, seed, dtype),
        "b": np.zeros(n_out, dtype=dtype),
    }


def linear(params: dict, x):
    """``x @ w + b``: x ``[B, in]`` -> ``[B, out]``."""
    n_in, _ = _layer_sizes("params", params)
    x = _check_input(x, n_in, "params['w']")
    return _check_output(x @ params["w"] + params["b"], params)


def _layer_sizes(name: str, layer) -> tuple[int, int]:
    """``(in, out)`` of a layer ``{"w": [in, out], "b": [out]}`` of float arrays.

    The usual layer passes a few attribute reads; anything else gets the full check, which
    names what is wrong."""
    try:
        w, b = layer["w"], layer["b"]
        if w.ndim == 2 and b.shape == w.shape[1:] and w.dtype.kind == b.dtype.kind == "f":
            return w.shape
    except (TypeError, KeyError, IndexError, AttributeError):
        pass
    if not isinstance(layer, dict) or not {"w", "b"} <= set(layer):
        got = f"keys {sorted(layer)}" if isinstance(layer, dict) else type(layer).__name__
        raise ValueError(f"{name}: expected a layer {{'w': [in, out], 'b': [out]}} as from "
                         f"linear_init, got {got}")
    check_tree(name, {"w": layer["w"], "b": layer["b"]}, floats=True, finite=True)
    w, b = layer["w"], layer["b"]
    if np.ndim(w) != 2 or np.shape(b) != np.shape(w)[1:]:
        raise ValueError(f"{name}: expected w [in, out] and b [out], got shapes {np.shape(w)} "
                         f"and {np.shape(b)}")
    return np.shape(w)


def _check_input(x, n_in: int, against: str):
    """``x`` ``[..., n_in]`` of finite real numbers (a traced ``x`` was made from checked
    values: only its shape is checked)."""
    if not (type(x) is np.ndarray and x.dtype.kind == "f" and np.isfinite(x).all()):
        x = x if isinstance(x, Tensor) else as_float_array("x", x)  # raises if not finite
    if np.ndim(x) < 1 or np.shape(x)[-1] != n_in:
        raise ValueError(f"x: expected last dimension {n_in} (the input size of {against}), "
                         f"got shape {np.shape(x)}")
    return x


def _check_output(out, params):
    """``out``, unless it holds NaN or inf: then the NaN or inf weight that put it there is
    named (``x`` is finite; one check of the small output rather than of every weight at every
    call; traced weights were checked by ``value_and_grad``)."""
    if not np.isfinite(out.value if isinstance(out, Tensor) else out).all():
        check_tree("params", params, finite=True)
    return out


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
    if not callable(activation):
        raise TypeError(f"activation: expected a function or one of {sorted(_ACTIVATIONS)}, "
                        f"got {type(activation).__name__}")
    if not isinstance(params, (list, tuple)) or not params:
        got = "an empty list" if isinstance(params, (list, tuple)) else type(params).__name__
        raise ValueError(f"params: expected a non-empty list of layers as from mlp_init, got {got}")
    sizes = [_layer_sizes(f"params[{i}]", layer) for i, layer in enumerate(params)]
    for i in range(1, len(sizes)):
        if sizes[i][0] != sizes[i - 1][1]:
            raise ValueError(f"params[{i}]['w']: expected {sizes[i - 1][1]} rows (the output size "
                             f"of params[{i - 1}]), got shape {sizes[i]}")
    x = _check_input(x, sizes[0][0], "params[0]['w']")
    for layer in params[:-1]:
        x = activation(x @ layer["w"] + layer["b"])
    last = params[-1]
    return _check_output(x @ last["w"] + last["b"], params)


def count_params(params) -> int:
    """Total number of scalars in a parameter tree."""
    return int(sum(np.size(leaf) for leaf in check_tree("params", params)))
