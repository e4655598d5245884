"""DPO on a tiny LM: preference pairs, a frozen reference, and the must-show result that DPO
ranks held-out pairs by the annotator's preference (implicit-reward accuracy >= 85%)."""

import numpy as np
import pytest

import rlcourse as rc


def _pipeline(seed=0):
    """The lesson 13 pipeline: an SFT reference, pairs sampled from it, labelled by the task."""
    task = rc.review_task()
    tok = task.tokenizer
    rng = np.random.default_rng(seed)
    prompts = [task.prompts[i] for i in rng.integers(len(task.prompts), size=400)]
    texts = [" ".join(rng.choice(task.words, size=3)) for _ in prompts]
    tokens, mask, _ = tok.encode_pairs(prompts, texts)
    ref, _ = rc.sft(rc.lm_init(tok.vocab_size, context=8, dim=16, seed=seed), tokens, mask,
                    steps=150, lr=3e-3, seed=seed)

    def sample_pairs(n):
        chosen_prompts = [task.prompts[i] for i in rng.integers(len(task.prompts), size=n)]
        ids = tok.encode_prompts(chosen_prompts)
        a, mask_a = rc.generate(ref, ids, 4, rng)
        b, mask_b = rc.generate(ref, ids, 4, rng)
        scores = [[task.score(p, c) for p, c in zip(chosen_prompts, tok.decode_completions(x, ids.shape[1]))]
                  for x in (a, b)]
        return rc.make_preference_pairs(a, mask_a, b, mask_b, *scores)

    return task, ref, sample_pairs(800), sample_pairs(400)


@pytest.fixture(scope="module")
def pipeline():
    return _pipeline()


def test_pairs_are_labelled_by_the_annotator(pipeline):
    task, _, train, _ = pipeline
    tok = task.tokenizer
    for i in range(20):
        prompt = tok.decode(train.chosen[i][:3])
        chosen = tok.decode(train.chosen[i][3:])
        rejected = tok.decode(train.rejected[i][3:])
        assert tok.decode(train.rejected[i][:3]) == prompt
        assert task.score(prompt, chosen) > task.score(prompt, rejected)


def test_dpo_reaches_85_percent_held_out_accuracy(pipeline):
    """Must-show (lesson 13's main run): after DPO the implicit reward beta*log(pi/ref) ranks
    at least 85% of held-out pairs (new samples, never trained on) the way the annotator does.
    Before training every pair is a tie (policy = reference), so the accuracy starts at 0."""
    _, ref, train, held_out = pipeline
    assert len(held_out) > 200
    assert rc.evaluate_pairs(ref, ref, held_out).accuracy == 0.0
    result = rc.train_on_preferences(ref, train, beta=0.5, steps=150, lr=1e-3, seed=0)
    after = rc.evaluate_pairs(result.params, ref, held_out, beta=0.5)
    assert after.accuracy >= 0.85
    assert float(after.loss) < np.log(2.0)


def test_training_leaves_the_reference_untouched(pipeline):
    _, ref, train, _ = pipeline
    before = rc.tree_map(np.copy, ref)
    rc.train_on_preferences(ref, train.take(slice(0, 64)), steps=3, lr=1e-2)
    for a, b in zip(rc.tree_leaves(before), rc.tree_leaves(ref)):
        np.testing.assert_array_equal(a, b)


def test_pair_log_probs_score_each_side_alone(pipeline):
    _, ref, train, _ = pipeline
    pairs = train.take(slice(0, 5))
    chosen, rejected = rc.pair_log_probs(ref, pairs)
    np.testing.assert_allclose(chosen, rc.completion_log_prob(ref, pairs.chosen, pairs.chosen_mask),
                               rtol=1e-5)
    np.testing.assert_allclose(rejected, rc.completion_log_prob(ref, pairs.rejected, pairs.rejected_mask),
                               rtol=1e-5)


def test_make_preference_pairs_orders_and_drops_ties():
    a = np.array([[1, 3, 4, 2], [1, 3, 5, 2], [1, 3, 6, 2]])
    b = np.array([[1, 3, 7, 2], [1, 3, 8, 2], [1, 3, 9, 2]])
    mask = np.array([[0, 0, 1, 1]] * 3, dtype=bool)
    pairs = rc.make_preference_pairs(a, mask, b, mask, [2.0, 0.0, 1.0], [1.0, 0.0, 3.0])
    assert len(pairs) == 2  # the tie (row 1) says nothing and is dropped
    assert pairs.chosen[:, 2].tolist() == [4, 9]
    assert pairs.rejected[:, 2].tolist() == [7, 6]
    with pytest.raises(ValueError, match="score_b: expected shape"):
        rc.make_preference_pairs(a, mask, b, mask, [1.0, 2.0, 3.0], [1.0])
    with pytest.raises(ValueError, match="mask_b: expected shape"):
        rc.make_preference_pairs(a, mask, b, mask[:2], [1.0] * 3, [2.0] * 3)


def test_ipo_training_holds_its_margin_near_the_target(pipeline):
    """IPO regresses the length-averaged margin onto 1/(2 tau); DPO's keeps growing past it."""
    _, ref, train, _ = pipeline
    tau = beta = 0.5
    ipo = rc.train_on_preferences(ref, train, loss="ipo", tau=tau, steps=120, lr=3e-3)
    dpo = rc.train_on_preferences(ref, train, loss="dpo", beta=beta, steps=120, lr=3e-3)
    target = 1 / (2 * tau)
    assert abs(ipo.margins[-20:].mean() - target) < 0.25 * target
    lengths = np.concatenate([train.chosen_mask[:, 1:].sum(1), train.rejected_mask[:, 1:].sum(1)])
    # DPO's margin is in summed log-probs; divided by the longest length it still beats the target
    assert dpo.margins[-20:].mean() / lengths.max() > 1.5 * target


def test_train_on_preferences_rejects_bad_arguments(pipeline):
    _, ref, train, _ = pipeline
    with pytest.raises(ValueError, match="loss: expected 'dpo' or 'ipo'"):
        rc.train_on_preferences(ref, train, loss="kto")
    with pytest.raises(ValueError, match="steps"):
        rc.train_on_preferences(ref, train, steps=0)
    with pytest.raises(ValueError, match="beta"):
        rc.train_on_preferences(ref, train, beta=-1.0, steps=1)
