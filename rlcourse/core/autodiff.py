"""Reverse-mode automatic differentiation on numpy arrays.

``value_and_grad(f)(params, *args)`` calls ``f`` with every float leaf of ``params`` wrapped in a
``Tensor``. Each differentiable op applied to a Tensor computes its numpy value and appends the
result to a *tape* together with one vector-Jacobian product (vjp) per Tensor input. The tape is
in creation order, which is already a topological order, so the backward pass is one reversed
walk over it that sums each node's incoming gradients and hands them to its parents' vjps.

The same ops work on plain arrays (they then return plain numpy results and record nothing), so
one ``model(params, obs)`` serves both fast rollouts and differentiated losses.

Conventions: float64 unless the inputs are float32 (float32 stays float32, gradients included);
gradients are summed over broadcast dimensions so each has its input's shape; ``minimum``,
``maximum`` and ``where`` send the whole gradient to the branch that was chosen (ties go to the
first argument); ``clip`` passes the gradient where ``lo <= x <= hi`` and blocks it outside.
Nested ``value_and_grad`` (a gradient of a gradient) is not supported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "Tensor", "value_and_grad", "grad", "numerical_grad", "tree_map", "tree_leaves",
    "tanh", "relu", "sigmoid", "exp", "log", "sqrt", "square", "abs",
    "log_softmax", "softmax", "logsumexp", "log_sigmoid",
    "minimum", "maximum", "clip", "where", "sum", "mean",
    "take_along_axis", "reshape", "transpose", "concatenate", "stack", "stop_gradient",
    "embedding", "affine", "layer_norm", "gelu", "self_attention",
]

# One tape per active value_and_grad call; ops record onto the innermost.
_TAPES: list[list[Tensor]] = []


class Tensor:
    """A traced array: ``value`` is the numpy array, ``parents`` pairs of (input, vjp)."""

    __slots__ = ("value", "parents")
    # Make ndarray (op) Tensor defer to Tensor's reflected operators.
    __array_ufunc__ = None

    def __init__(self, value: np.ndarray, parents: tuple = ()):
        self.value = value
        self.parents = parents

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)
    T = property(lambda self: transpose(self))

    def __len__(self):
        return len(self.value)

    def __repr__(self):
        return f"Tensor({self.value!r})"

    def __add__(self, other):
        return _add(self, other)

    def __radd__(self, other):
        return _add(other, self)

    def __sub__(self, other):
        return _sub(self, other)

    def __rsub__(self, other):
        return _sub(other, self)

    def __mul__(self, other):
        return _mul(self, other)

    def __rmul__(self, other):
        return _mul(other, self)

    def __truediv__(self, other):
        return _div(self, other)

    def __rtruediv__(self, other):
        return _div(other, self)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __pow__(self, exponent):
        return _pow(self, exponent)

    def __rpow__(self, base):
        return _pow(base, self)

    def __neg__(self):
        return _record(-self.value, ((self, np.negative),))

    def __pos__(self):
        return self

    def __getitem__(self, index):
        return _getitem(self, index)

    # Comparisons give plain boolean arrays: masks are never differentiated.
    def __lt__(self, other):
        return self.value < _val(other)

    def __le__(self, other):
        return self.value <= _val(other)

    def __gt__(self, other):
        return self.value > _val(other)

    def __ge__(self, other):
        return self.value >= _val(other)

    def sum(self, axis=None, keepdims=False):
        return sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 else shape)


def _val(x):
    return x.value if isinstance(x, Tensor) else x


def _record(value, parents) -> Tensor:
    out = Tensor(value, parents)
    if _TAPES:
        _TAPES[-1].append(out)
    return out


def _unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``g`` over the dimensions that broadcasting added or stretched, back to ``shape``."""
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if stretched:
        g = g.sum(axis=stretched, keepdims=True)
    return g


# ---------------------------------------------------------------- arithmetic

def _add(a, b):
    av, bv = _val(a), _val(b)
    out = av + bv
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        shape = np.shape(av)
        parents.append((a, lambda g: _unbroadcast(g, shape)))
    if isinstance(b, Tensor):
        shape_b = np.shape(bv)
        parents.append((b, lambda g: _unbroadcast(g, shape_b)))
    return _record(out, tuple(parents))


