"""A tiny causal transformer in numpy on the course's autodiff: the course's language model.

GPT-2's architecture (decoder only, pre-LN), for token ids ``tokens`` ``[B, T]``::

    x = embed[tokens] + position[pos]                                  [B, T, D]
    for each of the L blocks:
        x = x + attention(layer_norm(x)) @ proj.w + proj.b             H heads of D/H, causal
        x = x + gelu(layer_norm(x) @ mlp.w + mlp.b) @ out.w + out.b    hidden width F (4D)
    logits = layer_norm(x) @ head                                      [B, T, V]

``logits[:, t]`` predicts ``tokens[:, t+1]`` from ``tokens[:, :t+1]`` only (causal).

**Padding.** ``PAD`` (id 0) tokens are invisible: no query attends to a ``PAD`` key, and a
token's position ``pos`` is the number of real (non-``PAD``) tokens before it. The logits at
the real tokens of a padded row are therefore those of the row with its ``PAD`` deleted (to
float rounding): a left-padded prompt scores as the unpadded one. A ``PAD`` query sees itself
(so no softmax row is empty) and its logits are finite and meaningless. The context ``C`` bounds
the real tokens per row, not the padded width.

**The head is its own matrix** ``head`` ``[D, V]``, not tied to the embedding as in GPT-2. The
course's vocabularies are a few dozen tokens, so tying would save 2-3% of the parameters; and a
tied head starts biased: the token just read gets a logit about ``|e|^2 / |x|`` (~1 nat) above
the others, so an untrained model prefers to repeat it. With a separate head every logit of an
untrained model is a sum of D small independent terms (std ``0.02 sqrt(D)``): its next-token
distribution is near uniform, the natural starting policy, with a loss near ``log V``.

**Parameters** are a plain dict of arrays, every size read back from the shapes:
``embed [V, D]``, ``position [C, D]``, ``ln_f {gain [D], bias [D]}``, ``head [D, V]`` and
``blocks``, a list of
L dicts ``{ln1, attn: {w [D, 3, H, D/H], b [3, H, D/H]}, proj: {w [D, D], b [D]}, ln2,
mlp: {w [D, F], b [F]}, out: {w [F, D], b [D]}}``; ``attn.w[:, 0, h]`` holds head h's query
weights, ``[:, 1, h]`` its keys and ``[:, 2, h]`` its values.

**Init** (GPT-2's): weights normal with std 0.02, the two projections that write into the
residual stream (``proj``, ``out``) with std ``0.02 / sqrt(2 L)`` so the stream's variance does
not grow with depth; biases 0, layer-norm gains 1. No dropout: the models are tiny.

**Sampling** goes through a key-value cache: ``transformer_prefill`` runs the prompts once and
keeps every layer's keys and values; each ``transformer_decode`` step then runs one new token per
row against them, instead of the whole sequence again.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_float_array, as_int_array, as_rng, check_count, check_tree, float_dtype
from .tokenizer import EOS, PAD

__all__ = ["TransformerConfig", "transformer_init", "transformer_config", "transformer_logits",
           "KVCache", "transformer_prefill", "transformer_decode"]

_INIT_STD = 0.02


class TransformerConfig(NamedTuple):
    """The sizes of a transformer, read from its parameters by ``transformer_config``."""

    vocab: int
    context: int
    dim: int
    heads: int
    layers: int
    hidden: int


def transformer_init(vocab: int, context: int, dim: int, heads: int, layers: int, seed=0,
                     hidden: int | None = None, dtype=np.float32) -> dict:
    """Parameters of a causal transformer (see the module docstring for the tree and the init).

    ``vocab`` V tokens (the 3 specials included), ``context`` C = most real tokens per row,
    width ``dim`` D split into ``heads`` H heads, ``layers`` L blocks, MLP width ``hidden``
    (default 4D). ``seed`` is an int or a Generator; the same seed gives the same bits.
    """
    for name, v in (("vocab", vocab), ("context", context), ("dim", dim), ("heads", heads),
                    ("layers", layers)):
        check_count(name, v)
    hidden = 4 * dim if hidden is None else check_count("hidden", hidden)
    dtype = float_dtype("dtype", dtype)
    if vocab <= EOS + 1:
        raise ValueError(f"vocab: expected more than the 3 special tokens, got {vocab}")
    if dim % heads:
        raise ValueError(f"heads: expected a divisor of dim={dim}, got {heads}")
    rng = as_rng(seed)
    resid_std = _INIT_STD / np.sqrt(2 * layers)

    def normal(shape, std=_INIT_STD):
        return rng.normal(0.0, std, shape).astype(dtype)

    def norm():
        return {"gain": np.ones(dim, dtype), "bias": np.zeros(dim, dtype)}

    def block():
        dh = dim // heads
        return {
            "ln1": norm(),
            "attn": {"w": normal((dim, 3, heads, dh)), "b": np.zeros((3, heads, dh), dtype)},
            "proj": {"w": normal((dim, dim), resid_std), "b": np.zeros(dim, dtype)},
            "ln2": norm(),
            "mlp": {"w": normal((dim, hidden)), "b": np.zeros(hidden, dtype)},
            "out": {"w": normal((hidden, dim), resid_std), "b": np.zeros(dim, dtype)},
        }

    return {"embed": normal((vocab, dim)), "position": normal((context, dim)),
            "blocks": [block() for _ in range(layers)], "ln_f": norm(), "head": normal((dim, vocab))}


def transformer_config(params) -> TransformerConfig:
    """The sizes of ``params``, after checking that the tree is a transformer's: every key of
    ``transformer_init``, shapes that agree, floating-point leaves with no NaN or inf (a NaN
    weight would otherwise surface as NaN logits far away; traced leaves were checked by
    ``value_and_grad``). Raises naming the first leaf that does not fit."""
    if not isinstance(params, dict) or not {"embed", "position", "blocks", "ln_f", "head"} <= set(params):
        got = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"params: expected a transformer's parameters from transformer_init or "
                         f"lm_init (keys embed, position, blocks, ln_f, head), got {got}")
    vocab, dim = _shape(params["embed"], "params['embed']", 2)
    context = _shape(params["position"], "params['position']", 2)[0]
    blocks = params["blocks"]
    if not isinstance(blocks, (list, tuple)) or not blocks:
        got = "an empty list" if isinstance(blocks, (list, tuple)) else type(blocks).__name__
        raise ValueError(f"params['blocks']: expected a non-empty list of blocks, got {got}")
    where = "params['blocks'][0]['attn']['w']"
    attn = _shape(_get(params, ("blocks", 0, "attn", "w")), where, 4)
    heads, dh = attn[2], attn[3]
    if heads < 1 or heads * dh != dim:
        raise ValueError(f"{where}: expected shape ({dim}, 3, H, {dim}/H) for H heads dividing "
                         f"dim={dim} (from embed {vocab}x{dim}), got {attn}")
    hidden = _shape(_get(params, ("blocks", 0, "mlp", "w")), "params['blocks'][0]['mlp']['w']", 2)[1]
    expected = {"ln1": {"gain": (dim,), "bias": (dim,)},
                "attn": {"w": (dim, 3, heads, dh), "b": (3, heads, dh)},
                "proj": {"w": (dim, dim), "b": (dim,)}, "ln2": {"gain": (dim,), "bias": (dim,)},
                "mlp": {"w": (dim, hidden), "b": (hidden,)}, "out": {"w": (hidden, dim), "b": (dim,)}}
    wanted = [(("position",), (context, dim)), (("head",), (dim, vocab)),
              *((("ln_f", k), (dim,)) for k in ("gain", "bias"))]
    for i in range(len(blocks)):
        for part, leaves in expected.items():
            for k, shape in leaves.items():
                wanted.append((("blocks", i, part, k), shape))
    for path, shape in wanted:
        if np.shape(_get(params, path)) != shape:
            raise ValueError(f"{_path(path)}: expected shape {shape} (from embed {vocab}x{dim}, "
                             f"{heads} heads, MLP width {hidden}), got {np.shape(_get(params, path))}")
    check_tree("params", params, floats=True, finite=True)
    return TransformerConfig(vocab, context, dim, heads, len(blocks), hidden)


def _shape(leaf, name: str, ndim: int) -> tuple:
    shape = np.shape(leaf)
    if len(shape) != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {shape}")
    return shape


def _get(params, path: tuple):
    """The node of ``params`` at ``path``, or an error naming the first step that is missing."""
    node = params
    for depth, key in enumerate(path):
        if isinstance(key, str) and not (isinstance(node, dict) and key in node):
            got = f"keys {sorted(node)}" if isinstance(node, dict) else type(node).__name__
            raise ValueError(f"{_path(path[:depth])}: expected a dict with the key {key!r} (the "
                             f"tree of transformer_init), got {got}")
        if isinstance(key, int) and not isinstance(node, (list, tuple)):
            raise ValueError(f"{_path(path[:depth])}: expected a list, got {type(node).__name__}")
        node = node[key]
    return node


def _path(path) -> str:
    return "params" + "".join(f"[{p!r}]" for p in path)


def _check_tokens(tokens, vocab: int, name: str = "tokens") -> np.ndarray:
    tokens = as_int_array(name, tokens, low=0, high=vocab)
    if tokens.ndim != 2 or tokens.shape[1] == 0:
        raise ValueError(f"{name}: expected shape [B, L] with L >= 1, got {tokens.shape}")
    return tokens


def _check_context(name: str, real_tokens: int, context: int, what: str) -> None:
    if real_tokens > context:
        raise ValueError(f"{name}: {what} {real_tokens} real (non-PAD) tokens, more than the "
                         f"model's context of {context} (the rows of params['position'])")


def _inputs(params, tokens: np.ndarray, config: TransformerConfig, name: str = "tokens"):
    """The embedded inputs ``[B, T, D]`` and the attention mask (``[T, T]`` or ``[B, T, T]``)."""
    visible = tokens != PAD
    _check_context(name, int(visible.sum(axis=1).max()), config.context, "a row holds")
    # a PAD after a full context would be at position C: clipped, its output is never used
    positions = np.minimum(np.cumsum(visible, axis=1) - visible, config.context - 1)
    x = ad.embedding(params["embed"], tokens) + ad.embedding(params["position"], positions)
    length = tokens.shape[1]
    mask = np.tril(np.ones((length, length), dtype=bool))
    if not visible.all():
        mask = mask & (visible[:, None, :] | np.eye(length, dtype=bool))
    return x, mask


def _block(block, x, mask, heads: int):
    """One pre-LN block on ``x`` ``[B, T, D]``: ``(new x, the packed qkv [B, T, 3D])``."""
    dim = x.shape[-1]
    attn, proj, mlp, out = block["attn"], block["proj"], block["mlp"], block["out"]
    h = ad.layer_norm(x, block["ln1"]["gain"], block["ln1"]["bias"])
    qkv = ad.affine(h, ad.reshape(attn["w"], (dim, 3 * dim)), ad.reshape(attn["b"], (3 * dim,)))
    x = x + ad.affine(ad.self_attention(qkv, heads, mask), proj["w"], proj["b"])
    h = ad.layer_norm(x, block["ln2"]["gain"], block["ln2"]["bias"])
    x = x + ad.affine(ad.gelu(ad.affine(h, mlp["w"], mlp["b"])), out["w"], out["b"])
    return x, qkv


def _head(params, x):
    """Logits ``[..., V]`` of the last hidden states ``x`` ``[..., D]``.

    One 2-D product over all rows, traced or not: numpy's ``[B, T, D] @ [D, V]`` would loop over
    B with other rounding, and a model's log-probs must not depend on whether it is traced (at a
    DPO run's first step the policy's must equal the frozen reference's bit for bit)."""
    h = ad.layer_norm(x, params["ln_f"]["gain"], params["ln_f"]["bias"])
    dim = params["head"].shape[0]
    return ad.reshape(ad.reshape(h, (-1, dim)) @ params["head"], (*np.shape(ad.stop_gradient(h))[:-1], -1))


