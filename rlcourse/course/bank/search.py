"""Exercises of lesson 15 (search and decoding).

Build it: ``uct_score``, ``path_values`` (whose win is it, on the way up), ``mcts`` (the whole
search), ``top_p_filter`` and ``beam_search``. Exercises: ``visit_policy`` (AlphaZero's
move distribution), ``length_normalised`` (beam scores divided by length), ``best_of_n_probs``
(the exact distribution of best-of-n) with ``best_of_n_kl_question``, and
``best_first_decode`` (exact decoding, which beam search approximates).

Every ``explain`` recomputes the usual wrong answers and names the one the reader's matches.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ...core.sampling import top_p_filter
from ...envs.tictactoe import TicTacToe, TicTacToeState
from ...search.decoding import beam_search, best_of_n_distribution
from ...search.mcts import mcts, uct_score
from ...search.minimax import minimax_values
from ..registry import Case, default_compare, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, equal_nan=True))


# ----------------------------------------------------------------------------- uct_score


def _uct_cases() -> list[Case]:
    return [
        Case("all children visited", ([0.5, 0.1, -0.2], [4, 3, 3], 10, 1.0)),
        Case("one child unvisited", ([0.5, 0.0, 0.2], [4, 0, 1], 5, 1.0)),
        Case("c = 0 is pure exploitation", ([0.3, 0.6], [5, 1], 6, 0.0)),
        Case("a large c favours the rarely visited", ([0.9, -0.5], [50, 2], 52, 5.0)),
        Case("c = 2 on a busy node", ([0.1, 0.4, 0.2, -0.3], [30, 60, 9, 1], 100, 2.0)),
    ]


def _uct_explain(case: Case, got, expected) -> str | None:
    q, n, parent, c = (np.asarray(x, dtype=float) for x in case.args)
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return "return an array of scores, one per child"
    if got.shape != q.shape:
        return f"return one score per child: shape {q.shape}, got {got.shape}"
    unvisited = n == 0
    if unvisited.any() and not np.all(np.isposinf(got[unvisited])):
        return ("an unvisited child must score +inf: each child is tried once before any is "
                "tried twice, and its mean value is not even defined yet")
    seen = ~unvisited
    qs, ns, ln = q[seen], n[seen], math.log(max(float(parent), 1.0))
    wrong = {
        "your UCT score ignores the exploration term c * sqrt(ln N / n): without it the "
        "search keeps exploiting its first lucky child": qs,
        "the exploration term uses the logarithm of the parent's visits: sqrt(ln N / n), "
        "not sqrt(N / n)": qs + c * np.sqrt(parent / ns),
        "take the square root of the whole ratio: sqrt(ln N / n), not ln N / n": qs + c * ln / ns,
        "c multiplies the square root: c * sqrt(ln N / n), not sqrt(c * ln N / n)":
            qs + np.sqrt(c * ln / ns),
        "divide by the child's visits n, not n + 1 (that is PUCT's denominator)":
            qs + c * np.sqrt(ln / (ns + 1)),
        "N in ln N is the parent's visit count, the same for every child, not the child's own":
            qs + c * np.sqrt(np.log(ns) / ns),
    }
    for message, value in wrong.items():
        if not _same(value, expected[seen]) and _same(got[seen], value):
            return message
    return None


register(
    "uct_score",
    reference=uct_score,
    cases=_uct_cases,
    explain=_uct_explain,
    hint="the mean value plus an exploration bonus that grows slowly with the parent's visits "
         "and shrinks with the child's own; an untried child comes first",
)

# ----------------------------------------------------------------------------- path_values


def path_values(reward: float, rollout_moves: int, path_length: int) -> np.ndarray:
    """The values a two-player (negamax) backup adds to the nodes of one simulation's path.

    ``reward`` is the game's outcome from the view of whoever made the last move of the
    rollout, ``rollout_moves`` how many random moves the rollout made after the leaf, and
    ``path_length`` the number of nodes from the root to the leaf, both included. Returns
    ``[path_length]`` floats, root first: each node gets the outcome from the view of the player
    who moved into it.
    """
    leaf = reward if rollout_moves % 2 == 0 else -reward
    # the leaf is path_length - 1 levels below the root; the sign flips at every level
    return np.array([leaf * (-1.0) ** (path_length - 1 - i) for i in range(path_length)])


def _path_cases() -> list[Case]:
    return [
        Case("a win at the leaf itself, path of 3", (1.0, 0, 3)),
        Case("one rollout move, path of 3", (1.0, 1, 3)),
        Case("two rollout moves, path of 4", (1.0, 2, 4)),
        Case("a draw stays a draw", (0.0, 3, 2)),
        Case("five rollout moves, path of 2", (1.0, 5, 2)),
        Case("the root alone is the leaf", (1.0, 4, 1)),
    ]


def _path_explain(case: Case, got, expected) -> str | None:
    reward, moves, length = case.args
    try:
        got = np.asarray(got, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return "return an array of values, one per node of the path"
    if got.size != length:
        return f"return one value per node on the path: {length} values, root first"
    if length > 1 and _same(np.abs(got), np.abs(expected)) and np.ptp(got) == 0:
        return ("every node got the same value: in a two-player game flip the sign at each "
                "level, each node holds the outcome for the player who moved into it")
    if _same(got, -expected):
        return ("every sign is flipped: the *leaf* holds the outcome for the player who moved "
                "into it (after an even number of rollout moves, zero included, that is the "
                "last mover), and the signs alternate from the leaf up to the root")
    return None


register(
    "path_values",
    reference=path_values,
    cases=_path_cases,
    explain=_path_explain,
    hint="first turn the outcome into the view of the player who moved into the leaf (how many "
         "moves did the rollout make?), then alternate the sign on the way up to the root",
)

# ----------------------------------------------------------------------------- mcts

_GAME = TicTacToe()
_FNS = (_GAME.legal_actions, _GAME.apply, _GAME.is_terminal, _GAME.reward)
_MINIMAX_CACHE: dict = {}


def _after(moves):
    state = _GAME.initial_state()
    for a in moves:
        state = _GAME.apply(state, a)
    return state


class _Judged(tuple):
    """``(action, visits)`` as the reader returns it, plus what the checker needs in ``info``:
    the minimax-optimal moves, the legal moves, the budget and the move of a search without
    the sign flip."""

    def __new__(cls, items, info=None):
        self = super().__new__(cls, items)
        self.info = info
        return self


def _mcts_reference(state, legal_actions, apply, is_terminal, reward, simulations, c=2.0,
                    seed=0):
    """``(action, visits)`` of a correct search, with the facts the checker judges by."""
    result = mcts(state, legal_actions, apply, is_terminal, reward, simulations=simulations,
                  c=c, seed=seed)
    cache = _MINIMAX_CACHE if isinstance(state, TicTacToeState) else {}
    q = minimax_values(state, legal_actions, apply, is_terminal, reward, cache=cache)
    no_flip = mcts(state, legal_actions, apply, is_terminal, reward, simulations=simulations,
                   c=c, seed=seed, two_player=False)
    info = {"optimal": {a for a, v in q.items() if v == max(q.values())},
            "legal": list(legal_actions(state)), "simulations": simulations,
            "no_flip_action": no_flip.action}
    return _Judged((result.action, dict(result.visits)), info)


def _mcts_cases() -> list[Case]:
    # positions with one clearly right move that 500 simulations of any correct MCTS find
    cases = [
        ("X wins at once rather than blocking", [0, 3, 1, 4]),
        ("O must block the top row", [0, 4, 1]),
        ("X forks: two threats at once", [0, 1, 4, 8]),
        ("O must block the diagonal", [0, 2, 4]),
    ]
    return [Case(label, (_after(moves), *_FNS, 500), {"c": 2.0, "seed": 7})
            for label, moves in cases] + [
        Case("two moves, the opponent answers: 0 then 1.0 for them, 1 then 0.6",
             ((), *_TWO_MOVES, 400), {"c": 1.0, "seed": 7})]


# The lesson's two-move game: the second mover's outcome is 1.0 or 0.0 after the first move 0
# and 0.6 either way after move 1. Only a search that flips the sign sees that 1 is better.
_LEAVES = ((1.0, 0.0), (0.6, 0.6))
_TWO_MOVES = (
    lambda s: [0, 1],
    lambda s, a: s + (a,),
    lambda s: len(s) == 2,
    lambda s: _LEAVES[s[0]][s[1]] if len(s) == 2 else 0.0,
)


def _mcts_compare(got, expected) -> str | None:
    expected = expected.info
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict)):
        return "return (action, visits): the move to play and a dict {action: visit count}"
    action, visits = got
    if sorted(visits) != sorted(expected["legal"]):
        return (f"visits must have one entry per legal action {expected['legal']} (0 for an "
                f"action never tried), got keys {sorted(visits)}")
    if sum(visits.values()) != expected["simulations"]:
        return (f"the root's children were visited {sum(visits.values())} times in "
                f"{expected['simulations']} simulations: each simulation passes through exactly "
                "one child of the root")
    if visits.get(action) != max(visits.values()):
        return "play the most visited move (the visit counts are the search's policy)"
    if action not in expected["optimal"]:
        return (f"you play {action}, which loses against best play; the moves that hold the "
                f"best outcome are {sorted(expected['optimal'])}")
    return None


def _mcts_explain(case: Case, got, expected) -> str | None:
    expected = expected.info
    if isinstance(got, tuple) and len(got) == 2 and got[0] not in expected["optimal"] \
            and got[0] == expected["no_flip_action"]:
        return ("you play the move a search *without the sign flip* plays: your backup adds "
                "the opponent's wins as if they were yours, so the search helps the opponent")
    return None


register(
    "mcts",
    reference=_mcts_reference,
    cases=_mcts_cases,
    compare=_mcts_compare,
    explain=_mcts_explain,
    hint="loop: select down by UCT while the node has no untried move, expand one untried "
         "move, roll out at random, add path_values to the nodes on the path; then play "
         "the most visited child of the root",
)

# ----------------------------------------------------------------------------- top_p_filter


def _top_p_cases() -> list[Case]:
    rng = np.random.default_rng(15)
    return [
        Case("keep two of four", (np.log([0.05, 0.5, 0.15, 0.3]), 0.7)),
        Case("mass exactly p", (np.log([0.05, 0.5, 0.15, 0.3]), 0.8)),
        Case("tiny p keeps the top token", (np.log([0.2, 0.3, 0.5]), 0.01)),
        Case("p = 1 keeps everything", (np.array([0.0, -1.0, 2.0]), 1.0)),
        Case("unnormalised logits", (np.array([3.0, 1.0, 2.5, -1.0, 0.0]), 0.6)),
        Case("a batch of rows", (rng.normal(size=(3, 6)), 0.9)),
    ]


def _top_p_variants(logits, p):
    """The usual wrong nucleus filters, each as its message and its output."""
    x = np.asarray(logits, dtype=float)
    probs = np.exp(x - x.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)

    def keep(ranked_keep, order):
        mask = np.zeros_like(ranked_keep)
        np.put_along_axis(mask, order, ranked_keep, axis=-1)
        return np.where(mask, x, -np.inf)

    order = np.argsort(-probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    cum = np.cumsum(ranked, axis=-1)
    asc = np.argsort(probs, axis=-1, kind="stable")
    asc_ranked = np.take_along_axis(probs, asc, axis=-1)
    raw_order = np.argsort(-x, axis=-1, kind="stable")
    raw_ranked = np.take_along_axis(x, raw_order, axis=-1)
    flat = x.reshape(-1)
    fp = np.exp(flat - flat.max())
    fp /= fp.sum()
    forder = np.argsort(-fp, kind="stable")
    fkeep = np.zeros(flat.size, dtype=bool)
    fkeep[forder] = np.cumsum(fp[forder]) - fp[forder] < p
    return {
        "you drop the token that crosses p: keep a token while the mass *before* it is below "
        "p, so the kept mass reaches p (and the top token is always kept)":
            keep(cum < p, order),
        "you keep too many tokens: the set must stop as soon as its mass reaches p":
            keep(cum - ranked <= p + 1e-12, order) if p < 1 else None,
        "sort by probability from the most likely down, not from the least likely up":
            keep(np.cumsum(asc_ranked, axis=-1) - asc_ranked < p, asc),
        "turn logits into probabilities (softmax) before adding up their mass":
            keep(np.cumsum(raw_ranked, axis=-1) - raw_ranked < p, raw_order),
        "filter each row on its own: softmax, sort and cumulative sum along the last axis":
            np.where(fkeep.reshape(x.shape), x, -np.inf) if x.ndim == 2 else None,
    }


def _top_p_explain(case: Case, got, expected) -> str | None:
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return "return the filtered logits as an array"
    if got.shape != np.shape(expected):
        return f"return logits of the input's shape {np.shape(expected)}, got {got.shape}"
    if not np.isneginf(got).any() and np.isneginf(expected).any() and \
            ((got >= 0) & (got <= 1)).all():
        return ("return logits, with -inf for the dropped tokens, not probabilities: sampling "
                "applies the softmax afterwards")
    if np.isfinite(got).sum() == np.isfinite(expected).sum() and \
            (np.isfinite(got) == np.isfinite(expected)).all():
        return ("you kept the right tokens but changed their logits: return the kept logits "
                "unchanged and -inf for the others")
    for message, value in _top_p_variants(*case.args).items():
        if value is not None and not _same(value, expected) and _same(got, value):
            return message
    if np.isfinite(got).sum() > np.isfinite(expected).sum():
        return "you keep too many tokens: the set must stop as soon as its mass reaches p"
    return None


register(
    "top_p_filter",
    reference=top_p_filter,
    cases=_top_p_cases,
    explain=_top_p_explain,
    hint="probabilities first, then walk down from the most likely token and keep tokens "
         "until the mass kept so far reaches p",
)

# ----------------------------------------------------------------------------- beam_search


def _table_step(table: np.ndarray):
    """A bigram model: the next token's log-probabilities depend on the last token only."""
    with np.errstate(divide="ignore"):
        log_table = np.log(table)
    return lambda tokens: log_table[tokens[-1]]


