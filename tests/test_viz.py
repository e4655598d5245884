"""Renderers draw each state where it is; animations record the real episode; the player's HTML
is small, self-contained and deterministic. (The player running in a browser: test_viz_browser.)"""

import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import rlcourse as rc
from rlcourse.viz.player import _status
from rlcourse.viz.renderers import (
    AGENT_COLOUR,
    CART_COLOUR,
    FALLEN_COLOUR,
    O_COLOUR,
    POLE_COLOUR,
    PULLED_COLOUR,
    WIN_COLOUR,
    X_COLOUR,
    cartpole_geometry,
)

TOP = Path(__file__).resolve().parent.parent


def rgb(colour):
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])


def pixel(image, x, y, scale):
    """The pixel under logical point (x, y) of an image drawn at ``scale``."""
    return image[int(y * scale), int(x * scale)].astype(int)


def close(a, b, tol=12):
    return np.abs(np.asarray(a, int) - np.asarray(b, int)).max() <= tol


def balance(obs):
    """Push towards where the pole is falling: keeps CartPole up for all 500 steps."""
    return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)


def push_right(obs):
    return np.ones(len(obs), dtype=np.int64)


# -- renderers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, 2.0, 1.5])
def test_every_renderer_gives_rgb_uint8_of_the_scene_size(scale):
    scenes = [rc.cartpole_scene([0.1, 0, 0.05, 0]),
              rc.gridworld_scene(rc.CliffWalking(), 36),
              rc.tictactoe_scene(rc.TicTacToe().initial_state()),
              rc.bandit_scene(np.zeros(10), means=np.arange(10) / 10, pulled=3)]
    for scene in scenes:
        image = rc.rasterize(scene, scale)
        assert image.dtype == np.uint8
        assert image.shape == (round(scene.height * scale), round(scene.width * scale), 3)


@pytest.mark.parametrize("x, theta", [(0.0, 0.0), (0.0, 0.15), (0.0, -0.15), (1.3, 0.1),
                                      (-2.0, -0.2), (2.2, 0.19)])
def test_pole_is_drawn_at_the_angle_and_position_the_state_says(x, theta):
    # Independent of the renderer's code: 50 px per metre, track centre at 150, a 1 m pole from a
    # pivot at y = 94 (4 px under the top of a 15 px cart on the track at y = 105).
    scale = 2.0
    image = rc.rasterize(rc.cartpole_scene([x, 0.0, theta, 0.0]), scale)
    pivot = np.array([150 + 50 * x, 94.0])
    direction = np.array([math.sin(theta), -math.cos(theta)])  # theta > 0 leans right
    for along in (0.3, 0.6, 0.95):
        assert close(pixel(image, *(pivot + 50 * along * direction), scale), rgb(POLE_COLOUR)), along
    for beyond in (1.1, 1.3):  # nothing of the pole past its tip
        assert not close(pixel(image, *(pivot + 50 * beyond * direction), scale), rgb(POLE_COLOUR), 60)
    # the pole's side: a few pixels across it is background, not pole
    normal = np.array([math.cos(theta), math.sin(theta)])
    assert not close(pixel(image, *(pivot + 40 * direction + 6 * normal), scale), rgb(POLE_COLOUR), 60)
    tip = cartpole_geometry([x, 0, theta, 0])["tip"]
    assert np.allclose(tip, pivot + 50 * direction)


@pytest.mark.parametrize("x", [-2.0, -0.5, 0.0, 1.0, 2.3])
def test_cart_moves_with_x(x):
    scale = 2.0
    image = rc.rasterize(rc.cartpole_scene([x, 0, 0, 0]), scale)
    cart = np.all(image == rgb(CART_COLOUR), axis=2)
    columns = np.flatnonzero(cart.any(axis=0)) / scale
    assert abs(columns.mean() - (150 + 50 * x)) < 1.0
    assert 24 <= columns.max() - columns.min() + 1 / scale <= 26  # 0.5 m wide


