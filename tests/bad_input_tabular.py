"""Bad-input specs for rlcourse.tabular.bandits, rlcourse.tabular.control, rlcourse.tabular.dp,
rlcourse.tabular.prediction, rlcourse.envs.gridworld, rlcourse.envs.gym_adapter,
rlcourse.envs.tabular.

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
    'EpsilonGreedy', 'FrozenLake', 'GradientBandit', 'TabularMDP', 'UCB', 'check_mdp',
    'double_q_learning', 'expected_sarsa', 'from_gymnasium', 'mc_control', 'mc_prediction',
    'n_step_td', 'policy_dynamics', 'policy_evaluation', 'policy_iteration', 'q_learning',
    'record_episodes', 'run_bandit', 'sarsa', 'td0', 'td_lambda'
})
