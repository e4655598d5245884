"""Bradley-Terry, DPO, IPO and GRPO advantages against hand-computed values from the formulas
(as the DPO and IPO papers and TRL state them), their gradients against finite differences, their
invariants and their errors."""

import math

import numpy as np
import pytest

import rlcourse as rc


def softplus(x):
    """-log sigmoid(-x) = log(1 + e^x), written out by hand for the expected values."""
    return math.log1p(math.exp(x))


# Two pairs. Log-ratios: chosen +0.5 and 0.0, rejected -0.5 and +0.5, so z = 1.0 and -0.5.
POL_C = np.array([-5.0, -3.0])
POL_R = np.array([-6.0, -2.0])
REF_C = np.array([-5.5, -3.0])
REF_R = np.array([-5.5, -2.5])


# ---------------------------------------------------------------- Bradley-Terry

def test_preference_loss_matches_hand_values():
    chosen, rejected = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    # -log sigmoid(d) = log(1 + e^-d), d = 1 and -2
    expected = (softplus(-1.0) + softplus(2.0)) / 2
    assert float(rc.preference_loss(chosen, rejected)) == pytest.approx(expected, rel=1e-12)
    # a margin of 0.5 shifts both differences down: d = 0.5 and -2.5
    expected_margin = (softplus(-0.5) + softplus(2.5)) / 2
    assert float(rc.preference_loss(chosen, rejected, margin=0.5)) == pytest.approx(
        expected_margin, rel=1e-12)
    per_pair = np.array([0.5, 0.0])  # d = 0.5 and -2.0
    assert float(rc.preference_loss(chosen, rejected, margin=per_pair)) == pytest.approx(
        (softplus(-0.5) + softplus(2.0)) / 2, rel=1e-12)


def test_preference_loss_is_stable_and_its_gradient_is_sigmoid():
    def loss(params):
        return rc.preference_loss(params["c"], params["r"])

    value, grads = rc.value_and_grad(loss)({"c": np.array([1000.0, -1000.0]),
                                            "r": np.array([0.0, 0.0])})
    # pair 1 is certain (loss 0), pair 2 is wrong by 1000 (loss 1000); mean 500
    assert value == pytest.approx(500.0)
    # d/dr_c of -log sigmoid(d) / B = -(1 - sigmoid(d)) / B
    np.testing.assert_allclose(grads["c"], [0.0, -0.5], atol=1e-12)
    np.testing.assert_allclose(grads["r"], [0.0, 0.5], atol=1e-12)


# ---------------------------------------------------------------- DPO

def test_dpo_loss_rewards_and_accuracy_match_hand_values():
    out = rc.dpo_loss(POL_C, POL_R, REF_C, REF_R, beta=0.5)
    # beta z = 0.5 and -0.25; -log sigmoid(x) = log(1 + e^-x)
    expected = (softplus(-0.5) + softplus(0.25)) / 2
    assert float(out.loss) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(out.chosen_rewards, [0.25, 0.0], atol=1e-15)
    np.testing.assert_allclose(out.rejected_rewards, [-0.25, 0.25], atol=1e-15)
    assert out.accuracy == 0.5


def test_dpo_label_smoothing_matches_hand_values():
    e = 0.2
    out = rc.dpo_loss(POL_C, POL_R, REF_C, REF_R, beta=0.5, label_smoothing=e)
    per_pair = [(1 - e) * softplus(-x) + e * softplus(x) for x in (0.5, -0.25)]
    assert float(out.loss) == pytest.approx(sum(per_pair) / 2, rel=1e-12)


def test_dpo_label_smoothing_has_a_finite_optimum():
    """With e > 0 the loss of one pair is minimised at beta z = log((1-e)/e), not at infinity."""
    e, beta = 0.1, 1.0
    zs = np.linspace(-1, 6, 1401)
    losses = [float(rc.dpo_loss(np.array([z]), np.zeros(1), np.zeros(1), np.zeros(1),
                                beta=beta, label_smoothing=e).loss) for z in zs]
    assert zs[int(np.argmin(losses))] == pytest.approx(math.log((1 - e) / e), abs=5e-3)


def test_dpo_ties_count_as_wrong():
    out = rc.dpo_loss(np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3))
    assert out.accuracy == 0.0
    assert float(out.loss) == pytest.approx(math.log(2.0))


def test_dpo_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    pol_c, pol_r = rng.normal(-4, 1, size=5), rng.normal(-4, 1, size=5)
    ref_c, ref_r = rng.normal(-4, 1, size=5), rng.normal(-4, 1, size=5)

    def loss(params):
        return rc.dpo_loss(params["c"], params["r"], ref_c, ref_r, beta=0.7,
                           label_smoothing=0.1).loss

    _, grads = rc.value_and_grad(loss)({"c": pol_c, "r": pol_r})
    num_c = rc.numerical_grad(lambda c: loss({"c": c, "r": pol_r}), pol_c)
    num_r = rc.numerical_grad(lambda r: loss({"c": pol_c, "r": r}), pol_r)
    np.testing.assert_allclose(grads["c"], num_c, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grads["r"], num_r, rtol=1e-6, atol=1e-9)
    # raising a chosen log-prob lowers the loss; raising a rejected one raises it
    assert (grads["c"] < 0).all() and (grads["r"] > 0).all()


