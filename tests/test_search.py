"""MCTS, exact minimax, beam search and best-of-n (rlcourse.search)."""

import math

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.search.mcts import _Node, _uct_child

# With c = 1.0 and 2000 simulations MCTS made no suboptimal move (by minimax) in 200 games
# against a perfect player; with 1000 it made 3, with the default c = 1.4 and 2000 it made 1.
SIMS, C = 2000, 1.0


@pytest.fixture(scope="module")
def game():
    g = rc.TicTacToe()
    return g, (g.legal_actions, g.apply, g.is_terminal, g.reward)


@pytest.fixture(scope="module")
def cache():
    return {}  # minimax values shared by every test of this file


def after(g, moves):
    state = g.initial_state()
    for a in moves:
        state = g.apply(state, a)
    return state


def play(g, fns, mcts_first, opponent, seed, simulations=SIMS):
    """One game of MCTS against ``opponent(state, rng)``; the outcome for MCTS (+1/0/-1)."""
    state, rng, turn = g.initial_state(), np.random.default_rng(seed), 0
    while not g.is_terminal(state):
        if (turn % 2 == 0) == mcts_first:
            action = rc.mcts(state, *fns, simulations=simulations, c=C, seed=seed * 10 + turn).action
        else:
            action = opponent(state, rng)
        state, turn = g.apply(state, action), turn + 1
    # reward is for the player who just moved: turn is odd iff the first player moved last
    mcts_moved_last = (turn % 2 == 1) == mcts_first
    return g.reward(state) * (1 if mcts_moved_last else -1)


# ----------------------------------------------------------------------------- MCTS on the game


def test_takes_an_immediate_win_rather_than_blocking(game):
    g, fns = game
    # X: 0, 1 (wins at 2); O: 3, 4 (wins at 5); X to move must win, not block
    state = after(g, [0, 3, 1, 4])
    assert rc.mcts(state, *fns, simulations=500, seed=1).action == 2


def test_blocks_an_immediate_loss(game):
    g, fns = game
    state = after(g, [0, 4, 1])  # X threatens 2; O has no win of its own
    for seed in range(3):
        assert rc.mcts(state, *fns, simulations=500, seed=seed).action == 2


def test_never_loses_to_a_random_player(game):
    g, fns = game

    def random_player(state, rng):
        actions = list(g.legal_actions(state))
        return actions[int(rng.integers(len(actions)))]

    # a random opponent needs less search: 1000 simulations lost none of 200 games in trials
    outcomes = [play(g, fns, i % 2 == 0, random_player, seed=i, simulations=1000)
                for i in range(20)]
    assert min(outcomes) >= 0
    assert outcomes.count(1) >= 15  # and it actually wins most games


def test_draws_every_game_against_perfect_play(game, cache):
    g, fns = game

    def perfect(state, rng):
        return rc.perfect_action(state, *fns, rng=rng, cache=cache)

    outcomes = [play(g, fns, i % 2 == 0, perfect, seed=100 + i) for i in range(8)]
    assert outcomes == [0] * 8


def test_visits_sum_to_simulations_and_cover_the_legal_actions(game):
    g, fns = game
    state = after(g, [4])
    for sims in (1, 7, 300):
        result = rc.mcts(state, *fns, simulations=sims, seed=0)
        assert sum(result.visits.values()) == sims
        assert list(result.visits) == list(g.legal_actions(state)) == list(result.values)
        assert result.visits[result.action] == max(result.visits.values())


def test_same_seed_same_result(game):
    g, fns = game
    state = g.initial_state()
    a = rc.mcts(state, *fns, simulations=300, seed=3)
    b = rc.mcts(state, *fns, simulations=300, seed=3)
    c = rc.mcts(state, *fns, simulations=300, seed=4)
    assert a == b
    assert a.visits != c.visits


def test_values_are_means_for_the_player_to_move(game):
    g, fns = game
    state = after(g, [0, 3, 1, 4])  # action 2 wins at once: every visit backs up +1
    result = rc.mcts(state, *fns, simulations=200, seed=0)
    assert result.values[2] == 1.0
    assert all(-1.0 <= v <= 1.0 for v in result.values.values())


# ----------------------------------------------------------------------------- tiny trees


