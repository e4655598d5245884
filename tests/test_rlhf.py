"""RLHF end to end on the style task, at lesson 12's settings: a KL-penalised policy improves the
reward and the true quality within a KL bound; without the penalty it hacks the reward model
(higher reward than any fluent completion can earn, worse true quality, KL far past the bound);
without the missing-EOS penalty the hacked completions run into the length limit."""

import numpy as np
import pytest

import rlcourse as rc

TOK = rc.Tokenizer(rc.STYLE_WORDS)
KL_BOUND = 3.0  # nats per completion (lesson 12's beta = 0.5 runs settle near 1.2)


@pytest.fixture(scope="module")
def setup():
    prompts, completions = rc.style_data(1500, seed=0)
    tokens, mask, _ = TOK.encode_pairs(prompts, completions)
    params = rc.lm_init(TOK.vocab_size, context=11, dim=16, layers=1, seed=0)
    sft, _ = rc.sft(params, tokens, mask, steps=200, lr=1e-2, seed=0, batch=64)

    p, chosen, rejected = rc.style_preferences(800, seed=2, sharpness=4.0)
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


def _run(setup, beta, missing_eos_penalty=10.0, seed=1, iterations=60):
    """Lesson 12's settings (one seed; the lesson asserts its claims over three)."""
    sft, reward, prompt_tokens, quality, _ = setup
    return rc.rlhf_train(sft, sft, reward, prompt_tokens, iterations, beta=beta, lr=1.5e-3, seed=seed,
                         batch=32, max_new=8, epochs=2, metric=quality,
                         missing_eos_penalty=missing_eos_penalty)


def test_kl_penalty_improves_reward_and_quality_within_the_bound(setup):
    h = _run(setup, beta=0.5)
    start, end = slice(0, 3), slice(-5, None)
    assert h.score[end].mean() > h.score[start].mean() + 1.0
    assert h.kl.max() < KL_BOUND
    assert h.metric[end].mean() > h.metric[start].mean() + 0.2  # true quality rises with the reward
    assert h.truncated[end].mean() < 0.1


def test_without_penalty_the_policy_hacks_the_reward_model(setup):
    *_, best_fluent = setup
    h = _run(setup, beta=0.0)
    end = slice(-5, None)
    assert h.score[end].mean() > best_fluent  # more reward than any fluent completion can earn
    assert h.metric[end].mean() < h.metric[:3].mean()  # while true quality falls
    assert h.kl[end].mean() > 3 * KL_BOUND


def test_without_the_missing_eos_penalty_hacked_completions_run_into_the_limit(setup):
    h = _run(setup, beta=0.0, missing_eos_penalty=None)
    assert h.truncated[:3].mean() < 0.1  # the SFT model ends its sentences
    assert h.truncated[-5:].mean() > 0.9  # the hacked policy is cut at max_new, scored as finished


def test_penalize_missing_eos_by_hand():
    eos, pad = rc.Tokenizer(rc.STYLE_WORDS).eos, 0
    tokens = np.array([[1, 5, 6, eos, pad],    # finished early
                       [1, 5, 6, 6, 6],        # cut at the limit
                       [1, eos, 6, 6, 6],      # EOS only in the prompt: cut
                       [1, 5, 6, 6, eos]])     # finished on the last column
    mask = np.zeros(tokens.shape, bool)
    mask[:, 2:] = tokens[:, 2:] != pad
    got = rc.penalize_missing_eos(np.array([1.0, 2.0, 3.0, 4.0]), tokens, mask, 10.0, eos=eos)
    np.testing.assert_allclose(got, [1.0, -8.0, -7.0, 4.0])
    with pytest.raises(ValueError, match="penalty"):
        rc.penalize_missing_eos(np.ones(4), tokens, mask, -1.0, eos=eos)
    with pytest.raises(ValueError, match="mask"):
        rc.penalize_missing_eos(np.ones(3), tokens, mask, 1.0, eos=eos)
    sft = rc.lm_init(rc.Tokenizer(rc.STYLE_WORDS).vocab_size, context=11, dim=16, layers=1, seed=0)
    with pytest.raises(ValueError, match="missing_eos_penalty"):
        rc.rlhf_train(sft, sft, lambda t, m: np.zeros(len(t)), np.ones((4, 3), int), 1,
                      missing_eos_penalty=0.0)
