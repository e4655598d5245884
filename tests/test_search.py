"""MCTS, exact minimax, beam search and best-of-n (rlcourse.search)."""

import math

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.search.mcts import _Node, _uct_child

# The defaults (2000 simulations, c = 2) make no mistake at any position MCTS can reach as X or
# as O (test_the_default_search_never_makes_a_losing_move below); the games use them too.
SIMS, C = 2000, 2.0


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


def optimal_moves(g, fns, cache, state):
    q = rc.minimax_values(state, *fns, cache=cache)
    return {a for a, v in q.items() if v == max(q.values())}


def audit(g, fns, cache, policy, side):
    """Every position where ``side`` is to move in some game from the start in which ``side``
    plays ``policy`` and the opponent plays anything: (decisions, mistakes)."""
    seen, decisions, mistakes, stack = set(), 0, [], [g.initial_state()]
    while stack:
        state = stack.pop()
        if g.is_terminal(state) or state in seen:
            continue
        seen.add(state)
        if state.player != side:
            stack.extend(g.apply(state, a) for a in g.legal_actions(state))
            continue
        action, best = policy(state), optimal_moves(g, fns, cache, state)
        if len(best) < len(g.legal_actions(state)):
            decisions += 1
            if action not in best:
                mistakes.append(state)
        stack.append(g.apply(state, action))
    return decisions, mistakes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_default_search_never_makes_a_losing_move(game, cache, seed):
    """Exhaustive: as X and as O, at every position it can face, the default search keeps the
    best minimax value. (Seeds 0-9 passed when the defaults were chosen.)"""
    g, fns = game
    for side in (1, -1):
        decisions, mistakes = audit(g, fns, cache,
                                    lambda s: rc.mcts(s, *fns, seed=seed).action, side)
        assert decisions > 50
        assert mistakes == [], [g.render(m) for m in mistakes]


def test_ucb1s_constant_on_the_value_range_plays_perfectly_too(game, cache):
    """c = 2 sqrt 2 (UCB1's sqrt 2 for [0, 1] rewards, doubled for values in [-1, 1]) also makes
    no mistake at the default budget: the cheat sheet says the default 2 is not a better c."""
    g, fns = game
    for side in (1, -1):
        _, mistakes = audit(g, fns, cache, lambda s: rc.mcts(s, *fns, c=2 * math.sqrt(2)).action,
                            side)
        assert mistakes == [], [g.render(m) for m in mistakes]


def test_the_audit_catches_a_search_that_is_too_small(game, cache):
    """The same check fails a search of 200 simulations: it is not true by construction."""
    g, fns = game
    mistakes = [m for side in (1, -1) for m in audit(
        g, fns, cache, lambda s: rc.mcts(s, *fns, simulations=200).action, side)[1]]
    assert mistakes


@pytest.mark.parametrize("seed", [1, 2])
def test_the_budget_the_audit_needs_is_the_same_for_other_seeds(game, cache, seed):
    """Lesson 15 sweeps the budget with seed 0: 500 simulations still make mistakes, 1000 make
    none. The same holds for seeds 1 and 2 (measured: 2 and 1 mistakes at 500)."""
    g, fns = game

    def mistakes(simulations):
        return sum(len(audit(g, fns, cache, lambda s: rc.mcts(
            s, *fns, simulations=simulations, seed=seed).action, side)[1]) for side in (1, -1))

    assert mistakes(500) > 0
    assert mistakes(1000) == 0


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


def test_puct_score_formula_and_unvisited_follow_the_prior():
    q, p, n = np.array([0.2, 0.0, -0.1]), np.array([0.2, 0.7, 0.1]), np.array([5, 0, 4])
    score = rc.puct_score(q, p, n, parent_visits=9, c=1.5)
    np.testing.assert_allclose(score, q + 1.5 * p * 3.0 / (1 + n))
    assert np.isfinite(score).all()  # unlike UCT, an unvisited child is not forced first
    # a fresh node (N = 0) still prefers the most probable move: sqrt(N) is taken with N >= 1
    assert int(np.argmax(rc.puct_score([0.0, 0.0], [0.3, 0.7], [0, 0], 0))) == 1
    with pytest.raises(ValueError, match="priors"):
        rc.puct_score([0.0, 0.0], [0.5], [0, 0], 1)
    with pytest.raises(ValueError, match="priors"):
        rc.puct_score([0.0, 0.0], [1.5, -0.5], [0, 0], 1)


