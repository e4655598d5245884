"""Importance sampling: weights, ordinary vs weighted estimates, effective sample size, support."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---------------------------------------------------------------- the effective sample size

def test_effective_sample_size_is_scale_free():
    # the naive (sum w)^2 / sum w^2 is NaN on both: the squares overflow, or underflow to 0
    assert rc.effective_sample_size([2.0**600, 0.0, 1.0]) == pytest.approx(1.0)
    assert rc.effective_sample_size([1e-200, 1e-200]) == pytest.approx(2.0)
    assert rc.effective_sample_size([1e308, 1e308, 1e308]) == pytest.approx(3.0)
    rng = np.random.default_rng(3)
    w = rng.exponential(size=200)
    ess = rc.effective_sample_size(w)
    assert ess == pytest.approx(w.sum() ** 2 / np.sum(w**2))
    for scale in (1e-300, 1e-10, 1e10, 1e300):
        assert rc.effective_sample_size(w * scale) == pytest.approx(ess, rel=1e-12)
    assert rc.effective_sample_size(w.astype(np.float32)) == pytest.approx(ess, rel=1e-6)
    assert 1.0 <= ess <= len(w)


# any non-negative weights with a positive one, from subnormal to the largest float
_WEIGHT = st.one_of(st.just(0.0), st.floats(5e-324, np.finfo(np.float64).max),
                    st.sampled_from([2.0**600, 2.0**-600, 1e-300, 1e300, 5e-324, 1.0]))


@settings(max_examples=200)
@given(st.lists(_WEIGHT, min_size=1, max_size=30).filter(lambda w: max(w) > 0))
def test_effective_sample_size_lies_between_1_and_n_for_any_weights(weights):
    ess = rc.effective_sample_size(weights)
    assert 1.0 <= ess <= len(weights)
    # scale-free: multiplying by a power of two changes no ratio between the weights (unless
    # the product overflows or a weight leaves the normal range)
    w = np.array(weights)
    if max(weights) < 2.0**400 and min(x for x in weights if x > 0) > 2.0**-1000:
        assert rc.effective_sample_size(w * 2.0**600) == pytest.approx(ess, rel=1e-12)


@settings(max_examples=50)
@given(st.lists(st.lists(_WEIGHT, min_size=3, max_size=3).filter(lambda w: max(w) > 0),
                min_size=1, max_size=4))
def test_effective_sample_size_of_each_data_set_lies_between_1_and_n(rows):
    ess = rc.effective_sample_size(np.array(rows))
    assert ess.shape == (len(rows),) and ((1.0 <= ess) & (ess <= 3.0)).all()
    assert ess.tolist() == [rc.effective_sample_size(r) for r in rows]


def test_effective_sample_size_rejects_bad_weights():
    with pytest.raises(ValueError, match="every weight is 0"):
        rc.effective_sample_size([0.0, 0.0])
    with pytest.raises(ValueError, match="at least one"):
        rc.effective_sample_size(np.zeros(0))
    with pytest.raises(ValueError, match=">= 0"):
        rc.effective_sample_size([1.0, -0.5])
    with pytest.raises(ValueError, match="finite"):
        rc.effective_sample_size([1.0, np.inf])


# ---------------------------------------------------------------- truncated weights

def test_truncated_ordinary_estimate_underestimates_by_the_clipped_mass():
    target, behavior = np.array([0.7, 0.2, 0.1]), np.array([0.2, 0.3, 0.5])
    reward = np.array([1.0, 0.5, 2.0])  # non-negative returns
    true = float(target @ reward)
    w = target / behavior  # 3.5, 0.67, 0.2
    for clip in (0.5, 1.0, 2.0, 3.0):
        clipped = rc.importance_weights(target, behavior, np.arange(3), clip=clip)
        expectation = float(behavior @ (clipped * reward))  # exact E_b[min(w, c) G]
        lost = float(behavior @ (np.maximum(w - clip, 0) * reward))
        assert expectation == pytest.approx(true - lost)
        assert expectation < true
        # the weighted estimate renormalises: its limit is the value of the policy
        # proportional to min(pi, clip * b), which is b itself once clip is below every weight
        weighted_limit = expectation / float(behavior @ clipped)
        capped = np.minimum(target, clip * behavior)
        assert weighted_limit == pytest.approx(float(capped @ reward) / capped.sum())
    small = rc.importance_weights(target, behavior, np.arange(3), clip=0.1)
    assert float(behavior @ (small * reward)) / float(behavior @ small) == pytest.approx(behavior @ reward)
    assert float(behavior @ (rc.importance_weights(target, behavior, np.arange(3), clip=4.0) * reward)) \
        == pytest.approx(true)


# ---------------------------------------------------------------- per-decision IS

def _pd_by_loops(rewards, ratios, gamma):
    n, T = rewards.shape
    ordinary = 0.0
    for i in range(n):
        for t in range(T):
            ordinary += gamma**t * np.prod(ratios[i, : t + 1]) * rewards[i, t]
    weighted = 0.0
    for t in range(T):
        w = np.array([np.prod(ratios[i, : t + 1]) for i in range(n)])
        weighted += gamma**t * np.sum(w * rewards[:, t]) / np.sum(w)
    return ordinary / n, weighted


def test_per_decision_matches_its_definition_by_loops():
    rng = np.random.default_rng(4)
    rewards, ratios = rng.normal(size=(7, 5)), rng.exponential(size=(7, 5))
    for gamma in (1.0, 0.9, 0.0):
        got = rc.per_decision_estimate(rewards, ratios, gamma=gamma)
        assert got == pytest.approx(_pd_by_loops(rewards, ratios, gamma))
    # an episode that ended early: masked steps count as reward 0, ratio 1
    mask = np.ones((7, 5), dtype=bool)
    mask[2, 3:] = False
    mask[5, 1:] = False
    padded_r, padded_rho = np.where(mask, rewards, 0.0), np.where(mask, ratios, 1.0)
    got = rc.per_decision_estimate(rewards * 1e3 * ~mask + rewards, ratios + 5.0 * ~mask, 0.9, mask=mask)
    assert got == pytest.approx(_pd_by_loops(padded_r, padded_rho, 0.9))


def test_per_decision_special_cases():
    rng = np.random.default_rng(5)
    rewards, ratios = rng.normal(size=(6, 4)), rng.exponential(size=(6, 4))
    # on-policy data (every ratio 1): both are the mean discounted return
    g = np.sum(0.9 ** np.arange(4) * rewards, axis=1).mean()
    assert rc.per_decision_estimate(rewards, np.ones((6, 4)), 0.9) == pytest.approx((g, g))
    # only the last reward nonzero: per-decision equals full-trajectory IS
    last = np.zeros((6, 4))
    last[:, -1] = rewards[:, -1]
    full = rc.importance_estimate(rewards[:, -1], ratios.prod(axis=1))
    pd = rc.per_decision_estimate(last, ratios)
    assert pd.ordinary == pytest.approx(full.ordinary)
    assert pd.weighted == pytest.approx(full.weighted)


def _small_mdp():
    """Two actions, three steps; the reward of a step depends on this and the previous action."""
    behavior = np.array([0.6, 0.4])
    target = np.array([0.2, 0.8])
    mean_reward = np.array([[1.0, 0.2], [0.5, 2.0], [0.3, 1.0]])  # [previous action or start, action]
    return behavior, target, mean_reward


def _episode_rewards(actions, mean_reward):
    prev = np.concatenate([[2], actions[:-1]])  # row 2 is the start
    return mean_reward[prev, actions]


def test_per_decision_is_unbiased_by_brute_force_enumeration():
    behavior, target, mean_reward = _small_mdp()
    T, gamma = 3, 0.8
    true = 0.0
    expected_pd = expected_full = 0.0
    for seq in itertools.product(range(2), repeat=T):
        a = np.array(seq)
        r = _episode_rewards(a, mean_reward)
        discounted = float(np.sum(gamma ** np.arange(T) * r))
        true += np.prod(target[a]) * discounted
        rho = target[a] / behavior[a]
        prob_b = np.prod(behavior[a])
        # n = 1: the estimate from this one episode (rewards replaced by their means: the
        # estimators are linear in the rewards, so this is their expectation given the actions)
        expected_pd += prob_b * rc.per_decision_estimate(r[None], rho[None], gamma).ordinary
        expected_full += prob_b * np.prod(rho) * discounted
    assert expected_pd == pytest.approx(true)
    assert expected_full == pytest.approx(true)


def test_per_decision_has_less_variance_than_full_trajectory_is_and_weighted_is_consistent():
    behavior, target, mean_reward = _small_mdp()
    rng = np.random.default_rng(6)
    T, n = 3, 200_000
    a = rng.choice(2, size=(n, T), p=behavior)
    prev = np.concatenate([np.full((n, 1), 2), a[:, :-1]], axis=1)
    r = mean_reward[prev, a] + rng.normal(size=(n, T))
    rho = target[a] / behavior[a]
    true = sum(np.prod(target[list(s)]) * _episode_rewards(np.array(s), mean_reward).sum()
               for s in itertools.product(range(2), repeat=T))
    pd_terms = np.sum(np.cumprod(rho, axis=1) * r, axis=1)
    full_terms = rho.prod(axis=1) * r.sum(axis=1)
    assert pd_terms.var() < full_terms.var()
    est = rc.per_decision_estimate(r, rho)
    assert est.ordinary == pytest.approx(true, abs=5 * pd_terms.std() / np.sqrt(n))
    assert est.weighted == pytest.approx(true, abs=0.02)


def test_per_decision_numerics_and_errors():
    # products that underflow float64 (0.1**400): the weighted estimate normalises each step's
    # weights in log space, so equal tiny weights still give the mean reward, not 0/0 = NaN
    rng = np.random.default_rng(7)
    rewards = rng.normal(size=(3, 400))
    est = rc.per_decision_estimate(rewards, np.full((3, 400), 0.1))
    assert est.weighted == pytest.approx(rewards.mean(axis=0).sum())
    assert est.ordinary == pytest.approx(np.sum(0.1 ** np.arange(1, 401) * rewards.mean(axis=0)))
    # products that overflow float64 (10**400): the ordinary estimate has no float64 value
    with pytest.raises(ValueError, match="overflow"):
        rc.per_decision_estimate(rewards, np.full((3, 400), 10.0))
    with pytest.raises(ValueError, match="every episode has weight 0"):
        rc.per_decision_estimate(np.ones((2, 3)), np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="ratios: expected shape"):
        rc.per_decision_estimate(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=">= 0"):
        rc.per_decision_estimate(np.ones((1, 2)), np.array([[1.0, -1.0]]))
    with pytest.raises(ValueError, match="gamma"):
        rc.per_decision_estimate(np.ones((1, 2)), np.ones((1, 2)), gamma=1.5)
    with pytest.raises(ValueError, match=r"rewards: expected \[n, T\]"):
        rc.per_decision_estimate(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="mask: expected shape"):
        rc.per_decision_estimate(np.ones((2, 3)), np.ones((2, 3)), mask=np.ones((2, 2), bool))


# ---------------------------------------------------------------- direct method and doubly robust

def test_direct_method_and_doubly_robust_by_hand():
    pi = np.array([[0.5, 0.5], [0.9, 0.1]])
    q = np.array([[1.0, 0.0], [0.2, 0.6]])
    assert rc.direct_method_estimate(pi, q) == pytest.approx((0.5 + (0.18 + 0.06)) / 2)
    rewards, actions, p = np.array([1.0, 0.0]), np.array([1, 0]), np.array([0.25, 0.5])
    # sample 0: v = 0.5, w = 0.5/0.25 = 2, residual 1 - 0 = 1  -> 2.5
    # sample 1: v = 0.24, w = 0.9/0.5 = 1.8, residual 0 - 0.2 -> 0.24 - 0.36 = -0.12
    assert rc.doubly_robust_estimate(rewards, actions, p, pi, q) == pytest.approx((2.5 - 0.12) / 2)
    # with a perfect residual (q_hat equals the reward) the correction vanishes: DR = DM
    q_exact = q.copy()
    q_exact[0, 1], q_exact[1, 0] = 1.0, 0.0
    assert rc.doubly_robust_estimate(rewards, actions, p, pi, q_exact) == \
        pytest.approx(rc.direct_method_estimate(pi, q_exact))


def _contextual_bandit():
    p_x = np.array([0.6, 0.4])
    click = np.array([[0.2, 0.7, 0.4], [0.5, 0.1, 0.9]])  # P(reward 1 | x, a)
    behavior = np.array([[0.6, 0.2, 0.2], [0.3, 0.5, 0.2]])
    target = np.array([[0.1, 0.6, 0.3], [0.2, 0.1, 0.7]])
    return p_x, click, behavior, target


def _exact_expectation(estimate):
    """E[estimate] over one logged sample (x, a, r): the estimators are means of i.i.d. terms,
    so this is their expectation for any n. ``estimate(x, a, r)`` gets one-sample arrays."""
    p_x, click, behavior, _ = _contextual_bandit()
    total = 0.0
    for x, a, r in itertools.product(range(2), range(3), (0.0, 1.0)):
        prob = p_x[x] * behavior[x, a] * (click[x, a] if r else 1 - click[x, a])
        total += prob * estimate(np.array([x]), np.array([a]), np.array([r]))
    return total


def test_doubly_robust_is_unbiased_if_either_the_model_or_the_propensities_are_right():
    p_x, click, behavior, target = _contextual_bandit()
    true = float(p_x @ np.sum(target * click, axis=1))
    wrong_model = np.array([[0.6, 0.2, 0.6], [0.6, 0.2, 0.6]])  # ignores the context
    wrong_propensity = np.array([[0.45, 0.32, 0.23], [0.45, 0.32, 0.23]])  # likewise

    def dr(model, propensity):
        return lambda x, a, r: rc.doubly_robust_estimate(r, a, propensity[x, a], target[x], model[x])

    def dm(model):
        return lambda x, a, r: rc.direct_method_estimate(target[x], model[x])

    def ips(propensity):
        return lambda x, a, r: float(np.mean(target[x, a] / propensity[x, a] * r))

    assert _exact_expectation(dr(click, behavior)) == pytest.approx(true)
    assert _exact_expectation(dr(wrong_model, behavior)) == pytest.approx(true)  # propensities right
    assert _exact_expectation(dr(click, wrong_propensity)) == pytest.approx(true)  # model right
    assert abs(_exact_expectation(dr(wrong_model, wrong_propensity)) - true) > 0.01  # both wrong
    assert _exact_expectation(dm(click)) == pytest.approx(true)
    assert abs(_exact_expectation(dm(wrong_model)) - true) > 0.01
    assert _exact_expectation(ips(behavior)) == pytest.approx(true)
    assert abs(_exact_expectation(ips(wrong_propensity)) - true) > 0.01


def test_doubly_robust_rejects_bad_input():
    pi, q = np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]])
    with pytest.raises(ValueError, match="propensities: expected probabilities in"):
        rc.doubly_robust_estimate([1.0], [0], [0.0], pi, q)
    with pytest.raises(ValueError, match="propensities: expected probabilities in"):
        rc.doubly_robust_estimate([1.0], [0], [1.5], pi, q)
    with pytest.raises(ValueError, match="actions: values must be < 2"):
        rc.doubly_robust_estimate([1.0], [2], [0.5], pi, q)
    with pytest.raises(ValueError, match="q_hat: expected shape"):
        rc.doubly_robust_estimate([1.0], [0], [0.5], pi, np.ones((1, 3)))
    with pytest.raises(ValueError, match="rewards: expected shape"):
        rc.doubly_robust_estimate([1.0, 2.0], [0], [0.5], pi, q)
    with pytest.raises(ValueError, match="sum to 1"):
        rc.direct_method_estimate(np.array([[0.5, 0.6]]), q)
    with pytest.raises(ValueError, match="finite"):
        rc.direct_method_estimate(pi, np.array([[np.nan, 0.0]]))


def test_leading_axes_are_independent_data_sets():
    rng = np.random.default_rng(8)
    R, n, T, A = 4, 6, 3, 3
    g, w = rng.normal(size=(R, n)), rng.exponential(size=(R, n))
    batch = rc.importance_estimate(g, w)
    for i in range(R):
        assert tuple(np.asarray(batch)[:, i]) == pytest.approx(tuple(rc.importance_estimate(g[i], w[i])))
    assert rc.effective_sample_size(w) == pytest.approx([rc.effective_sample_size(x) for x in w])
    rewards, ratios = rng.normal(size=(R, n, T)), rng.exponential(size=(R, n, T))
    pd = rc.per_decision_estimate(rewards, ratios, 0.9)
    for i in range(R):
        one = rc.per_decision_estimate(rewards[i], ratios[i], 0.9)
        assert (pd.ordinary[i], pd.weighted[i]) == pytest.approx(tuple(one))
    pi, q = rng.dirichlet(np.ones(A), size=(R, n)), rng.random((R, n, A))
    a, p, r = rng.integers(0, A, size=(R, n)), rng.uniform(0.1, 1, size=(R, n)), rng.random((R, n))
    dm, dr = rc.direct_method_estimate(pi, q), rc.doubly_robust_estimate(r, a, p, pi, q)
    assert dm.shape == dr.shape == (R,)
    for i in range(R):
        assert dm[i] == pytest.approx(rc.direct_method_estimate(pi[i], q[i]))
        assert dr[i] == pytest.approx(rc.doubly_robust_estimate(r[i], a[i], p[i], pi[i], q[i]))
    assert isinstance(rc.direct_method_estimate(pi[0], q[0]), float)
    w[2] = 0.0
    with pytest.raises(ValueError, match=r"every weight is 0 in data set \(2,\)"):
        rc.effective_sample_size(w)


# ---------------------------------------------------------------- step-wise doubly robust

def _chain(T, rng, n, deterministic):
    """Episodes of T steps in which the state is the previous action (3 actions; -1 at the start):
    reward table r[prev + 1, a], behaviour b and target pi fixed. Returns the logged data, the
    exact Q/V of the target at every logged step and the target's exact value."""
    r_table = rng.random((4, 3))
    b, pi = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    Q = np.zeros((T, 4, 3))
    V = np.zeros((T + 1, 4))
    for t in range(T - 1, -1, -1):
        Q[t] = r_table + V[t + 1][1:][None, :]  # after action a the next state is a
        V[t] = Q[t] @ pi
    a = rng.choice(3, size=(n, T), p=b)
    prev = np.concatenate([np.full((n, 1), -1), a[:, :-1]], axis=1) + 1
    mean_r = r_table[prev, a]
    rewards = mean_r if deterministic else (rng.random((n, T)) < mean_r).astype(float)
    steps = np.arange(T)
    return rewards, pi[a] / b[a], Q[steps, prev, a], V[steps, prev], float(V[0, 0])


