"""The exercises of every lesson, registered with ``rlcourse.exercises`` on import.

One module per part of the course; each calls ``register`` at import time.
"""

from . import (
    deep,  # noqa: F401
    deep_value,  # noqa: F401
    foundations,  # noqa: F401
    llm,  # noqa: F401
    preference,  # noqa: F401
    search,  # noqa: F401
    tabular_dp,  # noqa: F401
    tabular_td,  # noqa: F401
)
