"""Environments: CartPole against Gymnasium bit for bit, the vector protocol's autoreset
semantics, seeding, action checks, gridworld models, TabularMDP validation and Bandit regret."""

from pathlib import Path

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.envs import (
    DOWN,
    LEFT,
    RIGHT,
    UP,
    Bandit,
    CartPole,
    CliffWalking,
    FrozenLake,
    GridWorld,
    Step,
    TabularMDP,
    from_gymnasium,
)

DATA = Path(__file__).parent / "data" / "cartpole_gymnasium.npz"

# Recorded with gymnasium 1.4.0's CartPole-v1 (the same run is in tests/data/cartpole_gymnasium.npz).
REF_START = [0.01, -0.02, 0.03, 0.04]
REF_ACTIONS = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
REF_OBS = [
    [0.009600000455975533, 0.17467918992042542, 0.030799999833106995, -0.24306872487068176],
    [0.013093584217131138, -0.020868849009275436, 0.025938626378774643, 0.059167999774217606],
    [0.012676207348704338, 0.17387177050113678, 0.02712198533117771, -0.22521957755088806],
    [0.016153642907738686, 0.36859580874443054, 0.02261759340763092, -0.5092253088951111],
    [0.023525558412075043, 0.17316263914108276, 0.012433087453246117, -0.20950153470039368],
    [0.026988811790943146, -0.02213486284017563, 0.008243056945502758, 0.0870773121714592],
    [0.026546115055680275, 0.17286796867847443, 0.009984603151679039, -0.20299355685710907],
    [0.030003473162651062, -0.022395342588424683, 0.0059247324243187904, 0.09282222390174866],
    [0.029555566608905792, 0.17264118790626526, 0.007781176827847958, -0.19798557460308075],
    [0.0330083891749382, 0.36765098571777344, 0.0038214651867747307, -0.488203763961792],
]
REF_FINAL_STATE = [0.033008390428920745, 0.36765098601918744, 0.0038214652462337543,
                   -0.4882037724625794]
SEED0_START = [0.013696168732145436, -0.02302132862361297, -0.045902647606380534,
               -0.04834723644714709]


def _recorded_episodes():
    data = np.load(DATA)
    count = len({k.split("_")[0] for k in data.files if k[0].isdigit()})
    return [{name: data[f"{k}_{name}"] for name in
             ("seed", "start", "actions", "obs", "terminated", "truncated", "state")}
            for k in range(count)]


# ---------------------------------------------------------------------------------- CartPole
@pytest.mark.parametrize("n", [1, 3])  # n = 1 takes the scalar path, n > 1 the array path
def test_cartpole_reference_trajectory_bit_exact(n):
    env = CartPole(n=n, seed=0)
    env.reset()
    env.state[:] = REF_START
    for t, a in enumerate(REF_ACTIONS):
        step = env.step(np.full(n, a))
        assert step.obs.dtype == np.float32 and step.obs.shape == (n, 4)
        for i in range(n):
            assert step.obs[i].tolist() == REF_OBS[t]
        assert not step.done.any()
    assert env.state.dtype == np.float64
    for i in range(n):
        assert env.state[i].tolist() == REF_FINAL_STATE


def test_cartpole_seed0_start_matches_reference():
    env = CartPole(seed=0)
    obs = env.reset()
    assert env.state[0].tolist() == SEED0_START
    assert obs[0].tolist() == np.array(SEED0_START, dtype=np.float32).tolist()


@pytest.mark.parametrize("n", [1, 2])
def test_cartpole_terminates_on_step_10_pushing_right(n):
    env = CartPole(n=n, seed=0)
    env.reset()
    env.state[:] = REF_START
    for t in range(1, 11):
        step = env.step(np.ones(n, dtype=np.int64))
        if t < 10:
            assert not step.terminated.any()
    assert step.terminated.all() and not step.truncated.any()
    assert (step.final_obs[:, 2] < -0.20943951023931953).all()  # theta beyond -12 degrees
    assert step.reward.tolist() == [1.0] * n  # the terminating step pays too
    assert env.episode_lengths == [10] * n and env.episode_returns == [10.0] * n


@pytest.mark.parametrize("episode", range(7))
def test_cartpole_matches_recorded_gymnasium_episodes(episode):
    ep = _recorded_episodes()[episode]
    env = CartPole(seed=int(ep["seed"]))
    env.reset()
    assert env.state[0].tolist() == ep["start"].tolist()  # reset draws the same start
    T = len(ep["actions"])
    for t in range(T):
        step = env.step(ep["actions"][t : t + 1])
        assert step.final_obs[0].tolist() == ep["obs"][t].tolist(), f"step {t + 1}"
        assert bool(step.terminated[0]) == bool(ep["terminated"][t])
        assert bool(step.truncated[0]) == bool(ep["truncated"][t])
    assert step.done[0]
    assert env.episode_lengths == [T]


