"""Exercises of lesson 15 (search and decoding).

Build it: ``uct_score``, ``path_values`` (whose win is it, on the way up), ``mcts`` (the whole
search), ``top_p_filter`` and ``beam_search``. Exercises: ``visit_policy`` (AlphaZero's
move distribution), ``length_normalised`` (beam scores divided by length), ``best_of_n_probs``
(the exact distribution of best-of-n) with ``best_of_n_kl_limit`` (where its KL levels off
under a 0/1 verifier), and ``best_first_decode`` (exact decoding, which beam search
approximates) with ``best_first_why``.

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
        # inside a tree a node was visited once before it had children: N = sum(n) + 1
        Case("a node inside the tree: N is one more than its children's visits",
             ([0.2, -0.1, 0.4], [3, 5, 2], 11, 1.5)),
        # ln 1 = 0: a formula that divides by n = 0 gives 0/0 = NaN here, not +inf
        Case("a node visited once: N = 1, one child tried", ([0.5, 0.0, 0.0], [1, 0, 0], 1, 2.0)),
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
    if unvisited.any() and np.isnan(got[unvisited]).any():
        return ("an unvisited child scored NaN: with N = 1, ln N / n is 0 / 0. Do not divide by "
                "n = 0 and hope for +inf; give every unvisited child +inf explicitly")
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
        "use ln N, not ln(N + 1): N is the parent's visit count itself":
            qs + c * np.sqrt(math.log(float(parent) + 1.0) / ns),
        "N in ln N is the parent's visit count, the same for every child, not the child's own":
            qs + c * np.sqrt(np.log(ns) / ns),
        "use the parent_visits you are given for N, not the sum of the children's visits: "
        "inside a tree a node was visited once before it had any children, so N = sum(n) + 1":
            qs + c * np.sqrt(math.log(max(n.sum(), 1.0)) / ns),
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
    # Each case is graded on two paths, path_length and path_length + 1 nodes (see _path_call):
    # alternating from the wrong end agrees with the right answer on every path of odd length,
    # so only a pair of lengths tells it from a wrong parity.
    return [
        Case("a win at the leaf itself, paths of 3 and 4 nodes", (1.0, 0, 3)),
        Case("one rollout move, paths of 3 and 4 nodes", (1.0, 1, 3)),
        Case("two rollout moves, paths of 4 and 5 nodes", (1.0, 2, 4)),
        Case("a draw stays a draw, paths of 2 and 3 nodes", (0.0, 3, 2)),
        Case("five rollout moves, paths of 2 and 3 nodes", (1.0, 5, 2)),
        Case("the root alone is the leaf, then a path of 2", (1.0, 4, 1)),
    ]


def _path_call(fn, reward, rollout_moves, path_length):
    return (fn(reward, rollout_moves, path_length), fn(reward, rollout_moves, path_length + 1))


def _path_explain(case: Case, got, expected) -> str | None:
    reward, moves, length = case.args
    try:
        got = [np.asarray(g, dtype=float).reshape(-1) for g in got]
    except (TypeError, ValueError):
        return "return an array of values, one per node of the path"
    for g, n in zip(got, (length, length + 1)):
        if g.size != n:
            return f"return one value per node on the path: {n} values for a path of {n}, root first"
    flipped = [_same(g, -e) and not _same(g, e) for g, e in zip(got, expected)]
    right = [_same(g, e) for g, e in zip(got, expected)]
    if any(n > 1 and _same(np.abs(g), np.abs(e)) and np.ptp(g) == 0 and np.ptp(e) > 0
           for g, e, n in zip(got, expected, (length, length + 1))):
        return ("every node got the same value: in a two-player game flip the sign at each "
                "level, each node holds the outcome for the player who moved into it")
    if all(flipped):
        return ("every sign is flipped: the *leaf* holds the outcome for the player who moved "
                "into it (after an even number of rollout moves, zero included, that is the "
                "last mover); check the rollout's parity")
    if any(flipped) and any(right):
        return ("right on the path of odd length, every sign flipped on the even one: you "
                "alternated the signs from the root (or listed the values leaf first). The leaf's "
                "value is fixed by the rollout; the signs alternate from the leaf up, and the list "
                "goes root first, so the root gets the leaf's value times (-1)^(path_length - 1)")
    return None


register(
    "path_values",
    reference=path_values,
    cases=_path_cases,
    call=_path_call,
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
    the minimax-optimal moves, the legal moves, the budget and, on the positions where the whole
    visit distribution is compared, a correct search's mean visit shares and the largest total
    variation allowed."""

    def __new__(cls, items, info=None):
        self = super().__new__(cls, items)
        self.info = info
        return self


