"""TicTacToe for tree search: immutable, hashable states and pure functions on them.

A state is ``State(board, player)``: ``board`` a tuple of 9 ints (cells 0..8 row by row,
``1`` for X, ``-1`` for O, ``0`` empty) and ``player`` the one to move (X = 1 moves first).
Actions are cell indices. Every method is a pure function of its arguments, so
``game.legal_actions``, ``game.apply`` etc. can be passed to ``mcts`` as plain functions.

Tree search calls these functions millions of times, and there are only 5,478 legal boards, so
the winner and the empty cells of each board are computed once and kept in a module-level table.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

__all__ = ["TicTacToe", "TicTacToeState"]

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_SYMBOL = {1: "X", -1: "O", 0: "."}
_WINNER: dict[tuple, int] = {}  # board -> 1, -1 or 0, filled on first sight
_EMPTY: dict[tuple, tuple] = {}  # board -> its empty cells, in increasing order
_NEXT: dict[tuple, TicTacToeState] = {}  # (state, action) -> the state after that move


def _winner(board: tuple) -> int:
    w = _WINNER.get(board)
    if w is None:
        _check_board(board)
        w = 0
        for i, j, k in LINES:
            if board[i] != 0 and board[i] == board[j] == board[k]:
                w = board[i]
                break
        _WINNER[board] = w
    return w


def _check_board(board) -> None:
    """A board seen for the first time: a tuple of 9 cells, each 1, -1 or 0."""
    if type(board) is not tuple or len(board) != 9 or any(v not in (1, -1, 0) for v in board):
        raise ValueError(f"state: expected a board of 9 cells, each 1 (X), -1 (O) or 0 (empty), "
                         f"got {board!r}")


def _empty(board: tuple) -> tuple:
    cells = _EMPTY.get(board)
    if cells is None:
        cells = _EMPTY[board] = tuple(i for i, v in enumerate(board) if v == 0)
    return cells


class TicTacToeState(NamedTuple):
    """``board`` tuple of 9 ints in {1, -1, 0}; ``player`` (1 or -1) moves next."""

    board: tuple
    player: int


class TicTacToe:
    """Rules of noughts and crosses on immutable :class:`TicTacToeState` values."""

    num_actions = 9

    def initial_state(self) -> TicTacToeState:
        """Empty board, X (1) to move."""
        return TicTacToeState((0,) * 9, 1)

    def winner(self, state: TicTacToeState) -> int:
        """1 if X has three in a line, -1 if O has, else 0 (ongoing or draw)."""
        return _winner(state.board)

    def is_terminal(self, state: TicTacToeState) -> bool:
        """True when someone has won or the board is full."""
        board = state.board
        return _winner(board) != 0 or not _empty(board)

    def legal_actions(self, state: TicTacToeState) -> list[int]:
        """Empty cells in increasing order; ``[]`` once the game is over."""
        board = state.board
        if _winner(board) != 0:
            return []
        return list(_empty(board))  # a fresh list: the caller may change it

    def apply(self, state: TicTacToeState, action: int) -> TicTacToeState:
        """The state after the player to move marks cell ``action``; raises on illegal moves."""
        if type(action) is int:
            nxt = _NEXT.get((state, action))
            if nxt is not None:  # this move was made (and checked) before
                return nxt
        else:  # numpy integers and other index types are accepted too
            if isinstance(action, bool) or not hasattr(action, "__index__"):
                raise TypeError(f"action: expected an int cell index 0..8, got {action!r}")
            action = operator.index(action)
        if not 0 <= action < 9:
            raise ValueError(f"action: expected a cell index 0..8, got {action}")
        board = state.board
        if _winner(board) != 0 or not _empty(board):
            raise ValueError(f"action {action}: the game is over, no move is legal")
        if state.player not in (1, -1):
            raise ValueError(f"state: expected player 1 (X) or -1 (O) to move, got {state.player!r}")
        if board[action] != 0:
            raise ValueError(
                f"action {action}: cell is taken by {_SYMBOL[board[action]]}; "
                f"legal actions are {self.legal_actions(state)}"
            )
        nxt = TicTacToeState(board[:action] + (state.player,) + board[action + 1:], -state.player)
        if type(state) is TicTacToeState and len(_NEXT) < 100_000:
            _NEXT[(state, action)] = nxt
        return nxt

    def reward(self, state: TicTacToeState) -> float:
        """From the view of the player who just moved (``-state.player``): +1 if they have won,
        0 for a draw or an ongoing game (the mover can never have just lost)."""
        return 1.0 if _winner(state.board) == -state.player else 0.0

    def render(self, state: TicTacToeState) -> str:
        """Three lines of X, O and ``.``."""
        b = state.board
        return "\n".join(" ".join(_SYMBOL[v] for v in b[r:r + 3]) for r in (0, 3, 6))
