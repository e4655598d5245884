"""Every differentiable op against central finite differences, broadcasting included."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
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


def test_non_real_params_and_losses_raise():
    for bad in (np.ones(2, complex), np.array(["a", "b"]), np.array([object()] * 2)):
        with pytest.raises(TypeError, match=r"params\['w'\]: parameters must be floating-point"):
            rc.value_and_grad(lambda p: rc.sum(p["w"]))({"w": bad})
    for loss in (None, "loss", np.ones(2, complex).sum()):
        with pytest.raises(TypeError, match="f: the function must return a scalar loss"):
            rc.value_and_grad(lambda p, loss=loss: loss)(np.ones(2))
    with pytest.raises(TypeError, match=r"argnums=\(0, 2\) but only 2 argument"):
        rc.value_and_grad(lambda a, b: rc.sum(a), argnums=(0, 2))(np.ones(2), np.ones(2))


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


# ---------------------------------------------------------------- properties (issue 12)
# Each op's gradient against central differences over random shapes, axes (negative ones too),
# broadcasting and repeated indices; NaN propagating through every elementwise op; the softmax
# family staying finite and normalised at |logits| = 1e4.

PROPS = settings(max_examples=40, deadline=None)


def _shape(rng, ndim, high=3):
    return tuple(int(n) for n in rng.integers(1, high + 1, size=ndim))


def _signed(axis, ndim, negative):
    """``axis`` (in [0, ndim)) written as its negative form when ``negative``."""
    return axis - ndim if negative else axis


@PROPS
@given(data=st.data(), ndim=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_transpose_gradient_for_any_permutation_with_negative_axes(data, ndim, seed):
    rng = np.random.default_rng(seed)
    perm = data.draw(st.permutations(range(ndim)))
    axes = tuple(_signed(a, ndim, data.draw(st.booleans())) for a in perm)
    x = arrays(rng, _shape(rng, ndim))
    np.testing.assert_array_equal(rc.transpose(x, axes), np.transpose(x, axes))
    weights = arrays(rng, np.transpose(x, axes).shape)
    check_grad(lambda p: rc.sum(rc.transpose(p["x"], axes) * weights), {"x": x})


@PROPS
@given(data=st.data(), ndim=st.integers(1, 3), seed=st.integers(0, 10_000),
       keepdims=st.booleans(), op=st.sampled_from(["sum", "mean", "logsumexp"]))
def test_reductions_over_any_axes_negative_ones_included(data, ndim, seed, keepdims, op):
    rng = np.random.default_rng(seed)
    chosen = data.draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    signed = tuple(_signed(a, ndim, data.draw(st.booleans())) for a in chosen)
    axis = data.draw(st.sampled_from([None, signed[0], signed]))
    x = arrays(rng, _shape(rng, ndim))
    fn = getattr(rc, op)
    reference = {"sum": np.sum, "mean": np.mean,
                 "logsumexp": lambda v, axis, keepdims: np.log(np.sum(np.exp(v), axis=axis,
                                                                       keepdims=keepdims))}[op]
    out = fn(x, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(out, reference(x, axis=axis, keepdims=keepdims), rtol=1e-12)
    weights = arrays(rng, np.shape(out))
    check_grad(lambda p: rc.sum(fn(p["x"], axis=axis, keepdims=keepdims) * weights), {"x": x})


@PROPS
@given(ndim=st.integers(1, 3), data=st.data(), seed=st.integers(0, 10_000),
       op=st.sampled_from(["softmax", "log_softmax"]))
def test_softmax_gradient_along_any_axis(ndim, data, seed, op):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    x = arrays(rng, _shape(rng, ndim), -3, 3)
    fn = getattr(rc, op)
    weights = arrays(rng, x.shape)
    check_grad(lambda p: rc.sum(fn(p["x"], axis=axis) * weights), {"x": x})


@PROPS
@given(ndim=st.integers(1, 3), data=st.data(), seed=st.integers(0, 10_000),
       members=st.integers(1, 3), op=st.sampled_from(["concatenate", "stack"]))
def test_concatenate_and_stack_gradients_along_any_axis(ndim, data, seed, members, op):
    rng = np.random.default_rng(seed)
    shape = _shape(rng, ndim)
    if op == "concatenate":
        axis = data.draw(st.integers(-ndim, ndim - 1))
        shapes = [shape[:axis % ndim] + (int(rng.integers(1, 4)),) + shape[axis % ndim + 1:]
                  for _ in range(members)]
    else:
        axis = data.draw(st.integers(-ndim - 1, ndim))
        shapes = [shape] * members
    params = {f"x{i}": arrays(rng, s) for i, s in enumerate(shapes)}
    fn = getattr(rc, op)
    out = fn(list(params.values()), axis=axis)
    np.testing.assert_array_equal(out, getattr(np, op)(list(params.values()), axis=axis))
    weights = arrays(rng, out.shape)
    check_grad(lambda p: rc.sum(fn([p[k] for k in params], axis=axis) * weights), params)


@PROPS
@given(ndim=st.integers(1, 3), data=st.data(), seed=st.integers(0, 10_000))
def test_take_along_axis_gradient_with_broadcasting_and_repeated_indices(ndim, data, seed):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    x_shape, idx_shape = [], []
    for d in range(ndim):
        if d == axis % ndim:
            x_shape.append(int(rng.integers(1, 4)))
            idx_shape.append(int(rng.integers(1, 5)))  # more picks than entries: repeats
        else:  # equal, or one side of length 1 broadcast over the other
            n = int(rng.integers(2, 4))
            x_len, idx_len = data.draw(st.sampled_from([(n, n), (1, n), (n, 1)]))
            x_shape.append(x_len)
            idx_shape.append(idx_len)
    x = arrays(rng, tuple(x_shape))
    indices = rng.integers(0, x.shape[axis], size=tuple(idx_shape))
    indices.flat[-1] = indices.flat[0]  # at least one index repeated (when there are two)
    out = rc.take_along_axis(x, indices, axis=axis)
    np.testing.assert_array_equal(out, np.take_along_axis(x, indices, axis=axis))
    weights = arrays(rng, out.shape)
    check_grad(lambda p: rc.sum(rc.take_along_axis(p["x"], indices, axis=axis) * weights), {"x": x})


@PROPS
@given(pair=broadcast_pairs, seed=st.integers(0, 10_000),
       form=st.sampled_from(["x ** array", "array ** x", "2.0 ** x", "x ** x", "x ** 2.5"]))
def test_power_gradients_with_broadcasting(pair, seed, form):
    rng = np.random.default_rng(seed)
    base, exponent = arrays(rng, pair[0], 0.5, 2.0), arrays(rng, pair[1], -1.5, 2.0)
    weights = arrays(rng, np.broadcast_shapes(pair[0], pair[1]))
    if form == "x ** array":
        check_grad(lambda p: rc.sum(p["b"] ** exponent * weights), {"b": base})
    elif form == "array ** x":
        check_grad(lambda p: rc.sum(base ** p["e"] * weights), {"e": exponent})
    elif form == "x ** x":
        check_grad(lambda p: rc.sum(p["b"] ** p["e"] * weights), {"b": base, "e": exponent})
    elif form == "2.0 ** x":
        w = arrays(rng, pair[1])
        check_grad(lambda p: rc.sum(2.0 ** p["e"] * w), {"e": exponent})
    else:
        w = arrays(rng, pair[0])
        check_grad(lambda p: rc.sum(p["b"] ** 2.5 * w), {"b": base})


@PROPS
@given(pair=broadcast_pairs, seed=st.integers(0, 10_000),
       op=st.sampled_from(["minimum", "maximum", "where", "clip"]))
def test_selection_gradients_with_broadcasting(pair, seed, op):
    """Away from ties and from clip's edges, where each derivative exists."""
    rng = np.random.default_rng(seed)
    a, b = arrays(rng, pair[0]), arrays(rng, pair[1])
    full = np.broadcast_shapes(pair[0], pair[1])
    weights = arrays(rng, full)
    if op in ("minimum", "maximum"):
        assume(np.abs(np.broadcast_to(a, full) - np.broadcast_to(b, full)).min() > 1e-3)
        fn = getattr(rc, op)
        check_grad(lambda p: rc.sum(fn(p["a"], p["b"]) * weights), {"a": a, "b": b})
    elif op == "where":
        condition = rng.random(full) < 0.5
        check_grad(lambda p: rc.sum(rc.where(condition, p["a"], p["b"]) * weights),
                   {"a": a, "b": b})
    else:  # x traced, a scalar lower bound and an array upper bound that broadcasts with it
        lo, hi = -0.7, arrays(rng, pair[1], 0.2, 1.5)
        spread = np.broadcast_to(a, full)
        assume(np.abs(spread - lo).min() > 1e-3 and np.abs(spread - hi).min() > 1e-3)
        check_grad(lambda p: rc.sum(rc.clip(p["x"], lo, hi) * weights), {"x": a})


