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

Inputs: every op takes real numbers (bool, int or float arrays, lists, Python numbers) of any
shape its maths allows. NaN and inf are data: they propagate, never dropped. Complex, string or
object data, axes out of range, shapes that do not fit together, indices out of range and a
softmax row with nothing to normalise (+inf, or -inf everywhere) are errors naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._checks import as_bool_array, as_float_array, as_int_array, check_nonnegative

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
    # Tells input checks (core._checks.check_tree, which cannot import this module) that a leaf
    # is traced: its value was checked when value_and_grad wrapped it.
    is_traced = True

    def __init__(self, value: np.ndarray, parents: tuple = ()):
        # Ops make their Tensors through _record (real arrays by construction); these checks
        # are for a Tensor built by hand.
        value = _real("value", value)
        if isinstance(parents, list):
            parents = tuple(parents)
        if not isinstance(parents, tuple) or not all(
                isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], Tensor) and callable(p[1])
                for p in parents):
            raise TypeError(f"parents: expected a tuple of (Tensor, vjp function) pairs, got "
                            f"{_describe(parents)}")
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
    out = Tensor.__new__(Tensor)  # skips Tensor()'s input checks: an op's result is valid
    out.value, out.parents = value, parents
    if _TAPES:
        _TAPES[-1].append(out)
    return out


# ---------------------------------------------------------------- input checks
# The one rule for the data of every op: real numbers (bool, int or float), any shape. NaN and
# inf are data like any other (they propagate); complex numbers, strings and objects are refused
# with an error naming the argument, never converted or passed on to numpy.

def _describe(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _real(name: str, x):
    """``x`` (not a Tensor) as real numbers: an array or numpy scalar is returned as it is,
    anything else (a list, a Python number) as ``np.asarray(x)``."""
    if isinstance(x, (np.ndarray, np.generic)):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{name}: expected an array of real numbers, got {_describe(x)} "
                             f"({err})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected real numbers (bool, int or float), got dtype {arr.dtype}"
                        + (" (split complex numbers into real and imaginary parts)"
                           if arr.dtype.kind == "c" else ""))
    return arr


def _data(name: str, x):
    """The numbers of an op's input ``x``: a Tensor's value, else ``x`` checked by ``_real``."""
    return x.value if isinstance(x, Tensor) else _real(name, x)


def _operand(x, op: str):
    """An arithmetic operand's value: plain numbers pass at once, arrays through ``_real``."""
    if isinstance(x, Tensor):
        return x.value
    if type(x) is float or type(x) is int:
        return x
    return _real(f"the operands of {op}", x)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _axis(axis, ndim: int, name: str = "axis", none: bool = False, many: bool = False):
    """Check an ``axis`` argument of an array with ``ndim`` axes: an int in ``[-ndim, ndim)``
    (``None`` too if ``none``; a tuple of distinct ones too if ``many``). Returns ``axis``."""
    if type(axis) is int and -ndim <= axis < ndim or axis is None and none:
        return axis
    items = axis if many and isinstance(axis, tuple) else (axis,)
    if all(_is_int(a) and -ndim <= a < ndim for a in items) and (
            len(items) == 1 or len({int(a) % ndim for a in items}) == len(items)):
        return axis
    expected = f"an int in [{-ndim}, {ndim})"
    if many:
        expected += " or a tuple of distinct ones"
    if none:
        expected += " or None"
    raise (ValueError if all(_is_int(a) for a in items) else TypeError)(
        f"{name}: expected {expected} (for {ndim} axes), got {_describe(axis)}")


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_describe(value)}")
    return value


def _shapes_error(**values) -> ValueError:
    """The error for inputs whose shapes do not broadcast together: it blames the input without
    which the others would broadcast (else all of them), and gives every shape."""
    shapes = {name: np.shape(v) for name, v in values.items()}

    def fits(names):
        try:
            np.broadcast_shapes(*(shapes[n] for n in names))
            return True
        except ValueError:
            return False

    blamed = [n for n in shapes if len(shapes) > 2 and fits([m for m in shapes if m != n])]
    blamed = blamed if len(blamed) == 1 else list(shapes)
    listed = ", ".join(f"{n} {s}" for n, s in shapes.items())
    return ValueError(f"{', '.join(blamed)}: expected shapes that broadcast together, got {listed}")


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
    av, bv = _operand(a, "+"), _operand(b, "+")
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
    av, bv = _operand(a, "-"), _operand(b, "-")
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
    av, bv = _operand(a, "*"), _operand(b, "*")
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
    av, bv = _operand(a, "/"), _operand(b, "/")
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
    av, ev = _operand(a, "**"), _operand(exponent, "**")
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
    av, bv = _operand(a, "@"), _operand(b, "@")
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
        return value_fn(_real("x", x))
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