def uniform(g):
    return lambda s: np.full(len(g.legal_actions(s)), 1.0 / len(g.legal_actions(s)))


def test_puct_search_finds_wins_and_blocks_and_keeps_the_invariants(game):
    g, fns = game
    prior = uniform(g)
    assert rc.mcts(after(g, [0, 3, 1, 4]), *fns, simulations=300, prior=prior).action == 2
    assert rc.mcts(after(g, [0, 4, 1]), *fns, simulations=300, prior=prior).action == 2
    for sims in (1, 9, 250):
        r = rc.mcts(after(g, [4]), *fns, simulations=sims, prior=prior)
        assert sum(r.visits.values()) == sims
        assert list(r.visits) == list(g.legal_actions(after(g, [4])))
    assert rc.mcts(g.initial_state(), *fns, simulations=50, prior=prior, seed=1) == \
        rc.mcts(g.initial_state(), *fns, simulations=50, prior=prior, seed=1)


def test_puct_follows_its_prior_and_a_uct_search_ignores_it(game):
    g, fns = game
    state = g.initial_state()

    def corner(s):  # all the prior's mass on cell 8
        return np.array([1.0 if a == 8 else 0.0 for a in g.legal_actions(s)])
    first = rc.mcts(state, *fns, simulations=1, prior=corner)
    assert first.visits[8] == 1  # the first simulation goes where the prior points
    guided = rc.mcts(state, *fns, simulations=60, prior=corner)
    assert guided.visits[8] > 30
    plain = rc.mcts(state, *fns, simulations=60)
    assert plain.visits[8] < 15  # UCT tries every move before repeating any


def test_puct_two_player_backup_on_the_tiny_tree():
    fns = tree_game([[1.0, 0.0], [0.6, 0.6]])
    flat = lambda s: np.array([0.5, 0.5])  # noqa: E731
    assert rc.mcts((), *fns, simulations=400, c=0.5, two_player=True, prior=flat).action == 1
    assert rc.mcts((), *fns, simulations=400, c=0.5, two_player=False, prior=flat).action == 0


def test_a_good_prior_needs_fewer_simulations_than_a_bad_one(game, cache):
    """On the 9 replies to X's first move, a prior that knows the drawing moves beats one that
    points at the losing moves, at the same small budget (3 seeds)."""
    g, fns = game
    positions = [after(g, [a]) for a in range(9)]

    def toward(good):
        def prior(s):
            best = optimal_moves(g, fns, cache, s)
            w = np.array([4.0 if (a in best) == good else 1.0 for a in g.legal_actions(s)])
            return w / w.sum()
        return prior

    def hits(prior):
        return sum(rc.mcts(s, *fns, simulations=64, seed=seed, prior=prior).action
                   in optimal_moves(g, fns, cache, s) for s in positions for seed in range(3))
    assert hits(toward(True)) > hits(toward(False))


def test_prior_is_checked(game):
    g, fns = game
    with pytest.raises(ValueError, match="prior"):
        rc.mcts(g.initial_state(), *fns, simulations=5, prior=lambda s: np.ones(3) / 3)
    with pytest.raises(ValueError, match="prior"):
        rc.mcts(g.initial_state(), *fns, simulations=5, prior=lambda s: np.full(9, np.nan))
    with pytest.raises(TypeError, match="prior"):
        rc.mcts(g.initial_state(), *fns, simulations=5, prior=[0.1] * 9)


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
    for bad_c in (np.inf, np.nan):
        with pytest.raises(ValueError, match="c"):
            rc.mcts(g.initial_state(), *fns, c=bad_c)
        with pytest.raises(ValueError, match="c"):
            rc.uct_score([0.1], [1], 2, c=bad_c)
        with pytest.raises(ValueError, match="c"):
            rc.puct_score([0.1], [1.0], [1], 2, c=bad_c)
    for bad_reward in (np.inf, -np.inf, np.nan):
        two_moves = (lambda s: [0, 1], lambda s, a: s + (a,), lambda s: len(s) == 2,
                     lambda s, r=bad_reward: r if s == (0, 0) else 0.0)
        with pytest.raises(ValueError, match="reward"):
            rc.mcts((), *two_moves, simulations=50)


