"""Lesson 13's exercises (Build-it steps and exercises): each typical wrong answer is rejected by
its checker with the diagnosis that names the mistake, every explain branch is reached, and the
right answers pass."""

import numpy as np
import pytest
from exercise_checks import accepted, rejected


def _nlsig(x):
    return np.logaddexp(0.0, -x)


# ================================================================ Build it 1: the DPO loss

def _dpo(loss_of_z=None, reward_scale=True, win=np.greater, reduce=np.mean, use_ref=True):
    def fn(pc, pr, rc_, rr, beta):
        c = (pc - rc_) if use_ref else pc
        r = (pr - rr) if use_ref else pr
        cr, rr_ = (beta * c, beta * r) if reward_scale else (c, r)
        z = c - r
        loss = reduce(loss_of_z(z, beta)) if loss_of_z else reduce(_nlsig(beta * z))
        return float(loss), cr, rr_, float(np.mean(win(beta * c, beta * r)))
    return fn


DPO_WRONG = {
    "policy alone": (_dpo(use_ref=False), "policy log-probs alone"),
    "no beta": (_dpo(loss_of_z=lambda z, b: _nlsig(z)), "you forgot beta"),
    "wrong sign": (_dpo(loss_of_z=lambda z, b: _nlsig(-b * z)), "wrong sign"),
    "sum over pairs": (_dpo(reduce=np.sum), "mean over pairs"),
    "unstable -log(sigmoid)": (_dpo(loss_of_z=lambda z, b: -np.log(1 / (1 + np.exp(-b * z)))), "overflow"),
    "rewards without beta": (_dpo(reward_scale=False), "you left out beta"),
    "a tie counts as a win": (_dpo(win=np.greater_equal), "a tie is not a win"),
    "returns only the loss": (lambda *a: _dpo()(*a)[0], "return the tuple"),
    # review F12: each of these has the right rewards; at beta = 1 they were told "you left out beta"
    "margin clipped to +-30": (_dpo(loss_of_z=lambda z, b: _nlsig(np.clip(b * z, -30, 30))),
                               "clipped the margin"),
}


def _mean_margin_dpo(pc, pr, rc_, rr, beta):
    c, r = beta * (pc - rc_), beta * (pr - rr)
    return float(_nlsig(np.mean(c - r))), c, r, float(np.mean(c > r))


def _count_accuracy_dpo(pc, pr, rc_, rr, beta):
    loss, c, r, _ = _dpo()(pc, pr, rc_, rr, beta)
    return loss, c, r, float(np.sum(c > r))


DPO_WRONG["loss of the batch-mean margin"] = (_mean_margin_dpo, "not the loss of the batch's mean margin")
DPO_WRONG["accuracy as a count"] = (_count_accuracy_dpo, "not a count")


def test_dpo_loss_no_beta_diagnosis_for_right_rewards(capsys):
    """F12: a wrong answer whose rewards are right is never told it left out beta."""
    for fn in (_mean_margin_dpo, _count_accuracy_dpo, DPO_WRONG["margin clipped to +-30"][0]):
        assert "left out beta" not in rejected("dpo_loss", fn, capsys)


@pytest.mark.parametrize("wrong", DPO_WRONG, ids=list(DPO_WRONG))
def test_dpo_loss_rejects(wrong, capsys):
    fn, diagnosis = DPO_WRONG[wrong]
    assert diagnosis in rejected("dpo_loss", fn, capsys)


def test_dpo_loss_accepts_the_right_answer(capsys):
    accepted("dpo_loss", _dpo(), capsys)


# ================================================================ Build it 2: the IPO loss

def _ipo(z_of=None, target=lambda tau: 1 / (2 * tau), reduce=np.mean):
    def fn(pc, pr, rc_, rr, lc, lr, tau):
        z = z_of(pc, pr, rc_, rr, lc, lr) if z_of else (pc - rc_) / lc - (pr - rr) / lr
        return float(reduce((z - target(tau)) ** 2))
    return fn


IPO_WRONG = {
    "summed log-probs": (_ipo(z_of=lambda pc, pr, rc_, rr, lc, lr: (pc - rc_) - (pr - rr)),
                         "summed log-probs"),
    "target 1/tau": (_ipo(target=lambda tau: 1 / tau), "not 1/tau"),
    "lengths swapped": (_ipo(z_of=lambda pc, pr, rc_, rr, lc, lr: (pc - rc_) / lr - (pr - rr) / lc),
                        "OWN answer"),
    "target sign": (_ipo(target=lambda tau: -1 / (2 * tau)), "wrong sign of the target"),
    "sum over pairs": (_ipo(reduce=np.sum), "mean over pairs"),
}


