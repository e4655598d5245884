"""Renderers: a state of an environment in, a :class:`~rlcourse.viz.scene.Scene` out.

Each ``*_scene`` function is pure: the same state and options give the same shapes. Sizes are in
logical pixels (the player shows them at twice that size). :func:`render` picks the renderer for
an environment and rasterises the scene into an RGB array.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..core._checks import as_float_array, real_scalar
from ..envs import Bandit, CartPole, GridWorld, TicTacToe, TicTacToeState
from ..envs.cartpole import LENGTH, THETA_THRESHOLD, X_THRESHOLD
from ..envs.gridworld import MOVES
from ..envs.tictactoe import LINES
from .scene import Scene, circle, line, polygon, rasterize, rect, text

__all__ = ["cartpole_scene", "gridworld_scene", "tictactoe_scene", "bandit_scene", "render"]

# -- CartPole ----------------------------------------------------------------------------------
# The track shows x in [-3, 3] m: the limits at +-2.4 m and a cart just beyond them stay visible.
CARTPOLE_SIZE = (300, 130)
CARTPOLE_SCALE = 50.0  # logical px per metre
TRACK_Y = 105.0
CART_W, CART_H = 25.0, 15.0  # 0.5 m x 0.3 m
PIVOT_DROP = 4.0  # the pole's pivot sits this far below the cart's top
POLE_LEN = 2 * LENGTH * CARTPOLE_SCALE  # LENGTH is half the pole: the pole is 1 m, 50 px
POLE_W = 5.0
POLE_COLOUR, FALLEN_COLOUR = "#ca9865", "#d62728"  # Gymnasium's pole colour; red past a limit
CART_COLOUR, AXLE_COLOUR, LIMIT_COLOUR = "#333333", "#8184cb", "#e377c2"


def cartpole_geometry(state) -> dict:
    """Where ``cartpole_scene`` draws ``state``: ``cart`` (x, y, w, h), ``pivot`` and ``tip``
    ``(x, y)`` in logical pixels. theta > 0 leans the pole right (towards +x), as in Gymnasium."""
    x, _, theta, _ = _cartpole_state(state)
    cx = CARTPOLE_SIZE[0] / 2 + x * CARTPOLE_SCALE
    top = TRACK_Y - CART_H
    pivot = (cx, top + PIVOT_DROP)
    tip = (pivot[0] + POLE_LEN * math.sin(theta), pivot[1] - POLE_LEN * math.cos(theta))
    return {"cart": (cx - CART_W / 2, top, CART_W, CART_H), "pivot": pivot, "tip": tip}


def _cartpole_state(state) -> tuple:
    arr = np.asarray(state)
    if arr.dtype == object or arr.dtype.kind not in "iuf" or arr.shape != (4,):
        raise ValueError(
            "state: expected CartPole's state of shape (4,) (x, x_dot, theta, theta_dot), "
            f"got shape {arr.shape} dtype {arr.dtype}"
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"state: expected finite values, got {arr.tolist()}")
    return tuple(float(v) for v in arr)


def cartpole_scene(state) -> Scene:
    """CartPole at ``state [4]`` = ``(x, x_dot, theta, theta_dot)`` (the float64 ``env.state[i]``
    or the float32 observation): track, the ``|x| = 2.4`` limits, cart, pole and, as a faint V
    from the pivot, the ``|theta| = 12 degrees`` limits. The pole turns red once the state is
    beyond a limit (the episode terminated). Scene of 300 x 130 logical px, 50 px per metre.
    """
    x, _, theta, _ = _cartpole_state(state)
    g = cartpole_geometry(state)
    w, _ = CARTPOLE_SIZE
    mid = w / 2
    shapes = [line([(0, TRACK_Y), (w, TRACK_Y)], "#000000", 1)]
    for sign in (-1, 1):
        lx = mid + sign * X_THRESHOLD * CARTPOLE_SCALE
        shapes.append(line([(lx, TRACK_Y + 6), (lx, TRACK_Y - 75)], LIMIT_COLOUR, 1))
        shapes.append(text(lx, TRACK_Y + 14, f"x={sign * X_THRESHOLD:g}", LIMIT_COLOUR, 9))
    shapes.append(line([(mid, TRACK_Y), (mid, TRACK_Y + 4)], "#000000", 1))
    px, py = g["pivot"]
    reach = POLE_LEN * 1.1
    dx, dy = reach * math.sin(THETA_THRESHOLD), reach * math.cos(THETA_THRESHOLD)
    shapes.append(line([(px - dx, py - dy), (px, py), (px + dx, py - dy)], LIMIT_COLOUR, 1))
    fallen = abs(x) > X_THRESHOLD or abs(theta) > THETA_THRESHOLD
    shapes.append(rect(*g["cart"], fill=CART_COLOUR))
    shapes.append(line([g["pivot"], g["tip"]], FALLEN_COLOUR if fallen else POLE_COLOUR, POLE_W))
    shapes.append(circle(px, py, 2.5, fill=AXLE_COLOUR))
    return Scene(*CARTPOLE_SIZE, tuple(shapes))


# -- Grid worlds -------------------------------------------------------------------------------
CELL = 32.0
CELL_COLOURS = {".": "#ffffff", "F": "#ffffff", "S": "#fff3c4", "G": "#7bc47f",
                "H": "#3b5b92", "C": "#8c564b", "W": "#555555"}
LETTER_COLOURS = {"S": "#7a6a2a", "G": "#1d5e21", "H": "#ffffff", "C": "#ffffff"}
AGENT_COLOUR, TRAIL_COLOUR, ARROW_COLOUR = "#1f77b4", "#9ecae1", "#333333"


def _value_colours(values: np.ndarray) -> list[str]:
    """Light red (low) to light green (high): pale enough that arrows and the agent stay visible."""
    from matplotlib import colormaps

    lo, hi = float(values.min()), float(values.max())
    t = (values - lo) / (hi - lo) if hi > lo else np.full(values.shape, 0.5)
    rgb = colormaps["RdYlGn"](t)[:, :3] * 0.6 + 0.4  # 40% white
    return ["#" + "".join(f"{round(c * 255):02x}" for c in row) for row in rgb]


def _grid_state(env, state, name: str = "state") -> int:
    if isinstance(state, np.ndarray) and state.shape == () or isinstance(state, np.integer):
        state = state.item()
    if isinstance(state, bool) or not isinstance(state, numbers.Integral):
        raise TypeError(f"{name}: expected an int cell index in [0, {env.num_states}), got {state!r}")
    if not 0 <= state < env.num_states:
        raise ValueError(f"{name}: expected an int cell index in [0, {env.num_states}), got {state}")
    return int(state)


def _visited(env, visited) -> set:
    """The cells of ``visited`` (any iterable of int cell indices; ``None`` for none)."""
    if visited is None:
        return set()
    if isinstance(visited, (str, bytes)) or not hasattr(visited, "__iter__"):
        raise TypeError(f"visited: expected cell indices (ints in [0, {env.num_states})), "
                        f"got {type(visited).__name__} {visited!r}")
    return {_grid_state(env, v, f"visited[{i}]") for i, v in enumerate(visited)}


def gridworld_scene(env: GridWorld, state, values=None, policy=None, visited=()) -> Scene:
    """A grid world with its agent on cell ``state`` (int, ``row * cols + col``).

    Cells: start pale yellow, goal green, hole blue, cliff brown, wall grey, each special cell
    lettered in its corner. ``values [S]`` colours the free cells from light red (low) to light
    green (high); they must be finite (NaN or inf is an error, not a blank cell: it usually
    means a diverged estimate). ``policy [S]`` (int actions) draws an arrow on every cell the
    agent can act in; ``visited`` (cell indices) marks a trail of small dots. Scene of
    ``32 * cols`` x ``32 * rows`` logical px.
    """
    if not isinstance(env, GridWorld):
        raise TypeError(f"env: expected a GridWorld (or FrozenLake, CliffWalking), got {type(env).__name__}")
    state = _grid_state(env, state)
    rows, cols = env.shape
    cells = "".join(env.layout)
    S = env.num_states
    fills = [CELL_COLOURS[c] for c in cells]
    if values is not None:
        values = as_float_array("values", values)  # finite and real: no strings, complex, NaN
        if values.shape != (S,):
            raise ValueError(f"values: expected {S} finite values (one per cell of env), "
                             f"got shape {values.shape}")
        values = values.astype(np.float64)
        free = np.array([c in ".FS" for c in cells])
        shaded = _value_colours(values[free]) if free.any() else []
        for s, colour in zip(np.flatnonzero(free).tolist(), shaded):
            fills[s] = colour
    shapes = []
    for s, c in enumerate(cells):
        r, k = divmod(s, cols)
        shapes.append(rect(k * CELL, r * CELL, CELL, CELL, fill=fills[s], stroke="#bbbbbb"))
        if c in LETTER_COLOURS:
            shapes.append(text(k * CELL + 6, r * CELL + 7, c, LETTER_COLOURS[c], 8))
    if policy is not None:
        policy = np.asarray(policy)
        if policy.shape != (S,) or policy.dtype.kind not in "iu":
            raise ValueError(f"policy: expected {S} int actions (one per cell of env), "
                             f"got shape {policy.shape} dtype {policy.dtype}")
        if S and (policy.min() < 0 or policy.max() >= len(MOVES)):
            raise ValueError(f"policy: actions must be in [0, {len(MOVES)}), "
                             f"got {policy.min()}..{policy.max()}")
        for s, c in enumerate(cells):
            if c in ".FS":  # no arrow where the agent never acts: goal, holes, cliff, walls
                shapes.extend(_arrow(s, cols, MOVES[int(policy[s])]))
    for s in sorted(_visited(env, visited) - {state}):
        r, k = divmod(s, cols)
        shapes.append(circle((k + 0.5) * CELL, (r + 0.5) * CELL, 3.5, fill=TRAIL_COLOUR))
    r, k = divmod(state, cols)
    # radius 0.36 cells: the agent covers the arrow of its own cell (arrows reach 0.34)
    shapes.append(circle((k + 0.5) * CELL, (r + 0.5) * CELL, 0.36 * CELL, fill=AGENT_COLOUR,
                         stroke="#ffffff", width=1.5))
    return Scene(int(cols * CELL), int(rows * CELL), tuple(shapes))


def _arrow(s: int, cols: int, move: tuple) -> list:
    """An arrow from the centre of cell ``s`` pointing along ``move`` = (d_row, d_col)."""
    r, k = divmod(s, cols)
    cx, cy = (k + 0.5) * CELL, (r + 0.5) * CELL
    dx, dy = move[1], move[0]
    tail = (cx - 0.3 * CELL * dx, cy - 0.3 * CELL * dy)
    neck = (cx + 0.12 * CELL * dx, cy + 0.12 * CELL * dy)
    head = (cx + 0.34 * CELL * dx, cy + 0.34 * CELL * dy)
    side = (-dy * 0.13 * CELL, dx * 0.13 * CELL)
    return [line([tail, neck], ARROW_COLOUR, 1.5),
            polygon([head, (neck[0] + side[0], neck[1] + side[1]),
                     (neck[0] - side[0], neck[1] - side[1])], fill=ARROW_COLOUR)]


# -- TicTacToe ---------------------------------------------------------------------------------
TTT_CELL, TTT_MARGIN = 40.0, 10.0
TTT_SIZE = (140, 160)
X_COLOUR, O_COLOUR, WIN_COLOUR, LAST_COLOUR = "#1f77b4", "#d62728", "#2ca02c", "#fff3c4"


def board_of(state, name: str = "state") -> tuple[tuple, int]:
    """``(board, player to move)`` from a TicTacToeState, 9 ints or a 3x3 array; errors name ``name``."""
    if isinstance(state, TicTacToeState):
        board, player = state.board, state.player
        if isinstance(player, bool) or player not in (1, -1):
            raise ValueError(f"{name}: expected the player to move to be 1 (X) or -1 (O), got {state!r}")
    else:
        board, player = state, None
    try:
        arr = np.asarray(board)
    except (TypeError, ValueError):  # ragged nested sequences
        arr = np.array([], dtype=object)
    if arr.dtype == object or arr.dtype.kind not in "iu" or arr.size != 9 or arr.ndim not in (1, 2) \
            or not np.isin(arr, (-1, 0, 1)).all():
        raise ValueError(f"{name}: expected a TicTacToeState or a board of 9 ints in {{1 (X), -1 (O), 0}}, "
                         f"got {state!r}")
    board = tuple(int(v) for v in arr.reshape(9))
    if player is None:  # X moves first, so X is to move when the counts are equal
        xs, os = board.count(1), board.count(-1)
        if xs - os not in (0, 1):
            raise ValueError(f"{name}: a board of {xs} X and {os} O cannot arise with X moving first "
                             f"(pass a TicTacToeState to say who moves), got {state!r}")
        player = 1 if xs == os else -1
    return board, player


def tictactoe_scene(state, last: int | None = None) -> Scene:
    """A tic-tac-toe board: X blue, O red, the cell ``last`` (the move just made) shaded, a
    winning line struck through in green, and the status ("X to move", "O wins", "draw") below.
    ``state`` is a :class:`~rlcourse.TicTacToeState` or 9 ints (``1`` X, ``-1`` O, ``0`` empty;
    X moves first, so a bare board has as many X as O, or one more).
    Scene of 140 x 160 logical px.
    """
    board, player = board_of(state)
    if last is not None and (isinstance(last, bool) or not isinstance(last, numbers.Integral)
                             or not 0 <= last < 9):
        raise ValueError(f"last: expected a cell index 0..8 or None, got {last!r}")
    if last is not None and board[last] == 0:
        raise ValueError(f"last: cell {last} is empty; expected the cell of the move just made")
    m, c = TTT_MARGIN, TTT_CELL
    shapes = []
    if last is not None:
        r, k = divmod(int(last), 3)
        shapes.append(rect(m + k * c, m + r * c, c, c, fill=LAST_COLOUR))
    for j in (1, 2):
        shapes.append(line([(m + j * c, m), (m + j * c, m + 3 * c)], "#444444", 2))
        shapes.append(line([(m, m + j * c), (m + 3 * c, m + j * c)], "#444444", 2))
    for cell, v in enumerate(board):
        r, k = divmod(cell, 3)
        cx, cy = m + (k + 0.5) * c, m + (r + 0.5) * c
        if v == 1:
            d = 0.28 * c
            shapes.append(line([(cx - d, cy - d), (cx + d, cy + d)], X_COLOUR, 5))
            shapes.append(line([(cx - d, cy + d), (cx + d, cy - d)], X_COLOUR, 5))
        elif v == -1:
            shapes.append(circle(cx, cy, 0.3 * c, stroke=O_COLOUR, width=4))
    winner, status = 0, None
    for i, j, k in LINES:
        if board[i] != 0 and board[i] == board[j] == board[k]:
            winner = board[i]
            (r0, k0), (r1, k1) = divmod(i, 3), divmod(k, 3)
            shapes.append(line([(m + (k0 + 0.5) * c, m + (r0 + 0.5) * c),
                                (m + (k1 + 0.5) * c, m + (r1 + 0.5) * c)], WIN_COLOUR, 4))
            break
    if winner:
        status = ("X" if winner == 1 else "O") + " wins"
    elif 0 not in board:
        status = "draw"
    else:
        status = ("X" if player == 1 else "O") + " to move"
    shapes.append(text(TTT_SIZE[0] / 2, m + 3 * c + 18, status, "#222222", 12))
    return Scene(*TTT_SIZE, tuple(shapes))


# -- Bandit ------------------------------------------------------------------------------------
BAR_SLOT = 24.0
BANDIT_H = 150
ESTIMATE_COLOUR, PULLED_COLOUR = "#9ecae1", "#1f77b4"


def bandit_scene(estimates, means=None, pulled: int | None = None, ylim=None) -> Scene:
    """A bar per arm of ``estimates [k]``, the ``pulled`` arm's bar dark, the true ``means [k]``
    (if given) as black ticks, and the arm numbers below. ``ylim = (low, high)`` fixes the value
    axis (pass the same one for every frame of an animation), two finite numbers; by default it
    spans [-3, 3] widened to the data. ``estimates`` and ``means`` must be finite. Scene of
    ``max(200, 24 k + 40)`` x 150 logical px.
    """
    q = as_float_array("estimates", estimates)  # finite and real: no strings, complex, NaN
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"estimates: expected a non-empty 1-D array of finite values [k], "
                         f"got shape {q.shape}")
    q = q.astype(np.float64)
    k = q.size
    mu = None
    if means is not None:
        mu = as_float_array("means", means)
        if mu.shape != (k,):
            raise ValueError(f"means: expected shape ({k},) (one per arm, as estimates), got {mu.shape}")
        mu = mu.astype(np.float64)
    if pulled is not None and (isinstance(pulled, bool) or not isinstance(pulled, numbers.Integral)
                               or not 0 <= pulled < k):
        raise ValueError(f"pulled: expected an arm index in [0, {k}) or None, got {pulled!r}")
    if ylim is None:
        data = q if mu is None else np.concatenate([q, mu])
        ylim = (min(-3.0, math.floor(data.min())), max(3.0, math.ceil(data.max())))
        lo, hi = ylim
    else:
        if isinstance(ylim, (str, bytes)) or not hasattr(ylim, "__len__") or len(ylim) != 2:
            raise ValueError(f"ylim: expected (low, high), two finite numbers, got {ylim!r}")
        lo, hi = (real_scalar("ylim", v) for v in ylim)
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"ylim: expected (low, high) with finite low < high, got {ylim!r}")
    width = max(200, int(BAR_SLOT * k + 40))
    top, bottom = 24.0, BANDIT_H - 22.0
    y_of = lambda v: bottom - (min(max(v, lo), hi) - lo) / (hi - lo) * (bottom - top)
    x0 = (width - BAR_SLOT * k) / 2
    zero = y_of(0.0)
    shapes = [text(4, 7, "bars: estimates   ticks: true means" if mu is not None else "bars: estimates",
                   "#555555", 8, align=0),
              text(x0 - 4, top, f"{hi:g}", "#555555", 8, align=2),
              text(x0 - 4, bottom, f"{lo:g}", "#555555", 8, align=2),
              line([(x0 - 2, zero), (x0 + BAR_SLOT * k, zero)], "#888888", 1)]
    for a in range(k):
        bx = x0 + a * BAR_SLOT + 4
        y = y_of(q[a])
        shapes.append(rect(bx, min(y, zero), BAR_SLOT - 8, max(abs(zero - y), 0.5),
                           fill=PULLED_COLOUR if a == pulled else ESTIMATE_COLOUR))
        if mu is not None:
            shapes.append(line([(bx - 2, y_of(mu[a])), (bx + BAR_SLOT - 6, y_of(mu[a]))], "#000000", 2))
        shapes.append(text(bx + (BAR_SLOT - 8) / 2, bottom + 12, str(a), "#333333", 9))
    return Scene(width, BANDIT_H, tuple(shapes))


# -- dispatch ----------------------------------------------------------------------------------
# The options each renderer takes besides the state (``copy``: which bandit copy's means).
_OPTIONS = ((CartPole, ()), (GridWorld, ("values", "policy", "visited")), (TicTacToe, ("last",)),
            (Bandit, ("means", "pulled", "ylim", "copy")))


def _renderer_options(env) -> tuple:
    for kind, names in _OPTIONS:
        if isinstance(env, kind):
            return names
    raise TypeError(f"env: expected a CartPole, GridWorld (FrozenLake, CliffWalking), TicTacToe or "
                    f"Bandit, got {type(env).__name__}")


def scene_for(env, state, **options) -> Scene:
    """The scene of ``state`` drawn by the renderer of ``env``'s type."""
    allowed = _renderer_options(env)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"{unknown[0]}: not an option of the renderer of a {type(env).__name__} env "
                        f"(its options: {', '.join(allowed) or 'none'})")
    if isinstance(env, CartPole):
        return cartpole_scene(state, **options)
    if isinstance(env, GridWorld):
        return gridworld_scene(env, state, **options)
    if isinstance(env, TicTacToe):
        return tictactoe_scene(state, **options)
    copy = options.pop("copy", 0)
    if isinstance(copy, bool) or not isinstance(copy, numbers.Integral) or not 0 <= copy < env.n:
        raise ValueError(f"copy: expected a copy index in [0, {env.n}) of env, got {copy!r}")
    options.setdefault("means", env.means[copy])
    return bandit_scene(state, **options)


def render(env, state=None, scale: float = 2.0, **options) -> np.ndarray:
    """``state`` of ``env`` as an RGB image ``uint8 [H, W, 3]`` (logical size times ``scale``).

    ``state``: CartPole ``[4]``; grid world an int cell; TicTacToe a state or 9 ints; Bandit the
    estimates ``[arms]`` (the true means are ``env.means[0]``). ``None`` draws copy 0's current
    state (CartPole, grid worlds). ``options`` go to the renderer (e.g. ``values``, ``policy``
    for grid worlds, ``pulled`` for the bandit); an option that renderer does not take is an
    error. Show it with ``plt.imshow(rc.render(env))``.
    """
    _renderer_options(env)  # an env of a kind no renderer draws is an error naming env
    if state is None:
        if not isinstance(env, (CartPole, GridWorld)):
            raise ValueError(f"state: required for a {type(env).__name__} env (it has no current "
                             "state to draw)")
        if not getattr(env, "_was_reset", True):
            raise ValueError("state: env has not been reset, so it has no current state; call "
                             "env.reset(seed) or pass a state")
        state = env.state[0]
    return rasterize(scene_for(env, state, **options), scale)
