"""The exercises of every lesson, registered with ``rlcourse.exercises`` on import.

One module per part of the course; each calls ``register`` at import time.
"""

from . import foundations  # noqa: F401
from . import search  # noqa: F401
from . import tabular_dp  # noqa: F401
from . import tabular_td  # noqa: F401
from . import preference  # noqa: F401
from . import llm  # noqa: F401
from . import deep  # noqa: F401
from . import deep_value  # noqa: F401
