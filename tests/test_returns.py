"""Returns and GAE against a brute-force per-episode loop, plus the terminal/truncation invariants.

The brute-force references walk forward from each step to the end of its episode, written
independently of the backward recursions in rlcourse.returns.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlcourse as rc
from rlcourse.core import returns as returns_module


def random_rollout(seed, T, n, p_term=0.15, p_trunc=0.1):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, n))
    values = rng.normal(size=(T, n))
    next_values = rng.normal(size=(T, n))
    terminated = rng.random((T, n)) < p_term
    truncated = rng.random((T, n)) < p_trunc
    return rewards, values, next_values, terminated, truncated


def episode_end(done_column, t):
    """The last step of the episode containing step t (the rollout's end if it never ends)."""
    T = len(done_column)
    for k in range(t, T):
        if done_column[k]:
            return k
    return T - 1


def brute_returns(rewards, terminated, truncated, gamma, next_values):
    T, n = rewards.shape
    out = np.zeros((T, n))
    for i in range(n):
        done = terminated[:, i] | truncated[:, i]
        for t in range(T):
            end = episode_end(done, t)
            total = sum(gamma ** (k - t) * rewards[k, i] for k in range(t, end + 1))
            if not terminated[end, i]:  # truncated, or the rollout stopped mid-episode
                total += gamma ** (end - t + 1) * next_values[end, i]
            out[t, i] = total
    return out


def brute_gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    T, n = rewards.shape
    adv = np.zeros((T, n))
    for i in range(n):
        done = terminated[:, i] | truncated[:, i]
        for t in range(T):
            end = episode_end(done, t)
            for k in range(t, end + 1):
                bootstrap = 0.0 if terminated[k, i] else next_values[k, i]
                delta = rewards[k, i] + gamma * bootstrap - values[k, i]
                adv[t, i] += (gamma * lam) ** (k - t) * delta
    return adv


def check_gae(gae_fn, seeds=range(25)):
    """The invariant check used on the reference and on the planted bugs below."""
    for seed in seeds:
        rng = np.random.default_rng(1000 + seed)
        T, n = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        gamma, lam = float(rng.uniform(0.5, 1.0)), float(rng.uniform(0.0, 1.0))
        r, v, nv, term, trunc = random_rollout(seed, T, n)
        adv, ret = gae_fn(r, v, nv, term, trunc, gamma, lam)
        expected = brute_gae(r, v, nv, term, trunc, gamma, lam)
        np.testing.assert_allclose(adv, expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(ret, expected + v, rtol=1e-9, atol=1e-9)


def check_returns(returns_fn, seeds=range(25)):
    for seed in seeds:
        rng = np.random.default_rng(2000 + seed)
        T, n = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        gamma = float(rng.uniform(0.5, 1.0))
        r, _, nv, term, trunc = random_rollout(seed, T, n)
        got = returns_fn(r, term, trunc, gamma, nv)
        np.testing.assert_allclose(got, brute_returns(r, term, trunc, gamma, nv), rtol=1e-9, atol=1e-9)


def test_gae_matches_brute_force():
    check_gae(rc.gae)


def test_discounted_returns_match_brute_force():
    check_returns(rc.discounted_returns)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), T=st.integers(1, 15), n=st.integers(1, 4),
       gamma=st.floats(0.0, 1.0), lam=st.floats(0.0, 1.0),
       p_term=st.floats(0.0, 0.6), p_trunc=st.floats(0.0, 0.6))
def test_gae_and_returns_property(seed, T, n, gamma, lam, p_term, p_trunc):
    r, v, nv, term, trunc = random_rollout(seed, T, n, p_term, p_trunc)
    adv, ret = rc.gae(r, v, nv, term, trunc, gamma, lam)
    np.testing.assert_allclose(adv, brute_gae(r, v, nv, term, trunc, gamma, lam), atol=1e-9)
    np.testing.assert_allclose(rc.discounted_returns(r, term, trunc, gamma, nv),
                               brute_returns(r, term, trunc, gamma, nv), atol=1e-9)


def test_gae_with_lambda_one_is_the_return_minus_values():
    r, v, _, term, trunc = random_rollout(3, 20, 3)
    # consistent critic: next_values[t] = values[t + 1] inside an episode
    rng = np.random.default_rng(5)
    nv = np.vstack([v[1:], rng.normal(size=(1, 3))])
    done = term | trunc
    nv[done] = rng.normal(size=done.sum())  # V(final_obs) where an episode ended
    _, ret = rc.gae(r, v, nv, term, trunc, gamma=0.9, lam=1.0)
    np.testing.assert_allclose(ret, rc.discounted_returns(r, term, trunc, 0.9, nv), atol=1e-10)