def _log_sigmoid_value(v):
    with np.errstate(invalid="ignore"):  # numpy warns on logaddexp(0, NaN); NaN just propagates
        return -np.logaddexp(0, -v)


def log_sigmoid(x):
    """``log(sigmoid(x))``, finite with a finite gradient for any finite ``x``."""
    return _unary(x, _log_sigmoid_value, lambda g, x, y: g * _sigmoid_value(-x))


def stop_gradient(x):
    """The value of ``x`` as a plain array: no gradient flows back through it."""
    return x.value if isinstance(x, Tensor) else x


# ---------------------------------------------------------------- softmax family

def _row_max(v, axis):
    """The max along ``axis`` (kept), refusing the rows that have no softmax: one holding +inf
    (inf - inf) or one that is -inf everywhere (0 / 0). A NaN row gives NaN (it propagates)."""
    if v.shape[axis] == 0:
        raise ValueError(f"x: expected at least one entry along axis {axis}, got shape {v.shape}")
    m = v.max(axis=axis, keepdims=True)
    if np.isinf(m).any():
        where = tuple(int(i) for i in np.argwhere(np.isinf(m))[0])
        what = "holds +inf" if m[where] > 0 else "is -inf everywhere"
        row = ", ".join(":" if d == axis % v.ndim else str(i) for d, i in enumerate(where))
        raise ValueError(f"x: the row x[{row}] {what}; it has no softmax (inf - inf, or 0 / 0)")
    return m


def log_softmax(x, axis: int = -1):
    """``x - logsumexp(x)`` along ``axis``, computed after subtracting the max (no overflow).
    A row holding +inf, or -inf everywhere, has no log-softmax: an error, not NaN."""
    _axis(axis, np.ndim(_data("x", x)))

    def value(v):
        shifted = v - _row_max(v, axis)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))

    return _unary(x, value, lambda g, x, y: g - np.exp(y) * g.sum(axis=axis, keepdims=True))


def softmax(x, axis: int = -1):
    """``exp(x) / sum(exp(x))`` along ``axis``, after subtracting the max (no overflow). A row
    holding +inf, or -inf everywhere, has no softmax: an error, not NaN."""
    _axis(axis, np.ndim(_data("x", x)))

    def value(v):
        e = np.exp(v - _row_max(v, axis))
        return e / e.sum(axis=axis, keepdims=True)

    return _unary(x, value, lambda g, x, y: y * (g - (g * y).sum(axis=axis, keepdims=True)))


def logsumexp(x, axis: int | None = -1, keepdims: bool = False):
    """``log(sum(exp(x)))`` along ``axis``, shifted by the max so it never overflows.

    A row that is -inf everywhere gives -inf (with zero gradient), one holding +inf gives +inf.
    """
    _axis(axis, np.ndim(_data("x", x)), none=True, many=True)
    _flag("keepdims", keepdims)

    def value(v):
        if v.size == 0:
            raise ValueError(f"x: expected at least one entry to reduce, got shape {v.shape}")
        m = v.max(axis=axis, keepdims=True)
        if not np.isfinite(m).all():  # shift an infinite row by 0 instead: inf - inf is NaN
            m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):  # log(0) = -inf for a row that is -inf everywhere
            out = m + np.log(np.exp(v - m).sum(axis=axis, keepdims=True))
        return out if keepdims else np.squeeze(out, axis=axis)

    def vjp(g, x, y):
        yk = y if keepdims else np.expand_dims(y, axis) if axis is not None else y
        gk = g if keepdims else np.expand_dims(g, axis) if axis is not None else g
        with np.errstate(invalid="ignore"):  # -inf - (-inf): such a row's gradient is 0
            weights = np.exp(x - yk)
        if np.isneginf(yk).any():
            weights = np.where(np.isneginf(yk), 0.0, weights)
        return gk * weights

    return _unary(x, value, vjp)


# ---------------------------------------------------------------- selection

def minimum(a, b):
    """Elementwise min; the gradient goes to the smaller input (to ``a`` on ties). A NaN in
    either input gives NaN there, whichever side it is on (as ``np.minimum``)."""
    av, bv = _data("a", a), _data("b", b)
    try:
        return _select((av <= bv) | np.isnan(av), a, b)
    except ValueError:
        raise _shapes_error(a=av, b=bv) from None


