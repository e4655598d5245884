"""The exercises of every lesson, registered with :mod:`rlcourse.course.registry` on import.

One module per part of the course; each calls ``register`` at import time.
"""

from . import (  # noqa: F401
    deep,
    deep_value,
    foundations,
    grpo,
    importance,
    llm,
    preference,
    search,
    tabular_dp,
    tabular_td,
)

__all__: list[str] = []
