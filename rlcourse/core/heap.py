"""Keep freed memory in the process: autodiff allocates and frees dozens of 10-100 KB arrays per
training step. With glibc's default trim threshold the freed top of the heap can go back to the
OS after every step and be faulted in again on the next (measured on the 4-64-64-2 benchmark:
about 15 page faults and 0.35 ms a step, once the heap's layout puts short-lived arrays at its
top). The trainers call :func:`keep_freed_memory` once.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

__all__ = ["keep_freed_memory"]


@lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Let glibc keep up to 64 MB of freed heap instead of trimming it after each large free.

    Process-wide and permanent (memory is only held back, never lost); True where it took
    effect, False off glibc (macOS, Windows, musl), where it does nothing.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad = -1, -2  # glibc's malloc.h
    return bool(mallopt(m_trim_threshold, 64 << 20)) and bool(mallopt(m_top_pad, 16 << 20))
