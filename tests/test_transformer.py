"""The causal transformer: shapes and init, every gradient against finite differences,
causality, PAD invisibility, the key-value cache, bad input, and a task only attention solves."""

import numpy as np
import pytest

import rlcourse as rc

V, C, D, H, L = 9, 10, 8, 2, 2


def _params(dtype=np.float64, seed=0, **kw):
    return rc.transformer_init(V, C, D, H, L, seed=seed, dtype=dtype, **kw)


def _tokens(seed=0, batch=3, length=7):
    return np.random.default_rng(seed).integers(rc.EOS + 1, V, size=(batch, length))


def test_shapes_config_and_dtypes():
    params = _params(np.float32, hidden=12)
    assert params["embed"].shape == (V, D) and params["position"].shape == (C, D)
    block = params["blocks"][1]
    assert block["attn"]["w"].shape == (D, 3, H, D // H) and block["attn"]["b"].shape == (3, H, D // H)
    assert block["mlp"]["w"].shape == (D, 12) and block["out"]["w"].shape == (12, D)
    assert params["head"].shape == (D, V)
    assert rc.transformer_config(params) == rc.TransformerConfig(V, C, D, H, L, 12)
    assert all(leaf.dtype == np.float32 for leaf in rc.tree_leaves(params))
    assert rc.transformer_logits(params, _tokens()).dtype == np.float32
    assert rc.transformer_logits(_params(), _tokens()).shape == (3, 7, V)
    assert rc.transformer_config(_params()).hidden == 4 * D  # the default MLP width


def test_init_is_deterministic_with_gpt2_scales():
    a, b, c = _params(seed=3), _params(seed=3), _params(seed=4)
    for x, y in zip(rc.tree_leaves(a), rc.tree_leaves(b)):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a["embed"], c["embed"])
    big = rc.transformer_init(50, 64, 64, 4, 3, seed=0)
    assert np.std(big["embed"]) == pytest.approx(0.02, rel=0.05)
    assert np.std(big["blocks"][0]["mlp"]["w"]) == pytest.approx(0.02, rel=0.05)
    # the projections into the residual stream are scaled by 1/sqrt(2L)
    assert np.std(big["blocks"][0]["out"]["w"]) == pytest.approx(0.02 / np.sqrt(6), rel=0.05)
    assert np.std(big["blocks"][2]["proj"]["w"]) == pytest.approx(0.02 / np.sqrt(6), rel=0.1)
    assert (big["blocks"][0]["ln1"]["gain"] == 1).all() and not big["blocks"][0]["mlp"]["b"].any()
    # small init, separate head: an untrained model's next token is close to uniform, the token
    # just read included (a tied head would give it about e times the others' probability)
    probs = rc.softmax(rc.transformer_logits(big, np.full((1, 5), 7)))
    assert np.abs(np.log(probs * 50)).max() < 0.6


def _loss(params, tokens, mask):
    return rc.lm_nll(params, tokens, mask)


def test_every_gradient_matches_finite_differences():
    """All 456 parameters of a 2-block float64 model, on a batch with left and right padding."""
    params = rc.transformer_init(V, 8, 4, 2, 2, seed=0, hidden=8, dtype=np.float64)
    tokens = _tokens(1, batch=3, length=6)
    tokens[0, :2] = rc.PAD  # a left-padded prompt
    tokens[1, -2:] = rc.PAD  # a finished completion
    mask = tokens != rc.PAD
    _, grads = rc.value_and_grad(_loss)(params, tokens, mask)
    leaves = rc.tree_leaves(params)
    assert sum(leaf.size for leaf in leaves) == 456
    for leaf, g in zip(leaves, rc.tree_leaves(grads)):
        def f(values, leaf=leaf):
            old = leaf.copy()
            leaf[...] = values
            out = float(_loss(params, tokens, mask))
            leaf[...] = old
            return out

        numeric = rc.numerical_grad(f, leaf.copy())
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-8)
        assert np.abs(g).max() > 0  # every parameter matters (both LNs, positions, the head)


def test_logits_are_causal_bit_for_bit():
    params = _params(np.float32)
    rng = np.random.default_rng(2)
    tokens = _tokens(2, batch=4, length=9)
    tokens[1, :3] = rc.PAD
    base = rc.transformer_logits(params, tokens)
    for t in range(9):
        changed = tokens.copy()
        changed[:, t:] = rng.integers(rc.EOS + 1, V, size=(4, 9 - t))
        changed[:, t] = (tokens[:, t] - 2) % (V - 3) + 3  # surely a different real token
        out = rc.transformer_logits(params, changed)
        np.testing.assert_array_equal(out[:, :t], base[:, :t])
        assert not np.allclose(out[:, t], base[:, t])  # position t sees token t


