"""Input checks shared by the public functions: each raises an error naming the argument,
what was expected and what came, so bad input never turns into a silent NaN."""

from __future__ import annotations

import inspect

import numpy as np

__all__ = ["as_float_array", "check_finite", "as_int_array", "as_bool_array", "check_count",
           "check_shape", "check_probability", "check_distribution", "as_rng", "agent_rng",
           "check_nonnegative", "check_logits", "real_scalar", "check_flag", "check_choice",
           "finite_scalar", "check_callable"]


def as_float_array(name: str, x, ndim: int | None = None) -> np.ndarray:
    """``x`` as a real float array (float32 stays float32), finite, optionally with ``ndim`` dims.

    Booleans and integers become float64; complex numbers are refused rather than silently
    losing their imaginary part.
    """
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {arr.dtype}")
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {arr.shape}")
    check_finite(name, arr)
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise if ``arr`` holds NaN or +-inf, saying where the first one is."""
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name}: expected finite values, got {arr[where]} at index {where} "
            f"({int(bad.sum())} non-finite of {arr.size})"
        )


def as_int_array(name: str, x, low: int | None = None, high: int | None = None) -> np.ndarray:
    """``x`` as an integer array with every value in ``[low, high)``."""
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and arr.size and np.all(arr == np.round(arr)):
            raise TypeError(
                f"{name}: expected integers, got dtype {arr.dtype} (cast with .astype(int))"
            )
        raise TypeError(f"{name}: expected an integer array, got dtype {arr.dtype}")
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: values must be >= {low}, got {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: values must be < {high}, got {arr.max()}")
    return arr


def as_bool_array(name: str, x) -> np.ndarray:
    """``x`` as a boolean array; accepts bools or 0/1 integers."""
    arr = np.asarray(x)
    if arr.dtype == np.bool_:
        return arr
    if np.issubdtype(arr.dtype, np.number) and np.all((arr == 0) | (arr == 1)):
        return arr.astype(bool)
    raise TypeError(f"{name}: expected booleans (or 0/1), got dtype {arr.dtype}")


def check_count(name: str, value, low: int = 1) -> int:
    """``value`` as an int, rejecting bools, floats and anything below ``low``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low:
        expected = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise ValueError(f"{name}: expected {expected}, got {value!r}")
    return int(value)


def check_shape(name: str, arr: np.ndarray, shape: tuple, against: str | None = None) -> None:
    """Raise unless ``arr.shape == shape``; ``against`` names what fixed the expected shape."""
    if tuple(arr.shape) != tuple(shape):
        ref = f" (the shape of {against})" if against else ""
        raise ValueError(f"{name}: expected shape {tuple(shape)}{ref}, got {tuple(arr.shape)}")


def check_probability(name: str, value: float, low: float = 0.0, high: float = 1.0) -> float:
    """A scalar in ``[low, high]``, e.g. gamma, lambda, epsilon."""
    value = real_scalar(name, value)
    if not (low <= value <= high):
        raise ValueError(f"{name}: expected a number in [{low}, {high}], got {value}")
    return value


def check_distribution(name: str, probs: np.ndarray, axis: int = -1, atol: float = 1e-6) -> None:
    """Raise unless ``probs`` is non-negative and sums to 1 along ``axis``."""
    check_finite(name, probs)
    if (probs < 0).any():
        raise ValueError(f"{name}: probabilities must be >= 0, got {probs.min()}")
    sums = probs.sum(axis=axis)
    off = np.abs(sums - 1.0) > atol
    if off.any():
        where = tuple(int(i) for i in np.argwhere(off)[0])
        raise ValueError(
            f"{name}: probabilities must sum to 1 along axis {axis}, "
            f"but the row at {where} sums to {np.asarray(sums)[where]:.6g}"
        )


def as_rng(seed, name: str = "seed") -> np.random.Generator:
    """A ``np.random.Generator``: ``seed`` itself if it is one, else ``default_rng(seed)`` for a
    non-negative int (bools, floats and negative numbers are rejected, naming ``name``)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name}: expected a non-negative int or a np.random.Generator, got {seed!r}")
    return np.random.default_rng(int(seed))


def agent_rng(seed) -> np.random.Generator:
    """The agent's own random stream for a run seeded with ``seed``: a child of
    ``SeedSequence(seed)``, independent of the ``default_rng(seed + i)`` streams that seed the
    environment's copies, so the agent's draws never mirror copy 0's start states."""
    if isinstance(seed, np.random.Generator):
        return seed
    as_rng(seed)
    return np.random.default_rng(np.random.SeedSequence(int(seed)).spawn(1)[0])