def test_cartpole_truncation_at_500_from_recording():
    ep = _recorded_episodes()[6]
    assert len(ep["actions"]) == 500 and ep["truncated"][-1] and not ep["terminated"].any()
    # Run the same controller in 4 copies: copy 0 replays the recorded episode exactly.
    env = CartPole(n=4, seed=int(ep["seed"]))
    env.reset()
    for t in range(500):
        step = env.step(np.concatenate([ep["actions"][t : t + 1], np.zeros(3, np.int64)]))
        if t < 499:
            assert not step.truncated[0]
    assert step.truncated[0] and not step.terminated[0]
    assert step.final_obs[0].tolist() == ep["obs"][-1].tolist()
    assert env.state[0].tolist() != ep["state"].tolist()  # copy 0 was reset in the same step
    assert env.episode_lengths.count(500) == 1


def test_cartpole_max_steps_truncates_and_can_coincide_with_termination():
    env = CartPole(n=1, seed=0, max_steps=10)
    env.reset()
    env.state[:] = REF_START
    for _ in range(10):
        step = env.step(np.array([1]))
    assert step.terminated[0] and step.truncated[0]  # both on step 10
    env = CartPole(n=1, seed=0, max_steps=None)
    env.reset()
    env.state[:] = [0.0, 0.0, 0.0, 0.0]
    for _ in range(600):  # alternate pushes keep it up
        step = env.step(np.array([_ % 2]))
        assert not step.truncated[0]


def test_cartpole_autoreset_semantics():
    env = CartPole(n=3, seed=5)
    env.reset()
    env.state[:] = [REF_START, [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    for t in range(9):
        env.step(np.array([1, t % 2, t % 2]))
    before = env.state.copy()
    step = env.step(np.array([1, 1, 1]))
    # copy 0 terminates (pushing right 10 times); copies 1 and 2 balance.
    assert step.terminated.tolist() == [True, False, False]
    assert step.done.tolist() == [True, False, False]
    assert step.final_obs[0].tolist() != step.obs[0].tolist()
    assert np.abs(step.obs[0]).max() <= 0.05  # new episode's first obs
    assert (np.abs(step.final_obs[0, 2]) > 0.2094).all()  # old episode's last obs
    np.testing.assert_array_equal(step.final_obs[1:], step.obs[1:])
    assert step.obs[0].tolist() == env.state[0].astype(np.float32).tolist()
    assert env.state[1].tolist() != before[1].tolist()
    assert env.episode_returns == [10.0] and env.episode_lengths == [10]
    assert isinstance(step, Step) and step.reward.dtype == np.float64
    # the reset copy counts its new episode from 1: with max_steps it truncates later than
    # the copies that kept going
    short = CartPole(n=2, seed=0, max_steps=12)
    short.reset()
    short.state[:] = [REF_START, [0.0, 0.0, 0.0, 0.0]]
    for t in range(12):
        step = short.step(np.array([1, t % 2]))
    assert step.truncated.tolist() == [False, True]
    assert short.episode_lengths == [10, 12]


def test_cartpole_copy_i_starts_follow_seed_plus_i():
    env = CartPole(n=3, seed=10)
    env.reset()
    for i in range(3):
        expected = np.random.default_rng(10 + i).uniform(-0.05, 0.05, size=4)
        assert env.state[i].tolist() == expected.tolist()
    # subsequent resets (manual or automatic) take the next draws of each copy's generator
    gens = [np.random.default_rng(10 + i) for i in range(3)]
    starts = [g.uniform(-0.05, 0.05, size=(400, 4)) for g in gens]
    env.reset()
    for i in range(3):
        assert env.state[i].tolist() == starts[i][1].tolist()
    env.state[:] = REF_START  # all three terminate together on step 10, then keep going
    seen = [2, 2, 2]
    for _ in range(3000):  # enough episodes to cross the 256-start refill of the buffer
        step = env.step(np.ones(3, dtype=np.int64))
        for i in np.flatnonzero(step.done):
            assert env.state[i].tolist() == starts[i][seen[i]].tolist()
            seen[i] += 1
    assert min(seen) > 258


def test_cartpole_seeding_determinism():
    actions = np.random.default_rng(0).integers(0, 2, size=(300, 4))

    def run(seed):
        env = CartPole(n=4, seed=seed)
        obs = [env.reset()]
        obs += [env.step(a).obs for a in actions]
        return np.stack(obs), env.episode_returns

    a, ra = run(3)
    b, rb = run(3)
    c, _ = run(4)
    np.testing.assert_array_equal(a, b)
    assert ra == rb and len(ra) > 10
    assert not np.array_equal(a, c)
    # reset(seed) re-seeds: the same numbers again from the same object
    env = CartPole(n=4, seed=99)
    first = env.reset(seed=3)
    np.testing.assert_array_equal(first, a[0])
    # seed=None differs between instances
    assert not np.array_equal(CartPole(2).reset(), CartPole(2).reset())


def test_cartpole_state_is_writable_view_and_validated():
    env = CartPole(n=2, seed=0)
    env.reset()
    assert env.state.shape == (2, 4) and env.state.dtype == np.float64
    env.state = np.zeros((2, 4))
    assert env.state.tolist() == [[0.0] * 4] * 2
    with pytest.raises(ValueError, match=r"state: expected shape \(2, 4\)"):
        env.state = np.zeros((3, 4))


def test_cartpole_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        CartPole(n=2).step(np.zeros(2, dtype=int))


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        ("float", TypeError, "actions: expected integers, got dtype float64"),
        ("range", ValueError, "actions: values must be < 2, got 2"),
        ("negative", ValueError, "actions: values must be >= 0, got -1"),
        ("shape", ValueError, r"actions: expected shape \(N,\)"),
        ("bool", TypeError, "actions: expected an integer array, got dtype bool"),
    ],
)
def test_cartpole_bad_actions_raise(n, actions, error, match):
    env = CartPole(n=n, seed=0)
    env.reset()
    bad = {
        "float": np.ones(n),
        "range": np.full(n, 2),
        "negative": np.full(n, -1),
        "shape": np.ones((n, 1), dtype=int),
        "bool": np.ones(n, dtype=bool),
    }[actions]
    with pytest.raises(error, match=match.replace("N", str(n))):
        env.step(bad)