# Token 0 ends a sequence. From the start token 4, greedy takes 1 (0.5) but every continuation
# of 1 is unlikely; 2 (0.4) is followed by 3 almost surely.
_TRAP = np.array([
    [1.0, 0.0, 0.0, 0.0, 0.0],
    [0.3, 0.25, 0.2, 0.25, 0.0],
    [0.1, 0.0, 0.0, 0.9, 0.0],
    [1.0, 0.0, 0.0, 0.0, 0.0],
    [0.1, 0.5, 0.4, 0.0, 0.0],
])


def _tree_step(children: dict, vocab: int):
    """A model given as a tree: ``children[prefix]`` maps next tokens to probabilities."""
    def step(tokens):
        probs = np.zeros(vocab)
        for token, prob in children.get(tuple(tokens), {}).items():
            probs[token] = prob
        with np.errstate(divide="ignore"):
            return np.log(probs)
    return step


# A wider beam is not always better: from start 9, width 1 keeps A=1 and finds A a1 <eos>
# (0.5 * 0.4 = 0.2); width 2 keeps A and B=2, then B's two children (0.225 each) push A a1 out,
# and B's line ends at 0.1125; width 3 keeps all three and finds 0.2 again.
NOT_MONOTONE = {
    (9,): {1: 0.5, 2: 0.45, 3: 0.05},
    (9, 1): {4: 0.4, 5: 0.3, 6: 0.3},
    (9, 1, 4): {0: 1.0},
    (9, 1, 5): {0: 1.0},
    (9, 1, 6): {0: 1.0},
    (9, 2): {7: 0.5, 8: 0.5},
    (9, 2, 7): {0: 0.5, 5: 0.5},
    (9, 2, 8): {0: 0.5, 6: 0.5},
    (9, 3): {0: 1.0},
}