def test_pole_turns_red_beyond_a_limit_and_float32_observations_draw_the_same():
    up = rc.cartpole_scene([0, 0, 0.2, 0])
    fallen_angle = rc.cartpole_scene([0, 0, 0.21, 0])  # 12 degrees is 0.2094 rad
    fallen_x = rc.cartpole_scene([2.45, 0, 0, 0])
    colour = lambda s: [sh for sh in s.shapes if sh[0] == "l"][-1][1][1]
    assert colour(up) == POLE_COLOUR
    assert colour(fallen_angle) == colour(fallen_x) == FALLEN_COLOUR
    state = np.array([0.1234567, 0.2, -0.0345678, 0.1])
    assert rc.cartpole_scene(state) == rc.cartpole_scene(state.astype(np.float32))


def test_grid_colours_the_agent_cell_only():
    env = rc.CliffWalking()
    scale = 1.0
    for state in (36, 0, 17, 47):
        image = rc.rasterize(rc.gridworld_scene(env, state), scale)
        r, c = divmod(state, 12)
        agent = [s for s in range(48) if close(pixel(image, 32 * (s % 12) + 16, 32 * (s // 12) + 16, scale),
                                                rgb(AGENT_COLOUR))]
        assert agent == [state], (state, agent, (r, c))


def test_grid_draws_values_arrows_and_trail():
    env = rc.FrozenLake(map_name="4x4", is_slippery=False)
    plain = rc.gridworld_scene(env, 0)
    values = np.linspace(0, 1, 16)
    shaded = rc.rasterize(rc.gridworld_scene(env, 0, values=values), 1.0)
    low, high = pixel(shaded, 32 + 4, 4, 1.0), pixel(shaded, 32 * 2 + 4, 32 * 3 + 4, 1.0)  # cells 1, 14
    assert low[0] > low[1] and high[1] > high[0]  # reddish where V is low, greenish where high
    arrows = rc.gridworld_scene(env, 0, policy=np.full(16, rc.RIGHT))
    free = sum(c in "SF." for c in "".join(env.layout))
    assert len(arrows.shapes) == len(plain.shapes) + 2 * free  # a shaft and a head per free cell
    heads = [sh for sh in arrows.shapes if sh[0] == "p"]
    tips = [max(sh[2::2]) - min(sh[2::2]) for sh in heads]
    assert all(t > 0 for t in tips)  # RIGHT arrows: their heads extend along x
    trail = rc.gridworld_scene(env, 5 - 1, visited=[0, 1, 2, 4])  # the agent's own cell has no dot
    assert len(trail.shapes) == len(plain.shapes) + 3


def test_tictactoe_draws_marks_the_winning_line_and_status():
    board = (1, -1, 0,
             0, 1, -1,
             0, 0, 1)
    scale = 2.0
    image = rc.rasterize(rc.tictactoe_scene(board, last=8), scale)
    centre = lambda cell: (10 + 40 * (cell % 3) + 20, 10 + 40 * (cell // 3) + 20)
    assert close(pixel(image, *centre(4), scale), rgb(WIN_COLOUR))  # the diagonal is struck through
    x, y = centre(1)
    assert close(pixel(image, x + 12, y, scale), rgb(O_COLOUR))  # O: a ring of radius 12
    assert close(pixel(image, x, y, scale), [255, 255, 255])
    assert close(pixel(image, centre(0)[0] + 8, centre(0)[1] - 8, scale), rgb(X_COLOUR))  # off the win line
    texts = [sh[4] for sh in rc.tictactoe_scene(board).shapes if sh[0] == "t"]
    assert texts == ["X wins"]
    state = rc.TicTacToeState((1, 0, 0, 0, 0, 0, 0, 0, 0), -1)
    assert [sh[4] for sh in rc.tictactoe_scene(state).shapes if sh[0] == "t"] == ["O to move"]
    assert rc.tictactoe_scene(state) == rc.tictactoe_scene(np.array(state.board).reshape(3, 3))


def test_bandit_highlights_the_pulled_arm():
    q = np.array([0.5, 1.0, -0.5])
    scene = rc.bandit_scene(q, means=[0.2, 1.2, -1.0], pulled=1, ylim=(-2, 2))
    bars = [sh for sh in scene.shapes if sh[0] == "r"]
    assert [b[1][0] == PULLED_COLOUR for b in bars] == [False, True, False]
    heights = [b[5] for b in bars]
    assert heights[1] > heights[0] > 0 and heights[2] > 0  # |q| on a fixed axis
    image = rc.render(rc.Bandit(arms=3, seed=0), q, pulled=1)
    assert image.shape == (300, 400, 3)


def test_render_draws_the_env_current_state():
    env = rc.CartPole(seed=3)
    env.reset()
    env.state = [[1.0, 0.0, 0.1, 0.0]]
    assert np.array_equal(rc.render(env), rc.rasterize(rc.cartpole_scene([1.0, 0, 0.1, 0])))
    grid = rc.GridWorld(size=4, seed=0)
    grid.reset()
    assert np.array_equal(rc.render(grid, scale=1), rc.rasterize(rc.gridworld_scene(grid, 0), 1))


def test_rendering_is_deterministic():
    make = lambda: rc.rasterize(rc.gridworld_scene(rc.CliffWalking(), 25, values=np.arange(48.0),
                                                   policy=np.zeros(48, int), visited=[36, 24]))
    assert make().tobytes() == make().tobytes()
    assert rc.cartpole_scene([0.3, 0, -0.1, 0]) == rc.cartpole_scene([0.3, 0, -0.1, 0])


@pytest.mark.parametrize("call, match", [
    (lambda: rc.cartpole_scene([0.0, 0.0, 0.1]),
     r"state: expected CartPole's state of shape \(4,\).*got shape \(3,\)"),
    (lambda: rc.cartpole_scene(np.zeros((1, 4))), r"state: .*got shape \(1, 4\)"),
    (lambda: rc.cartpole_scene([0, 0, np.nan, 0]), r"state: expected finite values"),
    (lambda: rc.gridworld_scene(rc.CliffWalking(), 48),
     r"state: expected an int cell index in \[0, 48\), got 48"),
    (lambda: rc.gridworld_scene(rc.CliffWalking(), 3.0), r"state: expected an int cell index"),
    (lambda: rc.gridworld_scene(rc.CliffWalking(), 0, values=np.zeros(3)),
     r"values: expected 48 finite values"),
    (lambda: rc.gridworld_scene(rc.CliffWalking(), 0, policy=np.zeros(48)),
     r"policy: expected 48 int actions"),
    (lambda: rc.gridworld_scene(rc.CartPole(), 0), r"env: expected a GridWorld.*got CartPole"),
    (lambda: rc.tictactoe_scene((1, 2, 0, 0, 0, 0, 0, 0, 0)),
     r"state: expected a TicTacToeState or a board of 9"),
    (lambda: rc.tictactoe_scene((0,) * 9, last=9), r"last: expected a cell index 0..8"),
    (lambda: rc.bandit_scene([]), r"estimates: expected a non-empty 1-D array"),
    (lambda: rc.bandit_scene([0, 1], means=[0, 1, 2]), r"means: expected shape \(2,\)"),
    (lambda: rc.bandit_scene([0, 1], pulled=2), r"pulled: expected an arm index in \[0, 2\)"),
    (lambda: rc.render(rc.TicTacToe()), r"state: required for a TicTacToe"),
    (lambda: rc.render(rc.CartPole()), r"state: env has not been reset"),
    (lambda: rc.rasterize(rc.Scene(10, 10, (("x", (None, None, 1, 1), 0),))), r"scene: shape 0 is"),
    (lambda: rc.rasterize(rc.Scene(10, 10, (("l", (None, "#000000", 1, 1), 0, 0, 1),))), r"even number"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_unknown_env_is_a_type_error_naming_what_is_supported():
    env = rc.TabularMDP(np.ones((1, 1, 1)), np.zeros((1, 1, 1)), np.array([False]), np.ones(1))
    with pytest.raises(TypeError, match=r"env: expected a CartPole, GridWorld .*got TabularMDP"):
        rc.render(env, 0)
    with pytest.raises(TypeError, match=r"env: .*got TabularMDP"):
        rc.animate(env, lambda obs: np.zeros(1, int))
    with pytest.raises(TypeError, match=r"bandit_scene"):
        rc.animate(rc.Bandit(), lambda obs: np.zeros(1, int))


# -- recording ---------------------------------------------------------------------------------
def test_animate_records_the_real_last_state_not_the_next_start():
    env = rc.CartPole(seed=0)
    anim = rc.animate(env, push_right, episodes=2, seed=5)
    lengths = env.episode_lengths
    assert len(lengths) == 2
    (panel,) = anim.panels
    assert panel.starts == (0, lengths[0] + 1)
    assert anim.num_frames == sum(lengths) + 2  # each episode: its start and one frame per step
    pole = lambda scene: [sh for sh in scene.shapes if sh[0] == "l"][-1][1][1]
    ends = [lengths[0], sum(lengths) + 1]
    assert [pole(panel.scenes[k]) for k in ends] == [FALLEN_COLOUR, FALLEN_COLOUR]  # the real end
    assert pole(panel.scenes[ends[0] + 1]) == POLE_COLOUR  # then the next episode's start
    assert panel.returns[ends[0]] == lengths[0] and panel.returns[ends[0] + 1] == 0
    mean = float(np.mean(lengths))
    assert panel.caption == f"mean return {mean:g} over 2 episodes"
    assert _status(panel, ends[0] + 1) == "episode 2/2 \u00b7 step 0 \u00b7 return 0"


def test_animate_is_deterministic_and_side_by_side_runs_each_policy_from_the_same_seed():
    a = rc.animate(rc.CartPole(), {"push right": push_right, "balance": balance}, seed=1)
    b = rc.animate(rc.CartPole(), {"push right": push_right, "balance": balance}, seed=1)
    assert a.to_html() == b.to_html()
    right, steady = a.panels
    assert right.scenes[0] == steady.scenes[0]  # the same start
    assert steady.caption == "balance \u2014 return 500" and len(steady.scenes) == 501
    assert right.caption.startswith("push right \u2014 return ") and len(right.scenes) < 30
    assert a.num_frames == 501
    # the short panel holds its last frame in a composed frame
    last, k = len(right.scenes) - 1, len(right.scenes[-1].shapes) + 2  # caption, scene, status
    assert a.scene(400).shapes[:k] == a.scene(last).shapes[:k]
    assert a.scene(400).shapes[k:] != a.scene(last).shapes[k:]
    assert "frames per panel" in repr(a) and "0x" not in repr(a)


def test_greedy_cliff_path_from_a_q_table():
    env = rc.CliffWalking()
    # The optimal path: up from the start, right along the cliff edge, down into the goal.
    Q = np.zeros((48, 4))
    Q[36, rc.UP] = 1
    Q[24:35, rc.RIGHT] = 1
    Q[35, rc.DOWN] = 1
    anim = rc.animate(env, Q)
    (panel,) = anim.panels
    assert panel.caption == "return -13" and len(panel.scenes) == 14
    agents = [[sh for sh in s.shapes if sh[0] == "c"][-1] for s in panel.scenes]
    cells = [int(a[3] // 32) * 12 + int(a[2] // 32) for a in agents]
    assert cells == [36, *range(24, 36), 47]
    arrows = [sh for sh in panel.scenes[0].shapes if sh[0] == "p"]
    assert len(arrows) == 37  # the greedy arrows under the path: every cell the agent can act in
    stuck = rc.animate(env, np.zeros((48, 4)), max_steps=20)  # argmax 0 = LEFT: never leaves the start
    assert stuck.panels[0].caption == "return -20 (cut at 20 steps)" and stuck.num_frames == 21
    with pytest.raises(ValueError, match=r"policy: expected an action table \[48\] of ints in \[0, 4\)"):
        rc.animate(env, np.zeros((48, 3)))
    with pytest.raises(TypeError, match=r"policy: a table policy needs a grid world"):
        rc.animate(rc.CartPole(), np.zeros(4, int))


def test_replay_stored_states_with_rewards():
    env = rc.CliffWalking()
    states = [36, 24, 36, 24, 25]  # up, into the cliff (back to the start), up, right
    anim = rc.animate(env, states=states, rewards=[-1, -100, -1, -1], caption="stored")
    (panel,) = anim.panels
    assert panel.caption == "stored \u2014 return -103"
    assert panel.returns == (0, -1, -101, -102, -103)
    trajectory = np.array([[0.0, 0, 0.0, 0], [0.1, 0, 0.05, 0], [0.2, 0, 0.1, 0]])
    assert rc.animate(rc.CartPole(), states=trajectory).num_frames == 3
    with pytest.raises(ValueError, match=r"states: expected at least one state, got an empty trajectory"):
        rc.animate(rc.CartPole(), states=np.zeros((0, 4)))
    with pytest.raises(ValueError, match=r"states: expected CartPole states of shape \[T, 4\].*\(3, 3\)"):
        rc.animate(rc.CartPole(), states=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"states: expected the visited cells .* got values 0..48"):
        rc.animate(env, states=[0, 48])
    with pytest.raises(TypeError, match=r"rewards: only with states="):
        rc.animate(env, np.zeros(48, int), rewards=[1.0])
    with pytest.raises(ValueError, match=r"rewards: expected 4 finite rewards"):
        rc.animate(env, states=states, rewards=[-1])
    with pytest.raises(TypeError, match=r"exactly one of them"):
        rc.animate(env)
    with pytest.raises(TypeError, match=r"exactly one of them"):
        rc.animate(env, np.zeros(48, int), states=states)
    with pytest.raises(ValueError, match=r"episodes: expected a positive int, got 0"):
        rc.animate(env, np.zeros(48, int), episodes=0)


def test_tictactoe_game_from_states_and_from_a_policy():
    game = rc.TicTacToe()
    moves = [4, 0, 2, 6, 3, 5, 1, 7, 8]
    states = [game.initial_state()]
    for m in moves:
        states.append(game.apply(states[-1], m))
    anim = rc.animate(game, states=states, caption="stored game")
    (panel,) = anim.panels
    assert panel.caption == "stored game \u2014 draw" and panel.unit == "move"
    shaded = [[sh for sh in s.shapes if sh[0] == "r"] for s in panel.scenes]
    assert shaded[0] == [] and all(len(s) == 1 for s in shaded[1:])  # the move just made
    boards = [s.board for s in states]  # bare boards work too
    assert rc.animate(game, states=boards, caption="stored game").to_html() == anim.to_html()
    first_legal = lambda s: game.legal_actions(s)[0]
    played = rc.animate(game, first_legal)
    assert played.panels[0].caption == "X wins" and played.num_frames == 8  # X takes 0, 2, 4 ... 6
    with pytest.raises(ValueError, match=r"states\[1\]: expected a TicTacToeState or a board of 9 ints"):
        rc.animate(game, states=[game.initial_state(), (0, 0)])


# -- the player's HTML -------------------------------------------------------------------------
def test_player_html_is_deterministic_self_contained_and_small():
    anim = rc.animate(rc.CartPole(), balance, seed=0)
    html = anim.to_html()
    assert html == rc.animate(rc.CartPole(), balance, seed=0)._repr_html_()
    assert len(html) < 100_000  # a 500-step episode: tens of KB (each distinct shape once)
    page = anim.to_html(page=True)
    for text in (html, page):
        assert not re.search(r"https?:|//[a-z]|src=|href=|url\(|@import|fetch\(|XMLHttpRequest", text, re.I)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    other = rc.animate(rc.CartPole(), balance, seed=1).to_html()
    ids = [re.search(r'data-rlc="([0-9a-f]{12})"', h).group(1) for h in (html, other)]
    assert ids[0] != ids[1]  # the id is a hash of the content, so two players never share one


def test_player_data_lists_each_shape_once_and_frames_as_indices():
    anim = rc.animate(rc.CliffWalking(), states=[36] * 50)
    data = json.loads(re.search(r"var D = (\{.*?\}), id", anim.to_html()).group(1))
    (panel,) = data["panels"]
    assert len(panel["frames"]) == 50 and all(f == panel["frames"][0] for f in panel["frames"])
    assert len(data["shapes"]) == len(anim.panels[0].scenes[0].shapes)
    assert len(panel["base"]) + len(panel["frames"][0]) == len(data["shapes"])
    caption = rc.animate(rc.CliffWalking(), states=[36], caption="</script><b>x</b>").to_html()
    assert "</script><b>" not in caption and caption.count("</script>") == 1


def test_save_html_and_gif(tmp_path):
    anim = rc.animate(rc.CartPole(), {"right": push_right, "balance": balance}, seed=0, max_steps=40)
    page = anim.save(tmp_path / "cartpole.html")
    assert page.read_text(encoding="utf-8") == anim.to_html(page=True)
    gif = anim.save(tmp_path / "cartpole.gif")
    with Image.open(gif) as image:
        assert image.format == "GIF" and image.n_frames == anim.num_frames == 41
        assert image.size == (anim.frame(0, 1.0).shape[1], anim.frame(0, 1.0).shape[0])
        image.seek(len(anim.panels[0].scenes) - 1)  # the fallen pole's red survives the palette
        frame = np.asarray(image.convert("RGB"))
    assert np.all(frame == rgb(FALLEN_COLOUR), axis=2).sum() > 50
    assert anim.gif() == Image.open(io.BytesIO(anim.gif())).fp.getvalue()  # deterministic bytes
    with pytest.raises(ValueError, match=r"path: expected a name ending in .html or .gif"):
        anim.save(tmp_path / "cartpole.mp4")


def test_animation_from_scenes_for_the_bandit():
    rng = np.random.default_rng(0)
    env = rc.Bandit(arms=5, seed=0)
    env.reset()
    q, n, scenes, rewards = np.zeros(5), np.zeros(5), [], []
    for _ in range(20):
        a = int(np.argmax(q)) if rng.random() > 0.2 else int(rng.integers(5))
        r = float(env.step(np.array([a]))[0])
        n[a] += 1
        q[a] += (r - q[a]) / n[a]
        scenes.append(rc.bandit_scene(q, env.means[0], pulled=a, ylim=(-3, 3)))
        rewards.append(r)
    anim = rc.Animation(scenes, "epsilon-greedy", fps=5, rewards=rewards[1:])
    assert anim.num_frames == 20 and anim.panels[0].returns[-1] == pytest.approx(sum(rewards[1:]), abs=1e-4)
    both = rc.side_by_side(anim, anim, fps=2)
    assert both.fps == 2 and len(both.panels) == 2
    with pytest.raises(ValueError, match=r"scenes: expected at least one Scene"):
        rc.Animation([])
    with pytest.raises(TypeError, match=r"animations\[1\]: expected an Animation"):
        rc.side_by_side(anim, scenes)
    with pytest.raises(ValueError, match=r"fps: expected frames per second"):
        rc.Animation(scenes, fps=0)


def test_frames_of_different_sizes_share_the_largest_size():
    small = rc.bandit_scene([0.5, -0.2])  # 200 x 150
    wide = rc.bandit_scene(np.zeros(12))  # 328 x 150
    anim = rc.Animation([small, wide, small], fps=5)
    sizes = {anim.frame(i, 1.0).shape for i in range(anim.num_frames)}
    assert len(sizes) == 1 and next(iter(sizes))[1] >= wide.width
    with Image.open(io.BytesIO(anim.gif())) as image:
        assert image.n_frames == 3


# Bad input to the replay mode of animate (the harness in test_bad_input.py runs its policy
# mode) and to side_by_side (whose animations are positional, which the harness cannot pass).
GRID_STATES = np.array([0, 1, 3])
_REPLAY_BAD = [
    ("states", np.array([0.0, 1.0, 3.0]), r"states: expected the visited cells"),
    ("states", np.array([0, 1, 4]), r"states: expected the visited cells .* got values 0..4"),
    ("states", np.array([-1, 0]), r"states: "),
    ("states", GRID_STATES[:, None], r"states: "),
    ("states", GRID_STATES.astype(str), r"states: "),
    ("states", "013", r"states: "),
    ("states", np.array([], int), r"states: expected at least one state"),
    ("states", np.array([True, False]), r"states: "),
    ("rewards", np.array([1.0, np.nan]), r"rewards: expected finite values"),
    ("rewards", np.array([1.0, np.inf]), r"rewards: expected finite values"),
    ("rewards", np.array(["1", "2"]), r"rewards: expected a real numeric array"),
    ("rewards", np.array([1.0, 2.0]) + 1j, r"rewards: expected a real numeric array"),
    ("rewards", np.array([object(), object()]), r"rewards: expected a real numeric array"),
    ("rewards", np.array([1.0]), r"rewards: expected 2 finite rewards"),
    ("rewards", np.ones((2, 1)), r"rewards: expected 2 finite rewards"),
    ("rewards", {"a": [1.0, 2.0]}, r"rewards: "),
    ("episodes", 0, r"episodes: "),
    ("trail", "no", r"trail: expected True or False"),
    ("values", np.array([0.0, np.nan, 1.0, 2.0]), r"values: expected finite values"),
    ("values", np.zeros(3), r"values: expected 4 finite values \(one per cell of env\)"),
]


@pytest.mark.parametrize("arg, bad, match", _REPLAY_BAD, ids=[f"{a}-{i}" for i, (a, _, _) in
                                                              enumerate(_REPLAY_BAD)])
def test_animate_replay_refuses_bad_input(arg, bad, match):
    kwargs = dict(states=GRID_STATES, rewards=[-1.0, 1.0], values=np.zeros(4))
    kwargs[arg] = bad
    with pytest.raises((ValueError, TypeError), match=match):
        rc.animate(rc.GridWorld(layout=["S.", ".G"]), **kwargs)


@pytest.mark.parametrize("states, match", [
    (np.array([[0.0, 0, np.nan, 0]]), r"states: expected finite values"),
    (np.array([[0.0, 0, 0, np.inf]]), r"states: expected finite values"),
    (np.zeros((2, 4)) + 1j, r"states: expected CartPole states"),
    (np.zeros((2, 4)).astype(str), r"states: expected CartPole states"),
    (np.zeros(4), r"states: expected CartPole states of shape \[T, 4\]"),
])
def test_animate_replay_of_cartpole_refuses_bad_states(states, match):
    with pytest.raises((ValueError, TypeError), match=match):
        rc.animate(rc.CartPole(), states=states)


def test_animate_tictactoe_policy_that_plays_an_illegal_move_is_named():
    with pytest.raises(ValueError, match=r"policy: returned 0 .* not a legal move"):
        rc.animate(rc.TicTacToe(), lambda state: 0)  # cell 0 is taken after the first move


def test_side_by_side_refuses_bad_input():
    anim = rc.Animation([rc.bandit_scene([0.0, 1.0])], fps=5)
    assert rc.side_by_side(anim, anim).fps == 5 and rc.side_by_side(anim, fps=2.5).fps == 2.5
    with pytest.raises(ValueError, match=r"animations: expected at least one Animation"):
        rc.side_by_side()
    for bad in (None, "anim", rc.bandit_scene([0.0]), [anim], rc.Animation):
        with pytest.raises(TypeError, match=r"animations\[1\]: expected an Animation"):
            rc.side_by_side(anim, bad)
    for fps in (0, -1.0, math.nan, math.inf, "5", True, 5000.0):
        with pytest.raises(ValueError, match=r"fps: expected frames per second in \(0, 1000\]"):
            rc.side_by_side(anim, anim, fps=fps)


# -- language-model samples --------------------------------------------------------------------
def test_samples_table_text_and_html():
    table = rc.samples_table(["1+2=", "<b>"], ["1+2=5", "x"], [["1+2=3", "1+2=3"], "y"],
                             labels=("SFT", "after GRPO"))
    text = str(table)
    assert text.splitlines()[0].split(" | ") == ["prompt", "SFT  ", "after GRPO"]
    assert "1+2=3" in text.splitlines()[3]  # the second sample of the first prompt on its own line
    html = table._repr_html_()
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert '<span style="color:#999">1+2=</span>3' in html  # the prompt part greyed
    assert html == rc.samples_table(["1+2=", "<b>"], ["1+2=5", "x"], [["1+2=3", "1+2=3"], "y"],
                                    labels=("SFT", "after GRPO"))._repr_html_()
    with pytest.raises(ValueError, match=r"after: expected 2 entries \(one per prompt\), got 1 entries"):
        rc.samples_table(["a", "b"], ["x", "y"], ["z"])
    with pytest.raises(TypeError, match=r"before\[0\]\[0\]: expected a string \(decode token ids first\)"):
        rc.samples_table(["a"], [[1]])


def test_readme_shows_how_to_watch_an_agent_in_three_lines(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.+?)\n```", (TOP / "README.md").read_text(encoding="utf-8"), re.S)
    watch = [b for b in blocks if "rc.animate" in b]
    assert len(watch) == 1
    lines = [line for line in watch[0].splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) <= 3, lines
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(watch[0], "README.md", "exec"), namespace)
    assert list(tmp_path.glob("*.html"))
