"""GRPO: the loss against hand-computed values, its gradient and masking, TRL's three
aggregations and the KL correction, RLOO's advantage, the grouping of a rollout, the reversal
task's verifier and splits, pass@k, rejection-sampling fine-tuning, and the must-show result:
on three seeds, GRPO with the verifier as its only reward lifts a weak SFT model's pass@1 on
held-out words (never trained on) by more than 40 points."""

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


# ---------------------------------------------------------------- TRL's aggregations

def test_aggregations_match_hand_values():
    per_token = np.array([[1.0, 2.0, 99.0], [3.0, 4.0, 5.0]])  # 99: padding, must not count
    mask = np.array([[True, True, False], [True, True, True]])
    grpo = rc.aggregate_token_loss(per_token, mask, "grpo")
    dapo = rc.aggregate_token_loss(per_token, mask, "dapo")
    dr = rc.aggregate_token_loss(per_token, mask, "dr_grpo", max_completion_length=4)
    assert float(grpo) == pytest.approx((1.5 + 4.0) / 2)
    assert float(dapo) == pytest.approx(15.0 / 5)
    assert float(dr) == pytest.approx(15.0 / (2 * 4))
    assert float(rc.aggregate_token_loss(per_token, mask, "sequence")) == float(grpo)
    assert float(rc.aggregate_token_loss(per_token, mask, "token")) == float(dapo)


def test_aggregations_reject_bad_input():
    per_token, mask = np.ones((2, 3)), np.ones((2, 3), bool)
    with pytest.raises(ValueError, match="max_completion_length"):
        rc.aggregate_token_loss(per_token, mask, "dr_grpo")
    with pytest.raises(ValueError, match="more than max_completion_length"):
        rc.aggregate_token_loss(per_token, mask, "dr_grpo", max_completion_length=2)
    with pytest.raises(ValueError, match="loss_type"):
        rc.aggregate_token_loss(per_token, mask, "mean")
    with pytest.raises(ValueError, match="no action token"):
        rc.aggregate_token_loss(per_token, np.array([[True] * 3, [False] * 3]), "grpo")


def test_dr_grpo_gradient_per_token_is_constant():
    """Dr. GRPO's per-token weight is 1/(B L) whatever the lengths; the sequence mean's is
    1/(B |o_i|); the token mean's 1/sum|o_j| (at the first step, where every ratio is 1)."""
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    logp = np.full((2, 4), -1.0)
    adv = np.array([1.0, -1.0])
    weights = {"dr_grpo": np.full(2, 1 / (2 * 5)), "grpo": 1 / (2 * np.array([2, 4])),
               "dapo": np.full(2, 1 / 6)}
    for loss_type, w in weights.items():
        g = rc.grad(lambda lp, lt=loss_type: rc.grpo_loss(lp, logp, logp, adv, mask, kl_coef=0.0,
                                                          aggregate=lt, max_completion_length=5).loss)(logp)
        np.testing.assert_allclose(g, np.where(mask, -(adv * w)[:, None], 0.0), atol=1e-12)


# ---------------------------------------------------------------- the KL term

def _expected_kl_gradients(theta, ref_logp, kl_correction):
    """The exact expected gradient of the k3 term (times the ratio with ``kl_correction``) over
    tokens drawn from softmax(theta), the sampling weights held fixed as on sampled data."""
    def weighted(th):
        logp = rc.log_softmax(th)
        w = np.exp(np.asarray(rc.stop_gradient(logp)))
        d = ref_logp - logp
        k3 = rc.exp(d) - d - 1.0
        if kl_correction:
            k3 = rc.exp(logp - rc.stop_gradient(logp)) * k3
        return rc.sum(w * k3)
    return rc.grad(weighted)(theta)


def test_kl_correction_changes_the_gradient_to_that_of_kl_pi_ref():
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = rng.normal(0, 1.5, size=5)
        ref = theta + rng.normal(0, 1.0, size=5)
        ref = ref - np.log(np.exp(ref).sum())
        reverse = rc.grad(lambda th, ref=ref: rc.sum(rc.softmax(th) * (rc.log_softmax(th) - ref)))(theta)
        forward = rc.grad(lambda th, ref=ref: rc.sum(np.exp(ref) * (ref - rc.log_softmax(th))))(theta)
        np.testing.assert_allclose(_expected_kl_gradients(theta, ref, False), forward, atol=1e-10)
        np.testing.assert_allclose(_expected_kl_gradients(theta, ref, True), reverse, atol=1e-10)


