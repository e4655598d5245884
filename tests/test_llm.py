"""Token log-probs, masks, KL and the PPO-clip loss on sequences, checked against hand formulas."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlcourse as rc


def _log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(-1, keepdims=True)


def _example(seed=0, batch=3, length=6, vocab=5):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(batch, length - 1, vocab))
    tokens = rng.integers(0, vocab, size=(batch, length))
    mask = np.zeros((batch, length), dtype=bool)
    mask[0, 3:] = True
    mask[1, 2:5] = True
    mask[2, 5] = True
    return logits, tokens, mask


def test_sequence_log_prob_by_hand():
    logits = np.array([[[0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [3.0, 0.0, 0.0]]])
    tokens = np.array([[0, 2, 1, 0]])
    mask = np.array([[False, False, True, True]])
    # logits[:, 1] predicts tokens[:, 2] = 1 (uniform: log 1/3); logits[:, 2] predicts tokens[:, 3] = 0
    expected = np.log(1 / 3) + (3.0 - np.log(np.exp(3.0) + 2.0))
    np.testing.assert_allclose(rc.sequence_log_prob(logits, tokens, mask), [expected])
    lp = rc.token_log_probs(logits, tokens)
    np.testing.assert_allclose(lp[0, 0], 2.0 - np.log(1 + np.e + np.e**2))


def _sequence_log_prob_off_by_one(logits, tokens, mask):
    """A planted bug: logits[:, t] scored against tokens[:, t] instead of tokens[:, t+1]."""
    lp = _log_softmax(logits)
    picked = np.take_along_axis(lp, tokens[:, :-1, None], axis=-1)[..., 0]
    return (picked * mask[:, 1:]).sum(1)


def _check_alignment(fn):
    logits, tokens, mask = _example()
    lp = _log_softmax(logits)
    expected = [sum(lp[b, t - 1, tokens[b, t]] for t in range(1, tokens.shape[1]) if mask[b, t])
                for b in range(len(tokens))]
    np.testing.assert_allclose(fn(logits, tokens, mask), expected)


def test_logits_at_t_score_token_t_plus_1():
    _check_alignment(rc.sequence_log_prob)
    with pytest.raises(AssertionError):
        _check_alignment(_sequence_log_prob_off_by_one)


def test_masked_positions_change_nothing_and_get_zero_gradient():
    logits, tokens, mask = _example(1)
    loss_fn = lambda lg: -rc.sum(rc.sequence_log_prob(lg, tokens, mask))
    loss, grad = rc.value_and_grad(loss_fn)(logits)
    counted = mask[:, 1:]
    perturbed = logits.copy()
    perturbed[~counted] += 100 * np.random.default_rng(2).normal(size=perturbed[~counted].shape)
    perturbed[0, 0, 1] = -np.inf  # a ruled-out token at a prompt position is fine too
    loss2, grad2 = rc.value_and_grad(loss_fn)(np.where(np.isinf(perturbed), -1e30, perturbed))
    assert loss == pytest.approx(loss2, abs=1e-12)
    assert (grad[~counted] == 0).all() and (grad2[~counted] == 0).all()
    assert (np.abs(grad[counted]).sum(-1) > 0).all()
    np.testing.assert_array_equal(rc.sequence_log_prob(perturbed, tokens, mask),
                                  rc.sequence_log_prob(logits, tokens, mask))


def test_completion_mask():
    tokens = np.array([[1, 5, 6, 7, 2, 0, 0], [1, 5, 6, 2, 9, 2, 0], [0, 1, 5, 8, 8, 8, 8]])
    mask = rc.completion_mask(tokens, 2, eos=2)
    assert mask.astype(int).tolist() == [
        [0, 0, 1, 1, 1, 0, 0],
        [0, 0, 1, 1, 0, 0, 0],
        [0, 0, 1, 1, 1, 1, 1],  # no EOS: cut at the length limit
    ]
    per_row = rc.completion_mask(tokens, np.array([1, 4, 6]), eos=2)
    assert per_row.astype(int).tolist()[1] == [0, 0, 0, 0, 1, 1, 0]


def test_log_prob_validation():
    logits, tokens, mask = _example()
    with pytest.raises(ValueError, match="NaN"):
        bad = logits.copy()
        bad[0, 1, 2] = np.nan
        rc.sequence_log_prob(bad, tokens, mask)
    with pytest.raises(ValueError, match=r"\+inf|inf"):
        bad = logits.copy()
        bad[1, 0, 0] = np.inf
        rc.token_log_probs(bad, tokens)
    with pytest.raises(ValueError, match="one more position"):
        rc.sequence_log_prob(np.concatenate([logits, logits[:, :1]], 1), tokens, mask)
    with pytest.raises(ValueError, match="tokens: values must be < 5"):
        rc.sequence_log_prob(logits, np.where(mask, 5, tokens), mask)
    with pytest.raises(ValueError, match="mask: expected shape"):
        rc.sequence_log_prob(logits, tokens, mask[:, 1:])
    with pytest.raises(ValueError, match="no position is True"):
        rc.sequence_log_prob(logits, tokens, np.zeros_like(mask))
    with pytest.raises(ValueError, match="sequence 1 has no action token"):
        empty_row = mask.copy()
        empty_row[1] = False
        rc.sequence_log_prob(logits, tokens, empty_row)


def _kl_by_hand(p_logits, q_logits):
    p, q = np.exp(_log_softmax(p_logits)), np.exp(_log_softmax(q_logits))
    return float(np.sum(p * (np.log(p) - np.log(q))))


def _kl_example():
    logits = np.array([[[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]]])
    ref = np.array([[[0.0, 1.0, 0.0], [3.0, -2.0, 0.0]]])
    tokens = np.array([[0, 1, 0]])
    mask = np.array([[False, True, True]])
    return logits, ref, tokens, mask


def _exact_kl_reversed(policy_logits, ref_logits, mask):
    """A planted bug: KL(ref || pi) instead of KL(pi || ref)."""
    return rc.exact_kl(ref_logits, policy_logits, mask)


def _check_kl_direction(fn):
    logits, ref, _, mask = _kl_example()
    expected = _kl_by_hand(logits[0, 0], ref[0, 0]) + _kl_by_hand(logits[0, 1], ref[0, 1])
    np.testing.assert_allclose(fn(logits, ref, mask), [expected])


def test_exact_kl_by_hand_and_direction():
    _check_kl_direction(rc.exact_kl)
    with pytest.raises(AssertionError):
        _check_kl_direction(_exact_kl_reversed)
    logits, ref, _, mask = _kl_example()
    only_last = mask.copy()
    only_last[0, 1] = False
    np.testing.assert_allclose(rc.exact_kl(logits, ref, only_last), [_kl_by_hand(logits[0, 1], ref[0, 1])])


def test_exact_kl_nonnegative_but_sampled_log_ratio_can_be_negative():
    rng = np.random.default_rng(3)
    for _ in range(20):
        logits, ref = rng.normal(size=(2, 4, 3, 6)) * 3
        mask = rng.random((4, 4)) < 0.7
        mask[:, 1] = True
        assert (rc.exact_kl(logits, ref, mask) >= 0).all()
    assert rc.exact_kl(logits, logits, mask) == pytest.approx(np.zeros(4), abs=1e-12)
    # the policy prefers token 0; the reference prefers token 1; sampling token 1 gives a ratio < 0
    policy = np.array([[[2.0, 0.0]]])
    reference = np.array([[[0.0, 2.0]]])
    tokens = np.array([[0, 1]])
    mask = np.array([[False, True]])
    # log pi(1) - log ref(1) = (0 - log(1 + e^2)) - (2 - log(1 + e^2)) = -2
    assert rc.sampled_log_ratio(policy, reference, tokens, mask)[0] == pytest.approx(-2.0)
    assert rc.exact_kl(policy, reference, mask)[0] > 0


def test_sampled_log_ratio_is_unbiased_for_exact_kl():
    rng = np.random.default_rng(4)
    policy, ref = rng.normal(size=(2, 1, 1, 5))
    probs = np.exp(_log_softmax(policy[0, 0]))
    n = 20000
    tokens = np.stack([np.zeros(n, dtype=int), rng.choice(5, size=n, p=probs)], axis=1)
    mask = np.ones((n, 2), dtype=bool)
    ratios = rc.sampled_log_ratio(np.repeat(policy, n, 0), np.repeat(ref, n, 0), tokens, mask)
    assert (ratios < 0).any()
    exact = rc.exact_kl(policy, ref, mask[:1])[0]
    assert abs(ratios.mean() - exact) < 4 * ratios.std() / np.sqrt(n)


def test_kl_estimates_by_hand():
    logp, ref_logp = np.array([-1.0, -2.0]), np.array([-1.5, -0.5])
    d = ref_logp - logp  # [-0.5, 1.5]
    np.testing.assert_allclose(rc.kl_estimate(logp, ref_logp, "k1"), [0.5, -1.5])
    np.testing.assert_allclose(rc.kl_estimate(logp, ref_logp, "k2"), 0.5 * d**2)
    np.testing.assert_allclose(rc.kl_estimate(logp, ref_logp, "k3"),
                               [np.exp(-0.5) + 0.5 - 1, np.exp(1.5) - 1.5 - 1])
    # differentiable in logp: d k3 / d logp = 1 - exp(d)
    _, grad = rc.value_and_grad(lambda lp: rc.sum(rc.kl_estimate(lp, ref_logp, "k3")))(logp)
    np.testing.assert_allclose(grad, 1 - np.exp(d))
    np.testing.assert_allclose(rc.kl_estimate([-1, -2], [-1.5, -0.5], "k1"), [0.5, -1.5])  # plain lists


def _k3_sign_flipped(logp, ref_logp):
    """A planted bug: d = logp - ref_logp (the k3 of the wrong KL direction)."""
    d = logp - ref_logp
    return np.exp(d) - d - 1


def _check_k3_unbiased(fn):
    rng = np.random.default_rng(5)
    pi, ref = np.array([0.7, 0.2, 0.1]), np.array([0.2, 0.3, 0.5])
    a = rng.choice(3, size=200_000, p=pi)
    est = fn(np.log(pi[a]), np.log(ref[a]))
    true = np.sum(pi * np.log(pi / ref))
    assert abs(est.mean() - true) < 4 * est.std() / np.sqrt(len(a))


def test_k3_is_unbiased_for_kl_pi_ref_and_the_flipped_sign_is_caught():
    _check_k3_unbiased(lambda lp, rp: rc.kl_estimate(lp, rp, "k3"))
    _check_k3_unbiased(lambda lp, rp: rc.kl_estimate(lp, rp, "k1"))
    with pytest.raises(AssertionError):
        _check_k3_unbiased(_k3_sign_flipped)


def test_corrected_k3_loss_follows_kl_pi_ref_and_plain_k3_the_reverse():
    """Exact expectations over a 5-token vocabulary: E_{a ~ pi_old}[grad of the loss term] with
    pi_old = pi (the first epoch). Plain k3 follows KL(ref || pi); k3 times the importance ratio
    (old_logp=) follows KL(pi || ref); k1 in the loss has expected gradient 0."""
    rng = np.random.default_rng(3)
    theta, ref_theta = rng.normal(size=5), rng.normal(size=5)
    ref_lp = np.asarray(rc.log_softmax(ref_theta, axis=-1))
    old_lp = np.asarray(rc.log_softmax(theta, axis=-1))
    weight = np.exp(old_lp)

    def expected_grad(term):
        return rc.grad(lambda t: rc.sum(weight * term(rc.log_softmax(t, axis=-1))))(theta)

    def kl(p_from, p_to):
        return rc.sum(rc.exp(p_from) * (p_from - p_to))

    forward = rc.grad(lambda t: kl(rc.log_softmax(t, axis=-1), ref_lp))(theta)
    reverse = rc.grad(lambda t: kl(ref_lp, rc.log_softmax(t, axis=-1)))(theta)
    corrected = expected_grad(lambda lp: rc.kl_estimate(lp, ref_lp, "k3", old_logp=old_lp))
    plain = expected_grad(lambda lp: rc.kl_estimate(lp, ref_lp, "k3"))
    np.testing.assert_allclose(corrected, forward, atol=1e-12)
    np.testing.assert_allclose(plain, reverse, atol=1e-12)
    assert np.linalg.norm(plain - forward) > 0.1 * np.linalg.norm(forward)
    np.testing.assert_allclose(expected_grad(lambda lp: rc.kl_estimate(lp, ref_lp, "k1")), 0, atol=1e-12)
    # at logp == old_logp the value is plain k3; elsewhere it is scaled by the ratio
    np.testing.assert_allclose(rc.kl_estimate(old_lp, ref_lp, "k3", old_logp=old_lp),
                               rc.kl_estimate(old_lp, ref_lp, "k3"))
    np.testing.assert_allclose(rc.kl_estimate(old_lp, ref_lp, "k3", old_logp=old_lp - 0.5),
                               np.exp(0.5) * rc.kl_estimate(old_lp, ref_lp, "k3"))
    with pytest.raises(ValueError, match="old_logp"):
        rc.kl_estimate(old_lp, ref_lp, "k3", old_logp=old_lp[:3])
    with pytest.raises(ValueError, match="old_logp"):
        rc.kl_estimate(old_lp, ref_lp, "k3", old_logp=np.full(5, np.nan))


def test_k3_is_nonnegative_property():
    from hypothesis import given
    from hypothesis import strategies as st

    floats = st.floats(-30, 0, allow_nan=False)

    @given(st.lists(st.tuples(floats, floats), min_size=1, max_size=20))
    def prop(pairs):
        logp, ref_logp = np.array(pairs).T
        assert (rc.kl_estimate(logp, ref_logp, "k3") >= 0).all()

    prop()


# Properties over any logits and log-probs (issue 12): finite floats up to the largest double,
# with -inf (a ruled-out token) anywhere but a whole row.
_BIG = np.finfo(np.float64).max
_LOGIT = st.one_of(st.floats(-_BIG, _BIG), st.floats(-30.0, 30.0), st.just(-np.inf),
                   st.sampled_from([_BIG, -_BIG, 1e300, -1e300, 0.0]))


@st.composite
def _logits(draw, batch=2, steps=2, vocab=4):
    x = np.array(draw(st.lists(_LOGIT, min_size=batch * steps * vocab,
                               max_size=batch * steps * vocab))).reshape(batch, steps, vocab)
    dead = np.isneginf(x).all(axis=-1)
    x[dead, 0] = 0.0  # a row that rules out every token is an error, not a distribution
    return x


@settings(max_examples=60)
@given(_logits(), _logits())
def test_exact_kl_is_nonnegative_and_never_nan_for_any_logits(policy, ref):
    mask = np.ones((2, 3), dtype=bool)
    kl = rc.exact_kl(policy, ref, mask)
    assert not np.isnan(kl).any() and (kl >= 0).all()
    # against itself exactly 0, however extreme (no inf - inf, no 0 * inf)
    assert (rc.exact_kl(policy, policy, mask) == 0).all()
    # +inf only where the policy gives mass to a token the reference rules out, or where the
    # true value overflows
    if np.isposinf(kl).any():
        assert np.isneginf(ref).any() or np.abs(np.concatenate([policy, ref])[np.isfinite(
            np.concatenate([policy, ref]))]).max() > 1e300


_LOGP = st.one_of(st.floats(-_BIG, 0.0), st.floats(-1e-6, 0.0), st.floats(-40.0, 0.0))


def _near(pair):  # (x, x + delta): where exp(d) - d - 1 rounds below 0 if computed naively
    x, delta = pair
    return (x, min(x + delta, 0.0))


_PAIR = st.one_of(st.tuples(_LOGP, _LOGP),
                  st.tuples(st.floats(-20.0, 0.0), st.floats(-1e-5, 1e-5)).map(_near))


@settings(max_examples=100)
@given(st.lists(_PAIR, min_size=1, max_size=20))
def test_kl_estimators_signs_for_any_log_probs(pairs):
    """k3 = exp(d) - d - 1 and k2 = d**2 / 2 are >= 0 per sample (never a rounding residue
    below 0, never NaN), k1 = logp - ref_logp exactly and changes sign with the direction."""
    logp, ref_logp = np.array(pairs).T
    with np.errstate(over="ignore"):  # k3 and k2 overflow to +inf where their value does
        k3 = rc.kl_estimate(logp, ref_logp, "k3")
        k2 = rc.kl_estimate(logp, ref_logp, "k2")
    assert not np.isnan(k3).any() and (k3 >= 0).all()
    assert not np.isnan(k2).any() and (k2 >= 0).all()
    k1 = rc.kl_estimate(logp, ref_logp, "k1")
    assert k1.tolist() == (logp - ref_logp).tolist()
    assert (rc.kl_estimate(ref_logp, logp, "k1") == -k1).all()
    assert ((k3 == 0) == (logp == ref_logp)).all() or (np.abs(logp - ref_logp) < 1e-7).any()


def test_kl_penalized_rewards_by_hand():
    logp = np.array([[-1.0, -2.0, -0.5, 0.0], [-0.3, -0.7, 0.0, 0.0]])
    ref_logp = np.array([[-1.5, -1.0, -0.5, -np.inf], [-0.3, -1.7, 0.0, -np.inf]])
    mask = np.array([[True, True, True, False], [False, True, False, False]])
    scores = np.array([2.0, -1.0])
    rewards = rc.kl_penalized_rewards(scores, logp, ref_logp, mask, beta=0.1)
    expected = np.array([[-0.1 * 0.5, -0.1 * -1.0, 2.0, 0.0], [0.0, -0.1 * 1.0 - 1.0, 0.0, 0.0]])
    np.testing.assert_allclose(rewards, expected)
    with pytest.raises(ValueError, match="sequence 1 has no action token"):
        rc.kl_penalized_rewards(scores, logp, ref_logp, mask * np.array([[1], [0]]).astype(bool))
    with pytest.raises(ValueError, match="every entry is False"):
        rc.kl_penalized_rewards(scores, logp, ref_logp, np.zeros_like(mask))
    with pytest.raises(ValueError, match="scores: expected shape"):
        rc.kl_penalized_rewards(scores[:1], logp, ref_logp, mask)


def _ppo_by_hand(logp, old, adv, mask, clip):
    r = np.exp(logp - old)
    o = np.minimum(r * adv, np.clip(r, 1 - clip, 1 + clip) * adv)
    return o


def test_ppo_clip_loss_token_vs_sequence_by_hand():
    logp = np.array([[-1.0, -0.5, -2.0], [-0.2, 0.0, 0.0]])
    old = np.array([[-1.2, -0.1, -2.0], [-0.9, 0.0, 0.0]])
    adv = np.array([[1.0, -1.0, 2.0], [0.5, 0.0, 0.0]])
    mask = np.array([[True, True, True], [True, False, False]])  # lengths 3 and 1
    o = _ppo_by_hand(logp, old, adv, mask, 0.2)
    token = -(o[0].sum() + o[1, 0]) / 4
    sequence = -(o[0].mean() + o[1, 0]) / 2
    got_token = rc.ppo_clip_loss(logp, old, adv, mask, aggregate="token")
    got_seq = rc.ppo_clip_loss(logp, old, adv, mask, aggregate="sequence")
    assert got_token.loss == pytest.approx(token)
    assert got_seq.loss == pytest.approx(sequence)
    assert abs(token - sequence) > 0.05  # unequal lengths: the two aggregations differ
    r = np.exp(logp - old)[mask]
    assert got_token.clip_fraction == pytest.approx(np.mean(np.abs(r - 1) > 0.2))
    assert got_seq.approx_kl == pytest.approx(np.mean(r - 1 - np.log(r)))
    # equal lengths: the two agree
    full = np.ones_like(mask)
    a = rc.ppo_clip_loss(logp, old, adv, full, aggregate="token").loss
    b = rc.ppo_clip_loss(logp, old, adv, full, aggregate="sequence").loss
    assert a == pytest.approx(b)


def test_ppo_clip_gradient_zero_exactly_where_clipped():
    old = np.zeros((1, 4))
    logp = np.log(np.array([[1.5, 0.5, 1.5, 0.5]]))  # ratios 1.5, 0.5, 1.5, 0.5
    adv = np.array([[1.0, -1.0, -1.0, 1.0]])
    mask = np.ones((1, 4), dtype=bool)
    _, grad = rc.value_and_grad(lambda lp: rc.ppo_clip_loss(lp, old, adv, mask))(logp)
    # ratio above 1+eps with A > 0, or below 1-eps with A < 0: clipped, no gradient
    assert grad[0, 0] == 0 and grad[0, 1] == 0
    # the other two are pulled back by the unclipped branch: d(-r A)/dlogp = -r A / 4
    np.testing.assert_allclose(grad[0, 2:], [1.5 / 4, -0.5 / 4])


def test_ppo_masked_tokens_change_nothing_and_get_no_gradient():
    rng = np.random.default_rng(6)
    logp, old = -rng.random((2, 3, 5))
    adv = rng.normal(size=(3, 5))
    mask = rng.random((3, 5)) < 0.6
    mask[:, 0] = True
    perturbed = np.where(mask, logp, -50.0)
    for aggregate in ("token", "sequence"):
        f = lambda lp, aggregate=aggregate: rc.ppo_clip_loss(lp, old, adv, mask, aggregate=aggregate)
        (l1, *_), g1 = rc.value_and_grad(f)(logp)
        (l2, *_), g2 = rc.value_and_grad(f)(perturbed)
        assert l1 == l2
        assert (g1[~mask] == 0).all() and (g2[~mask] == 0).all()
    seq_adv = rc.ppo_clip_loss(logp, old, adv[:, 0], mask).loss
    assert seq_adv == pytest.approx(rc.ppo_clip_loss(logp, old, np.repeat(adv[:, :1], 5, 1), mask).loss)


def test_ppo_validation():
    logp = np.zeros((2, 3))
    mask = np.array([[True, True, False], [False, False, False]])
    with pytest.raises(ValueError, match="sequence 1 has no action token"):
        rc.ppo_clip_loss(logp, logp, logp, mask, aggregate="sequence")
    assert rc.ppo_clip_loss(logp, logp, logp, mask, aggregate="token").loss == 0
    with pytest.raises(ValueError, match="every entry is False"):
        rc.ppo_clip_loss(logp, logp, logp, np.zeros_like(mask))
    with pytest.raises(ValueError, match="old_logp|ref_logp"):
        rc.ppo_clip_loss(logp, logp[:, :2], logp, mask)
    with pytest.raises(ValueError, match="NaN|finite"):
        rc.ppo_clip_loss(np.full((2, 3), np.nan), logp, logp, mask)
    with pytest.raises(ValueError, match="aggregate"):
        rc.ppo_clip_loss(logp, logp, logp, mask, aggregate="mean")


def test_a_ratio_that_overflows_is_an_error_not_a_silent_nan():
    """exp(logp - old_logp) at a log-ratio of 800 is inf, and inf * A = NaN where A = 0: an old
    log-prob of -800 on a sampled token cannot come from the sampling policy (issue 12)."""
    mask = np.ones((1, 2), dtype=bool)
    logp, old, adv = np.array([[0.0, -1.0]]), np.array([[-800.0, -1.0]]), np.array([[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"old_logp: at \(0, 0\) the ratio .* overflows"):
        rc.ppo_clip_loss(logp, old, adv, mask)
    with pytest.raises(ValueError, match="old_logp: .* overflows"):
        rc.grpo_loss(logp, old, logp, adv, mask)
    with pytest.raises(ValueError, match="old_logp: .* overflows"):  # float32 overflows at 88.7
        rc.ppo_clip_loss(logp.astype(np.float32), (old / 8).astype(np.float32), adv, mask)
    # the other way round the ratio is e^-800 = 0: finite, and k3 is taken from the log-ratio
    result = rc.ppo_clip_loss(old, logp, np.array([[1.0, -1.0]]), mask)
    assert np.isfinite(float(result.loss)) and result.approx_kl == pytest.approx(399.5)


def test_reward_to_go_and_advantages_stay_inside_each_completion():
    rewards = np.array([[0.0, 1.0, 2.0, 5.0], [3.0, 4.0, 0.0, 0.0]])
    mask = np.array([[False, True, True, False], [True, True, False, False]])
    g = rc.reward_to_go(rewards, mask)
    np.testing.assert_allclose(g, [[0, 3, 2, 0], [7, 4, 0, 0]])  # the 5 is padding: not counted
    adv = rc.rlhf_advantages(rewards, mask)
    assert (adv[~mask] == 0).all()
    # column baselines 7, 3.5, 2 leave [-0.5, 0, 0, 0.5] (row-major), then divided by their std
    raw = np.array([3 - 3.5, 2 - 2.0, 7 - 7.0, 4 - 3.5])
    np.testing.assert_allclose(adv[mask], raw / raw.std())


def test_exact_kl_ignores_masked_positions_and_ruled_out_tokens():
    rng = np.random.default_rng(7)
    logits, ref = rng.normal(size=(2, 3, 4, 5))
    mask = np.array([[0, 0, 1, 1, 0], [0, 1, 1, 1, 1], [0, 0, 0, 0, 1]], dtype=bool)
    kl_of = lambda lg: rc.sum(rc.exact_kl(lg, ref, mask))
    value, grad = rc.value_and_grad(kl_of)(logits)
    excluded = ~mask[:, 1:]
    perturbed = logits + 30.0 * excluded[..., None] * rng.normal(size=logits.shape)
    value2, _ = rc.value_and_grad(kl_of)(perturbed)
    assert value == pytest.approx(value2, abs=1e-12)
    assert not grad[excluded].any()
    # a token the policy rules out (-inf) adds exactly 0, with no NaN from 0 * -inf
    ruled_out = logits.copy()
    ruled_out[:, :, 0] = -np.inf
    p = np.exp(_log_softmax(ruled_out[1, 1, 1:]))
    q = np.exp(_log_softmax(ref[1, 1]))[1:]
    by_hand = np.sum(p * (np.log(p) - np.log(q)))
    only_position_1 = np.zeros((3, 5), dtype=bool)
    only_position_1[:, 2] = True  # mask[:, 2] counts logits[:, 1]
    got = rc.exact_kl(ruled_out, ref, only_position_1)
    assert np.isfinite(got).all() and got[1] == pytest.approx(by_hand)


def test_kl_validation():
    logits, tokens, mask = _example()
    with pytest.raises(ValueError, match="ref_logits: expected shape"):
        rc.exact_kl(logits, logits[:, :-1], mask)
    with pytest.raises(ValueError, match="policy_logits: expected no NaN"):
        rc.exact_kl(np.where(mask[:, 1:, None], np.nan, logits), logits, mask)
    with pytest.raises(ValueError, match="no position is True"):
        rc.exact_kl(logits, logits, np.zeros_like(mask))
    with pytest.raises(ValueError, match="actions: values must be < 5"):
        rc.sampled_log_ratio(logits, logits, tokens + 5, mask)
    with pytest.raises(ValueError, match="kind"):
        rc.kl_estimate(np.zeros(3), np.zeros(3), kind="k4")
    with pytest.raises(ValueError, match="logp"):
        rc.kl_estimate(np.array([np.nan]), np.zeros(1))
    with pytest.raises(ValueError, match="ref_logp: expected shape"):
        rc.kl_estimate(np.zeros(3), np.zeros(2))
