"""Token log-probs, masks, KL and the PPO-clip loss on sequences, checked against hand formulas."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse import llm


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
    np.testing.assert_allclose(llm.sequence_log_prob(logits, tokens, mask), [expected])
    lp = llm.token_log_probs(logits, tokens)
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
    _check_alignment(llm.sequence_log_prob)
    with pytest.raises(AssertionError):
        _check_alignment(_sequence_log_prob_off_by_one)


def test_masked_positions_change_nothing_and_get_zero_gradient():
    logits, tokens, mask = _example(1)
    loss_fn = lambda lg: -rc.sum(llm.sequence_log_prob(lg, tokens, mask))
    loss, grad = rc.value_and_grad(loss_fn)(logits)
    counted = mask[:, 1:]
    perturbed = logits.copy()
    perturbed[~counted] += 100 * np.random.default_rng(2).normal(size=perturbed[~counted].shape)
    perturbed[0, 0, 1] = -np.inf  # a ruled-out token at a prompt position is fine too
    loss2, grad2 = rc.value_and_grad(loss_fn)(np.where(np.isinf(perturbed), -1e30, perturbed))
    assert loss == pytest.approx(loss2, abs=1e-12)
    assert (grad[~counted] == 0).all() and (grad2[~counted] == 0).all()
    assert (np.abs(grad[counted]).sum(-1) > 0).all()
    np.testing.assert_array_equal(llm.sequence_log_prob(perturbed, tokens, mask),
                                  llm.sequence_log_prob(logits, tokens, mask))


def test_completion_mask():
    tokens = np.array([[1, 5, 6, 7, 2, 0, 0], [1, 5, 6, 2, 9, 2, 0], [0, 1, 5, 8, 8, 8, 8]])
    mask = llm.completion_mask(tokens, 2, eos=2)
    assert mask.astype(int).tolist() == [
        [0, 0, 1, 1, 1, 0, 0],
        [0, 0, 1, 1, 0, 0, 0],
        [0, 0, 1, 1, 1, 1, 1],  # no EOS: cut at the length limit
    ]
    per_row = llm.completion_mask(tokens, np.array([1, 4, 6]), eos=2)
    assert per_row.astype(int).tolist()[1] == [0, 0, 0, 0, 1, 1, 0]


def test_log_prob_validation():
    logits, tokens, mask = _example()
    with pytest.raises(ValueError, match="NaN"):
        bad = logits.copy()
        bad[0, 1, 2] = np.nan
        llm.sequence_log_prob(bad, tokens, mask)
    with pytest.raises(ValueError, match=r"\+inf|inf"):
        bad = logits.copy()
        bad[1, 0, 0] = np.inf
        llm.token_log_probs(bad, tokens)
    with pytest.raises(ValueError, match="one more position"):
        llm.sequence_log_prob(np.concatenate([logits, logits[:, :1]], 1), tokens, mask)
    with pytest.raises(ValueError, match="tokens: values must be < 5"):
        llm.sequence_log_prob(logits, np.where(mask, 5, tokens), mask)
    with pytest.raises(ValueError, match="mask: expected shape"):
        llm.sequence_log_prob(logits, tokens, mask[:, 1:])
    with pytest.raises(ValueError, match="no position is True"):
        llm.sequence_log_prob(logits, tokens, np.zeros_like(mask))
    with pytest.raises(ValueError, match="sequence 1 has no action token"):
        empty_row = mask.copy()
        empty_row[1] = False
        llm.sequence_log_prob(logits, tokens, empty_row)