def _sub(a, b):
    av, bv = _val(a), _val(b)
    out = av - bv
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        shape = np.shape(av)
        parents.append((a, lambda g: _unbroadcast(g, shape)))
    if isinstance(b, Tensor):
        shape_b = np.shape(bv)
        parents.append((b, lambda g: _unbroadcast(-g, shape_b)))
    return _record(out, tuple(parents))


def _mul(a, b):
    av, bv = _val(a), _val(b)
    out = av * bv
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        parents.append((a, lambda g: _unbroadcast(g * bv, np.shape(av))))
    if isinstance(b, Tensor):
        parents.append((b, lambda g: _unbroadcast(g * av, np.shape(bv))))
    return _record(out, tuple(parents))


def _div(a, b):
    av, bv = _val(a), _val(b)
    out = av / bv
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        parents.append((a, lambda g: _unbroadcast(g / bv, np.shape(av))))
    if isinstance(b, Tensor):
        parents.append((b, lambda g: _unbroadcast(-g * out / bv, np.shape(bv))))
    return _record(out, tuple(parents))


def _pow(a, exponent):
    """``a ** exponent`` for any mix of traced and plain base and exponent (broadcasting).

    d/da = exponent * a ** (exponent - 1); d/dexponent = a ** exponent * log(a), defined for
    a > 0 (the gradient to a traced exponent is NaN where the base is <= 0, as log is).
    """
    av, ev = _val(a), _val(exponent)
    out = av**ev
    if not (isinstance(a, Tensor) or isinstance(exponent, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        parents.append((a, lambda g: _unbroadcast(g * ev * av ** (ev - 1), np.shape(av))))
    if isinstance(exponent, Tensor):
        parents.append((exponent, lambda g: _unbroadcast(g * out * np.log(av), np.shape(ev))))
    return _record(out, tuple(parents))


def _matmul(a, b):
    av, bv = _val(a), _val(b)
    out = _stacked_matmul(av, bv) if np.ndim(av) > 2 and np.ndim(bv) == 2 else av @ bv
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        parents.append((a, lambda g: _matmul_grad_a(g, av, bv)))
    if isinstance(b, Tensor):
        parents.append((b, lambda g: _matmul_grad_b(g, av, bv)))
    return _record(out, tuple(parents))


def _stacked_matmul(a, b):
    """``a [..., K] @ b [K, N]`` as one 2-D product: numpy would loop over the leading axes,
    one small BLAS call per matrix, several times slower for a batch of short sequences."""
    return (a.reshape(-1, a.shape[-1]) @ b).reshape(*a.shape[:-1], b.shape[-1])


def _matmul_grad_a(g, a, b):
    if a.ndim == 2 and b.ndim == 2:  # the common case, kept free of reshuffling
        return g @ b.T
    if a.ndim > 2 and b.ndim == 2:  # [..., K] @ [K, N]: one 2-D product
        return _stacked_matmul(g, b.T)
    if b.ndim == 1:
        ga = np.multiply.outer(g, b) if a.ndim > 1 else g * b
    else:
        ga = (g[..., None, :] if a.ndim == 1 else g) @ np.swapaxes(b, -1, -2)
        if a.ndim == 1:
            ga = ga[..., 0, :]
    return _unbroadcast(ga, a.shape)


def _matmul_grad_b(g, a, b):
    if a.ndim == 2 and b.ndim == 2:
        return a.T @ g
    if a.ndim > 2 and b.ndim == 2:  # the sum over the leading axes is the 2-D product's own
        return a.reshape(-1, a.shape[-1]).T @ g.reshape(-1, g.shape[-1])
    if a.ndim == 1:
        gb = np.multiply.outer(a, g) if b.ndim > 1 else g * a
    else:
        gm = g[..., None] if b.ndim == 1 else g
        gb = np.swapaxes(a, -1, -2) @ gm
        if b.ndim == 1:
            gb = gb[..., 0]
    return _unbroadcast(gb, b.shape)


def _getitem(a: Tensor, index):
    av = a.value
    out = av[index]
    fancy = isinstance(index, (list, np.ndarray)) or (
        isinstance(index, tuple) and any(isinstance(i, (list, np.ndarray)) for i in index)
    )

    def vjp(g):
        full = np.zeros_like(av, dtype=np.result_type(av, g))
        if fancy:  # repeated indices must add up
            np.add.at(full, index, g)
        else:
            full[index] = g
        return full

    return _record(out, ((a, vjp),))


# ---------------------------------------------------------------- elementwise

def _unary(x, value_fn, vjp_fn):
    """Apply ``value_fn``; ``vjp_fn(g, x_value, out_value)`` is its vector-Jacobian product."""
    if not isinstance(x, Tensor):
        return value_fn(np.asarray(x))
    xv = x.value
    out = value_fn(xv)
    return _record(out, ((x, lambda g: vjp_fn(g, xv, out)),))


def tanh(x):
    return _unary(x, np.tanh, lambda g, x, y: g * (1 - y * y))


def relu(x):
    return _unary(x, lambda v: np.maximum(v, 0), lambda g, x, y: g * (x > 0))


def _sigmoid_value(v):
    # 0.5 * (1 + tanh(v / 2)) equals 1 / (1 + exp(-v)) and never overflows.
    return 0.5 * (1 + np.tanh(0.5 * v))


def sigmoid(x):
    return _unary(x, _sigmoid_value, lambda g, x, y: g * y * (1 - y))


def exp(x):
    return _unary(x, np.exp, lambda g, x, y: g * y)


def log(x):
    return _unary(x, np.log, lambda g, x, y: g / x)


def sqrt(x):
    return _unary(x, np.sqrt, lambda g, x, y: g * 0.5 / y)


def square(x):
    return _unary(x, np.square, lambda g, x, y: g * 2 * x)


def abs(x):
    return _unary(x, np.abs, lambda g, x, y: g * np.sign(x))


def log_sigmoid(x):
    """``log(sigmoid(x))``, finite with a finite gradient for any finite ``x``."""
    return _unary(
        x,
        lambda v: -np.logaddexp(0, -v),
        lambda g, x, y: g * _sigmoid_value(-x),
    )


def stop_gradient(x):
    """The value of ``x`` as a plain array: no gradient flows back through it."""
    return x.value if isinstance(x, Tensor) else x


# ---------------------------------------------------------------- softmax family

def log_softmax(x, axis: int = -1):
    """``x - logsumexp(x)`` along ``axis``, computed after subtracting the max (no overflow)."""
    def value(v):
        shifted = v - v.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))

    return _unary(x, value, lambda g, x, y: g - np.exp(y) * g.sum(axis=axis, keepdims=True))


