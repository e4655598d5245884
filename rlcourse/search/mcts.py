"""Monte Carlo tree search for one- and two-player games: UCT (Kocsis & Szepesvari, 2006) and,
given a prior over moves, AlphaZero's PUCT rule (Silver et al., 2017).

Games are given as plain functions over immutable states (the protocol of ``rc.TicTacToe``):
``legal_actions(state)``, ``apply(state, action) -> new state``, ``is_terminal(state)`` and
``reward(state)``, the latter from the view of the player who just moved into ``state``.
Nothing here copies a state: ``apply`` must return a new one and leave its input alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..core._checks import as_float_array, as_rng, check_count, check_flag, check_nonnegative
from ._game import check_game, game_reward, legal_list, play

__all__ = ["MCTSResult", "uct_score", "puct_score", "mcts"]


class MCTSResult(NamedTuple):
    """What ``mcts`` found at the root.

    ``action`` is the most visited root action; ``visits`` maps every legal root action to its
    visit count (the counts sum to the number of simulations); ``values`` maps it to the mean
    backed-up value from the view of the player to move at the root (0.0 if never visited).
    """

    action: Any
    visits: dict
    values: dict


def _check_children(mean_values, visits, parent_visits, c):
    q = as_float_array("mean_values", mean_values, ndim=1)
    n = as_float_array("visits", visits).astype(np.float64)
    if n.shape != q.shape:
        raise ValueError(f"visits: expected shape {q.shape} (the shape of mean_values), "
                         f"got {n.shape}")
    if (n < 0).any():
        raise ValueError(f"visits: expected counts >= 0, got {n.min()}")
    check_count("parent_visits", parent_visits, low=0)
    check_nonnegative("c", c)
    return q, n


def uct_score(mean_values, visits, parent_visits, c: float = 2.0) -> np.ndarray:
    """UCT score of each child: ``Q + c * sqrt(ln N / n)``, and ``+inf`` where ``n == 0``.

    ``mean_values`` [K] and ``visits`` [K] describe the K children of one node; ``parent_visits``
    is N, that node's visit count. Unvisited children score ``+inf`` so that each is tried once
    before any child is tried twice. ``c`` is on the scale of the values: UCB1's ``sqrt(2)`` is
    for rewards in ``[0, 1]``; for game values in ``[-1, 1]`` (twice the range) the same bonus
    is ``2 sqrt(2)``, and ``mcts``'s default ``c = 2`` was chosen by an exhaustive check on
    tic-tac-toe. Returns float [K].
    """
    q, n = _check_children(mean_values, visits, parent_visits, c)
    score = np.full(q.shape, np.inf)
    seen = n > 0
    # ln N is 0 for N = 1; max(N, 1) keeps it defined if a caller passes N = 0 with n = 0 only
    explore = np.sqrt(math.log(max(parent_visits, 1)) / n[seen])
    score[seen] = q[seen] + c * explore
    return score


def puct_score(mean_values, priors, visits, parent_visits, c: float = 2.0) -> np.ndarray:
    """AlphaZero's PUCT score of each child: ``Q + c * P * sqrt(N) / (1 + n)``.

    ``mean_values`` [K] (pass 0 for an unvisited child, as AlphaZero does), ``priors`` [K] the
    prior probability P of each move (a policy network's, or any guess; >= 0), ``visits`` [K]
    and ``parent_visits`` N. Unlike UCT, an unvisited child is not tried first: its bonus is
    ``c * P * sqrt(N)``, so a move the prior dislikes may wait a long time. ``sqrt(N)`` is
    taken with N at least 1, so that at a fresh node the first visit goes to the most probable
    move. Returns float [K].
    """
    q, n = _check_children(mean_values, visits, parent_visits, c)
    p = as_float_array("priors", priors, ndim=1)
    if p.shape != q.shape:
        raise ValueError(f"priors: expected shape {q.shape} (the shape of mean_values), "
                         f"got {p.shape}")
    if (p < 0).any():
        raise ValueError(f"priors: expected probabilities >= 0, got {p.min()}")
    return q + c * p * math.sqrt(max(parent_visits, 1)) / (1.0 + n)


class _Node:
    """One tree node. ``total`` sums the values backed up through it, from the view of the
    player who moved into it (two-player) or of the single agent.

    UCT nodes expand one random untried action at a time (``untried``); PUCT nodes know all
    their actions and priors from the start and expand the child that selection picks.
    """

    __slots__ = ("state", "terminal", "untried", "actions", "children", "priors", "visits",
                 "total")

    def __init__(self, state, terminal: bool, actions: list, priors=None):
        self.state = state
        self.terminal = terminal
        self.untried = list(actions)  # UCT: actions not yet expanded, in legal order
        self.actions: list = []  # expanded actions, parallel to children (UCT); all (PUCT)
        self.children: list = []
        self.priors = priors
        if priors is not None:
            self.untried = []
            self.actions = list(actions)
            self.children = [None] * len(actions)
        self.visits = 0
        self.total = 0.0


class _Uniforms:
    """Uniform draws from a numpy Generator, fetched in blocks: one Generator call per random
    move would cost more than the rest of a simulation."""

    __slots__ = ("rng", "block", "i")

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.block: list = []
        self.i = 0

    def index(self, k: int) -> int:
        """A uniform integer in ``[0, k)``."""
        if self.i == len(self.block):
            self.block = self.rng.random(1024).tolist()
            self.i = 0
        u = self.block[self.i]
        self.i += 1
        return min(int(u * k), k - 1)


def mcts(
    state,
    legal_actions: Callable,
    apply: Callable,
    is_terminal: Callable,
    reward: Callable,
    simulations: int = 2000,
    c: float = 2.0,
    rollout_depth: int | None = None,
    seed: int = 0,
    two_player: bool = True,
    prior: Callable | None = None,
    rollout_limit: int = 100_000,
) -> MCTSResult:
    """Monte Carlo tree search from ``state``; returns ``MCTSResult``.

    Each simulation runs the four phases: *selection* descends by the children's scores;
    *expansion* adds one child; *rollout* plays uniformly random moves to a terminal state or
    for at most ``rollout_depth`` moves; *backup* adds the outcome to every node on the path.

    Selection. Without ``prior`` (UCT): while a node has untried actions, one of them, chosen
    uniformly at random, is expanded; once all are tried, the child with the highest
    ``uct_score`` is followed. With ``prior`` (PUCT, AlphaZero's rule): ``prior(state)`` returns
    the probabilities of ``legal_actions(state)``, in that order, for every node; the child with
    the highest ``puct_score`` (mean value 0 while unvisited) is followed, and expanded if it is
    new. ``c`` scales the exploration bonus of either rule.

    Values: ``reward(s)`` scores the state where a simulation ends (a terminal state, or the
    state where ``rollout_depth`` cut the rollout). With ``two_player=True`` it is read from the
    view of the player who just moved into ``s``, and the sign flips at each level on the way
    up (negamax), so every node holds values for the player who chose it. With
    ``two_player=False`` a single agent makes every move and the value is backed up unchanged.

    Games that may never end: the tree grows by one node per simulation and nothing recurses,
    so only a rollout can run forever. Without ``rollout_depth``, a rollout that has not reached
    a terminal state after ``rollout_limit`` moves raises ``ValueError`` (a cyclic game, or one
    far longer than expected): pass ``rollout_depth`` and a ``reward`` that scores the state
    where it stops. ``reward`` must be finite (a NaN or an infinite value is an error), and
    ``apply`` must return the new state (None, from a function that changed the state in place,
    is an error).

    Defaults: 2000 simulations and ``c = 2`` (for values in ``[-1, 1]``) play tic-tac-toe
    perfectly: at every position where it is to move in any game it can play from the start,
    as X or as O against every possible opponent, the search picks a move of the best minimax
    value (``tests/test_search.py`` checks this exhaustively for seeds 0, 1 and 2; seeds 0-9
    were checked when the defaults were chosen, and 200 simulations made mistakes).

    Invariants: visits of the root actions sum to ``simulations``; the same ``seed`` gives the
    same result. The chosen action is the most visited one (ties: first in legal order).
    """
    simulations = check_count("simulations", simulations)
    c = check_nonnegative("c", c)
    if rollout_depth is not None:
        rollout_depth = check_count("rollout_depth", rollout_depth, low=0)
    rollout_limit = check_count("rollout_limit", rollout_limit)
    rng = as_rng(seed)
    two_player = check_flag("two_player", two_player)
    if prior is not None and not callable(prior):
        raise TypeError(f"prior: expected a function state -> probabilities, got {prior!r}")
    check_game(state, legal_actions, apply, is_terminal, reward)
    if is_terminal(state):
        raise ValueError("state: the root state is terminal; there is no move to search for")
    draw = _Uniforms(rng)
    root = _make_node(state, legal_actions, is_terminal, prior)
    sign = -1.0 if two_player else 1.0

    for _ in range(simulations):
        if prior is None:
            path = _select_and_expand(root, c, draw, legal_actions, apply, is_terminal)
        else:
            path = _select_and_expand_puct(root, c, legal_actions, apply, is_terminal, prior)
        leaf = path[-1]
        value = _rollout(leaf, draw, legal_actions, apply, is_terminal, reward, rollout_depth,
                         two_player, rollout_limit)
        # value is from the view of whoever moved into the leaf; walk up, flipping for negamax
        for node in reversed(path):
            node.visits += 1
            node.total += value
            value *= sign

    stats = {a: (k.visits, k.total / k.visits)
             for a, k in zip(root.actions, root.children) if k is not None and k.visits}
    legal = legal_list(legal_actions, state)
    visits = {a: stats.get(a, (0, 0.0))[0] for a in legal}
    values = {a: stats.get(a, (0, 0.0))[1] for a in legal}
    best = legal[int(np.argmax([visits[a] for a in legal]))]
    return MCTSResult(best, visits, values)


def _make_node(state, legal_actions, is_terminal, prior=None) -> _Node:
    if is_terminal(state):
        return _Node(state, True, [], None if prior is None else [])
    actions = legal_list(legal_actions, state)
    if prior is None:
        return _Node(state, False, actions)
    return _Node(state, False, actions, _check_prior(prior(state), len(actions), state))


def _check_prior(p, k: int, state) -> list:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (k,):
        raise ValueError(f"prior: expected {k} probabilities (one per legal action of {state!r}), "
                         f"got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError(f"prior: expected finite probabilities >= 0, got {p} for {state!r}")
    return p.tolist()


def _select_and_expand(root, c, draw, legal_actions, apply, is_terminal) -> list[_Node]:
    """UCT: descend to a node with untried actions (or a terminal), expand one child there.
    Returns the path from the root to the new (or terminal) node."""
    node, path = root, [root]
    while not node.terminal and not node.untried:
        node = _uct_child(node, c)
        path.append(node)
    if node.untried:
        action = node.untried.pop(draw.index(len(node.untried)))
        child = _make_node(play(apply, node.state, action), legal_actions, is_terminal)
        node.actions.append(action)
        node.children.append(child)
        path.append(child)
    return path


def _uct_child(node: _Node, c: float) -> _Node:
    """The child maximising ``uct_score`` (first on ties) of a fully expanded node.

    Scalar Python rather than ``uct_score`` on arrays: with a handful of children per node the
    array overhead would dominate the search. Every child has been visited here, so no +inf.
    """
    log_n = math.log(node.visits)
    best, best_score = None, -math.inf
    for kid in node.children:
        score = kid.total / kid.visits + c * math.sqrt(log_n / kid.visits)
        if score > best_score:
            best, best_score = kid, score
    return best


def _select_and_expand_puct(root, c, legal_actions, apply, is_terminal, prior) -> list[_Node]:
    """PUCT: descend by ``puct_score`` (first on ties) until a new child is made or a terminal
    is reached. Returns the path from the root to that node."""
    node, path = root, [root]
    while not node.terminal:
        scale = c * math.sqrt(max(node.visits, 1))
        best, best_score = 0, -math.inf
        for i, kid in enumerate(node.children):
            if kid is None or kid.visits == 0:
                score = scale * node.priors[i]
            else:
                score = kid.total / kid.visits + scale * node.priors[i] / (1 + kid.visits)
            if score > best_score:
                best, best_score = i, score
        kid = node.children[best]
        if kid is None:  # a new child: expand it and stop
            state = play(apply, node.state, node.actions[best])
            kid = node.children[best] = _make_node(state, legal_actions, is_terminal, prior)
            path.append(kid)
            return path
        node = kid
        path.append(node)
    return path


def _rollout(leaf, draw, legal_actions, apply, is_terminal, reward, depth, two_player,
             limit=100_000) -> float:
    """Random moves from ``leaf``; the outcome from the view of the player who moved into it."""
    state, moves = leaf.state, 0
    terminal = leaf.terminal
    while not terminal and (depth is None or moves < depth):
        if depth is None and moves == limit:
            raise ValueError(
                f"rollout: no terminal state after rollout_limit = {limit} random moves from "
                f"{leaf.state!r}; the game (apply, is_terminal) may never end (a cycle). Pass "
                "rollout_depth, with a reward that scores the state where the rollout stops")
        actions = legal_list(legal_actions, state)
        state = play(apply, state, actions[draw.index(len(actions))])
        terminal = is_terminal(state)
        moves += 1
    value = game_reward(reward, state)
    # reward is for whoever made the last move; after an odd number of rollout moves that is
    # the opponent of the player who moved into the leaf
    return -value if two_player and moves % 2 == 1 else value