@pytest.mark.parametrize("wrong", IPO_WRONG, ids=list(IPO_WRONG))
def test_ipo_loss_rejects(wrong, capsys):
    fn, diagnosis = IPO_WRONG[wrong]
    assert diagnosis in rejected("ipo_loss", fn, capsys)


def test_ipo_loss_accepts_the_right_answer(capsys):
    accepted("ipo_loss", _ipo(), capsys)


# ================================================================ Build it 3: the KL of sampled answers

def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _kl(reverse=False, counted=lambda m: m[:, 1:], reduce="sum", stable=True, shift=None):
    def fn(pol, ref, mask):
        if shift is not None:
            def ls(x):
                x = x - shift(x, axis=-1, keepdims=True)
                return x - np.log(np.exp(x).sum(-1, keepdims=True))
            lp, lq = ls(pol), ls(ref)
        elif stable:
            lp, lq = _log_softmax(pol), _log_softmax(ref)
        else:
            lp = np.log(np.exp(pol) / np.exp(pol).sum(-1, keepdims=True))
            lq = np.log(np.exp(ref) / np.exp(ref).sum(-1, keepdims=True))
        if reverse:
            lp, lq = lq, lp
        per = np.sum(np.exp(lp) * (lp - lq), -1)
        c = counted(mask)
        total = np.sum(per * c, 1)
        if reduce == "mean":
            return total / c.sum(1)
        if reduce == "batch":
            return float(total.mean())
        return total
    return fn


KL_WRONG = {
    "KL(ref || pi)": (_kl(reverse=True), "KL(ref || pi)"),
    "mask off by one": (_kl(counted=lambda m: m[:, :-1]), "off by one"),
    "prompt positions counted": (_kl(counted=lambda m: np.ones_like(m[:, 1:])),
                                 "prompt's positions"),
    "mean over positions": (_kl(reduce="mean"), "averaged over the answer's positions"),
    "one number for the batch": (_kl(reduce="batch"), "one KL per answer"),
    "unstable softmax": (_kl(stable=False), "overflows"),
    # review F14: subtracting the row mean passes logits that are all large, not one large logit
    "row mean instead of max": (_kl(shift=np.mean), "The max, not the mean"),
}


@pytest.mark.parametrize("wrong", KL_WRONG, ids=list(KL_WRONG))
def test_answer_kl_rejects(wrong, capsys):
    fn, diagnosis = KL_WRONG[wrong]
    assert diagnosis in rejected("answer_kl", fn, capsys)


def test_answer_kl_accepts_the_right_answer(capsys):
    accepted("answer_kl", _kl(), capsys)


# ================================================================ exercise 1: SimPO

def _simpo(margin=None, stable=True):
    def fn(pc, pr, lc, lr, beta, gamma):
        m = margin(pc, pr, lc, lr, beta, gamma) if margin else beta * (pc / lc - pr / lr) - gamma
        loss = _nlsig(m) if stable else -np.log(1 / (1 + np.exp(-m)))
        return float(np.mean(loss))
    return fn


SIMPO_WRONG = {
    "summed log-probs": (_simpo(margin=lambda pc, pr, lc, lr, b, g: b * (pc - pr) - g), "summed log-probs"),
    "gamma added": (_simpo(margin=lambda pc, pr, lc, lr, b, g: b * (pc / lc - pr / lr) + g), "is subtracted"),
    "no gamma": (_simpo(margin=lambda pc, pr, lc, lr, b, g: b * (pc / lc - pr / lr)), "forgot the margin"),
    "gamma inside beta": (_simpo(margin=lambda pc, pr, lc, lr, b, g: b * (pc / lc - pr / lr - g)),
                          "outside beta"),
    "unstable": (_simpo(stable=False), "overflowed"),
}


@pytest.mark.parametrize("wrong", SIMPO_WRONG, ids=list(SIMPO_WRONG))
def test_simpo_loss_rejects(wrong, capsys):
    fn, diagnosis = SIMPO_WRONG[wrong]
    assert diagnosis in rejected("simpo_loss", fn, capsys)


def test_simpo_loss_accepts_the_right_answer(capsys):
    accepted("simpo_loss", _simpo(), capsys)


# ================================================================ exercise 2: the KL-regularised optimum