def _beam_cases() -> list[Case]:
    rng = np.random.default_rng(151)
    random_table = rng.dirichlet(np.ones(5), size=5)
    return [
        Case("greedy is width 1", (_table_step(_TRAP), [4], 1, 5, 0)),
        Case("width 2 escapes the greedy trap", (_table_step(_TRAP), [4], 2, 5, 0)),
        Case("max_len cuts live hypotheses", (_table_step(_TRAP), [4], 3, 1, 0)),
        Case("a random bigram model", (_table_step(random_table), [4], 3, 4, 0)),
        Case("finished hypotheses compete for the beam", (_tree_step(NOT_MONOTONE, 10), [9], 2, 3, 0)),
        Case("a wide beam on a random model", (_table_step(random_table), [4], 4, 3, 0)),
    ]


def _beam_explain(case: Case, got, expected) -> str | None:
    step, start, width, max_len, eos = case.args
    try:
        hyps = [(tuple(int(t) for t in h[0]), float(h[1])) for h in got]
    except (TypeError, ValueError, IndexError):
        return "return a list of (tokens, score) pairs, best first"
    if not hyps:
        return "return at least the best hypothesis"
    if len(hyps) > width:
        return "return at most beam_width hypotheses"
    n_start = len(start)
    if any(eos in h[0][n_start:-1] for h in hyps):
        return "a hypothesis continued past <eos>: finished sequences stop growing"
    if any(h[0][:n_start] != tuple(start) for h in hyps):
        return "each hypothesis is the whole sequence, the start tokens included"
    if any(len(h[0]) - n_start > max_len for h in hyps):
        return f"at most max_len = {max_len} tokens are generated after the start"
    scores = [h[1] for h in hyps]
    if scores != sorted(scores, reverse=True):
        return "return the hypotheses best first (highest total log-probability)"
    for tokens, score in hyps:
        true = sum(float(step(tokens[:i])[tokens[i]]) for i in range(n_start, len(tokens)))
        if not math.isclose(score, true, rel_tol=1e-6, abs_tol=1e-9):
            if math.isclose(score, true / (len(tokens) - n_start), rel_tol=1e-6):
                return ("a hypothesis' score is the plain sum of its tokens' log-probabilities, "
                        "not their mean (length normalisation is a later, separate choice)")
            return (f"the score of {tokens} should be the sum of its tokens' log-probabilities, "
                    f"{true:.4f}, got {score:.4f}")
    best = expected[0]
    if hyps[0][1] < best.score - 1e-9:
        if any(len(h[0]) - n_start < max_len and h[0][-1] == eos for h in expected[:width]) and \
                not any(h[0][-1] == eos for h in hyps):
            return ("finished hypotheses must stay in the beam and compete with the live ones; "
                    "you dropped them")
        return ("you keep the wrong hypotheses: at each step extend every live one by every "
                "token, then keep the beam_width best of all of them together (not the best "
                "few of each)")
    return None


