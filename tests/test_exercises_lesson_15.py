"""Lesson 15's exercises reject the usual wrong answers, each with the right diagnosis.

Every wrong answer below is written the way a student would write it (not taken from the
checker), submitted through ``rc.exercises.check``, and must fail with the message that names
its mistake. Each ``explain`` branch of ``rlcourse/course/bank/search.py`` is reached here.
"""

import heapq
import math

import numpy as np
import pytest
from exercise_checks import rejected

import rlcourse as rc
from rlcourse.course import exercises
from rlcourse.course.bank import search as bank

LESSON_15 = ["uct_score", "path_values", "mcts", "top_p_filter", "beam_search", "visit_policy",
             "length_normalised", "best_of_n_probs", "best_of_n_kl_limit", "best_first_decode",
             "best_first_why"]


@pytest.mark.parametrize("name", LESSON_15)
def test_the_reference_passes(name):
    assert exercises.check(name, exercises.get(name).reference, verbose=False)


# ----------------------------------------------------------------------------- uct_score


def uct(q, n, parent, c, bonus, unvisited=np.inf):
    q, n = np.asarray(q, dtype=float), np.asarray(n, dtype=float)
    out = np.full(q.shape, unvisited, dtype=float)
    seen = n > 0
    out[seen] = q[seen] + bonus(n[seen], float(parent), c)
    return out


UCT_WRONG = {
    "unvisited scored 0": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: c * np.sqrt(np.log(N) / n), 0.0),
        "must score +inf"),
    "no exploration": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: 0.0), "ignores the exploration"),
    "no logarithm": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: c * np.sqrt(N / n)),
        "logarithm of the parent"),
    "no square root": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: c * np.log(N) / n),
        "square root of the whole ratio"),
    "c inside the root": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: np.sqrt(c * np.log(N) / n)),
        "c multiplies the square root"),
    "n + 1 below": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: c * np.sqrt(np.log(N) / (n + 1))),
        "not n + 1"),
    "the child's own count in the log": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: c * np.sqrt(np.log(n) / n)),
        "the parent's visit count"),
    "a list of one score": (lambda q, n, N, c=1.0: [0.0], "one score per child"),
    "ln(N + 1)": (
        lambda q, n, N, c=1.0: uct(q, n, N, c, lambda n, N, c: c * np.sqrt(np.log(N + 1) / n)),
        "not ln(N + 1)"),
    "N taken as the sum of the children's visits": (
        lambda q, n, N, c=1.0: uct(q, n, np.sum(n), c,
                                   lambda n, N, c: c * np.sqrt(np.log(max(N, 1)) / n)),
        "not the sum of the children's visits"),
    "no special case: sqrt(ln N / 0)": (
        lambda q, n, N, c=1.0: np.asarray(q, float) + c * np.sqrt(np.log(N) / np.asarray(n, float)),
        "0 / 0"),
}


@pytest.mark.parametrize("mistake", UCT_WRONG)
def test_uct_score_wrong_answers(mistake, capsys):
    fn, diagnosis = UCT_WRONG[mistake]
    assert diagnosis in rejected("uct_score", fn, capsys)


# ----------------------------------------------------------------------------- path_values


def no_flip(reward, moves, length):
    leaf = reward if moves % 2 == 0 else -reward
    return np.full(length, leaf)


def parity_off_by_one(reward, moves, length):
    leaf = reward if moves % 2 == 1 else -reward
    return np.array([leaf * (-1.0) ** (length - 1 - i) for i in range(length)])


def flip_from_the_root(reward, moves, length):
    leaf = reward if moves % 2 == 0 else -reward
    return np.array([leaf * (-1.0) ** i for i in range(length)])  # root keeps the leaf's sign


def leaf_first(reward, moves, length):
    leaf = reward if moves % 2 == 0 else -reward
    return np.array([leaf * (-1.0) ** (length - 1 - i) for i in range(length)])[::-1]


def one_short(reward, moves, length):
    leaf = reward if moves % 2 == 0 else -reward
    return [leaf * (-1.0) ** i for i in range(length)][:length - 1]


