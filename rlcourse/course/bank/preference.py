"""Lesson 13's exercises (DPO/IPO): the Build-it steps ``dpo_loss``, ``ipo_loss`` and
``answer_kl``; the exercises ``simpo_loss``, ``kl_regularised_optimum``, ``cdpo_gradient`` and the
question ``dpo_accuracy_question`` (``dpo_gradient`` stays registered for older copies). Lesson
14's GRPO exercises are in :mod:`rlcourse.course.bank.grpo`."""

import numpy as np

from ...core import autodiff as ad
from ...core.kl import exact_kl
from ...core.losses import dpo_loss, ipo_loss
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _pairs(seed, n):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(-6.0, 2.0, size=n) for _ in range(4))


def _close(got, value) -> bool:
    """``got`` (anything) is a finite-or-not number/array close to ``value``."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    value = np.asarray(value, dtype=float)
    return got.shape == value.shape and bool(np.allclose(got, value, rtol=1e-6, atol=1e-9))


def _quiet(explain):
    """An explain that computes candidate wrong answers without numpy warnings (an overflowing
    candidate is simply not the reader's answer)."""
    def wrapped(case, got, expected):
        with np.errstate(all="ignore"):
            return explain(case, got, expected)
    return wrapped


def _not_finite(got) -> bool:
    try:
        return not np.isfinite(np.asarray(got, dtype=float)).all()
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------- DPO loss (lesson 13, Build it)

def _dpo_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    out = dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=beta)
    return float(out.loss), out.chosen_rewards, out.rejected_rewards, float(out.accuracy)


def _dpo_cases():
    return [
        Case("two pairs, beta=0.5", (np.array([-5.0, -3.0]), np.array([-6.0, -2.0]),
                                     np.array([-5.5, -3.0]), np.array([-5.5, -2.5]), 0.5)),
        Case("16 random pairs, beta=0.1", (*_pairs(0, 16), 0.1)),
        Case("policy = reference (every pair a tie)", (*(np.full(4, -3.0),) * 4, 0.1)),
        Case("a pair lost by 2000 nats next to a won one, beta=2",
             (np.array([-2000.0, -1.0]), np.array([0.0, -3.0]), np.zeros(2), np.zeros(2), 2.0)),
    ]


def _dpo_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 4:
        return "return the tuple (loss, chosen_rewards, rejected_rewards, accuracy)"
    pc, pr, rc_, rr, beta = case.args
    loss = got[0]
    if _not_finite(loss):
        return ("the loss overflowed: -log(sigmoid(x)) computed as written is inf once exp(-x) "
                "overflows (a pair lost by a wide margin); use np.logaddexp(0, -x)")
    z = (pc - rc_) - (pr - rr)
    wrong = {
        "you used the policy log-probs alone: DPO's reward is beta*(logp - ref_logp), so "
        "z = (logp_c - ref_c) - (logp_r - ref_r)": np.mean(np.logaddexp(0, -beta * (pc - pr))),
        "you forgot beta: the loss is -log sigmoid(beta * z)": np.mean(np.logaddexp(0, -z)),
        "wrong sign: the loss must fall when the chosen answer gains on the rejected one, "
        "-log sigmoid(+beta z)": np.mean(np.logaddexp(0, beta * z)),
        "the loss is the mean over pairs, not the sum": np.sum(np.logaddexp(0, -beta * z)),
        "the loss is the mean of the per-pair losses, not the loss of the batch's mean margin: "
        "-log sigmoid is not linear": np.logaddexp(0, -beta * np.mean(z)),
        "you clipped the margin: np.logaddexp(0, -x) is exact for any x, and a clipped margin "
        "gives a wrong loss (and no gradient) for a pair lost by a wide margin":
            np.mean(np.logaddexp(0, -np.clip(beta * z, -30, 30))),
    }
    for reason, value in wrong.items():
        if _close(loss, value) and not np.isclose(value, expected[0]):
            return reason
    if beta != 1 and np.any(expected[1]) and _close(got[1], expected[1] / beta):
        return "the implicit rewards are beta * (logp - ref_logp): you left out beta"
    if _close(loss, expected[0]) and _close(got[3], expected[3] * len(z)) and not _close(got[3], expected[3]):
        return "accuracy is a fraction of the pairs (a mean), not a count"
    if _close(loss, expected[0]) and _close(got[3], np.mean(expected[1] >= expected[2])) \
            and not _close(got[3], expected[3]):
        return ("accuracy is the fraction of pairs whose chosen reward is strictly larger than "
                "the rejected one (a tie is not a win)")
    return None