register(
    "beam_search",
    reference=beam_search,
    cases=_beam_cases,
    explain=_beam_explain,
    hint="extend every live hypothesis by every possible token, pool them with the finished "
         "ones, keep the beam_width best; the ones ending in eos are finished and stop growing",
)

# ============================================================================= exercises

# ----------------------------------------------------------------------------- visit_policy


def visit_policy(visits, temperature: float) -> np.ndarray:
    """AlphaZero's move distribution from root visit counts: ``pi(a) ~ N(a) ** (1 / T)``.

    ``temperature`` T > 0 sharpens (T < 1) or flattens (T > 1) the counts; ``T = 0`` is the
    limit: all the mass on the most visited moves, split evenly between ties.
    """
    n = np.asarray(visits, dtype=float)
    if temperature == 0:
        top = n == n.max()
        return top / top.sum()
    # divide by the largest count first so that N ** (1/T) cannot overflow for a small T
    w = (n / n.max()) ** (1.0 / temperature)
    return w / w.sum()


def _visit_cases() -> list[Case]:
    return [
        Case("T = 1 is proportional to the counts", ([10, 30, 60], 1.0)),
        Case("T = 0.5 sharpens", ([10, 30, 60], 0.5)),
        Case("T = 2 flattens", ([1, 4, 0, 11], 2.0)),
        Case("T = 0 plays the most visited", ([5, 80, 15], 0.0)),
        Case("T = 0 splits ties evenly", ([40, 10, 40, 10], 0.0)),
        Case("a small T on large counts", ([700, 800, 500], 0.002)),
    ]