# Positions where the reader's visit distribution is compared with a correct search's (the mean
# over _TV_SEEDS seeds of rc.mcts): state -> the largest total variation allowed. Measured at 1000
# simulations, correct searches with their own random streams stay below 0.23 (200 seeds each),
# while a search that never counts the root's visits (no exploration at the root) or takes ln of
# the child's own visits lands at 0.3-0.9: it piles its visits on a few moves.
_TV_LIMIT: dict = {}
_TV_SEEDS = 8
_REFERENCE_SHARES: dict = {}  # (state, simulations, c) -> mean visit shares


def _shares(visits: dict, keys) -> np.ndarray:
    counts = np.array([float(visits.get(k, 0)) for k in keys])
    return counts / max(counts.sum(), 1.0)


def _total_variation(a, b) -> float:
    return float(0.5 * np.abs(np.asarray(a) - np.asarray(b)).sum())


def _mean_shares(state, simulations, c) -> np.ndarray:
    """Mean visit shares of ``rc.mcts`` over _TV_SEEDS seeds (cached)."""
    key = (state, simulations, c)
    if key not in _REFERENCE_SHARES:
        keys = _GAME.legal_actions(state)
        _REFERENCE_SHARES[key] = np.mean(
            [_shares(mcts(state, *_FNS, simulations=simulations, c=c, seed=s).visits, keys)
             for s in range(_TV_SEEDS)], axis=0)
    return _REFERENCE_SHARES[key]


def _mcts_reference(state, legal_actions, apply, is_terminal, reward, simulations, c=2.0,
                    seed=0):
    """``(action, visits)`` of a correct search, with the facts the checker judges by."""
    result = mcts(state, legal_actions, apply, is_terminal, reward, simulations=simulations,
                  c=c, seed=seed)
    cache = _MINIMAX_CACHE if isinstance(state, TicTacToeState) else {}
    q = minimax_values(state, legal_actions, apply, is_terminal, reward, cache=cache)
    info = {"optimal": {a for a, v in q.items() if v == max(q.values())},
            "legal": list(legal_actions(state)), "simulations": simulations, "c": c,
            "state": state}
    if isinstance(state, TicTacToeState) and state in _TV_LIMIT:
        info["tv_limit"] = _TV_LIMIT[state]
        info["shares"] = _mean_shares(state, simulations, c)
    return _Judged((result.action, dict(result.visits)), info)