def test_gae_with_lambda_zero_is_the_td_error():
    r, v, nv, term, trunc = random_rollout(4, 10, 2)
    adv, _ = rc.gae(r, v, nv, term, trunc, gamma=0.95, lam=0.0)
    np.testing.assert_allclose(adv, r + 0.95 * np.where(term, 0.0, nv) - v)


def test_terminal_step_is_unchanged_by_anything_after_it():
    r, v, nv, term, trunc = random_rollout(7, 12, 1, 0.0, 0.0)
    term[4, 0] = True
    adv, ret = rc.gae(r, v, nv, term, trunc, 0.99, 0.95)
    g = rc.discounted_returns(r, term, trunc, 0.99, nv)
    r2, v2, nv2 = r.copy(), v.copy(), nv.copy()
    r2[5:] += 100.0
    v2[5:] -= 50.0
    nv2[4:] += 7.0  # includes the critic's guess for the terminal state itself
    adv2, _ = rc.gae(r2, v2, nv2, term, trunc, 0.99, 0.95)
    g2 = rc.discounted_returns(r2, term, trunc, 0.99, nv2)
    np.testing.assert_array_equal(adv2[:5], adv[:5])
    np.testing.assert_array_equal(g2[:5], g[:5])
    assert adv[4, 0] == pytest.approx(r[4, 0] - v[4, 0])
    assert g[4, 0] == pytest.approx(r[4, 0])


def test_truncation_bootstraps_from_next_values():
    r, v, nv, term, trunc = random_rollout(8, 10, 1, 0.0, 0.0)
    trunc[3, 0] = True
    gamma, lam = 0.9, 0.8
    adv, _ = rc.gae(r, v, nv, term, trunc, gamma, lam)
    nv2 = nv.copy()
    nv2[3, 0] += 1.0
    adv2, _ = rc.gae(r, v, nv2, term, trunc, gamma, lam)
    # one more unit of V(final_obs) adds gamma to delta[3] and (gamma lam)^(3-t) gamma before it
    expected = np.zeros(10)
    expected[:4] = gamma * (gamma * lam) ** np.arange(3, -1, -1)
    np.testing.assert_allclose((adv2 - adv)[:, 0], expected, atol=1e-12)
    g = rc.discounted_returns(r, term, trunc, gamma, nv)
    assert g[3, 0] == pytest.approx(r[3, 0] + gamma * nv[3, 0])
    # terminated on the same step: the time limit no longer matters, nothing is bootstrapped
    term[3, 0] = True
    assert rc.discounted_returns(r, term, trunc, gamma, nv)[3, 0] == pytest.approx(r[3, 0])


def test_monte_carlo_returns_without_next_values():
    r = np.ones((4, 1))
    term = np.array([[False], [True], [False], [False]])
    trunc = np.zeros((4, 1), bool)
    g = rc.discounted_returns(r, term, trunc, 0.5)
    np.testing.assert_allclose(g[:, 0], [1.5, 1.0, 1.5, 1.0])


def test_one_dimensional_and_float32():
    r, v, nv, term, trunc = (a[:, 0] for a in random_rollout(9, 8, 1))
    adv, ret = rc.gae(r.astype(np.float32), v.astype(np.float32), nv.astype(np.float32), term, trunc)
    assert adv.shape == (8,) and adv.dtype == np.float32 and ret.dtype == np.float32
    np.testing.assert_allclose(adv, brute_gae(r[:, None], v[:, None], nv[:, None], term[:, None],
                                              trunc[:, None], 0.99, 0.95)[:, 0], rtol=1e-5, atol=1e-5)


# ---- planted bugs: each broken copy must fail the same invariant check

def _gae_no_terminal_mask(r, v, nv, term, trunc, gamma, lam):
    return returns_module._gae(r, v, nv, np.zeros_like(term), term | trunc, gamma, lam)


def _gae_truncation_as_terminal(r, v, nv, term, trunc, gamma, lam):
    return returns_module._gae(r, v, nv, term | trunc, trunc, gamma, lam)


def _gae_crosses_episodes(r, v, nv, term, trunc, gamma, lam):
    # keeps the terminal mask on delta but lets the recursion run through episode ends
    deltas = r + gamma * np.where(term, 0.0, nv) - v
    adv = np.zeros_like(r)
    following = np.zeros(r.shape[1:])
    for t in range(len(r) - 1, -1, -1):
        following = deltas[t] + gamma * lam * following
        adv[t] = following
    return adv, adv + v