def maximum(a, b):
    """Elementwise max; the gradient goes to the larger input (to ``a`` on ties). A NaN in
    either input gives NaN there, whichever side it is on (as ``np.maximum``)."""
    av, bv = _data("a", a), _data("b", b)
    try:
        return _select((av >= bv) | np.isnan(av), a, b)
    except ValueError:
        raise _shapes_error(a=av, b=bv) from None


def where(condition, a, b):
    """``a`` where ``condition`` else ``b``; each branch gets the gradient where it was chosen.
    ``condition`` holds booleans (or 0/1)."""
    take_a = as_bool_array("condition", _val(condition))
    av, bv = _data("a", a), _data("b", b)
    try:
        return _select(take_a, a, b)
    except ValueError:
        raise _shapes_error(condition=take_a, a=av, b=bv) from None


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


def _bound(name: str, value):
    """A bound of ``clip``: None (no bound), or real numbers without NaN (inf is no bound)."""
    if value is None:
        return value
    if type(value) is float or type(value) is int:
        nan = value != value
    else:
        arr = _real(name, value)
        if arr.dtype.kind == "b":
            raise TypeError(f"{name}: expected a number (or None), got booleans")
        nan = np.isnan(arr).any()
    if nan:
        raise ValueError(f"{name}: expected a number or -inf/inf (or None for no bound), got NaN")
    return value


def clip(x, lo, hi):
    """``x`` limited to ``[lo, hi]``; zero gradient where ``x`` lies outside the range.

    ``lo`` and ``hi`` are numbers or arrays that broadcast with ``x``; None is no bound. A NaN
    in ``x`` stays NaN; a NaN bound, or ``lo > hi``, is an error.
    """
    xv = _data("x", x)
    lo, hi = _bound("lo", lo), _bound("hi", hi)
    if lo is not None and hi is not None and (
            lo > hi if type(lo) in (float, int) and type(hi) in (float, int) else np.greater(lo, hi).any()):
        raise ValueError(f"lo, hi: expected lo <= hi, got lo = {lo} and hi = {hi}")
    try:
        out = np.clip(xv, lo, hi)
    except ValueError:
        raise _shapes_error(x=xv, lo=0.0 if lo is None else lo, hi=0.0 if hi is None else hi) from None
    if not isinstance(x, Tensor):
        return out
    inside = (xv >= (-np.inf if lo is None else lo)) & (xv <= (np.inf if hi is None else hi))
    shape = np.shape(xv)  # array bounds may broadcast x to a larger result
    return _record(out, ((x, lambda g: _unbroadcast(g * inside, shape)),))


def take_along_axis(x, indices, axis: int = -1):
    """``np.take_along_axis`` that sends gradients back to the picked entries: an entry picked
    twice (a repeated index, or indices broadcast over a length-1 axis of ``x``) gets both."""
    xv = _data("x", x)
    _axis(axis, xv.ndim)
    indices = as_int_array("indices", indices, low=0, high=xv.shape[axis])
    if indices.ndim != xv.ndim:
        raise ValueError(f"indices: expected {xv.ndim} dimensions (as x has, shape {xv.shape}), "
                         f"got shape {indices.shape}")
    try:
        out = np.take_along_axis(xv, indices, axis=axis)
    except (ValueError, IndexError):  # the values were checked: only the shapes can clash
        raise ValueError(f"x, indices: expected shapes that broadcast outside axis {axis}, got "
                         f"x {xv.shape} and indices {indices.shape}") from None
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
    xv = _data("x", x)
    _axis(axis, xv.ndim, none=True, many=True)
    _flag("keepdims", keepdims)
    out = np.sum(xv, axis=axis, keepdims=keepdims)
    if not isinstance(x, Tensor):
        return out
    shape = xv.shape
    return _record(out, ((x, lambda g: _expand_reduced(g, shape, axis, keepdims)),))


def mean(x, axis=None, keepdims: bool = False):
    """The mean over ``axis``; the mean of no entries (an empty axis) is an error, not NaN."""
    xv = _data("x", x)
    _axis(axis, xv.ndim, none=True, many=True)
    _flag("keepdims", keepdims)
    if xv.size == 0 and np.sum(xv, axis=axis).size:  # some mean would be over no entries
        raise ValueError(f"x: expected entries to average over axis {axis}, got shape {xv.shape}")
    out = np.mean(xv, axis=axis, keepdims=keepdims)
    if not isinstance(x, Tensor):
        return out
    shape = xv.shape
    count = xv.size // max(np.size(out), 1) if xv.size else 1
    return _record(out, ((x, lambda g: _expand_reduced(g / count, shape, axis, keepdims)),))


