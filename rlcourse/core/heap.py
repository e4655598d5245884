"""Keep freed memory in the process: autodiff allocates and frees dozens of 10-100 KB arrays per
training step. With glibc's default trim threshold the freed top of the heap can go back to the
OS after every step and be faulted in again on the next (measured on the 4-64-64-2 benchmark:
about 15 page faults and 0.35 ms a step, once the heap's layout puts short-lived arrays at its
top). Setting the trim threshold also freezes glibc's mmap threshold, which otherwise grows as
large blocks are freed, at whatever it had reached: if it is still at 128 KB, every larger array
(a transformer's activations are 0.25-4 MB) is a fresh mmap, faulted in page by page and unmapped
when freed (measured: 22,000 page faults and 40% of a transformer training step at batch 256).
So arrays up to 32 MB are served from the heap too. The trainers call :func:`keep_freed_memory`
once.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

__all__ = ["keep_freed_memory"]


@lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Let glibc keep up to 64 MB of freed heap instead of trimming it after each large free, and
    serve arrays up to 32 MB (its largest mmap threshold) from that heap.

    Process-wide and permanent (memory is only held back, never lost); True where it took
    effect, False off glibc (macOS, Windows, musl), where it does nothing.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3  # glibc's malloc.h
    return (bool(mallopt(m_trim_threshold, 64 << 20)) and bool(mallopt(m_top_pad, 16 << 20))
            and bool(mallopt(m_mmap_threshold, 32 << 20)))
