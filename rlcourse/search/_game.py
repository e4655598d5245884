"""Checks of the game functions that ``mcts`` and minimax take (the protocol of ``rc.TicTacToe``:
``legal_actions(state)``, ``apply(state, action)``, ``is_terminal(state)``, ``reward(state)``).

A state is opaque to the search, so the functions are checked where they are used: each must be
callable; at the root, ``is_terminal(state)`` must answer True or False (an error raised inside
it there means ``state`` is not a state of this game); ``legal_actions`` must return a sequence
of actions, non-empty at a non-terminal state; ``apply`` must return a new state (not None, as
a function that changes the state in place does); ``reward`` must return a finite number.
"""

from __future__ import annotations

import math

import numpy as np

from ..core._checks import real_scalar

__all__ = ["check_game", "legal_list", "play", "game_reward"]

GAME_FUNCTIONS = ("legal_actions", "apply", "is_terminal", "reward")


def check_game(state, legal_actions, apply, is_terminal, reward) -> None:
    """Check the four functions and that ``is_terminal`` answers True or False at the root
    ``state`` (the caller then asks it whether the root is terminal)."""
    for name, fn in zip(GAME_FUNCTIONS, (legal_actions, apply, is_terminal, reward)):
        if not callable(fn):
            raise TypeError(f"{name}: expected a function of the game (e.g. game.{name}, the "
                            f"method), got {type(fn).__name__} {fn!r}")
    try:
        terminal = is_terminal(state)
    except (AttributeError, TypeError, KeyError, IndexError) as err:
        raise TypeError(f"state: is_terminal(state) failed with {type(err).__name__}: {err} "
                        f"(is {state!r} a state of this game?)") from err
    if not isinstance(terminal, (bool, np.bool_, int, np.integer)):
        raise TypeError(f"is_terminal: expected True or False, got {type(terminal).__name__} "
                        f"{terminal!r} for state {state!r}")


def legal_list(legal_actions, state) -> list:
    """``legal_actions(state)`` as a non-empty list (``state`` is not terminal; the list is read,
    never changed): any iterable of actions is accepted (a list, a tuple, a numpy array, a set,
    a generator)."""
    actions = legal_actions(state)
    if type(actions) is not list:  # the common case, a list, costs nothing more in a rollout
        if actions is None or isinstance(actions, (str, bytes)) or not hasattr(actions, "__iter__"):
            raise TypeError(f"legal_actions: expected a list of actions, got "
                            f"{type(actions).__name__} {actions!r} for state {state!r}")
        actions = list(actions)
    if not actions:
        raise ValueError(f"legal_actions: returned no actions for state {state!r}, which "
                         "is_terminal says is not terminal")
    return actions


def play(apply, state, action):
    """The move: ``apply(state, action)``, the new state (refused if it is None)."""
    child = apply(state, action)
    if child is None:
        raise TypeError(f"apply: returned None for action {action!r} at state {state!r}; it must "
                        "return the new state (and leave its input unchanged)")
    return child


def game_reward(reward, state) -> float:
    """``reward(state)`` as a finite float."""
    value = real_scalar("reward", reward(state))
    if not math.isfinite(value):
        raise ValueError(f"reward: expected a finite value, got {value} for state {state!r}")
    return value