@pytest.mark.parametrize("dtype, atol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_pad_tokens_are_invisible(dtype, atol):
    """A left-padded prompt, and a row with PAD anywhere, score their real tokens exactly as
    the row without its PADs does (to float rounding)."""
    params = _params(dtype, seed=5)
    prompt = _tokens(3, batch=1, length=6)
    reference = rc.transformer_logits(params, prompt)
    left = np.concatenate([np.zeros((1, 4), dtype=int), prompt], axis=1)
    np.testing.assert_allclose(rc.transformer_logits(params, left)[:, 4:], reference, rtol=0, atol=atol)
    scattered = np.insert(prompt, [0, 2, 2, 5, 6], rc.PAD, axis=1)
    real = scattered[0] != rc.PAD
    np.testing.assert_allclose(rc.transformer_logits(params, scattered)[:, real], reference,
                               rtol=0, atol=atol)
    assert np.isfinite(rc.transformer_logits(params, scattered)).all()  # PAD positions too
    # the context bounds real tokens, not the padded width: 10 real tokens fit C = 10
    wide = np.concatenate([np.zeros((1, 5), dtype=int), _tokens(4, batch=1, length=C)], axis=1)
    assert rc.transformer_logits(params, wide).shape == (1, 15, V)


def test_prefill_and_decode_match_the_full_forward():
    params = _params(seed=6)
    prompts = _tokens(5, batch=3, length=4)
    prompts[0, :2] = rc.PAD
    logits, cache = rc.transformer_prefill(params, prompts, max_new=3)
    np.testing.assert_allclose(logits, rc.transformer_logits(params, prompts)[:, -1], atol=1e-12)
    seq = prompts
    for new in ([5, 6, 7], [rc.PAD, 3, 8], [4, rc.PAD, 5]):  # a PAD: a row that has finished
        seq = np.concatenate([seq, np.array(new)[:, None]], axis=1)
        step = rc.transformer_decode(params, cache, np.array(new))
        np.testing.assert_allclose(step, rc.transformer_logits(params, seq)[:, -1], atol=1e-12)
    assert cache.length == cache.capacity == 7
    assert cache.positions.tolist() == [4, 6, 7]  # real tokens per row so far
    with pytest.raises(ValueError, match="cache: full"):
        rc.transformer_decode(params, cache, np.array([3, 3, 3]))
    # logits stay traced through the prefill: lm_next_logits is differentiable
    g = rc.grad(lambda p: rc.sum(rc.transformer_prefill(p, prompts)[0][:, 3]))(params)
    assert np.abs(g["embed"]).sum() > 0


def test_bad_inputs_raise_naming_the_argument():
    params = _params()
    with pytest.raises(ValueError, match=f"tokens: values must be < {V}"):
        rc.transformer_logits(params, [[1, V]])
    with pytest.raises(ValueError, match="tokens: values must be >= 0"):
        rc.transformer_logits(params, [[1, -1]])
    with pytest.raises(ValueError, match=r"tokens: expected shape \[B, L\]"):
        rc.transformer_logits(params, [1, 2, 3])
    with pytest.raises(TypeError, match="tokens"):
        rc.transformer_logits(params, [[1.0, 2.0]])
    with pytest.raises(ValueError, match="tokens: a row holds 11 real .* context of 10"):
        rc.transformer_logits(params, np.full((2, 11), 4))
    with pytest.raises(ValueError, match="heads: expected a divisor of dim=8, got 3"):
        rc.transformer_init(V, C, 8, 3, 1)
    with pytest.raises(ValueError, match="layers: expected a positive integer"):
        rc.transformer_init(V, C, 8, 2, 0)
    with pytest.raises(ValueError, match="vocab: expected more than the 3 special tokens"):
        rc.transformer_init(3, C, 8, 2, 1)
    nan = rc.tree_map(np.copy, params)
    nan["blocks"][1]["mlp"]["w"][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"params\['blocks'\]\[1\]\['mlp'\]\['w'\]: .*NaN"):
        rc.transformer_logits(nan, _tokens())
    with pytest.raises(ValueError, match=r"params\['blocks'\]\[1\]\['mlp'\]\['w'\].*NaN"):
        rc.value_and_grad(_loss)(nan, _tokens(), np.ones((3, 7), bool))
    wrong = rc.tree_map(np.copy, params)
    wrong["blocks"][0]["proj"]["w"] = np.zeros((D, D + 1))
    with pytest.raises(ValueError, match=r"\['proj'\]\['w'\]: expected shape \(8, 8\)"):
        rc.transformer_logits(wrong, _tokens())
    window_mlp = {"embed": np.zeros((V, 4)), "hidden": {"w": np.zeros((16, 8))}, "out": {}}
    with pytest.raises(ValueError, match="params: expected a transformer's parameters"):
        rc.transformer_logits(window_mlp, _tokens())


def test_the_tree_config_and_cache_are_checked_naming_what_is_wrong():
    params = _params()
    no_attn = rc.tree_map(np.copy, params)
    del no_attn["blocks"][1]["attn"]
    with pytest.raises(ValueError, match=r"params\['blocks'\]\[1\]: expected a dict with the key 'attn'"):
        rc.transformer_logits(no_attn, _tokens())
    odd_heads = rc.tree_map(np.copy, params)
    odd_heads["blocks"][0]["attn"] = {"w": np.zeros((D, 3, 3, 2)), "b": np.zeros((3, 3, 2))}
    with pytest.raises(ValueError, match=r"\['attn'\]\['w'\]: expected shape \(8, 3, H, 8/H\)"):
        rc.transformer_config(odd_heads)
    ints = rc.tree_map(np.copy, params)
    ints["head"] = np.ones((D, V), int)
    with pytest.raises(TypeError, match=r"params\['head'\]: expected a floating-point array"):
        rc.transformer_config(ints)
    # prefill names its prompts, and refuses room for more tokens than the context allows
    with pytest.raises(ValueError, match="prompts: values must be <"):
        rc.transformer_prefill(params, [[1, V]])
    with pytest.raises(ValueError, match="max_new: a row of prompts plus max_new=4 .* 11 real"):
        rc.transformer_prefill(params, _tokens(length=7), max_new=4)
    with pytest.raises(ValueError, match="tokens: values must be <"):
        rc.lm_next_logits(params, [[1, V]])
    # decode refuses a cache of another model, or what is not a cache
    prompts = _tokens(batch=2, length=3)
    for other in (_params(seed=1, hidden=4 * D).copy(), rc.transformer_init(V, C, 4, 2, L),
                  rc.transformer_init(V, C, D, 4, L), rc.transformer_init(V, C, D, H, 1),
                  _params(dtype=np.float32)):
        _, cache = rc.transformer_prefill(other, prompts, max_new=2)
        if other["embed"].shape == params["embed"].shape and len(other["blocks"]) == L \
                and other["embed"].dtype == params["embed"].dtype \
                and other["blocks"][0]["attn"]["w"].shape == params["blocks"][0]["attn"]["w"].shape:
            rc.transformer_decode(params, cache, np.array([4, 5]))  # same sizes: usable
            continue
        with pytest.raises(ValueError, match="cache: from another model"):
            rc.transformer_decode(params, cache, np.array([4, 5]))
    with pytest.raises(TypeError, match="cache: expected a KVCache"):
        rc.transformer_decode(params, {"keys": None}, np.array([4, 5]))
    _, cache = rc.transformer_prefill(params, prompts, max_new=1)
    with pytest.raises(ValueError, match=r"tokens: expected shape \(2,\)"):
        rc.transformer_decode(params, cache, np.array([4, 5, 6]))
    rc.transformer_decode(params, cache, np.array([4, rc.PAD]))
    assert cache.positions.tolist() == [4, 3]
    with pytest.raises(ValueError, match="cache: full"):
        rc.transformer_decode(params, cache, np.array([4, 5]))
    # a cache is checked when made
    fields = {k: getattr(cache, k) for k in ("keys", "values", "visible", "positions", "length")}
    with pytest.raises(ValueError, match="positions: expected the number of visible tokens"):
        rc.KVCache(**{**fields, "positions": fields["positions"] + 1})
    with pytest.raises(ValueError, match="length: expected at most the capacity 4"):
        rc.KVCache(**{**fields, "length": 5})
    with pytest.raises(ValueError, match="keys: expected finite values"):
        rc.KVCache(**{**fields, "keys": fields["keys"] * np.nan})


def _reversal(n, seed, tok):
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(list("abcdef"), 4)) for _ in range(n)]
    return [w + "=" for w in words], [w[::-1] for w in words]


def test_sft_learns_to_reverse_words():
    """Reversing 4 letters needs attention to a position that moves with the output (the i-th
    answer letter is the (5-i)-th prompt letter): one block learns it from 150 minibatches;
    exact answers on held-out words are 1 in 1296 by chance."""
    tok = rc.Tokenizer("abcdef=")
    tokens, mask, _ = tok.encode_pairs(*_reversal(1000, 0, tok))
    params = rc.lm_init(tok.vocab_size, context=12, dim=32, layers=1, seed=0)
    params, losses = rc.sft(params, tokens, mask, steps=150, lr=1e-2, seed=0, batch=64)
    assert losses[:5].mean() > 1.5 and losses[-10:].mean() < 0.05
    prompts, answers = _reversal(300, 1, tok)
    ids = tok.encode_prompts(prompts)
    out, _ = rc.generate(params, ids, 5, np.random.default_rng(0), top_k=1)
    assert np.mean([g == a for g, a in zip(tok.decode_completions(out, ids.shape[1]), answers)]) > 0.95
