"""Input checks of the drawing functions: flags and matplotlib axes (errors name the argument)."""

from __future__ import annotations

import numpy as np

from ..core._checks import check_flag

__all__ = ["check_flag", "check_axes"]


def check_axes(name: str, ax, count: int | None = None):
    """``ax`` as one matplotlib ``Axes`` (``count=None``), or ``count`` of them (any array shape)
    as a flat list; a Figure, a string or the wrong number of axes is an error naming ``name``."""
    from matplotlib.axes import Axes

    if count is None:
        if not isinstance(ax, Axes):
            hint = " (pass fig.axes[0] or the ax of plt.subplots())" if hasattr(ax, "axes") else ""
            raise TypeError(f"{name}: expected a matplotlib Axes, got {type(ax).__name__}{hint}")
        return ax
    flat = list(np.ravel(np.asarray(ax, dtype=object))) if not isinstance(ax, (str, bytes)) else [ax]
    if len(flat) != count or not all(isinstance(a, Axes) for a in flat):
        raise TypeError(f"{name}: expected {count} matplotlib Axes (e.g. plt.subplots(2, 2)[1]), got "
                        f"{type(ax).__name__} of {len(flat)}")
    return flat