# A game that never ends: the state is a counter mod 3 and no state is terminal.
CYCLE = (lambda s: [0, 1], lambda s, a: (s + 1 + a) % 3, lambda s: False, lambda s: 0.0)


def test_mcts_on_a_game_that_never_ends_raises_instead_of_hanging():
    with pytest.raises(ValueError, match="rollout_depth"):
        rc.mcts(0, *CYCLE, simulations=3, rollout_limit=1000)
    # with a depth cut-off the same game is searchable: reward scores the state where it stops
    result = rc.mcts(0, *CYCLE[:3], lambda s: float(s == 2), simulations=200, rollout_depth=0,
                     two_player=False)
    assert result.action == 1  # 0 -> 2 scores 1 at once
    with pytest.raises(ValueError, match="rollout_limit"):
        rc.mcts(0, *CYCLE, simulations=3, rollout_limit=0)


# A game without terminal states whose states never repeat: a counter that only grows.
ENDLESS = (lambda s: [0, 1], lambda s, a: s + 1 + a, lambda s: False, lambda s: 0.0)


def test_a_game_without_terminal_states_ends_with_a_clear_error_after_the_depth_guard():
    """No cycle to detect and no state seen twice: only the depth guards stop the search."""
    with pytest.raises(ValueError, match="rollout_limit = 500 .*may never end"):
        rc.mcts(0, *ENDLESS, simulations=3, rollout_limit=500)
    with pytest.raises(ValueError, match="depth_limit: .*longer than 2000 moves.*may never end"):
        rc.minimax_value(0, *ENDLESS, depth_limit=2000)
    with pytest.raises(ValueError, match="depth_limit"):
        rc.perfect_action(0, *ENDLESS)  # the default guard, 100,000 moves
    with pytest.raises(ValueError, match="depth_limit"):
        rc.minimax_values(0, *ENDLESS, depth_limit=0)


def test_the_game_functions_are_checked_where_they_are_used(game):
    g, fns = game
    state = after(g, [0, 4, 1, 2])
    for search in (lambda *a: rc.mcts(*a, simulations=20), rc.minimax_value):
        with pytest.raises(TypeError, match="legal_actions: expected a function"):
            search(state, g, g.apply, g.is_terminal, g.reward)  # the game, not its method
        with pytest.raises(TypeError, match=r"state: is_terminal\(state\) failed"):
            search("X.O......", *fns)
        with pytest.raises(ValueError, match="state: expected a board of 9 cells"):
            search(rc.TicTacToeState((0,) * 8, 1), *fns)
        with pytest.raises(TypeError, match="apply: returned None"):
            search(state, g.legal_actions, lambda s, a: None, g.is_terminal, g.reward)
        with pytest.raises(TypeError, match="reward: expected a number"):
            search(state, *fns[:3], lambda s: "win")
        with pytest.raises(ValueError, match="legal_actions: returned no actions.*is_terminal"):
            search(state, *fns[:2], lambda s: False, g.reward)
        with pytest.raises(TypeError, match="is_terminal: expected True or False"):
            search(state, *fns[:2], lambda s: "no", g.reward)
    with pytest.raises(ValueError, match="apply: the game has a cycle"):
        rc.minimax_value(state, g.legal_actions, lambda s, a: s, g.is_terminal, g.reward)
    with pytest.raises(TypeError, match="cache"):
        rc.minimax_value(state, *fns, cache=[])
    with pytest.raises(TypeError, match="rng"):
        rc.perfect_action(state, *fns, rng=0)
    with pytest.raises(TypeError, match="two_player"):
        rc.mcts(state, *fns, simulations=5, two_player="False")