def tree_game(leaves):
    """A two-level game: state = tuple of actions; ``leaves[a][b]`` scores the terminal (a, b)."""
    return (
        lambda s: list(range(len(leaves))) if not s else list(range(len(leaves[s[0]]))),
        lambda s, a: s + (a,),
        lambda s: len(s) == 2,
        lambda s: leaves[s[0]][s[1]] if len(s) == 2 else 0.0,
    )


def test_single_agent_backup_keeps_the_sign_and_prefers_the_best_leaf():
    fns = tree_game([[1.0, 0.0], [0.6, 0.6]])
    result = rc.mcts((), *fns, simulations=400, c=0.5, seed=0, two_player=False)
    assert result.action == 0  # one agent picks both moves: it can reach 1.0 via 0
    assert result.values[1] == pytest.approx(0.6)  # every path under 1 is worth 0.6
    assert 0.6 < result.values[0] <= 1.0  # mostly the 1.0 leaf, a few 0.0 explorations


def test_two_player_backup_flips_the_sign_at_each_level():
    # leaves are scored for the second mover, who picks the second action
    fns = tree_game([[1.0, 0.0], [0.6, 0.6]])
    result = rc.mcts((), *fns, simulations=400, c=0.5, seed=0, two_player=True)
    assert result.action == 1  # under 0 the opponent grabs 1.0; under 1 it gets only 0.6
    assert result.values[1] == pytest.approx(-0.6)
    assert -1.0 <= result.values[0] < -0.6


def test_rollout_depth_cuts_rollouts_and_scores_the_cut_state():
    # a single-agent chain of 6 binary moves, reward 1 only at the end
    fns = (lambda s: [0, 1], lambda s, a: s + 1, lambda s: s == 6,
           lambda s: 1.0 if s == 6 else 0.0)
    full = rc.mcts(0, *fns, simulations=2, two_player=False)
    cut = rc.mcts(0, *fns, simulations=2, rollout_depth=1, two_player=False)
    assert full.values == {0: 1.0, 1: 1.0}
    assert cut.values == {0: 0.0, 1: 0.0}


def test_selection_follows_uct_score():
    parent = _Node(None, False, [])
    parent.visits = 10
    for visits, total in [(5, 4.0), (3, 1.0), (2, 1.5)]:
        kid = _Node(None, True, [])
        kid.visits, kid.total = visits, total
        parent.children.append(kid)
    for c in (0.0, 0.5, 1.4, 5.0):
        scores = rc.uct_score([k.total / k.visits for k in parent.children],
                              [k.visits for k in parent.children], parent.visits, c)
        assert parent.children.index(_uct_child(parent, c)) == int(np.argmax(scores))


def test_uct_score_formula_and_unvisited_first():
    score = rc.uct_score([0.5, 0.0, 0.2], [4, 0, 1], parent_visits=5, c=1.4)
    assert score[1] == np.inf
    assert score[0] == pytest.approx(0.5 + 1.4 * math.sqrt(math.log(5) / 4))
    assert score[2] == pytest.approx(0.2 + 1.4 * math.sqrt(math.log(5) / 1))
    assert np.array_equal(rc.uct_score([0.5, 0.1], [3, 3], 6, c=0.0), [0.5, 0.1])


# ----------------------------------------------------------------------------- minimax


def test_minimax_knows_tic_tac_toe(game, cache):
    g, fns = game
    assert rc.minimax_value(g.initial_state(), *fns, cache=cache) == 0.0
    assert rc.perfect_action(after(g, [0, 3, 1, 4]), *fns, cache=cache) == 2
    assert rc.perfect_action(after(g, [0, 4, 1]), *fns, cache=cache) == 2
    q = rc.minimax_values(after(g, [0, 4, 1]), *fns, cache=cache)
    assert q[2] == 0.0 and all(v == -1.0 for a, v in q.items() if a != 2)


# ----------------------------------------------------------------------------- bad input


def test_mcts_rejects_bad_input(game):
    g, fns = game
    stuck = (lambda s: [], lambda s, a: s, lambda s: False, lambda s: 0.0)
    with pytest.raises(ValueError, match="legal_actions"):
        rc.mcts(0, *stuck, simulations=5)
    # a game that runs out of moves below the root is caught during the rollout too
    dead_end = (lambda s: [0] if s == 0 else [], lambda s, a: s + 1, lambda s: False,
                lambda s: 0.0)
    with pytest.raises(ValueError, match="legal_actions"):
        rc.mcts(0, *dead_end, simulations=5)
    with pytest.raises(ValueError, match="state"):
        rc.mcts(after(g, [0, 3, 1, 4, 2]), *fns)  # X has won: nothing to search
    with pytest.raises(ValueError, match="simulations"):
        rc.mcts(g.initial_state(), *fns, simulations=0)
    with pytest.raises(ValueError, match="c"):
        rc.mcts(g.initial_state(), *fns, c=-1.0)
    with pytest.raises(ValueError, match="visits"):
        rc.uct_score([0.0, 1.0], [1], 1)