@PROPS
@given(seed=st.integers(0, 10_000), ndim=st.integers(1, 3),
       op=st.sampled_from(["getitem", "reshape", "gelu", "layer_norm", "affine", "embedding"]))
def test_indexing_reshape_and_transformer_op_gradients(seed, ndim, op):
    rng = np.random.default_rng(seed)
    shape = _shape(rng, ndim, high=4)
    x = arrays(rng, shape)
    if op == "getitem":  # a fancy index with repeats and negative entries, then a slice
        index = rng.integers(-shape[0], shape[0], size=int(rng.integers(1, 5)))
        weights = arrays(rng, x[index][..., ::2].shape)
        check_grad(lambda p: rc.sum(p["x"][index][..., ::2] * weights), {"x": x})
    elif op == "reshape":
        new = (-1,) + shape[1:][::-1] if ndim > 1 else (x.size, 1)
        weights = arrays(rng, np.reshape(x, new).shape)
        check_grad(lambda p: rc.sum(rc.reshape(p["x"], new) * weights), {"x": x})
    elif op == "gelu":
        weights = arrays(rng, shape)
        check_grad(lambda p: rc.sum(rc.gelu(p["x"] * 3.0) * weights), {"x": x})
    elif op == "layer_norm":
        gain, bias, weights = arrays(rng, shape[-1:]), arrays(rng, shape[-1:]), arrays(rng, shape)
        x = x + np.arange(shape[-1]) * 0.3  # no constant rows (their gradient is eps-dominated)
        check_grad(lambda p: rc.sum(rc.layer_norm(p["x"], p["g"], p["b"]) * weights),
                   {"x": x, "g": gain, "b": bias}, atol=1e-5)
    elif op == "affine":
        w, b = arrays(rng, (shape[-1], 2)), arrays(rng, (2,))
        weights = arrays(rng, shape[:-1] + (2,))
        check_grad(lambda p: rc.sum(rc.affine(p["x"], p["w"], p["b"]) * weights),
                   {"x": x, "w": w, "b": b})
    else:
        ids = rng.integers(0, shape[0], size=shape[:-1] + (3,))  # repeats likely
        table = arrays(rng, (shape[0], 2))
        weights = arrays(rng, ids.shape + (2,))
        check_grad(lambda p: rc.sum(rc.embedding(p["t"], ids) * weights), {"t": table})