def _visit_explain(case: Case, got, expected) -> str | None:
    n, t = np.asarray(case.args[0], dtype=float), case.args[1]
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return "return an array of probabilities, one per move"
    if got.shape != n.shape:
        return f"return one probability per move: shape {n.shape}, got {got.shape}"
    if not np.isfinite(got).all():
        return ("your probabilities are not finite: at T = 0 take the limit (the most visited "
                "moves), and for a small T scale the counts by the largest one before the power")
    if not np.isclose(got.sum(), 1.0):
        return "normalise: the probabilities must sum to 1"
    if t > 0 and _same(got, n**t / (n**t).sum()):
        return "the exponent is 1 / T, not T: a small temperature must sharpen the distribution"
    if t > 0:
        soft = np.exp((n - n.max()) / t)
        if _same(got, soft / soft.sum()):
            return ("that is a softmax of N / T; AlphaZero raises the counts to the power 1 / T, "
                    "which does not depend on how many simulations were run")
    if t == 0 and (n == n.max()).sum() > 1 and got.max() == 1.0:
        return "at T = 0 split the mass evenly between tied most-visited moves"
    return None


register(
    "visit_policy",
    reference=visit_policy,
    cases=_visit_cases,
    explain=_visit_explain,
    hint="raise the counts to the power 1/T and normalise; T = 0 is the limit of that",
)

