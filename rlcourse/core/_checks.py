"""Input checks shared by the public functions: each raises an error naming the argument,
what was expected and what came, so bad input never turns into a silent NaN."""

from __future__ import annotations

import numpy as np

__all__ = ["as_float_array", "check_finite", "as_int_array", "as_bool_array", "check_count",
           "check_shape", "check_probability", "check_distribution", "as_rng", "agent_rng",
           "check_nonnegative", "check_logits", "real_scalar", "check_flag", "check_float_dtype"]


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


def check_flag(name: str, value, none_ok: bool = False) -> bool | None:
    """``value`` as a bool: True or False (numpy bools too; ``None`` too if ``none_ok``).

    Anything else is refused: a string such as ``"False"`` is truthy and would silently turn the
    setting on."""
    if value is None and none_ok:
        return None
    if not isinstance(value, (bool, np.bool_)):
        expected = "True, False or None" if none_ok else "True or False"
        raise TypeError(f"{name}: expected {expected}, got {type(value).__name__} {value!r}")
    return bool(value)


def check_float_dtype(name: str, dtype) -> np.dtype:
    """``dtype`` as a floating-point ``np.dtype`` (e.g. ``np.float32``); integer dtypes would
    truncate every update and complex ones are not real numbers."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise TypeError(f"{name}: expected a floating-point dtype such as np.float32, got {dtype!r}")
    return dt
