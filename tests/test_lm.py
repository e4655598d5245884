"""The course's LM API on the transformer: causality, the t -> t+1 alignment, padding,
gradients, SFT and sampling (the model itself is tested in test_transformer.py)."""

import numpy as np
import pytest

import rlcourse as rc

TOK = rc.Tokenizer("0123456789+=")


def _params(dtype=np.float64, seed=0):
    return rc.lm_init(TOK.vocab_size, context=12, dim=8, seed=seed, heads=2, hidden=12, dtype=dtype)


def test_tokenizer_round_trip_and_specials():
    ids = TOK.encode("12+7=", eos=True)
    assert ids[0] == rc.BOS and ids[-1] == rc.EOS
    assert TOK.decode(ids) == "12+7="
    assert TOK.decode([rc.BOS, 4, rc.EOS, 5]) == "1"  # stops at EOS
    words = rc.Tokenizer(["the", "cat", "sat"])
    assert words.decode(words.encode("the cat sat")) == "the cat sat"
    assert words.vocab_size == 6
    with pytest.raises(ValueError, match="'x' is not in the vocabulary"):
        TOK.encode("1x2")


def test_tokenizer_refuses_what_it_cannot_read_back():
    with pytest.raises(TypeError, match="symbols: expected a string of characters or a list"):
        rc.Tokenizer({"a", "b"})  # a set would number its words differently from run to run
    with pytest.raises(ValueError, match="symbols: '<eos>' is the name of a special token"):
        rc.Tokenizer(["a", "<eos>"])
    with pytest.raises(ValueError, match="symbols: words must be non-empty strings"):
        rc.Tokenizer(["a", 1])
    with pytest.raises(TypeError, match="text: expected a string"):
        TOK.encode(12)
    with pytest.raises(ValueError, match=f"ids: values must be < {TOK.vocab_size}"):
        TOK.decode([4, TOK.vocab_size])
    with pytest.raises(ValueError, match="ids: values must be >= 0"):
        TOK.decode([4, -1])  # was silently skipped
    assert TOK.decode([]) == "" and TOK.decode(np.array([], int)) == ""
    with pytest.raises(TypeError, match="prompts: expected a non-empty list of strings"):
        TOK.encode_prompts([])
    with pytest.raises(TypeError, match="prompts: expected a non-empty list of strings"):
        TOK.encode_prompts("1+2=")
    with pytest.raises(TypeError, match="completions: expected a list of strings"):
        TOK.encode_pairs(["1+"], "3")
    tokens, _, p = TOK.encode_pairs(["1+2=", "3="], ["3", "12"])
    assert TOK.decode_completions(tokens, p) == ["3", "12"]
    with pytest.raises(ValueError, match="prompt_len: expected an integer >= 0"):
        TOK.decode_completions(tokens, -1)
    with pytest.raises(ValueError, match=r"tokens: expected shape \[B, L\]"):
        TOK.decode_completions(tokens[0], p)


def test_encode_pairs_masks_only_completion_and_eos():
    tokens, mask, plen = TOK.encode_pairs(["1+2=", "10+10="], ["3", "20"])
    assert plen == 7  # BOS + "10+10="
    assert tokens[0, :3].tolist() == [rc.PAD] * 2 + [rc.BOS]  # left padding
    assert TOK.decode_completions(tokens, plen) == ["3", "20"]
    assert mask[:, :plen].sum() == 0
    # row 0: "3", EOS then PAD; row 1: "2", "0", EOS
    assert mask[0].tolist() == [False] * 7 + [True, True, False]
    assert mask[1].tolist() == [False] * 7 + [True, True, True]


def test_logits_are_causal():
    params = _params()
    rng = np.random.default_rng(0)
    tokens = rng.integers(3, TOK.vocab_size, size=(3, 9))
    base = rc.lm_logits(params, tokens)
    for t in range(9):
        changed = tokens.copy()
        changed[:, t:] = rng.integers(3, TOK.vocab_size, size=(3, 9 - t))
        changed[:, t] = (tokens[:, t] - 3 + 1) % (TOK.vocab_size - 3) + 3  # surely different
        out = rc.lm_logits(params, changed)
        np.testing.assert_array_equal(out[:, :t], base[:, :t])
        assert not np.allclose(out[:, t], base[:, t])  # position t sees token t