def test_cartpole_accepts_python_int_for_one_copy_and_lists():
    env = CartPole(seed=0)
    env.reset()
    a = env.step(1).obs
    env.reset(seed=0)
    b = env.step([1]).obs
    np.testing.assert_array_equal(a, b)


def test_cartpole_live_against_gymnasium_random_starts():
    gym = pytest.importorskip("gymnasium")
    rng = np.random.default_rng(123)
    n, seed = 5, 40
    ours = CartPole(n=n, seed=seed)
    ours.reset()
    theirs = [gym.make("CartPole-v1") for _ in range(n)]
    for i, e in enumerate(theirs):
        e.reset(seed=seed + i)
    starts = rng.uniform(-0.2, 0.2, size=(n, 4))
    ours.state[:] = starts
    for i, e in enumerate(theirs):
        e.unwrapped.state = starts[i].copy()
    for _ in range(400):
        actions = rng.integers(0, 2, size=n)
        step = ours.step(actions)
        for i, e in enumerate(theirs):
            obs, r, term, trunc, _ = e.step(int(actions[i]))
            assert step.final_obs[i].tolist() == obs.tolist()
            assert (step.terminated[i], step.truncated[i], step.reward[i]) == (term, trunc, r)
            if term or trunc:
                obs, _ = e.reset()
            assert step.obs[i].tolist() == obs.tolist()
            assert ours.state[i].tolist() == e.unwrapped.state.tolist()
    assert len(ours.episode_lengths) > 20


# ------------------------------------------------------------------------------ Gridworlds
def test_frozenlake_hand_derived_transitions():
    env = FrozenLake()  # 4x4 SFFF/FHFH/FFFH/HFFG, slippery
    P, R = env.P, env.R
    third = 1 / 3
    # state 0 (top-left), LEFT: intended left (bump, stay 0), slips DOWN (4) or UP (bump, 0)
    assert P[0, LEFT, 0] == pytest.approx(2 * third) and P[0, LEFT, 4] == pytest.approx(third)
    # state 14 (row 3, col 2), RIGHT: goal 15 with 1/3 (reward 1), slips UP to 10, DOWN stays 14
    assert P[14, RIGHT, 15] == pytest.approx(third) and R[14, RIGHT, 15] == 1.0
    assert P[14, RIGHT, 10] == pytest.approx(third) and P[14, RIGHT, 14] == pytest.approx(third)
    assert R[14, RIGHT, 10] == 0.0
    # state 1, DOWN: hole 5 with 1/3, slips LEFT to 0 and RIGHT to 2
    assert P[1, DOWN, 5] == pytest.approx(third) and P[1, DOWN, 0] == pytest.approx(third)
    assert P[1, DOWN, 2] == pytest.approx(third)
    assert env.terminal.tolist() == [c in "HG" for c in "SFFFFHFHFFFHHFFG"]
    assert env.start.tolist() == [1.0] + [0.0] * 15
    for s in np.flatnonzero(env.terminal):  # absorbing with reward 0
        assert (P[s, :, s] == 1.0).all() and (R[s] == 0).all()
    np.testing.assert_allclose(P.sum(axis=2), 1.0, atol=1e-12)
    assert env.max_steps == 100 and FrozenLake("8x8").max_steps == 200
    assert FrozenLake("8x8").num_states == 64


