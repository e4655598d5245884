"""Grid worlds drawn with matplotlib: a value heat map and policy arrows on the layout."""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_finite, check_nonnegative, real_scalar
from ..envs.gridworld import MOVES, GridWorld
from ._inputs import check_axes, check_flag

__all__ = ["plot_grid"]

# Cells the agent never acts in get a flat colour of their own, outside the value colour scale,
# so that a goal (worth 0 as a terminal state) is never read as a bad cell.
_CELL_COLOURS = {"G": "#9fd89a", "H": "#c9d6e3", "W": "#8c8c8c", "C": "#e3a6a6"}


def plot_grid(env, values=None, policy=None, ax=None, title=None, cmap="viridis",
              annotate=True, *, vmin=None, vmax=None, colorbar=True, label=None, fontsize=9,
              fmt="{:.2f}", letters="SGHCW"):
    """Draw the grid: a heat map of ``values [S]`` and arrows of ``policy``.

    ``policy`` is ``[S]`` actions (one arrow per cell) or ``[S, A]`` action probabilities
    (one arrow per action with positive probability, its length relative to the cell's most
    likely action: pass ties as equal probabilities to show every best action). Arrows point
    the way the action moves the agent (UP points up on screen); terminal cells, walls and
    cliff cells get no arrow and no value: they are drawn in a flat colour of their own (goal
    green, hole pale blue, wall grey, cliff red) with their letter, outside the colour scale.
    ``vmin``/``vmax`` fix the colour scale (give panels that are compared the same ones, and
    ``colorbar=False`` to draw one shared colour bar with ``fig.colorbar(ax.images[0],
    ax=axes)``); ``label`` names the colour bar. Value labels (``annotate``, grids of at most 64
    cells) use ``fmt`` and ``fontsize`` points, in black or white, whichever reads better on
    the cell's colour; ``letters`` are the cell kinds whose letter is written. Returns ``ax``.

    ``values`` must be finite at every cell that has a value: NaN or inf there is an error,
    not a blank cell or a colour scale stretched to infinity (it usually means a diverged
    estimate); at terminal, wall and cliff cells, which are never drawn, anything numeric goes
    (NaN there is how a caller blanks them). ``vmin``/``vmax`` are finite numbers with
    ``vmin <= vmax``; ``fmt`` must format a float (``"{:.2f}"``, not ``"{:d}"``).
    """
    import matplotlib.pyplot as plt  # only when plotting: keeps `import rlcourse` light
    from matplotlib.patches import Rectangle

    if not isinstance(env, GridWorld):
        raise TypeError(f"env: expected a GridWorld (or FrozenLake, CliffWalking), got {type(env).__name__}")
    annotate, colorbar = check_flag("annotate", annotate), check_flag("colorbar", colorbar)
    check_nonnegative("fontsize", fontsize, positive=True)
    limits = {}
    for name, value in (("vmin", vmin), ("vmax", vmax)):
        if value is not None:
            limits[name] = real_scalar(name, value)
            check_finite(name, np.asarray(limits[name]))
    if len(limits) == 2 and limits["vmin"] > limits["vmax"]:
        raise ValueError(f"vmin: expected vmin <= vmax, got vmin {vmin} and vmax {vmax}")
    if not isinstance(letters, str):
        raise TypeError(f"letters: expected a string of cell letters such as 'SGHCW', got "
                        f"{type(letters).__name__} {letters!r}")
    if not isinstance(fmt, str):
        raise TypeError(f"fmt: expected a format string such as '{{:.2f}}', got {type(fmt).__name__}")
    try:
        fmt.format(0.5)
    except (ValueError, IndexError, KeyError, TypeError) as err:
        raise ValueError(f"fmt: {fmt!r} cannot format a value ({type(err).__name__}: {err}); expected "
                         "a format such as '{:.2f}'") from None
    if ax is not None:
        ax = check_axes("ax", ax)
    cells = np.array(list("".join(env.layout)))
    flat = env.terminal | np.isin(cells, ["W", "C"])  # cells with no value of their own
    if values is not None:
        raw = np.asarray(values)
        if raw.dtype.kind in "biuf" and raw.shape == (env.num_states,):
            raw = raw.astype(np.float64)  # a copy
            raw[flat] = 0.0  # never drawn: a NaN that blanks such a cell is fine
            values = raw
        values = as_float_array("values", values)  # finite and real: no strings, complex, NaN
        if values.shape != (env.num_states,):
            raise ValueError(
                f"values: expected shape ({env.num_states},) (one per state of env), "
                f"got {values.shape}"
            )
        values = values.astype(np.float64)
    if policy is not None:
        policy = _check_policy(env, policy)

    n_rows, n_cols = env.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * n_cols + 1.5, 0.6 * n_rows + 0.6))
    if values is not None:
        shown = np.ma.masked_array(values, mask=flat).reshape(env.shape)
        img = ax.imshow(shown, cmap=cmap, origin="upper", vmin=vmin, vmax=vmax)
        if colorbar:
            ax.figure.colorbar(img, ax=ax, fraction=0.046, pad=0.04, label=label)
    else:
        img = None
        ax.imshow(np.zeros(env.shape), cmap="Greys", vmin=0, vmax=1, origin="upper")
    for s, cell in enumerate(cells):
        r, c = divmod(s, n_cols)
        if cell in _CELL_COLOURS:
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, facecolor=_CELL_COLOURS[cell],
                                   edgecolor="none", zorder=1))
        if cell in letters:
            centred = flat[s] or values is None or not annotate
            ax.text(c, r if centred else r - 0.35, cell, ha="center", va="center",
                    fontsize=fontsize + 1, fontweight="bold", color="black", zorder=3)
        if annotate and img is not None and not flat[s] and env.num_states <= 64:
            ax.text(c, r + 0.35, fmt.format(values[s]), ha="center", va="center",
                    fontsize=fontsize, color=_text_colour(img, values[s]), zorder=3)
    if policy is not None:
        _draw_arrows(env, ax, policy)
    ax.set_xticks(range(n_cols))
    ax.set_yticks(range(n_rows))
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)  # row 0 at the top, as in the text rendering
    if title is not None:
        ax.set_title(title)
    return ax


