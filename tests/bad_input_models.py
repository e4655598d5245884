"""Bad-input specs for rlcourse.core.nn, rlcourse.core.optim, rlcourse.core.checkpoint,
rlcourse.core.lm, rlcourse.core.transformer, rlcourse.core.tokenizer.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.

The parameter trees, configs, caches and paths of these functions get kinds of their own below:
a layer or transformer missing a key or with a wrong shape, a NaN or integer weight, a cache
that is full or from another model, token ids outside the vocabulary, a context longer than the
model's, a file that is not a checkpoint.
"""

from __future__ import annotations

import collections
import copy
import tempfile
from pathlib import Path

import numpy as np
from bad_input_kinds import RNG, SHORT, F, ints_below, without

import rlcourse as rc

# ---------------------------------------------------------------------------------------------
# Fixtures: a tiny transformer (V tokens, context C, width D, H heads, one block)

V, C, D, H = 8, 6, 8, 2


def _lm(**kw):
    return rc.transformer_init(**{**dict(vocab=V, context=C, dim=D, heads=H, layers=1, seed=0), **kw})


_PARAMS = _lm()


def _params():
    return copy.deepcopy(_PARAMS)


def _tokens():
    return np.array([[1, 4, 5, 6, 3], [0, 0, 1, 7, 4]])


def _cache(max_new=2, params=None, prompts=None):
    return rc.transformer_prefill(_params() if params is None else params,
                                  _tokens()[:, :3] if prompts is None else prompts, max_new)[1]


_TMP = tempfile.TemporaryDirectory(prefix="rlcourse-bad-input-")


def _tmp(name: str) -> Path:
    return Path(_TMP.name) / name


def _checkpoint() -> Path:
    return rc.save_params(_tmp("model"), {"w": F(3), "layers": [{"b": np.zeros(2)}]})


# ---------------------------------------------------------------------------------------------
# Kinds of their own


def _edit(tree, path, value=None, delete=False):
    """A deep copy of ``tree`` with the node at ``path`` replaced (or deleted)."""
    tree = copy.deepcopy(tree)
    node = tree
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value(node[path[-1]]) if callable(value) else value
    return tree


def _nan_at_first(a):
    a = np.array(a, dtype=float)
    a.flat[0] = np.nan
    return a


def _layer_bads(valid):
    """A ``{"w": [in, out], "b": [out]}`` layer."""
    return [
        ("a list", [valid["w"], valid["b"]]), ("a string", "layer"), ("None", None),
        ("missing 'b'", _edit(valid, ["b"], delete=True)),
        ("w with 1 dimension", _edit(valid, ["w"], lambda w: w[0])),
        ("b of the wrong length", _edit(valid, ["b"], lambda b: np.zeros(len(b) + 1))),
        ("a NaN weight", _edit(valid, ["w"], _nan_at_first)),
        ("integer weights", _edit(valid, ["w"], lambda w: np.ones(np.shape(w), int))),
        ("string weights", _edit(valid, ["w"], lambda w: np.asarray(w).astype(str))),
        ("complex weights", _edit(valid, ["w"], lambda w: np.asarray(w) + 1j)),
    ]


def _mlp_bads(valid):
    """A list of layers whose sizes chain."""
    return [
        ("one layer, not a list", valid[0]), ("an empty list", []), ("a string", "mlp"),
        ("None", None), ("a layer missing 'w'", _edit(valid, [1, "w"], delete=True)),
        ("layers that do not chain", _edit(valid, [1, "w"], lambda w: np.zeros((w.shape[0] + 1,
                                                                                  w.shape[1])))),
        ("a NaN weight", _edit(valid, [1, "w"], _nan_at_first)),
        ("integer weights", _edit(valid, [0, "w"], lambda w: np.ones(w.shape, int))),
        ("b of the wrong length", _edit(valid, [0, "b"], lambda b: np.zeros(len(b) + 1))),
    ]


def _activation_bads(valid):
    return [("an unknown name", "sigmoid"), ("None", None), ("a number", 1.0)]


def _tree_bads(valid):
    """A parameter (or gradient) tree of numeric arrays."""
    return [("a string", "tree"), ("None", None), ("a string leaf", {"w": "abc"}),
            ("a None leaf", {"w": [np.ones(2), None]}),
            ("an object leaf", {"w": np.array([object()])}),
            ("a complex leaf", {"w": np.ones(2) + 1j}),
            ("a string-array leaf", {"w": np.array(["1", "2"])})]


def _save_tree_bads(valid):
    cycle: list = []
    cycle.append(cycle)
    return [("an object leaf", {"w": np.array([object()])}), ("a string leaf", {"w": "abc"}),
            ("a None leaf", {"w": None}), ("a complex leaf", {"w": np.ones(2) + 1j}),
            ("a non-string key", {1: np.ones(1)}), ("an int beyond int64", {"n": 2**70}),
            ("an OrderedDict", collections.OrderedDict(w=np.ones(1))),
            ("a NamedTuple", rc.TransformerConfig(1, 2, 3, 4, 5, 6)),
            ("a set", {"w": {1, 2}}), ("a tree that contains itself", cycle),
            ("a traced Tensor", {"w": rc.Tensor(np.ones(2))})]


