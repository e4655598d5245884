"""Dynamic programming: Bellman fixed points, agreement of the three solvers, values checked
against hand derivations and simulation, the terminal-state invariant, and input checks."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.tabular import dp

GAMMA = 0.9


def three_state_mdp(terminal_reward=0.0):
    """State 0: action 0 goes to the terminal state 2 paying 1, action 1 goes to state 1 paying 0.
    State 1: action 0 goes to 2 paying 2, action 1 goes back to 0 paying 0. State 2 is terminal
    (its self-loop pays ``terminal_reward``, which must be ignored).
    By hand: V*(1) = 2, V*(0) = max(1, 0 + 0.9 * 2) = 1.8, V*(2) = 0."""
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    P[0, 0, 2], R[0, 0, 2] = 1.0, 1.0
    P[0, 1, 1] = 1.0
    P[1, 0, 2], R[1, 0, 2] = 1.0, 2.0
    P[1, 1, 0] = 1.0
    P[2, :, 2], R[2, :, 2] = 1.0, terminal_reward
    return P, R, np.array([False, False, True])


def random_mdp(seed, S=6, A=3):
    """A random MDP whose last state is terminal; every state can reach it."""
    rng = np.random.default_rng(seed)
    P = rng.random((S, A, S)) + 0.05
    P /= P.sum(axis=2, keepdims=True)
    R = rng.normal(size=(S, A, S))
    terminal = np.zeros(S, dtype=bool)
    terminal[-1] = True
    return P, R, terminal


# -- hand-derived values ---------------------------------------------------------------------

def test_three_state_mdp_optimal_values_and_policy():
    P, R, terminal = three_state_mdp()
    expected = np.array([1.8, 2.0, 0.0])
    V, policy = rc.value_iteration(P, R, GAMMA, terminal)
    np.testing.assert_allclose(V, expected, atol=1e-9)
    assert policy[0] == 1, "state 0 should go through state 1 (0.9 * 2 > 1)"
    assert policy[1] == 0
    V_pi, policy_pi = rc.policy_iteration(P, R, GAMMA, terminal)
    np.testing.assert_allclose(V_pi, expected, atol=1e-12)
    np.testing.assert_array_equal(policy_pi[:2], policy[:2])
    # A lower gamma makes the detour worth less than the direct reward: 0.4 * 2 < 1.
    V_low, policy_low = rc.value_iteration(P, R, 0.4, terminal)
    np.testing.assert_allclose(V_low, [1.0, 2.0, 0.0], atol=1e-9)
    assert policy_low[0] == 0


def test_deterministic_gridworld_matches_path_lengths():
    """Open 5x5 grid, no slip: from a cell d moves from the goal the best return is d - 1 step
    rewards then the goal reward: -0.01 (1 - g^(d-1)) / (1 - g) + g^(d-1)."""
    env = rc.GridWorld(size=5, step_reward=-0.01)
    V, _ = rc.value_iteration(env.P, env.R, GAMMA, env.terminal)
    rows, cols = np.divmod(np.arange(25), 5)
    d = (4 - rows) + (4 - cols)
    expected = -0.01 * (1 - GAMMA ** (d - 1)) / (1 - GAMMA) + GAMMA ** (d - 1)
    expected[24] = 0.0
    np.testing.assert_allclose(V, expected, atol=1e-9)


def test_slippery_two_cell_lake_by_hand():
    """Layout 'SG' with FrozenLake's slip: three of the four actions reach G with probability 1/3
    and otherwise bump and stay, so V*(S) = (1/3) / (1 - 2 gamma / 3) = 1 / (3 - 2 gamma); LEFT
    never reaches G. The tie among DOWN, RIGHT, UP goes to the lowest index, DOWN."""
    env = rc.FrozenLake(layout=["SG"])
    V, policy = rc.value_iteration(env.P, env.R, GAMMA, env.terminal)
    np.testing.assert_allclose(V, [1 / (3 - 2 * GAMMA), 0.0], atol=1e-9)
    assert policy[0] == rc.DOWN
    Q = rc.q_from_v(env.P, env.R, V, GAMMA, env.terminal)
    np.testing.assert_allclose(Q[0, 1:], V[0], atol=1e-9)
    np.testing.assert_allclose(Q[0, 0], GAMMA * V[0], atol=1e-9)


def test_frozen_lake_values_match_simulated_returns():
    """Run the greedy policy of value iteration in the sampled environment and compare the mean
    discounted return from the start with V*(start), within 4 standard errors."""
    gamma = 0.95
    model = rc.FrozenLake(max_steps=None)
    V, policy = rc.value_iteration(model.P, model.R, gamma, model.terminal)
    n = 10_000
    env = rc.FrozenLake(n=n, seed=3, max_steps=None)
    obs = env.reset()
    returns = np.zeros(n)
    discount = np.ones(n)
    running = np.ones(n, dtype=bool)
    for _ in range(600):  # gamma^600 < 1e-13: the tail cannot matter
        step = env.step(policy[obs])
        returns += running * discount * step.reward
        discount *= gamma
        running &= ~step.done
        obs = step.obs
        if not running.any():
            break
    standard_error = returns.std() / np.sqrt(n)
    assert abs(returns.mean() - V[0]) < 4 * standard_error


# -- fixed points and agreement --------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_value_iteration_policy_iteration_and_linear_solve_agree(seed):
    P, R, terminal = random_mdp(seed)
    V_vi, pi_vi = rc.value_iteration(P, R, GAMMA, terminal)
    V_pi, pi_pi = rc.policy_iteration(P, R, GAMMA, terminal)
    np.testing.assert_allclose(V_vi, V_pi, atol=1e-8)
    np.testing.assert_array_equal(pi_vi[~terminal], pi_pi[~terminal])
    np.testing.assert_allclose(rc.policy_evaluation_exact(P, R, pi_vi, GAMMA, terminal), V_pi,
                               atol=1e-8)


@pytest.mark.parametrize("map_name,gamma", [("4x4", 0.99), ("8x8", 0.9), ("4x4", 1.0)])
def test_frozen_lake_solvers_agree_and_are_bellman_fixed_points(map_name, gamma):
    env = rc.FrozenLake(map_name)
    V, policy = rc.value_iteration(env.P, env.R, gamma, env.terminal)
    V2, policy2 = rc.policy_iteration(env.P, env.R, gamma, env.terminal)
    np.testing.assert_allclose(V, V2, atol=1e-7)
    # Bellman optimality: V* = max_a Q(V*), and V*(terminal) = 0.
    np.testing.assert_allclose(rc.bellman_optimality_backup(env.P, env.R, V2, gamma, env.terminal),
                               V2, atol=1e-12)
    assert np.all(V2[env.terminal] == 0.0)
    # Two optimal policies may differ only where their actions have the same value.
    Q = rc.q_from_v(env.P, env.R, V2, gamma, env.terminal)
    S = np.arange(len(V))
    np.testing.assert_allclose(Q[S, policy], Q[S, policy2], atol=1e-7)


def test_iterative_and_exact_policy_evaluation_agree_for_stochastic_policy():
    env = rc.FrozenLake("4x4")
    rng = np.random.default_rng(0)
    policy = rng.dirichlet(np.ones(4), size=16)
    V_iter = rc.policy_evaluation(env.P, env.R, policy, 0.95, env.terminal)
    V_lin = rc.policy_evaluation(env.P, env.R, policy, 0.95, env.terminal, method="linear")
    np.testing.assert_allclose(V_iter, V_lin, atol=1e-8)
    # Bellman expectation equation, written out here: V = sum_a pi (sum_s' P (R + g V)).
    V0 = np.where(env.terminal, 0.0, V_lin)
    target = np.einsum("sa,sat,sat->s", policy, env.P, env.R + 0.95 * V0[None, None, :])
    np.testing.assert_allclose(V_lin[~env.terminal], target[~env.terminal], atol=1e-10)


def test_deterministic_and_one_hot_policies_give_same_values():
    P, R, terminal = random_mdp(7)
    actions = np.array([2, 0, 1, 1, 0, 0])
    V_int = rc.policy_evaluation(P, R, actions, GAMMA, terminal)
    V_prob = rc.policy_evaluation(P, R, np.eye(3)[actions], GAMMA, terminal)
    np.testing.assert_allclose(V_int, V_prob, atol=1e-12)


def test_expected_reward_form_of_R_gives_same_values():
    P, R, terminal = random_mdp(1)
    r = np.einsum("sat,sat->sa", P, R)
    np.testing.assert_allclose(rc.value_iteration(P, r, GAMMA, terminal)[0],
                               rc.value_iteration(P, R, GAMMA, terminal)[0], atol=1e-12)


def test_policy_iteration_improves_monotonically():
    env = rc.FrozenLake("8x8")
    _, _, history = rc.policy_iteration(env.P, env.R, 0.95, env.terminal, return_history=True)
    assert len(history) >= 3
    values = [rc.policy_evaluation_exact(env.P, env.R, p, 0.95, env.terminal) for p in history]
    for before, after in zip(values, values[1:]):
        assert np.all(after >= before - 1e-10)
        assert np.any(after > before + 1e-10)  # each step strictly improves somewhere


def test_value_iteration_contracts_by_gamma_and_needs_more_sweeps_for_larger_gamma():
    env = rc.FrozenLake("4x4")
    sweeps = []
    for gamma in (0.5, 0.9, 0.99):
        _, _, changes = rc.value_iteration(env.P, env.R, gamma, env.terminal, return_history=True)
        # Contraction: a sweep shrinks the largest change by at least a factor gamma.
        assert np.all(changes[1:] <= gamma * changes[:-1] + 1e-15)
        assert changes[-1] < 1e-10 <= changes[-2]
        sweeps.append(len(changes))
    assert sweeps[0] < sweeps[1] < sweeps[2]


def test_greedy_breaks_float_noise_ties_towards_lowest_action():
    Q = np.array([[1.0, 1.0 + 1e-13, 0.5], [0.0, 2.0, 2.0], [3.0, -1.0, 3.0 + 1e-3]])
    np.testing.assert_array_equal(rc.greedy(Q), [0, 1, 2])


# -- terminal states never bootstrap ---------------------------------------------------------

def terminal_values_stay_zero(solver) -> bool:
    """The invariant: a terminal state's self-loop reward must not leak into any value."""
    P, R, terminal = three_state_mdp(terminal_reward=5.0)
    V = solver(P, R, GAMMA, terminal)
    return bool(np.allclose(V, [1.8, 2.0, 0.0], atol=1e-8))