@pytest.mark.parametrize("fn, diagnosis", [
    (no_flip, "every node got the same value"),
    (parity_off_by_one, "every sign is flipped"),
    (flip_from_the_root, "you alternated the signs from the root"),
    (leaf_first, "listed the values leaf first"),
    (one_short, "one value per node"),
])
def test_path_values_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("path_values", fn, capsys)


def test_path_values_wrong_end_is_not_called_a_parity_mistake(capsys):
    """Alternating from the root is right on every odd path and flips every sign on an even
    one, which is also what a wrong parity does there: only the pair of lengths tells them
    apart, and the diagnosis must say which."""
    assert np.allclose(flip_from_the_root(1.0, 2, 3), bank.path_values(1.0, 2, 3))
    assert np.allclose(flip_from_the_root(1.0, 2, 4), -bank.path_values(1.0, 2, 4))
    out = rejected("path_values", flip_from_the_root, capsys)
    assert "check the rollout's parity" not in out


# ----------------------------------------------------------------------------- mcts


def student_mcts(sign_flip=True, parity="converted", keep_unvisited=True, pick="visits",
                 count_twice=False, count_root=True, log_of="parent", expand="random",
                 c_used=None, bonus="uct", leaf_value=True, rollout_from="child",
                 signs_from="leaf"):
    """A readable MCTS with one switch per typical mistake (and per legitimate variant)."""
    def search(state, legal_actions, apply, is_terminal, reward, simulations, c=1.0, seed=0):
        rng = np.random.default_rng(seed)

        class N:
            def __init__(self, s):
                self.s, self.kids, self.n, self.w = s, {}, 0, 0.0
                self.untried = [] if is_terminal(s) else list(legal_actions(s))

        cc = c if c_used is None else c_used

        def uct(parent, k):
            log_n = math.log(max(parent.n, 1)) if log_of == "parent" else math.log(k.n)
            if bonus == "sqrt ln N over n":
                return k.w / k.n + cc * math.sqrt(log_n) / k.n
            return k.w / k.n + cc * math.sqrt(log_n / k.n)

        root = N(state)
        for _ in range(simulations):
            node, path = root, [root]
            while not node.untried and node.kids:
                parent = node
                node = max(parent.kids.values(), key=lambda k: uct(parent, k))
                path.append(node)
            start = node.s
            if node.untried:
                i = 0 if expand == "in order" else int(rng.integers(len(node.untried)))
                a = node.untried.pop(i)
                node.kids[a] = N(apply(node.s, a))
                node = node.kids[a]
                path.append(node)
                if rollout_from == "child":
                    start = node.s
            else:
                start = node.s
            # rolling out from the parent while counting the moves as if from the child
            s, moves = start, (-1 if rollout_from == "parent" else 0)
            while not is_terminal(s):
                acts = legal_actions(s)
                s = apply(s, acts[int(rng.integers(len(acts)))])
                moves += 1
            value = reward(s)
            if parity == "converted" and moves % 2 == 1:
                value = -value
            elif parity == "swapped" and moves % 2 == 0:
                value = -value
            if signs_from == "root":  # the root gets the leaf's value, then alternate down
                values = [value * (-1) ** d for d in range(len(path))][::-1]
            else:
                values = [value * ((-1) ** d if sign_flip else 1) for d in range(len(path))]
            for d, (nd, v) in enumerate(zip(reversed(path), values)):
                if nd is not root or count_root:
                    nd.n += 2 if count_twice else 1
                if d > 0 or leaf_value:
                    nd.w += v
        visits = {a: k.n for a, k in root.kids.items()}
        if keep_unvisited:
            visits = {a: visits.get(a, 0) for a in legal_actions(state)}
        if pick == "visits":
            action = max(visits, key=visits.get)
        elif pick == "fewest":
            action = min(visits, key=visits.get)
        elif pick == "mean":
            action = max(root.kids, key=lambda a: root.kids[a].w / root.kids[a].n)
        return action, visits
    return search