def test_stepwise_dr_without_a_model_is_per_decision_is():
    rng = np.random.default_rng(20)
    r, rho = rng.normal(size=(6, 5)), rng.exponential(size=(6, 5))
    zero = np.zeros_like(r)
    est = rc.stepwise_doubly_robust_estimate(r, rho, zero, zero, 0.9)
    assert tuple(est) == pytest.approx(tuple(rc.per_decision_estimate(r, rho, 0.9)))


def test_stepwise_dr_by_hand():
    r = np.array([[1.0, 0.0], [0.0, 2.0]])
    rho = np.array([[2.0, 0.5], [0.5, 1.0]])
    q = np.array([[0.5, 0.2], [0.4, 1.0]])
    v = np.array([[0.6, 0.3], [0.6, 0.8]])
    # episode 0: w = [2, 1], w_prev = [1, 2]: 2 (1 - 0.5) + 0.6 + 1 (0 - 0.2) + 2 (0.3) = 2.0
    # episode 1: w = [0.5, 0.5], w_prev = [1, 0.5]: 0.5 (-0.4) + 0.6 + 0.5 (1.0) + 0.5 (0.8) = 1.3
    est = rc.stepwise_doubly_robust_estimate(r, rho, q, v)
    assert est.ordinary == pytest.approx((2.0 + 1.3) / 2)
    # weighted: step 0 weights [0.8, 0.2], previous [0.5, 0.5]; step 1 [2/3, 1/3], previous [0.8, 0.2]
    weighted = (0.8 * 0.5 + 0.2 * -0.4 + 0.6) + (2 / 3 * -0.2 + 1 / 3 * 1.0 + 0.8 * 0.3 + 0.2 * 0.8)
    assert est.weighted == pytest.approx(weighted)