def reshape(x, shape):
    xv = _data("x", x)
    try:
        if shape is None:
            raise TypeError("None is not a shape")
        out = np.reshape(xv, shape)
    except (TypeError, ValueError) as err:
        raise type(err)(f"shape: cannot reshape x of shape {np.shape(xv)} ({np.size(xv)} entries) "
                        f"into {_describe(shape)}: {err}") from None
    if not isinstance(x, Tensor):
        return out
    return _record(out, ((x, lambda g: np.reshape(g, xv.shape)),))


def transpose(x, axes=None):
    """``x`` with its axes permuted as ``axes`` (None reverses them); negative axes count from
    the end."""
    xv = _data("x", x)
    if axes is not None:
        listed = list(axes) if isinstance(axes, (tuple, list, np.ndarray)) else None
        if listed is None or len(listed) != xv.ndim or not all(
                _is_int(a) and -xv.ndim <= a < xv.ndim for a in listed) or len(
                {int(a) % xv.ndim for a in listed}) != xv.ndim:
            raise ValueError(f"axes: expected a permutation of the {xv.ndim} axes of x (shape "
                             f"{xv.shape}), negative ones counting from the end, got {_describe(axes)}")
    out = np.transpose(xv, axes)
    if not isinstance(x, Tensor):
        return out
    # negative axes name the same axes as their positive forms; argsort needs the positive ones
    inverse = None if axes is None else np.argsort([a % xv.ndim for a in axes])
    return _record(out, ((x, lambda g: np.transpose(g, inverse)),))


def _members(xs) -> list:
    """The arrays of ``xs`` (a non-empty list or tuple of arrays or Tensors), each checked."""
    if not isinstance(xs, (list, tuple)) or not xs:
        raise TypeError(f"xs: expected a non-empty list or tuple of arrays, got {_describe(xs)}")
    return [_data(f"xs[{i}]", x) for i, x in enumerate(xs)]


def _joined(join, values, axis, what: str):
    try:
        return join(values, axis=axis)
    except ValueError:
        shapes = ", ".join(str(np.shape(v)) for v in values)
        raise ValueError(f"xs: expected arrays {what}, got shapes {shapes}") from None


def concatenate(xs, axis: int = 0):
    """The arrays of ``xs`` joined along their existing ``axis``."""
    values = _members(xs)
    _axis(axis, max(np.ndim(values[0]), 1))
    out = _joined(np.concatenate, values, axis,
                  f"of at least one axis and equal shapes outside axis {axis}")
    if not any(isinstance(x, Tensor) for x in xs):
        return out
    ends = np.cumsum([v.shape[axis] for v in values])
    parents = []
    for x, start, end in zip(xs, np.concatenate([[0], ends[:-1]]), ends):
        if isinstance(x, Tensor):
            parents.append((x, lambda g, s=start, e=end: np.take(g, np.arange(s, e), axis=axis)))
    return _record(out, tuple(parents))


def stack(xs, axis: int = 0):
    """The arrays of ``xs`` (all of one shape) joined along a new ``axis``."""
    values = _members(xs)
    _axis(axis, np.ndim(values[0]) + 1)
    out = _joined(np.stack, values, axis, "of one shape")
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
    if not callable(fn):
        raise TypeError(f"fn: expected a function of the leaves, got {_describe(fn)}")
    return _tree_map(fn, tree, rest, ())