# NaN in, NaN out: every elementwise op keeps a NaN where it was (never dropped, never spread).
_ELEMENTWISE = {
    "tanh": rc.tanh, "relu": rc.relu, "sigmoid": rc.sigmoid, "exp": rc.exp, "log": rc.log,
    "sqrt": rc.sqrt, "square": rc.square, "abs": rc.abs, "log_sigmoid": rc.log_sigmoid,
    "gelu": rc.gelu, "neg": lambda v: -v, "pow": lambda v: v**1.5, "rpow": lambda v: 2.0**v,
    "clip": lambda v: rc.clip(v, 0.5, 1.5), "clip unbounded": lambda v: rc.clip(v, None, 1.0),
}
_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a**b, "minimum": rc.minimum,
    "maximum": rc.maximum,
}


def _with_nans(rng, shape, fraction=0.3):
    x = rng.uniform(0.1, 2.0, size=shape)
    nan = rng.random(shape) < fraction
    x[nan] = np.nan
    return x, nan


@PROPS
@given(seed=st.integers(0, 10_000), shape=shapes, op=st.sampled_from(sorted(_ELEMENTWISE)))
def test_nan_propagates_through_every_elementwise_op(seed, shape, op):
    x, nan = _with_nans(np.random.default_rng(seed), shape)
    out = _ELEMENTWISE[op](x)
    np.testing.assert_array_equal(np.isnan(out), nan)
    # traced too: the NaN comes in through a plain operand of a differentiated computation
    traced = rc.value_and_grad(lambda p: (rc.sum(p), _ELEMENTWISE[op](p * 0.0 + x)))(np.ones(shape))
    np.testing.assert_array_equal(np.isnan(traced[0][1]), nan)


@PROPS
@given(seed=st.integers(0, 10_000), pair=broadcast_pairs, op=st.sampled_from(sorted(_BINARY)),
       traced=st.booleans())