def _assert_reference_is_frozen(dpo):
    """Traced reference log-probs get exactly zero gradient; the policy's do not."""
    def loss(policy, ref):
        return dpo(policy["c"], policy["r"], ref["c"], ref["r"]).loss

    arrays = {"c": POL_C, "r": POL_R}, {"c": REF_C, "r": REF_R}
    _, (g_policy, g_ref) = rc.value_and_grad(loss, argnums=(0, 1))(*arrays)
    assert np.abs(g_policy["c"]).sum() > 0
    assert not np.any(g_ref["c"]) and not np.any(g_ref["r"]), "the reference got a gradient"


def test_dpo_reference_gets_no_gradient():
    _assert_reference_is_frozen(rc.dpo_loss)


def test_frozen_reference_check_catches_a_traced_reference():
    def unfrozen(pc, pr, ref_c, ref_r):  # planted bug: the reference stays in the graph
        z = (pc - ref_c) - (pr - ref_r)
        return rc.PreferenceResult(-rc.mean(rc.log_sigmoid(0.1 * z)), None, None, 0.0)

    with pytest.raises(AssertionError, match="reference got a gradient"):
        _assert_reference_is_frozen(unfrozen)


def test_dpo_result_survives_value_and_grad():
    (loss, chosen, rejected, accuracy), _ = rc.value_and_grad(
        lambda p: rc.dpo_loss(p, POL_R, REF_C, REF_R, beta=0.5))(POL_C)
    assert loss == pytest.approx((softplus(-0.5) + softplus(0.25)) / 2)
    np.testing.assert_allclose(chosen, [0.25, 0.0])
    assert accuracy == 0.5


# ---------------------------------------------------------------- IPO

def test_ipo_uses_length_averaged_log_probs():
    # chosen completions of 2 and 4 tokens, rejected of 5 and 1
    lc, lr = np.array([2, 4]), np.array([5, 1])
    tau = 0.25  # target margin 1/(2 tau) = 2
    out = rc.ipo_loss(POL_C, POL_R, REF_C, REF_R, tau=tau, chosen_lengths=lc, rejected_lengths=lr)
    # averaged log-ratios: chosen 0.5/2 and 0/4, rejected -0.5/5 and 0.5/1
    z1 = 0.25 - (-0.1)
    z2 = 0.0 - 0.5
    expected = ((z1 - 2.0) ** 2 + (z2 - 2.0) ** 2) / 2
    assert float(out.loss) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(out.chosen_rewards, [tau * 0.25, 0.0], atol=1e-15)
    np.testing.assert_allclose(out.rejected_rewards, [tau * -0.1, tau * 0.5], atol=1e-15)
    assert out.accuracy == 0.5
    # the same numbers, averaged beforehand, with no lengths
    pre = rc.ipo_loss(POL_C / lc, POL_R / lr, REF_C / lc, REF_R / lr, tau=tau)
    assert float(pre.loss) == pytest.approx(expected, rel=1e-12)


def test_ipo_margin_settles_at_one_over_two_tau_while_dpo_runs_away():
    """On a pair that is always preferred, gradient descent on IPO stops at z' = 1/(2 tau);
    on DPO the margin keeps growing (its loss only tends to 0)."""
    tau = beta = 0.5
    margins = {}
    for name in ("ipo", "dpo"):
        z = np.zeros(1)
        for _ in range(1500):
            if name == "ipo":
                _, g = rc.value_and_grad(lambda p: rc.ipo_loss(p, np.zeros(1), np.zeros(1),
                                                               np.zeros(1), tau=tau).loss)(z)
            else:
                _, g = rc.value_and_grad(lambda p: rc.dpo_loss(p, np.zeros(1), np.zeros(1),
                                                               np.zeros(1), beta=beta).loss)(z)
            z = z - 0.25 * g
        margins[name] = float(z[0])
    assert margins["ipo"] == pytest.approx(1 / (2 * tau), abs=1e-6)
    assert margins["dpo"] > 5 * margins["ipo"]


# ---------------------------------------------------------------- GRPO advantages

def test_grpo_advantages_match_hand_values():
    rewards = np.array([1.0, 0.0, 0.0, 1.0, 3.0, 1.0, 2.0, 2.0])
    adv = rc.grpo_advantages(rewards, group_size=4)
    # group 1: mean 0.5, sample std sqrt(4 * 0.25 / 3)
    s1 = math.sqrt(1.0 / 3.0)
    # group 2: mean 2, deviations 1, -1, 0, 0, sample std sqrt(2 / 3)
    s2 = math.sqrt(2.0 / 3.0)
    expected = [0.5 / (s1 + 1e-4), -0.5 / (s1 + 1e-4), -0.5 / (s1 + 1e-4), 0.5 / (s1 + 1e-4),
                1 / (s2 + 1e-4), -1 / (s2 + 1e-4), 0.0, 0.0]
    np.testing.assert_allclose(adv, expected, rtol=1e-12)
    np.testing.assert_allclose(rc.grpo_advantages(rewards, 4, scale=False),
                               [0.5, -0.5, -0.5, 0.5, 1, -1, 0, 0])