SOLVERS = {
    "value_iteration": lambda P, R, g, t: rc.value_iteration(P, R, g, t)[0],
    "policy_iteration": lambda P, R, g, t: rc.policy_iteration(P, R, g, t)[0],
    "policy_evaluation": lambda P, R, g, t: rc.policy_evaluation(P, R, [1, 0, 0], g, t),
    "policy_evaluation_exact": lambda P, R, g, t: rc.policy_evaluation_exact(P, R, [1, 0, 0], g, t),
}


@pytest.mark.parametrize("name", SOLVERS)
def test_terminal_states_never_bootstrap(name):
    assert terminal_values_stay_zero(SOLVERS[name])


def test_without_terminal_mask_the_self_loop_reward_leaks():
    """Sanity of the fixture: with no mask, state 2 is an ordinary state worth 5 / (1 - 0.9)."""
    P, R, _ = three_state_mdp(terminal_reward=5.0)
    V, _ = rc.value_iteration(P, R, GAMMA)
    np.testing.assert_allclose(V[2], 50.0, atol=1e-7)


@pytest.mark.parametrize("name", SOLVERS)
def test_planted_bug_solver_that_ignores_terminal_mask_is_caught(monkeypatch, name):
    """A solver that treats terminal states as ordinary ones (a missing mask) must fail."""
    check_model = dp._check_model
    monkeypatch.setattr(dp, "_check_model", lambda P, R, terminal: check_model(P, R, None))
    assert not terminal_values_stay_zero(SOLVERS[name])