# ----------------------------------------------------------------------------- length_normalised


def length_normalised(hypotheses, start_len: int, alpha: float = 1.0) -> list:
    """Re-rank beam hypotheses by ``score / length ** alpha``, best first.

    ``hypotheses`` is a list of ``(tokens, score)``, ``tokens`` the whole sequence (its first
    ``start_len`` tokens are the prompt), ``score`` the summed log-probability of the generated
    tokens; the length is the number of generated tokens (an ``eos`` included), as Hugging Face
    ``generate`` counts it with ``length_penalty = alpha`` (default 1.0). Returns a list of
    ``(tokens, normalised score)``; ties keep the input order.
    """
    scored = [(tuple(tokens), float(score) / (len(tokens) - start_len) ** alpha)
              for tokens, score in hypotheses]
    return sorted(scored, key=lambda h: -h[1])


def _length_cases() -> list[Case]:
    hyps = [((7, 1, 0), -1.2), ((7, 2, 3, 5, 0), -2.0), ((7, 0), -1.0), ((7, 2, 3, 0), -1.9)]
    return [
        Case("alpha = 1: the mean log-prob per token", (hyps, 1, 1.0)),
        Case("alpha = 0: plain sums", (hyps, 1, 0.0)),
        Case("alpha = 0.6, a two-token prompt", ([((9, 7, 1, 0), -1.0), ((9, 7, 2, 2, 2, 0), -1.8),
                                                  ((9, 7, 0), -0.9)], 2, 0.6)),
        Case("alpha = 2 favours long answers", (hyps, 1, 2.0)),
    ]


def _length_compare(got, expected) -> str | None:
    try:
        got = [(tuple(int(t) for t in h[0]), float(h[1])) for h in got]
    except (TypeError, ValueError, IndexError):
        return "return a list of (tokens, normalised score) pairs, best first"
    if [h[0] for h in got] != [h[0] for h in expected]:
        return f"order: expected {[h[0] for h in expected]}, got {[h[0] for h in got]}"
    return default_compare([h[1] for h in got], [h[1] for h in expected])


