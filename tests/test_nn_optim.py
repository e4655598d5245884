"""Networks, optimisers and parameter files."""

import numpy as np
import pytest

import rlcourse as rc


def test_orthogonal_init_is_orthogonal_with_gain():
    w = rc.orthogonal((64, 16), gain=2.0, seed=0, dtype=np.float64)
    np.testing.assert_allclose(w.T @ w, 4.0 * np.eye(16), atol=1e-10)
    wide = rc.orthogonal((4, 64), gain=1.0, seed=0, dtype=np.float64)
    np.testing.assert_allclose(wide @ wide.T, np.eye(4), atol=1e-10)


def test_mlp_init_shapes_gains_biases_and_dtype():
    params = rc.mlp_init([4, 64, 64, 2], seed=0, out_scale=0.01)
    assert [layer["w"].shape for layer in params] == [(4, 64), (64, 64), (64, 2)]
    assert all(layer["w"].dtype == np.float32 for layer in params)
    assert all(not layer["b"].any() for layer in params)
    np.testing.assert_allclose(np.linalg.norm(params[-1]["w"], axis=0), 0.01, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(params[1]["w"], axis=0), np.sqrt(2), rtol=1e-5)
    assert rc.mlp_init([3, 5], seed=0, dtype=np.float64)[0]["w"].dtype == np.float64


def test_same_seed_same_params_different_seed_different():
    a, b, c = (rc.mlp_init([4, 8, 2], seed=s) for s in (7, 7, 8))
    for la, lb in zip(a, b):
        np.testing.assert_array_equal(la["w"], lb["w"])
    assert not np.array_equal(a[0]["w"], c[0]["w"])


def test_mlp_forward_matches_numpy_and_activations():
    params = rc.mlp_init([3, 5, 2], seed=1, dtype=np.float64)
    x = np.random.default_rng(0).normal(size=(4, 3))
    expected = np.maximum(x @ params[0]["w"] + params[0]["b"], 0) @ params[1]["w"] + params[1]["b"]
    np.testing.assert_allclose(rc.mlp(params, x, activation="relu"), expected)
    np.testing.assert_allclose(rc.mlp(params, x, activation=rc.relu), expected)
    with pytest.raises(ValueError, match="activation"):
        rc.mlp(params, x, activation="swish")
    with pytest.raises(ValueError, match="x: expected last dimension 3"):
        rc.mlp(params, np.ones((4, 5)))


def test_adam_first_step_is_lr_times_sign_of_gradient():
    params = {"w": np.array([0.5, -1.0, 2.0]), "b": np.array([[1.0, 1.0]])}
    grads = {"w": np.array([3.0, -0.001, 40.0]), "b": np.array([[-2.0, 1e-3]])}
    opt = rc.Adam(lr=0.1, eps=1e-12)
    new, state = opt.step(params, grads, opt.init(params))
    for k in params:
        np.testing.assert_allclose(new[k] - params[k], -0.1 * np.sign(grads[k]), rtol=1e-6)
    assert state["t"] == 1


def test_adam_matches_the_textbook_form_over_several_steps():
    rng = np.random.default_rng(0)
    p = rng.normal(size=5)
    opt = rc.Adam(lr=0.01, betas=(0.8, 0.99), eps=1e-6)
    params, state = {"p": p.copy()}, opt.init({"p": p})
    m = v = np.zeros(5)
    for t in range(1, 6):
        g = rng.normal(size=5)
        params, state = opt.step(params, {"p": g}, state)
        m, v = 0.8 * m + 0.2 * g, 0.99 * v + 0.01 * g * g
        p = p - 0.01 * (m / (1 - 0.8**t)) / (np.sqrt(v / (1 - 0.99**t)) + 1e-6)
    np.testing.assert_allclose(params["p"], p, rtol=1e-6, atol=1e-6)