# ----------------------------------------------------------------------------- beam search

# A bigram table over tokens 0=<eos>, 1=a, 2=b, 3=c, 4=<bos>. Greedy takes "a" (0.5) first,
# but every continuation of "a" is unlikely; "b" (0.4) is followed by "c" almost surely.
TABLE = np.array([
    [1.0, 0.0, 0.0, 0.0, 0.0],   # after <eos> (never used: finished sequences stop)
    [0.3, 0.25, 0.2, 0.25, 0.0],  # after a
    [0.1, 0.0, 0.0, 0.9, 0.0],   # after b
    [1.0, 0.0, 0.0, 0.0, 0.0],   # after c: end
    [0.1, 0.5, 0.4, 0.0, 0.0],   # after <bos>
])


def bigram_step(tokens):
    with np.errstate(divide="ignore"):
        return np.log(TABLE[tokens[-1]])


def test_beam_finds_what_greedy_misses_with_exact_scores():
    greedy = rc.beam_search(bigram_step, [4], beam_width=1, max_len=5, eos=0)
    beam = rc.beam_search(bigram_step, [4], beam_width=2, max_len=5, eos=0)
    assert greedy[0].tokens == (4, 1, 0)  # a <eos>: 0.5 * 0.3 = 0.15
    assert greedy[0].score == pytest.approx(math.log(0.15))
    assert beam[0].tokens == (4, 2, 3, 0)  # b c <eos>: 0.4 * 0.9 * 1.0 = 0.36
    assert beam[0].score == pytest.approx(math.log(0.36))
    assert [h.score for h in beam] == sorted((h.score for h in beam), reverse=True)
    assert len(beam) == 2


def test_beam_returns_live_hypotheses_at_max_len_and_never_impossible_tokens():
    beam = rc.beam_search(bigram_step, [4], beam_width=3, max_len=1, eos=0)
    assert [h.tokens for h in beam] == [(4, 1), (4, 2), (4, 0)]
    assert beam[0].score == pytest.approx(math.log(0.5))
    wide = rc.beam_search(bigram_step, [4], beam_width=50, max_len=4, eos=0)
    probs = [math.exp(h.score) for h in wide]
    assert all(p > 0 for p in probs)
    # every sequence that ends by itself within 4 tokens is found; their mass is all there is
    assert sum(p for h, p in zip(wide, probs) if h.tokens[-1] == 0) == pytest.approx(
        1 - sum(p for h, p in zip(wide, probs) if h.tokens[-1] != 0))


def test_beam_rejects_bad_input():
    with pytest.raises(ValueError, match="beam_width"):
        rc.beam_search(bigram_step, [4], beam_width=0, max_len=3, eos=0)
    with pytest.raises(ValueError, match="max_len"):
        rc.beam_search(bigram_step, [4], beam_width=2, max_len=0, eos=0)
    with pytest.raises(ValueError, match="step"):
        rc.beam_search(lambda t: np.array([0.0, np.nan]), [0], beam_width=2, max_len=3, eos=0)
    with pytest.raises(ValueError, match="step"):
        rc.beam_search(lambda t: np.zeros((2, 2)), [0], beam_width=2, max_len=3, eos=0)


# ----------------------------------------------------------------------------- best-of-n


def test_best_of_n_picks_the_highest_and_reports_all_scores():
    result = rc.best_of_n(["ab", "abcd", "abc", "wxyz"], score=len)
    assert result.best == "abcd" and result.index == 1  # first of the tied maxima
    np.testing.assert_array_equal(result.scores, [2.0, 4.0, 3.0, 4.0])


def test_best_of_n_rejects_bad_input():
    with pytest.raises(ValueError, match="candidates"):
        rc.best_of_n([], score=len)
    with pytest.raises(ValueError, match="score"):
        rc.best_of_n([1.0, 2.0], score=lambda x: float("nan") if x > 1 else x)