def test_stepwise_dr_with_the_true_model_and_deterministic_rewards_is_exact():
    rng = np.random.default_rng(21)
    rewards, ratios, q, v, true = _chain(6, rng, 5, deterministic=True)
    est = rc.stepwise_doubly_robust_estimate(rewards, ratios, q, v)
    assert est.ordinary == pytest.approx(true) and est.weighted == pytest.approx(true)
    assert rc.per_decision_estimate(rewards, ratios).ordinary != pytest.approx(true)


def test_stepwise_dr_is_unbiased_with_a_wrong_model_and_beats_per_decision_with_a_good_one():
    rng = np.random.default_rng(22)
    T, n, reps = 8, 20, 3000
    rewards, ratios, q, v, true = _chain(T, rng, n * reps, deterministic=False)
    shape = (reps, n, T)
    rewards, ratios, q, v = (x.reshape(shape) for x in (rewards, ratios, q, v))
    wrong = rc.stepwise_doubly_robust_estimate(rewards, ratios, 0.5 * q + 0.3, 0.5 * v + 0.3).ordinary
    assert abs(wrong.mean() - true) < 4 * wrong.std() / np.sqrt(reps)
    good = rc.stepwise_doubly_robust_estimate(rewards, ratios, q, v).ordinary
    assert abs(good.mean() - true) < 4 * good.std() / np.sqrt(reps)
    assert good.std() < 0.7 * rc.per_decision_estimate(rewards, ratios).ordinary.std()