def softmax(x, axis: int = -1):
    def value(v):
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    return _unary(x, value, lambda g, x, y: y * (g - (g * y).sum(axis=axis, keepdims=True)))


def logsumexp(x, axis: int | None = -1, keepdims: bool = False):
    """``log(sum(exp(x)))`` along ``axis``, shifted by the max so it never overflows."""
    def value(v):
        m = v.max(axis=axis, keepdims=True)
        out = m + np.log(np.exp(v - m).sum(axis=axis, keepdims=True))
        return out if keepdims else np.squeeze(out, axis=axis)

    def vjp(g, x, y):
        yk = y if keepdims else np.expand_dims(y, axis) if axis is not None else y
        gk = g if keepdims else np.expand_dims(g, axis) if axis is not None else g
        return gk * np.exp(x - yk)

    return _unary(x, value, vjp)


# ---------------------------------------------------------------- selection

def minimum(a, b):
    """Elementwise min; the gradient goes to the smaller input (to ``a`` on ties). A NaN in
    either input gives NaN there, whichever side it is on (as ``np.minimum``)."""
    av, bv = np.asarray(_val(a)), np.asarray(_val(b))
    return _select((av <= bv) | np.isnan(av), a, b)


def maximum(a, b):
    """Elementwise max; the gradient goes to the larger input (to ``a`` on ties). A NaN in
    either input gives NaN there, whichever side it is on (as ``np.maximum``)."""
    av, bv = np.asarray(_val(a)), np.asarray(_val(b))
    return _select((av >= bv) | np.isnan(av), a, b)


def where(condition, a, b):
    """``a`` where ``condition`` else ``b``; each branch gets the gradient where it was chosen."""
    return _select(np.asarray(_val(condition), dtype=bool), a, b)


def _select(take_a, a, b):
    av, bv = _val(a), _val(b)
    out = np.where(take_a, av, bv)
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        return out
    parents = []
    if isinstance(a, Tensor):
        parents.append((a, lambda g: _unbroadcast(np.where(take_a, g, 0), np.shape(av))))
    if isinstance(b, Tensor):
        parents.append((b, lambda g: _unbroadcast(np.where(take_a, 0, g), np.shape(bv))))
    return _record(out, tuple(parents))


