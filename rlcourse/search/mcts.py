"""Monte Carlo tree search with UCT (Kocsis & Szepesvari, 2006) for one- and two-player games.

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

from ..core._checks import as_float_array, check_count

__all__ = ["MCTSResult", "uct_score", "mcts"]


class MCTSResult(NamedTuple):
    """What ``mcts`` found at the root.

    ``action`` is the most visited root action; ``visits`` maps every legal root action to its
    visit count (the counts sum to the number of simulations); ``values`` maps it to the mean
    backed-up value from the view of the player to move at the root (0.0 if never visited).
    """

    action: Any
    visits: dict
    values: dict


def uct_score(mean_values, visits, parent_visits, c: float = 1.4) -> np.ndarray:
    """UCT score of each child: ``Q + c * sqrt(ln N / n)``, and ``+inf`` where ``n == 0``.

    ``mean_values`` [K] and ``visits`` [K] describe the K children of one node; ``parent_visits``
    is N, that node's visit count. Unvisited children score ``+inf`` so that each is tried once
    before any child is tried twice. Returns float [K].
    """
    q = as_float_array("mean_values", mean_values, ndim=1)
    n = np.asarray(visits, dtype=np.float64)
    if n.shape != q.shape:
        raise ValueError(f"visits: expected shape {q.shape} (the shape of mean_values), "
                         f"got {n.shape}")
    if (n < 0).any():
        raise ValueError(f"visits: expected counts >= 0, got {n.min()}")
    if parent_visits < 0:
        raise ValueError(f"parent_visits: expected a count >= 0, got {parent_visits}")
    if c < 0:
        raise ValueError(f"c: expected an exploration constant >= 0, got {c}")
    score = np.full(q.shape, np.inf)
    seen = n > 0
    # ln N is 0 for N = 1; max(N, 1) keeps it defined if a caller passes N = 0 with n = 0 only
    explore = np.sqrt(math.log(max(parent_visits, 1)) / n[seen])
    score[seen] = q[seen] + c * explore
    return score


class _Node:
    """One tree node. ``total`` sums the values backed up through it, from the view of the
    player who moved into it (two-player) or of the single agent."""

    __slots__ = ("state", "terminal", "untried", "actions", "children", "visits", "total")

    def __init__(self, state, terminal: bool, actions: list):
        self.state = state
        self.terminal = terminal
        self.untried = list(actions)  # actions not yet expanded, in legal order
        self.actions: list = []  # expanded actions, parallel to children
        self.children: list[_Node] = []
        self.visits = 0
        self.total = 0.0


def mcts(
    state,
    legal_actions: Callable,
    apply: Callable,
    is_terminal: Callable,
    reward: Callable,
    simulations: int = 200,
    c: float = 1.4,
    rollout_depth: int | None = None,
    seed: int = 0,
    two_player: bool = True,
) -> MCTSResult:
    """Monte Carlo tree search with UCT from ``state``; returns ``MCTSResult``.

    Each simulation runs the four phases: *selection* follows the child with the highest
    ``uct_score`` while a node is fully expanded; *expansion* adds one untried child (chosen
    uniformly at random); *rollout* plays uniformly random moves to a terminal state or for at
    most ``rollout_depth`` moves; *backup* adds the outcome to every node on the path.

    Values: ``reward(s)`` scores the state where a simulation ends (a terminal state, or the
    state where ``rollout_depth`` cut the rollout). With ``two_player=True`` it is read from the
    view of the player who just moved into ``s``, and the sign flips at each level on the way
    up (negamax), so every node holds values for the player who chose it. With
    ``two_player=False`` a single agent makes every move and the value is backed up unchanged.

    Invariants: visits of the root actions sum to ``simulations``; the same ``seed`` gives the
    same result. The chosen action is the most visited one (ties: first in legal order).
    """
    simulations = check_count("simulations", simulations)
    if not c >= 0:
        raise ValueError(f"c: expected an exploration constant >= 0, got {c}")
    if rollout_depth is not None:
        rollout_depth = check_count("rollout_depth", rollout_depth, low=0)
    if is_terminal(state):
        raise ValueError("state: the root state is terminal; there is no move to search for")
    rng = np.random.default_rng(seed)
    root = _make_node(state, legal_actions, is_terminal)
    sign = -1.0 if two_player else 1.0

    for _ in range(simulations):
        path = _select_and_expand(root, c, rng, legal_actions, apply, is_terminal)
        leaf = path[-1]
        value = _rollout(leaf, rng, legal_actions, apply, is_terminal, reward, rollout_depth,
                         two_player)
        # value is from the view of whoever moved into the leaf; walk up, flipping for negamax
        for node in reversed(path):
            node.visits += 1
            node.total += value
            value *= sign

    stats = {a: (k.visits, k.total / k.visits) for a, k in zip(root.actions, root.children)}
    legal = list(legal_actions(state))
    visits = {a: stats.get(a, (0, 0.0))[0] for a in legal}
    values = {a: stats.get(a, (0, 0.0))[1] for a in legal}
    best = legal[int(np.argmax([visits[a] for a in legal]))]
    return MCTSResult(best, visits, values)


def _make_node(state, legal_actions, is_terminal) -> _Node:
    if is_terminal(state):
        return _Node(state, True, [])
    actions = list(legal_actions(state))
    if not actions:
        raise ValueError(
            "legal_actions: returned no actions for a state that is_terminal says is not "
            f"terminal: {state!r}"
        )
    return _Node(state, False, actions)


def _select_and_expand(root, c, rng, legal_actions, apply, is_terminal) -> list[_Node]:
    """Descend by UCT to a node with untried actions (or a terminal), expand one child there.
    Returns the path from the root to the new (or terminal) node."""
    node, path = root, [root]
    while not node.terminal and not node.untried:
        node = _uct_child(node, c)
        path.append(node)
    if node.untried:
        action = node.untried.pop(int(rng.integers(len(node.untried))))
        child = _make_node(apply(node.state, action), legal_actions, is_terminal)
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


def _rollout(leaf, rng, legal_actions, apply, is_terminal, reward, depth, two_player) -> float:
    """Random moves from ``leaf``; the outcome from the view of the player who moved into it."""
    state, moves = leaf.state, 0
    terminal = leaf.terminal
    while not terminal and (depth is None or moves < depth):
        actions = list(legal_actions(state))
        if not actions:
            raise ValueError(
                "legal_actions: returned no actions for a state that is_terminal says is not "
                f"terminal: {state!r}"
            )
        state = apply(state, actions[int(rng.integers(len(actions)))])
        terminal = is_terminal(state)
        moves += 1
    value = float(reward(state))
    if math.isnan(value):
        raise ValueError(f"reward: returned NaN for state {state!r}")
    # reward is for whoever made the last move; after an odd number of rollout moves that is
    # the opponent of the player who moved into the leaf
    return -value if two_player and moves % 2 == 1 else value
