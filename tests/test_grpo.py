"""GRPO: the loss against hand-computed values, its gradient and masking, the grouping of a
rollout, and the must-show result that GRPO lifts a weak SFT model's verifier accuracy on
one-digit addition by at least 20 percentage points."""

import numpy as np
import pytest

import rlcourse as rc

TOK = rc.Tokenizer("0123456789+=")
PROMPTS = [f"{a}+{b}=" for a in range(10) for b in range(10)]


def verifier(prompt, completion):
    a, b = prompt.rstrip("=").split("+")
    return float(completion == str(int(a) + int(b)))


def _reward_fn(prompt_len):
    def reward_fn(tokens, mask):
        return [verifier(TOK.decode(row[:prompt_len]), TOK.decode(row[prompt_len:])) for row in tokens]
    return reward_fn


def _accuracy(params, tokens, mask):
    """Probability that a sample passes the verifier, averaged over all 100 prompts: exact,
    because each prompt has exactly one right answer."""
    return float(np.mean(np.exp(rc.completion_log_prob(params, tokens, mask))))


# ---------------------------------------------------------------- the loss

LOGP = np.array([[-1.0, -0.5, -2.0], [-0.3, -1.2, -0.7]])
OLD = np.array([[-1.1, -0.5, -2.0], [-0.3, -1.0, -0.7]])
REF = np.array([[-0.9, -0.6, -np.inf], [-0.5, -1.0, -0.2]])  # -inf on a padding token
MASK = np.array([[True, True, False], [True, True, True]])
ADV = np.array([1.0, -1.0])


def _k3(logp, ref):
    d = ref - logp
    return np.exp(d) - d - 1


def test_grpo_loss_is_ppo_clip_plus_k3_kl_token_mean():
    out = rc.grpo_loss(LOGP, OLD, REF, ADV, MASK, clip=0.2, kl_coef=0.1)
    # hand: ratios r = exp(logp - old) on the 5 action tokens, advantage +1 row 0, -1 row 1
    r = np.exp(LOGP - OLD)
    terms = [min(r[0, 0], np.clip(r[0, 0], 0.8, 1.2)), min(r[0, 1], 1.2),
             min(-r[1, 0], -np.clip(r[1, 0], 0.8, 1.2)), min(-r[1, 1], -np.clip(r[1, 1], 0.8, 1.2)),
             min(-r[1, 2], -np.clip(r[1, 2], 0.8, 1.2))]
    policy = -sum(terms) / 5
    kl = (_k3(-1.0, -0.9) + _k3(-0.5, -0.6) + _k3(-0.3, -0.5) + _k3(-1.2, -1.0) + _k3(-0.7, -0.2)) / 5
    assert out.policy_loss == pytest.approx(policy, rel=1e-12)
    assert out.kl == pytest.approx(kl, rel=1e-12)
    assert float(out.loss) == pytest.approx(policy + 0.1 * kl, rel=1e-12)


def test_grpo_loss_sequence_mean_averages_each_completion_first():
    out = rc.grpo_loss(LOGP, OLD, REF, ADV, MASK, kl_coef=0.0, aggregate="sequence")
    r = np.exp(LOGP - OLD)
    row0 = (min(r[0, 0], 1.2) + min(r[0, 1], 1.2)) / 2
    row1 = sum(min(-r[1, t], -np.clip(r[1, t], 0.8, 1.2)) for t in range(3)) / 3
    assert float(out.loss) == pytest.approx(-(row0 + row1) / 2, rel=1e-12)


def test_grpo_loss_gradient_matches_finite_differences_and_skips_padding():
    def loss(logp):
        return rc.grpo_loss(logp, OLD, REF, ADV, MASK, kl_coef=0.3).loss

    logp = LOGP.copy()
    logp[0, 2] = -50.0  # a padding token: whatever its value, it must not matter
    grad = rc.grad(loss)(logp)
    assert np.isfinite(grad).all() and grad[0, 2] == 0.0
    numeric = rc.numerical_grad(lambda x: float(loss(x)), logp)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def _assert_padding_is_ignored(loss_fn):
    """Whatever the log-probs at padding positions hold, the loss is the same."""
    base = float(loss_fn(LOGP, OLD, REF, ADV, MASK))
    for junk in (-50.0, 3.0):
        logp = LOGP.copy()
        logp[~MASK] = junk
        assert float(loss_fn(logp, OLD, REF, ADV, MASK)) == pytest.approx(base, rel=1e-12), \
            "a padding position changed the loss"