def clip(x, lo, hi):
    """``x`` limited to ``[lo, hi]``; zero gradient where ``x`` lies outside the range."""
    xv = _val(x)
    out = np.clip(xv, lo, hi)
    if not isinstance(x, Tensor):
        return out
    inside = (xv >= lo) & (xv <= hi)
    return _record(out, ((x, lambda g: g * inside),))


def take_along_axis(x, indices, axis: int = -1):
    """``np.take_along_axis`` that sends gradients back to the picked entries: an entry picked
    twice (a repeated index, or indices broadcast over a length-1 axis of ``x``) gets both."""
    xv = np.asarray(_val(x))
    indices = np.asarray(indices)
    out = np.take_along_axis(xv, indices, axis=axis)
    if not isinstance(x, Tensor):
        return out
    axis = axis % xv.ndim
    one_pick_per_slice = indices.shape[axis] == 1 and all(
        indices.shape[d] == xv.shape[d] for d in range(xv.ndim) if d != axis)

    def vjp(g):
        full = np.zeros_like(xv, dtype=np.result_type(xv, g))
        if one_pick_per_slice:  # no entry can be picked twice: a plain write is exact
            np.put_along_axis(full, indices, g, axis=axis)
            return full
        grid = list(np.indices(out.shape, sparse=True))
        for d in range(xv.ndim):
            if d != axis and xv.shape[d] == 1:  # x was broadcast along d: all picks land on 0
                grid[d] = np.zeros_like(grid[d])
        grid[axis] = np.broadcast_to(indices, out.shape)
        np.add.at(full, tuple(grid), g)
        return full

    return _record(out, ((x, vjp),))


# ---------------------------------------------------------------- reductions and shapes

def _expand_reduced(g, shape, axis, keepdims):
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, shape)


def sum(x, axis=None, keepdims: bool = False):
    xv = _val(x)
    out = np.sum(xv, axis=axis, keepdims=keepdims)
    if not isinstance(x, Tensor):
        return out
    shape = xv.shape
    return _record(out, ((x, lambda g: _expand_reduced(g, shape, axis, keepdims)),))


def mean(x, axis=None, keepdims: bool = False):
    xv = _val(x)
    out = np.mean(xv, axis=axis, keepdims=keepdims)
    if not isinstance(x, Tensor):
        return out
    shape = xv.shape
    count = xv.size // max(np.size(out), 1) if xv.size else 1
    return _record(out, ((x, lambda g: _expand_reduced(g / count, shape, axis, keepdims)),))


def reshape(x, shape):
    xv = _val(x)
    out = np.reshape(xv, shape)
    if not isinstance(x, Tensor):
        return out
    return _record(out, ((x, lambda g: np.reshape(g, xv.shape)),))


def transpose(x, axes=None):
    xv = _val(x)
    out = np.transpose(xv, axes)
    if not isinstance(x, Tensor):
        return out
    # negative axes name the same axes as their positive forms; argsort needs the positive ones
    inverse = None if axes is None else np.argsort([a % xv.ndim for a in axes])
    return _record(out, ((x, lambda g: np.transpose(g, inverse)),))


def concatenate(xs, axis: int = 0):
    values = [_val(x) for x in xs]
    out = np.concatenate(values, axis=axis)
    if not any(isinstance(x, Tensor) for x in xs):
        return out
    ends = np.cumsum([v.shape[axis] for v in values])
    parents = []
    for x, start, end in zip(xs, np.concatenate([[0], ends[:-1]]), ends):
        if isinstance(x, Tensor):
            parents.append((x, lambda g, s=start, e=end: np.take(g, np.arange(s, e), axis=axis)))
    return _record(out, tuple(parents))


def stack(xs, axis: int = 0):
    values = [_val(x) for x in xs]
    out = np.stack(values, axis=axis)
    if not any(isinstance(x, Tensor) for x in xs):
        return out
    parents = tuple(
        (x, lambda g, i=i: np.take(g, i, axis=axis)) for i, x in enumerate(xs)
        if isinstance(x, Tensor)
    )
    return _record(out, parents)


# ---------------------------------------------------------------- pytrees