def transformer_logits(params, tokens):
    """Next-token logits ``[B, L, V]`` of ``tokens`` ``[B, L]`` (ints in ``[0, V)``).

    ``logits[:, t]`` predicts ``tokens[:, t+1]`` from ``tokens[:, :t+1]``; the last position's
    is the prediction of the token after the sequence, so a sequence is scored by
    ``logits[:, :-1]`` against ``tokens[:, 1:]``. Traced when ``params`` are (inside
    ``value_and_grad``). Raises if a row has more than C real tokens.
    """
    config = transformer_config(params)
    tokens = _check_tokens(tokens, config.vocab)
    x, mask = _inputs(params, tokens, config)
    for block in params["blocks"]:
        x, _ = _block(block, x, mask, config.heads)
    return _head(params, x)


class KVCache:
    """Every layer's keys and values of the tokens run so far, for ``transformer_decode``.

    ``keys``/``values`` ``[L, B, H, capacity, D/H]`` (columns ``[0, length)`` filled),
    ``visible`` ``[B, capacity]`` (False at ``PAD`` tokens, which no later token attends to) and
    ``positions`` ``[B]``, the position the next real token of each row will take. Updated in
    place by ``transformer_decode``.
    """

    __slots__ = ("keys", "values", "visible", "positions", "length")

    def __init__(self, keys, values, visible, positions, length):
        keys = as_float_array("keys", keys, ndim=5)
        values = as_float_array("values", values)
        if values.shape != keys.shape:
            raise ValueError(f"values: expected the shape of keys {keys.shape}, got {values.shape}")
        layers, batch, heads, capacity, dh = keys.shape
        visible = as_bool_array("visible", visible)
        if visible.shape != (batch, capacity):
            raise ValueError(f"visible: expected shape {(batch, capacity)} (rows and columns of "
                             f"keys {keys.shape}), got {visible.shape}")
        positions = as_int_array("positions", positions, low=0)
        if positions.shape != (batch,):
            raise ValueError(f"positions: expected shape {(batch,)} (one per row of keys "
                             f"{keys.shape}), got {positions.shape}")
        length = check_count("length", length, low=0)
        if length > capacity:
            raise ValueError(f"length: expected at most the capacity {capacity} (columns of keys "
                             f"{keys.shape}), got {length}")
        if not np.array_equal(positions, visible[:, :length].sum(axis=1)):
            raise ValueError(f"positions: expected the number of visible tokens of each row "
                             f"{visible[:, :length].sum(axis=1).tolist()}, got {positions.tolist()}")
        self.keys, self.values, self.visible = keys, values, visible
        self.positions, self.length = positions, length

    @property
    def capacity(self) -> int:
        return self.keys.shape[3]

    def __repr__(self):
        layers, batch, heads, capacity, dh = self.keys.shape
        return (f"KVCache({layers} layers, {batch} rows, {heads} heads of {dh}, "
                f"{self.length} of {capacity} columns filled)")