@pytest.mark.parametrize("variant", [{}, {"expand": "in order"}, {"pick": "mean"}])
def test_mcts_correct_searches_with_their_own_random_stream_pass(variant):
    """A correct search passes whatever its random stream, its expansion order or whether it
    plays the most visited or the best-valued move (both are used)."""
    assert exercises.check("mcts", student_mcts(**variant), verbose=False)


@pytest.mark.parametrize("fn, diagnosis", [
    (student_mcts(sign_flip=False), "without the sign flip"),
    (student_mcts(sign_flip=False, parity="none"), "without the sign flip"),
    (student_mcts(count_twice=True), "exactly one child of the root"),
    (student_mcts(pick="fewest"), "play the most visited move"),
    (lambda *a, **k: student_mcts()(*a, **k)[0], "return (action, visits)"),
    # the three broken searches of the review: each passed the five earlier cases
    (student_mcts(parity="none"), "from the wrong player's view"),
    (student_mcts(count_root=False), "the root's own visit count is never increased"),
    (student_mcts(log_of="child"), "ln takes the child's visits"),
    # the re-review's: no exploration term, a wrong one, c ignored (each was told only "the root
    # is never counted, or ln of the child"), and a backup that gives the leaf no value (told
    # "without the sign flip")
    (student_mcts(c_used=0.0), "the exploration term is missing or wrong"),
    (student_mcts(bonus="sqrt ln N over n"), "the exploration term is missing or wrong"),
    (student_mcts(c_used=math.sqrt(2)), "with the c passed in"),
    (student_mcts(leaf_value=False), "the backup skips the leaf"),
    (student_mcts(rollout_from="parent"), "Roll out from the node just expanded"),
    (student_mcts(signs_from="root"), "the sign flips at each level from the leaf up"),
])
def test_mcts_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("mcts", fn, capsys)


def with_stream(search, offset):
    """The same search drawing another random stream (each reader's search draws its own)."""
    def shifted(state, legal_actions, apply, is_terminal, reward, simulations, c=1.0, seed=0):
        return search(state, legal_actions, apply, is_terminal, reward, simulations, c=c,
                      seed=seed + 1000 * offset)
    return shifted


@pytest.mark.parametrize("mistake", [{"parity": "none"}, {"count_root": False},
                                     {"log_of": "child"}])
def test_mcts_broken_searches_fail_whatever_their_random_stream(mistake):
    """Not a lucky seed: the checker rejects each broken search for several random streams."""
    for offset in (1, 2, 3):
        assert not exercises.check("mcts", with_stream(student_mcts(**mistake), offset),
                                   verbose=False)


def test_mcts_a_correct_search_passes_whatever_its_random_stream():
    for offset in (1, 2, 3):
        assert exercises.check("mcts", with_stream(student_mcts(), offset), verbose=False)


def test_mcts_swapped_parity_is_named_a_wrong_sign(capsys):
    out = rejected("mcts", student_mcts(parity="swapped"), capsys)
    assert "the values have the wrong sign" in out
    assert "hardly explores" not in out


def test_mcts_a_leaf_without_value_is_not_called_a_missing_sign_flip(capsys):
    out = rejected("mcts", student_mcts(leaf_value=False), capsys)
    assert "without the sign flip" not in out


def test_mcts_missing_untried_actions_are_caught(capsys):
    def drops_a_move(state, legal_actions, apply, is_terminal, reward, simulations, c=1.0, seed=0):
        result = rc.mcts(state, legal_actions, apply, is_terminal, reward,
                         simulations=simulations, c=c, seed=seed)
        first = next(iter(result.visits))
        return result.action, {a: v for a, v in result.visits.items() if a != first}

    assert "one entry per legal action" in rejected("mcts", drops_a_move, capsys)


# ----------------------------------------------------------------------------- top_p_filter


def nucleus(logits, p, rule, probs_first=True, descending=True, per_row=True, as_probs=False):
    x = np.asarray(logits, dtype=float)
    flat = x if per_row else x.reshape(1, -1)
    out = np.empty_like(flat) if flat.ndim == 2 else None
    rows = flat if flat.ndim == 2 else flat[None]
    res = []
    for row in rows:
        pr = np.exp(row - row.max()) / np.exp(row - row.max()).sum() if probs_first else row
        order = np.argsort(-pr if descending else pr, kind="stable")
        ranked = pr[order]
        keep = np.zeros(row.size, dtype=bool)
        keep[order] = rule(np.cumsum(ranked), ranked, p)
        res.append(np.where(keep, pr if as_probs else row, 0.0 if as_probs else -np.inf))
    out = np.array(res)
    return out.reshape(x.shape)


