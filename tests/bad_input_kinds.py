"""Bad-input kinds and small fixtures shared by the spec modules of ``test_bad_input.py``.

A kind turns an argument's valid value into the bad values a hostile user tries, as (label, bad
value) pairs; each bad value must make the call raise ValueError or TypeError naming the argument.
"""

from __future__ import annotations

import math

import numpy as np

# ---------------------------------------------------------------------------------------------
# Bad values by kind. Each maker takes the valid value and returns (label, bad value) pairs.


def _float_array_bads(valid):
    arr = np.asarray(valid, dtype=np.float64)
    out = []
    if arr.size:
        nan, inf = arr.copy(), arr.copy()
        nan.flat[0], inf.flat[-1] = np.nan, np.inf
        out += [("NaN", nan), ("inf", inf)]
    out += [("complex", arr.astype(complex) + 1j), ("strings", arr.astype(str)),
            ("an extra axis", arr[..., None] if arr.ndim else arr.reshape(1, 1)),
            ("objects", np.array([object()] * max(arr.size, 1), dtype=object))]
    if arr.ndim >= 1 and arr.shape[0] > 1:
        out.append(("one row short", arr[:-1]))
    return out


def _bool_array_bads(valid):
    arr = np.asarray(valid)
    return [("floats 0.5", np.full(arr.shape, 0.5)), ("strings", arr.astype(str)),
            ("one row short", arr[:-1] if arr.ndim and arr.shape[0] > 1 else arr[..., None])]


def _int_array_bads(valid, high=None):
    arr = np.asarray(valid)
    out = [("floats", arr.astype(float) + 0.5), ("negative", arr - arr.max() - 1),
           ("strings", arr.astype(str))]
    if high is not None:
        out.append(("out of range", np.full(arr.shape, high)))
    if arr.ndim and arr.shape[0] > 1:
        out.append(("one row short", arr[:-1]))
    return out


def _unit_bads(valid):
    return [("below 0", -0.1), ("above 1", 1.5), ("NaN", math.nan), ("a string", "0.5")]


def _count_bads(valid):
    return [("zero", 0), ("negative", -3), ("a float", 2.5), ("a bool", True), ("a string", "3")]


def _positive_bads(valid):
    return [("zero", 0.0), ("negative", -1.0), ("NaN", math.nan), ("inf", math.inf),
            ("a string", "1")]


def _nonneg_bads(valid):
    return [("negative", -1.0), ("NaN", math.nan), ("inf", math.inf), ("a string", "1")]


def _finite_bads(valid):
    return [("NaN", math.nan), ("inf", math.inf), ("a string", "1")]


def _rng_bads(valid):
    return [("an int", 0), ("a string", "rng"), ("None", None)]


def _seed_bads(valid):
    return [("negative", -1), ("a float", 1.5), ("a string", "0")]


def _probs_bads(valid):
    arr = np.asarray(valid, dtype=np.float64)
    off = arr * 0.5
    neg = arr.copy()
    neg.flat[0], neg.flat[1] = -0.5, neg.flat[1] + 0.5 + neg.flat[0]
    nan = arr.copy()
    nan.flat[0] = np.nan
    return [("rows not summing to 1", off), ("a negative probability", neg), ("NaN", nan),
            ("complex", arr.astype(complex))]


def _logits_bads(valid):
    arr = np.asarray(valid, dtype=np.float64)
    nan, pinf, dead = arr.copy(), arr.copy(), arr.copy()
    nan.flat[0], pinf.flat[0] = np.nan, np.inf
    dead[..., :] = -np.inf
    return [("NaN", nan), ("+inf", pinf), ("a row all -inf", dead), ("complex", arr.astype(complex)),
            ("strings", arr.astype(str))]


def _callable_bads(valid):
    return [("a string", "fn"), ("None", None)]


KINDS = {
    "floats": _float_array_bads, "bools": _bool_array_bads, "ints": _int_array_bads,
    "unit": _unit_bads, "count": _count_bads, "positive": _positive_bads,
    "nonneg": _nonneg_bads, "finite": _finite_bads, "rng": _rng_bads, "seed": _seed_bads,
    "probs": _probs_bads, "logits": _logits_bads, "callable": _callable_bads,
}


def ints_below(high, *skip):
    """The kind of an integer array whose values must lie in [0, high)."""
    return without(lambda valid: _int_array_bads(valid, high), *skip)


def without(kind, *skip):
    """``kind`` minus the bad inputs labelled ``skip``: for an argument whose length or number
    of axes is free (an elementwise loss takes any shape; a window of rewards any length)."""
    maker = KINDS[kind] if isinstance(kind, str) else kind
    return lambda valid: [(label, bad) for label, bad in maker(valid) if label not in skip]


SHORT, EXTRA = "one row short", "an extra axis"


# ---------------------------------------------------------------------------------------------
# Specs: name -> (valid keyword arguments (a function, so arrays are fresh), kinds by argument)

RNG = np.random.default_rng


def F(*shape, low=-1.0, high=1.0, seed=0):
    return RNG(seed).uniform(low, high, size=shape)


def uniform_rows(n, a):
    return np.full((n, a), 1.0 / a)


def mdp2():
    """Two states, two actions: P [S, A, S'] and R [S, A]."""
    P = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.0, 1.0]]])
    return P, F(2, 2, seed=7)
