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
                                    ((3,), (3,)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 2)),
                                    ((2, 3, 4, 5), (5, 2)), ((2, 3, 4, 5), (2, 1, 5, 3)),
                                    ((3, 4, 5), (2, 1, 5, 2)), ((1, 3, 4, 5), (2, 3, 5, 4))])
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


# ---------------------------------------------------------------- transformer ops


def _attention_by_composition(qkv, heads, mask):
    """The reference: self_attention written with the generic ops (split, matmul, softmax)."""
    batch, length, three_d = qkv.shape
    dim = three_d // 3
    dh = dim // heads
    split = rc.transpose(rc.reshape(qkv, (batch, length, 3, heads, dh)), (2, 0, 3, 1, 4))
    q, k, v = split[0], split[1], split[2]
    scores = (q @ rc.transpose(k, (0, 1, 3, 2))) * (1 / np.sqrt(dh))
    if mask is not None:
        scores = rc.where(np.broadcast_to(mask, (batch, length, length))[:, None], scores, -np.inf)
    out = rc.softmax(scores, axis=-1) @ v
    return rc.reshape(rc.transpose(out, (0, 2, 1, 3)), (batch, length, dim))


def _causal_padding_mask(rng, batch, length):
    visible = rng.random((batch, length)) < 0.7
    causal = np.tril(np.ones((length, length), dtype=bool))
    return causal & (visible[:, None, :] | np.eye(length, dtype=bool))


@pytest.mark.parametrize("heads, masked", [(1, False), (2, True), (3, True)])
def test_self_attention_gradient_and_reference(heads, masked):
    rng = np.random.default_rng(heads)
    qkv = arrays(rng, (2, 5, 3 * 6))
    mask = _causal_padding_mask(rng, 2, 5) if masked else None
    weights = arrays(rng, (2, 5, 6))
    np.testing.assert_allclose(rc.self_attention(qkv, heads, mask),
                               _attention_by_composition(qkv, heads, mask), rtol=1e-12, atol=1e-12)
    check_grad(lambda p: rc.sum(rc.self_attention(p["qkv"], heads, mask) * weights), {"qkv": qkv})


def test_self_attention_is_exact_for_scores_too_large_for_the_fast_shift():
    """Scores far above a row's diagonal (exp overflows) or a hidden diagonal with scores far
    below it (the row's sum underflows) take the exact row-max path, with the same result."""
    rng = np.random.default_rng(7)
    qkv = arrays(rng, (2, 4, 6)) * 30.0
    causal = np.tril(np.ones((4, 4), dtype=bool))
    off_diagonal = np.ones((4, 4), dtype=bool) & ~np.eye(4, dtype=bool)
    for mask in (causal, off_diagonal):
        out = rc.self_attention(qkv, 1, mask)
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, _attention_by_composition(qkv, 1, mask), rtol=1e-10, atol=1e-10)


def test_self_attention_hidden_keys_are_exactly_ignored():
    rng = np.random.default_rng(1)
    qkv = arrays(rng, (1, 4, 6))
    mask = np.tril(np.ones((4, 4), dtype=bool))
    mask[:, 1] = np.eye(4, dtype=bool)[:, 1]  # key 1 is seen by query 1 only (like a PAD)
    weights = arrays(rng, (1, 4, 2))
    loss = lambda p: rc.sum(rc.self_attention(p["qkv"], 1, mask)[:, 2:] * weights[:, 2:])
    value, g = rc.value_and_grad(loss)({"qkv": qkv})
    changed = qkv.copy()
    changed[0, 1] += 100.0  # the hidden token's query, key and value
    assert rc.value_and_grad(loss)({"qkv": changed})[0] == value
    assert (g["qkv"][0, 1] == 0).all() and np.isfinite(g["qkv"]).all()


def test_self_attention_float32_and_bad_input():
    qkv = np.ones((2, 3, 12), np.float32)
    assert rc.self_attention(qkv, 2).dtype == np.float32
    g = rc.grad(lambda p: rc.sum(rc.self_attention(p, 2)))(qkv)
    assert g.dtype == np.float32
    with pytest.raises(ValueError, match="heads: expected a positive divisor of D = 4, got 3"):
        rc.self_attention(qkv, 3)
    with pytest.raises(ValueError, match=r"qkv: expected shape \[B, T, 3D\]"):
        rc.self_attention(np.ones((2, 3, 4)), 1)
    with pytest.raises(ValueError, match="mask: some query sees no key"):
        rc.self_attention(qkv, 2, np.triu(np.ones((3, 3), dtype=bool), 1))
    with pytest.raises(ValueError, match="mask: expected a shape broadcastable"):
        rc.self_attention(qkv, 2, np.ones((4, 4), dtype=bool))