def test_grpo_loss_kl_correction_is_k3_times_the_ratio():
    """Through rc.grpo_loss itself: at ratio 1 the value is unchanged and each token's gradient
    gains k3 (d(r k3)/dlogp = r k3 + r dk3/dlogp); away from 1 the value is the weighted k3."""
    def kl_of(lp, correct):
        return rc.grpo_loss(lp, OLD, REF, np.zeros(2), MASK, kl_coef=1.0, kl_correction=correct).loss

    at_old = np.where(MASK, OLD, LOGP)
    assert float(kl_of(at_old, True)) == pytest.approx(float(kl_of(at_old, False)), rel=1e-12)
    g_plain = rc.grad(lambda lp: kl_of(lp, False))(at_old)
    g_corrected = rc.grad(lambda lp: kl_of(lp, True))(at_old)
    k3_at_old = np.where(MASK, _k3(at_old, np.where(MASK, REF, 0)), 0)
    np.testing.assert_allclose(g_corrected - g_plain, k3_at_old / 5, atol=1e-12)
    r = np.exp(np.where(MASK, LOGP - OLD, 0))
    k3 = np.where(MASK, _k3(LOGP, np.where(MASK, REF, 0)), 0)
    assert float(kl_of(LOGP, True)) == pytest.approx(float((r * k3).sum() / 5), rel=1e-12)


# ---------------------------------------------------------------- advantages

def test_rloo_advantages_leave_one_out():
    rewards = np.array([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    adv = rc.rloo_advantages(rewards, 4)
    np.testing.assert_allclose(adv[:4], [1 - 1 / 3, 0 - 2 / 3, 0 - 2 / 3, 1 - 1 / 3])
    assert (adv[4:] == 0).all()
    r = np.random.default_rng(1).normal(size=24)
    np.testing.assert_allclose(rc.rloo_advantages(r, 6), 6 / 5 * rc.grpo_advantages(r, 6, scale=False))
    with pytest.raises(ValueError, match="group_size"):
        rc.rloo_advantages(np.zeros(4), 1)


def test_scaled_rloo_is_rloo_over_grpos_std():
    from rlcourse.posttrain.grpo import _rloo_scaled
    r = np.r_[np.random.default_rng(2).integers(0, 2, size=24).astype(float), np.ones(8)]
    for scale in (True, "group", "batch"):
        np.testing.assert_allclose(_rloo_scaled(r, 8, scale), 8 / 7 * rc.grpo_advantages(r, 8, scale=scale),
                                   atol=1e-12)
    np.testing.assert_allclose(_rloo_scaled(r, 8, False), rc.rloo_advantages(r, 8))
    assert (_rloo_scaled(r, 8, True)[-8:] == 0).all()


def test_grpo_advantages_batch_scale_uses_one_std():
    rewards = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    centred = rc.grpo_advantages(rewards, 4, scale="none")
    np.testing.assert_allclose(rc.grpo_advantages(rewards, 4, scale="batch"),
                               centred / (rewards.std(ddof=1) + 1e-4))
    with pytest.raises(ValueError, match="scale"):
        rc.grpo_advantages(rewards, 4, scale="prompt")


# ---------------------------------------------------------------- the reversal task and pass@k

def test_reversal_task_splits_are_disjoint_and_cover_the_words():
    task = rc.reversal_task(alphabet="abc", length=3, n_sft=5, n_test=7, seed=3)
    assert len(task.sft) == 5 and len(task.test) == 7 and len(task.rl) == 27 - 12
    assert len(set(task.sft) | set(task.rl) | set(task.test)) == 27
    with pytest.raises(ValueError, match="n_sft"):
        rc.reversal_task(alphabet="ab", length=2, n_sft=2, n_test=2)


def test_reversal_verifier_is_strict_about_tokens():
    task = rc.reversal_task()
    tokens, mask = task.pairs(["abcd", "eeab"])
    assert task.reward_fn(tokens, mask).tolist() == [1.0, 1.0]
    p = task.prompt_len
    bad = tokens.copy()
    bad[0, p + 4] = rc.PAD  # the answer without its EOS
    bad[1, p + 1] = rc.PAD  # a PAD inside the answer (decode would skip it)
    assert task.reward_fn(bad, mask).tolist() == [0.0, 0.0]
    wrong = tokens.copy()
    wrong[0, [p, p + 1]] = wrong[0, [p + 1, p]]
    assert task.reward_fn(wrong, mask)[0] == 0.0
    assert task.verify("cabd>", "dbac") == 1.0 and task.verify("cabd>", "dbacd") == 0.0


def test_pass_at_k_matches_the_combinatorial_formula():
    from math import comb
    for n, c, k in [(10, 3, 1), (10, 3, 5), (20, 18, 5), (7, 0, 3), (5, 5, 2)]:
        assert rc.pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)
    np.testing.assert_allclose(rc.pass_at_k(10, [3, 0], 1), [0.3, 0.0])
    assert 0 < rc.pass_at_k(5000, 10, 1000) < 1
    with pytest.raises(ValueError, match="k"):
        rc.pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="c"):
        rc.pass_at_k(3, 4, 1)