def tree_leaves(tree) -> list:
    """The leaves of a nested dict/list/tuple, in a fixed order (dict insertion order)."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in tree_leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [leaf for v in tree for leaf in tree_leaves(v)]
    return [tree]


def tree_map(fn: Callable, tree, *rest):
    """Apply ``fn`` leafwise to ``tree`` (and same-structured ``rest``), keeping the structure."""
    if isinstance(tree, dict):
        return {k: tree_map(fn, v, *(r[k] for r in rest)) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        mapped = [tree_map(fn, v, *(r[i] for r in rest)) for i, v in enumerate(tree)]
        return _rebuild(tree, mapped)
    return fn(tree, *rest)


def _rebuild(like: list | tuple, items: list):
    """A list, tuple or NamedTuple of the same type as ``like`` holding ``items``."""
    if isinstance(like, list):
        return items
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def _wrap_params(tree, root: str, path: tuple = ()):
    """Check every leaf is a finite float array and wrap it in a leaf Tensor.

    ``path`` holds the keys down to this node; it is turned into text only for an error message.
    """
    if isinstance(tree, dict):
        return {k: _wrap_params(v, root, (*path, k)) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return _rebuild(tree, [_wrap_params(v, root, (*path, i)) for i, v in enumerate(tree)])
    arr = tree if type(tree) is np.ndarray else np.asarray(tree)
    if arr.dtype.kind != "f":
        raise TypeError(
            f"{_path_text(root, path)}: parameters must be floating-point arrays, got dtype "
            f"{arr.dtype} (cast with .astype(np.float64))"
        )
    # One reduction answers "all finite?" for almost every array (a NaN or inf makes the sum
    # non-finite); the exact elementwise test runs only when the sum is not finite.
    if not np.isfinite(arr.sum()) and not np.isfinite(arr).all():
        raise ValueError(f"{_path_text(root, path)}: parameters contain NaN or inf "
                         f"({int((~np.isfinite(arr)).sum())} of {arr.size} entries); "
                         "the gradient would be meaningless")
    return Tensor(arr)


def _path_text(root: str, path: tuple) -> str:
    return root + "".join(f"[{key!r}]" for key in path)


# ---------------------------------------------------------------- value_and_grad

def value_and_grad(f: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """Return ``g(*args) -> (value, grads)`` computing ``f(*args)`` and its gradient.

    The differentiated arguments (``argnums``) are nested dicts/lists of float arrays; ``grads``
    has the same structure and dtypes (a tuple of such trees if ``argnums`` is a tuple). ``f``
    returns a scalar, or a tuple whose first item is the scalar: then ``value`` is that whole
    tuple with every traced array turned back into a plain array. Leaves that ``f`` never uses
    get zero gradients.
    """
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)

    def wrapped(*args):
        for i in nums:
            if i >= len(args):
                raise TypeError(f"argnums={argnums} but only {len(args)} argument(s) were given")
        args = list(args)
        wrapped_trees = {i: _wrap_params(args[i], "params" if i == 0 else f"args[{i}]")
                         for i in nums}
        for i, tree in wrapped_trees.items():
            args[i] = tree
        tape: list[Tensor] = []
        _TAPES.append(tape)
        try:
            result = f(*args)
        finally:
            _TAPES.pop()
        loss = result[0] if isinstance(result, tuple) else result
        loss_value = np.asarray(_val(loss))
        if loss_value.ndim != 0:
            raise ValueError(
                f"the function must return a scalar loss (or a tuple starting with one), "
                f"got an array of shape {loss_value.shape}; reduce it with sum or mean"
            )
        grads = _backward(tape, loss) if isinstance(loss, Tensor) else {}
        out_grads = tuple(
            tree_map(lambda t: _leaf_grad(t, grads), wrapped_trees[i]) for i in nums
        )
        value = float(loss_value)
        if isinstance(result, tuple):
            value = (value,) + tuple(tree_map(stop_gradient, item) for item in result[1:])
        return value, (out_grads if many else out_grads[0])

    return wrapped


def _backward(tape: list[Tensor], loss: Tensor) -> dict[int, np.ndarray]:
    grads = {id(loss): np.ones_like(loss.value)}
    for node in reversed(tape):
        g = grads.pop(id(node), None)
        if g is None:
            continue
        for parent, vjp in node.parents:
            pg = vjp(g)
            key = id(parent)
            # Not +=: a vjp may hand the same array to two parents.
            grads[key] = grads[key] + pg if key in grads else pg
    return grads


def _leaf_grad(leaf: Tensor, grads: dict) -> np.ndarray:
    g = grads.get(id(leaf))
    if g is None:
        return np.zeros_like(leaf.value)
    value = leaf.value
    if type(g) is np.ndarray and g.dtype == value.dtype and g.shape == value.shape:
        return g
    return np.asarray(g, dtype=value.dtype).reshape(value.shape)


def grad(f: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """Like ``value_and_grad`` but returns only the gradients."""
    vg = value_and_grad(f, argnums)
    return lambda *args: vg(*args)[1]


def numerical_grad(f: Callable[[np.ndarray], Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences ``(f(x + eps e_i) - f(x - eps e_i)) / (2 eps)`` for every i.

    ``f`` maps a float64 array to a scalar. Used to check analytic gradients.
    """
    x = np.array(x, dtype=np.float64, order="C")  # C order: reshape(-1) below must be a view
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = float(f(x))
        flat[i] = old - eps
        down = float(f(x))
        flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return g



