"""Bad-input specs for rlcourse.core.importance, rlcourse.core.kl, rlcourse.core.losses,
rlcourse.core.sampling, rlcourse.core.tokens, rlcourse.search.mcts, rlcourse.search.minimax,
rlcourse.envs.tictactoe.

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
    'TicTacToe', 'aggregate_token_loss', 'completion_mask', 'doubly_robust_estimate',
    'filter_logits', 'grpo_loss', 'kl_penalized_rewards', 'mcts', 'minimax_value',
    'minimax_values', 'perfect_action', 'ppo_clip_loss', 'puct_score', 'sample_token',
    'sampled_log_ratio', 'stepwise_doubly_robust_estimate', 'top_k_filter', 'top_p_filter'
})
