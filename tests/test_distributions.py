"""Categorical and Gaussian policy distributions: values, gradients, sampling, bad input."""

import numpy as np
import pytest

import rlcourse as rc


def test_categorical_sample_frequencies_match_softmax():
    logits = np.array([[2.0, 0.0, -1.0, 0.5]])
    probs = np.exp(logits) / np.exp(logits).sum()
    rng = np.random.default_rng(0)
    actions = rc.categorical_sample(np.repeat(logits, 40_000, axis=0), rng)
    freq = np.bincount(actions, minlength=4) / len(actions)
    # 4 standard errors of a frequency from 40k draws is below 0.01
    np.testing.assert_allclose(freq, probs[0], atol=0.01)
    assert actions.dtype == np.int64 and actions.shape == (40_000,)


def test_categorical_sample_is_deterministic_and_batched():
    logits = np.random.default_rng(1).normal(size=(3, 5, 6))
    a = rc.categorical_sample(logits, np.random.default_rng(7))
    b = rc.categorical_sample(logits, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 5) and a.min() >= 0 and a.max() < 6


def test_categorical_sample_never_picks_an_impossible_action():
    logits = np.array([[0.0, -1e4, 0.0], [-1e4, -1e4, 0.0]])
    actions = rc.categorical_sample(np.tile(logits, (5000, 1)), np.random.default_rng(2))
    assert not np.any(actions.reshape(5000, 2)[:, 0] == 1)
    assert np.all(actions.reshape(5000, 2)[:, 1] == 2)


def test_categorical_log_prob_and_entropy_values():
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    actions = np.array([2, 0])
    np.testing.assert_allclose(rc.categorical_log_prob(logits, actions), log_p[[0, 1], actions])
    entropy = rc.categorical_entropy(logits)
    np.testing.assert_allclose(entropy, -(np.exp(log_p) * log_p).sum(axis=1))
    assert entropy[1] == pytest.approx(np.log(3))
    assert np.all(entropy >= 0)


def test_categorical_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(4, 3))
    actions = np.array([0, 2, 1, 2])
    weights = rng.normal(size=4)

    def f(x):
        return rc.sum(rc.categorical_log_prob(x, actions) * weights) + 0.3 * rc.sum(
            rc.categorical_entropy(x))

    _, g = rc.value_and_grad(lambda p: f(p["logits"]))({"logits": logits})
    np.testing.assert_allclose(g["logits"], rc.numerical_grad(f, logits), rtol=1e-6, atol=1e-8)


def test_gaussian_log_prob_and_entropy():
    mean = np.array([[0.5, -1.0]])
    log_std = np.array([0.2, -0.3])
    actions = np.array([[1.0, 0.0]])
    std = np.exp(log_std)
    density = np.exp(-0.5 * ((actions - mean) / std) ** 2) / (std * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(rc.gaussian_log_prob(mean, log_std, actions), np.log(density).sum(axis=1))
    expected_entropy = np.sum(0.5 * np.log(2 * np.pi * np.e * std**2))
    assert float(rc.gaussian_entropy(log_std)) == pytest.approx(expected_entropy)


def test_gaussian_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    mean, log_std, actions = rng.normal(size=(5, 2)), rng.normal(size=2) * 0.3, rng.normal(size=(5, 2))
    _, g = rc.value_and_grad(lambda p: rc.sum(rc.gaussian_log_prob(p["m"], p["s"], actions))
                             + rc.gaussian_entropy(p["s"]))({"m": mean, "s": log_std})
    num_m = rc.numerical_grad(lambda m: np.sum(rc.gaussian_log_prob(m, log_std, actions)), mean)
    num_s = rc.numerical_grad(lambda s: np.sum(rc.gaussian_log_prob(mean, s, actions))
                              + rc.gaussian_entropy(s), log_std)
    np.testing.assert_allclose(g["m"], num_m, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g["s"], num_s, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_plus_inf_logits_raise(bad):
    logits = np.array([[0.0, bad, 1.0]])
    with pytest.raises(ValueError, match="logits"):
        rc.categorical_sample(logits, np.random.default_rng(0))
    with pytest.raises(ValueError, match="logits"):
        rc.categorical_log_prob(logits, np.array([0]))
    with pytest.raises(ValueError, match="logits"):
        rc.categorical_entropy(logits)


def test_minus_inf_rules_an_action_out():
    """-inf is a masked action: probability exactly 0, never sampled, adds 0 to the entropy with
    finite gradients; taking it is an error; a row with no possible action is an error."""
    logits = np.array([[0.3, -np.inf, 1.0], [-np.inf, 0.0, -np.inf]])
    draws = rc.categorical_sample(np.tile(logits, (2000, 1)), np.random.default_rng(0))
    assert not (draws.reshape(2000, 2)[:, 0] == 1).any() and (draws.reshape(2000, 2)[:, 1] == 1).all()
    masked = rc.categorical_entropy(logits)
    np.testing.assert_allclose(masked, [rc.categorical_entropy(np.array([0.3, 1.0])), 0.0])
    # a network's finite outputs plus a mask of -inf: gradients stay finite, 0 where masked
    net, mask = np.array([[0.3, 0.5, 1.0], [0.2, 0.0, 0.4]]), np.where(np.isneginf(logits), -np.inf, 0.0)
    value, g = rc.value_and_grad(lambda x: rc.sum(rc.categorical_entropy(x + mask)))(net)
    assert np.isfinite(value) and np.isfinite(g).all() and (g[np.isneginf(mask)] == 0).all()
    _, g = rc.value_and_grad(lambda x: rc.sum(rc.categorical_log_prob(x + mask, [2, 1])))(net)
    assert np.isfinite(g).all() and (g[np.isneginf(mask)] == 0).all()
    with pytest.raises(ValueError, match="actions: the action at .0,. has logit -inf"):
        rc.categorical_log_prob(logits, np.array([1, 1]))
    with pytest.raises(ValueError, match="-inf everywhere"):
        rc.categorical_sample(np.array([[-np.inf, -np.inf]]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="-inf everywhere"):
        rc.categorical_log_prob(np.array([[-np.inf, -np.inf]]), np.array([0]))


def test_lists_of_logits_are_accepted():
    np.testing.assert_allclose(rc.categorical_probs([[0.0, 0.0]]), [[0.5, 0.5]])
    np.testing.assert_allclose(rc.categorical_log_prob([[0.0, 0.0]], [1]), [np.log(0.5)])


def test_bad_actions_and_shapes_raise():
    logits = np.zeros((2, 3))
    with pytest.raises(ValueError, match="actions"):
        rc.categorical_log_prob(logits, np.array([0, 3]))
    with pytest.raises(ValueError, match="actions"):
        rc.categorical_log_prob(logits, np.array([-1, 0]))
    with pytest.raises(TypeError, match="actions"):
        rc.categorical_log_prob(logits, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="actions"):
        rc.categorical_log_prob(logits, np.array([0, 1, 2]))
    with pytest.raises(TypeError, match="rng"):
        rc.categorical_sample(logits, 0)
    with pytest.raises(ValueError, match="actions"):
        rc.gaussian_log_prob(np.zeros((2, 2)), np.zeros(2), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="log_std"):
        rc.gaussian_log_prob(np.zeros((2, 2)), np.zeros(3), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="mean"):
        rc.gaussian_log_prob(np.array([[np.nan, 0.0]]), np.zeros(2), np.zeros((1, 2)))