def test_the_language_model_is_the_transformer():
    params = rc.lm_init(TOK.vocab_size, seed=1)
    assert rc.transformer_config(params) == rc.TransformerConfig(TOK.vocab_size, 16, 32, 4, 2, 128)
    tokens = np.random.default_rng(1).integers(3, TOK.vocab_size, size=(2, 8))
    np.testing.assert_array_equal(rc.lm_logits(params, tokens), rc.transformer_logits(params, tokens))
    # the first token is seen by every later position: no fixed window
    changed = tokens.copy()
    changed[:, 0] = (tokens[:, 0] - 3 + 1) % (TOK.vocab_size - 3) + 3
    assert not np.isclose(rc.lm_logits(params, changed)[:, -1], rc.lm_logits(params, tokens)[:, -1]).all()


def test_left_padding_changes_no_logit():
    params = _params()
    prompt = TOK.encode("3+4=")[None]
    padded = np.concatenate([np.zeros((1, 3), dtype=prompt.dtype), prompt], axis=1)
    np.testing.assert_allclose(rc.lm_logits(params, padded)[:, 3:], rc.lm_logits(params, prompt),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(rc.lm_next_logits(params, padded), rc.lm_logits(params, prompt)[:, -1])


def test_logits_at_t_predict_t_plus_1():
    """Fit one sequence: the model must then put its mass on the *next* token at every step."""
    tokens, mask, _ = TOK.encode_pairs(["1+2="], ["3"])
    seq = np.array([[rc.BOS, 4, 5, 6, 7, 8, 9, rc.EOS]])
    params, _ = rc.sft(_params(np.float32), seq, np.ones_like(seq, dtype=bool), steps=150,
                       lr=1e-2, batch=1)
    pred = np.argmax(rc.lm_logits(params, seq), axis=-1)[0]
    assert pred[:-1].tolist() == seq[0, 1:].tolist()
    assert tokens.shape == mask.shape


def test_gradient_matches_finite_differences():
    params = _params(np.float64)
    tokens, mask, _ = TOK.encode_pairs(["1+2=", "4+4="], ["3", "8"])
    _, grads = rc.value_and_grad(rc.lm_nll)(params, tokens, mask)
    for path in (("embed",), ("blocks", 0, "attn", "w"), ("blocks", 1, "out", "b"), ("head",)):
        leaf = params
        for key in path:
            leaf = leaf[key]
        flat = leaf.reshape(-1)
        picks = np.random.default_rng(2).choice(flat.size, size=6, replace=False)

        def f(values, picks=picks, flat=flat):
            old = flat[picks].copy()
            flat[picks] = values
            out = rc.lm_nll(params, tokens, mask)
            flat[picks] = old
            return out

        numeric = rc.numerical_grad(f, flat[picks].copy())
        g = grads
        for key in path:
            g = g[key]
        np.testing.assert_allclose(g.reshape(-1)[picks], numeric, rtol=1e-5, atol=1e-8)


def test_padding_and_prompt_get_no_gradient_and_do_not_change_the_loss():
    params = _params(np.float64)
    tokens, mask, plen = TOK.encode_pairs(["1+2=", "10+10="], ["3", "20"])
    loss, grads = rc.value_and_grad(rc.lm_nll)(params, tokens, mask)
    # change the row-0 padding token after EOS (it is after every counted position)
    changed = tokens.copy()
    changed[0, -1] = 7
    loss2, grads2 = rc.value_and_grad(rc.lm_nll)(params, changed, mask)
    assert loss == loss2
    for g1, g2 in zip(rc.tree_leaves(grads), rc.tree_leaves(grads2)):
        np.testing.assert_array_equal(g1, g2)


def test_sft_lowers_loss_and_learns_addition():
    prompts, answers = rc.addition_data(600, seed=0, max_operand=4)
    tokens, mask, _ = TOK.encode_pairs(prompts, answers)
    params = rc.lm_init(TOK.vocab_size, context=8, dim=16, seed=0)
    before = rc.lm_nll(params, tokens, mask)
    params, losses = rc.sft(params, tokens, mask, steps=250, lr=1e-2, seed=0, batch=64)
    after = rc.lm_nll(params, tokens, mask)
    # uniform guessing costs log(V) nats per token; a model that knows addition costs near 0
    assert before > 0.9 * np.log(TOK.vocab_size)
    assert after < 0.1 and losses[-1] < losses[0]
    test_prompts, test_answers = rc.addition_data(200, seed=1, max_operand=4)
    prompt_tokens = TOK.encode_prompts(test_prompts)
    out, _ = rc.generate(params, prompt_tokens, 3, np.random.default_rng(0), top_k=1)
    got = TOK.decode_completions(out, prompt_tokens.shape[1])
    assert np.mean([g == a for g, a in zip(got, test_answers)]) > 0.95


def test_generate_mask_eos_and_determinism():
    params = _params(np.float32, seed=3)
    prompts = TOK.encode_prompts(["1+2=", "3+3=", "9+9="])
    a, ma = rc.generate(params, prompts, 6, np.random.default_rng(5))
    b, mb = rc.generate(params, prompts, 6, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ma, mb)
    assert a.shape == ma.shape == (3, prompts.shape[1] + 6)
    np.testing.assert_array_equal(a[:, :prompts.shape[1]], prompts)
    assert not ma[:, :prompts.shape[1]].any()
    for row, m in zip(a, ma):
        gen = row[prompts.shape[1]:]
        eos = np.flatnonzero(gen == rc.EOS)
        n = eos[0] + 1 if eos.size else len(gen)
        assert m[prompts.shape[1]:].tolist() == [True] * n + [False] * (len(gen) - n)
        assert (gen[n:] == rc.PAD).all()


def test_generate_samples_from_lm_logits():
    """With temperature 1 the first sampled token's frequencies match softmax(lm_next_logits)."""
    params = _params(np.float64, seed=4)
    prompts = np.repeat(TOK.encode_prompts(["1+"]), 4000, axis=0)
    out, _ = rc.generate(params, prompts, 1, np.random.default_rng(0))
    probs = rc.softmax(rc.lm_next_logits(params, prompts[:1]))[0]
    freq = np.bincount(out[:, -1], minlength=TOK.vocab_size) / len(out)
    assert np.abs(freq - probs).max() < 4 * np.sqrt(0.25 / 4000)


def test_bad_inputs_raise():
    params = _params()
    with pytest.raises(ValueError, match="tokens: values must be <"):
        rc.lm_logits(params, [[1, TOK.vocab_size]])
    with pytest.raises(ValueError, match="tokens: expected shape"):
        rc.lm_logits(params, [1, 2, 3])
    with pytest.raises(TypeError, match="tokens"):
        rc.lm_logits(params, [[1.0, 2.0]])
    with pytest.raises(ValueError, match="mask"):
        rc.sft(params, np.array([[1, 4, 5]]), np.zeros((1, 3), dtype=bool), steps=1)
    with pytest.raises(TypeError, match="rng"):
        rc.generate(params, [[1, 4]], 2, rng=0)
    with pytest.raises(ValueError, match="context"):
        rc.lm_init(10, 0, 4)
    with pytest.raises(ValueError, match="prompts: a prompt plus max_new=9 sampled tokens could reach 14 "
                                         "real .* context of 12"):
        rc.generate(params, TOK.encode_prompts(["1+2=", "3="]), 9, np.random.default_rng(0))
    with pytest.raises(ValueError, match="max_new"):
        rc.generate(params, [[1, 4]], 0, np.random.default_rng(0))
    # the sampling settings and eos are checked before any token is computed
    for bad, match in [(dict(temperature="1"), "temperature"), (dict(temperature=0.0), "temperature"),
                       (dict(top_k=0), "top_k"), (dict(top_p=0.0), "top_p"), (dict(top_p="0.5"), "top_p"),
                       (dict(eos=TOK.vocab_size), "eos: expected a token id below"),
                       (dict(eos=-1), "eos"), (dict(eos=None), "eos")]:
        with pytest.raises((TypeError, ValueError), match=match):
            rc.generate(params, [[1, 4]], 2, np.random.default_rng(0), **bad)