def _optimum(exponent=lambda r, b: r / b, normalise=True, stable=True, reverse=False,
             reward_under_ref=False, skip_zero=True, log=np.log):
    def fn(ref, reward, beta):
        with np.errstate(divide="ignore"):
            log_w = np.log(ref) + exponent(reward, beta)
        w = np.exp(log_w - log_w.max()) if stable else np.exp(log_w)
        pol = w / w.sum() if normalise else ref * np.exp(exponent(reward, beta))
        live = pol > 0 if skip_zero else np.ones_like(pol, bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            if reverse:
                live = ref > 0
                kl = float(np.sum(ref[live] * np.log(ref[live] / pol[live])))
            else:
                kl = float(np.sum(pol[live] * log(pol[live] / ref[live])))
        return pol, float((ref if reward_under_ref else pol) @ reward), kl
    return fn


OPTIMUM_WRONG = {
    "reward times beta": (_optimum(exponent=lambda r, b: r * b), "reward / beta"),
    "not normalised": (_optimum(normalise=False), "normalise"),
    "exp overflows": (_optimum(stable=False), "overflows"),
    "0 log 0": (_optimum(skip_zero=False), "0 * log 0"),
    "KL(ref || pi)": (_optimum(reverse=True), "KL(ref || pi)"),
    "reward under the reference": (_optimum(reward_under_ref=True), "under the new policy"),
    "returns only the policy": (lambda *a: _optimum()(*a)[0], "return the tuple"),
    # review F13: at beta = 1 this was told "the exponent is reward / beta"
    "KL in bits": (_optimum(log=np.log2), "in bits"),
}


def test_kl_regularised_optimum_bits_not_blamed_on_the_exponent(capsys):
    out = rejected("kl_regularised_optimum", _optimum(log=np.log2), capsys)
    assert "exponent is reward / beta" not in out


@pytest.mark.parametrize("wrong", OPTIMUM_WRONG, ids=list(OPTIMUM_WRONG))
def test_kl_regularised_optimum_rejects(wrong, capsys):
    fn, diagnosis = OPTIMUM_WRONG[wrong]
    assert diagnosis in rejected("kl_regularised_optimum", fn, capsys)


def test_kl_regularised_optimum_accepts_the_right_answer(capsys):
    accepted("kl_regularised_optimum", _optimum(), capsys)


# ================================================================ exercise 3: cDPO's gradient

def _cdpo(d_of=None, rejected_sign=-1):
    def fn(pc, pr, rc_, rr, beta, eps):
        z = (pc - rc_) - (pr - rr)
        s = 0.5 * (1 + np.tanh(0.5 * beta * z))
        d = d_of(s, beta, eps, len(z)) if d_of else beta * (s - (1 - eps)) / len(z)
        return d, rejected_sign * d
    return fn


CDPO_WRONG = {
    "plain DPO": (_cdpo(d_of=lambda s, b, e, n: -b * (1 - s) / n), "plain DPO"),
    "eps swapped": (_cdpo(d_of=lambda s, b, e, n: b * (s - e) / n), "swapped"),
    "no 1/B": (_cdpo(d_of=lambda s, b, e, n: b * (s - (1 - e))), "divide each pair's gradient by B"),
    "wrong sign": (_cdpo(d_of=lambda s, b, e, n: -b * (s - (1 - e)) / n), "wrong sign"),
    "no beta": (_cdpo(d_of=lambda s, b, e, n: (s - (1 - e)) / n), "chain rule's beta"),
    "rejected side not negated": (_cdpo(rejected_sign=1), "minus sign"),
    "one array": (lambda *a: _cdpo()(*a)[0], "return the pair"),
}


@pytest.mark.parametrize("wrong", CDPO_WRONG, ids=list(CDPO_WRONG))
def test_cdpo_gradient_rejects(wrong, capsys):
    fn, diagnosis = CDPO_WRONG[wrong]
    assert diagnosis in rejected("cdpo_gradient", fn, capsys)


def test_cdpo_gradient_accepts_the_right_answer(capsys):
    accepted("cdpo_gradient", _cdpo(), capsys)


def test_cdpo_gradient_accepts_the_textbook_sigmoid(capsys):
    """Review F15, answered: 1/(1+exp(-x)) is exact in float64 at |x| = 1000 (it only warns), so it
    is a right answer, not an unstable one."""
    def textbook(pc, pr, rc_, rr, beta, eps):
        z = (pc - rc_) - (pr - rr)
        with np.errstate(over="ignore"):
            s = 1 / (1 + np.exp(-beta * z))
        d = beta * (s - (1 - eps)) / len(z)
        return d, -d
    accepted("cdpo_gradient", textbook, capsys)


# ================================================================ exercise 4: the accuracy question

@pytest.mark.parametrize("answer,diagnosis", [
    ("a", "rejected"), ("c", "held-out pairs"), ("d", "exactly 0 at step 0"),
    ("e", "answer with one of"), (None, "not answered yet"),
])
def test_accuracy_question_rejects(answer, diagnosis, capsys):
    assert diagnosis in rejected("dpo_accuracy_question", lambda: answer, capsys)


def test_accuracy_question_accepts_b(capsys):
    accepted("dpo_accuracy_question", lambda: " B ", capsys)
