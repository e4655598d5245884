"""Bad-input specs for rlcourse.viz.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.

Plots draw with matplotlib's Agg backend; every valid-argument maker first closes the figures the
previous call left open, so the cases do not accumulate figures.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from bad_input_kinds import EXTRA, KINDS, RNG, SHORT, F, ints_below, without  # noqa: E402, F401

import rlcourse as rc  # noqa: E402
from rlcourse.viz.scene import circle, line, polygon, rect, text  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Fixtures: a 2 x 2 grid world (4 states, 4 actions), small scenes, figures that are closed.


def grid():
    return rc.GridWorld(layout=["S.", ".G"])


def ready_grid():
    env = grid()
    env.reset(seed=0)
    return env


def fresh_axes(rows=1, cols=1):
    """New axes, after closing every figure the previous call left open."""
    plt.close("all")
    return plt.subplots(rows, cols)[1]


def scene(width=40, height=30):
    return rc.Scene(width, height, (
        rect(1, 1, 10, 8, fill="#ff0000", stroke="#000000"),
        line([(0, 0), (20, 10), (30, 5)], "#0000ff", 2),
        polygon([(5, 5), (15, 5), (10, 12)], fill="#00ff00"),
        circle(20, 15, 4, fill="#123456"),
        text(20, 25, "hi", size=8),
    ))


def result(n=5, seed=0):
    steps = np.cumsum(np.arange(1, n + 1)) * 10
    hist_steps = np.arange(1, 4) * 100
    history = {"steps": hist_steps, "mean_return": np.array([np.nan, 1.0, 2.0]),
               "approx_kl": F(3, low=0, high=0.02, seed=seed), "clip_fraction": F(3, low=0, high=0.3),
               "entropy": F(3, low=0.5, high=0.7), "explained_variance": F(3)}
    return rc.TrainResult(params=None, episode_returns=F(n, seed=seed), episode_end_steps=steps,
                          steps=int(steps[-1]), history=history)


# ---------------------------------------------------------------------------------------------
# Kinds of the arguments that are not plain arrays or scalars.


def _grid_envs(valid):
    """Environments that are not the grid world the other arguments were made for."""
    big = rc.GridWorld(size=3)
    big.reset(seed=0)
    return [("a CartPole", rc.CartPole(n=1)), ("a Bandit", rc.Bandit(arms=3)),
            ("a string", "GridWorld"), ("None", None), ("the class, not an env", rc.GridWorld),
            ("a grid of another size", big)]


def _render_envs(valid):
    cart = rc.CartPole(n=1)
    cart.reset(seed=0)
    return [("a CartPole (no values option)", cart), ("a CartPole never reset", rc.CartPole(n=1)),
            ("a grid world never reset", grid()), ("a Bandit (no current state)", rc.Bandit(arms=3)),
            ("a TicTacToe game (no current state)", rc.TicTacToe()), ("a string", "GridWorld"),
            ("None", None), ("the class, not an env", rc.GridWorld)]


def _cells(valid):
    return [("negative", -1), ("out of range", 4), ("a float", 1.0), ("a bool", True),
            ("a string", "0"), ("an array of two", np.array([0, 1])), ("None", None)]


def _render_states(valid):
    return [c for c in _cells(valid) if c[0] != "None"] + [("a CartPole state", F(4))]


def _flags(valid):
    return [("a string", "no"), ("a float", 0.5), ("None", None)]


def _axes(valid):
    plt.close("all")
    return [("a string", "ax"), ("a Figure", plt.figure()), ("an int", 0),
            ("an array of axes", np.array([None, None]))]


def _axes4(valid):
    plt.close("all")
    return [("one Axes", plt.subplots()[1]), ("three axes", plt.subplots(1, 3)[1]),
            ("a string", "axes"), ("a Figure", plt.figure())]


def _grid_policy(valid):
    """An action table [S] (the valid one) or action probabilities [S, A], both wrong."""
    half, nan = np.full((4, 4), 0.5), np.full((4, 4), 0.25)
    nan[0, 0] = np.nan
    return ints_below(4)(valid) + [("probabilities not summing to 1", half),
                                   ("NaN probabilities", nan),
                                   ("probabilities for 3 actions", np.full((4, 3), 1 / 3)),
                                   ("a string", "greedy"), ("a bool table", np.ones(4, bool))]


def _fmt(valid):
    return [("a number", 3), ("a format for ints", "{:d}"), ("two fields", "{} {}"),
            ("a named field", "{v:.2f}")]


def _letters(valid):
    return [("a number", 3), ("None", None), ("a list", ["S", "G"])]


def _vmin(valid):
    return KINDS["finite"](valid) + [("above vmax", 5.0), ("a bool", True)]


def _learning_results(valid):
    steps, returns = valid
    nan, inf = returns.copy(), steps.astype(float)
    nan[1], inf[-1] = np.nan, np.inf
    return [("NaN returns", (steps, nan)), ("inf steps", (inf, returns)),
            ("one return short", (steps, returns[:-1])), ("three items", (steps, returns, returns)),
            ("one item", (returns,)), ("string returns", (steps, returns.astype(str))),
            ("complex returns", (steps, returns + 1j)), ("2-D returns", (steps, returns[:, None])),
            ("a string", "result"), ("None", None), ("a dict", {"returns": returns}),
            ("a result with NaN returns", _with(result(), episode_returns=nan))]


def _with(res, **changes):
    import dataclasses

    return dataclasses.replace(res, **changes)


def _ppo_results(valid):
    no_kl = result()
    del no_kl.history["approx_kl"]
    short = result()
    short.history["entropy"] = short.history["entropy"][:-1]
    words = result()
    words.history["clip_fraction"] = words.history["clip_fraction"].astype(str)
    return [("a string", "results"), ("None", None), ("an empty list", []),
            ("a pair of arrays", (np.arange(3), F(3))), ("history without approx_kl", no_kl),
            ("a history key one entry short", short), ("strings in the history", words),
            ("a list with None", [result(), None])]


def _ppo_labels(valid):
    return [("one label short", ["a"]), ("an int", 5), ("a label too many", ["a", "b", "c"])]


def _scenes(valid):
    return [("None", None), ("an int", 3), ("a string", "scene"), ("an empty list", []),
            ("an image instead of a scene", [np.zeros((10, 10, 3), np.uint8)]),
            ("a string among scenes", [scene(), "x"]), ("a scene 0 wide", [rc.Scene(0, 10, ())]),
            ("a scene with a bad shape", [rc.Scene(10, 10, (("x", (None, None, 1, 1), 0, 0),))])]


def _bad_scenes(valid):
    style = (None, "#000000", 1, 1)
    return [("a string", "scene"), ("an image", np.zeros((10, 10, 3), np.uint8)), ("None", None),
            ("a plain tuple", (40, 30, ())), ("width 0", rc.Scene(0, 30, ())),
            ("negative height", rc.Scene(40, -30, ())), ("NaN width", rc.Scene(math.nan, 30, ())),
            ("inf width", rc.Scene(math.inf, 30, ())), ("a string width", rc.Scene("40", 30, ())),
            ("a bool width", rc.Scene(True, 30, ())), ("huge", rc.Scene(10**6, 10**6, ())),
            ("shapes not a tuple", rc.Scene(40, 30, 5)),
            ("an unknown shape", rc.Scene(40, 30, (("x", style, 0, 0),))),
            ("a NaN coordinate", rc.Scene(40, 30, (("r", style, math.nan, 0, 5, 5),))),
            ("an inf radius", rc.Scene(40, 30, (("c", style, 5, 5, math.inf),))),
            ("a string coordinate", rc.Scene(40, 30, (("l", style, 0, 0, "5", 5),))),
            ("a bool coordinate", rc.Scene(40, 30, (("l", style, 0, 0, True, 5),))),
            ("an odd number of coordinates", rc.Scene(40, 30, (("p", style, 0, 0, 5, 5, 1),))),
            ("a colour name", rc.Scene(40, 30, (("r", ("red", None, 1, 1), 0, 0, 5, 5),))),
            ("a bad colour", rc.Scene(40, 30, (("r", ("#zzzzzz", None, 1, 1), 0, 0, 5, 5),))),
            ("a negative stroke width", rc.Scene(40, 30, (("r", (None, "#000000", -1, 1), 0, 0, 5, 5),))),
            ("align 3", rc.Scene(40, 30, (("t", ("#000000", None, 9, 3), 0, 0, "a"),))),
            ("text not a string", rc.Scene(40, 30, (("t", ("#000000", None, 9, 1), 0, 0, 5),))),
            ("a style of 3", rc.Scene(40, 30, (("r", (None, None, 1), 0, 0, 5, 5),)))]


def _scale(valid):
    return KINDS["positive"](valid) + [("a bool", True), ("huge", 1e6)]


def _fontsize(valid):
    return KINDS["positive"](valid) + [("a bool", True), ("a size name", "small")]


def _fps(valid):
    return KINDS["positive"](valid) + [("a bool", True), ("above 1000", 5000.0)]


def _boards(valid):
    board = [1, -1, 0, 0, 1, 0, 0, 0, 0]
    return [("8 cells", board[:8]), ("a value 2", [2] + board[1:]), ("floats", np.array(board, float)),
            ("strings", np.array(board).astype(str)), ("None", None), ("a string", "X-O"),
            ("a 3x3 of floats", np.reshape(board, (3, 3)) + 0.5), ("ragged rows", [[1, 0, 0], [0, 0]]),
            ("three X and no O", [1, 1, 1, 0, 0, 0, 0, 0, 0]),
            ("a state whose player is 0", rc.TicTacToeState(tuple(board), 0)),
            ("a state with 8 cells", rc.TicTacToeState(tuple(board[:8]), 1))]


def _last(valid):
    return [("negative", -1), ("out of range", 9), ("a float", 4.0), ("a bool", True),
            ("a string", "4"), ("an empty cell", 8)]


def _pulled(valid):
    return [("negative", -1), ("out of range", 3), ("a float", 1.0), ("a bool", True),
            ("a string", "1")]


def _ylim(valid):
    return [("reversed", (2.0, -2.0)), ("empty", (1.0, 1.0)), ("NaN", (math.nan, 1.0)),
            ("infinite", (-math.inf, math.inf)), ("strings", ("a", "b")), ("a string", "ab"),
            ("three numbers", (0.0, 1.0, 2.0)), ("a number", 5.0), ("bools", (False, True)),
            ("complex", (0j, 1 + 0j))]


def _strings_list(valid):
    return [("a string", "ab"), ("ints (token ids)", [1, 2]), ("None", None),
            ("a None inside", ["a", None])]


def _column(valid):
    return [("one entry short", valid[:-1]), ("a string", "xy"), ("token ids", [1, 2]),
            ("an int inside a list", [["y", 3], "z"]), ("an int", 3)]


def _labels(valid):
    return [("too few", ("only",)), ("a string", "before"), ("an int", 5), ("None", None)]


def _headers(valid):
    return [("a string", "prompt"), ("ints", (1, 2)), ("None", None), ("one too few", ("prompt",)),
            ("empty", ())]


def _rows(valid):
    return [("a row too long", (("a", ("x",), ("y",)),)), ("a prompt not a string", ((1, ("x",)),)),
            ("a sample not a string", (("a", ("x", 2)),)), ("a string", "rows"), ("None", None),
            ("a row that is a string", ("ab",))]


def _animate_policies(valid):
    wrong = lambda obs: np.zeros((len(obs), 2), int)
    floats = lambda obs: np.zeros(len(obs))
    outside = lambda obs: np.full(len(obs), 7)
    nothing = lambda obs: None
    nan = valid.copy()
    nan[1, 2] = np.nan
    return [("a string", "greedy"), ("None", None), ("a Q-table with NaN", nan),
            ("a Q-table for 3 actions", valid[:, :3]), ("an action table out of range", np.full(4, 4)),
            ("an action table of floats", np.zeros(4)), ("a complex Q-table", valid + 0j),
            ("a Q-table of strings", valid.astype(str)), ("a Q-table one row short", valid[:-1]),
            ("a function returning [n, 2] actions", wrong),
            ("a function returning floats", floats),
            ("a function returning actions out of range", outside),
            ("a function returning None", nothing)]


# ---------------------------------------------------------------------------------------------

def _valued_cells(valid):
    """Bad values at the cells plot_grid draws (S and the plain cell); its goal cell has no value
    of its own, so a NaN there blanks nothing and is allowed (tests/test_grid_plot.py)."""
    inf = np.array(valid, dtype=float)
    inf[1] = np.inf
    return [(label, bad) for label, bad in KINDS["floats"](valid) if label != "inf"] + \
        [("inf at a valued cell", inf)]


SPECS: dict[str, tuple] = {
    # plots
    "learning_curve": (
        lambda: dict(result=(np.array([10.0, 25, 40, 60, 90]), F(5)), ax=fresh_axes(), window=3,
                     label="run", target=0.5, raw=True),
        dict(result=_learning_results, ax=_axes, window="count", target="finite", raw=_flags)),
    "ppo_diagnostics": (
        lambda: dict(results=[result(), result(seed=1)], labels=["a", "b"], axes=fresh_axes(2, 2)),
        dict(results=_ppo_results, labels=_ppo_labels, axes=_axes4)),
    # grid
    "plot_grid": (
        lambda: dict(env=grid(), values=F(4), policy=np.array([1, 2, 1, 0]), ax=fresh_axes(),
                     title="V", cmap="viridis", annotate=True, vmin=-1.0, vmax=1.0, colorbar=True,
                     label="V", fontsize=9, fmt="{:.1f}", letters="SG"),
        dict(env=_grid_envs, values=_valued_cells, policy=_grid_policy, ax=_axes, annotate=_flags,
             vmin=_vmin, vmax="finite", colorbar=_flags, fontsize=_fontsize, fmt=_fmt,
             letters=_letters)),
    # scene
    "rasterize": (lambda: dict(scene=scene(), scale=1.0), dict(scene=_bad_scenes, scale=_scale)),
    # renderers
    "cartpole_scene": (lambda: dict(state=F(4)), dict(state="floats")),
    "gridworld_scene": (
        lambda: dict(env=grid(), state=0, values=F(4), policy=np.array([1, 2, 1, 0]),
                     visited=np.array([0, 1])),
        dict(env=_grid_envs, state=_cells, values="floats", policy=ints_below(4),
             visited=lambda v: without(ints_below(4), SHORT)(v) + [("an int", 3)])),
    "tictactoe_scene": (lambda: dict(state=np.array([1, -1, 0, 0, 1, 0, 0, 0, 0]), last=4),
                        dict(state=_boards, last=_last)),
    "bandit_scene": (lambda: dict(estimates=F(3), means=F(3, seed=1), pulled=1, ylim=(-2.0, 2.0)),
                     dict(estimates="floats", means="floats", pulled=_pulled, ylim=_ylim)),
    "render": (lambda: dict(env=ready_grid(), state=None, scale=1.0, values=F(4)),
               dict(env=_render_envs, state=_render_states, scale=_scale, values="floats")),
    # player
    "Animation": (lambda: dict(scenes=[scene(), scene(), scene(30, 20)], caption="c", fps=5,
                               rewards=F(2)),
                  dict(scenes=_scenes, fps=_fps, rewards="floats")),
    "animate": (lambda: dict(env=grid(), policy=F(4, 4), episodes=2, seed=0, max_steps=3, fps=4,
                             caption="c", values=F(4)),
                dict(env=_grid_envs, policy=_animate_policies, episodes="count", seed="seed",
                     max_steps="count", fps=_fps, values="floats")),
    # text
    "samples_table": (lambda: dict(prompts=["a", "b"], before=["x", ["y", "z"]], after=["u", "v"],
                                   labels=("base", "tuned")),
                      dict(prompts=_strings_list, before=_column, after=_column, labels=_labels)),
    "SamplesTable": (lambda: dict(headers=("prompt", "before"), rows=(("a", ("x",)), ("b", ("y", "z")))),
                     dict(headers=_headers, rows=_rows)),
}

EXEMPT: dict[str, str] = {
    "side_by_side": "its animations are positional (*animations), which the harness cannot pass; "
                    "every argument's bad inputs (none, not Animations, fps) are tested in "
                    "tests/test_viz.py::test_side_by_side_refuses_bad_input",
}