def _length_explain(case: Case, got, expected) -> str | None:
    hyps, start_len, alpha = case.args
    try:
        got_scores = {tuple(int(t) for t in h[0]): float(h[1]) for h in got}
    except (TypeError, ValueError, IndexError):
        return None
    base = {tuple(t): s for t, s in hyps}
    if all(k in got_scores for k in base):
        def agrees(fn):
            values = {k: fn(k, s) for k, s in base.items()}
            return all(math.isclose(got_scores[k], values[k], rel_tol=1e-6) for k in base) and \
                not all(math.isclose(values[k], dict(expected)[k], rel_tol=1e-6) for k in base)
        if agrees(lambda k, s: s / len(k) ** alpha):
            return "count only the generated tokens: the prompt's length is the same for all"
        if agrees(lambda k, s: s * (len(k) - start_len) ** alpha):
            return "divide by the length to the power alpha, do not multiply"
        if agrees(lambda k, s: s / (len(k) - start_len - 1) ** alpha if len(k) - start_len > 1
                  else s):
            return "the length counts every generated token, the final <eos> included"
        if all(math.isclose(got_scores[k], v, rel_tol=1e-6) for k, v in dict(expected).items()):
            return "the scores are right; sort them best (highest) first"
    return None


register(
    "length_normalised",
    reference=length_normalised,
    cases=_length_cases,
    compare=_length_compare,
    explain=_length_explain,
    hint="each summed log-prob divided by (number of generated tokens) ** alpha; then sort",
)

# ----------------------------------------------------------------------------- best_of_n_probs


def _best_of_n_cases() -> list[Case]:
    return [
        Case("distinct rewards, n = 1", ([0.2, 0.5, 0.3], [1.0, 3.0, 2.0], 1)),
        Case("distinct rewards, n = 4", ([0.2, 0.5, 0.3], [1.0, 3.0, 2.0], 4)),
        Case("a verifier: rewards 0 or 1", ([0.1, 0.3, 0.2, 0.4], [1.0, 0.0, 1.0, 0.0], 3)),
        Case("ties inside the top level", ([0.25, 0.25, 0.25, 0.25], [2.0, 2.0, 1.0, 0.0], 2)),
        Case("an impossible outcome", ([0.0, 0.6, 0.4], [5.0, 1.0, 0.0], 8)),
    ]


def _best_of_n_explain(case: Case, got, expected) -> str | None:
    p, r, n = np.asarray(case.args[0], dtype=float), np.asarray(case.args[1], dtype=float), case.args[2]
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return "return an array of probabilities, one per outcome"
    if got.shape != p.shape:
        return f"return one probability per outcome: shape {p.shape}, got {got.shape}"
    order = np.argsort(r, kind="stable")
    cdf = np.empty_like(p)
    cdf[order] = np.cumsum(p[order])
    naive = cdf**n - (cdf - p) ** n  # treats tied outcomes as if they were ordered
    if not _same(naive, expected) and _same(got, naive):
        return ("outcomes with equal rewards must share their level's probability in "
                "proportion to p: best-of-n cannot tell them apart, it keeps the first to appear")
    by_p = np.empty_like(p)
    po = np.argsort(p, kind="stable")
    by_p[po] = np.cumsum(p[po])
    if _same(got, by_p**n - (by_p - p) ** n):
        return "rank the outcomes by reward, not by probability"
    if _same(got, n * p * np.clip(cdf, 0, 1) ** (n - 1)):
        return ("n p F^(n-1) is only the derivative (density) form, exact for continuous "
                "rewards; for discrete outcomes use F(l)^n - F(l-)^n")
    if not np.isclose(got.sum(), 1.0):
        return "the probabilities of the kept outcome must sum to 1"
    return None


register(
    "best_of_n_probs",
    reference=best_of_n_distribution,
    cases=_best_of_n_cases,
    explain=_best_of_n_explain,
    hint="the best of n lies at or below reward level l with probability F(l)^n; within a "
         "level, the kept outcome is an ordinary draw from that level",
)


def _kl_question_reference() -> str:
    """Multiple choice, answered by computation in the lesson's exercise."""
    return "b"