def test_stepwise_dr_batches_masks_and_errors():
    rng = np.random.default_rng(23)
    r, rho, q, v = rng.normal(size=(3, 4, 5)), rng.exponential(size=(3, 4, 5)), rng.random((3, 4, 5)), \
        rng.random((3, 4, 5))
    batch = rc.stepwise_doubly_robust_estimate(r, rho, q, v, 0.9)
    for i in range(3):
        one = rc.stepwise_doubly_robust_estimate(r[i], rho[i], q[i], v[i], 0.9)
        assert (batch.ordinary[i], batch.weighted[i]) == pytest.approx(tuple(one))
    mask = np.ones((4, 5), bool)
    mask[0, 3:] = False  # episode 0 ended after 3 steps: what follows must not count
    junk = [x[0].copy() for x in (r, rho, q, v)]
    for x in junk:
        x[0, 3:] = 99.0
    clean = [x[0].copy() for x in (r, rho, q, v)]
    for x, fill in zip(clean, (0.0, 1.0, 0.0, 0.0)):
        x[0, 3:] = fill
    assert tuple(rc.stepwise_doubly_robust_estimate(*junk, mask=mask)) == pytest.approx(
        tuple(rc.stepwise_doubly_robust_estimate(*clean)))
    ones = np.ones((2, 3))
    with pytest.raises(ValueError, match="q_hat: expected shape"):
        rc.stepwise_doubly_robust_estimate(ones, ones, np.ones((2, 2)), ones)
    with pytest.raises(ValueError, match="v_hat: expected shape"):
        rc.stepwise_doubly_robust_estimate(ones, ones, ones, np.ones(3))
    with pytest.raises(ValueError, match="every episode has weight 0"):
        rc.stepwise_doubly_robust_estimate(ones, np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 1.0]]), ones, ones)
    with pytest.raises(ValueError, match="overflow"):
        rc.stepwise_doubly_robust_estimate(np.ones((2, 400)), np.full((2, 400), 10.0), np.ones((2, 400)),
                                           np.ones((2, 400)))
    with pytest.raises(ValueError, match=">= 0"):
        rc.stepwise_doubly_robust_estimate(ones, -ones, ones, ones)


def test_no_support_message_names_the_sample_and_the_action():
    target = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    behavior = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    with pytest.raises(ValueError, match="at sample 1, action 2 the behaviour probability is 0"):
        rc.importance_weights(target, behavior, [0, 1])
    with pytest.raises(ValueError, match="logged action of sample 1 has behaviour probability 0"):
        rc.importance_weights([0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0, 2])