def one_past(cum, ranked, p):
    keep = cum - ranked < p
    return keep | np.concatenate([[True], keep[:-1]])  # also the token after the nucleus


def unstable_softmax(logits, p):
    x = np.asarray(logits, dtype=float)
    probs = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)  # exp(1000) = inf
    order = np.argsort(-probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    keep = np.zeros(x.shape, dtype=bool)
    np.put_along_axis(keep, order, np.cumsum(ranked, axis=-1) - ranked < p, axis=-1)
    return np.where(keep | (p >= 1), x, -np.inf)


def hugging_face_top_p(logits, p):
    """A transcription of transformers' TopPLogitsWarper (src/transformers/generation/
    logits_process.py): sort ascending, remove the tokens whose cumulative probability is
    <= 1 - top_p, always keep the last (most likely) one."""
    x = np.atleast_2d(np.asarray(logits, dtype=float))
    out = x.copy()
    for row, dest in zip(x, out):
        order = np.argsort(row, kind="stable")
        sorted_logits = row[order]
        probs = np.exp(sorted_logits - sorted_logits.max())
        remove = np.cumsum(probs / probs.sum()) <= (1 - p)
        remove[-1:] = False
        dest[order[remove]] = -np.inf
    return out.reshape(np.shape(logits))


TOP_P_WRONG = {
    "drops the crossing token": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum < p),
                                 "drop the token that crosses p"),
    "keeps one past the nucleus": (lambda z, p: nucleus(z, p, one_past), "keep too many tokens"),
    "unstable softmax": (unstable_softmax, "subtract the largest logit"),
    "ascending sort": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, descending=False),
                       "from the most likely down"),
    "no softmax": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, probs_first=False),
                   "softmax"),
    "the whole batch as one row": (
        lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, per_row=False),
        "along the last axis"),
    "probabilities returned": (
        lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, as_probs=True), "not probabilities"),
    "a tie slack that drops the top token at a tiny p": (
        lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p - 1e-9), "keep it explicitly"),
    "renormalised logits": (
        lambda z, p: np.where(np.isfinite(rc.top_p_filter(z, p)), rc.top_p_filter(z, p) - 1.0,
                              -np.inf),
        "changed their logits"),
}


@pytest.mark.parametrize("mistake", TOP_P_WRONG)
def test_top_p_wrong_answers(mistake, capsys):
    fn, diagnosis = TOP_P_WRONG[mistake]
    assert diagnosis in rejected("top_p_filter", fn, capsys)


@pytest.mark.parametrize("fn", [
    hugging_face_top_p,
    lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r <= p),  # keeps a token at an exact tie
], ids=["Hugging Face's TopPLogitsWarper", "mass before <= p"])
def test_top_p_accepts_either_side_of_an_exact_tie(fn):
    """Where the mass of the more likely tokens equals p, floating-point sums decide whether
    the next token is kept (HF keeps it in the case below, the reference does not): the checker
    accepts both, and otherwise the rules agree."""
    z = np.log([0.05, 0.5, 0.15, 0.3])
    assert np.isfinite(fn(z, 0.8)).sum() == 3 and np.isfinite(rc.top_p_filter(z, 0.8)).sum() == 2
    assert exercises.check("top_p_filter", fn, verbose=False)


# ----------------------------------------------------------------------------- beam_search