def _mcts_cases() -> list[Case]:
    # positions with one clearly right move that 500 simulations of any correct MCTS find
    cases = [
        ("X wins at once rather than blocking", [0, 3, 1, 4]),
        ("O must block the top row", [0, 4, 1]),
        ("X forks: two threats at once", [0, 1, 4, 8]),
        ("O must block the diagonal", [0, 2, 4]),
    ]
    # Quiet positions, searched with 1000 simulations, where the whole visit distribution is
    # compared too. A correct search finds the right move on each (200 of 200 random streams);
    # a search that reads the rollout's outcome from the wrong player's view (no parity
    # conversion, Step 2) finds it on about 1 in 40, and on the fork threat the visits of a
    # search that hardly explores at the root pile up on one move.
    quiet = [
        ("O, X on two edges beside O's edge: only the corners 2 and 8 hold", [1, 3, 5]),
        ("O, X on two edges around O's edge: only the corners 0 and 6 hold", [3, 5, 7]),
        ("O, X on opposite corners around O's centre: the visits spread over the edges",
         [0, 4, 8]),
    ]
    for _, moves in quiet:
        _TV_LIMIT[_after(moves)] = 0.3
    return [Case(label, (_after(moves), *_FNS, 500), {"c": 2.0, "seed": 7})
            for label, moves in cases] + [
        Case(label, (_after(moves), *_FNS, 1000), {"c": 2.0, "seed": 7})
        for label, moves in quiet] + [
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


# A one-move game: move 0 wins (1.0 for the player who makes it), move 1 gives 0.0. Every node
# below the root is a leaf, so only the value the backup gives the leaf itself tells them apart.
_ONE_MOVE = (
    lambda s: [0, 1],
    lambda s, a: s + (a,),
    lambda s: len(s) == 1,
    lambda s: 1.0 if s == (0,) else 0.0,
)


def _share_of_first(result):
    """The share of move 0 in a reader's ``(action, visits)``, or None if it is malformed."""
    visits = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    try:
        total = float(sum(visits.values()))
        return float(visits.get(0, 0)) / total if total > 0 else None
    except (TypeError, ValueError, AttributeError):
        return None


def _most_visited(result):
    """The most visited move of a reader's ``(action, visits)``, or None if it is malformed."""
    visits = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    try:
        return max(visits, key=visits.get)
    except (TypeError, ValueError, AttributeError):
        return None


def _mcts_call(fn, *args, **kwargs):
    """Run the search on the case, and on two probes of its signs (their most visited moves,
    not the returned ones, which may be the mistake). In the two-move game every search that
    flips the sign visits 1 most (100 of 100 random streams, with or without the mistakes that
    only hurt exploration), and every search without the flip visits 0 most. Where X can win at
    once (cell 2), a search whose values all have the wrong sign avoids the win. In the one-move
    game a correct search gives the winning move 0 most of its visits (more than 90% at c = 1,
    100 simulations); a search whose leaf gets no value, or whose rollout starts from the parent,
    splits them about evenly; one with the leaf's sign wrong gives 0 the fewest."""
    result = fn(*args, **kwargs)
    probes = (_most_visited(fn((), *_TWO_MOVES, 400, c=1.0, seed=7)),
              _most_visited(fn(_after([0, 3, 1, 4]), *_FNS, 200, c=2.0, seed=7)),
              _share_of_first(fn((), *_ONE_MOVE, 100, c=1.0, seed=7)))
    return result, probes


def _mcts_compare(got, expected) -> str | None:
    got, expected = got[0], expected[0].info
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
    if "tv_limit" in expected:
        tv = _total_variation(_shares(visits, expected["legal"]), expected["shares"])
        if tv > expected["tv_limit"]:
            return (f"your visit counts are far from a correct search's (total variation "
                    f"{tv:.2f} > {expected['tv_limit']} from the mean of {_TV_SEEDS} searches)")
    return None


class _VariantNode:
    __slots__ = ("state", "visits", "total", "untried", "children")

    def __init__(self, state):
        self.state, self.visits, self.total, self.children = state, 0, 0.0, {}
        self.untried = [] if _GAME.is_terminal(state) else _GAME.legal_actions(state)


def _variant_shares(state, simulations, c, seeds=range(4), parity=True) -> np.ndarray:
    """Mean visit shares of a plain UCT search with one switch: ``parity=False`` reads the
    rollout's outcome as if it were from the view of the player who moved into the leaf."""
    keys = _GAME.legal_actions(state)
    out = []
    for seed in seeds:
        draw = np.random.default_rng(10_000 + seed)
        root = _VariantNode(state)
        for _ in range(simulations):
            node, path = root, [root]
            while not node.untried and node.children:
                log_n = math.log(node.visits)
                node = max(node.children.values(),
                           key=lambda k: k.total / k.visits + c * math.sqrt(log_n / k.visits))
                path.append(node)
            if node.untried:
                a = node.untried.pop(int(draw.integers(len(node.untried))))
                node.children[a] = _VariantNode(_GAME.apply(node.state, a))
                node = node.children[a]
                path.append(node)
            leaf, moves = node.state, 0
            while not _GAME.is_terminal(leaf):
                actions = _GAME.legal_actions(leaf)
                leaf = _GAME.apply(leaf, actions[int(draw.integers(len(actions)))])
                moves += 1
            value = _GAME.reward(leaf)
            if parity and moves % 2 == 1:
                value = -value
            for m in reversed(path):
                m.visits += 1
                m.total += value
                value = -value
        out.append(_shares({a: k.visits for a, k in root.children.items()}, keys))
    return np.mean(out, axis=0)


def _mcts_explain(case: Case, got, expected) -> str | None:
    (got, (two_move, win_now, one_move)), info = got, expected[0].info
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict)) or \
            sorted(got[1]) != sorted(info["legal"]):
        return None  # compare's message says what is malformed
    wrong_sign = ("the values have the wrong sign, on every path or on some. Roll out from the "
                  "node just expanded (not from its parent); the leaf's value must be the "
                  "outcome for the player who moved into the leaf: reward(s) is for "
                  "whoever made the rollout's last move, the same player after an even number "
                  "of rollout moves (zero included); then the sign flips at each level from the "
                  "leaf up, not from the root down")
    if one_move is not None and one_move < 0.35:
        return (f"your search avoids a move that wins at once (in a one-move game where move 0 "
                f"wins, it gives 0 only {one_move:.0%} of its visits): " + wrong_sign)
    if one_move is not None and one_move <= 0.65:
        return (f"your search cannot tell a winning move from a losing one even when the move "
                f"ends the game (in a one-move game where move 0 wins and 1 loses, it gives 0 "
                f"{one_move:.0%} of its visits): the value never reaches the node just expanded. "
                "Either the backup skips the leaf (every node on the path, the leaf included, "
                "gets a value), or the rollout starts from the parent instead of the new child")
    if two_move == 0:  # in the two-move game only a search without the sign flip prefers 0
        return ("your search plays like one *without the sign flip* (in the two-move game it "
                "visits 0 most, where the opponent then takes 1.0): your backup adds the opponent's "
                "wins as if they were yours, so the search helps the opponent")
    if win_now is not None and win_now != 2:
        return ("your search avoids its own wins (where X can win at once at 2, it visits "
                f"{win_now} most): " + wrong_sign)
    if "tv_limit" not in info:
        return None
    action, visits = got
    state, sims, c = info["state"], info["simulations"], info["c"]
    share = _shares(visits, info["legal"])
    tv_ref = _total_variation(share, info["shares"])
    tv_no_parity = _total_variation(share, _variant_shares(state, sims, c, parity=False))
    if tv_no_parity < min(0.1, tv_ref):
        return ("your visits look like a search's that reads the rollout's outcome from the "
                "wrong player's view: reward(leaf) is for whoever made the rollout's *last* move; "
                "convert it to the view of the player who moved into the leaf node (negate it "
                "after an odd number of rollout moves, Step 2) before backing it up")
    if tv_ref > info["tv_limit"]:
        return (f"your search hardly explores: {max(share):.0%} of the visits went to one move "
                f"(a correct search gives it {info['shares'][int(np.argmax(share))]:.0%}). The "
                "usual causes: the exploration term is missing or wrong (it is c * sqrt(ln N / n), "
                "with the c passed in, not 0 or a constant of your own, and the square root "
                "over the whole ratio); the root's own visit count is never increased, so ln N "
                "stays 0 at the root; or ln takes the child's visits instead of the parent's N")
    return None


