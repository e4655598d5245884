"""Lesson 12's exercises (Build-it steps and exercises): each typical wrong answer is rejected by
its checker with the diagnosis that names the mistake, every explain branch is reached, and
right answers written another way pass. The registry's own sanity (reference passes, a shifted
answer fails) is in tests/test_exercises.py."""

import numpy as np
import pytest
from exercise_checks import accepted, rejected

PAD, BOS, EOS = 0, 1, 2


# ================================================================ step 1: preference_loss


def bt_right(rc_, rr):
    return np.mean(np.logaddexp(0.0, rr - rc_))


PREFERENCE_WRONG = {
    "naive log of sigmoid": (lambda c, r: -np.mean(np.log(1 / (1 + np.exp(-(c - r))))), "overflowed"),
    "log1p(exp) overflows": (lambda c, r: np.mean(np.log1p(np.exp(-(c - r)))), "overflowed"),
    "sign flipped": (lambda c, r: np.mean(np.logaddexp(0.0, c - r)), "sign flipped"),
    "sum over pairs": (lambda c, r: np.sum(np.logaddexp(0.0, r - c)), "mean over pairs"),
    "minus sign missing": (lambda c, r: -np.mean(np.logaddexp(0.0, r - c)), "never negative"),
    "pointwise cross-entropy": (
        lambda c, r: np.mean(np.logaddexp(0.0, -c) + np.logaddexp(0.0, r)), "only the difference"),
    "per-pair losses": (lambda c, r: np.logaddexp(0.0, r - c), "return one number"),
}


@pytest.mark.parametrize("wrong", PREFERENCE_WRONG, ids=list(PREFERENCE_WRONG))
def test_preference_loss_rejects(wrong, capsys):
    fn, diagnosis = PREFERENCE_WRONG[wrong]
    assert diagnosis in rejected("preference_loss", fn, capsys)


def test_preference_loss_accepts_a_stable_softplus(capsys):
    def softplus_form(c, r):
        x = r - c
        return float(np.mean(np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))))

    accepted("preference_loss", bt_right, capsys)
    accepted("preference_loss", softplus_form, capsys)


# ================================================================ step 2: sequence_log_prob


def _lsm(z, axis=-1):
    top = z.max(axis=axis, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=axis, keepdims=True))


def _pick(lp, tokens):
    return np.take_along_axis(lp, tokens[:, 1:, None], axis=-1)[..., 0]


SLP_WRONG = {
    "scores the prompt": (lambda lg, t, m: _pick(_lsm(lg), t).sum(1), "scored the prompt"),
    "mask not shifted": (lambda lg, t, m: np.where(m[:, :-1], _pick(_lsm(lg), t), 0).sum(1),
                         "mask shifted the wrong way"),
    "off by one": (lambda lg, t, m: np.where(
        m[:, 1:], np.take_along_axis(_lsm(lg), t[:, :-1, None], -1)[..., 0], 0).sum(1), "off by one"),
    "unstable log-softmax": (lambda lg, t, m: np.where(
        m[:, 1:], _pick(lg - np.log(np.exp(lg).sum(-1, keepdims=True)), t), 0).sum(1), "overflow"),
    "wrong axis": (lambda lg, t, m: np.where(m[:, 1:], _pick(_lsm(lg, axis=1), t), 0).sum(1),
                   "wrong axis"),
    "mean per token": (lambda lg, t, m: np.where(m[:, 1:], _pick(_lsm(lg), t), 0).sum(1)
                       / m[:, 1:].sum(1), "the sum over its tokens"),
    "one number for the batch": (lambda lg, t, m: np.where(m[:, 1:], _pick(_lsm(lg), t), 0).sum(),
                                 "one number per sequence"),
}


@pytest.mark.parametrize("wrong", SLP_WRONG, ids=list(SLP_WRONG))
def test_sequence_log_prob_rejects(wrong, capsys):
    fn, diagnosis = SLP_WRONG[wrong]
    assert diagnosis in rejected("sequence_log_prob", fn, capsys)


def test_sequence_log_prob_accepts_a_multiplied_mask(capsys):
    accepted("sequence_log_prob", lambda lg, t, m: (_pick(_lsm(lg), t) * m[:, 1:]).sum(1), capsys)


