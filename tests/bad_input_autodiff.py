"""Bad-input specs for rlcourse.core.autodiff.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.

The ops are elementwise maths and shape plumbing: a NaN or inf in their data is propagated (the
documented rule "NaN propagates, never silently dropped", checked in tests/test_autodiff.py), so
NaN and inf are not bad data here; complex, string and object data are, and so are shapes that
do not fit together, axes out of range and non-integer indices.
"""

from __future__ import annotations

import math

import numpy as np
from bad_input_kinds import EXTRA, SHORT, F, ints_below, without

from rlcourse.core.autodiff import Tensor

# ---------------------------------------------------------------------------------------------
# Kinds of this layer

# Elementwise data of any shape: NaN and inf propagate, any number of axes is fine.
DATA = without("floats", "NaN", "inf", SHORT, EXTRA)


def _objects(valid):
    return [("objects", np.array([object()] * max(np.size(valid), 1), dtype=object))]


def _softmax_data(valid):
    """Logits for the softmax family: NaN propagates, but +inf or a row that is -inf everywhere
    has no softmax at all (inf - inf)."""
    return without("logits", "NaN")(valid) + _objects(valid)


def axes_of(ndim, repeated=False):
    """An ``axis`` argument of an array with ``ndim`` axes (an int; a tuple too if ``repeated``)."""
    def bads(valid):
        out = [("out of range", ndim), ("below -ndim", -ndim - 1), ("a float", 1.0),
               ("a bool", True), ("a string", "1"), ("a list", [0])]
        if repeated:
            out.append(("a repeated axis", (0, -ndim)))
        return out
    return bads


def _flag(valid):
    return [("a string", "False"), ("None", None), ("an array", np.array([True, False]))]


def _callable(valid):
    return [("a string", "f"), ("None", None), ("an array", np.ones(2))]


def _argnums(valid):
    return [("negative", -1), ("a float", 0.0), ("a bool", True), ("a string", "0"),
            ("an empty tuple", ()), ("a repeated index", (0, 0)), ("None", None)]


def _parents(valid):
    leaf = Tensor(np.ones(2))
    return [("a string", "ab"), ("not pairs", (leaf,)),
            ("a pair without a Tensor", ((np.ones(2), np.negative),)),
            ("a vjp that is not callable", ((leaf, "g"),)), ("None", None)]


def _scalar_function(valid):
    return [("a string", "f"), ("None", None), ("a function returning a vector", lambda v: v * 2.0),
            ("a function returning a string", lambda v: "loss")]


def _low(valid):
    return [("NaN", math.nan), ("a string", "0"), ("complex", 1j), ("above hi", 1.0),
            ("an array with a NaN", np.array([0.0, np.nan, 0.0]))]


def _high(valid):
    return [("NaN", math.nan), ("a string", "1"), ("complex", 1j), ("below lo", -1.0)]


def _new_shape(valid):
    return [("another size", (4, 2)), ("a float", (3.0, 2)), ("a string", "6"),
            ("two -1", (-1, -1)), ("negative", (-3, -2)), ("None", None)]


def _axes(valid):
    return [("repeated", (0, 0, 1)), ("out of range", (0, 1, 3)), ("too few", (0, 1)),
            ("a float", (0.0, 1, 2)), ("a string", "012"), ("a bool", (True, 0, 2))]


def _arrays(valid):
    """A list of arrays to join: not a list, empty, members that do not fit or are not real."""
    a, b = (np.asarray(v) for v in valid)
    return [("empty", []), ("a bare array", a), ("a string", "ab"),
            ("mismatched shapes", [a, b[..., :-1]]), ("different ndim", [a, b[0]]),
            ("a complex member", [a, b.astype(complex)]), ("a string member", [a, "ab"]),
            ("an object member", [a, np.array([object()] * 3, dtype=object)])]


def _mask(valid):
    dark = np.array(valid, dtype=bool)
    dark[1] = False
    return without("bools")(valid) + [("a row all False", dark)]


def _with_empty(kind, shape):
    def bads(valid):
        return kind(valid) + [("empty", np.zeros(shape))]
    return bads


# Arrays that broadcast: a short row no longer broadcasts against the other input, an extra
# axis still does (to a larger result).
BROADCAST = without("floats", "NaN", "inf", EXTRA)