def transformer_prefill(params, prompts, max_new: int = 0):
    """Run ``prompts`` ``[B, P]`` once: ``(logits [B, V] of the next token, KVCache)``.

    The cache holds every layer's keys and values of the prompts and room for ``max_new`` more
    tokens per row, added one at a time by ``transformer_decode``. The logits equal
    ``transformer_logits(params, prompts)[:, -1]`` (and are traced when ``params`` are).
    """
    return _prefill(params, prompts, max_new, "prompts")


def _prefill(params, prompts, max_new: int, name: str):
    """``transformer_prefill``, with ``name`` the caller's name for ``prompts``."""
    config = transformer_config(params)
    prompts = _check_tokens(prompts, config.vocab, name)
    max_new = check_count("max_new", max_new, low=0)
    _check_context("max_new", int((prompts != PAD).sum(axis=1).max()) + max_new, config.context,
                   f"a row of {name} plus max_new={max_new} new tokens could reach")
    batch, length = prompts.shape
    dtype = np.result_type(ad.stop_gradient(params["embed"]))
    heads, dh = config.heads, config.dim // config.heads
    shape = (config.layers, batch, heads, length + max_new, dh)
    keys, values = np.zeros(shape, dtype), np.zeros(shape, dtype)
    x, mask = _inputs(params, prompts, config, name)
    for i, block in enumerate(params["blocks"]):
        x, qkv = _block(block, x, mask, heads)
        packed = ad.stop_gradient(qkv).reshape(batch, length, 3, heads, dh)
        keys[i, :, :, :length] = packed[:, :, 1].transpose(0, 2, 1, 3)
        values[i, :, :, :length] = packed[:, :, 2].transpose(0, 2, 1, 3)
    visible = np.zeros((batch, length + max_new), dtype=bool)
    visible[:, :length] = prompts != PAD
    cache = KVCache(keys, values, visible, visible.sum(axis=1), length)
    return _head(params, x[:, -1]), cache


