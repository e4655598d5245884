"""RLHF end to end on the style task: a KL-penalised policy improves the reward within a KL bound,
and without the penalty it hacks the reward model (higher reward than any fluent completion can
earn, worse true quality, KL far past the bound)."""

import numpy as np
import pytest

import rlcourse as rc

TOK = rc.Tokenizer(rc.STYLE_WORDS)
KL_BOUND = 3.0  # nats per completion, the bound lesson 12 states


@pytest.fixture(scope="module")
def setup():
    prompts, completions = rc.style_data(1500, seed=0)
    tokens, mask, _ = TOK.encode_pairs(prompts, completions)
    params = rc.lm_init(TOK.vocab_size, context=11, dim=16, seed=0)
    sft, _ = rc.sft(params, tokens, mask, steps=200, lr=1e-2, seed=0, batch=64)

    p, chosen, rejected = rc.style_preferences(800, seed=1)
    tc, mc, _ = TOK.encode_pairs(p, chosen)
    tr, mr, _ = TOK.encode_pairs(p, rejected)
    xc, xr = rc.token_counts(tc, mc, TOK.vocab_size), rc.token_counts(tr, mr, TOK.vocab_size)
    rm = {"w": np.zeros(TOK.vocab_size)}
    opt = rc.Adam(lr=0.05)
    state = opt.init(rm)
    loss_fn = lambda q: rc.preference_loss(xc @ q["w"], xr @ q["w"])
    for _ in range(200):
        _, grads = rc.value_and_grad(loss_fn)(rm)
        rm, state = opt.step(rm, grads, state)
    reward = lambda toks, m: rc.token_counts(toks, m, TOK.vocab_size) @ rm["w"]
    prompt_tokens = TOK.encode_prompts(rc.style_data(256, seed=2)[0])
    width = prompt_tokens.shape[1]
    quality = lambda toks, m: rc.style_quality(TOK.decode_completions(toks, width))[0]
    # the best score a fluent completion can earn (400 draws cover all 24 grammatical completions)
    fluent_tokens, fluent_mask, _ = TOK.encode_pairs(*rc.style_data(400, seed=3))
    best_fluent = reward(fluent_tokens, fluent_mask).max()
    return sft, reward, prompt_tokens, quality, best_fluent


def _run(setup, beta):
    sft, reward, prompt_tokens, quality, _ = setup
    return rc.rlhf_train(sft, sft, reward, prompt_tokens, 30, beta=beta, lr=3e-3, seed=1, batch=64,
                         max_new=8, epochs=4, metric=quality)


def test_kl_penalty_improves_reward_within_the_bound(setup):
    h = _run(setup, beta=0.3)
    start, end = slice(0, 3), slice(-5, None)
    assert h.score[end].mean() > h.score[start].mean() + 1.0
    assert h.kl.max() < KL_BOUND
    assert h.metric[end].mean() > h.metric[start].mean()  # true quality rises with the reward


def test_without_penalty_the_policy_hacks_the_reward_model(setup):
    *_, best_fluent = setup
    h = _run(setup, beta=0.0)
    end = slice(-5, None)
    assert h.score[end].mean() > best_fluent  # more reward than any fluent completion can earn
    assert h.metric[end].mean() < h.metric[:3].mean()  # while true quality falls
    assert h.kl[end].mean() > 3 * KL_BOUND