def beam(step, start, width, max_len, eos, *, stop_at_eos=True, normalise=False, extra=0,
         sort=True, keep_start=True, compete=True, per_beam=False):
    """A student's beam search with one switch per typical mistake."""
    live, finished = [(tuple(start), 0.0)], []
    for _ in range(max_len + extra):
        cands = []
        for toks, sc in live:
            lp = np.asarray(step(toks), dtype=float)
            ext = [(toks + (v,), sc + lp[v]) for v in range(lp.size) if lp[v] > -np.inf]
            if per_beam:
                ext = sorted(ext, key=lambda h: -h[1])[:1]
            cands += ext
        cands.sort(key=lambda h: -h[1])
        if compete:
            pool = sorted(finished + cands[:width], key=lambda h: -h[1])[:width]
        else:
            pool = cands[:width]
        if stop_at_eos:
            finished = ([h for h in pool if h[0][-1] == eos] if compete
                        else finished + [h for h in pool if h[0][-1] == eos])
            live = [h for h in pool if h[0][-1] != eos]
        else:
            live = pool
        if not live:
            break
    out = finished + live if compete or not stop_at_eos else (finished + live)
    out = sorted(out, key=lambda h: -h[1])[:width]
    if normalise:
        out = [(t, s / (len(t) - len(start))) for t, s in out]
    if not sort:
        out = out[::-1]
    if not keep_start:
        out = [(t[len(start):], s) for t, s in out]
    return out


@pytest.mark.parametrize("kwargs, diagnosis", [
    ({"stop_at_eos": False}, "continued past <eos>"),
    ({"normalise": True}, "not their mean"),
    ({"extra": 1}, "at most max_len"),
    ({"sort": False}, "best first"),
    ({"keep_start": False}, "start tokens included"),
    ({"per_beam": True}, "keep the wrong hypotheses"),
])
def test_beam_search_wrong_answers(kwargs, diagnosis, capsys):
    fn = lambda step, start, width, max_len, eos: beam(step, start, width, max_len, eos, **kwargs)  # noqa: E731
    assert diagnosis in rejected("beam_search", fn, capsys)


def test_beam_search_hugging_face_convention_is_named(capsys):
    out = rejected("beam_search", bank._beam_set_aside, capsys)
    assert "Hugging Face's convention" in out
    assert "item 1" not in out


def test_beam_search_stopping_when_the_best_is_finished_is_named(capsys):
    def stop_when_best_finished(step, start, width, max_len, eos):
        live, finished = [(tuple(start), 0.0)], []
        for _ in range(max_len):
            cands = []
            for toks, sc in live:
                lp = np.asarray(step(toks), dtype=float)
                cands += [(toks + (v,), sc + lp[v]) for v in range(lp.size) if lp[v] > -np.inf]
            cands.sort(key=lambda h: -h[1])
            pool = sorted(finished + cands[:width], key=lambda h: -h[1])[:width]
            finished = [h for h in pool if h[0][-1] == eos]
            live = [h for h in pool if h[0][-1] != eos]
            if not live or pool[0][0][-1] == eos:  # the mistake: the best one is done
                break
        return sorted(finished + live, key=lambda h: -h[1])

    out = rejected("beam_search", stop_when_best_finished, capsys)
    assert "you stopped while" in out and "sequence of" not in out


def test_beam_search_returning_too_many_is_caught(capsys):
    def everything(step, start, width, max_len, eos):
        return [(h.tokens, h.score) for h in rc.beam_search(step, start, width + 2, max_len, eos)]
    assert "at most beam_width" in rejected("beam_search", everything, capsys)


def test_beam_search_wrong_score_is_named(capsys):
    def off(step, start, width, max_len, eos):
        return [(h.tokens, h.score - 0.5) for h in rc.beam_search(step, start, width, max_len, eos)]
    assert "should be the sum of its tokens' log-probabilities" in rejected("beam_search", off, capsys)


# ----------------------------------------------------------------------------- visit_policy


