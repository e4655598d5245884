"""Gridworlds as TabularMDPs built from a text layout: GridWorld, FrozenLake, CliffWalking.

Layout: rows of characters (a list of strings, or one string with rows split by newlines or
``/``). State of cell ``(row, col)`` is ``row * cols + col``. Actions are Gymnasium FrozenLake's,
for every gridworld here: ``LEFT=0, DOWN=1, RIGHT=2, UP=3``.

Cells:
- ``S`` start (episodes start uniformly on the S cells), ``F`` or ``.`` free;
- ``G`` goal: terminal, entering it pays ``goal_reward``;
- ``H`` hole: terminal, entering it pays ``hole_reward``;
- ``C`` cliff: entering it pays ``cliff_reward`` and puts the agent back on the start
  (the episode goes on); needs exactly one S;
- ``W`` wall: moves into it (and off the grid) leave the agent where it is.

Entering any other cell (or bumping) pays ``step_reward``. With ``slip`` the agent moves in the
intended direction with probability ``1 - slip`` and in each perpendicular direction with
``slip / 2`` (``slip=2/3`` is FrozenLake's slippery ice). Terminal states and walls (never
occupied) are absorbing with reward 0 and flagged in ``terminal``, so DP gives them value 0.
``R[s, a, s']`` is the reward of that transition; in the rare case that two outcomes of one
``(s, a)`` reach the same ``s'`` with different rewards (slipping next to a cliff), it holds their
probability-weighted mean, which keeps expected rewards, and so DP, exact.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import check_choice, check_count, check_flag, check_probability, finite_scalar
from .tabular import TabularMDP

__all__ = ["GridWorld", "FrozenLake", "CliffWalking", "LEFT", "DOWN", "RIGHT", "UP"]

LEFT, DOWN, RIGHT, UP = 0, 1, 2, 3
# (d_row, d_col) of each action; rows grow downwards.
MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))
ARROW_NAMES = ("LEFT", "DOWN", "RIGHT", "UP")
_CELLS = set("SF.HGCW")

FROZEN_LAKE_MAPS = {
    "4x4": ["SFFF", "FHFH", "FFFH", "HFFG"],
    "8x8": ["SFFFFFFF", "FFFFFFFF", "FFFHFFFF", "FFFFFHFF",
            "FFFHFFFF", "FHHFFFHF", "FHFFHFHF", "FFFHFFFG"],
}
CLIFF_WALKING_MAP = ["." * 12, "." * 12, "." * 12, "S" + "C" * 10 + "G"]


def parse_layout(layout) -> list[str]:
    """Layout rows as a list of equal-length strings of known cell characters."""
    if isinstance(layout, str):
        rows = [r.strip() for r in layout.replace("/", "\n").strip().splitlines()]
    elif isinstance(layout, (list, tuple, np.ndarray)) and all(isinstance(r, str) for r in layout):
        rows = [str(r) for r in layout]
    else:
        raise TypeError(f"layout: expected a string or a list of row strings, got "
                        f"{type(layout).__name__} {layout!r:.60}")
    if not rows or not rows[0]:
        raise ValueError("layout: expected at least one non-empty row")
    for i, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise ValueError(
                f"layout: every row must have {len(rows[0])} cells (row 0), row {i} has {len(row)}"
            )
        bad = set(row) - _CELLS
        if bad:
            raise ValueError(
                f"layout: unknown cell {sorted(bad)[0]!r} in row {i}; expected one of S F . H G C W"
            )
    if not any("S" in row for row in rows):
        raise ValueError("layout: expected at least one start cell 'S'")
    return rows


def default_layout(size: int) -> list[str]:
    """The default GridWorld: an open ``size x size`` grid, start top-left, goal bottom-right."""
    check_count("size", size, low=2)
    rows = [["."] * size for _ in range(size)]
    rows[0][0], rows[-1][-1] = "S", "G"
    return ["".join(r) for r in rows]


def build_model(rows, step_reward, slip, goal_reward, hole_reward, cliff_reward):
    """``(P, R, terminal, start)`` of a parsed layout (see the module docstring)."""
    n_rows, n_cols = len(rows), len(rows[0])
    S = n_rows * n_cols
    cells = "".join(rows)
    starts = [i for i, c in enumerate(cells) if c == "S"]
    if "C" in cells and len(starts) != 1:
        raise ValueError(f"layout: a cliff needs exactly one start cell 'S', got {len(starts)}")
    terminal = np.array([c in "GHW" for c in cells])
    P = np.zeros((S, 4, S))
    weighted_r = np.zeros((S, 4, S))  # sum of probability * reward, divided by P below
    cell_reward = {"G": goal_reward, "H": hole_reward, "C": cliff_reward}
    for s in range(S):
        if terminal[s]:
            P[s, :, s] = 1.0
            continue
        r, c = divmod(s, n_cols)
        for a in range(4):
            for direction, prob in ((a, 1.0 - slip), ((a - 1) % 4, slip / 2),
                                    ((a + 1) % 4, slip / 2)):
                if prob == 0.0:
                    continue
                r2 = min(max(r + MOVES[direction][0], 0), n_rows - 1)
                c2 = min(max(c + MOVES[direction][1], 0), n_cols - 1)
                s2 = r2 * n_cols + c2
                if cells[s2] == "W":
                    s2 = s
                reward = cell_reward.get(cells[s2], step_reward)
                if cells[s2] == "C":
                    s2 = starts[0]
                P[s, a, s2] += prob
                weighted_r[s, a, s2] += prob * reward
    R = np.divide(weighted_r, P, out=np.zeros_like(P), where=P > 0)
    start = np.zeros(S)
    start[starts] = 1.0 / len(starts)
    return P, R, terminal, start


class GridWorld(TabularMDP):
    """A TabularMDP on a grid layout (see the module docstring for cells, rewards and slip).

    Without ``layout``: an open ``size x size`` grid, start top-left (state 0), goal (+1,
    terminal) bottom-right (state ``size**2 - 1``), ``step_reward`` per move.
    ``shape = (rows, cols)``; ``layout`` holds the rows as strings.
    """

    def __init__(self, size: int = 5, n: int = 1, seed: int | None = None,
                 step_reward: float = -0.01, slip: float = 0.0, layout=None, *,
                 goal_reward: float = 1.0, hole_reward: float = 0.0,
                 cliff_reward: float = -100.0, max_steps: int | None = None):
        self.layout = parse_layout(layout) if layout is not None else default_layout(size)
        self.shape = (len(self.layout), len(self.layout[0]))
        self.slip = check_probability("slip", slip)
        P, R, terminal, start = build_model(self.layout, finite_scalar("step_reward", step_reward),
                                            self.slip, finite_scalar("goal_reward", goal_reward),
                                            finite_scalar("hole_reward", hole_reward),
                                            finite_scalar("cliff_reward", cliff_reward))
        super().__init__(P, R, terminal, start, n=n, seed=seed, max_steps=max_steps)

    def render_text(self, copy: int = 0) -> str:
        """The layout, one line per row, with ``@`` on copy ``copy``'s cell once reset."""
        cells = [list(row) for row in self.layout]
        if self._was_reset:
            r, c = divmod(int(self.state[copy]), self.shape[1])
            cells[r][c] = "@"
        return "\n".join("".join(row) for row in cells)

    def __str__(self) -> str:
        return self.render_text()