def test_optimisers_keep_float32_and_leave_inputs_untouched():
    params = {"w": np.ones(3, np.float32)}
    grads = {"w": np.full(3, 0.5, np.float32)}
    for opt in (rc.Adam(1e-2), rc.SGD(0.1, momentum=0.9)):
        new, _ = opt.step(params, grads, opt.init(params))
        assert new["w"].dtype == np.float32
        np.testing.assert_array_equal(params["w"], np.ones(3))


def test_sgd_momentum_accumulates_velocity():
    opt = rc.SGD(lr=0.1, momentum=0.5)
    params, state = {"p": np.zeros(1)}, opt.init({"p": np.zeros(1)})
    for _ in range(2):
        params, state = opt.step(params, {"p": np.ones(1)}, state)
    np.testing.assert_allclose(params["p"], [-0.1 - 0.15])


def test_optimiser_rejects_bad_gradients():
    opt = rc.Adam()
    params = {"w": np.ones(3)}
    with pytest.raises(ValueError, match="NaN"):
        opt.step(params, {"w": np.array([1.0, np.nan, 0.0])}, opt.init(params))
    with pytest.raises(ValueError, match="shape"):
        opt.step(params, {"w": np.ones(4)}, opt.init(params))
    with pytest.raises(ValueError, match="lr"):
        rc.Adam(lr=-1.0)


def test_clip_by_global_norm():
    grads = {"a": np.array([3.0, 0.0]), "b": [np.array([4.0])]}
    clipped, norm = rc.clip_by_global_norm(grads, 1.0)
    assert norm == pytest.approx(5.0)
    assert rc.global_norm(clipped) == pytest.approx(1.0)
    np.testing.assert_allclose(clipped["a"], [0.6, 0.0])
    same, _ = rc.clip_by_global_norm(grads, 10.0)
    np.testing.assert_array_equal(same["a"], grads["a"])
    with pytest.raises(ValueError, match="max_norm"):
        rc.clip_by_global_norm(grads, 0.0)


def test_global_norm_propagates_nan_and_never_overflows_on_finite_entries():
    assert np.isnan(rc.global_norm({"a": np.array([1.0, np.nan]), "b": [np.ones(2)]}))
    assert rc.global_norm([np.array([np.inf, 1.0])]) == np.inf
    # squares that overflow (or underflow to 0) in float64: the norm is still the right one
    assert rc.global_norm({"a": np.array([3e200]), "b": (np.array([4e200]),)}) == pytest.approx(5e200)
    assert rc.global_norm([np.array([3e-200, 4e-200])]) == pytest.approx(5e-200)
    assert rc.global_norm(np.float32([3e30, 4e30])) == pytest.approx(5e30, rel=1e-6)
    assert rc.global_norm({}) == 0.0 and rc.global_norm([np.zeros(3)]) == 0.0
    big = {"w": np.array([3e200, 4e200])}
    clipped, norm = rc.clip_by_global_norm(big, 1.0)
    assert norm == pytest.approx(5e200) and rc.global_norm(clipped) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="grads: global norm is not finite"):
        rc.clip_by_global_norm({"w": np.array([np.nan])}, 1.0)


