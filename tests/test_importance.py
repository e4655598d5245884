"""Importance sampling: weights, ordinary vs weighted estimates, effective sample size, support."""

import numpy as np
import pytest

import rlcourse as rc


def test_weights_by_hand_and_clipping():
    target, behavior = np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.25, 0.5])
    w = rc.importance_weights(target, behavior, [0, 1, 2, 0])
    np.testing.assert_allclose(w, [2.0, 1.2, 0.4, 2.0])
    np.testing.assert_allclose(rc.importance_weights(target, behavior, [0, 1, 2], clip=1.5), [1.5, 1.2, 0.4])
    rows_t = np.array([[0.9, 0.1], [0.2, 0.8]])
    rows_b = np.array([[0.5, 0.5], [0.4, 0.6]])
    np.testing.assert_allclose(rc.importance_weights(rows_t, rows_b, [1, 0]), [0.2, 0.5])


def test_estimates_by_hand():
    returns, weights = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.0])
    est = rc.importance_estimate(returns, weights)
    assert est.ordinary == pytest.approx((0.5 + 2.0 + 6.0) / 3)
    assert est.weighted == pytest.approx(8.5 / 3.5)
    assert est.ess == pytest.approx(3.5**2 / (0.25 + 1 + 4))
    assert rc.importance_estimate(returns, np.ones(3)).ess == pytest.approx(3.0)
    assert rc.effective_sample_size([0.0, 0.0, 5.0]) == pytest.approx(1.0)


def test_ordinary_is_unbiased_and_weighted_is_consistent():
    rng = np.random.default_rng(0)
    target, behavior = np.array([0.7, 0.2, 0.1]), np.array([1 / 3, 1 / 3, 1 / 3])
    reward = np.array([1.0, 0.0, -2.0])
    true = float(target @ reward)
    ordinary, weighted = [], []
    for _ in range(2000):
        a = rng.choice(3, size=20, p=behavior)
        est = rc.importance_estimate(reward[a], rc.importance_weights(target, behavior, a))
        ordinary.append(est.ordinary)
        weighted.append(est.weighted)
    ordinary, weighted = np.array(ordinary), np.array(weighted)
    assert abs(ordinary.mean() - true) < 4 * ordinary.std() / np.sqrt(len(ordinary))
    assert weighted.std() < ordinary.std()  # the weighted estimator trades a little bias for variance
    a = rng.choice(3, size=100_000, p=behavior)
    big = rc.importance_estimate(reward[a], rc.importance_weights(target, behavior, a))
    assert big.weighted == pytest.approx(true, abs=0.02)


def test_missing_support_and_bad_rows_raise():
    target, behavior = np.array([0.5, 0.5, 0.0]), np.array([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="no support"):
        rc.importance_weights(target, behavior, [0])
    # behaviour lacks an action the target never takes: fine
    np.testing.assert_allclose(rc.importance_weights([1.0, 0.0], [0.5, 0.5], [0, 1]), [2.0, 0.0])
    with pytest.raises(ValueError, match="behaviour probability 0"):
        rc.importance_weights([0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [2])
    with pytest.raises(ValueError, match="sum to 1"):
        rc.importance_weights([0.5, 0.6], [0.5, 0.5], [0])
    with pytest.raises(ValueError, match="actions: values must be < 2"):
        rc.importance_weights([0.5, 0.5], [0.5, 0.5], [2])
    with pytest.raises(ValueError, match="actions: expected shape"):
        rc.importance_weights(np.full((3, 2), 0.5), np.full((3, 2), 0.5), [0, 1])
    with pytest.raises(ValueError, match="every weight is 0"):
        rc.importance_estimate([1.0, 2.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="weights: expected shape"):
        rc.importance_estimate([1.0, 2.0], [1.0])


def test_trajectory_weight_products_explode_with_the_horizon():
    rng = np.random.default_rng(1)
    target, behavior = np.array([0.6, 0.4]), np.array([0.5, 0.5])
    ess = []
    for horizon in (1, 10, 50):
        a = rng.choice(2, size=(horizon, 1000), p=behavior)
        w = rc.importance_weights(target, behavior, a).prod(axis=0)
        # the product's mean stays 1 in expectation, but its spread grows as (E[w^2])^T
        ess.append(rc.effective_sample_size(w))
    assert ess[0] > 900 and ess[2] < ess[1] < ess[0] and ess[2] < 300