register(
    "best_of_n_kl_question",
    reference=_kl_question_reference,
    cases=[Case("your choice")],
    compare=lambda got, expected: None if got == expected else f"not {got!r}",
    explain=lambda case, got, expected: (
        "compute both KLs: without ties best-of-n reaches log n - (n-1)/n; a 0/1 verifier "
        "lumps every right answer into one level, so best-of-n only moves mass between two "
        "levels and stays below it"
        if got in ("a", "c") else "answer with one of the letters 'a', 'b' or 'c'"),
    hint="compute KL(best-of-n || base) for both rewards with your best_of_n_probs",
)

# ----------------------------------------------------------------------------- best_first_decode


def best_first_decode(step, start, max_len: int, eos: int):
    """The most likely complete hypothesis, found exactly: ``(tokens, score)``.

    A hypothesis is complete when it ends in ``eos`` or has ``max_len`` generated tokens.
    Uniform-cost (best-first) search: keep a priority queue of partial hypotheses by score;
    the first *complete* one popped is optimal, because every log-probability is <= 0 and an
    extension can only lower a score. Ties go to the smaller token sequence.
    """
    start = tuple(int(t) for t in start)
    queue = [(-0.0, start)]
    while queue:
        neg, tokens = heapq.heappop(queue)
        if (len(tokens) > len(start) and tokens[-1] == eos) or len(tokens) - len(start) == max_len:
            return tokens, -neg
        logp = np.asarray(step(tokens), dtype=float)
        for v in np.flatnonzero(logp > -np.inf):
            heapq.heappush(queue, (neg - float(logp[v]), tokens + (int(v),)))
    raise ValueError("step: no complete hypothesis is possible")


def _best_first_cases() -> list[Case]:
    rng = np.random.default_rng(152)
    return [
        Case("where greedy fails", (_table_step(_TRAP), [4], 5, 0)),
        Case("where a width-2 beam fails", (_tree_step(NOT_MONOTONE, 10), [9], 3, 0)),
        Case("max_len cuts the search", (_table_step(_TRAP), [4], 1, 0)),
        Case("a random model", (_table_step(rng.dirichlet(np.ones(6), size=6)), [5], 4, 0)),
        Case("a peaked random model", (_table_step(rng.dirichlet(np.full(6, 0.3), size=6)), [5],
                                       5, 0)),
    ]


def _best_first_compare(got, expected) -> str | None:
    try:
        tokens, score = tuple(int(t) for t in got[0]), float(got[1])
    except (TypeError, ValueError, IndexError):
        return "return (tokens, score) of the best complete hypothesis"
    if tokens != expected[0]:
        return f"expected {expected[0]} (log-prob {expected[1]:.4f}), got {tokens}"
    if not math.isclose(score, expected[1], rel_tol=1e-6, abs_tol=1e-9):
        return f"score: expected {expected[1]:.6f}, got {score:.6f}"
    return None


def _best_first_explain(case: Case, got, expected) -> str | None:
    step, start, max_len, eos = case.args
    try:
        tokens = tuple(int(t) for t in got[0])
    except (TypeError, ValueError, IndexError):
        return None
    n_start = len(start)
    complete = (len(tokens) > n_start and tokens[-1] == eos) or len(tokens) - n_start == max_len
    if not complete:
        return ("you returned a hypothesis that is not complete: stop only when the popped "
                "hypothesis ends in eos or has max_len generated tokens")
    if len(tokens) - n_start > max_len:
        return f"a hypothesis may have at most max_len = {max_len} generated tokens"
    for width in (1, 2, 3):
        beam = beam_search(step, start, width, max_len, eos)[0]
        if beam.tokens == tokens and beam.tokens != expected[0]:
            return (f"that is what a beam of width {width} finds; exact search must not prune: "
                    "keep every partial hypothesis in the queue")
    return None


register(
    "best_first_decode",
    reference=best_first_decode,
    cases=_best_first_cases,
    compare=_best_first_compare,
    explain=_best_first_explain,
    hint="a priority queue ordered by score: pop the best partial hypothesis; if it is "
         "complete it beats everything left, since extending can only lower a score",
)