def test_layers_name_the_bad_weight_or_input():
    params = rc.mlp_init([3, 4, 2], seed=0, dtype=np.float64)
    x = np.random.default_rng(0).normal(size=(5, 3))
    out = rc.mlp(params, x)
    np.testing.assert_array_equal(out, np.tanh(x @ params[0]["w"] + params[0]["b"]) @ params[1]["w"]
                                  + params[1]["b"])
    nan = [dict(layer) for layer in params]
    nan[1]["w"] = nan[1]["w"].copy()
    nan[1]["w"][2, 1] = np.nan
    with pytest.raises(ValueError, match=r"params\[1\]\['w'\]: expected finite values"):
        rc.mlp(nan, x)
    with pytest.raises(ValueError, match=r"x: expected finite"):
        rc.mlp(params, np.where(np.arange(3) == 1, np.inf, x))  # tanh would hide this inf
    with pytest.raises(ValueError, match=r"x: expected last dimension 3 \(the input size of params\[0\]"):
        rc.mlp(params, x[:, :2])
    with pytest.raises(ValueError, match=r"params\[1\]\['w'\]: expected 4 rows"):
        rc.mlp([params[0], rc.linear_init(5, 2)], x)
    with pytest.raises(ValueError, match=r"params: expected w \[in, out\] and b \[out\]"):
        rc.linear({"w": params[0]["w"], "b": np.zeros(1)}, x)  # a [1] bias would broadcast
    with pytest.raises(TypeError, match="activation"):
        rc.mlp(params, x, activation=None)
    with pytest.raises(TypeError, match=r"params\['w'\]\[0\]: expected a real numeric"):
        rc.count_params({"w": [None]})
    for init in (lambda: rc.orthogonal((2, 2), dtype=np.int32),
                 lambda: rc.linear_init(2, 2, dtype=complex),
                 lambda: rc.mlp_init([2, 2], dtype="nonsense"),
                 lambda: rc.transformer_init(8, 4, 4, 2, 1, dtype=int)):
        with pytest.raises(TypeError, match="dtype: expected a floating-point dtype"):
            init()


def test_linear_schedule():
    f = rc.linear_schedule(1.0, 0.0, 100)
    assert [f(0), f(50), f(100), f(1000)] == [1.0, 0.5, 0.0, 0.0]