def _tree_map(fn, tree, rest, path):
    if isinstance(tree, dict):
        for j, r in enumerate(rest):
            if not isinstance(r, dict) or r.keys() != tree.keys():
                raise _structure_error(j, r, tree, path)
        return {k: _tree_map(fn, v, [r[k] for r in rest], (*path, k)) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        for j, r in enumerate(rest):
            if not isinstance(r, (list, tuple)) or len(r) != len(tree):
                raise _structure_error(j, r, tree, path)
        mapped = [_tree_map(fn, v, [r[i] for r in rest], (*path, i)) for i, v in enumerate(tree)]
        return _rebuild(tree, mapped)
    return fn(tree, *rest)


def _structure_error(j, other, tree, path) -> ValueError:
    def shape(node):
        if isinstance(node, dict):
            return f"a dict with keys {sorted(map(str, node))}"
        if isinstance(node, (list, tuple)):
            return f"a {type(node).__name__} of {len(node)}"
        return f"a leaf ({type(node).__name__})"

    return ValueError(f"rest[{j}]: expected the structure of tree, but at {_path_text('tree', path)} "
                      f"tree has {shape(tree)} and rest[{j}] has {shape(other)}")


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
    if not callable(f):
        raise TypeError(f"f: expected a function returning a scalar loss, got {_describe(f)}")
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)
    if not nums or not all(_is_int(i) and i >= 0 for i in nums) or len(set(nums)) != len(nums):
        raise (ValueError if all(_is_int(i) for i in nums) else TypeError)(
            f"argnums: expected an argument position (an int >= 0) or a non-empty tuple of "
            f"distinct ones, got {_describe(argnums)}")

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
        if loss_value.dtype.kind not in "biuf":
            raise TypeError(f"f: the function must return a scalar loss (a real number, or a "
                            f"tuple starting with one), got {_describe(loss)}")
        if loss_value.ndim != 0:
            raise ValueError(
                f"f: the function must return a scalar loss (or a tuple starting with one), "
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
    """Like ``value_and_grad`` but returns only the gradients (same checks of ``f``, ``argnums``)."""
    vg = value_and_grad(f, argnums)
    return lambda *args: vg(*args)[1]


def numerical_grad(f: Callable[[np.ndarray], Any], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences ``(f(x + eps e_i) - f(x - eps e_i)) / (2 eps)`` for every i.

    ``f`` maps a float64 array to a scalar (a real number). Used to check analytic gradients:
    ``x`` must be finite and ``eps`` a finite number > 0, and a non-finite value of ``f`` is an
    error (a gradient check against NaN would pass or fail for no reason).
    """
    if not callable(f):
        raise TypeError(f"f: expected a function of x returning a scalar, got {_describe(f)}")
    x = as_float_array("x", x)
    check_nonnegative("eps", eps, positive=True)
    x = np.array(x, dtype=np.float64, order="C")  # C order: reshape(-1) below must be a view
    g = np.zeros_like(x)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = _scalar_of(f, x, i, "+")
        flat[i] = old - eps
        down = _scalar_of(f, x, i, "-")
        flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return g


def _scalar_of(f, x, i: int, sign: str) -> float:
    """``f(x)`` as a float, or an error naming ``f`` when it is not one finite real number."""
    out = f(x)
    arr = np.asarray(_val(out))
    if arr.dtype.kind not in "biuf" or arr.size != 1:
        raise ValueError(f"f: expected a scalar (one real number), got {_describe(out)}")
    value = float(arr.reshape(()))
    if not np.isfinite(value):
        raise ValueError(f"f: returned {value} at x with entry {i} (flat) moved by {sign}eps; "
                         "a finite-difference gradient needs finite values")
    return value



# ---------------------------------------------------------------- transformer ops
# Each is one tape node with a hand-written vjp: composing them from the ops above would record
# 5-15 nodes and allocate as many temporaries per call.

def embedding(table, ids):
    """Rows of ``table`` ``[V, D]`` picked by integer ``ids`` ``[...]``: ``[..., D]``.

    The gradient of ``table`` adds up the gradients of every position holding the same id. It
    is computed as ``onehot(ids).T @ g``, one BLAS call; ``np.add.at`` scatters row by row and
    is about 15x slower for the course's vocabularies of a few dozen tokens.
    """
    tv = _data("table", table)
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"ids: expected integer token ids, got dtype {ids.dtype}")
    if np.ndim(tv) != 2:
        raise ValueError(f"table: expected shape [V, D], got {np.shape(tv)}")
    vocab, dim = tv.shape
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"ids: expected values in [0, {vocab}) (the rows of table), got "
                         f"{ids.min()}..{ids.max()}")
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
    xv, wv, bv = _data("x", x), _data("w", w), _data("b", b)
    if np.ndim(wv) != 2:
        raise ValueError(f"w: expected shape [K, N], got {np.shape(wv)}")
    if np.shape(xv)[-1:] != wv.shape[:1]:
        raise ValueError(f"x: expected shape [..., K] with K = {wv.shape[0]} (the rows of w, shape "
                         f"{wv.shape}), got {np.shape(xv)}")
    if np.shape(bv) != wv.shape[1:]:
        raise ValueError(f"b: expected shape ({wv.shape[1]},) (the columns of w, shape {wv.shape}), "
                         f"got {np.shape(bv)}")
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
    xv, gv, bv = _data("x", x), _data("gain", gain), _data("bias", bias)
    check_nonnegative("eps", eps, positive=True)
    if np.ndim(xv) == 0:
        raise ValueError("x: expected shape [..., D], got a scalar")
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
    xv = _data("x", x)
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
    value = _data("qkv", qkv)
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
        mask = as_bool_array("mask", mask)
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