def test_nan_propagates_from_either_side_of_binary_ops(seed, pair, op, traced):
    rng = np.random.default_rng(seed)
    (a, nan_a), (b, nan_b) = _with_nans(rng, pair[0]), _with_nans(rng, pair[1])
    expected = np.broadcast_to(nan_a, np.broadcast_shapes(pair[0], pair[1])) | nan_b
    fn = _BINARY[op]
    if traced:  # each side through a traced computation in turn, the other one plain
        for args in ((lambda p: p * 0.0 + a, lambda p: b), (lambda p: a, lambda p: p * 0.0 + b)):
            (_, out), _ = rc.value_and_grad(
                lambda p, f=args: (rc.sum(p), fn(f[0](p), f[1](p))))(np.ones(()))
            np.testing.assert_array_equal(np.isnan(out), expected)
    else:
        np.testing.assert_array_equal(np.isnan(fn(a, b)), expected)
        np.testing.assert_array_equal(np.isnan(fn(b, a)), expected)


@PROPS
@given(seed=st.integers(0, 10_000), op=st.sampled_from(["softmax", "log_softmax", "logsumexp"]))
def test_nan_in_a_row_stays_in_that_row(seed, op):
    rng = np.random.default_rng(seed)
    x = arrays(rng, (4, 3))
    row = int(rng.integers(4))
    x[row, int(rng.integers(3))] = np.nan
    out = getattr(rc, op)(x, axis=-1)
    nan_rows = np.isnan(out).reshape(4, -1)
    assert nan_rows[row].all() and not np.delete(nan_rows, row, axis=0).any()


@PROPS
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 4), cols=st.integers(1, 6),
       dtype=st.sampled_from([np.float64, np.float32]), scale=st.sampled_from([1.0, 1e2, 1e4]))
def test_softmax_rows_sum_to_one_and_stay_finite_at_large_logits(seed, rows, cols, dtype, scale):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-scale, scale, size=(rows, cols))
    x.flat[rng.integers(x.size)] = scale * rng.choice([-1.0, 1.0])  # a logit at exactly +-scale
    x = x.astype(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    probs, logp = rc.softmax(x), rc.log_softmax(x)
    assert probs.dtype == dtype and logp.dtype == dtype
    assert np.isfinite(probs).all() and np.isfinite(logp).all() and (logp <= 0).all()
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=tol * cols)
    np.testing.assert_allclose(np.exp(logp.astype(np.float64)).sum(axis=-1), 1.0, atol=tol * cols)
    np.testing.assert_allclose(np.exp(logp), probs, atol=tol)
    lse = rc.logsumexp(x)
    assert np.isfinite(lse).all() and (lse >= x.max(axis=-1) - tol * scale).all()
    weights = rng.normal(size=x.shape).astype(dtype)
    for op in (rc.softmax, rc.log_softmax, rc.logsumexp):
        g = rc.grad(lambda v, op=op: rc.sum(op(v) * (weights if op is not rc.logsumexp else 1.0)))(x)
        assert g.dtype == dtype and np.isfinite(g).all()


# ---------------------------------------------------------------- input rules (issue 12)


def test_tensor_refuses_non_real_data_and_arithmetic_with_it():
    for bad in (np.ones(2, complex), np.array(["a", "b"]), np.array([object()] * 2)):
        with pytest.raises(TypeError, match=r"^value: expected real numbers"):
            rc.Tensor(bad)
    with pytest.raises(TypeError, match="parents: expected a tuple of"):
        rc.Tensor(np.ones(2), parents=((np.ones(2), np.negative),))
    assert rc.Tensor([1.0, 2.0]).shape == (2,)
    with pytest.raises(TypeError, match=r"operands of \*: expected real numbers.*complex"):
        rc.grad(lambda p: rc.sum(p * np.array([1j, 2j])))(np.ones(2))


def test_tree_leaves_and_tree_map_structures():
    tree = {"a": [np.ones(2), (np.zeros(1), 3.0)], "b": "leaf"}
    assert [type(v) for v in rc.tree_leaves(tree)] == [np.ndarray, np.ndarray, float, str]
    assert rc.tree_leaves(5) == [5] and rc.tree_leaves([]) == [] and rc.tree_leaves({}) == []
    doubled = rc.tree_map(lambda u, v: u + v, {"a": [1.0, (2.0,)]}, {"a": [3.0, (4.0,)]})
    assert doubled == {"a": [4.0, (6.0,)]}
    with pytest.raises(ValueError, match=r"rest\[0\]: expected the structure of tree.*tree\['a'\]"):
        rc.tree_map(lambda u, v: u, {"a": [1.0, 2.0]}, {"a": [1.0]})
    with pytest.raises(ValueError, match=r"rest\[1\]: .*keys \['a'\].*keys \['b'\]"):
        rc.tree_map(lambda u, v, w: u, {"a": 1.0}, {"a": 2.0}, {"b": 3.0})