# ================================================================ step 3: penalize_missing_eos


def _eos_pen(cut_rule):
    def fn(scores, tokens, mask, penalty):
        return np.where(cut_rule(tokens, mask), scores - penalty, scores)
    return fn


def _finished(tokens, mask):
    return ((tokens == EOS) & mask).any(1)


EOS_WRONG = {
    "looks at the last column": (_eos_pen(lambda t, m: t[:, -1] != EOS), "not in the last column"),
    "ignores the mask": (_eos_pen(lambda t, m: ~(t == EOS).any(1)), "EOS in the prompt"),
    "shifts the mask": (_eos_pen(lambda t, m: ~((t[:, 1:] == EOS) & m[:, :-1]).any(1)),
                        "no shift here"),
    "adds the penalty": (lambda s, t, m, p: np.where(_finished(t, m), s, s + p), "sign"),
    "penalises the finished": (_eos_pen(_finished), "inverted"),
    "penalises everything": (lambda s, t, m, p: s - p, "only completions without EOS"),
    "returns the flags": (lambda s, t, m, p: _finished(t, m), "not the finished/cut flags"),
}


@pytest.mark.parametrize("wrong", EOS_WRONG, ids=list(EOS_WRONG))
def test_penalize_missing_eos_rejects(wrong, capsys):
    fn, diagnosis = EOS_WRONG[wrong]
    assert diagnosis in rejected("penalize_missing_eos", fn, capsys)


def test_penalize_missing_eos_accepts_a_loop(capsys):
    def loop(scores, tokens, mask, penalty):
        out = np.array(scores, dtype=float)
        for b in range(len(out)):
            if EOS not in tokens[b][mask[b]]:
                out[b] -= penalty
        return out

    accepted("penalize_missing_eos", loop, capsys)


# ================================================================ step 4: kl_penalized_rewards


def _last(mask):
    return mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)


def _rewards(per_token, where=_last, every=False):
    def fn(scores, logp, ref_logp, mask, beta):
        out = np.where(mask, per_token(logp, ref_logp, beta), 0.0)
        if every:
            return np.where(mask, out + scores[:, None], 0.0)
        out[np.arange(len(scores)), where(mask)] += scores
        return out
    return fn


def _k1(lp, rp, beta):
    return -beta * (lp - rp)


def _k3(lp, rp, beta):
    d = rp - lp
    return -beta * (np.exp(d) - d - 1)


def _seq_level(scores, logp, ref_logp, mask, beta):
    out = np.zeros(mask.shape)
    out[np.arange(len(scores)), _last(mask)] = scores - beta * np.where(mask, logp - ref_logp, 0).sum(1)
    return out


REWARDS_WRONG = {
    "penalty sign": (_rewards(lambda lp, rp, b: b * (lp - rp)), "the penalty's sign"),
    "score on the first token": (_rewards(_k1, where=lambda m: np.argmax(m, axis=1)), "not its first"),
    "score on the last column": (_rewards(_k1, where=lambda m: np.full(len(m), m.shape[1] - 1)),
                                 "not the last column"),
    "score on every token": (_rewards(_k1, every=True), "not to every token"),
    "k3 in the reward": (_rewards(_k3), "that is k3"),
    "sequence-level penalty": (_seq_level, "sequence-level"),
    "beta forgotten": (_rewards(lambda lp, rp, b: -(lp - rp)), "beta is missing"),
    "padding rewarded": (lambda s, lp, rp, m, beta: _rewards(_k1)(s, lp, rp, m, beta) - beta * (~m) * lp,
                         "padding tokens got a reward"),
}


@pytest.mark.parametrize("wrong", REWARDS_WRONG, ids=list(REWARDS_WRONG))
def test_kl_penalized_rewards_rejects(wrong, capsys):
    fn, diagnosis = REWARDS_WRONG[wrong]
    assert diagnosis in rejected("kl_penalized_rewards", fn, capsys)


def test_kl_penalized_rewards_accepts_the_right_answer(capsys):
    accepted("kl_penalized_rewards", _rewards(_k1), capsys)


# ================================================================ step 5: rlhf_advantages