register(
    "mcts",
    reference=_mcts_reference,
    cases=_mcts_cases,
    call=_mcts_call,
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
        # 0.5 + 0.3 = 0.8 = p: the two tokens reach p, so the rule keeps two; a floating-point
        # sum can land a hair on either side of p, so keeping the third is accepted too
        Case("mass exactly p (a tie: two or three tokens accepted)",
             (np.log([0.05, 0.5, 0.15, 0.3]), 0.8)),
        Case("tiny p keeps the top token", (np.log([0.2, 0.3, 0.5]), 0.01)),
        # below any tie slack: `mass_before < p - 1e-9` keeps nothing unless the top token is
        # kept explicitly (issue 12: rc.top_p_filter itself once returned an all -inf row here)
        Case("p = 1e-12, below any rounding slack: still the top token",
             (np.log([0.2, 0.3, 0.5]), 1e-12)),
        Case("p = 1 keeps everything", (np.array([0.0, -1.0, 2.0]), 1.0)),
        Case("unnormalised logits", (np.array([3.0, 1.0, 2.5, -1.0, 0.0]), 0.6)),
        Case("large logits: exp(1000) overflows", (np.array([1000.0, 999.0, 990.0, 998.0]), 0.9)),
        Case("a batch of rows", (rng.normal(size=(3, 6)), 0.9)),
    ]


_TIE = 1e-9  # top_p_filter's slack: a mass within this of p counts as reaching p


