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
    # len() counts pairs, yet _replace (NamedTuple's _make) still sees the four arrays
    replaced = pairs._replace(chosen=pairs.rejected)
    assert isinstance(replaced, rc.PreferencePairs) and len(replaced) == 2
    assert replaced.chosen is pairs.rejected and replaced.rejected is pairs.rejected


def test_empty_pairs_ipo_smoothing_and_a_bad_kl_mask_are_refused_in_plain_words():
    """Three mistakes a student makes, each refused with a message that names its cause: no
    pairs left after make_preference_pairs dropped every tie, label smoothing asked of IPO
    (which has none), and an exact_kl mask of the logits' shape (it needs one more position)."""
    params = rc.lm_init(12, context=8, dim=8, seed=0)
    a = np.array([[1, 3, 4, 2], [1, 3, 5, 2]])
    mask = np.array([[0, 0, 1, 1]] * 2, dtype=bool)
    no_pairs = rc.make_preference_pairs(a, mask, a, mask, [1.0, 0.0], [1.0, 0.0])  # all ties
    assert len(no_pairs) == 0
    for call in (lambda: rc.train_on_preferences(params, no_pairs, steps=1),
                 lambda: rc.evaluate_pairs(params, params, no_pairs)):
        with pytest.raises(ValueError, match=r"pairs: expected at least one preference pair, got "
                                             r"none \(make_preference_pairs drops ties"):
            call()
    pairs = rc.make_preference_pairs(a, mask, a[::-1], mask, [1.0, 0.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="label_smoothing: label smoothing is DPO's.*loss='ipo'"):
        rc.train_on_preferences(params, pairs, loss="ipo", label_smoothing=0.2, steps=1)
    with pytest.raises(ValueError, match="label_smoothing: label smoothing is DPO's"):
        rc.evaluate_pairs(params, params, pairs, loss="ipo", label_smoothing=0.1)
    rc.evaluate_pairs(params, params, pairs, loss="ipo", label_smoothing=0.0)  # 0 is no smoothing
    rc.evaluate_pairs(params, params, pairs, loss="dpo", label_smoothing=0.2)
    logits = np.zeros((2, 3, 5))
    with pytest.raises(ValueError, match=r"mask: expected shape \(2, 4\) \(the shape of "
                                         r"policy_logits' \[B, L-1\], plus one\), got \(2, 3\)"):
        rc.exact_kl(logits, logits, np.ones((2, 3), bool))
    assert rc.exact_kl(logits, logits, np.ones((2, 4), bool)).tolist() == [0.0, 0.0]


def test_ipo_training_holds_its_margin_near_the_target(pipeline):
    """IPO regresses the length-averaged margin onto 1/(2 tau): it climbs towards the target and
    does not overshoot it; DPO's margin has no target and ends well past it."""
    _, ref, train, _ = pipeline
    tau = beta = 0.5
    ipo = rc.train_on_preferences(ref, train, loss="ipo", tau=tau, steps=120, lr=3e-3)
    dpo = rc.train_on_preferences(ref, train, loss="dpo", beta=beta, steps=120, lr=3e-3)
    target = 1 / (2 * tau)
    assert 0.5 * target < ipo.margins[-20:].mean() < 1.1 * target
    lengths = np.concatenate([train.chosen_mask[:, 1:].sum(1), train.rejected_mask[:, 1:].sum(1)])
    # DPO's margin is in summed log-probs; divided by the longest length it is still past the
    # target, and well past IPO's margin
    assert dpo.margins[-20:].mean() / lengths.max() > max(target, 1.5 * ipo.margins[-20:].mean())


def test_train_on_preferences_rejects_bad_arguments(pipeline):
    _, ref, train, _ = pipeline
    with pytest.raises(ValueError, match="loss: expected 'dpo' or 'ipo'"):
        rc.train_on_preferences(ref, train, loss="kto")
    with pytest.raises(ValueError, match="steps"):
        rc.train_on_preferences(ref, train, steps=0)
    with pytest.raises(ValueError, match="beta"):
        rc.train_on_preferences(ref, train, beta=-1.0, steps=1)


def test_step_zero_sees_policy_equal_to_reference_exactly(pipeline):
    """At the first update the policy is the reference: every margin is exactly 0, so the
    accuracy is exactly 0 (a tie is not a win) and the loss is log 2. Reference log-probs taken
    in another batch or code path would break ties by float32 rounding (issue 16)."""
    _, ref, train, _ = pipeline
    for seed in (0, 1, 2):
        run = rc.train_on_preferences(ref, train, beta=0.5, steps=1, batch=32, seed=seed)
        assert run.accuracies[0] == 0.0 and run.margins[0] == 0.0
        assert abs(run.losses[0] - np.log(2.0)) < 1e-6
    ipo = rc.train_on_preferences(ref, train, loss="ipo", tau=0.5, steps=1, batch=32)
    assert ipo.accuracies[0] == 0.0 and ipo.margins[0] == 0.0


def test_callback_sees_every_update_and_can_stop(pipeline):
    _, ref, train, _ = pipeline
    seen = []

    def callback(info):
        seen.append((info["update"], info["steps"], info["last"]))
        assert set(info) == {"update", "steps", "params", "loss", "accuracy", "margin", "last"}
        return info["steps"] < 3

    run = rc.train_on_preferences(ref, train, steps=10, batch=16, callback=callback)
    assert seen == [(0, 1, False), (1, 2, False), (2, 3, False)]
    assert len(run.losses) == len(run.accuracies) == len(run.margins) == 3
    with pytest.raises(TypeError, match="callback"):
        rc.train_on_preferences(ref, train, steps=1, callback=3)


def test_review_rate_marks_malformed_answers():
    task = rc.review_task()
    tok = task.tokenizer
    good = tok.encode_pairs(["praise film", "roast plot"], ["great fun and", "dull and awful"])[0]
    scores, formed = task.rate(good, 3)
    assert formed.tolist() == [True, True] and scores.tolist() == [2.0, 2.0]
    assert scores.tolist() == [task.score("praise film", "great fun and"),
                               task.score("roast plot", "dull and awful")]
    bad_texts = ["", "great", "great fun and good", "plot plot plot", "great fun praise"]
    bad = tok.encode_pairs(["praise film"] * len(bad_texts), bad_texts)[0]
    width = 3 + 5
    bad = np.pad(bad, ((0, 0), (0, max(0, width - bad.shape[1]))))[:, :max(width, bad.shape[1])]
    scores, formed = task.rate(bad, 3)
    assert not formed.any() and (scores == rc.REVIEW_MALFORMED).all()
    assert all(task.score("praise film", t) == rc.REVIEW_MALFORMED for t in bad_texts)
    no_eos = good.copy()
    no_eos[:, -1] = tok.ids["good"]  # three words and a fourth instead of EOS
    assert not task.rate(no_eos, 3)[1].any()
    for bad_len in (good.shape[1], 0, 2.5, "3"):
        with pytest.raises(ValueError, match="prompt_len"):
            task.rate(good, bad_len)


def test_rate_samples_kl_is_exact_zero_for_the_reference_and_unbiased(pipeline):
    """The exact per-answer KL: 0 for the reference itself, never negative, and its mean agrees
    with the mean sampled log-ratio (k1) of the same answers within sampling error."""
    task, ref, train, _ = pipeline
    ids = task.tokenizer.encode_prompts([p for p in task.prompts for _ in range(64)])
    same = rc.rate_samples(ref, ref, ids, task.rate, np.random.default_rng(0))
    assert (same.kl == 0.0).all()
    policy = rc.train_on_preferences(ref, train, beta=0.5, steps=40, batch=32).params
    report = rc.rate_samples(policy, ref, ids, task.rate, np.random.default_rng(1))
    assert (report.kl >= -1e-6).all() and report.kl.mean() > 0.1
    k1 = (rc.completion_log_prob(policy, report.tokens, report.mask)
          - rc.completion_log_prob(ref, report.tokens, report.mask))
    assert abs(k1.mean() - report.kl.mean()) < 4 * k1.std() / np.sqrt(len(k1))
    assert report.kl.std() < k1.std()  # the exact sum over the vocabulary has less variance


def test_dpo_raises_the_true_score_of_samples_on_three_seeds(pipeline):
    """Must-show (lesson 13): judged by its samples and a scorer it never saw, DPO (beta=0.5,
    100 steps of 32 pairs) writes better answers than the reference on every seed."""
    task, ref, train, _ = pipeline
    ids = task.tokenizer.encode_prompts([p for p in task.prompts for _ in range(64)])
    base = rc.rate_samples(ref, ref, ids, task.rate, np.random.default_rng(0)).scores.mean()
    for seed in (0, 1, 2):
        run = rc.train_on_preferences(ref, train, beta=0.5, steps=100, batch=32, seed=seed)
        after = rc.rate_samples(run.params, ref, ids, task.rate, np.random.default_rng(seed))
        assert after.scores.mean() > base + 0.5, seed