def _text_colour(img, value) -> str:
    """Black on light cells, white on dark ones (relative luminance of the cell's colour)."""
    r, g, b, _ = img.cmap(img.norm(value))
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white"


def _live_cells(env) -> np.ndarray:
    """States where the agent acts: not terminal (goal, hole, wall) and not a cliff cell."""
    return np.flatnonzero(~env.terminal & (np.array(list("".join(env.layout))) != "C"))


def _check_policy(env, policy) -> np.ndarray:
    """``policy`` as ``[S]`` int actions in range or ``[S, A]`` probabilities (rows of the cells
    the agent acts in >= 0 and summing to 1), else an error naming ``policy``."""
    policy = np.asarray(policy)
    if policy.shape == (env.num_states, env.num_actions) and policy.dtype.kind == "f":
        rows_sum = policy.sum(axis=1)
        live = _live_cells(env)
        if (policy < 0).any() or not np.allclose(rows_sum[live], 1.0, atol=1e-6):
            raise ValueError("policy: each row of action probabilities must be >= 0 and sum to 1")
        return policy
    if policy.shape != (env.num_states,) or policy.dtype.kind not in "iu":
        raise ValueError(
            f"policy: expected shape ({env.num_states},) of ints or "
            f"({env.num_states}, {env.num_actions}) of probabilities (the states and actions of env), "
            f"got shape {policy.shape} dtype {policy.dtype}"
        )
    if policy.size and (policy.min() < 0 or policy.max() >= env.num_actions):
        raise ValueError(f"policy: actions must be in [0, {env.num_actions}), "
                         f"got {policy.min()}..{policy.max()}")
    return policy


def _draw_arrows(env, ax, policy: np.ndarray) -> None:
    if policy.ndim == 2:
        _draw_probability_arrows(env, ax, policy)
        return
    live = _live_cells(env)
    rows, cols = np.divmod(live, env.shape[1])
    moves = np.array(MOVES)[policy[live]]
    # Data coordinates: x is the column, y the row (pointing down, as drawn), so an action's
    # (d_col, d_row) is exactly its arrow in data space.
    ax.quiver(cols, rows, 0.34 * moves[:, 1], 0.34 * moves[:, 0], angles="xy",
              scale_units="xy", scale=1, pivot="middle", color="white",
              edgecolor="black", linewidth=0.5, width=0.012, zorder=2)


def _draw_probability_arrows(env, ax, probs: np.ndarray) -> None:
    """One arrow per action with positive probability, from each cell's centre, its length
    proportional to the action's probability relative to the cell's most likely action, so a
    uniform policy shows four equal arrows rather than one arbitrary one (``probs`` checked by
    :func:`_check_policy`)."""
    live = _live_cells(env)
    rows, cols = np.divmod(live, env.shape[1])
    moves = np.array(MOVES)
    relative = probs[live] / probs[live].max(axis=1, keepdims=True)
    for a in range(env.num_actions):
        length = 0.22 * relative[:, a]
        keep = length > 0
        ax.quiver(cols[keep], rows[keep], length[keep] * moves[a, 1], length[keep] * moves[a, 0],
                  angles="xy", scale_units="xy", scale=1, pivot="tail", color="white",
                  edgecolor="black", linewidth=0.5, width=0.01, headwidth=3.5, headlength=4,
                  headaxislength=3.5, zorder=2)