def test_grpo_loss_ignores_padding():
    _assert_padding_is_ignored(lambda *a: rc.grpo_loss(*a, kl_coef=0.5).loss)


def test_padding_check_catches_a_kl_over_every_position():
    def leaky(logp, old, ref, adv, mask):  # planted bug: the KL term averages over padding too
        policy = rc.ppo_clip_loss(logp, old, adv, mask).loss
        d = np.where(np.isfinite(ref), ref, 0.0) - logp
        return policy + 0.5 * np.mean(np.exp(d) - d - 1)

    with pytest.raises(AssertionError, match="padding"):
        _assert_padding_is_ignored(leaky)


def test_kl_term_pulls_towards_the_reference():
    logp = np.array([[-2.0, -2.0]])
    ref = np.array([[-1.0, -3.0]])
    grad = rc.grad(lambda lp: rc.grpo_loss(lp, lp.value, ref, np.zeros(1), np.ones((1, 2), bool),
                                           kl_coef=1.0).loss)(logp)
    # descending the gradient raises logp where ref is higher and lowers it where ref is lower
    assert grad[0, 0] < 0 < grad[0, 1]


def test_grpo_loss_rejects_bad_input():
    with pytest.raises(ValueError, match="kl_coef"):
        rc.grpo_loss(LOGP, OLD, REF, ADV, MASK, kl_coef=-0.1)
    with pytest.raises(ValueError, match="ref_logp: expected shape"):
        rc.grpo_loss(LOGP, OLD, REF[:1], ADV, MASK)
    with pytest.raises(ValueError, match="aggregate"):
        rc.grpo_loss(LOGP, OLD, REF, ADV, MASK, aggregate="batch")
    with pytest.raises(ValueError, match="logp"):
        rc.grpo_loss(np.full_like(LOGP, np.nan), OLD, REF, ADV, MASK)


# ---------------------------------------------------------------- the rollout

@pytest.fixture(scope="module")
def addition():
    tokens, mask, prompt_len = TOK.encode_pairs(PROMPTS, [verifier_answer(p) for p in PROMPTS])
    return tokens, mask, prompt_len, TOK.encode_prompts(PROMPTS)


def verifier_answer(prompt):
    a, b = prompt.rstrip("=").split("+")
    return str(int(a) + int(b))


def test_grpo_step_samples_a_group_per_prompt(addition):
    tokens, mask, plen, prompt_ids = addition
    params = rc.lm_init(TOK.vocab_size, context=8, dim=8, seed=1)
    opt = rc.Adam(lr=1e-3)
    _, _, stats = rc.grpo_step(params, params, _reward_fn(plen), prompt_ids[:3],
                               np.random.default_rng(0), opt, opt.init(params), group_size=4,
                               max_new=3)
    rows = stats["tokens"][:, :plen]
    for g in range(3):
        assert (rows[4 * g: 4 * g + 4] == prompt_ids[g]).all()
    np.testing.assert_allclose(stats["advantages"].reshape(3, 4).sum(axis=1), 0.0, atol=1e-12)
    assert not stats["mask"][:, :plen].any()
    with pytest.raises(ValueError, match="reward_fn"):
        rc.grpo_step(params, params, lambda t, m: np.zeros(2), prompt_ids[:3],
                     np.random.default_rng(0), opt, opt.init(params), group_size=4, max_new=3)


def test_grpo_raises_verifier_accuracy_by_20_points(addition):
    """Must-show: a weak SFT model (a short fine-tune on the 100 sums, about 20% right) gains
    at least 20 percentage points of verifier accuracy from GRPO with the verifier as the only
    reward. The transformer learns this slower than the old window MLP did (which saw the
    operands side by side and took lr 5e-3): above lr 2e-3 its policy collapses, and at 1.5e-3
    300 iterations gave +26 to +43 points over six seeds."""
    tokens, mask, plen, prompt_ids = addition
    weak, _ = rc.sft(rc.lm_init(TOK.vocab_size, context=8, dim=16, seed=0), tokens, mask,
                     steps=100, lr=3e-3, seed=0, batch=32)
    before = _accuracy(weak, tokens, mask)
    assert before < 0.5, "the starting model should be weak, or the test proves little"
    history = rc.grpo_train(weak, weak, _reward_fn(plen), prompt_ids, iterations=300,
                            group_size=8, prompts_per_step=16, lr=1.5e-3, max_new=3, seed=0)
    after = _accuracy(history.params, tokens, mask)
    assert after - before >= 0.20
    assert history.reward[-20:].mean() > history.reward[:20].mean()