def test_frozenlake_not_slippery_is_deterministic():
    env = FrozenLake(is_slippery=False)
    assert env.P[0, RIGHT, 1] == 1.0 and env.P[0, DOWN, 4] == 1.0 and env.P[0, UP, 0] == 1.0
    assert env.P[0, LEFT, 0] == 1.0 and env.P[14, RIGHT, 15] == 1.0


def test_cliffwalking_hand_derived_transitions():
    env = CliffWalking()
    start, goal = 36, 47
    assert env.shape == (4, 12) and env.num_states == 48 and env.num_actions == 4
    # from the start, RIGHT steps into the cliff: -100 and back to the start, not terminal
    assert env.P[start, RIGHT, start] == 1.0 and env.R[start, RIGHT, start] == -100.0
    assert env.P[start, UP, 24] == 1.0 and env.R[start, UP, 24] == -1.0
    # from above the goal, DOWN enters it: -1 and terminal
    assert env.P[35, DOWN, goal] == 1.0 and env.R[35, DOWN, goal] == -1.0
    assert env.terminal[goal] and env.terminal.sum() == 1
    # from above the cliff, DOWN falls back to the start
    assert env.P[30, DOWN, start] == 1.0 and env.R[30, DOWN, start] == -100.0
    assert env.start[start] == 1.0 and env.max_steps is None


def test_cliffwalking_episode_through_the_cliff():
    env = CliffWalking(seed=0)
    assert env.reset().tolist() == [36]
    step = env.step(np.array([RIGHT]))
    assert step.obs.tolist() == [36] and step.reward.tolist() == [-100.0]
    assert not step.done[0]
    env.step(np.array([UP]))
    for _ in range(11):
        env.step(np.array([RIGHT]))
    step = env.step(np.array([DOWN]))
    assert step.terminated[0] and step.final_obs.tolist() == [47] and step.obs.tolist() == [36]
    assert env.episode_returns == [-100.0 - 13.0] and env.episode_lengths == [14]


def _gym_model(genv, action_map):
    u = genv.unwrapped
    S, A = u.observation_space.n, u.action_space.n
    P = np.zeros((S, A, S))
    R = np.zeros((S, A, S))
    for s in range(S):
        for ga in range(A):
            for prob, s2, r, _ in u.P[s][ga]:
                P[s, action_map[ga], s2] += prob
                R[s, action_map[ga], s2] = r
    return P, R


@pytest.mark.parametrize("map_name", ["4x4", "8x8"])
@pytest.mark.parametrize("slippery", [True, False])
def test_frozenlake_matches_gymnasium_model(map_name, slippery):
    gym = pytest.importorskip("gymnasium")
    env_id = {"4x4": "FrozenLake-v1", "8x8": "FrozenLake8x8-v1"}[map_name]
    genv = gym.make(env_id, is_slippery=slippery)
    P, R = _gym_model(genv, {0: 0, 1: 1, 2: 2, 3: 3})
    ours = FrozenLake(map_name, is_slippery=slippery)
    np.testing.assert_allclose(ours.P, P, atol=1e-12)
    np.testing.assert_array_equal(ours.R[P > 0], R[P > 0])
    assert ours.max_steps == genv.spec.max_episode_steps


@pytest.mark.parametrize("slip", [0.0, 2 / 3])
def test_cliffwalking_matches_gymnasium_model(slip):
    gym = pytest.importorskip("gymnasium")
    genv = gym.make("CliffWalking-v1", is_slippery=slip > 0)
    # Gymnasium's CliffWalking numbers actions UP=0, RIGHT=1, DOWN=2, LEFT=3.
    P, R = _gym_model(genv, {0: UP, 1: RIGHT, 2: DOWN, 3: LEFT})
    ours = CliffWalking(slip=slip)
    live = ~ours.terminal  # Gymnasium never acts from its goal, so its goal row is not absorbing
    np.testing.assert_allclose(ours.P[live], P[live], atol=1e-12)
    if slip == 0.0:
        np.testing.assert_array_equal(ours.R[live][P[live] > 0], R[live][P[live] > 0])


