"""Lesson 15's exercises reject the usual wrong answers, each with the right diagnosis.

Every wrong answer below is written the way a student would write it (not taken from the
checker), submitted through ``rc.exercises.check``, and must fail with the message that names
its mistake. Each ``explain`` branch of ``rlcourse/course/bank/search.py`` is reached here.
"""

import heapq
import math

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises
from rlcourse.course.bank import search as bank


def rejected(name, fn, capsys):
    """Submit ``fn``; assert it fails; return the printed verdicts."""
    capsys.readouterr()
    with np.errstate(all="ignore"):
        assert not exercises.check(name, fn)
    return capsys.readouterr().out


LESSON_15 = ["uct_score", "path_values", "mcts", "top_p_filter", "beam_search", "visit_policy",
             "length_normalised", "best_of_n_probs", "best_of_n_kl_question", "best_first_decode"]


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
    return [leaf * (-1.0) ** i for i in range(length)][:length - 1]


@pytest.mark.parametrize("fn, diagnosis", [
    (no_flip, "every node got the same value"),
    (parity_off_by_one, "every sign is flipped"),
    (flip_from_the_root, "every sign is flipped"),  # wrong on every even-length path
    (leaf_first, "one value per node"),
])
def test_path_values_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("path_values", fn, capsys)


def test_path_values_flipping_from_the_root_passes_odd_paths_only(capsys):
    out = rejected("path_values", flip_from_the_root, capsys)
    assert "[pass] a win at the leaf itself, path of 3" in out
    assert "[fail] two rollout moves, path of 4" in out


# ----------------------------------------------------------------------------- mcts


def student_mcts(sign_flip=True, parity_ok=True, keep_unvisited=True, pick="visits",
                 count_twice=False):
    """A readable MCTS with one switch per typical mistake."""
    def search(state, legal_actions, apply, is_terminal, reward, simulations, c=1.0, seed=0):
        rng = np.random.default_rng(seed)

        class N:
            def __init__(self, s):
                self.s, self.kids, self.n, self.w = s, {}, 0, 0.0
                self.untried = [] if is_terminal(s) else list(legal_actions(s))

        root = N(state)
        for _ in range(simulations):
            node, path = root, [root]
            while not node.untried and node.kids:
                kids = list(node.kids.values())
                node = max(kids, key=lambda k: k.w / k.n + c * math.sqrt(math.log(node.n) / k.n))
                path.append(node)
            if node.untried:
                a = node.untried.pop(int(rng.integers(len(node.untried))))
                node.kids[a] = N(apply(node.s, a))
                node = node.kids[a]
                path.append(node)
            s, moves = node.s, 0
            while not is_terminal(s):
                acts = legal_actions(s)
                s = apply(s, acts[int(rng.integers(len(acts)))])
                moves += 1
            value = reward(s) if (moves % 2 == 0) == parity_ok else -reward(s)
            for nd in reversed(path):
                nd.n += 2 if count_twice else 1
                nd.w += value
                value = -value if sign_flip else value
        visits = {a: k.n for a, k in root.kids.items()}
        if keep_unvisited:
            visits = {a: visits.get(a, 0) for a in legal_actions(state)}
        if pick == "visits":
            action = max(visits, key=visits.get)
        elif pick == "fewest":
            action = min(visits, key=visits.get)
        return action, visits
    return search


def test_mcts_a_correct_search_with_its_own_random_stream_passes():
    assert exercises.check("mcts", student_mcts(), verbose=False)


@pytest.mark.parametrize("fn, diagnosis", [
    (student_mcts(sign_flip=False), "without the sign flip"),
    (student_mcts(count_twice=True), "exactly one child of the root"),
    (student_mcts(pick="fewest"), "play the most visited move"),
    (lambda *a, **k: student_mcts()(*a, **k)[0], "return (action, visits)"),
])
def test_mcts_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("mcts", fn, capsys)