def _adv(to_go="back", mask_rewards=True, baseline="column", std="mask", ddof=0):
    def fn(rewards, mask):
        r = np.where(mask, rewards, 0.0) if mask_rewards else rewards
        g = np.cumsum(r[:, ::-1], axis=1)[:, ::-1] if to_go == "back" else np.cumsum(r, axis=1)
        g = np.where(mask, g, 0.0)
        b = {"column": g.sum(0) / np.maximum(mask.sum(0), 1), "batch": g.mean(0),
             "global": g[mask].mean(), "none": 0.0}[baseline]
        a = np.where(mask, g - b, 0.0)
        if std == "mask":
            return a / a[mask].std(ddof=ddof)
        return a / a.std() if std == "all" else a
    return fn


ADV_WRONG = {
    "reward so far": (_adv(to_go="forward"), "rewards so far"),
    "padding rewards summed": (_adv(mask_rewards=False), "padding holds no reward"),
    "baseline over the batch": (_adv(baseline="batch"), "counts padding as zeros"),
    "one global baseline": (_adv(baseline="global"), "one baseline for all positions"),
    "no baseline": (_adv(baseline="none"), "no baseline"),
    "not normalised": (_adv(std="none"), "not normalised"),
    "std over all entries": (_adv(std="all"), "includes the padding zeros"),
    "std with ddof 1": (_adv(ddof=1), "ddof=1"),
    "padding gets an advantage": (lambda r, m: _adv()(r, m) + (~m) * 0.5, "padding positions"),
}


@pytest.mark.parametrize("wrong", ADV_WRONG, ids=list(ADV_WRONG))
def test_rlhf_advantages_rejects(wrong, capsys):
    fn, diagnosis = ADV_WRONG[wrong]
    assert diagnosis in rejected("rlhf_advantages", fn, capsys)


def test_rlhf_advantages_accepts_a_loop(capsys):
    def loop(rewards, mask):
        g = np.zeros(rewards.shape)
        for b in range(len(g)):
            total = 0.0
            for t in np.flatnonzero(mask[b])[::-1]:
                total += rewards[b, t]
                g[b, t] = total
        base = np.array([g[mask[:, t], t].mean() if mask[:, t].any() else 0.0
                         for t in range(g.shape[1])])
        a = np.where(mask, g - base, 0.0)
        return a / a[mask].std()

    accepted("rlhf_advantages", loop, capsys)


# ================================================================ exercise 1: length penalty

LENGTH_WRONG = {
    "counts every column": (lambda s, m, a: s - a * m.shape[1], "not every column"),
    "adds the penalty": (lambda s, m, a: s + a * m.sum(1), "sign"),
    "drops EOS from the length": (
        lambda s, m, a: s - a * (m.sum(1) - np.array([1, 0, 0, 1, 1])), "count it in the length"),
    "alpha forgotten": (lambda s, m, a: s - m.sum(1), "alpha is missing"),
}


@pytest.mark.parametrize("wrong", LENGTH_WRONG, ids=list(LENGTH_WRONG))
def test_length_penalized_scores_rejects(wrong, capsys):
    fn, diagnosis = LENGTH_WRONG[wrong]
    assert diagnosis in rejected("length_penalized_scores", fn, capsys)


@pytest.mark.parametrize("answer,diagnosis", [("a", "untouched"), ("c", "does not need length"),
                                              ("d", "equal length"), ("e", "one of the letters"),
                                              (None, "not answered yet")])
def test_length_penalty_question_rejects(answer, diagnosis, capsys):
    assert diagnosis in rejected("length_penalty_question", answer, capsys)


def test_length_penalty_question_accepts_b(capsys):
    accepted("length_penalty_question", "B ", capsys)


# ================================================================ exercise 2: ensembles

ENSEMBLE_WRONG = {
    "std instead of var": (lambda s, lam: s.mean(0) - lam * s.std(0), "VARIANCE"),
    "ddof 1": (lambda s, lam: s.mean(0) - lam * s.var(0, ddof=1), "ddof=1"),
    "plus": (lambda s, lam: s.mean(0) + lam * s.var(0), "sign"),
    "worst case": (lambda s, lam: s.min(0), "worst case"),
    "lam forgotten": (lambda s, lam: s.mean(0) - s.var(0), "lam is missing"),
    "wrong axis": (lambda s, lam: s.mean(1) - lam * s.var(1), "axis 0"),
}


