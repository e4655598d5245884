"""Grid worlds drawn with matplotlib: a value heat map and policy arrows on the layout."""

from __future__ import annotations

import numpy as np

from ..envs.gridworld import MOVES

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
    """
    import matplotlib.pyplot as plt  # only when plotting: keeps `import rlcourse` light
    from matplotlib.patches import Rectangle

    n_rows, n_cols = env.shape
    cells = np.array(list("".join(env.layout)))
    flat = env.terminal | np.isin(cells, ["W", "C"])  # cells with no value of their own
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * n_cols + 1.5, 0.6 * n_rows + 0.6))
    if values is not None:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (env.num_states,):
            raise ValueError(
                f"values: expected shape ({env.num_states},) (one per state), "
                f"got {values.shape}"
            )
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


def _draw_arrows(env, ax, policy) -> None:
    policy = np.asarray(policy)
    if policy.shape == (env.num_states, env.num_actions) and policy.dtype.kind == "f":
        _draw_probability_arrows(env, ax, policy)
        return
    if policy.shape != (env.num_states,) or policy.dtype.kind not in "iu":
        raise ValueError(
            f"policy: expected shape ({env.num_states},) of ints or "
            f"({env.num_states}, {env.num_actions}) of probabilities, "
            f"got shape {policy.shape} dtype {policy.dtype}"
        )
    if policy.size and (policy.min() < 0 or policy.max() >= env.num_actions):
        raise ValueError(f"policy: actions must be in [0, {env.num_actions}), "
                         f"got {policy.min()}..{policy.max()}")
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
    uniform policy shows four equal arrows rather than one arbitrary one."""
    rows_sum = probs.sum(axis=1)
    live = _live_cells(env)
    if (probs < 0).any() or not np.allclose(rows_sum[live], 1.0, atol=1e-6):
        raise ValueError("policy: each row of action probabilities must be >= 0 and sum to 1")
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