SPECS: dict[str, tuple] = {
    "Tensor": (lambda: dict(value=F(2, 3), parents=()), dict(value=DATA, parents=_parents)),
    "value_and_grad": (lambda: dict(f=lambda p: p.sum(), argnums=0),
                       dict(f=_callable, argnums=_argnums)),
    "grad": (lambda: dict(f=lambda p: p.sum(), argnums=0), dict(f=_callable, argnums=_argnums)),
    "numerical_grad": (lambda: dict(f=lambda v: float(np.sum(v * v)), x=F(3), eps=1e-6),
                       dict(f=_scalar_function, x=without("floats", SHORT, EXTRA),
                            eps="positive")),
    "tree_map": (lambda: dict(fn=lambda v: v, tree={"a": F(2), "b": [F(3)]}),
                 dict(fn=_callable)),
    **{name: (lambda: dict(x=F(2, 3)), dict(x=DATA)) for name in
       ("tanh", "relu", "sigmoid", "exp", "square", "log_sigmoid", "gelu")},
    **{name: (lambda: dict(x=F(2, 3, low=0.1, high=2.0)), dict(x=DATA)) for name in ("log", "sqrt")},
    **{name: (lambda: dict(x=F(2, 3), axis=-1), dict(x=_softmax_data, axis=axes_of(2)))
       for name in ("softmax", "log_softmax")},
    "logsumexp": (lambda: dict(x=F(2, 3), axis=-1, keepdims=False),
                  dict(x=DATA, axis=axes_of(2, repeated=True), keepdims=_flag)),
    "mean": (lambda: dict(x=F(2, 3), axis=-1, keepdims=False),
             dict(x=_with_empty(DATA, (2, 0)), axis=axes_of(2, repeated=True), keepdims=_flag)),
    **{name: (lambda: dict(a=F(3), b=F(3, seed=1)), dict(a=BROADCAST, b=BROADCAST))
       for name in ("minimum", "maximum")},
    "where": (lambda: dict(condition=np.array([True, False, True]), a=F(3), b=F(3, seed=1)),
              dict(condition="bools", a=BROADCAST, b=BROADCAST)),
    "clip": (lambda: dict(x=F(3), lo=-0.5, hi=0.5), dict(x=DATA, lo=_low, hi=_high)),
    "take_along_axis": (lambda: dict(x=F(3, 4), indices=np.array([[0, 3], [3, 1], [2, 2]]), axis=1),
                        dict(x=without("floats", "NaN", "inf"), indices=ints_below(4),
                             axis=axes_of(2))),
    "reshape": (lambda: dict(x=F(2, 3), shape=(3, 2)),
                dict(x=without("floats", "NaN", "inf", EXTRA), shape=_new_shape)),
    "transpose": (lambda: dict(x=F(2, 3, 4), axes=(2, 0, -2)),
                  dict(x=without("floats", "NaN", "inf", SHORT), axes=_axes)),
    "concatenate": (lambda: dict(xs=[F(2, 3), F(1, 3, seed=1)], axis=0),
                    dict(xs=_arrays, axis=axes_of(2))),
    "stack": (lambda: dict(xs=[F(2, 3), F(2, 3, seed=1)], axis=-1),
              dict(xs=_arrays, axis=axes_of(3))),
    "embedding": (lambda: dict(table=F(5, 3), ids=np.array([[0, 4], [2, 2]])),
                  dict(table=without("floats", "NaN", "inf"), ids=ints_below(5, SHORT))),
    "affine": (lambda: dict(x=F(2, 4), w=F(4, 3, seed=1), b=F(3, seed=2)),
               dict(x=without("floats", "NaN", "inf", SHORT), w=without("floats", "NaN", "inf"),
                    b=without("floats", "NaN", "inf"))),
    "layer_norm": (lambda: dict(x=F(2, 5), gain=F(5, seed=1), bias=F(5, seed=2), eps=1e-5),
                   dict(x=without("floats", "NaN", "inf", SHORT),
                        gain=without("floats", "NaN", "inf"), bias=without("floats", "NaN", "inf"),
                        eps="positive")),
    "self_attention": (lambda: dict(qkv=F(2, 3, 12), heads=2, mask=np.tril(np.ones((3, 3), bool))),
                       dict(qkv=without("floats", "NaN", "inf", SHORT), heads="count",
                            mask=_mask)),
}

EXEMPT: dict[str, str] = {
    "tree_leaves": "every Python object is a tree (a non-container is one leaf), so it has no "
                   "input a user could get wrong (tests/test_autodiff.py::test_tree_leaves_and_"
                   "tree_map_structures)",
    "stop_gradient": "the identity on every value that is not a Tensor (value_and_grad maps it over "
                     "auxiliary outputs, which may hold anything), so no input is wrong; a Tensor's "
                     "value is checked when it is made (the Tensor spec above; "
                     "tests/test_autodiff.py::test_stop_gradient_blocks_flow, "
                     "test_named_tuples_pass_through_trees_and_aux_outputs)",
}