def power(visits, t, exponent):
    n = np.asarray(visits, dtype=float)
    if t == 0:
        out = np.zeros_like(n)
        out[np.argmax(n)] = 1.0
        return out
    w = n ** exponent(t)
    return w / w.sum()


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda v, t: power(v, t, lambda t: t), "exponent is 1 / T"),
    (lambda v, t: (np.exp((np.asarray(v) - max(v)) / t) / np.exp((np.asarray(v) - max(v)) / t).sum()
                   if t > 0 else power(v, t, lambda t: 1)), "softmax of N / T"),
    (lambda v, t: power(v, t, lambda t: 1 / t), "split the mass evenly"),
    (lambda v, t: np.asarray(v, dtype=float) ** (1 / t) / np.sum(np.asarray(v, dtype=float) ** (1 / t))
     if t > 0 else np.ones(len(v)) / len(v), "not finite"),
    (lambda v, t: np.asarray(v, dtype=float) ** (1 / max(t, 1)), "normalise"),
    (lambda v, t: np.ones(2) / 2, "one probability per move"),
    (lambda v, t: power(v, t, lambda t: 1 / t) if t >= 0.01 else power(v, 0, None),
     "a small temperature is not T = 0"),
    # the re-review's: shares of the total raised to 1 / T passed every case; at T = 0.001 on
    # [700, 800, 500] every share underflows to 0 and 0 / 0 is NaN
    (lambda v, t: power(np.asarray(v) / np.sum(v), t, lambda t: 1 / t) if t > 0
     else power(v, 0, None), "Divide by the *largest* count"),
])
def test_visit_policy_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("visit_policy", fn, capsys)


# ----------------------------------------------------------------------------- length_normalised


def rerank(hyps, start_len, alpha, length, sort=True):
    out = [(tuple(t), s / length(t, start_len) ** alpha) for t, s in hyps]
    return sorted(out, key=lambda h: -h[1]) if sort else out


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda h, s, a=1.0: rerank(h, s, a, lambda t, s: len(t)), "count only the generated tokens"),
    (lambda h, s, a=1.0: sorted([(tuple(t), sc * (len(t) - s) ** a) for t, sc in h],
                                key=lambda x: -x[1]), "do not multiply"),
    (lambda h, s, a=1.0: rerank(h, s, a, lambda t, s: max(len(t) - s - 1, 1)), "<eos> included"),
    (lambda h, s, a=1.0: rerank(h, s, a, lambda t, s: len(t) - s, sort=False), "sort them"),
    (lambda h, s, a=1.0: rerank(h, s, 1.0, lambda t, s: ((5 + len(t) - s) / 6) ** a),
     "GNMT's length penalty"),
])
def test_length_normalised_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("length_normalised", fn, capsys)


# ----------------------------------------------------------------------------- best_of_n_probs


def cdf_form(probs, rewards, n, key):
    p = np.asarray(probs, dtype=float)
    order = np.argsort(key(p, np.asarray(rewards, dtype=float)), kind="stable")
    cdf = np.empty_like(p)
    cdf[order] = np.cumsum(p[order])
    return cdf**n - (cdf - p) ** n


def even_within_levels(probs, rewards, n):
    p, r = np.asarray(probs, dtype=float), np.asarray(rewards, dtype=float)
    out = np.zeros_like(p)
    for level in np.unique(r):
        at = r == level
        below, mass = p[r < level].sum(), p[at].sum()
        out[at] = ((below + mass) ** n - below**n) / at.sum()  # split evenly, not by p
    return out


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda p, r, n: cdf_form(p, r, n, lambda p, r: r), "equal rewards must share"),
    (lambda p, r, n: cdf_form(p, r, n, lambda p, r: p), "rank the outcomes by reward"),
    (lambda p, r, n: (lambda p, r: n * p * np.cumsum(p[np.argsort(r)])[np.argsort(np.argsort(r))]
                      ** (n - 1))(np.asarray(p, float), np.asarray(r, float)), "derivative"),
    (lambda p, r, n: np.asarray(p, float) * 2, "sum to 1"),
    (lambda p, r, n: even_within_levels(p, r, n), "in proportion to p"),
    (lambda p, r, n: np.zeros(2), "one probability per outcome"),
])
def test_best_of_n_probs_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("best_of_n_probs", fn, capsys)


@pytest.mark.parametrize("answer, diagnosis", [
    (math.log(1000), "a single answer"),
    (math.log(1 / 0.8), "the answers the verifier *passes*"),
    (math.log(2**20) - 1, "grows without limit"),
    ("b", "answer with a number"),
])
def test_kl_limit_wrong_answers(answer, diagnosis, capsys):
    assert diagnosis in rejected("best_of_n_kl_limit", answer, capsys)