register(
    "dpo_loss", _dpo_reference, _dpo_cases, explain=_quiet(_dpo_explain),
    hint="the reward of an answer is beta times how much likelier the policy makes it than the "
         "reference; the loss is Bradley-Terry's negative log-likelihood of the chosen answer winning",
)


# ---------------------------------------------------------------- IPO loss (lesson 13, Build it)

def _ipo_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths,
                   rejected_lengths, tau):
    return float(ipo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, tau=tau,
                          chosen_lengths=chosen_lengths, rejected_lengths=rejected_lengths).loss)


def _ipo_cases():
    rng = np.random.default_rng(1)
    return [
        Case("two pairs of lengths (2, 5) and (4, 1), tau=0.25",
             (np.array([-5.0, -3.0]), np.array([-6.0, -2.0]), np.array([-5.5, -3.0]),
              np.array([-5.5, -2.5]), np.array([2, 4]), np.array([5, 1]), 0.25)),
        Case("12 random pairs, tau=0.1",
             (*_pairs(2, 12), rng.integers(1, 8, size=12), rng.integers(1, 8, size=12), 0.1)),
    ]


def _ipo_explain(case, got, expected):
    pc, pr, rc_, rr, lc, lr, tau = case.args
    z = (pc - rc_) / lc - (pr - rr) / lr
    wrong = {
        "you used summed log-probs: IPO's margin uses per-token averages, divide each "
        "log-ratio by its own answer's length": np.mean(((pc - rc_) - (pr - rr) - 1 / (2 * tau)) ** 2),
        "the target margin is 1/(2 tau), not 1/tau": np.mean((z - 1 / tau) ** 2),
        "each log-ratio is divided by its OWN answer's length: the chosen one by chosen_lengths, "
        "the rejected one by rejected_lengths":
            np.mean(((pc - rc_) / lr - (pr - rr) / lc - 1 / (2 * tau)) ** 2),
        "wrong sign of the target: the margin is pulled UP to +1/(2 tau)": np.mean((z + 1 / (2 * tau)) ** 2),
        "the loss is the mean over pairs, not the sum": np.sum((z - 1 / (2 * tau)) ** 2),
    }
    for reason, value in wrong.items():
        if _close(got, value) and not np.isclose(value, expected):
            return reason
    return None


register(
    "ipo_loss", _ipo_reference, _ipo_cases, explain=_quiet(_ipo_explain),
    hint="the margin of DPO, but each answer's log-ratio per token; a square pulls it to a finite "
         "target that grows as tau shrinks",
)


# ---------------------------------------------------------------- KL of sampled answers (lesson 13, Build it)

def _answer_kl_reference(policy_logits, ref_logits, mask):
    return exact_kl(policy_logits, ref_logits, mask)


def _kl_case(seed, batch=3, length=6, vocab=5, offset=0.0, scale=1.0):
    rng = np.random.default_rng(seed)
    pol = rng.normal(0.0, scale, size=(batch, length - 1, vocab)) + offset
    ref = rng.normal(0.0, scale, size=(batch, length - 1, vocab)) + offset
    starts = rng.integers(1, length - 1, size=batch)  # the answer starts after a prompt
    mask = np.arange(length)[None, :] >= starts[:, None]
    return pol, ref, mask


def _answer_kl_cases():
    return [
        Case("3 answers after prompts of different lengths, vocabulary 5", _kl_case(0)),
        Case("4 answers, sharp distributions (logits of scale 3)", _kl_case(1, batch=4, scale=3.0)),
        Case("logits around +800 (exp overflows)", _kl_case(2, offset=800.0)),
        Case("one logit per row far above the rest (+1500): subtracting the mean still overflows",
             _one_large_logit_case(3)),
    ]