# -- input checks ----------------------------------------------------------------------------

def test_rows_of_P_that_are_not_distributions_are_named():
    P, R, terminal = three_state_mdp()
    P[1, 0, 2] = 0.7
    with pytest.raises(ValueError, match=r"P\[1, 0, :\] sums to 0.7"):
        rc.value_iteration(P, R, GAMMA, terminal)
    P[1, 0, 2] = -0.5
    with pytest.raises(ValueError, match=r"P\[1, 0, 2\]"):
        rc.policy_evaluation(P, R, [0, 0, 0], GAMMA, terminal)


def test_terminal_rows_of_P_need_not_be_distributions():
    P, R, terminal = three_state_mdp()
    P[2] = 0.0
    np.testing.assert_allclose(rc.value_iteration(P, R, GAMMA, terminal)[0], [1.8, 2.0, 0.0])


def test_shape_mismatches_raise():
    P, R, terminal = three_state_mdp()
    with pytest.raises(ValueError, match="R: expected shape"):
        rc.value_iteration(P, R[:, :, :2], GAMMA, terminal)
    with pytest.raises(ValueError, match="P: expected shape"):
        rc.value_iteration(P[:, :, :2], R[:, :, :2], GAMMA)
    with pytest.raises(ValueError, match="terminal: expected shape"):
        rc.value_iteration(P, R, GAMMA, terminal[:2])
    with pytest.raises(ValueError, match="policy: expected shape"):
        rc.policy_evaluation(P, R, [0, 1], GAMMA, terminal)
    with pytest.raises(ValueError, match="V: expected shape"):
        rc.q_from_v(P, R, np.zeros(4), GAMMA, terminal)