def test_mcts_wrong_parity_loses_and_is_named_a_losing_move(capsys):
    out = rejected("mcts", student_mcts(parity_ok=False), capsys)
    assert "loses against best play" in out or "without the sign flip" in out


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


TOP_P_WRONG = {
    "drops the crossing token": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum < p),
                                 "drop the token that crosses p"),
    "keeps one too many": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r <= p),
                           "keep too many tokens"),
    "ascending sort": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, descending=False),
                       "from the most likely down"),
    "no softmax": (lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, probs_first=False),
                   "softmax"),
    "the whole batch as one row": (
        lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, per_row=False),
        "along the last axis"),
    "probabilities returned": (
        lambda z, p: nucleus(z, p, lambda cum, r, p: cum - r < p, as_probs=True), "not probabilities"),
    "renormalised logits": (
        lambda z, p: np.where(np.isfinite(rc.top_p_filter(z, p)), rc.top_p_filter(z, p) - 1.0,
                              -np.inf),
        "changed their logits"),
}


@pytest.mark.parametrize("mistake", TOP_P_WRONG)
def test_top_p_wrong_answers(mistake, capsys):
    fn, diagnosis = TOP_P_WRONG[mistake]
    assert diagnosis in rejected("top_p_filter", fn, capsys)


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


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda p, r, n: cdf_form(p, r, n, lambda p, r: r), "equal rewards must share"),
    (lambda p, r, n: cdf_form(p, r, n, lambda p, r: p), "rank the outcomes by reward"),
    (lambda p, r, n: (lambda p, r: n * p * np.cumsum(p[np.argsort(r)])[np.argsort(np.argsort(r))]
                      ** (n - 1))(np.asarray(p, float), np.asarray(r, float)), "derivative"),
    (lambda p, r, n: np.asarray(p, float) * 2, "sum to 1"),
    (lambda p, r, n: np.zeros(2), "one probability per outcome"),
])
def test_best_of_n_probs_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("best_of_n_probs", fn, capsys)


@pytest.mark.parametrize("answer, diagnosis", [("a", "compute both KLs"), ("c", "compute both KLs"),
                                               ("B", "one of the letters")])
def test_kl_question_wrong_answers(answer, diagnosis, capsys):
    assert diagnosis in rejected("best_of_n_kl_question", lambda: answer, capsys)


def test_the_kl_question_is_true():
    """Answer (b) is what the numbers say: no ties reach near the bound, a verifier stays far below."""
    many = np.full(1000, 1e-3)
    def kl(rewards):
        q = rc.best_of_n_distribution(many, rewards, 8)
        return float(np.sum(q[q > 0] * np.log(q[q > 0] / many[q > 0])))
    bound = math.log(8) - 7 / 8
    assert abs(kl(np.arange(1000.0)) - bound) < 0.01
    assert kl((np.arange(1000) < 300).astype(float)) < bound - 0.2


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


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda step, start, max_len, eos: tuple(rc.beam_search(step, start, 1, max_len, eos)[0]),
     "beam of width 1"),
    (lambda step, start, max_len, eos: tuple(rc.beam_search(step, start, 2, max_len, eos)[0]),
     "beam of width 2"),
    (lambda step, start, max_len, eos: best_first(step, start, max_len, eos, check_len=False),
     "at most max_len"),
    (lambda step, start, max_len, eos: best_first(step, start, max_len, eos, stop_any=True),
     "not complete"),
])
def test_best_first_decode_wrong_answers(fn, diagnosis, capsys):
    assert diagnosis in rejected("best_first_decode", fn, capsys)


def test_best_first_decode_finds_what_every_beam_misses_on_the_counterexample():
    step = bank._tree_step(bank.NOT_MONOTONE, 10)
    tokens, score = bank.best_first_decode(step, [9], 3, 0)
    assert tokens == (9, 1, 4, 0) and math.isclose(math.exp(score), 0.2)
    assert rc.beam_search(step, [9], 2, 3, 0)[0].score < score
