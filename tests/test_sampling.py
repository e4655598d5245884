"""Temperature, top-k, top-p and token sampling (rlcourse.sampling)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlcourse as rc


def softmax(x):
    z = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def kept(filtered):
    return np.flatnonzero(np.isfinite(filtered)).tolist()


# ----------------------------------------------------------------------------- top-k


def test_top_k_keeps_exactly_the_k_largest():
    logits = np.array([0.1, 2.0, -1.0, 1.5, 0.3])
    out = rc.top_k_filter(logits, 2)
    assert kept(out) == [1, 3]
    np.testing.assert_array_equal(out[[1, 3]], logits[[1, 3]])  # kept logits are untouched
    assert kept(rc.top_k_filter(logits, 1)) == [1]
    assert kept(rc.top_k_filter(logits, 5)) == kept(rc.top_k_filter(logits, 50)) == [0, 1, 2, 3, 4]


def test_top_k_keeps_every_token_tied_at_the_threshold():
    logits = np.array([1.0, 3.0, 1.0, 2.0, 1.0])
    assert kept(rc.top_k_filter(logits, 3)) == [0, 1, 2, 3, 4]  # three tokens tie for 3rd
    assert kept(rc.top_k_filter(logits, 2)) == [1, 3]


def test_top_k_works_row_by_row():
    logits = np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
    out = rc.top_k_filter(logits, 1)
    assert out.shape == (2, 3)
    assert kept(out[0]) == [2] and kept(out[1]) == [0]


# ----------------------------------------------------------------------------- top-p


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    logits = np.log([0.05, 0.5, 0.15, 0.3])  # ranked: 1 (0.5), 3 (0.3), 2 (0.15), 0 (0.05)
    assert kept(rc.top_p_filter(logits, 0.1)) == [1]  # the top token always stays
    assert kept(rc.top_p_filter(logits, 0.5)) == [1]  # 0.5 alone reaches 0.5
    assert kept(rc.top_p_filter(logits, 0.51)) == [1, 3]
    assert kept(rc.top_p_filter(logits, 0.8)) == [1, 3]  # mass exactly p counts as reaching it
    assert kept(rc.top_p_filter(logits, 0.81)) == [1, 2, 3]
    assert kept(rc.top_p_filter(logits, 1.0)) == [0, 1, 2, 3]


def test_top_p_kept_mass_is_minimal_on_random_rows():
    rng = np.random.default_rng(0)
    for _ in range(200):
        logits = rng.normal(size=(3, 7)) * 2
        p = float(rng.uniform(0.05, 0.99))
        probs = softmax(logits)
        keep = np.isfinite(rc.top_p_filter(logits, p))
        for row, mask in zip(probs, keep):
            assert row[mask].sum() >= p - 1e-9  # reaches p ...
            assert row[mask].sum() - row[mask].min() < p  # ... and no token could be dropped
            assert row[mask].min() >= row[~mask].max(initial=0.0)  # the most likely ones


def hugging_face_top_p(logits, top_p):
    """transformers' TopPLogitsWarper (src/transformers/generation/logits_process.py) in numpy:
    sort ascending, softmax, cumulative sum, remove the tokens with cumulative probability
    <= 1 - top_p, keep at least the last (most likely) one."""
    x = np.atleast_2d(np.asarray(logits, dtype=float))
    out = x.copy()
    for row, dest in zip(x, out):
        order = np.argsort(row, kind="stable")
        probs = softmax(row[order])
        remove = np.cumsum(probs) <= (1 - top_p)
        remove[-1:] = False
        dest[order[remove]] = -np.inf
    return out.reshape(np.shape(logits))


def test_top_p_is_hugging_faces_rule_away_from_exact_ties():
    rng = np.random.default_rng(1)
    for _ in range(300):
        logits = rng.normal(size=9) * float(rng.uniform(0.3, 3))
        p = float(rng.uniform(0.05, 0.99))
        mass_before = np.sort(softmax(logits))[::-1].cumsum() - np.sort(softmax(logits))[::-1]
        if np.min(np.abs(mass_before - p)) < 1e-6:
            continue  # an exact tie: the rules may differ in the last bit (next test)
        assert kept(rc.top_p_filter(logits, p)) == kept(hugging_face_top_p(logits, p))


def test_at_an_exact_tie_the_set_that_reaches_p_is_enough():
    """0.5 + 0.3 = 0.8 = p. Both rules say "keep a token while the mass before it is below p",
    so two tokens; Hugging Face's float sum 0.05 + 0.15 = 0.2 > 1 - 0.8 = 0.19999999999999996
    keeps a third. rc.top_p_filter counts a mass within 1e-9 of p as reaching it."""
    logits = np.log([0.05, 0.5, 0.15, 0.3])
    assert kept(rc.top_p_filter(logits, 0.8)) == [1, 3]
    assert kept(hugging_face_top_p(logits, 0.8)) == [1, 2, 3]


@pytest.mark.parametrize("p", [1e-10, 1e-12, 5e-324])
def test_a_tiny_p_keeps_exactly_the_most_likely_token(p):
    """Below the 1e-9 tie slack no mass counts as "below p"; the top token must survive anyway
    (issue 12: p = 1e-10 kept no token and sampling silently returned token 0)."""
    logits = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 0.0]])
    assert kept(rc.top_p_filter(logits[0], p)) == [1]
    assert [kept(row) for row in rc.top_p_filter(logits, p)] == [[1], [0]]
    draws = rc.sample_token(np.tile(logits[0], (50, 1)), np.random.default_rng(0), top_p=p)
    assert (draws == 1).all()


def test_top_p_ignores_already_masked_tokens():
    logits = np.array([0.0, -np.inf, 0.0])
    assert kept(rc.top_p_filter(logits, 0.9)) == [0, 2]


# ----------------------------------------------------------------------------- temperature


def test_temperature_divides_logits_and_sharpens_below_one():
    logits = np.array([1.0, 2.0, 0.5])
    # the logits divided by T, up to a shift of each row (which changes no probability)
    out = rc.filter_logits(logits, temperature=0.5)
    np.testing.assert_allclose(out - out.max(), (logits - logits.max()) / 0.5)
    np.testing.assert_allclose(softmax(out), softmax(logits / 0.5))

    def entropy(t):
        p = softmax(rc.filter_logits(logits, temperature=t))
        return -(p * np.log(p)).sum()

    entropies = [entropy(t) for t in (0.25, 0.5, 1.0, 2.0, 4.0)]
    assert np.all(np.diff(entropies) > 0)


@pytest.mark.parametrize("t", [1e-300, 1e-310, 5e-324])
def test_a_tiny_temperature_is_the_greedy_limit_not_nan(t):
    """logits / 1e-310 overflows to +inf; the filter must give the T -> 0 limit: the most
    likely tokens (ties kept), never NaN or a rejected +inf."""
    logits = np.array([[1.0, 2.0, 0.5, 2.0], [-3.0, 0.0, 5.0, 4.0]])
    out = rc.filter_logits(logits, temperature=t)
    assert not np.isnan(out).any() and not np.isposinf(out).any()
    probs = softmax(out)
    np.testing.assert_allclose(probs, [[0, 0.5, 0, 0.5], [0, 0, 1, 0]], atol=1e-12)
    draws = rc.sample_token(np.tile(logits[1], (50, 1)), np.random.default_rng(0), temperature=t)
    assert (draws == 2).all()


@pytest.mark.parametrize("t", [1e-300, 1e-310, 5e-324])
def test_a_tiny_temperature_on_all_negative_logits_is_still_the_greedy_limit(t):
    """[-2, -1] / 1e-310 overflows to [-inf, -inf], a row with no distribution: sampling then
    hit NaN and returned token 0, not the argmax 1 (re-review F8). The row's maximum is shifted
    to 0 before dividing, so the argmax keeps all the mass."""
    out = rc.filter_logits([-2.0, -1.0], temperature=t)
    assert out[1] == 0.0 and out[0] < -1e299  # -inf, or -1e300 at T = 1e-300
    np.testing.assert_allclose(softmax(out), [0.0, 1.0])
    with np.errstate(invalid="raise", divide="raise"):  # no NaN on the way
        draws = [rc.sample_token([-2.0, -1.0], np.random.default_rng(s), temperature=t)
                 for s in range(20)]
    assert draws == [1] * 20
    batch = rc.sample_token([[-2.0, -1.0], [-5.0, -7.0]], np.random.default_rng(0), temperature=t)
    assert batch.tolist() == [1, 0]


def test_filters_compose_temperature_then_top_k_then_top_p():
    logits = np.log([0.4, 0.3, 0.2, 0.1])
    # at temperature 1, top-k 3 renormalises to 4/9, 3/9, 2/9: top-p 0.7 keeps the first two
    assert kept(rc.filter_logits(logits, top_k=3, top_p=0.7)) == [0, 1]
    # a hot temperature flattens the distribution, so top-p needs more tokens
    assert kept(rc.filter_logits(logits, temperature=10.0, top_k=3, top_p=0.7)) == [0, 1, 2]


# ----------------------------------------------------------------------------- sampling


def test_sample_frequencies_match_the_filtered_distribution():
    logits = np.array([0.0, 1.0, 2.0, -1.0, 0.5])
    rng = np.random.default_rng(0)
    for kwargs in ({}, {"temperature": 0.5}, {"top_k": 3}, {"top_p": 0.8}):
        target = softmax(rc.filter_logits(logits, **kwargs))
        draws = rc.sample_token(np.tile(logits, (20_000, 1)), rng, **kwargs)
        freq = np.bincount(draws, minlength=5) / draws.size
        np.testing.assert_allclose(freq, target, atol=0.015)
        assert np.all(freq[target == 0] == 0)  # a filtered token is never drawn


def test_sample_token_shapes_and_determinism():
    logits = np.array([0.2, 0.1, -0.3])
    token = rc.sample_token(logits, np.random.default_rng(1))
    assert isinstance(token, int) and 0 <= token < 3
    batch = rc.sample_token(np.zeros((4, 3)), np.random.default_rng(1))
    assert batch.shape == (4,) and batch.dtype.kind == "i"
    again = rc.sample_token(np.zeros((4, 3)), np.random.default_rng(1))
    np.testing.assert_array_equal(batch, again)


def test_masked_tokens_are_never_sampled():
    logits = np.array([-np.inf, 0.0, -np.inf, 0.0])
    draws = rc.sample_token(np.tile(logits, (2000, 1)), np.random.default_rng(0))
    assert set(draws.tolist()) == {1, 3}


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "logits, kwargs, name",
    [
        ([0.0, np.nan], {}, "logits"),
        ([0.0, np.inf], {}, "logits"),
        ([-np.inf, -np.inf], {}, "logits"),
        (np.zeros((2, 2, 2)), {}, "logits"),
        ([0.0, 1.0], {"temperature": 0.0}, "temperature"),
        ([0.0, 1.0], {"temperature": -1.0}, "temperature"),
        ([0.0, 1.0], {"top_k": 0}, "top_k"),
        ([0.0, 1.0], {"top_p": 0.0}, "top_p"),
        ([0.0, 1.0], {"top_p": 1.5}, "top_p"),
    ],
)
def test_bad_input_raises_naming_the_argument(logits, kwargs, name):
    with pytest.raises(ValueError, match=name):
        rc.sample_token(np.asarray(logits), np.random.default_rng(0), **kwargs)


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="rng"):
        rc.sample_token(np.zeros(3), 0)


# ----------------------------------------------------------------------------- properties
# Any logits (issue 12): finite floats up to the largest double, with -inf (a masked token)
# anywhere but a whole row. The most likely token always survives filtering, nothing overflows
# into NaN or +inf, and a tiny temperature samples the argmax.

_BIG = np.finfo(np.float64).max
_LOGIT = st.one_of(st.floats(-_BIG, _BIG), st.floats(-30.0, 30.0), st.just(-np.inf),
                   st.sampled_from([_BIG, -_BIG, 1e300, -1e300, 0.0, 5e-324]))
_TINY_P = st.one_of(st.floats(5e-324, 1e-9), st.sampled_from([5e-324, 1e-300, 1e-10]))
_P = st.one_of(_TINY_P, st.floats(1e-9, 1.0))
_TEMPERATURE = st.one_of(st.floats(5e-324, 1e-300), st.floats(1e-3, 1e3),
                         st.sampled_from([5e-324, 1e-310, 1e300, _BIG]))


@st.composite
def _logits(draw):
    rows, vocab = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    x = np.array(draw(st.lists(_LOGIT, min_size=rows * vocab, max_size=rows * vocab)))
    x = x.reshape(rows, vocab)
    x[np.isneginf(x).all(axis=-1), -1] = 0.0  # a row with no possible token is an error
    return x[0] if draw(st.booleans()) else x


def _top(logits):
    """Each row's most likely token (the first of equal ones), as an index array."""
    return np.argmax(np.atleast_2d(logits), axis=-1)