def test_any_iterable_of_legal_actions_works_in_the_tree_and_in_the_rollouts(game):
    """The tree and the rollouts read legal_actions the same way: a numpy array (e.g.
    np.flatnonzero(board == 0)), a generator or a set gives the same search as a list."""
    g, fns = game
    state = after(g, [0, 4, 1])
    as_list = rc.mcts(state, *fns, simulations=300, seed=1)
    kinds = {"array": lambda s: np.array(g.legal_actions(s)),
             "generator": lambda s: (a for a in g.legal_actions(s)),
             "set": lambda s: set(g.legal_actions(s))}
    for name, legal in kinds.items():
        for depth in (None, 3):
            r = rc.mcts(state, legal, *fns[1:], simulations=300, seed=1, rollout_depth=depth)
            assert sum(r.visits.values()) == 300, name
            assert sorted(r.visits) == sorted(as_list.visits), name
            assert r.action == 2, name  # the block: X threatens 0-1-2
        if name != "set":  # a set may iterate in another order: another (valid) search
            r = rc.mcts(state, legal, *fns[1:], simulations=300, seed=1)
            assert r.visits == as_list.visits and r.values == as_list.values, name
        r = rc.mcts(state, legal, *fns[1:], simulations=300, seed=1,
                    prior=lambda s: np.full(len(g.legal_actions(s)), 1 / len(g.legal_actions(s))))
        assert r.action == 2, name
    assert rc.minimax_values(state, kinds["generator"], *fns[1:]) == \
        rc.minimax_values(state, *fns)


def test_mcts_on_a_very_deep_game_does_not_recurse():
    """A single line of 50,000 moves, far past Python's recursion limit: selection, rollout
    and backup are loops, so the search only costs time."""
    deep = (lambda s: [0], lambda s, a: s + 1, lambda s: s >= 50_000, lambda s: 1.0)
    assert rc.mcts(0, *deep, simulations=3).visits == {0: 3}


def test_minimax_on_a_cycle_raises_and_on_a_deep_game_does_not_recurse():
    with pytest.raises(ValueError, match="cycle"):
        rc.minimax_value(0, *CYCLE)
    with pytest.raises(ValueError, match="cycle"):
        rc.perfect_action(0, *CYCLE)
    # a state reached twice by different lines is not a cycle (tic-tac-toe has many)
    joins = (lambda s: [0, 1] if s < 2 else [0], lambda s, a: s + 1 + a, lambda s: s >= 4,
             lambda s: 1.0 if s == 4 else -1.0)
    assert rc.minimax_value(0, *joins) == 1.0
    # 20,000 moves deep, far past the recursion limit; the last mover (X after an odd count)
    deep = (lambda s: [0], lambda s, a: s + 1, lambda s: s == 20_001, lambda s: 1.0)
    assert rc.minimax_value(0, *deep) == 1.0
    assert rc.minimax_value(1, *deep) == -1.0


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


# A wider beam is not always better: width 1 keeps A (0.5) and finds A a <eos> = 0.2; width 2
# keeps A and B (0.45), then B's two children (0.225 each) push A's line out, and B's lines end
# at 0.1125; width 3 keeps C too and with it room for A a, back to 0.2.
BRANCH = {
    (9,): {1: 0.5, 2: 0.45, 3: 0.05},
    (9, 1): {4: 0.4, 5: 0.3, 6: 0.3}, (9, 1, 4): {0: 1.0}, (9, 1, 5): {0: 1.0}, (9, 1, 6): {0: 1.0},
    (9, 2): {7: 0.5, 8: 0.5}, (9, 2, 7): {0: 0.5, 5: 0.5}, (9, 2, 8): {0: 0.5, 6: 0.5},
    (9, 3): {0: 1.0},
}


def branch_step(tokens):
    probs = np.zeros(10)
    for token, p in BRANCH.get(tuple(tokens), {}).items():
        probs[token] = p
    with np.errstate(divide="ignore"):
        return np.log(probs)


def test_a_wider_beam_can_score_worse_and_only_an_exhaustive_one_is_exact():
    best = {w: rc.beam_search(branch_step, [9], w, 3, 0)[0] for w in (1, 2, 3, 4, 100)}
    assert best[1].tokens == (9, 1, 4, 0) and best[1].score == pytest.approx(math.log(0.2))
    assert best[2].score == pytest.approx(math.log(0.1125))
    assert best[2].score < best[1].score
    assert best[3].score == best[4].score == best[1].score
    # exhaustive: enumerate every sequence the tree allows
    def sequences(prefix):
        kids = BRANCH.get(prefix, {})
        if not kids or len(prefix) == 4:
            yield prefix
        for t in kids:
            yield from sequences(prefix + (t,))
    exact = max(sum(branch_step(s[:i])[s[i]] for i in range(1, len(s))) for s in sequences((9,)))
    assert best[100].score == pytest.approx(exact)
    assert all(h.score <= exact + 1e-12 for h in best.values())


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