@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan")])
def test_gamma_outside_unit_interval_raises(gamma):
    P, R, terminal = three_state_mdp()
    with pytest.raises(ValueError, match="gamma"):
        rc.value_iteration(P, R, gamma, terminal)


def test_bad_policies_raise():
    P, R, terminal = three_state_mdp()
    with pytest.raises(ValueError, match=r"policy\[1\] sums to 0.8"):
        rc.policy_evaluation(P, R, [[1.0, 0.0], [0.5, 0.3], [1.0, 0.0]], GAMMA, terminal)
    with pytest.raises(ValueError, match="policy: values must be < 2"):
        rc.policy_evaluation(P, R, [0, 2, 0], GAMMA, terminal)
    with pytest.raises(TypeError, match="policy"):
        rc.policy_evaluation(P, R, [0.0, 1.0, 0.0], GAMMA, terminal)
    with pytest.raises(ValueError, match="method"):
        rc.policy_evaluation(P, R, [0, 0, 0], GAMMA, terminal, method="magic")


def test_gamma_one_without_termination_raises_clearly():
    P, R, terminal = three_state_mdp()
    loop = [1, 1, 0]  # 0 -> 1 -> 0 -> ... never terminates
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        rc.policy_evaluation_exact(P, R, loop, 1.0, terminal)
    with pytest.raises(RuntimeError, match="did not converge"):
        rc.policy_evaluation(P, R + 1.0, loop, 1.0, terminal, max_iters=500)
    # The optimal values are finite even with gamma = 1: the best policies terminate.
    np.testing.assert_allclose(rc.value_iteration(P, R, 1.0, terminal)[0], [2.0, 2.0, 0.0])


def test_nan_rewards_raise():
    P, R, terminal = three_state_mdp()
    R[0, 0, 2] = np.nan
    with pytest.raises(ValueError, match="R: expected finite"):
        rc.value_iteration(P, R, GAMMA, terminal)


# -- policy_dynamics and the sweep history ---------------------------------------------------

def test_policy_dynamics_cuts_terminal_states_and_solves_to_the_values():
    lake = rc.FrozenLake("4x4")
    policy = np.random.default_rng(0).dirichlet(np.ones(4), size=16)
    P_pi, r_pi = rc.policy_dynamics(lake.P, lake.R, policy, lake.terminal)
    assert P_pi.shape == (16, 16) and r_pi.shape == (16,)
    assert np.all(P_pi[lake.terminal] == 0) and np.all(P_pi[:, lake.terminal] == 0)
    assert np.all(r_pi[lake.terminal] == 0)
    # the entering reward stays: the cell left of the goal earns it with positive probability
    assert r_pi[14] > 0
    # rows next to a terminal state lose exactly the probability of entering it
    full = np.einsum("sa,sat->st", policy, lake.P)
    live = ~lake.terminal
    np.testing.assert_allclose(P_pi[live].sum(axis=1), 1 - full[live][:, lake.terminal].sum(axis=1))
    V = np.linalg.solve(np.eye(16) - 0.9 * P_pi, r_pi)
    np.testing.assert_allclose(V, rc.policy_evaluation_exact(lake.P, lake.R, policy, 0.9,
                                                             lake.terminal), atol=1e-12)


def test_policy_dynamics_accepts_actions_and_checks_input():
    grid = rc.GridWorld(size=3)
    P_a, r_a = rc.policy_dynamics(grid.P, grid.R, np.full(9, rc.RIGHT), grid.terminal)
    P_b, r_b = rc.policy_dynamics(grid.P, grid.R, np.eye(4)[np.full(9, rc.RIGHT)], grid.terminal)
    np.testing.assert_array_equal(P_a, P_b)
    np.testing.assert_array_equal(r_a, r_b)
    with pytest.raises(ValueError, match="policy"):
        rc.policy_dynamics(grid.P, grid.R, np.full((9, 4), 0.3), grid.terminal)


def test_policy_evaluation_history_shrinks_by_gamma_each_sweep():
    grid = rc.GridWorld(size=5, step_reward=-0.01)
    policy = np.full((25, 4), 0.25)
    V, changes = rc.policy_evaluation(grid.P, grid.R, policy, 0.9, grid.terminal,
                                      return_history=True)
    np.testing.assert_array_equal(V, rc.policy_evaluation(grid.P, grid.R, policy, 0.9,
                                                          grid.terminal))
    assert changes[-1] < 1e-10 <= changes[-2]
    assert np.all(changes[1:] <= 0.9 * changes[:-1] + 1e-15)
    with pytest.raises(ValueError, match="return_history"):
        rc.policy_evaluation(grid.P, grid.R, policy, 0.9, grid.terminal, method="linear",
                             return_history=True)