def test_default_gridworld_layout_and_rewards():
    env = GridWorld()
    assert env.layout == ["S....", ".....", ".....", ".....", "....G"]
    assert env.num_states == 25 and env.observation_shape == () and env.num_actions == 4
    assert env.terminal.tolist() == [False] * 24 + [True]
    assert env.R[23, RIGHT, 24] == 1.0 and env.R[0, RIGHT, 1] == -0.01
    assert env.P[0, UP, 0] == 1.0 and env.R[0, UP, 0] == -0.01  # bumping costs a step
    assert str(env).splitlines()[0] == "S...."
    assert GridWorld(size=3).layout == ["S..", "...", "..G"]


def test_gridworld_slip_and_walls_and_layout_strings():
    env = GridWorld(layout="S.W/..G", slip=0.2, step_reward=0.0)
    # state 1, RIGHT: intended into the wall (stay 1) 0.8; slips UP (bump, 1) and DOWN (4) 0.1
    assert env.P[1, RIGHT, 1] == pytest.approx(0.9) and env.P[1, RIGHT, 4] == pytest.approx(0.1)
    assert env.terminal.tolist() == [False, False, True, False, False, True]
    np.testing.assert_allclose(env.P.sum(axis=2), 1.0)
    assert GridWorld(layout=["S.", ".G"]).layout == GridWorld(layout="S.\n.G").layout


@pytest.mark.parametrize(
    ("layout", "match"),
    [
        (["S.", "..."], "layout: every row must have 2 cells"),
        (["SX", ".G"], "layout: unknown cell 'X' in row 0"),
        ([".."], "layout: expected at least one start cell 'S'"),
        (["SCS"], "a cliff needs exactly one start cell"),
    ],
)
def test_gridworld_bad_layouts(layout, match):
    with pytest.raises(ValueError, match=match):
        GridWorld(layout=layout)


def test_gridworld_sampling_frequencies_match_P():
    env = FrozenLake(n=3000, seed=1, max_steps=None)
    env.reset()
    step = env.step(np.full(3000, RIGHT))
    counts = np.bincount(step.final_obs, minlength=16) / 3000
    np.testing.assert_allclose(counts, env.P[0, RIGHT], atol=0.04)
    assert step.reward.dtype == np.float64 and step.obs.dtype == np.int64


def test_gridworld_autoreset_and_truncation():
    env = GridWorld(size=2, n=2, seed=0, max_steps=3)
    env.reset()
    step = env.step(np.array([RIGHT, LEFT]))  # copy 0 to state 1; copy 1 bumps
    step = env.step(np.array([DOWN, LEFT]))  # copy 0 reaches the goal 3
    assert step.terminated.tolist() == [True, False]
    assert step.final_obs.tolist() == [3, 0] and step.obs.tolist() == [0, 0]
    assert step.reward.tolist() == [1.0, -0.01]
    step = env.step(np.array([LEFT, LEFT]))
    assert step.truncated.tolist() == [False, True] and not step.terminated.any()
    assert env.episode_lengths == [2, 3]
    assert env.episode_returns == pytest.approx([0.99, -0.03])