# ---------------------------------------------------------------- transformer ops
# Each is one tape node with a hand-written vjp: composing them from the ops above would record
# 5-15 nodes and allocate as many temporaries per call.

def embedding(table, ids):
    """Rows of ``table`` ``[V, D]`` picked by integer ``ids`` ``[...]``: ``[..., D]``.

    The gradient of ``table`` adds up the gradients of every position holding the same id. It
    is computed as ``onehot(ids).T @ g``, one BLAS call; ``np.add.at`` scatters row by row and
    is about 15x slower for the course's vocabularies of a few dozen tokens.
    """
    tv = _val(table)
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"ids: expected integer token ids, got dtype {ids.dtype}")
    if np.ndim(tv) != 2:
        raise ValueError(f"table: expected shape [V, D], got {np.shape(tv)}")
    vocab, dim = tv.shape
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"ids: expected values in [0, {vocab}), got {ids.min()}..{ids.max()}")
    out = np.take(tv, ids, axis=0)
    if not isinstance(table, Tensor):
        return out

    def vjp(g):
        onehot = (ids.reshape(-1, 1) == np.arange(vocab)).astype(g.dtype)
        return onehot.T @ g.reshape(-1, dim)

    return _record(out, ((table, vjp),))


def affine(x, w, b):
    """``x @ w + b`` as one tape node: ``x`` ``[..., K]``, ``w`` ``[K, N]``, ``b`` ``[N]`` ->
    ``[..., N]``. The bias is added into the product in place, and its gradient (the sum of the
    output's gradient over every row) is one matrix-vector product."""
    xv, wv, bv = _val(x), _val(w), _val(b)
    if np.ndim(wv) != 2 or np.shape(xv)[-1:] != wv.shape[:1] or np.shape(bv) != wv.shape[1:]:
        raise ValueError(f"affine: expected x [..., K], w [K, N], b [N], got shapes "
                         f"{np.shape(xv)}, {np.shape(wv)}, {np.shape(bv)}")
    x2 = xv.reshape(-1, wv.shape[0])
    out = x2 @ wv
    out += bv
    out = out.reshape(*np.shape(xv)[:-1], wv.shape[1])
    if not any(isinstance(v, Tensor) for v in (x, w, b)):
        return out

    def rows(g):
        return g.reshape(-1, wv.shape[1])

    parents = []
    if isinstance(x, Tensor):
        parents.append((x, lambda g: (rows(g) @ wv.T).reshape(xv.shape)))
    if isinstance(w, Tensor):
        parents.append((w, lambda g: x2.T @ rows(g)))
    if isinstance(b, Tensor):
        parents.append((b, lambda g: np.ones(len(x2), dtype=g.dtype) @ rows(g)))
    return _record(out, tuple(parents))


