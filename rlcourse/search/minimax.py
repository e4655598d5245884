"""Exact game values by negamax over the whole game tree, memoised: the perfect player that
MCTS is measured against.

Games are given as plain functions over immutable states (the protocol of ``rc.TicTacToe``):
``legal_actions(state)``, ``apply(state, action) -> new state``, ``is_terminal(state)`` and
``reward(state)``, the latter from the view of the player who just moved into ``state``.
Nothing here copies a state: ``apply`` must return a new one and leave its input alone.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping

import numpy as np

from ..core._checks import check_count
from ._game import check_game, game_reward, legal_list, play

__all__ = ["minimax_values", "minimax_value", "perfect_action"]


def minimax_values(state, legal_actions, apply, is_terminal, reward, cache=None,
                   depth_limit: int = 100_000) -> dict:
    """Exact game value of every legal action at ``state``, for the player to move there.

    Negamax over the full game tree: an action leading to a terminal state is worth
    ``reward`` of that state; any other is worth minus the opponent's best value there.
    ``cache`` (a dict, reused across calls) memoises state values, so states must be hashable.
    The search is iterative (no recursion limit on long games); a game with a cycle (a state
    that can come back on a line of play) raises ``ValueError``, and so does a line of play
    longer than ``depth_limit`` moves (a game that may never end).
    """
    cache, depth_limit = _check_search(state, legal_actions, apply, is_terminal, reward, cache,
                                       depth_limit, "it has no actions to value")
    return {a: _action_value(play(apply, state, a), legal_actions, apply, is_terminal, reward,
                             cache, depth_limit)
            for a in legal_list(legal_actions, state)}


def minimax_value(state, legal_actions, apply, is_terminal, reward, cache=None,
                  depth_limit: int = 100_000) -> float:
    """Exact value of non-terminal ``state`` for the player to move (+1 win, 0 draw, -1 loss
    in tic-tac-toe), assuming both players play perfectly from here. ``cache`` and
    ``depth_limit`` as in :func:`minimax_values`."""
    cache, depth_limit = _check_search(state, legal_actions, apply, is_terminal, reward, cache,
                                       depth_limit, "its value is reward(state) for the last mover")
    return _state_value(state, legal_actions, apply, is_terminal, reward, cache, depth_limit)


def perfect_action(state, legal_actions, apply, is_terminal, reward, rng=None, cache=None,
                   depth_limit: int = 100_000):
    """An action of maximal minimax value: the first one, or a uniformly random one of the
    equally good actions when ``rng`` (a ``np.random.Generator``) is given."""
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator or None, got {type(rng).__name__}")
    q = minimax_values(state, legal_actions, apply, is_terminal, reward, cache, depth_limit)
    top = max(q.values())
    best = [a for a, v in q.items() if v == top]
    return best[0] if rng is None else best[int(rng.integers(len(best)))]


def _check_search(state, legal_actions, apply, is_terminal, reward, cache, depth_limit, why):
    check_game(state, legal_actions, apply, is_terminal, reward)
    if is_terminal(state):
        raise ValueError(f"state: is terminal; {why}")
    try:
        hash(state)
    except TypeError:
        raise TypeError(f"state: expected a hashable state (minimax memoises values by state), "
                        f"got {type(state).__name__} {state!r}") from None
    if cache is None:
        cache = {}
    elif not isinstance(cache, MutableMapping):
        raise TypeError(f"cache: expected a dict (state -> value) or None, got "
                        f"{type(cache).__name__}")
    return cache, check_count("depth_limit", depth_limit)


def _action_value(child, legal_actions, apply, is_terminal, reward, cache, depth_limit) -> float:
    if is_terminal(child):
        return game_reward(reward, child)
    return -_state_value(child, legal_actions, apply, is_terminal, reward, cache, depth_limit)


def _state_value(state, legal_actions, apply, is_terminal, reward, cache, depth_limit) -> float:
    """Negamax value of non-terminal ``state``, depth first with an explicit stack.

    No Python recursion, so a long game does not hit the recursion limit; a state that comes
    back on the line of play being searched (a cycle) is an error, since a game tree with
    cycles has no minimax value by backward induction, and so is a line of play longer than
    ``depth_limit`` (without it, a game whose states never repeat and never end would search
    forever).
    """
    if state in cache:
        return cache[state]
    # frames: [state, its actions, index of the next action to value, best value so far]
    frames = [[state, legal_list(legal_actions, state), 0, -math.inf]]
    on_line = {state}
    while frames:
        frame = frames[-1]
        node, actions, i, best = frame
        if i == len(actions):  # every action valued: the node is done
            cache[node] = best
            on_line.discard(node)
            frames.pop()
            if frames:
                frames[-1][3] = max(frames[-1][3], -best)
                frames[-1][2] += 1
            continue
        child = play(apply, node, actions[i])
        if is_terminal(child):
            frame[3] = max(best, game_reward(reward, child))
            frame[2] += 1
        elif child in cache:
            frame[3] = max(best, -cache[child])
            frame[2] += 1
        elif child in on_line:
            raise ValueError(
                f"apply: the game has a cycle: state {child!r} comes back on a line of play from "
                f"{state!r}; minimax needs a game in which every line of play ends")
        elif len(frames) >= depth_limit:
            raise ValueError(
                f"depth_limit: a line of play from {state!r} is longer than {depth_limit} moves "
                "without reaching a terminal state; the game (apply, is_terminal) may never end. "
                "Raise depth_limit if its games really are that long")
        else:
            on_line.add(child)
            frames.append([child, legal_list(legal_actions, child), 0, -math.inf])
    return cache[state]