def real_scalar(name: str, value) -> float:
    """``value`` as a Python float: an int, a float or a 0-d real array (bools, strings and
    complex numbers are refused rather than converted)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                      np.floating)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    return float(value)


def check_nonnegative(name: str, value, positive: bool = False) -> float:
    """A finite real number ``>= 0`` (``> 0`` if ``positive``), e.g. a loss coefficient."""
    value = real_scalar(name, value)
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        expected = "a finite number > 0" if positive else "a finite number >= 0"
        raise ValueError(f"{name}: expected {expected}, got {value}")
    return value


def check_logits(name: str, value, ndim: int | None = None) -> np.ndarray:
    """Logits as a real float array, with the one rule every function here uses for them.

    ``-inf`` is allowed: it is how an action or token is ruled out (probability exactly 0).
    NaN and ``+inf`` are errors (a diverged network), and so is a row that is ``-inf``
    everywhere (no action would be possible). ``value`` is a plain array (for a traced value
    pass its ``stop_gradient``); lists and integer arrays become float64, float16 float32;
    ``ndim`` fixes the number of dimensions, else at least one; the last axis must be non-empty.
    """
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected real-valued logits, got dtype {arr.dtype}")
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    elif arr.dtype == np.float16:  # its range (6.5e4) overflows in a softmax's differences
        arr = arr.astype(np.float32)
    if (ndim is not None and arr.ndim != ndim) or arr.ndim < 1 or arr.shape[-1] == 0:
        expected = f"{ndim} dimensions" if ndim is not None else "shape [..., A] with A >= 1"
        raise ValueError(f"{name}: expected {expected}, got shape {arr.shape}")
    if np.isfinite(arr).all():  # the usual case, in two calls: every rule below holds
        return arr
    bad = np.isnan(arr) | np.isposinf(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}: expected no NaN or +inf (a diverged network?), got {arr[where]} "
                         f"at index {where}")
    dead = np.isneginf(arr).all(axis=-1)
    if dead.any():
        where = tuple(int(i) for i in np.argwhere(dead)[0])
        raise ValueError(f"{name}: the row at {where} is -inf everywhere; no choice would have "
                         "nonzero probability")
    return arr


def check_flag(name: str, value) -> bool:
    """A yes/no setting as a Python bool: ``True``/``False`` (numpy's too) or the ints 0 and 1.
    Anything else is refused rather than read by its truth value (``"False"`` is truthy)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")


def check_choice(name: str, value, choices: tuple):
    """``value`` if it is one of ``choices`` (strings), else an error listing them."""
    if isinstance(value, str) and value in choices:
        return value
    options = ", ".join(repr(c) for c in choices)
    raise ValueError(f"{name}: expected one of {options}, got {type(value).__name__} {value!r}")


def finite_scalar(name: str, value) -> float:
    """``value`` as a finite Python float (see :func:`real_scalar`: bools, strings, complex
    numbers and arrays are refused), e.g. a reward setting or an initial estimate."""
    value = real_scalar(name, value)
    if not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    return value


def check_tree(name: str, tree, floats: bool = False, finite: bool = False) -> list:
    """The leaves of a parameter (or gradient) tree, a nested dict/list/tuple, in
    ``tree_leaves`` order, each checked to be a real numeric array or number (float if
    ``floats``; with no NaN or inf if ``finite``). Traced ``Tensor`` leaves pass as they are
    (``value_and_grad`` checked them). Raises naming the leaf's path, e.g. ``params[0]['w']``,
    so a string, None, object or complex leaf never reaches numpy."""
    leaves: list = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}[{k!r}]")
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")
        else:
            traced = getattr(type(node), "is_traced", False)  # an autodiff Tensor
            dtype = node.dtype if traced or isinstance(node, (np.ndarray, np.generic)) else (
                np.result_type(node) if isinstance(node, (int, float)) else None)
            if dtype is None or dtype.kind not in ("f" if floats else "biuf"):
                expected = "a floating-point array" if floats else "a real numeric array or number"
                got = f"dtype {dtype}" if dtype is not None else type(node).__name__
                raise TypeError(f"{path}: expected {expected}, got {got}")
            if finite and not traced:
                # one sum answers "all finite?" for almost every array; the exact test runs
                # only when it is not finite
                with np.errstate(over="ignore", invalid="ignore"):
                    suspect = not np.isfinite(np.sum(node))
                if suspect and not np.isfinite(node).all():
                    bad = int((~np.isfinite(node)).sum())
                    raise ValueError(f"{path}: expected finite values, got NaN or inf "
                                     f"({bad} of {np.size(node)} entries)")
            leaves.append(node)

    walk(tree, name)
    return leaves


def float_dtype(name: str, dtype) -> np.dtype:
    """``dtype`` as a floating-point ``np.dtype`` (float16/32/64): parameters of another dtype
    would be rounded to integers or lose their imaginary part when created."""
    try:
        result = np.dtype(dtype)
    except TypeError:
        result = None
    if result is None or result.kind != "f":
        raise TypeError(f"{name}: expected a floating-point dtype such as np.float32, got {dtype!r}")
    return result


def check_callable(name: str, fn, n_args: int | None = None, what: str = "a function"):
    """``fn`` if it is callable and, when ``n_args`` is given and its signature can be read,
    accepts that many positional arguments; a string, None, a class's instance without
    ``__call__`` or a function of the wrong arity is refused naming ``name`` (else the call
    would fail later with an error about some other object)."""
    if not callable(fn):
        raise TypeError(f"{name}: expected {what}, got {type(fn).__name__} {_short(fn)}")
    if n_args is not None:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):  # some builtins have no readable signature
            return fn
        try:
            signature.bind(*range(n_args))
        except TypeError as err:
            raise TypeError(f"{name}: expected {what}, taking {n_args} positional argument"
                            f"{'s' if n_args != 1 else ''}; its signature is {signature} ({err})") from None
    return fn


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