def _same_tree(a, b):
    """Same containers (dict/list/tuple, keys, order), same leaf types, shapes, dtypes, values."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same_tree(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same_tree(x, y)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)  # NaN at the same places counts as equal
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and (a == b or (np.isnan(a) and np.isnan(b)))
    else:
        assert a == b or (a != a and b != b)  # NaN == NaN for this purpose


TREES = {
    "mlp": {"actor": rc.mlp_init([4, 8, 2], seed=0), "log_std": np.zeros(2), "nested": [[np.ones(1)]]},
    "tuples and empties": {"a": (np.ones(2), np.zeros((0, 3))), "b": [], "c": {}, "d": ((), [{}])},
    "list with an empty container in the middle": [np.ones(1), [], np.arange(3), {}],
    "keys with slashes and hashes": {"a/b": np.ones(1), "#0": np.zeros(1), "": {"x": 1.5}},
    "scalars and dtypes": {"n": 3, "lr": 1e-3, "on": True, "i8": np.arange(3, dtype=np.int8),
                           "b": np.array([True, False]), "f16": np.ones(2, np.float16)},
    "a bare array": np.arange(4.0),
    "0-d arrays and numpy scalars": {"zero_d": np.array(2.5), "i0": np.array(3, np.int16),
                                     "np_f32": np.float32(1.5), "np_i64": np.int64(-7),
                                     "np_bool": np.bool_(True), "u64": np.uint64(2**64 - 1)},
    "empty containers everywhere": ({}, [], (), [[], {}, ()], {"a": {}, "b": [()], "c": ({},)}),
    "empty root dict": {},
    "empty root list": [],
    "empty root tuple": (),
    "nested tuples and lists": [((np.ones(1),), [(), [np.zeros((2, 0))]]), (1, 2.0, False)],
    "every numeric dtype": {str(np.dtype(t)): np.arange(3).astype(t) for t in
                            (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                             np.uint64, np.float16, np.float32, np.float64, np.bool_)},
    "byte order and layout": {"big": np.arange(3, dtype=">f8"),
                              "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                              "strided": np.arange(10.0)[::3]},
    "special floats and big ints": {"nan": float("nan"), "inf": np.array([np.inf, -np.inf]),
                                    "big": 2**63, "neg": -(2**63)},
    "a transformer": rc.transformer_init(8, 4, 4, 2, 2, seed=0),
}


@pytest.mark.parametrize("name", TREES)
def test_save_and_load_round_trip_exactly(tmp_path, name):
    path = rc.save_params(tmp_path / "params.npz", TREES[name])
    _same_tree(TREES[name], rc.load_params(path))
    with np.load(path, allow_pickle=False) as data:  # readable with pickle disabled
        assert "__tree__" in data.files


def test_save_and_load_accept_the_same_path_with_or_without_npz(tmp_path, monkeypatch):
    written = rc.save_params(tmp_path / "model", {"w": np.ones(2)})
    assert written == tmp_path / "model.npz" and written.exists()
    np.testing.assert_array_equal(rc.load_params(tmp_path / "model")["w"], np.ones(2))
    np.testing.assert_array_equal(rc.load_params(str(tmp_path / "model.npz"))["w"], np.ones(2))
    monkeypatch.chdir(tmp_path)  # the reproducer: save_params("m") then load_params("m")
    rc.save_params("m", {"w": np.arange(3)})
    np.testing.assert_array_equal(rc.load_params("m")["w"], np.arange(3))
    # a file named "m" (not written by save_params) does not shadow the m.npz that was written
    (tmp_path / "m").write_bytes(b"something else")
    np.testing.assert_array_equal(rc.load_params("m")["w"], np.arange(3))
    # another suffix is kept, and .npz added, on both sides
    rc.save_params("run.best", {"w": np.ones(1)})
    assert (tmp_path / "run.best.npz").exists() and rc.load_params("run.best")["w"].tolist() == [1.0]


def test_save_is_all_or_nothing(tmp_path):
    good = rc.save_params(tmp_path / "p", {"w": np.ones(3)})
    with pytest.raises(TypeError):
        rc.save_params(tmp_path / "p", {"w": np.ones(3), "bad": object()})
    np.testing.assert_array_equal(rc.load_params(good)["w"], np.ones(3))  # the old file is intact
    assert sorted(f.name for f in tmp_path.iterdir()) == ["p.npz"]  # no partial file left
    with pytest.raises(FileNotFoundError, match="path: the folder .* does not exist"):
        rc.save_params(tmp_path / "missing" / "p", {"w": np.ones(1)})
    with pytest.raises(TypeError, match="path: expected a file name"):
        rc.save_params(None, {"w": np.ones(1)})


@pytest.mark.parametrize("leaf", [np.array([object()]), "text", None, np.array(["a"]),
                                  np.ones(2, dtype=complex), 2**70, -(2**64), 1 + 2j, b"bytes",
                                  np.array(["2020-01-01"], dtype="datetime64[D]"),
                                  np.zeros(2, dtype=[("a", "f4")]), {1, 2}, rc.Tensor(np.ones(2))])
def test_save_refuses_leaves_it_would_have_to_pickle(tmp_path, leaf):
    with pytest.raises(TypeError, match=r"params: leaves must be numeric arrays or numbers.*\['w'\]"):
        rc.save_params(tmp_path / "p", {"w": leaf})
    assert not (tmp_path / "p.npz").exists()
    with pytest.raises(TypeError, match="dict keys must be strings"):
        rc.save_params(tmp_path / "p", {1: np.ones(1)})


def test_save_refuses_trees_that_would_not_come_back_the_same(tmp_path):
    import collections

    for tree, what in [(collections.OrderedDict(w=np.ones(1)), "OrderedDict at the root"),
                       ({"cfg": rc.TransformerConfig(1, 2, 3, 4, 5, 6)}, r"TransformerConfig at \['cfg'\]"),
                       ([collections.defaultdict(list)], r"defaultdict at \[0\]")]:
        with pytest.raises(TypeError, match="params: containers must be plain dicts, lists and "
                                            f"tuples, got {what}"):
            rc.save_params(tmp_path / "p", tree)
    cycle = {"a": []}
    cycle["a"].append(cycle)
    with pytest.raises(ValueError, match=r"params: the tree contains itself at \['a'\]\[0\]"):
        rc.save_params(tmp_path / "p", cycle)
    shared = np.ones(2)  # the same array twice is not a cycle: it is saved twice
    out = rc.load_params(rc.save_params(tmp_path / "p", [shared, shared, {"x": shared}]))
    assert len(out) == 3 and all(np.array_equal(o, shared) for o in (out[0], out[1], out[2]["x"]))


def test_checkpoints_never_pickle(tmp_path, monkeypatch):
    calls = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    path = rc.save_params(tmp_path / "p", TREES["mlp"])
    rc.load_params(path)
    assert calls and all(k.get("allow_pickle") is False for k in calls)
    with real_load(path, allow_pickle=False) as data:  # every entry reads with pickle off
        assert all(data[k].dtype != object for k in data.files)


def test_load_gives_one_clear_error_for_what_is_not_a_checkpoint(tmp_path):
    good = rc.save_params(tmp_path / "good", {"w": np.ones(3)})
    cases = {
        "empty.npz": b"",
        "random.npz": np.random.default_rng(0).bytes(300),
        "truncated.npz": good.read_bytes()[:60],
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    np.save(tmp_path / "plain.npy", np.ones(2))
    np.savez(tmp_path / "foreign.npz", w=np.ones(2))
    np.savez(tmp_path / "pickled.npz", w=np.array([object()], dtype=object))
    np.savez(tmp_path / "bad header.npz", __tree__=np.frombuffer(b'{"format": "rlcourse-params-1", '
                                                                  b'"tree": {"dict": [1]}}', np.uint8))
    for name in [*cases, "plain.npy", "foreign.npz", "pickled.npz", "bad header.npz"]:
        with pytest.raises(ValueError, match="path: .* is not an rlcourse checkpoint") as err:
            rc.load_params(tmp_path / name)
        assert "allow_pickle" not in str(err.value)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        rc.load_params(tmp_path / "missing")
    with pytest.raises(ValueError, match="is a folder"):
        rc.load_params(tmp_path)
    with pytest.raises(TypeError, match="path: expected a file name"):
        rc.load_params(3)


def test_load_gives_the_clear_error_at_every_truncation_and_byte_flip(tmp_path):
    """A damaged file raises the one ValueError (numpy, zipfile and json raise a dozen types,
    NotImplementedError for some flipped zip flags) or, where the damage missed the data (zip
    padding), loads exactly; it never loads something else."""
    tree = {"w": np.arange(20.0), "b": [np.ones(3, np.float32), (2, 1.5)]}
    good = rc.save_params(tmp_path / "good", tree).read_bytes()
    rng = np.random.default_rng(0)
    damaged = [good[:n] for n in range(0, len(good), 7)]
    for _ in range(300):
        flipped = bytearray(good)
        flipped[rng.integers(len(good))] ^= int(rng.integers(1, 256))
        damaged.append(bytes(flipped))
    for content in damaged:
        (tmp_path / "x.npz").write_bytes(content)
        try:
            out = rc.load_params(tmp_path / "x.npz")
        except ValueError as err:
            assert "is not an rlcourse checkpoint" in str(err)
        else:
            _same_tree(tree, out)


def test_fitting_a_regression_with_adam_drives_the_loss_down():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(128, 1))
    y = np.sin(3 * x)
    params = rc.mlp_init([1, 32, 1], seed=0, dtype=np.float64)
    opt = rc.Adam(lr=1e-2)
    state = opt.init(params)
    loss = lambda p: rc.mean(rc.square(rc.mlp(p, x) - y))
    first = float(loss(params))
    for _ in range(300):
        value, grads = rc.value_and_grad(loss)(params)
        params, state = opt.step(params, grads, state)
    assert value < 0.05 * first  # the fit explains at least 95% of the initial error