class _Filtered(np.ndarray):
    """The reference's filtered logits, plus ``alternative``: the same with the tied token
    kept too, when the mass before some token equals p up to rounding (else None)."""

    alternative = None


def _top_p_reference(logits, p):
    out = top_p_filter(logits, p).view(_Filtered)
    x = np.asarray(logits, dtype=float)
    probs = np.exp(x - x.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    order = np.argsort(-probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    tied_ranked = np.abs(np.cumsum(ranked, axis=-1) - ranked - p) <= _TIE
    if p < 1.0 and tied_ranked.any():
        tied = np.zeros_like(tied_ranked)
        np.put_along_axis(tied, order, tied_ranked, axis=-1)
        out.alternative = np.where(tied, x, np.asarray(out))
    return out


def _top_p_compare(got, expected) -> str | None:
    reason = default_compare(got, np.asarray(expected))
    if reason and expected.alternative is not None and \
            default_compare(got, expected.alternative) is None:
        return None
    return reason


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
    if np.isnan(got).any() or not np.isfinite(got).any(axis=-1).all():
        big = np.max(np.asarray(case.args[0], dtype=float)) > 700
        tiny = case.args[1] < 1e-6
        return ("a row kept no token (or got NaN): the most likely token is always kept"
                + ("; with a p this small a tie slack (mass before < p - eps) drops even the "
                   "top token: keep it explicitly" if tiny else "")
                + ("; here exp(logit) overflows to inf and inf / inf is NaN: subtract the "
                   "largest logit before exp (a stable softmax)" if big else ""))
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
    reference=_top_p_reference,
    cases=_top_p_cases,
    compare=_top_p_compare,
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


# A finished hypothesis takes a place in the beam: with width 2, <eos> after 9 (0.5) and B = 1
# (0.3) are kept and C = 2 (0.2) is pruned, so the second answer is 9 1 <eos> (0.15). Hugging
# Face's convention sets 9 <eos> aside and keeps two live beams, B and C, and finds 9 2 <eos>
# (0.2) instead.
TAKES_A_PLACE = {
    (9,): {0: 0.5, 1: 0.3, 2: 0.2},
    (9, 1): {0: 0.5, 3: 0.5},
    (9, 2): {0: 1.0},
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
        Case("a finished hypothesis takes one of the beam's places",
             (_tree_step(TAKES_A_PLACE, 10), [9], 2, 2, 0)),
    ]


def _as_hypotheses(got):
    """``got`` as a list of (tuple of ints, float), or None if it is not a list of pairs."""
    try:
        return [(tuple(int(t) for t in h[0]), float(h[1])) for h in got]
    except (TypeError, ValueError, IndexError):
        return None


def _beam_compare(got, expected) -> str | None:
    hyps = _as_hypotheses(got)
    if hyps is None:
        return "return a list of (tokens, score) pairs, best first"
    if len(hyps) != len(expected):
        return (f"expected {len(expected)} hypotheses, got {len(hyps)}: "
                f"expected {[h.tokens for h in expected]}, got {[h[0] for h in hyps]}")
    for i, ((tokens, score), want) in enumerate(zip(hyps, expected)):
        if tokens != want.tokens:
            return (f"hypothesis {i}: expected {want.tokens} (log-prob {want.score:.4f}), "
                    f"got {tokens}")
        if not math.isclose(score, want.score, rel_tol=1e-6, abs_tol=1e-9):
            return f"hypothesis {i} {tokens}: expected score {want.score:.6f}, got {score:.6f}"
    return None


def _beam_set_aside(step, start, width, max_len, eos) -> list:
    """Hugging Face's convention: ``width`` *live* beams at every step; a candidate ending in
    eos that ranks among the ``width`` best is set aside as finished and takes no place."""
    live, finished = [(tuple(start), 0.0)], []
    for _ in range(max_len):
        candidates = []
        for tokens, score in live:
            logp = np.asarray(step(tokens), dtype=float)
            candidates += [(tokens + (v,), score + logp[v]) for v in range(logp.size)
                           if logp[v] > -np.inf]
        candidates.sort(key=lambda h: -h[1])
        live = []
        for rank, h in enumerate(candidates):
            if h[0][-1] == eos:
                if rank < width:
                    finished.append(h)
            elif len(live) < width:
                live.append(h)
        if not live:
            break
    return sorted(finished + live, key=lambda h: -h[1])[:width]


def _beam_explain(case: Case, got, expected) -> str | None:
    step, start, width, max_len, eos = case.args
    hyps = _as_hypotheses(got)
    if hyps is None:
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
    tokens_got = [h[0] for h in hyps]
    aside = [h[0] for h in _beam_set_aside(step, start, width, max_len, eos)]
    if tokens_got == aside and aside != [h.tokens for h in expected]:
        return ("you keep beam_width *live* hypotheses and set the finished ones aside (Hugging "
                "Face's convention); here a finished hypothesis competes for the beam: it takes "
                "one of the beam_width places as long as it is among the best")
    unfinished = [h for h in hyps if h[0][-1] != eos and len(h[0]) - n_start < max_len]
    if hyps[0][0] == expected[0].tokens and unfinished:
        return (f"you stopped while {unfinished[0][0]} was still growing: stop only when every "
                "kept hypothesis is finished or max_len tokens are generated, not when the best "
                "one is")
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
    compare=_beam_compare,
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
        # (500 / 2000) ** 1000 underflows to 0: dividing by the total, not the largest count,
        # gives 0 / 0 here (700 / 2000 and 800 / 2000 underflow too)
        Case("T = 0.001 on counts in the hundreds", ([700, 800, 500], 0.001)),
        # (799/800)^(1/0.005) = 0.78: a small T on nearly tied counts is far from T = 0
        Case("a small T on nearly tied counts", ([799, 800, 100], 0.005)),
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
        if t > 0:
            with np.errstate(all="ignore"):
                by_total = (n / n.sum()) ** (1.0 / t)
            if not np.isfinite(by_total / by_total.sum()).all():
                return ("your probabilities are not finite: for a small T even the shares "
                        "N / sum(N) underflow to 0 when raised to the power 1 / T, and 0 / 0 is "
                        "NaN. Divide by the *largest* count before the power: the most visited "
                        "move then has weight exactly 1 (or work with T-scaled log counts)")
        return ("your probabilities are not finite: at T = 0 take the limit (the most visited "
                "moves), and for a small T scale the counts by the largest one before the power")
    if not np.isclose(got.sum(), 1.0):
        return "normalise: the probabilities must sum to 1"
    if t > 0 and _same(got, n**t / (n**t).sum()):
        return "the exponent is 1 / T, not T: a small temperature must sharpen the distribution"
    top = (n == n.max()) / (n == n.max()).sum()
    if t > 0 and _same(got, top) and not _same(top, expected):
        return ("all the mass on the most visited move, but a small temperature is not T = 0: "
                "nearly tied counts keep comparable mass ((N_a / N_max) ** (1 / T) is far from 0 "
                "here); only T = 0 itself is the argmax. (A softmax of N / T also collapses "
                "like this; AlphaZero's rule is the power 1 / T.)")
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
            return ("the length counts every generated token, the final <eos> included (as "
                    "recent transformers versions count it when a beam finishes)")
        if agrees(lambda k, s: s / ((5 + len(k) - start_len) / 6) ** alpha):
            return ("that is GNMT's length penalty ((5 + |y|) / 6)^alpha (Wu et al., 2016); "
                    "Hugging Face's generate, and this exercise, divide by |y|^alpha")
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
    levels, level_of = np.unique(r, return_inverse=True)
    level_mass = np.bincount(level_of, weights=expected, minlength=levels.size)
    members = np.bincount(level_of, minlength=levels.size)
    even = level_mass[level_of] / members[level_of]
    if not _same(even, expected) and _same(got, even):
        return ("within a reward level, share the level's probability in proportion to p, not "
                "evenly: the kept outcome is the first draw to reach the level, an ordinary draw "
                "from it")
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


def _kl_limit_reference() -> float:
    """The limit of KL(best-of-n || base) as n grows, for 1000 equally likely answers and a 0/1
    verifier that passes 200 of them: all the mass ends on the right answers, in the base's
    proportions (uniform over the 200), so the KL tends to log(1000 / 200) = log 5."""
    return math.log(5.0)


def _as_number(got):
    try:
        value = float(got)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _kl_limit_compare(got, expected) -> str | None:
    value = _as_number(got)
    if value is None:
        return f"answer with a number of nats, got {got!r}"
    return None if abs(value - expected) < 0.01 else f"not {value:.3f}"


def _kl_limit_explain(case: Case, got, expected) -> str | None:
    value = _as_number(got)
    if value is None:
        return "answer with a number (in nats), e.g. 0.5"
    if abs(value - math.log(1000)) < 0.05:
        return ("log 1000 is the KL of putting all the mass on a single answer; the verifier "
                "cannot tell the 200 right answers apart, so best-of-n keeps the base's "
                "proportions among them")
    if abs(value - math.log(1 / 0.8)) < 0.05:
        return "the mass ends on the answers the verifier *passes* (20% of the base), not on the others"
    if value > 3:
        return ("the bound log n - (n - 1)/n grows without limit, but with a 0/1 verifier the "
                "KL levels off: where does all the mass go as n grows, and in what proportions?")
    return None


register(
    "best_of_n_kl_limit",
    reference=_kl_limit_reference,
    cases=[Case("the KL of best-of-n with a verifier, as n grows without limit")],
    compare=_kl_limit_compare,
    explain=_kl_limit_explain,
    hint="as n grows, where does best-of-n put all its mass, and in what proportions within it? "
         "KL to the base is then a log of one probability",
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


def _best_first_stop_on_push(step, start, max_len, eos, best_extension=False):
    """The usual slip: stop as soon as a complete hypothesis is *pushed* (the first complete
    extension in token order, or the best complete extension of the popped hypothesis)."""
    start = tuple(int(t) for t in start)
    queue = [(0.0, start)]
    while queue:
        neg, tokens = heapq.heappop(queue)
        logp = np.asarray(step(tokens), dtype=float)
        done = []
        for v in np.flatnonzero(logp > -np.inf):
            new = tokens + (int(v),)
            if new[-1] == eos or len(new) - len(start) == max_len:
                if not best_extension:
                    return new
                done.append((neg - float(logp[v]), new))
            heapq.heappush(queue, (neg - float(logp[v]), new))
        if done:
            return min(done)[1]
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
    pushed = any(tokens == _best_first_stop_on_push(step, start, max_len, eos, best)
                 for best in (False, True))
    width = next((w for w in (1, 2, 3)
                  if beam_search(step, start, w, max_len, eos)[0].tokens == tokens), None)
    if tokens == expected[0] or not (pushed or width):
        return None
    stop = ("you stopped when a complete hypothesis was *pushed*; it is optimal only when it is "
            "*popped*: until then a partial hypothesis still in the queue scores higher and may "
            "extend to something better")
    prune = (f"that is what a beam of width {width} finds; exact search must not prune: keep "
             "every partial hypothesis in the queue")
    if pushed and width:
        return (f"that is what a beam of width {width} finds, and also what stopping as soon as a "
                "complete hypothesis is *pushed* finds: exact search must neither prune nor stop "
                "before a complete hypothesis is *popped*")
    return stop if pushed else prune


def _best_first_why_reference() -> str:
    return "a"


_BEST_FIRST_WHY = {
    "b": ("a shorter sequence does not always score higher: each token's log-probability "
          "can be near 0 on one branch and very negative on another"),
    "c": ("a width-1 beam prunes: on the lesson's branching model it finds a worse answer than "
          "exact search, so agreeing with it proves nothing"),
}


def _letter(got):
    """The letter of a multiple-choice answer: 'a', ' A ', '(a)', 'a)' and 'a.' are all 'a'."""
    return got.strip().strip("().").strip().lower() if isinstance(got, str) else None


register(
    "best_first_why",
    reference=_best_first_why_reference,
    cases=[Case("your choice")],
    compare=lambda got, expected: None if _letter(got) == expected else f"not {got!r}",
    explain=lambda case, got, expected: _BEST_FIRST_WHY.get(
        _letter(got), "answer with one of the letters 'a', 'b' or 'c'"),
    hint="compare the complete hypothesis you pop with every hypothesis still in the queue: "
         "what can extending one of them do to its score?",
)


register(
    "best_first_decode",
    reference=best_first_decode,
    cases=_best_first_cases,
    compare=_best_first_compare,
    explain=_best_first_explain,
    hint="a priority queue ordered by score: pop the best hypothesis; stop if it is complete, "
         "else push each of its extensions with its new score",
)
