"""Grid worlds drawn with matplotlib: a value heat map and policy arrows on the layout."""

from __future__ import annotations

import numpy as np

from ..envs.gridworld import MOVES

__all__ = ["plot_grid"]


def plot_grid(env, values=None, policy=None, ax=None, title=None, cmap="viridis",
              annotate=True):
    """Draw the grid: a heat map of ``values [S]`` and arrows of ``policy``.

    ``policy`` is ``[S]`` actions (one arrow per cell) or ``[S, A]`` action probabilities
    (one arrow per action, as long as its probability). Arrows point the way the action moves
    the agent (UP points up on screen); terminal cells, walls and cliff cells get no arrow.
    Special cells show their letter. Returns ``ax``.
    """
    import matplotlib.pyplot as plt  # only when plotting: keeps `import rlcourse` light

    n_rows, n_cols = env.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * n_cols + 1.5, 0.6 * n_rows + 0.6))
    if values is not None:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (env.num_states,):
            raise ValueError(
                f"values: expected shape ({env.num_states},) (one per state), "
                f"got {values.shape}"
            )
        img = ax.imshow(values.reshape(env.shape), cmap=cmap, origin="upper")
        ax.figure.colorbar(img, ax=ax, fraction=0.046, pad=0.04)
    else:
        ax.imshow(np.zeros(env.shape), cmap="Greys", vmin=0, vmax=1, origin="upper")
    for s, cell in enumerate("".join(env.layout)):
        r, c = divmod(s, n_cols)
        if cell in "SGHCW":
            ax.text(c, r - 0.28, cell, ha="center", va="center", fontsize=8, color="red")
        if annotate and values is not None and not env.terminal[s] and env.num_states <= 64:
            ax.text(c, r + 0.36, f"{values[s]:.2f}", ha="center", va="center", fontsize=6,
                    color="white")
    if policy is not None:
        _draw_arrows(env, ax, policy)
    ax.set_xticks(range(n_cols))
    ax.set_yticks(range(n_rows))
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)  # row 0 at the top, as in the text rendering
    if title is not None:
        ax.set_title(title)
    return ax



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
    # No arrow where the agent never acts: terminal cells, walls and cliff cells.
    live = np.flatnonzero(~env.terminal & (np.array(list("".join(env.layout))) != "C"))
    rows, cols = np.divmod(live, env.shape[1])
    moves = np.array(MOVES)[policy[live]]
    # Data coordinates: x is the column, y the row (pointing down, as drawn), so an action's
    # (d_col, d_row) is exactly its arrow in data space.
    ax.quiver(cols, rows, 0.5 * moves[:, 1], 0.5 * moves[:, 0], angles="xy",
              scale_units="xy", scale=1, pivot="middle", color="white",
              edgecolor="black", linewidth=0.5, width=0.012)



def _draw_probability_arrows(env, ax, probs: np.ndarray) -> None:
    """One arrow per action from each cell's centre, its length proportional to the action's
    probability, so a uniform policy shows four equal arrows rather than one arbitrary one."""
    rows_sum = probs.sum(axis=1)
    live = np.flatnonzero(~env.terminal & (np.array(list("".join(env.layout))) != "C"))
    if (probs < 0).any() or not np.allclose(rows_sum[live], 1.0, atol=1e-6):
        raise ValueError("policy: each row of action probabilities must be >= 0 and sum to 1")
    rows, cols = np.divmod(live, env.shape[1])
    moves = np.array(MOVES)
    for a in range(env.num_actions):
        length = 0.45 * probs[live, a]
        keep = length > 0
        ax.quiver(cols[keep], rows[keep], length[keep] * moves[a, 1], length[keep] * moves[a, 0],
                  angles="xy", scale_units="xy", scale=1, pivot="tail", color="white",
                  edgecolor="black", linewidth=0.5, width=0.012)