def test_infinite_rows_softmax_refuses_and_logsumexp_is_exact():
    dead = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    hot = np.array([[0.0, np.inf]])
    for op in (rc.softmax, rc.log_softmax):
        with pytest.raises(ValueError, match=r"x: the row x\[1, :\] is -inf everywhere"):
            op(dead)
        with pytest.raises(ValueError, match=r"x: the row x\[0, :\] holds \+inf"):
            op(hot)
        with pytest.raises(ValueError, match=r"x: the row x\[:, 1\] is -inf everywhere"):
            op(dead.T, axis=0)
    np.testing.assert_array_equal(rc.logsumexp(dead), [np.logaddexp(0.0, 1.0), -np.inf])
    assert rc.logsumexp(hot) == np.inf
    g = rc.grad(lambda v: rc.sum(rc.logsumexp(v[0:1])) + rc.sum(rc.where(
        np.array([[True], [False]]), rc.logsumexp(v, keepdims=True), 0.0)))(np.zeros((2, 2)))
    assert np.isfinite(g).all()
    finite = np.array([[0.0, 1.0], [-3.0, -np.inf]])
    lse_grad = rc.grad(lambda v: rc.sum(rc.logsumexp(rc.where(np.isfinite(finite), v, -np.inf))))(
        np.nan_to_num(finite, neginf=0.0))
    np.testing.assert_allclose(lse_grad.sum(axis=-1), [1.0, 1.0])


def test_mean_of_no_entries_and_numerical_grad_of_a_bad_function_are_errors():
    with pytest.raises(ValueError, match="x: expected entries to average"):
        rc.mean(np.zeros((2, 0)), axis=1)
    assert rc.mean(np.zeros((0, 3)), axis=1).shape == (0,)  # no mean is taken: nothing to refuse
    with pytest.raises(ValueError, match=r"f: returned nan at x with entry 1 \(flat\) moved"):
        rc.numerical_grad(lambda v: float(v[0]) if v[1] == 0 else np.nan, np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"f: expected a scalar"):
        rc.numerical_grad(lambda v: v, np.ones(2))
    np.testing.assert_allclose(rc.numerical_grad(lambda v: np.sum(v**2), [1, 2]), [2.0, 4.0])


def test_clip_bounds_none_inf_and_arrays():
    x = np.array([-2.0, 0.0, 2.0])
    np.testing.assert_array_equal(rc.clip(x, None, 1.0), [-2.0, 0.0, 1.0])
    np.testing.assert_array_equal(rc.clip(x, -np.inf, 1.0), [-2.0, 0.0, 1.0])
    np.testing.assert_array_equal(rc.grad(lambda v: rc.sum(rc.clip(v, None, 1.0)))(x), [1, 1, 0])
    g = rc.grad(lambda v: rc.sum(rc.clip(v, -1.0, np.array([[0.5], [3.0]]))))(x)  # broadcast to [2, 3]
    np.testing.assert_array_equal(g, [0, 2, 1])
    with pytest.raises(ValueError, match="lo, hi: expected lo <= hi"):
        rc.clip(x, np.array([0.0, 2.0, 0.0]), 1.0)


def test_where_and_take_along_axis_refuse_what_numpy_would_bend():
    with pytest.raises(TypeError, match="condition: expected booleans"):
        rc.where(np.array([0.3, 1.0]), 1.0, 0.0)  # 0.3 is not a truth value
    np.testing.assert_array_equal(rc.where(np.array([0, 1]), 1.0, 0.0), [0.0, 1.0])
    with pytest.raises(ValueError, match="indices: values must be >= 0"):
        rc.take_along_axis(np.ones((2, 3)), np.array([[-1], [0]]), axis=1)  # numpy would wrap
    with pytest.raises(ValueError, match=r"^a: expected shapes that broadcast together"):
        rc.where(np.array([True, False, True]), np.ones(2), np.ones(3))