def layer_norm(x, gain, bias, eps: float = 1e-5):
    """``(x - mean) / sqrt(var + eps) * gain + bias`` over the last axis of ``x`` ``[..., D]``.

    ``gain`` and ``bias`` are ``[D]``; the variance is the biased one (divided by D), as in
    PyTorch's ``LayerNorm``. Returns ``x``'s shape.
    """
    xv, gv, bv = _val(x), _val(gain), _val(bias)
    dim = np.shape(xv)[-1]
    for name, v in (("gain", gv), ("bias", bv)):
        if np.shape(v) != (dim,):
            raise ValueError(f"{name}: expected shape ({dim},) (the last axis of x), got {np.shape(v)}")
    x2 = xv.reshape(-1, dim)
    # row means as matrix-vector products: several times faster than .mean(axis=-1) on short rows
    average = np.full(dim, 1.0 / dim, dtype=x2.dtype)
    xhat = x2 - (x2 @ average)[:, None]
    # 1 / sqrt(var + eps) with a Python float eps keeps float32 float32
    rstd = 1.0 / np.sqrt(np.einsum("ij,ij->i", xhat, xhat) / dim + eps)
    xhat *= rstd[:, None]
    out = xhat * gv
    out += bv
    out = out.reshape(np.shape(xv))
    if not any(isinstance(v, Tensor) for v in (x, gain, bias)):
        return out

    def vjp_x(g):
        # dx = rstd * (g' - mean(g') - xhat * mean(g' xhat)), g' = g * gain
        gx = g.reshape(-1, dim) * gv
        dot = np.einsum("ij,ij->i", gx, xhat) / dim
        gx -= (gx @ average)[:, None]
        gx -= xhat * dot[:, None]
        gx *= rstd[:, None]
        return gx.reshape(np.shape(xv))

    parents = []
    if isinstance(x, Tensor):
        parents.append((x, vjp_x))
    if isinstance(gain, Tensor):
        parents.append((gain, lambda g: np.einsum("ij,ij->j", g.reshape(-1, dim), xhat)))
    if isinstance(bias, Tensor):
        parents.append((bias, lambda g: np.ones(len(x2), dtype=g.dtype) @ g.reshape(-1, dim)))
    return _record(out, tuple(parents))


_GELU_C = float(np.sqrt(2.0 / np.pi))
# Entries per slice of gelu's passes: 32K float32 (128 KB) per array stays in the core's cache
# through all of them, where whole 1-4 MB activations would go to memory and back on each pass.
_GELU_SLICE = 1 << 15


def gelu(x):
    """GELU, tanh form (GPT-2's): ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Computed as ``x * sigmoid(2u)`` with ``u = sqrt(2/pi) (x + 0.044715 x^3)``, the same
    function: one ``exp`` per entry is cheaper than a ``tanh``.
    """
    xv = np.asarray(_val(x))
    if xv.dtype.kind != "f":
        xv = xv.astype(np.float64)
    flat = xv.reshape(-1)
    h, out = np.empty_like(flat), np.empty_like(flat)
    for lo in range(0, flat.size, _GELU_SLICE):
        xs, hs = flat[lo:lo + _GELU_SLICE], h[lo:lo + _GELU_SLICE]
        np.multiply(xs, xs, out=hs)
        hs *= -2 * 0.044715 * _GELU_C
        hs -= 2 * _GELU_C
        hs *= xs  # -2u
        with np.errstate(over="ignore"):  # exp(-2u) = inf for x below about -10 (float32): h = 0
            np.exp(hs, out=hs)
        hs += 1.0
        np.reciprocal(hs, out=hs)  # h = sigmoid(2u) = (1 + tanh u) / 2
        np.multiply(xs, hs, out=out[lo:lo + _GELU_SLICE])
    out = out.reshape(xv.shape)
    if not isinstance(x, Tensor):
        return out

    def vjp(g):
        # d/dx = h + x h (1 - h) 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2), as d tanh = 1 - tanh^2
        g = np.reshape(g, -1)
        grad = np.empty(flat.shape, dtype=np.result_type(flat, g))
        spread = np.empty(min(flat.size, _GELU_SLICE), dtype=h.dtype)
        for lo in range(0, flat.size, _GELU_SLICE):
            xs, hs, gs = flat[lo:lo + _GELU_SLICE], h[lo:lo + _GELU_SLICE], grad[lo:lo + _GELU_SLICE]
            ss = spread[:len(xs)]
            np.multiply(xs, xs, out=gs)
            gs *= 6 * 0.044715 * _GELU_C
            gs += 2 * _GELU_C
            gs *= xs
            np.subtract(1.0, hs, out=ss)
            ss *= hs
            gs *= ss
            gs += hs
            gs *= g[lo:lo + _GELU_SLICE]
        return grad.reshape(xv.shape)

    return _record(out, ((x, vjp),))