@pytest.mark.parametrize("broken", [_gae_no_terminal_mask, _gae_truncation_as_terminal,
                                    _gae_crosses_episodes])
def test_planted_gae_bugs_are_caught(broken):
    with pytest.raises(AssertionError):
        check_gae(broken)


def test_planted_bug_in_reference_is_caught(monkeypatch):
    def truncation_as_terminal(r, v, nv, term, trunc, gamma, lam, _real=returns_module._gae):
        return _real(r, v, nv, term | trunc, trunc, gamma, lam)

    monkeypatch.setattr(returns_module, "_gae", truncation_as_terminal)
    with pytest.raises(AssertionError):
        check_gae(rc.gae)


def test_planted_returns_bug_is_caught():
    def returns_ignoring_truncation(r, term, trunc, gamma, nv):
        return rc.discounted_returns(r, term | trunc, np.zeros_like(trunc), gamma, nv)

    with pytest.raises(AssertionError):
        check_returns(returns_ignoring_truncation)


# ---- n-step returns on one episode

def test_n_step_return():
    rewards = np.array([1.0, 2.0, 3.0, 4.0])
    values = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    g = 0.5
    assert rc.n_step_return(rewards, values, 0, 1, g) == pytest.approx(1 + g * 20)
    assert rc.n_step_return(rewards, values, 1, 2, g) == pytest.approx(2 + g * 3 + g**2 * 40)
    # reaching the end of a terminated episode: Monte Carlo, values[T] ignored
    assert rc.n_step_return(rewards, values, 2, 10, g) == pytest.approx(3 + g * 4)
    # truncated / unfinished episode: bootstrap from values[T]
    assert rc.n_step_return(rewards, values, 2, 10, g, terminated=False) == pytest.approx(
        3 + g * 4 + g**2 * 50)
    mc = rc.discounted_returns(rewards, [0, 0, 0, 1], [0, 0, 0, 0], g)
    assert rc.n_step_return(rewards, values, 0, 4, g) == pytest.approx(mc[0])


# ---- bad input

def test_bad_input_raises():
    r, v, nv, term, trunc = random_rollout(0, 5, 2)
    with pytest.raises(ValueError, match="values"):
        rc.gae(r, v[:4], nv, term, trunc)
    with pytest.raises(ValueError, match="terminated"):
        rc.gae(r, v, nv, term[:, :1], trunc)
    bad = r.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="rewards"):
        rc.gae(bad, v, nv, term, trunc)
    with pytest.raises(ValueError, match="gamma"):
        rc.gae(r, v, nv, term, trunc, gamma=1.5)
    with pytest.raises(ValueError, match="lam"):
        rc.gae(r, v, nv, term, trunc, lam=-0.1)
    with pytest.raises(TypeError, match="truncated"):
        rc.gae(r, v, nv, term, trunc * 2.5)
    with pytest.raises(ValueError, match="next_values"):
        rc.discounted_returns(r, term, trunc, 0.9, nv[:3])
    with pytest.raises(ValueError, match="values"):
        rc.n_step_return([1.0, 2.0], [0.0, 0.0], 0, 1, 0.9)
    with pytest.raises(ValueError, match="start"):
        rc.n_step_return([1.0, 2.0], [0.0, 0.0, 0.0], 2, 1, 0.9)
    with pytest.raises(ValueError, match="n"):
        rc.n_step_return([1.0, 2.0], [0.0, 0.0, 0.0], 0, 0, 0.9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_copy_gamma_and_lambda_equal_one_call_per_copy(dtype):
    """The sweep trainers give each copy its run's gamma and lambda: column j of one call with
    arrays equals a call on column j alone with floats, bit for bit."""
    rng = np.random.default_rng(3)
    T, n = 15, 5
    r, v, nv = (rng.normal(size=(T, n)).astype(dtype) for _ in range(3))
    term, trunc = rng.random((T, n)) < 0.15, rng.random((T, n)) < 0.1
    gammas, lams = rng.uniform(0.8, 1.0, n), rng.uniform(0.0, 1.0, n)
    adv, ret = returns_module._gae(r, v, nv, term, trunc, gammas, lams)
    assert adv.dtype == dtype
    for j in range(n):
        cols = (x[:, j:j + 1] for x in (r, v, nv, term, trunc))
        a, g = returns_module._gae(*cols, float(gammas[j]), float(lams[j]))
        np.testing.assert_array_equal(adv[:, j:j + 1], a)
        np.testing.assert_array_equal(ret[:, j:j + 1], g)
