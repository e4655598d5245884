"""Every differentiable op against central finite differences, broadcasting included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlcourse as rc
from rlcourse.core import autodiff as ad

SETTINGS = settings(max_examples=25, deadline=None)


def check_grad(loss, params, rtol=1e-5, atol=1e-6):
    """Compare value_and_grad with central differences on every leaf of a dict of arrays."""
    value, grads = rc.value_and_grad(loss)(params)
    assert np.isclose(value, float(loss({k: v.copy() for k, v in params.items()})))
    for key in params:
        def f(x, key=key):
            return loss({**params, key: x})
        numeric = rc.numerical_grad(f, params[key])
        np.testing.assert_allclose(grads[key], numeric, rtol=rtol, atol=atol, err_msg=key)


shapes = st.sampled_from([(), (3,), (2, 3), (4, 1), (1, 3), (2, 1, 3)])
broadcast_pairs = st.sampled_from([
    ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((4, 1), (1, 3)), ((3,), ()),
    ((2, 1, 3), (4, 1)), ((), (2, 2)),
])


def arrays(rng, shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape)


@SETTINGS
@given(pair=broadcast_pairs, seed=st.integers(0, 10_000),
       op=st.sampled_from(["add", "sub", "mul", "div", "minimum", "maximum"]))
def test_binary_ops_with_broadcasting(pair, seed, op):
    rng = np.random.default_rng(seed)
    a, b = arrays(rng, pair[0]), arrays(rng, pair[1])
    if op == "div":
        b = np.sign(b) * (np.abs(b) + 0.5)  # keep away from 0
    if op in ("minimum", "maximum"):
        b = b + 0.01  # keep away from ties, where the derivative does not exist
    fn = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y, "minimum": rc.minimum, "maximum": rc.maximum,
    }[op]
    weights = arrays(rng, np.broadcast_shapes(a.shape, b.shape))
    check_grad(lambda p: rc.sum(fn(p["a"], p["b"]) * weights), {"a": a, "b": b})


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 10_000), op=st.sampled_from(
    ["tanh", "relu", "sigmoid", "exp", "log", "sqrt", "square", "abs", "log_sigmoid", "neg", "pow3"]))
def test_unary_ops(shape, seed, op):
    rng = np.random.default_rng(seed)
    x = arrays(rng, shape)
    if op in ("log", "sqrt"):
        x = np.abs(x) + 0.3
    if op in ("relu", "abs"):
        x = x + np.where(np.abs(x) < 0.05, 0.1, 0.0)  # stay off the kink
    fn = {"neg": lambda v: -v, "pow3": lambda v: v**3}.get(op) or getattr(rc, op)
    weights = arrays(rng, shape)
    check_grad(lambda p: rc.sum(fn(p["x"]) * weights), {"x": x})


@SETTINGS
@given(seed=st.integers(0, 10_000), axis=st.sampled_from([0, 1, -1]),
       op=st.sampled_from(["log_softmax", "softmax", "logsumexp"]))
def test_softmax_family(seed, axis, op):
    rng = np.random.default_rng(seed)
    x = arrays(rng, (3, 4), -3, 3)
    fn = getattr(rc, op)
    out_shape = fn(x, axis=axis).shape
    weights = arrays(rng, out_shape)
    check_grad(lambda p: rc.sum(fn(p["x"], axis=axis) * weights), {"x": x})


@SETTINGS
@given(seed=st.integers(0, 10_000), axis=st.sampled_from([None, 0, 1, (0, 1)]),
       keepdims=st.booleans(), op=st.sampled_from(["sum", "mean"]))
def test_reductions(seed, axis, keepdims, op):
    rng = np.random.default_rng(seed)
    x = arrays(rng, (3, 4))
    fn = getattr(rc, op)
    weights = arrays(rng, np.shape(fn(x, axis=axis, keepdims=keepdims)))
    check_grad(lambda p: rc.sum(fn(p["x"], axis=axis, keepdims=keepdims) * weights), {"x": x})


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)),
                                    ((3,), (3,)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 2))])
def test_matmul_shapes(shapes):
    rng = np.random.default_rng(0)
    a, b = arrays(rng, shapes[0]), arrays(rng, shapes[1])
    weights = arrays(rng, np.shape(a @ b))
    check_grad(lambda p: rc.sum((p["a"] @ p["b"]) * weights), {"a": a, "b": b})


def test_indexing_slicing_reshape_concat_stack_transpose():
    rng = np.random.default_rng(1)
    x, y = arrays(rng, (4, 3)), arrays(rng, (2, 3))
    w = arrays(rng, (12,))

    def loss(p):
        picked = p["x"][np.array([0, 2, 2, 3])]  # a repeated row must get its gradient twice
        sliced = p["x"][1:3, ::2]
        joined = rc.concatenate([picked, p["y"]], axis=0)
        stacked = rc.stack([p["y"], p["y"] * 2], axis=1)
        return (rc.sum(rc.reshape(joined[:4], (12,)) * w) + rc.sum(sliced**2)
                + rc.sum(stacked.T * 0.5) + rc.sum(p["x"] @ rc.transpose(p["y"])))

    check_grad(loss, {"x": x, "y": y})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis_with_repeats(axis):
    rng = np.random.default_rng(2)
    x = arrays(rng, (3, 4))
    idx_shape = (2, 4) if axis == 0 else (3, 3)
    idx = rng.integers(0, x.shape[axis], size=idx_shape)
    idx.flat[0] = idx.flat[1] = 0  # force a repeat
    weights = arrays(rng, idx_shape)
    check_grad(lambda p: rc.sum(rc.take_along_axis(p["x"], idx, axis=axis) * weights), {"x": x})


def test_where_routes_gradient_to_chosen_branch():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    cond = np.array([True, False, True])
    grads = rc.grad(lambda p: rc.sum(rc.where(cond, p["a"], p["b"])))({"a": a, "b": b})
    np.testing.assert_array_equal(grads["a"], [1, 0, 1])
    np.testing.assert_array_equal(grads["b"], [0, 1, 0])


def test_minimum_maximum_route_to_the_chosen_input_and_ties_to_the_first():
    a, b = np.array([1.0, 5.0, 2.0]), np.array([3.0, 4.0, 2.0])
    g_min = rc.grad(lambda p: rc.sum(rc.minimum(p["a"], p["b"])))({"a": a, "b": b})
    g_max = rc.grad(lambda p: rc.sum(rc.maximum(p["a"], p["b"])))({"a": a, "b": b})
    np.testing.assert_array_equal(g_min["a"], [1, 0, 1])
    np.testing.assert_array_equal(g_min["b"], [0, 1, 0])
    np.testing.assert_array_equal(g_max["a"], [0, 1, 1])
    np.testing.assert_array_equal(g_max["b"], [1, 0, 0])


def test_clip_has_zero_gradient_outside_its_range():
    x = np.array([0.5, 0.8, 1.0, 1.2, 1.5])
    g = rc.grad(lambda x: rc.sum(rc.clip(x, 0.8, 1.2) * 3.0))(x)
    np.testing.assert_array_equal(g, [0, 3, 3, 3, 0])


def test_stop_gradient_blocks_flow():
    x = np.array([1.0, 2.0])
    g = rc.grad(lambda x: rc.sum(x * rc.stop_gradient(x)))(x)
    np.testing.assert_array_equal(g, x)  # d/dx of x * const(x) is the constant, not 2x


@pytest.mark.parametrize("op", ["log_softmax", "logsumexp", "log_sigmoid", "softmax", "sigmoid"])
def test_stable_at_large_magnitudes(op):
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -999.0, 1000.0]])
    value, g = rc.value_and_grad(lambda x: rc.sum(getattr(rc, op)(x) * np.arange(1, x.shape[-1] + 1)
                                                    if op != "logsumexp" else getattr(rc, op)(x)))(x)
    assert np.isfinite(value)
    assert np.isfinite(g).all()
    if op == "log_sigmoid":
        np.testing.assert_allclose(rc.log_sigmoid(np.array([1000.0, -1000.0])), [0.0, -1000.0])
    if op == "logsumexp":
        np.testing.assert_allclose(rc.logsumexp(x, axis=-1), [1000.0, 1000.0])


def test_float32_stays_float32_and_float64_is_default():
    p32 = {"w": np.ones((2, 2), np.float32)}
    value, g = rc.value_and_grad(lambda p: rc.sum(rc.tanh(p["w"] @ np.ones(2, np.float32))))(p32)
    assert g["w"].dtype == np.float32
    assert rc.tanh(np.ones(2, np.float32)).dtype == np.float32
    g64 = rc.grad(lambda p: rc.sum(p["w"] * 2.0))({"w": np.ones(2)})
    assert g64["w"].dtype == np.float64


def test_nested_params_and_tuple_output():
    params = {"layers": [{"w": np.ones(2)}, {"w": np.full(2, 2.0)}], "scale": np.array(3.0)}

    def loss(p):
        out = rc.sum(p["layers"][0]["w"] * p["layers"][1]["w"]) * p["scale"]
        return out, {"aux": out * 2}

    (value, aux), grads = rc.value_and_grad(loss)(params)
    assert value == 12.0 and float(aux["aux"]) == 24.0
    np.testing.assert_array_equal(grads["layers"][0]["w"], [6.0, 6.0])
    np.testing.assert_array_equal(grads["layers"][1]["w"], [3.0, 3.0])
    assert float(grads["scale"]) == 4.0


def test_unused_params_get_zero_gradient_and_argnums():
    g = rc.grad(lambda p: rc.sum(p["a"]))({"a": np.ones(2), "b": np.ones(3)})
    np.testing.assert_array_equal(g["b"], np.zeros(3))
    ga, gb = rc.grad(lambda a, b: rc.sum(a * b), argnums=(0, 1))(np.full(2, 2.0), np.full(2, 5.0))
    np.testing.assert_array_equal(ga, [5.0, 5.0])
    np.testing.assert_array_equal(gb, [2.0, 2.0])


def test_non_scalar_loss_raises():
    with pytest.raises(ValueError, match="scalar loss.*shape \\(3,\\)"):
        rc.value_and_grad(lambda x: x * 2)(np.ones(3))


def test_integer_params_raise():
    with pytest.raises(TypeError, match=r"params\['w'\].*floating-point.*int"):
        rc.value_and_grad(lambda p: rc.sum(p["w"]))({"w": np.arange(3)})


def test_nan_params_raise():
    with pytest.raises(ValueError, match=r"params\[0\]\[1\].*NaN"):
        rc.value_and_grad(lambda p: rc.sum(p[0][1]))([[np.ones(2), np.array([1.0, np.nan])]])


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError):
        rc.value_and_grad(lambda p: rc.sum(p["a"] @ p["b"]))({"a": np.ones((2, 3)), "b": np.ones((2, 3))})


def test_named_tuples_pass_through_trees_and_aux_outputs():
    from typing import NamedTuple

    class Pair(NamedTuple):
        loss: object
        extra: object

    (value, aux), g = rc.value_and_grad(
        lambda p: (rc.sum(p.loss * 2.0), Pair(p.loss * 3.0, 1.0)))(Pair(np.ones(2), np.zeros(1)))
    assert value == 4.0 and isinstance(aux, Pair)
    np.testing.assert_array_equal(aux.loss, [3.0, 3.0])
    assert isinstance(g, Pair)
    np.testing.assert_array_equal(g.loss, [2.0, 2.0])


def _check_grad(f, x):
    """``value_and_grad(f)`` against central differences of ``f`` on plain arrays."""
    _, g = ad.value_and_grad(f)(x)
    np.testing.assert_allclose(g, ad.numerical_grad(lambda v: float(f(v)), x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("axes", [(-1, 0), (1, -2), (-1, -3, -2), (2, 0, 1)])
def test_transpose_with_negative_axes(axes):
    x = np.random.default_rng(0).normal(size=(2, 3) if len(axes) == 2 else (2, 3, 4))
    weights = np.random.default_rng(1).normal(size=np.transpose(x, axes).shape)
    _check_grad(lambda p: ad.sum(ad.transpose(p, axes) * weights), x)


@pytest.mark.parametrize(("x_shape", "indices"), [
    ((2, 3), [[0, 0, 1]]),           # indices broadcast over x's rows and repeat an index
    ((1, 3), [[2, 2], [0, 2]]),      # x broadcast over the indices' rows
    ((2, 3), [[1], [1]]),            # one pick per slice (the fast path)
    ((3, 2), [[0, 1], [0, 1], [1, 1]]),
])
def test_take_along_axis_broadcasting_and_repeats(x_shape, indices):
    x = np.random.default_rng(0).normal(size=x_shape)
    indices = np.array(indices)
    weights = np.random.default_rng(1).normal(size=np.take_along_axis(x, indices, 1).shape)
    _check_grad(lambda p: ad.sum(ad.take_along_axis(p, indices, axis=1) * weights), x)


def test_power_with_array_exponents_and_traced_exponents():
    rng = np.random.default_rng(0)
    base, exponent = rng.uniform(0.5, 2.0, size=3), rng.uniform(-1, 2, size=(2, 3))
    _check_grad(lambda p: ad.sum(p ** exponent), base)          # exponent broadcasts over the base
    _check_grad(lambda p: ad.sum(2.0 ** p), exponent)           # a plain base, a traced exponent
    _check_grad(lambda p: ad.sum(base ** p), exponent)
    _check_grad(lambda p: ad.sum(p ** p), base)                 # both traced


@pytest.mark.parametrize("op", [ad.minimum, ad.maximum])
def test_minimum_and_maximum_propagate_nan_from_either_side(op):
    assert np.isnan(op(np.nan, 1.0)) and np.isnan(op(1.0, np.nan))
    _, g = ad.value_and_grad(lambda p: ad.sum(op(p, np.array([np.nan, 0.0]))))(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0 if op is ad.maximum else 0.0])


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp", "tanh", "exp", "sigmoid"])
def test_ops_accept_lists(op):
    np.testing.assert_allclose(getattr(ad, op)([1.0, 2.0]), getattr(ad, op)(np.array([1.0, 2.0])))
