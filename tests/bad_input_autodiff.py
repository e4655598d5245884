"""Bad-input specs for rlcourse.core.autodiff.

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
    'Tensor', 'affine', 'clip', 'concatenate', 'embedding', 'exp', 'gelu', 'grad', 'layer_norm',
    'log', 'log_sigmoid', 'log_softmax', 'logsumexp', 'maximum', 'mean', 'minimum',
    'numerical_grad', 'relu', 'reshape', 'self_attention', 'sigmoid', 'softmax', 'sqrt',
    'square', 'stack', 'stop_gradient', 'take_along_axis', 'tanh', 'transpose', 'tree_leaves',
    'tree_map', 'value_and_grad', 'where'
})