def _one_large_logit_case(seed, batch=3, length=5, vocab=5):
    pol, ref, mask = _kl_case(seed, batch=batch, length=length, vocab=vocab)
    rng = np.random.default_rng(seed + 100)
    for logits in (pol, ref):
        winner = rng.integers(vocab, size=logits.shape[:2])
        np.put_along_axis(logits, winner[..., None], 1500.0, axis=-1)
    pol[:, 0] = ref[:, 0]  # the first position: the same sharp distribution for both
    return pol, ref, mask


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _answer_kl_explain(case, got, expected):
    pol, ref, mask = case.args
    if _not_finite(got):
        return ("NaN or inf: exp of large logits overflows; subtract each row's max first "
                "(or use a log-softmax). The max, not the mean: with one logit far above the "
                "others, x - mean(x) is still huge and exp overflows")
    if np.asarray(got).shape != expected.shape:
        return f"return one KL per answer, shape {expected.shape}: sum over positions, not over answers"
    p, q = _softmax(pol), _softmax(ref)
    per_pos_fwd = np.sum(p * (np.log(p) - np.log(q)), -1)
    per_pos_rev = np.sum(q * (np.log(q) - np.log(p)), -1)
    counted = mask[:, 1:]
    wrong = {
        "that is KL(ref || pi): the expectation is over the policy's own tokens, weight by pi":
            np.sum(per_pos_rev * counted, 1),
        "off by one: logits[:, t] predict token t+1, so position t counts where mask[:, t+1] is "
        "True (use mask[:, 1:])": np.sum(per_pos_fwd * mask[:, :-1], 1),
        "you counted the prompt's positions too: sum only where the mask marks an answer token":
            per_pos_fwd.sum(1),
        "you averaged over the answer's positions; the sequence KL is their sum":
            np.sum(per_pos_fwd * counted, 1) / counted.sum(1),
    }
    for reason, value in wrong.items():
        if _close(got, value) and not np.allclose(value, expected):
            return reason
    return None


register(
    "answer_kl", _answer_kl_reference, _answer_kl_cases, explain=_quiet(_answer_kl_explain),
    hint="at every position of the answer, the KL between the two next-token distributions, summed "
         "over the whole vocabulary; then add up the answer's positions (logits[:, t] predict token t+1)",
)


# ---------------------------------------------------------------- SimPO (lesson 13, exercise)

def _simpo_reference(policy_chosen, policy_rejected, chosen_lengths, rejected_lengths, beta, gamma):
    z = beta * (policy_chosen / chosen_lengths - policy_rejected / rejected_lengths) - gamma
    return float(np.mean(np.logaddexp(0.0, -z)))


def _simpo_cases():
    rng = np.random.default_rng(8)
    return [
        Case("two pairs of lengths (2, 5) and (4, 1), beta=2, gamma=0.5",
             (np.array([-5.0, -3.0]), np.array([-6.0, -2.0]), np.array([2, 4]), np.array([5, 1]), 2.0, 0.5)),
        Case("10 random pairs, beta=2.5, gamma=1.4",
             (rng.normal(-8, 3, size=10), rng.normal(-8, 3, size=10), rng.integers(1, 9, size=10),
              rng.integers(1, 9, size=10), 2.5, 1.4)),
        Case("a pair lost by 3000 nats per token, beta=1, gamma=0",
             (np.array([-3000.0, -1.0]), np.array([0.0, -2.0]), np.ones(2), np.ones(2), 1.0, 0.0)),
    ]


def _simpo_explain(case, got, expected):
    pc, pr, lc, lr, beta, gamma = case.args
    if _not_finite(got):
        return "the loss overflowed: -log sigmoid(x) is np.logaddexp(0, -x), stable for any x"
    avg = pc / lc - pr / lr
    wrong = {
        "you used summed log-probs: SimPO's reward is the length-averaged log-prob, beta * logp / length":
            np.mean(np.logaddexp(0, -(beta * (pc - pr) - gamma))),
        "the margin gamma is subtracted: the chosen answer must win by at least gamma":
            np.mean(np.logaddexp(0, -(beta * avg + gamma))),
        "you forgot the margin gamma": np.mean(np.logaddexp(0, -beta * avg)),
        "gamma is a margin on the rewards, outside beta: beta * (avg_c - avg_r) - gamma, "
        "not beta * (avg_c - avg_r - gamma)": np.mean(np.logaddexp(0, -beta * (avg - gamma))),
    }
    for reason, value in wrong.items():
        if _close(got, value) and not np.isclose(value, expected):
            return reason
    return None


register(
    "simpo_loss", _simpo_reference, _simpo_cases, explain=_quiet(_simpo_explain),
    hint="replace DPO's implicit reward by the policy's own average log-prob per token (no reference), "
         "and ask the chosen answer to win by a margin",
)


# ---------------------------------------------------------------- the exact KL-regularised optimum (exercise)

def _optimum_reference(ref_probs, reward, beta):
    ref_probs = np.asarray(ref_probs, dtype=float)
    with np.errstate(divide="ignore"):
        logits = np.log(ref_probs) + np.asarray(reward, dtype=float) / beta
    logits = logits - logits.max()
    policy = np.exp(logits)
    policy /= policy.sum()
    live = policy > 0
    kl = float(np.sum(policy[live] * (np.log(policy[live]) - np.log(ref_probs[live]))))
    return policy, float(policy @ reward), kl