def _path_bads(valid):
    return [("None", None), ("a number", 3), ("an empty string", ""), ("bytes content", b"\x00"),
            ("the current folder", "."), ("a path ending in ..", "models/..")]


def _damaged_paths(valid):
    good = Path(valid).read_bytes()
    files = {"empty.npz": b"", "random.npz": RNG(0).bytes(300), "truncated.npz": good[:100],
             "cut in its data.npz": good[: len(good) - 40], "text.txt": b"hello\n"}
    for name, content in files.items():
        _tmp(name).write_bytes(content)
    np.save(_tmp("plain.npy"), np.ones(2))
    np.savez(_tmp("foreign.npz"), w=np.ones(2))
    np.savez(_tmp("pickled.npz"), w=np.array([object()], dtype=object))
    _tmp("a folder").mkdir(exist_ok=True)
    return [*_path_bads(valid)[:2], *((name, _tmp(name)) for name in files),
            ("a .npy file", _tmp("plain.npy")), ("an npz not from save_params", _tmp("foreign.npz")),
            ("an npz holding a pickle", _tmp("pickled.npz")), ("a folder", _tmp("a folder"))]


def _transformer_bads(valid):
    """A transformer's parameters missing a key, with a wrong shape, a NaN or integer weight."""
    block = ["blocks", 0]
    return [
        ("a list", [valid["embed"]]), ("a string", "params"), ("None", None),
        ("missing 'head'", _edit(valid, ["head"], delete=True)),
        ("embed with 3 dimensions", _edit(valid, ["embed"], lambda e: e[..., None])),
        ("head of the wrong shape", _edit(valid, ["head"], lambda h: h[:, :-1])),
        ("position with 1 dimension", _edit(valid, ["position"], lambda p: p[0])),
        ("no blocks", _edit(valid, ["blocks"], [])),
        ("blocks a dict", _edit(valid, ["blocks"], lambda b: {"0": b[0]})),
        ("a block missing 'attn'", _edit(valid, block, lambda b: {k: v for k, v in b.items()
                                                                 if k != "attn"})),
        ("a block missing 'ln2'", _edit(valid, [*block, "ln2"], delete=True)),
        ("ln_f missing 'gain'", _edit(valid, ["ln_f", "gain"], delete=True)),
        ("ln_f a list", _edit(valid, ["ln_f"], lambda n: [n["gain"], n["bias"]])),
        ("an MLP of the wrong width", _edit(valid, [*block, "mlp", "b"], lambda b: b[:-1])),
        ("heads not dividing dim", _edit(valid, [*block, "attn"],
                                         {"w": np.zeros((D, 3, 3, 2), np.float32),
                                          "b": np.zeros((3, 3, 2), np.float32)})),
        ("zero heads", _edit(valid, [*block, "attn"], {"w": np.zeros((D, 3, 0, 2), np.float32),
                                                      "b": np.zeros((3, 0, 2), np.float32)})),
        ("a NaN weight", _edit(valid, [*block, "mlp", "w"], _nan_at_first)),
        ("an inf embedding", _edit(valid, ["embed"], lambda e: e * np.inf)),
        ("integer weights", _edit(valid, ["head"], lambda h: np.ones(h.shape, int))),
        ("string weights", _edit(valid, ["head"], lambda h: h.astype(str))),
    ]


def _token_bads(valid):
    """Token ids ``[B, L]`` of the fixture model: outside the vocabulary, not 2-D, empty, or
    more real tokens than its context (a row short is a smaller batch: valid)."""
    extra = [("1-D", np.asarray(valid)[0]), ("no columns", np.zeros((2, 0), int)),
             ("longer than the context", np.full((2, C + 1), 4)), ("a string", "1 4 5")]
    return ints_below(V, SHORT)(valid) + extra


def _cache_bads(valid):
    return [
        ("None", None), ("a dict", {"keys": valid.keys}),
        ("full", _cache(max_new=0)),
        ("from another width", _cache(params=_lm(dim=4, heads=2))),
        ("from another number of heads", _cache(params=_lm(heads=4))),
        ("from a deeper model", _cache(params=_lm(layers=2))),
        ("from a batch of 3 rows", _cache(prompts=np.array([[1, 4]] * 3))),
        ("float64 for a float32 model", _cache(params=_lm(dtype=np.float64))),
    ]


def _dtype_bads(valid):
    return [("an integer dtype", np.int32), ("complex", np.complex64), ("not a dtype", "floaty"),
            ("a bool dtype", bool)]


def _vocab_bads(valid):
    return [*without("count")(valid), ("only the 3 specials", 3)]


def _heads_bads(valid):
    return [*without("count")(valid), ("not dividing dim", 3), ("more than dim", 2 * D)]


def _eos_bads(valid):
    return [("outside the vocabulary", V), ("negative", -1), ("a float", 2.5), ("a string", "2"),
            ("None", None), ("a bool", True)]