def test_the_kl_limit_is_log_5():
    """For 1000 equally likely answers and a verifier passing 200, KL(best-of-n || base) climbs
    to log 5 and stays there, while log n - (n - 1)/n keeps growing."""
    many = np.full(1000, 1e-3)
    passes = (np.arange(1000) < 200).astype(float)

    def kl(n):
        q = rc.best_of_n_distribution(many, passes, n)
        return float(np.sum(q[q > 0] * np.log(q[q > 0] / many[q > 0])))

    assert kl(8) < kl(64) < kl(512) <= math.log(5) + 1e-9
    assert abs(kl(512) - math.log(5)) < 1e-9
    assert math.log(512) - 511 / 512 > 5
    assert exercises.check("best_of_n_kl_limit", math.log(5), verbose=False)


# ----------------------------------------------------------------------------- best_first_decode


def best_first(step, start, max_len, eos, *, check_len=True, stop_any=False):
    start = tuple(start)
    queue = [(0.0, start)]
    while queue:
        neg, toks = heapq.heappop(queue)
        done = len(toks) > len(start) and toks[-1] == eos
        cut = check_len and len(toks) - len(start) == max_len
        if done or cut or (stop_any and len(toks) > len(start) + 1):
            return toks, -neg
        lp = np.asarray(step(toks), dtype=float)
        for v in np.flatnonzero(lp > -np.inf):
            heapq.heappush(queue, (neg - lp[v], toks + (int(v),)))


def stop_on_push(step, start, max_len, eos):
    start = tuple(start)
    queue = [(0.0, start)]
    while queue:
        neg, toks = heapq.heappop(queue)
        lp = np.asarray(step(toks), dtype=float)
        for v in np.flatnonzero(lp > -np.inf):
            new = toks + (int(v),)
            if new[-1] == eos or len(new) - len(start) == max_len:
                return new, -(neg - lp[v])  # the mistake: returned when pushed, not popped
            heapq.heappush(queue, (neg - lp[v], new))


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda step, start, max_len, eos: tuple(rc.beam_search(step, start, 1, max_len, eos)[0]),
     "beam of width 1"),
    (lambda step, start, max_len, eos: tuple(rc.beam_search(step, start, 2, max_len, eos)[0]),
     "beam of width 2"),
    (lambda step, start, max_len, eos: best_first(step, start, max_len, eos, check_len=False),
     "at most max_len"),
    (lambda step, start, max_len, eos: best_first(step, start, max_len, eos, stop_any=True),
     "not complete"),
    (lambda step, start, max_len, eos: stop_on_push(step, start, max_len, eos), "*pushed*"),
])
def test_best_first_decode_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("best_first_decode", fn, capsys)


def test_best_first_decode_finds_what_every_beam_misses_on_the_counterexample():
    step = bank._tree_step(bank.NOT_MONOTONE, 10)
    tokens, score = bank.best_first_decode(step, [9], 3, 0)
    assert tokens == (9, 1, 4, 0) and math.isclose(math.exp(score), 0.2)
    assert rc.beam_search(step, [9], 2, 3, 0)[0].score < score


@pytest.mark.parametrize("answer, diagnosis", [("b", "does not always score higher"),
                                               ("c", "a width-1 beam prunes"),
                                               ("d", "one of the letters")])
def test_best_first_why_wrong_answers(answer, diagnosis, capsys):
    assert diagnosis in rejected("best_first_why", answer, capsys)


def test_best_first_why_accepts_either_case():
    assert exercises.check("best_first_why", " A ", verbose=False)


@pytest.mark.parametrize("answer", ["(a)", "a)", "A.", " (A) "])
def test_best_first_why_accepts_brackets(answer):
    assert exercises.check("best_first_why", answer, verbose=False)


def test_best_first_decode_hint_does_not_answer_exercise_4():
    """The student copy shows this hint above Exercise 4's question (why is the first complete
    hypothesis popped the best?): it must not say why."""
    hint = exercises.get("best_first_decode").hint
    assert "lower" not in hint and "beats" not in hint and "<= 0" not in hint
