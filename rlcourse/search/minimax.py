"""Exact game values by negamax over the whole game tree, memoised: the perfect player that
MCTS is measured against.

Games are given as plain functions over immutable states (the protocol of ``rc.TicTacToe``):
``legal_actions(state)``, ``apply(state, action) -> new state``, ``is_terminal(state)`` and
``reward(state)``, the latter from the view of the player who just moved into ``state``.
Nothing here copies a state: ``apply`` must return a new one and leave its input alone.
"""

from __future__ import annotations

import math

__all__ = ["minimax_values", "minimax_value", "perfect_action"]


def minimax_values(state, legal_actions, apply, is_terminal, reward, cache=None) -> dict:
    """Exact game value of every legal action at ``state``, for the player to move there.

    Negamax over the full game tree: an action leading to a terminal state is worth
    ``reward`` of that state; any other is worth minus the opponent's best value there.
    ``cache`` (a dict, reused across calls) memoises state values, so states must be hashable.
    The search is iterative (no recursion limit on long games); a game with a cycle (a state
    that can come back on a line of play) raises ``ValueError``.
    """
    cache = {} if cache is None else cache
    if is_terminal(state):
        raise ValueError("state: is terminal; it has no actions to value")
    return {a: _action_value(apply(state, a), legal_actions, apply, is_terminal, reward, cache)
            for a in _actions_of(state, legal_actions)}


def minimax_value(state, legal_actions, apply, is_terminal, reward, cache=None) -> float:
    """Exact value of non-terminal ``state`` for the player to move (+1 win, 0 draw, -1 loss
    in tic-tac-toe), assuming both players play perfectly from here."""
    cache = {} if cache is None else cache
    if is_terminal(state):
        raise ValueError("state: is terminal; its value is reward(state) for the last mover")
    return _state_value(state, legal_actions, apply, is_terminal, reward, cache)


def perfect_action(state, legal_actions, apply, is_terminal, reward, rng=None, cache=None):
    """An action of maximal minimax value: the first one, or a uniformly random one of the
    equally good actions when ``rng`` (a ``np.random.Generator``) is given."""
    q = minimax_values(state, legal_actions, apply, is_terminal, reward, cache)
    top = max(q.values())
    best = [a for a, v in q.items() if v == top]
    return best[0] if rng is None else best[int(rng.integers(len(best)))]


def _actions_of(state, legal_actions) -> list:
    actions = list(legal_actions(state))
    if not actions:
        raise ValueError(f"legal_actions: returned no actions for non-terminal state {state!r}")
    return actions


def _action_value(child, legal_actions, apply, is_terminal, reward, cache) -> float:
    if is_terminal(child):
        return float(reward(child))
    return -_state_value(child, legal_actions, apply, is_terminal, reward, cache)


def _state_value(state, legal_actions, apply, is_terminal, reward, cache) -> float:
    """Negamax value of non-terminal ``state``, depth first with an explicit stack.

    No Python recursion, so a long game does not hit the recursion limit; a state that comes
    back on the line of play being searched (a cycle) is an error, since a game tree with
    cycles has no minimax value by backward induction.
    """
    if state in cache:
        return cache[state]
    # frames: [state, its actions, index of the next action to value, best value so far]
    frames = [[state, _actions_of(state, legal_actions), 0, -math.inf]]
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
        child = apply(node, actions[i])
        if is_terminal(child):
            frame[3] = max(best, float(reward(child)))
            frame[2] += 1
        elif child in cache:
            frame[3] = max(best, -cache[child])
            frame[2] += 1
        elif child in on_line:
            raise ValueError(
                f"the game has a cycle: state {child!r} comes back on a line of play from "
                f"{state!r}; minimax needs a game in which every line of play ends")
        else:
            on_line.add(child)
            frames.append([child, _actions_of(child, legal_actions), 0, -math.inf])
    return cache[state]