def _symbols_bads(valid):
    return [("empty", ""), ("an empty list", []), ("duplicates", "aab"), ("None", None),
            ("a number", 5), ("a word with a space", ["a b", "c"]), ("an empty word", ["a", ""]),
            ("a number among words", ["a", 1]), ("a special token's name", ["<pad>", "a"])]


def _kv():
    """The arguments of ``KVCache`` that make a prefilled cache."""
    cache = _cache()
    return {k: getattr(cache, k) for k in ("keys", "values", "visible", "positions", "length")}


def _length_bads(valid):
    return [*without("count", "zero")(valid), ("beyond the capacity", _cache().capacity + 1)]


def _positions_bads(valid):
    arr = np.asarray(valid)
    return [*without("ints")(arr), ("not the visible count", arr + 1)]


# ---------------------------------------------------------------------------------------------
# Specs

_TP, _TOK = _transformer_bads, _token_bads

SPECS: dict[str, tuple] = {
    # core.nn
    "linear": (lambda: dict(params=rc.linear_init(3, 2, seed=0), x=F(4, 3)),
               dict(params=_layer_bads, x=without("floats", SHORT))),
    "mlp": (lambda: dict(params=rc.mlp_init([3, 4, 2], seed=0), x=F(5, 3), activation="tanh"),
            dict(params=_mlp_bads, x=without("floats", SHORT), activation=_activation_bads)),
    "count_params": (lambda: dict(params=rc.mlp_init([3, 4, 2], seed=0)),
                     dict(params=_tree_bads)),
    # core.optim: NaN propagates through a norm (tests/test_nn_optim.py)
    "global_norm": (lambda: dict(tree={"w": F(3, 2), "b": [F(2, seed=1)]}), dict(tree=_tree_bads)),
    # core.checkpoint
    "save_params": (lambda: dict(path=_tmp("saved"), params={"w": F(2), "n": [1, (2.5, {})]}),
                    dict(path=_path_bads, params=_save_tree_bads)),
    "load_params": (lambda: dict(path=_checkpoint()), dict(path=_damaged_paths)),
    # core.tokenizer
    "Tokenizer": (lambda: dict(symbols="0123456789+="), dict(symbols=_symbols_bads)),
    # core.transformer
    "transformer_init": (lambda: dict(vocab=V, context=C, dim=D, heads=H, layers=1, seed=0,
                                      hidden=None, dtype=np.float32),
                         dict(vocab=_vocab_bads, context="count", dim="count", heads=_heads_bads,
                              layers="count", seed="seed", hidden="count", dtype=_dtype_bads)),
    "transformer_config": (lambda: dict(params=_params()), dict(params=_TP)),
    "transformer_logits": (lambda: dict(params=_params(), tokens=_tokens()),
                           dict(params=_TP, tokens=_TOK)),
    "transformer_prefill": (lambda: dict(params=_params(), prompts=_tokens(), max_new=1),
                            dict(params=_TP, prompts=_TOK,
                                 max_new=lambda v: [*without("count", "zero")(v),
                                                    ("beyond the context", C)])),
    "transformer_decode": (lambda: dict(params=_params(), cache=_cache(), tokens=np.array([4, 5])),
                           dict(params=_TP, cache=_cache_bads,
                                tokens=lambda v: [*ints_below(V)(v), ("2-D", v[:, None])])),
    "KVCache": (_kv,
                dict(keys="floats", values="floats", visible="bools", positions=_positions_bads,
                     length=_length_bads)),
    # core.lm
    "lm_init": (lambda: dict(vocab=V, context=C, dim=D, seed=0, heads=H, layers=1, hidden=None,
                             dtype=np.float32),
                dict(vocab=_vocab_bads, context="count", dim="count", seed="seed",
                     heads=_heads_bads, layers="count", hidden="count", dtype=_dtype_bads)),
    "lm_logits": (lambda: dict(params=_params(), tokens=_tokens()), dict(params=_TP, tokens=_TOK)),
    "lm_next_logits": (lambda: dict(params=_params(), tokens=_tokens()),
                       dict(params=_TP, tokens=_TOK)),
    "lm_nll": (lambda: dict(params=_params(), tokens=_tokens(), mask=_tokens() > 3),
               dict(params=_TP, tokens=_TOK, mask="bools")),
    "completion_log_prob": (lambda: dict(params=_params(), tokens=_tokens(), mask=_tokens() > 3),
                            dict(params=_TP, tokens=_TOK, mask="bools")),
    "generate": (lambda: dict(params=_params(), prompts=_tokens()[:, :3], max_new=2, rng=RNG(0),
                              temperature=1.0, top_k=None, top_p=None, eos=2),
                 dict(params=_TP, prompts=_TOK,
                      max_new=lambda v: [*without("count")(v), ("beyond the context", C)],
                      rng="rng", temperature="positive", top_k="count",
                      top_p=lambda v: [("zero", 0.0), ("above 1", 1.5), ("NaN", np.nan),
                                       ("negative", -0.5)],
                      eos=_eos_bads)),
}

EXEMPT: dict[str, str] = {}