@pytest.mark.parametrize("wrong", ENSEMBLE_WRONG, ids=list(ENSEMBLE_WRONG))
def test_ensemble_reward_rejects(wrong, capsys):
    fn, diagnosis = ENSEMBLE_WRONG[wrong]
    assert diagnosis in rejected("ensemble_reward", fn, capsys)


@pytest.mark.parametrize("answer,diagnosis", [("a", "in the tens"), ("c", "flips the order"),
                                              ("d", "verb is not required")])
def test_ensemble_question_rejects(answer, diagnosis, capsys):
    assert diagnosis in rejected("ensemble_question", answer, capsys)


# ================================================================ exercise 3: token_gae


def _gae(terminal_rule="eos", lam_override=None, next_from_row=False, across=False, returns=False):
    def fn(rewards, values, mask, finished, last_values, lam):
        lam_ = lam if lam_override is None else lam_override
        adv = np.zeros(rewards.shape)
        rows = [list(np.flatnonzero(mask[b])) for b in range(len(rewards))]
        if across:
            order = [(b, t) for b in range(len(rewards)) for t in rows[b]]
            running = following = 0.0
            for b, t in order[::-1]:
                running = rewards[b, t] + following - values[b, t] + lam_ * running
                adv[b, t], following = running, values[b, t]
            return adv
        for b, cols in enumerate(rows):
            end = {"eos": 0.0 if finished[b] else last_values[b], "always": last_values[b],
                   "never": 0.0}[terminal_rule]
            if next_from_row and cols[-1] + 1 < rewards.shape[1]:
                end = values[b, cols[-1] + 1]
            running, following = 0.0, end
            for t in cols[::-1]:
                running = rewards[b, t] + following - values[b, t] + lam_ * running
                adv[b, t], following = running, values[b, t]
        return np.where(mask, adv + values, 0.0) if returns else adv
    return fn


GAE_WRONG = {
    "bootstraps a finished completion": (_gae("always"), "is terminal"),
    "cut completions end at 0": (_gae("never"), "is a truncation"),
    "next value from the padding": (_gae(next_from_row=True), "not the next state's"),
    "TD(0)": (_gae(lam_override=0.0), "one-step TD error"),
    "Monte Carlo": (_gae(lam_override=1.0), "lam = 1"),
    "across completions": (_gae(across=True), "across completions"),
    "returns": (_gae(returns=True), "those are the returns"),
    "padding gets an advantage": (lambda *a: _gae()(*a) + 0.1 * ~a[2], "outside the mask"),
}


@pytest.mark.parametrize("wrong", GAE_WRONG, ids=list(GAE_WRONG))
def test_token_gae_rejects(wrong, capsys):
    fn, diagnosis = GAE_WRONG[wrong]
    assert diagnosis in rejected("token_gae", fn, capsys)


def test_token_gae_accepts_the_loop_and_a_vectorised_form(capsys):
    def vectorised(rewards, values, mask, finished, last_values, lam):
        nxt = np.zeros(rewards.shape)
        nxt[:, :-1] = np.where(mask[:, 1:], values[:, 1:], 0.0)
        last = mask & ~np.concatenate([mask[:, 1:], np.zeros((len(mask), 1), bool)], axis=1)
        nxt = np.where(last, np.where(finished, 0.0, last_values)[:, None], nxt)
        delta = np.where(mask, rewards + nxt - values, 0.0)
        adv = np.zeros(rewards.shape)
        running = np.zeros(len(rewards))
        for t in range(rewards.shape[1] - 1, -1, -1):
            running = np.where(mask[:, t], delta[:, t] + lam * running, 0.0)
            adv[:, t] = running
        return adv

    accepted("token_gae", _gae(), capsys)
    accepted("token_gae", vectorised, capsys)


# ================================================================ review 12 (F8, F9, F11): more wrong answers


def _overwrite(scores, logp, ref_logp, mask, beta):
    out = np.where(mask, -beta * (logp - ref_logp), 0.0)
    out[np.arange(len(scores)), _last(mask)] = scores  # = instead of +=
    return out


def _reshifted_rewards(scores, logp, ref_logp, mask, beta):
    mask = mask[:, 1:]  # the mask passed in is already shifted
    return _rewards(_k1)(scores, logp, ref_logp, mask, beta)