def test_gridworld_seeding():
    def run(seed):
        env = FrozenLake(n=4, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        return np.stack([env.step(rng.integers(0, 4, 4)).obs for _ in range(200)])

    np.testing.assert_array_equal(run(1), run(1))
    assert not np.array_equal(run(1), run(2))


def test_gridworld_bad_actions():
    env = GridWorld(n=2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="actions: values must be < 4, got 4"):
        env.step(np.array([0, 4]))
    with pytest.raises(TypeError, match="actions: expected integers, got dtype float64"):
        env.step(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"actions: expected shape \(2,\)"):
        env.step(np.array([0, 1, 2]))


def _arrow_directions(ax):
    """Screen direction (dx, dy) of each quiver arrow, y pointing up on screen."""
    quivers = [c for c in ax.collections if hasattr(c, "U")]
    xy = np.concatenate([np.column_stack([q.X, q.Y]) for q in quivers]).reshape(-1, 2)
    tips = xy + np.concatenate([np.column_stack([q.U, q.V]) for q in quivers]).reshape(-1, 2)
    to_screen = ax.transData.transform
    return to_screen(tips) - to_screen(xy)


@pytest.mark.parametrize(
    ("action", "sign"), [(LEFT, (-1, 0)), (RIGHT, (1, 0)), (UP, (0, 1)), (DOWN, (0, -1))]
)
def test_plot_arrows_point_the_way_the_action_moves(action, sign):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env = GridWorld(size=3)
    ax = rc.plot_grid(env, values=np.arange(9.0), policy=np.full(9, action), title="t")
    d = _arrow_directions(ax)
    assert len(d) == 8  # no arrow on the terminal goal
    assert (np.sign(np.round(d, 6)) == sign).all()
    assert ax.get_title() == "t"
    # probabilities: one arrow per action with positive probability
    probs = np.zeros((9, 4))
    probs[:, action] = 1.0
    d2 = _arrow_directions(rc.plot_grid(env, policy=probs))
    assert len(d2) == 8
    assert (np.sign(np.round(d2, 6)) == sign).all()
    # the cliff's cells and the goal get no arrow: 48 cells - 10 cliff - 1 goal
    assert len(_arrow_directions(rc.plot_grid(CliffWalking(), policy=np.full(48, action)))) == 37
    plt.close("all")


def test_plot_of_a_uniform_policy_draws_four_equal_arrows_per_cell():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = rc.plot_grid(GridWorld(size=3), policy=np.full((9, 4), 0.25))
    d = _arrow_directions(ax)
    assert len(d) == 4 * 8
    data_lengths = np.concatenate([np.hypot(q.U, q.V) for q in ax.collections if hasattr(q, "U")])
    np.testing.assert_allclose(data_lengths, data_lengths[0], rtol=1e-6)
    directions = {tuple(np.sign(np.round(v, 6)).astype(int)) for v in d}
    assert directions == {(-1, 0), (1, 0), (0, 1), (0, -1)}
    plt.close("all")


def test_plot_checks_shapes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    env = GridWorld(size=3)
    with pytest.raises(ValueError, match=r"values: expected shape \(9,\)"):
        rc.plot_grid(env, values=np.zeros(8))
    with pytest.raises(ValueError, match=r"policy: expected shape \(9,\)"):
        rc.plot_grid(env, policy=np.zeros(8, dtype=int))
    with pytest.raises(ValueError, match="policy: actions must be in"):
        rc.plot_grid(env, policy=np.full(9, 4))
    plt.close("all")


# ----------------------------------------------------------------------------- TabularMDP
def _two_state_model():
    P = np.zeros((2, 2, 2))
    P[0, 0] = [0.5, 0.5]
    P[0, 1] = [0.0, 1.0]
    P[1, :, 1] = 1.0
    R = np.zeros((2, 2, 2))
    R[0, :, 1] = 2.0
    return P, R, np.array([False, True]), np.array([1.0, 0.0])


def test_tabular_mdp_samples_model():
    P, R, terminal, start = _two_state_model()
    env = TabularMDP(P, R, terminal, start, n=1000, seed=0)
    assert env.reset().tolist() == [0] * 1000
    step = env.step(np.zeros(1000, dtype=int))
    frac = step.terminated.mean()
    assert 0.45 < frac < 0.55
    assert (step.reward[step.terminated] == 2.0).all() and (step.reward[~step.terminated] == 0).all()
    step = env.step(np.ones(1000, dtype=int))
    assert step.terminated.all() and (step.obs == 0).all() and (step.final_obs == 1).all()


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda m: (m[0][:, :, :1],) + m[1:], ValueError, r"P: expected shape \[S, A, S\]"),
        (lambda m: (m[0] * 0.9,) + m[1:], ValueError,
         r"P: each row P\[s, a, :\] of a non-terminal state must sum to 1, but P\[0, 0, :\] sums to 0.9"),
        (lambda m: (m[0], m[1][:1]) + m[2:], ValueError,
         r"R: expected shape \(2, 2, 2\) \(R\[s, a, s'\], as P\) or \(2, 2\) .*got \(1, 2, 2\)"),
        (lambda m: m[:2] + (np.array([0.5, 1.0]), m[3]), TypeError, "terminal: expected booleans"),
        (lambda m: m[:2] + (None, m[3]), TypeError, "terminal: expected a bool array"),
        (lambda m: m[:2] + (np.array([True, True]), m[3]), ValueError, "every state is terminal"),
        (lambda m: m[:3] + (np.array([0.5, 0.4]),), ValueError,
         "start: expected a distribution over the 2 states"),
        (lambda m: m[:3] + (np.array([0.5, 0.5]),), ValueError,
         "start: state 1 is terminal but has start probability 0.5"),
        (lambda m: (np.where(np.arange(2)[:, None, None] == 0, -m[0], m[0]),) + m[1:],
         ValueError, r"P: probabilities must be >= 0, got P\[0, 0, 0\] = -0.5"),
    ],
)
def test_tabular_mdp_validation_errors(change, error, match):
    """One validator (rc.check_mdp) serves environments and dynamic programming."""
    with pytest.raises(error, match=match):
        TabularMDP(*change(_two_state_model()))