def _assert_group_invariants(fn):
    """Advantages sum to zero within every group, and an all-equal group gives exact zeros."""
    rng = np.random.default_rng(0)
    rewards = np.concatenate([rng.normal(size=12), np.full(4, 0.7), np.ones(4)])
    adv = np.asarray(fn(rewards, 4))
    assert np.isfinite(adv).all(), "advantages contain NaN or inf"
    np.testing.assert_allclose(adv.reshape(-1, 4).sum(axis=1), 0.0, atol=1e-12)
    assert (adv[12:] == 0).all(), "a constant-reward group must have zero advantages"


def test_grpo_advantages_invariants():
    _assert_group_invariants(rc.grpo_advantages)


def test_group_invariant_check_catches_a_batch_wide_baseline():
    def batch_normalised(rewards, group_size):  # planted bug: one mean for the whole batch
        return (rewards - rewards.mean()) / (rewards.std(ddof=1) + 1e-4)

    with pytest.raises(AssertionError):
        _assert_group_invariants(batch_normalised)


def test_group_invariant_check_catches_a_missing_eps():
    def no_eps(rewards, group_size):  # planted bug: divides by a zero std
        g = rewards.reshape(-1, group_size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ((g - g.mean(1, keepdims=True)) / g.std(1, ddof=1, keepdims=True)).ravel()

    with pytest.raises(AssertionError, match="NaN"):
        _assert_group_invariants(no_eps)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, match", [
    ({"beta": 0.0}, "beta"),
    ({"beta": -1.0}, "beta"),
    ({"beta": float("nan")}, "beta"),
    ({"label_smoothing": 0.5}, "label_smoothing"),
    ({"label_smoothing": -0.1}, "label_smoothing"),
])
def test_dpo_rejects_bad_hyperparameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rc.dpo_loss(POL_C, POL_R, REF_C, REF_R, **kwargs)


def test_preference_functions_reject_bad_arrays():
    nan = np.array([-1.0, np.nan])
    with pytest.raises(ValueError, match="policy_rejected: expected finite"):
        rc.dpo_loss(POL_C, nan, REF_C, REF_R)
    with pytest.raises(ValueError, match=r"ref_chosen: expected shape \(2,\)"):
        rc.dpo_loss(POL_C, POL_R, REF_C[:1], REF_R)
    with pytest.raises(ValueError, match="policy_chosen: expected 1 dimensions"):
        rc.dpo_loss(POL_C[None], POL_R[None], REF_C[None], REF_R[None])
    with pytest.raises(ValueError, match="r_rejected: expected shape"):
        rc.preference_loss(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="r_chosen: expected finite"):
        rc.preference_loss(np.array([np.inf]), np.zeros(1))
    with pytest.raises(ValueError, match="margin"):
        rc.preference_loss(np.zeros(3), np.zeros(3), margin=np.zeros(2))
    with pytest.raises(ValueError, match="at least one pair"):
        rc.dpo_loss(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    with pytest.raises(TypeError, match="policy_chosen"):
        rc.dpo_loss(np.array(["a", "b"]), POL_R, REF_C, REF_R)


def test_ipo_rejects_bad_input():
    with pytest.raises(ValueError, match="tau"):
        rc.ipo_loss(POL_C, POL_R, REF_C, REF_R, tau=0.0)
    with pytest.raises(ValueError, match="pass both"):
        rc.ipo_loss(POL_C, POL_R, REF_C, REF_R, chosen_lengths=np.array([1, 2]))
    with pytest.raises(ValueError, match="rejected_lengths: every completion"):
        rc.ipo_loss(POL_C, POL_R, REF_C, REF_R, chosen_lengths=np.array([1, 2]),
                    rejected_lengths=np.array([0, 2]))
    with pytest.raises(ValueError, match="chosen_lengths: expected shape"):
        rc.ipo_loss(POL_C, POL_R, REF_C, REF_R, chosen_lengths=np.array([1, 2, 3]),
                    rejected_lengths=np.array([1, 2]))


def test_grpo_advantages_reject_bad_input():
    with pytest.raises(ValueError, match="whole number of groups of group_size=4, got 6"):
        rc.grpo_advantages(np.zeros(6), 4)
    with pytest.raises(ValueError, match="group_size: expected an integer >= 2"):
        rc.grpo_advantages(np.zeros(6), 1)
    with pytest.raises(ValueError, match="group_size"):
        rc.grpo_advantages(np.zeros(6), 2.0)
    with pytest.raises(ValueError, match="rewards: expected finite"):
        rc.grpo_advantages(np.array([1.0, np.nan]), 2)
    with pytest.raises(ValueError, match="rewards: expected 1 dimensions"):
        rc.grpo_advantages(np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="eps"):
        rc.grpo_advantages(np.zeros(4), 2, eps=0.0)
