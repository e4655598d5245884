"""Bad-input specs for rlcourse.viz.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.
``NOT_YET_SPECIFIED``: public callables of these modules without a spec yet (may only shrink).
"""

from __future__ import annotations

import numpy as np  # noqa: F401
from bad_input_kinds import EXTRA, RNG, SHORT, F, ints_below, without  # noqa: F401

SPECS: dict[str, tuple] = {}

EXEMPT: dict[str, str] = {}

NOT_YET_SPECIFIED = frozenset({
    'Animation', 'SamplesTable', 'animate', 'bandit_scene', 'cartpole_scene', 'gridworld_scene',
    'learning_curve', 'plot_grid', 'ppo_diagnostics', 'rasterize', 'render', 'samples_table',
    'side_by_side', 'tictactoe_scene'
})