def transformer_decode(params, cache: KVCache, tokens):
    """Append one token per row, ``tokens`` ``[B]``, to ``cache``: the logits ``[B, V]`` of the
    token after it (plain arrays; no gradient).

    Equals ``transformer_logits(params, sequence)[:, -1]`` for the whole sequence so far, to
    float rounding. A ``PAD`` token (a row that has finished) takes no position and is never
    attended to. Raises when the cache is full or a row would pass the context.
    """
    config = transformer_config(params)
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache: expected a KVCache from transformer_prefill, got {type(cache).__name__}")
    layers, batch, heads, _, dh = cache.keys.shape
    dtype = np.result_type(ad.stop_gradient(params["embed"]))
    if (layers, heads, dh * heads) != (config.layers, config.heads, config.dim) \
            or cache.keys.dtype != dtype:
        raise ValueError(f"cache: from another model ({layers} layers of {heads} heads of width "
                         f"{dh}, {cache.keys.dtype}); params have {config.layers} of {config.heads} "
                         f"of width {config.dim // config.heads}, {dtype} (prefill with these params)")
    tokens = as_int_array("tokens", tokens, low=0, high=config.vocab)
    if tokens.shape != (batch,):
        raise ValueError(f"tokens: expected shape ({batch},) (one per row of the cache), got {tokens.shape}")
    if cache.length >= cache.capacity:
        raise ValueError(f"cache: full ({cache.capacity} columns); prefill with a larger max_new")
    return _decode(params, cache, tokens, config)