def _reshifted_adv(rewards, mask):
    return _adv()(rewards[:, 1:], mask[:, 1:])


def _whitened_gae(*args):
    a = _gae()(*args)
    m = args[2]
    return np.where(m, (a - a[m].mean()) / a[m].std(), 0.0)


def _gae_variant(gamma=1.0, lam_on_delta=False):
    def fn(rewards, values, mask, finished, last_values, lam):
        adv = np.zeros(rewards.shape)
        for b in range(len(rewards)):
            cols = np.flatnonzero(mask[b])
            following = 0.0 if finished[b] else last_values[b]
            running = 0.0
            for t in cols[::-1]:
                delta = rewards[b, t] + gamma * following - values[b, t]
                running = lam * delta + running if lam_on_delta else delta + gamma * lam * running
                adv[b, t], following = running, values[b, t]
        return adv
    return fn


def _adv_baseline(kind):
    def fn(rewards, mask):
        r = np.where(mask, rewards, 0.0)
        g = np.where(mask, np.cumsum(r[:, ::-1], axis=1)[:, ::-1], 0.0)
        if kind == "row":
            b = (g.sum(1) / mask.sum(1))[:, None]
        else:  # leave one out
            b = (g.sum(0) - g) / np.maximum(mask.sum(0) - 1, 1)
        a = np.where(mask, g - b, 0.0)
        return a / a[mask].std()
    return fn


def _adv_discounted(rewards, mask):
    r = np.where(mask, rewards, 0.0)
    g = np.zeros(r.shape)
    acc = np.zeros(len(r))
    for t in range(r.shape[1] - 1, -1, -1):
        acc = r[:, t] + 0.99 * acc
        g[:, t] = acc
    g = np.where(mask, g, 0.0)
    a = np.where(mask, g - g.sum(0) / np.maximum(mask.sum(0), 1), 0.0)
    return a / a[mask].std()


MORE_WRONG = {
    "preference_loss median": ("preference_loss", lambda c, r: np.median(np.logaddexp(0.0, r - c)),
                               "the median over pairs"),
    "sequence_log_prob: the prompt scored fails the perturbed-logits case (F11)": (
        "sequence_log_prob", lambda lg, t, m: _pick(_lsm(lg), t).sum(1),
        "[fail] the same batch with noise of size 50"),
    "rewards: score overwrites the last penalty": ("kl_penalized_rewards", _overwrite, "REPLACED"),
    "rewards: k2 in the reward": (
        "kl_penalized_rewards", _rewards(lambda lp, rp, b: -b * 0.5 * (lp - rp) ** 2), "that is k2"),
    "rewards: abs log-ratio": (
        "kl_penalized_rewards", _rewards(lambda lp, rp, b: -b * np.abs(lp - rp)), "abs(logp - ref_logp)"),
    "rewards: mask sliced again": ("kl_penalized_rewards", _reshifted_rewards, "already the shifted"),
    "advantages: mask sliced again": ("rlhf_advantages", _reshifted_adv, "already the shifted"),
    "advantages: per-row baseline": ("rlhf_advantages", _adv_baseline("row"), "per-row baseline"),
    "advantages: leave-one-out baseline": ("rlhf_advantages", _adv_baseline("loo"), "leave-one-out"),
    "advantages: gamma 0.99": ("rlhf_advantages", _adv_discounted, "gamma = 1"),
    "token_gae: gamma 0.99": ("token_gae", _gae_variant(gamma=0.99), "gamma = 1"),
    "token_gae: whitened": ("token_gae", _whitened_gae, "whitened"),
    "token_gae: lam on delta": ("token_gae", _gae_variant(lam_on_delta=True), "not the current delta"),
}


@pytest.mark.parametrize("wrong", MORE_WRONG, ids=list(MORE_WRONG))
def test_more_wrong_answers_rejected_with_their_diagnosis(wrong, capsys):
    name, fn, diagnosis = MORE_WRONG[wrong]
    assert diagnosis in rejected(name, fn, capsys)


def test_ensemble_question_b_gives_the_scale_argument():
    from rlcourse.course.bank import llm

    why = llm._ENSEMBLE_CHOICES["b"]
    assert "in the tens" in why and "grows only slowly" not in why