# ---------------------------------------------------------------- held-out skill: the must-show

@pytest.fixture(scope="module")
def reversal():
    task = rc.reversal_task()
    sft_tokens, sft_mask = task.pairs(task.sft)
    test_tokens, test_mask = task.pairs(task.test)
    return task, (sft_tokens, sft_mask), (test_tokens, test_mask)


def _weak(task, sft_data, seed):
    init = rc.lm_init(task.tokenizer.vocab_size, context=11, dim=16, layers=1, seed=seed)
    return rc.sft(init, *sft_data, steps=60, lr=3e-3, seed=seed, batch=32)[0]


def _held_out(params, test):
    return float(np.mean(np.exp(rc.completion_log_prob(params, *test))))


def test_rft_steps_only_on_verified_samples(reversal):
    task, sft_data, test = reversal
    weak = _weak(task, sft_data, 0)
    nothing = rc.rft_train(weak, lambda t, m: np.zeros(len(t)), task.prompt_ids(task.rl), iterations=3,
                           group_size=4, prompts_per_step=4, max_new=task.length + 1, seed=0)
    assert (nothing.stepped == 0).all() and (nothing.kept == 0).all()
    for k in weak:
        np.testing.assert_array_equal(np.asarray(nothing.params[k]), np.asarray(weak[k]))


def test_grpo_step_leave_one_out_baseline(reversal):
    task, sft_data, _ = reversal
    weak = _weak(task, sft_data, 0)
    opt = rc.Adam(lr=1e-3)
    _, _, stats = rc.grpo_step(weak, weak, task.reward_fn, task.prompt_ids(task.rl[:8]),
                               np.random.default_rng(0), opt, opt.init(weak), group_size=8,
                               max_new=task.length + 1, scale=False, baseline="leave_one_out",
                               aggregate="dr_grpo")
    np.testing.assert_allclose(stats["advantages"], rc.rloo_advantages(stats["rewards"], 8))
    with pytest.raises(ValueError, match="baseline"):
        rc.grpo_step(weak, weak, task.reward_fn, task.prompt_ids(task.rl[:2]), np.random.default_rng(0),
                     opt, opt.init(weak), group_size=4, max_new=5, baseline="batch")


def test_grpo_learns_to_reverse_held_out_words_on_three_seeds(reversal):
    """Must-show: from a weak SFT model (32 labelled words, 60 steps; under 20% pass@1 on 200
    held-out words), 100 GRPO iterations (8 prompts x 8 samples, lr 1.5e-3, the verifier as the
    only reward, prompts disjoint from the held-out words) raise held-out pass@1 by more than 40
    points on each of three seeds, and beat rejection-sampling fine-tuning with the same samples
    and steps in the median. (The lesson's runs gained 59-78 points.)"""
    task, sft_data, test = reversal
    prompts = task.prompt_ids(task.rl)
    budget = dict(iterations=100, group_size=8, prompts_per_step=8, lr=1.5e-3, max_new=task.length + 1)
    gains, grpo, rft = [], [], []
    for seed in (0, 1, 2):
        weak = _weak(task, sft_data, seed)
        before = _held_out(weak, test)
        assert before < 0.2, "the starting model should be weak, or the test proves little"
        history = rc.grpo_train(weak, weak, task.reward_fn, prompts, seed=seed, kl_coef=0.04, **budget)
        grpo.append(_held_out(history.params, test))
        gains.append(grpo[-1] - before)
        rft.append(_held_out(rc.rft_train(weak, task.reward_fn, prompts, seed=seed, **budget).params, test))
        assert history.reward[-10:].mean() > history.reward[:10].mean()
    assert min(gains) > 0.40, gains
    assert np.median(grpo) > np.median(rft), (grpo, rft)