# --------------------------------------------------------------------------------- Bandit
def test_bandit_regret_and_optimal_action():
    env = Bandit(arms=5, n=3, seed=0)
    assert env.means.shape == (3, 5)
    np.testing.assert_array_equal(env.optimal_arm, env.means.argmax(1))
    best = env.optimal_arm
    worst = env.means.argmin(1)
    env.step(best)
    assert env.regret.tolist() == [0.0, 0.0, 0.0]
    env.step(worst)
    gap = env.means.max(1) - env.means.min(1)
    np.testing.assert_allclose(env.regret, gap)
    np.testing.assert_allclose(env.optimal_action, [0.5, 0.5, 0.5])
    env.reset()
    assert env.regret.tolist() == [0.0] * 3 and env.steps == 0


def test_bandit_rewards_are_mean_plus_unit_noise():
    env = Bandit(arms=3, n=20000, seed=1)
    rewards = env.step(np.zeros(20000, dtype=int))
    noise = rewards - env.means[:, 0]
    assert rewards.shape == (20000,) and rewards.dtype == np.float64
    assert abs(noise.mean()) < 0.03 and abs(noise.std() - 1.0) < 0.03
    assert abs(env.means.mean()) < 0.03 and abs(env.means.std() - 1.0) < 0.03


def test_bandit_seeding_and_errors():
    a, b, c = Bandit(seed=3), Bandit(seed=3), Bandit(seed=4)
    np.testing.assert_array_equal(a.means, b.means)
    assert not np.array_equal(a.means, c.means)
    assert a.step(0).tolist() == b.step(0).tolist()
    a.reset(seed=4)
    np.testing.assert_array_equal(a.means, c.means)
    with pytest.raises(ValueError, match="actions: values must be < 10, got 10"):
        a.step(np.array([10]))
    with pytest.raises(ValueError, match="arms: expected a positive int"):
        Bandit(arms=0)


# ------------------------------------------------------------------------------- adapter
def test_from_gymnasium_single_and_vector():
    gym = pytest.importorskip("gymnasium")
    env = from_gymnasium(gym.make("CartPole-v1"))
    assert (env.n, env.observation_shape, env.num_actions) == (1, (4,), 2)
    ours = CartPole(seed=0)
    np.testing.assert_array_equal(env.reset(seed=0), ours.reset())
    for _ in range(40):
        a, b = env.step(np.array([1])), ours.step(np.array([1]))
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    assert env.episode_lengths == ours.episode_lengths and len(env.episode_lengths) >= 3

    with pytest.raises(ValueError, match="same-step autoreset"):
        from_gymnasium(gym.make_vec("CartPole-v1", num_envs=2))
    venv = from_gymnasium(gym.make_vec(
        "CartPole-v1", num_envs=2, vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}))
    ours = CartPole(n=2, seed=0)
    np.testing.assert_array_equal(venv.reset(seed=0), ours.reset())
    for _ in range(40):
        a, b = venv.step(np.array([1, 1])), ours.step(np.array([1, 1]))
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    assert venv.episode_returns == ours.episode_returns


def test_from_gymnasium_rejects_other_objects():
    with pytest.raises(TypeError, match="env: expected a gymnasium Env"):
        from_gymnasium(object())


@pytest.mark.parametrize("n", [1, 3])  # n = 1 takes the scalar path, n > 1 the array path
def test_tabular_mdp_draws_follow_documented_sampler(n):
    """Both paths: reset draws ``rng.random(n)`` and inverts the start CDF; each step draws
    ``rng.random(n)`` and inverts the CDF of ``P[s, a]``; autoresets draw ``rng.random(k)``
    for the ``k`` finished copies in index order."""
    env = FrozenLake(n=n, seed=7, max_steps=6)
    rng = np.random.default_rng(7)
    cdf = np.cumsum(env.P, axis=2)
    start_cdf = np.cumsum(env.start)
    state = np.minimum(np.searchsorted(start_cdf, rng.random(n), side="right"), 15)
    assert env.reset().tolist() == state.tolist()
    actions = np.random.default_rng(0).integers(0, 4, size=(60, n))
    lengths = np.zeros(n, dtype=int)
    finished = 0
    for a in actions:
        u = rng.random(n)
        nxt = np.array([min(np.searchsorted(cdf[s, b], x, side="right"), 15)
                        for s, b, x in zip(state, a, u, strict=True)])
        lengths += 1
        done = env.terminal[nxt] | (lengths >= 6)
        step = env.step(a)
        assert step.final_obs.tolist() == nxt.tolist()
        assert step.reward.tolist() == env.R[state, a, nxt].tolist()
        assert step.done.tolist() == done.tolist()
        nxt[done] = np.minimum(np.searchsorted(start_cdf, rng.random(done.sum()), side="right"),
                               15)
        lengths[done] = 0
        finished += done.sum()
        assert step.obs.tolist() == nxt.tolist()
        state = nxt
    assert finished > 5 and len(env.episode_lengths) == finished