def _optimum_cases():
    return [
        Case("three answers, beta=0.5", (np.array([0.5, 0.3, 0.2]), np.array([1.0, 0.0, -1.0]), 0.5)),
        Case("five answers, beta=2", (np.array([0.1, 0.2, 0.3, 0.15, 0.25]),
                                      np.array([3.0, -1.0, 0.0, 2.0, -3.0]), 2.0)),
        Case("beta=0.002: rewards/beta reach 1500 (exp overflows)",
             (np.array([0.4, 0.4, 0.2]), np.array([3.0, 2.998, 0.0]), 0.002)),
        Case("an answer the reference never writes (probability 0), beta=1",
             (np.array([0.6, 0.4, 0.0]), np.array([0.0, 1.0, 5.0]), 1.0)),
        Case("an answer the reference never writes, beta=0.25",
             (np.array([0.5, 0.0, 0.3, 0.2]), np.array([1.0, 4.0, 0.0, -1.0]), 0.25)),
    ]


def _optimum_explain(case, got, expected):
    ref, reward, beta = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return "return the tuple (policy, expected_reward, kl)"
    if _not_finite(got[0]) or _not_finite(got[2]):
        if not np.all(ref > 0):
            return ("NaN: an answer with reference probability 0 gets policy 0, and 0 * log 0 must "
                    "count as 0; sum the KL only where the policy is positive")
        return "NaN or inf: exp(reward / beta) overflows; subtract the largest log-weight first"
    pol = np.asarray(got[0], dtype=float)
    times = ref * np.exp(np.clip(reward * beta, -700, 700))
    if _close(pol, times / times.sum()) and not _close(expected[0], times / times.sum()):
        return "the exponent is reward / beta: a smaller beta must move the policy further, not less"
    if _close(pol, ref * np.exp(reward / beta)):
        return "normalise: pi* = ref * exp(r / beta) / Z with Z the sum over answers"
    if _close(pol, expected[0]):
        if _close(got[1], ref @ reward):
            return "the expected reward is under the new policy: sum(policy * reward)"
        live = ref > 0
        rev = np.sum(ref[live] * (np.log(ref[live]) - np.log(pol[live])))
        if _close(got[2], rev):
            return "that is KL(ref || pi); the objective's KL is KL(pi || ref) = sum pi log(pi / ref)"
        if _close(got[2], expected[2] / np.log(2)) and expected[2] != 0:
            return "that KL is in bits (log2); the objective's KL is in nats: use the natural log"
    return None


register(
    "kl_regularised_optimum", _optimum_reference, _optimum_cases, explain=_quiet(_optimum_explain),
    hint="the maximiser of E[r] - beta KL(pi || ref) tilts the reference by exp(r / beta) and "
         "renormalises; then measure its expected reward and its KL",
)


# ---------------------------------------------------------------- cDPO gradient (exercise)

def _cdpo_gradient_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, eps):
    def loss(p):
        return dpo_loss(p["c"], p["r"], ref_chosen, ref_rejected, beta=beta, label_smoothing=eps).loss

    grads = ad.grad(loss)({"c": np.asarray(policy_chosen, float), "r": np.asarray(policy_rejected, float)})
    return grads["c"], grads["r"]


def _cdpo_gradient_cases():
    b, e = 0.5, 0.2
    at_optimum = np.log((1 - e) / e) / b
    return [
        Case("8 random pairs, beta=0.5, eps=0.2", (*_pairs(3, 8), b, e)),
        Case("a pair at the cDPO optimum beta*z = log((1-eps)/eps), one far past it, one far behind",
             (np.array([at_optimum, 40.0, -40.0]), np.zeros(3), np.zeros(3), np.zeros(3), b, e)),
        Case("5 random pairs, beta=2, eps=0.05", (*_pairs(4, 5), 2.0, 0.05)),
        Case("pairs won and lost by 2000 nats, beta=0.5 (|beta z| = 1000)",
             (np.array([2000.0, -2000.0]), np.zeros(2), np.zeros(2), np.zeros(2), 0.5, 0.1)),
    ]