def _decode(params, cache: KVCache, tokens: np.ndarray, config: TransformerConfig):
    """``transformer_decode`` on checked arguments (``generate`` checks them once)."""
    batch = cache.keys.shape[1]
    t = cache.length
    visible = tokens != PAD
    if visible.any():
        _check_context("tokens", int(cache.positions[visible].max()) + 1, config.context,
                       "a row would hold")
    cache.visible[:, t] = visible
    x = (np.take(params["embed"], tokens, axis=0)
         + np.take(params["position"], np.minimum(cache.positions, config.context - 1), axis=0))
    cache.positions += visible
    # each new query sees the visible keys so far and itself
    hidden = ~cache.visible[:, : t + 1]
    hidden[:, t] = False
    heads, dh = config.heads, config.dim // config.heads
    for i, block in enumerate(params["blocks"]):
        h = ad.layer_norm(x, block["ln1"]["gain"], block["ln1"]["bias"])
        qkv = ad.affine(h, block["attn"]["w"].reshape(config.dim, -1), block["attn"]["b"].reshape(-1))
        q, k, v = qkv.reshape(batch, 3, heads, dh).transpose(1, 0, 2, 3)  # [B, H, dh] each
        cache.keys[i, :, :, t], cache.values[i, :, :, t] = k, v
        keys, values = cache.keys[i, :, :, : t + 1], cache.values[i, :, :, : t + 1]
        scores = np.einsum("bhd,bhtd->bht", q, keys) * dh**-0.5  # a Python float keeps float32
        scores[np.broadcast_to(hidden[:, None, :], scores.shape)] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        attended = np.einsum("bht,bhtd->bhd", probs, values).reshape(batch, config.dim)
        x = x + ad.affine(attended, block["proj"]["w"], block["proj"]["b"])
        h = ad.layer_norm(x, block["ln2"]["gain"], block["ln2"]["bias"])
        x = x + ad.affine(ad.gelu(ad.affine(h, block["mlp"]["w"], block["mlp"]["b"])),
                          block["out"]["w"], block["out"]["b"])
    cache.length = t + 1
    return _head(params, x)