def test_tabular_state_setter_validates():
    env = FrozenLake(n=2, seed=0)
    env.reset()
    env.state = np.array([1, 2])
    assert env.step(np.array([RIGHT, RIGHT])).final_obs.tolist() in (
        [[a, b] for a in (1, 2, 5) for b in (2, 3, 6)])
    with pytest.raises(ValueError, match="state: state 5 is terminal"):
        env.state = np.array([5, 0])
    with pytest.raises(ValueError, match="state: values must be < 16, got 16"):
        env.state = np.array([16, 0])


def test_tabular_never_samples_zero_probability_states_despite_rounding():
    P = np.zeros((3, 1, 3))
    P[0, 0] = [0.3, 0.7 - 1e-10, 0.0]  # sums to just under 1 (within the validation tolerance)
    P[1, 0, 1] = P[2, 0, 2] = 1.0
    env = TabularMDP(P, np.zeros_like(P), np.array([False, True, True]),
                     np.array([1.0, 0.0, 0.0]), n=20000, seed=0)
    env.reset()
    # force draws at the very top of [0, 1): every one must land on state 1, never on state 2
    class TopOfUnitInterval:
        def random(self, k=None):
            return np.full(k, 1.0 - 1e-16) if k else 1.0 - 1e-16

    env._rng = TopOfUnitInterval()
    step = env.step(np.zeros(20000, dtype=int))
    assert (step.final_obs == 1).all()


@pytest.mark.parametrize("reward", ["step_reward", "goal_reward", "hole_reward", "cliff_reward"])
@pytest.mark.parametrize(("bad", "error"), [(float("nan"), ValueError), (float("inf"), ValueError),
                                            ("1", TypeError), (True, TypeError), (None, TypeError)])
def test_gridworld_reward_settings_are_finite_numbers(reward, bad, error):
    """A NaN reward was blamed on ``R``; a string or a bool was converted silently."""
    with pytest.raises(error, match=rf"^{reward}: expected a (finite )?number"):
        GridWorld(size=2, **{reward: bad})


def test_a_valid_vector_env_stand_in_is_wrapped():
    """from_gymnasium reads only attributes: a stand-in with same-step autoreset is accepted
    (without gymnasium installed), with its ``n`` from ``num_envs``."""
    class Space:
        shape, n = (3,), 2

    class Vector:
        num_envs, metadata = 2, {"autoreset_mode": "SAME_STEP"}
        single_action_space = single_observation_space = Space()

        def reset(self, seed=None):
            return np.zeros((2, 3)), {}

        def step(self, actions):
            return np.zeros((2, 3)), np.ones(2), np.zeros(2, bool), np.zeros(2, bool), {}

    env = from_gymnasium(Vector())
    assert (env.n, env.observation_shape, env.num_actions) == (2, (3,), 2)
    env.reset(seed=0)
    assert env.step(np.array([0, 1])).reward.tolist() == [1.0, 1.0]


def test_cartpole_group_leaves_each_env_as_its_own_steps_would():
    """CartPoleGroup steps several CartPoles as one array computation; every Step, state, episode
    statistic and later start must be what each env's own step() gives, for 1-copy envs (whose
    own step takes the scalar path), different time limits and none, through many autoresets."""
    from rlcourse.envs.cartpole import CartPoleGroup

    def make():
        envs = [rc.CartPole(n=n, max_steps=cap) for n, cap in ((5, 500), (1, 500), (3, 20), (4, None))]
        for i, env in enumerate(envs):
            env.reset(seed=7 * i)
        return envs

    alone, grouped = make(), make()
    group = CartPoleGroup(grouped)
    rng = np.random.default_rng(0)
    for _ in range(1_500):
        actions = [rng.integers(0, 2, env.n) for env in alone]
        expected = [env.step(a) for env, a in zip(alone, actions)]
        got = group.step(np.concatenate(actions))
        for a, b in zip(expected, got):
            for field in a._fields:
                np.testing.assert_array_equal(getattr(b, field), getattr(a, field))
    for a, b in zip(alone, grouped):
        np.testing.assert_array_equal(b.state, a.state)
        assert b.episode_returns == a.episode_returns and len(a.episode_returns) > 20
    for a, b in zip(alone, grouped):  # the start generators are where they were, too
        np.testing.assert_array_equal(b.reset(), a.reset())
    with pytest.raises(ValueError, match="actions"):
        group.step(np.zeros(3, dtype=int))