def _kept_top(logits, out):
    rows, out = np.atleast_2d(logits), np.atleast_2d(out)
    assert out.shape == rows.shape and not np.isnan(out).any() and not np.isposinf(out).any()
    return np.isfinite(out[np.arange(len(rows)), _top(logits)]).all()


@settings(max_examples=60)
@given(_logits(), st.integers(1, 8), _P)
def test_filtering_always_keeps_the_most_likely_token(logits, k, p):
    assert _kept_top(logits, rc.top_k_filter(logits, k))
    assert _kept_top(logits, rc.top_p_filter(logits, p))


@settings(max_examples=60)
@given(_logits(), _TEMPERATURE, st.none() | st.integers(1, 8), st.none() | _P)
def test_filter_logits_keeps_the_most_likely_token_at_any_temperature(logits, t, k, p):
    out = rc.filter_logits(logits, temperature=t, top_k=k, top_p=p)
    assert _kept_top(logits, out)
    rows = np.atleast_2d(out)
    assert (rows[np.arange(len(rows)), _top(logits)] == 0).all()  # each row's maximum is 0


@settings(max_examples=60)
@given(_logits(), st.one_of(_TEMPERATURE, st.floats(5e-324, 1e-300)), st.none() | _TINY_P)
def test_sampling_draws_only_tokens_within_reach_of_the_top_and_the_argmax_at_tiny_temperature(
        logits, t, p):
    token = np.atleast_1d(rc.sample_token(logits, np.random.default_rng(0), temperature=t, top_p=p))
    rows = np.atleast_2d(logits)
    chosen = rows[np.arange(len(rows)), token]
    top = rows.max(axis=-1)
    assert np.isfinite(chosen).all()
    if p is not None:  # a tiny top_p keeps only the most likely token
        assert (token == _top(logits)).all()
    # a token whose tempered logit is below the top's by more than 746 has probability 0
    with np.errstate(over="ignore"):
        assert ((top - chosen) / t <= 746).all()


def test_top_p_after_a_huge_temperature_keeps_the_token_with_the_larger_logit():
    """At temperature 1e300 the logits -7e-28 and 0 both round to 0 and tie; top-p ranks by the
    logits before the temperature, so the token with logit 0 (the most likely) is the one kept.
    (Found by the property above; ranking by the tempered logits kept the lower id.)"""
    logits = np.array([-7.08853862e-28, -np.inf, -np.inf, 0.0, -np.inf, -np.inf])
    out = rc.filter_logits(logits, temperature=1e300, top_p=7.2e-10)
    assert np.isfinite(out[3]) and np.isneginf(out[0])