def test_best_of_n_distribution_matches_sampling_and_ties():
    p, r = np.array([0.2, 0.3, 0.1, 0.4]), np.array([1.0, 2.0, 2.0, 0.0])
    exact = rc.best_of_n_distribution(p, r, 3)
    rng = np.random.default_rng(0)
    draws = rng.choice(4, size=(40000, 3), p=p)
    picks = [rc.best_of_n(list(row), lambda k: r[k]).best for row in draws[:4000]]
    freq = np.bincount(picks, minlength=4) / len(picks)
    assert np.abs(freq - exact).max() < 0.03
    assert exact.sum() == pytest.approx(1.0)
    # the tied top level (mass 0.4) holds 1 - 0.6**3 of the probability, split 3:1 as p is
    assert exact[1] + exact[2] == pytest.approx(1 - 0.6**3)
    assert exact[1] / exact[2] == pytest.approx(3.0)
    np.testing.assert_allclose(rc.best_of_n_distribution(p, r, 1), p)


@pytest.mark.parametrize("n", [1, 2, 4, 16, 64])
def test_best_of_n_kl_is_at_most_log_n_minus_and_reaches_it_without_ties(n):
    bound = math.log(n) - (n - 1) / n
    p = np.full(4000, 1 / 4000)
    q = rc.best_of_n_distribution(p, np.arange(4000.0), n)
    assert float(np.sum(q * np.log(q / p))) == pytest.approx(bound, abs=2e-3)
    rng = np.random.default_rng(n)
    for _ in range(20):  # random distributions with ties stay below the bound
        p = rng.dirichlet(np.ones(6))
        r = rng.integers(0, 3, size=6).astype(float)
        q = rc.best_of_n_distribution(p, r, n)
        kept = q > 0
        assert float(np.sum(q[kept] * np.log(q[kept] / p[kept]))) <= bound + 1e-9


def test_best_of_n_distribution_rejects_bad_input():
    with pytest.raises(ValueError, match="probs"):
        rc.best_of_n_distribution([0.5, 0.6], [0.0, 1.0], 2)
    with pytest.raises(ValueError, match="rewards"):
        rc.best_of_n_distribution([0.5, 0.5], [0.0], 2)
    with pytest.raises(ValueError, match="n"):
        rc.best_of_n_distribution([0.5, 0.5], [0.0, 1.0], 0)


def test_best_of_n_rejects_bad_input():
    with pytest.raises(ValueError, match="candidates"):
        rc.best_of_n([], score=len)
    with pytest.raises(ValueError, match="score"):
        rc.best_of_n([1.0, 2.0], score=lambda x: float("nan") if x > 1 else x)


# ----------------------------------------------------------------------------- pass@k


def test_pass_at_k_is_the_fraction_of_k_subsets_with_a_right_sample():
    for n in (1, 5, 20, 200):
        for k in range(1, n + 1, max(1, n // 7)):
            c = np.arange(n + 1)
            want = [1 - math.comb(n - ci, k) / math.comb(n, k) for ci in c]
            np.testing.assert_allclose(rc.pass_at_k(n, c, k), want, atol=1e-12)
    assert float(rc.pass_at_k(10, 0, 3)) == 0.0 and float(rc.pass_at_k(10, 8, 3)) == 1.0
    assert float(rc.pass_at_k(1000, 500, 900)) == 1.0  # no overflow from C(1000, 900)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_pass_at_k_is_unbiased_and_the_plug_in_estimate_is_not(k):
    """With c ~ Binomial(n, p), E[estimate] = 1 - (1 - p)^k exactly; 1 - (1 - c/n)^k is low."""
    n, p = 10, 0.2
    c = np.arange(n + 1)
    weights = np.array([math.comb(n, ci) * p**ci * (1 - p) ** (n - ci) for ci in c])
    truth = 1 - (1 - p) ** k
    assert float(weights @ rc.pass_at_k(n, c, k)) == pytest.approx(truth, abs=1e-12)
    plug_in = float(weights @ (1 - (1 - c / n) ** k))
    assert plug_in < truth - 1e-3 if k > 1 else plug_in == pytest.approx(truth)


def test_pass_at_k_rejects_bad_input():
    with pytest.raises(ValueError, match="k"):
        rc.pass_at_k(5, 2, 6)
    with pytest.raises(ValueError, match="c"):
        rc.pass_at_k(5, 6, 2)
    with pytest.raises(ValueError, match="c"):
        rc.pass_at_k(5, 2.5, 2)
