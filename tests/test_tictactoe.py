"""TicTacToe rules: win detection on every line, draws, illegal moves, reward sign."""

import pytest

from rlcourse.envs import TicTacToe, TicTacToeState
from rlcourse.envs.tictactoe import LINES

game = TicTacToe()


def play(moves):
    state = game.initial_state()
    for m in moves:
        state = game.apply(state, m)
    return state


def test_initial_state():
    s = game.initial_state()
    assert s == TicTacToeState((0,) * 9, 1)
    assert game.legal_actions(s) == list(range(9))
    assert not game.is_terminal(s) and game.winner(s) == 0 and game.reward(s) == 0.0


def test_apply_is_pure_and_alternates_players():
    s0 = game.initial_state()
    s1 = game.apply(s0, 4)
    assert s0.board == (0,) * 9  # unchanged: states are immutable values
    assert s1.board[4] == 1 and s1.player == -1
    s2 = game.apply(s1, 0)
    assert s2.board[0] == -1 and s2.player == 1
    assert game.legal_actions(s2) == [1, 2, 3, 5, 6, 7, 8]
    assert hash(s2) == hash(play([4, 0]))  # hashable, equal by value


@pytest.mark.parametrize("line", LINES)
def test_every_line_wins_for_x(line):
    others = [c for c in range(9) if c not in line]
    # O plays two cells that are not on the line and do not make an O line themselves
    o_moves = others[:2]
    state = play([line[0], o_moves[0], line[1], o_moves[1], line[2]])
    assert game.winner(state) == 1
    assert game.is_terminal(state)
    assert game.reward(state) == 1.0  # X just moved and won
    assert game.legal_actions(state) == []


@pytest.mark.parametrize("line", LINES)
def test_every_line_wins_for_o(line):
    free = [c for c in range(9) if c not in line]
    # X plays three cells off the line that form no X line, O completes ``line``
    for x_moves in ([free[0], free[1], free[3]], [free[0], free[2], free[4]],
                    [free[1], free[2], free[5]]):
        moves = [x_moves[0], line[0], x_moves[1], line[1], x_moves[2], line[2]]
        state = game.initial_state()
        ok = True
        for m in moves[:-1]:
            state = game.apply(state, m)
            ok = ok and not game.is_terminal(state)
        if ok:
            break
    assert ok, "no X placement found that leaves the game open"
    state = game.apply(state, line[2])
    assert game.winner(state) == -1 and game.is_terminal(state)
    assert game.reward(state) == 1.0  # O just moved and won
    assert state.player == 1


def test_draw_is_terminal_with_zero_reward():
    # X O X / X O O / O X X
    state = play([0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert state.board == (1, -1, 1, 1, -1, -1, -1, 1, 1)
    assert game.is_terminal(state) and game.winner(state) == 0
    assert game.reward(state) == 0.0 and game.legal_actions(state) == []


def test_ongoing_reward_is_zero_and_not_terminal():
    state = play([0, 4, 8])
    assert not game.is_terminal(state) and game.reward(state) == 0.0


def test_illegal_moves_raise():
    state = play([4])
    with pytest.raises(ValueError, match=r"action 4: cell is taken by X; legal actions are \[0"):
        game.apply(state, 4)
    with pytest.raises(ValueError, match="action: expected a cell index 0..8, got 9"):
        game.apply(state, 9)
    with pytest.raises(ValueError, match="action: expected a cell index 0..8, got -1"):
        game.apply(state, -1)
    with pytest.raises(TypeError, match="action: expected an int cell index"):
        game.apply(state, 1.0)
    won = play([0, 3, 1, 4, 2])
    with pytest.raises(ValueError, match="the game is over"):
        game.apply(won, 5)


def test_a_state_that_is_not_a_tic_tac_toe_state_is_refused():
    for board in ((0,) * 8, (0,) * 8 + (2,), (0,) * 8 + ("x",)):
        with pytest.raises(ValueError, match="state: expected a board of 9 cells"):
            game.is_terminal(TicTacToeState(board, 1))
    with pytest.raises(ValueError, match="state: expected player 1"):
        game.apply(TicTacToeState((0,) * 9, 2), 4)


def test_render():
    assert game.render(play([0, 4])) == "X . .\n. O .\n. . ."


def test_methods_work_as_plain_functions():
    legal, apply = game.legal_actions, game.apply
    state = apply(game.initial_state(), legal(game.initial_state())[0])
    assert state.board[0] == 1