_GYM_LIMIT = "gymnasium"


class FrozenLake(GridWorld):
    """Gymnasium's FrozenLake-v1: reward 1 for reaching G, 0 otherwise; holes end the episode.

    ``map_name`` ``"4x4"`` or ``"8x8"`` (or pass ``layout``). ``is_slippery`` moves as intended
    with probability 1/3 and to each side with 1/3 (``slip=2/3``). ``max_steps`` defaults to
    Gymnasium's TimeLimit: 100 for 4x4, 200 for 8x8, none for a custom layout.
    """

    def __init__(self, map_name: str = "4x4", is_slippery: bool = True, n: int = 1,
                 seed: int | None = None, max_steps=_GYM_LIMIT, layout=None):
        custom = layout is not None
        if not custom:
            layout = FROZEN_LAKE_MAPS[check_choice("map_name", map_name, tuple(FROZEN_LAKE_MAPS))]
        is_slippery = check_flag("is_slippery", is_slippery)
        if isinstance(max_steps, str) and max_steps == _GYM_LIMIT:
            max_steps = None if custom else {"4x4": 100, "8x8": 200}[map_name]
        super().__init__(n=n, seed=seed, step_reward=0.0, slip=2 / 3 if is_slippery else 0.0,
                         layout=layout, goal_reward=1.0, hole_reward=0.0, max_steps=max_steps)


class CliffWalking(GridWorld):
    """Sutton & Barto's cliff (Example 6.6), as Gymnasium's CliffWalking-v1 on a 4x12 grid.

    Start bottom-left, goal bottom-right, cliff between them: -1 per step (entering the goal
    included), -100 for stepping into the cliff and back to the start (not an episode end).
    No time limit by default, as Gymnasium. ``slip=2/3`` is Gymnasium's ``is_slippery``.
    Note: Gymnasium's CliffWalking numbers actions UP, RIGHT, DOWN, LEFT; ours are
    LEFT, DOWN, RIGHT, UP as every gridworld here.
    """

    def __init__(self, n: int = 1, seed: int | None = None, slip: float = 0.0,
                 max_steps: int | None = None):
        super().__init__(n=n, seed=seed, step_reward=-1.0, slip=slip, layout=CLIFF_WALKING_MAP,
                         goal_reward=-1.0, cliff_reward=-100.0, max_steps=max_steps)