def _cdpo_gradient_explain(case, got, expected):
    pc, pr, rc_, rr, beta, eps = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (d loss / d policy_chosen, d loss / d policy_rejected)"
    g = np.asarray(got[0], dtype=float)
    if g.shape != expected[0].shape:
        return f"one gradient entry per pair: shape {expected[0].shape}"
    z = (pc - rc_) - (pr - rr)
    sig = 1 / (1 + np.exp(-beta * z))
    n = len(z)
    wrong = {
        "that is plain DPO's gradient: with label smoothing the eps-weighted flipped label pushes "
        "back, so the gradient vanishes at beta z = log((1-eps)/eps), not at infinity":
            -beta * (1 - sig) / n,
        "eps and 1 - eps are swapped: the label is right with probability 1 - eps":
            beta * (sig - eps) / n,
        "the loss is a mean over the B pairs: divide each pair's gradient by B": beta * (sig - (1 - eps)),
        "wrong sign: raising a chosen log-prob lowers the loss while beta z is below its optimum":
            -beta * (sig - (1 - eps)) / n,
        "you forgot the chain rule's beta: d(beta z)/dz = beta": (sig - (1 - eps)) / n,
    }
    for reason, value in wrong.items():
        if _close(g, value) and not np.allclose(value, expected[0]):
            return reason
    if _close(g, expected[0]) and _close(got[1], expected[0]):
        return "the rejected log-prob enters z with a minus sign: its gradient is the chosen one's negated"
    return None


register(
    "cdpo_gradient", _cdpo_gradient_reference, _cdpo_gradient_cases, explain=_quiet(_cdpo_gradient_explain),
    hint="write the loss as a function of x = beta z; differentiate -log sigmoid(x) and -log sigmoid(-x); "
         "then the chain rule through z, which holds the chosen log-prob with + and the rejected with -",
)


# ---------------------------------------------------------------- the accuracy question (exercise)

_ACCURACY_CHOICES = {
    "a": "the malformed answers it writes appear in no pair, so accuracy cannot see them",
    "b": "accuracy weighs every pair equally, and the malformed answers it writes are rare among the "
         "pairs (the rejected side of a few, or of none), so ranking those pairs right says nothing "
         "about how often the policy writes them",
    "c": "accuracy is measured on the training pairs, so it overfits",
    "d": "float32 noise makes accuracy unreliable",
}


def _choice_compare(got, expected):
    answer = str(got).strip().lower() if got is not None else ""
    if answer == expected:
        return None
    if answer not in _ACCURACY_CHOICES:
        return f"answer with one of {', '.join(repr(k) for k in _ACCURACY_CHOICES)}"
    return f"not {answer!r}"


def _choice_explain(case, got, expected):
    if got is None:
        return "not answered yet: set the answer to one of the letters"
    return {
        "a": "read the printed evidence: a sizable share of the malformed samples are (prompt, answer) "
             "combinations that a training pair rejected, so they do appear in pairs, just in few",
        "c": "the lesson measures accuracy on held-out pairs, and it is high there too",
        "d": "the lesson removed the float32 noise (accuracy is exactly 0 at step 0); the gap is not noise",
    }.get(str(got).strip().lower())


register(
    "dpo_accuracy_question", lambda: "b", [Case("why can accuracy be high while samples break?")],
    compare=_choice_compare, explain=_choice_explain,
    hint="count how often the answers the model samples occur among the pairs, and how much of the "
         "accuracy those pairs make up",
)


# ---------------------------------------------------------------- DPO gradient (kept for older copies)

def _dpo_gradient_reference(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    def loss(p):
        return dpo_loss(p["c"], p["r"], ref_chosen, ref_rejected, beta=beta).loss

    grads = ad.grad(loss)({"c": policy_chosen, "r": policy_rejected})
    return grads["c"], grads["r"]


def _dpo_gradient_cases():
    return [
        Case("8 random pairs, beta=0.1", (*_pairs(3, 8), 0.1)),
        Case("a pair already won by a wide margin, beta=1", (np.array([0.0, -1.0]), np.array([-30.0, -1.0]),
                                                             np.zeros(2), np.zeros(2), 1.0)),
    ]


def _dpo_gradient_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (d loss / d policy_chosen, d loss / d policy_rejected)"
    got_c = np.asarray(got[0], dtype=float)
    if got_c.shape == expected[0].shape and np.allclose(got_c, expected[0] * len(got_c)):
        return "the loss is a mean over the B pairs: divide each pair's gradient by B"
    if got_c.shape == expected[0].shape and np.allclose(got_c, -expected[0]):
        return "wrong sign: raising a chosen log-prob must lower the loss (a negative gradient)"
    return None


register(
    "dpo_gradient", _dpo_gradient_reference, _dpo_gradient_cases, explain=_dpo_gradient_explain,
    hint="d/d logp_c of -log sigmoid(beta z) is -beta * sigmoid(-beta z); the rejected side has +",
)
