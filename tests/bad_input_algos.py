"""Bad-input specs for rlcourse.algos.

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
    'Checkpoints', 'RecentStates', 'ReplayBuffer', 'actor_critic', 'actor_critic_loss',
    'actor_critic_model', 'actor_critic_sweep', 'collect_episodes', 'collect_rollout', 'dqn',
    'dqn_loss', 'evaluate', 'greedy_discounted_returns', 'greedy_flips', 'greedy_policy',
    'make_actor_critic', 'overestimation', 'policy_gradient_estimate', 'policy_step', 'ppo',
    'ppo_loss', 'ppo_sweep', 'reinforce', 'reinforce_loss', 'relative_change'
})