def test_softmax_with_minus_inf_gives_exact_zeros_and_finite_gradients():
    x = np.array([[0.5, 3.0, 1.0], [4.0, 2.0, -1.0]])
    keep = np.array([[True, False, True], [False, True, False]])
    p = rc.softmax(rc.where(keep, x, -np.inf))
    assert p[0, 1] == 0.0 and p[1, 0] == 0.0 and p[1, 1] == 1.0
    weights = np.arange(6.0).reshape(2, 3)
    g = rc.grad(lambda v: rc.sum(rc.softmax(rc.where(keep, v, -np.inf)) * weights))(x)
    assert np.isfinite(g).all() and g[0, 1] == 0.0 and (g[1] == 0.0).all()
    check_grad(lambda p: rc.sum(rc.softmax(rc.where(keep, p["x"], -np.inf)) * weights), {"x": x})


def _layer_norm_by_hand(x, gain, bias, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * gain + bias


def test_layer_norm_value_gradient_and_dtype():
    rng = np.random.default_rng(3)
    x, gain, bias = arrays(rng, (2, 3, 5)), arrays(rng, (5,)), arrays(rng, (5,))
    np.testing.assert_allclose(rc.layer_norm(x, gain, bias), _layer_norm_by_hand(x, gain, bias),
                               rtol=1e-12, atol=1e-12)
    weights = arrays(rng, (2, 3, 5))
    check_grad(lambda p: rc.sum(rc.layer_norm(p["x"], p["gain"], p["bias"]) * weights),
               {"x": x, "gain": gain, "bias": bias})
    # only some inputs traced; a 1-D input
    check_grad(lambda p: rc.sum(rc.layer_norm(p["x"], gain, bias) * weights[0, 0]), {"x": x[0, 0]})
    x32 = x.astype(np.float32)
    g = rc.grad(lambda p: rc.sum(rc.layer_norm(p, gain.astype(np.float32), bias.astype(np.float32))))(x32)
    assert rc.layer_norm(x32, gain.astype(np.float32), bias.astype(np.float32)).dtype == np.float32
    assert g.dtype == np.float32
    with pytest.raises(ValueError, match=r"gain: expected shape \(5,\)"):
        rc.layer_norm(x, gain[:4], bias)


def test_gelu_value_and_gradient():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.5])
    expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(rc.gelu(x), expected, rtol=1e-14)
    assert float(rc.gelu(1.0)) == pytest.approx(0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * 1.044715)))
    rng = np.random.default_rng(4)
    for shape in [(), (3,), (2, 4)]:
        weights = arrays(rng, shape)
        check_grad(lambda p, w=weights: rc.sum(rc.gelu(p["x"]) * w), {"x": arrays(rng, shape, -4, 4)})


def test_embedding_gathers_rows_and_adds_repeated_gradients():
    rng = np.random.default_rng(5)
    table = arrays(rng, (6, 3))
    ids = np.array([[0, 2, 2], [5, 2, 0]])  # id 2 three times, 0 twice, 1 3 4 never
    np.testing.assert_array_equal(rc.embedding(table, ids), table[ids])
    weights = arrays(rng, (2, 3, 3))
    check_grad(lambda p: rc.sum(rc.embedding(p["t"], ids) * weights), {"t": table})
    g = rc.grad(lambda t: rc.sum(rc.embedding(t, ids) * weights))(table)
    np.testing.assert_allclose(g[2], weights[0, 1] + weights[0, 2] + weights[1, 1])
    assert (g[[1, 3, 4]] == 0).all()
    with pytest.raises(ValueError, match=r"ids: expected values in \[0, 6\)"):
        rc.embedding(table, np.array([6]))
    with pytest.raises(TypeError, match="ids: expected integer"):
        rc.embedding(table, np.array([1.0]))


@pytest.mark.parametrize("x_shape", [(4,), (2, 4), (2, 3, 4)])
def test_affine_matches_matmul_plus_bias(x_shape):
    rng = np.random.default_rng(6)
    x, w, b = arrays(rng, x_shape), arrays(rng, (4, 3)), arrays(rng, (3,))
    np.testing.assert_allclose(rc.affine(x, w, b), x @ w + b, rtol=1e-14)
    weights = arrays(rng, x_shape[:-1] + (3,))
    check_grad(lambda p: rc.sum(rc.affine(p["x"], p["w"], p["b"]) * weights), {"x": x, "w": w, "b": b})
    check_grad(lambda p: rc.sum(rc.affine(x, p["w"], b) * weights), {"w": w})
    with pytest.raises(ValueError, match=r"b: expected shape \(3,\) \(the columns of w"):
        rc.affine(x, w, b[:2])
    with pytest.raises(ValueError, match=r"x: expected shape \[\.\.\., K\] with K = 3"):
        rc.affine(x, w[:3], b)