def self_attention(qkv, heads: int, mask=None):
    """Multi-head scaled dot-product self-attention on packed projections: ``[B, T, D]``.

    ``qkv`` ``[B, T, 3D]`` holds the queries, keys and values side by side on the last axis
    (columns ``[0, D)``, ``[D, 2D)``, ``[2D, 3D)``); each is split into ``heads`` heads of
    ``dh = D / heads`` consecutive columns. For every head,
    ``softmax(q k^T / sqrt(dh) + log mask) v`` ``[B, T, dh]``, and the heads' outputs are
    concatenated back to ``D`` columns in the same order. ``mask`` (bool, broadcastable to
    ``[B, T, T]``, True where query ``i`` may see key ``j``; None lets every query see every key)
    gives a hidden key probability exactly 0 and no gradient. Every query must see at least one
    key.
    """
    value = _val(qkv)
    if np.ndim(value) != 3 or value.shape[-1] % 3:
        raise ValueError(f"qkv: expected shape [B, T, 3D], got {np.shape(value)}")
    batch, length, three_d = value.shape
    dim = three_d // 3
    if isinstance(heads, bool) or not isinstance(heads, (int, np.integer)) or heads < 1 or dim % heads:
        raise ValueError(f"heads: expected a positive divisor of D = {dim}, got {heads!r}")
    dh = dim // heads
    scale = 1.0 / float(np.sqrt(dh))
    q, k, v = value.reshape(batch, length, 3, heads, dh).transpose(2, 0, 3, 1, 4)  # [B, H, T, dh]
    hidden = None
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        try:
            visible = np.broadcast_to(mask, (batch, length, length))
        except ValueError:
            raise ValueError(f"mask: expected a shape broadcastable to {(batch, length, length)}, "
                             f"got {mask.shape}") from None
        if not visible.any(axis=-1).all():
            raise ValueError("mask: some query sees no key (a row of the mask is all False); "
                             "let every query at least see itself")
        hidden = ~mask[..., None, :, :] if mask.ndim == 3 else ~mask  # broadcast over the heads
    probs = _attention_probs(q, k, scale, hidden, fast=True)
    out = np.empty((batch, length, dim), dtype=probs.dtype)
    np.matmul(probs, v, out=out.reshape(batch, length, heads, dh).transpose(0, 2, 1, 3))
    if not isinstance(qkv, Tensor):
        return out

    def vjp(g):
        g = g.reshape(batch, length, heads, dh).transpose(0, 2, 1, 3)
        grad = np.empty((batch, length, 3, heads, dh), dtype=np.result_type(value, g))
        dq, dk, dv = grad.transpose(2, 0, 3, 1, 4)  # views: the products below write into grad
        np.matmul(probs.swapaxes(-1, -2), g, out=dv)
        ds = g @ v.swapaxes(-1, -2)  # d loss / d probs
        # softmax's vjp: p * (ds - sum(ds * p)); a hidden key has p = 0, so its gradient is 0
        ds -= np.einsum("...i,...i->...", ds, probs)[..., None]
        ds *= probs
        ds *= scale
        np.matmul(ds, k, out=dq)
        np.matmul(ds.swapaxes(-1, -2), q, out=dk)
        return grad.reshape(batch, length, three_d)

    return _record(out, ((qkv, vjp),))


def _attention_probs(q, k, scale: float, hidden, fast: bool):
    """``softmax(q k^T * scale)`` ``[B, H, T, T]`` with ``hidden`` keys (bool, broadcastable)
    at probability exactly 0.

    Softmax may subtract any constant per row before ``exp``; the usual one, the row's max, is
    a reduction over rows of T entries, which numpy makes as slow as the ``exp`` itself. With
    ``fast``, each row's own score for its own position (the diagonal, which a causal query
    always sees) is subtracted instead: still a function of the row alone, so causality holds
    bit for bit. Should some score exceed it by more than ``exp`` can hold, or a row's sum come
    out tiny (a hidden diagonal), the call is redone with the exact row max.
    """
    scores = q @ k.swapaxes(-1, -2)
    scores *= scale
    shift = scores.diagonal(axis1=-2, axis2=-1)[..., None].copy() if fast else None
    if hidden is not None:
        np.copyto(scores, -np.inf, where=hidden)  # masked_fill: exp(-inf) is exactly 0
    scores -= shift if fast else scores.max(axis=-1, keepdims=True)
    length = scores.shape[-1]
    with np.errstate(over="ignore"):  # an inf here sends the call to the exact path
        probs = np.exp(scores, out=scores)
        # row sums as one matrix-vector product, many times faster than .sum(axis=-1) on short rows
        sums = probs.reshape(-1, length) @ np.ones(length, dtype=probs.dtype)
    if fast and not (np.isfinite(sums).all() and sums.min() > 1e-20):
        return _attention_probs(q, k, scale, hidden, fast=False)
    probs *= (1.0 / sums).reshape(*probs.shape[:-1], 1)
    return probs
