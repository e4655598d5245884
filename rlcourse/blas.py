"""Process settings for the course's small arrays: one BLAS thread, and a heap that keeps memory.

A minibatch of a few hundred rows times 64 units takes microseconds; OpenBLAS threads add
synchronisation, and on a busy machine they spin waiting for cores, making a step tens of times
slower. Autodiff allocates and frees dozens of 10-100 KB arrays per step; with glibc's default
trim threshold the freed top of the heap can go back to the OS after every step and be faulted
in again on the next (measured on the 4-64-64-2 benchmark: about 15 page faults and 0.35 ms a
step, once the heap's layout puts short-lived arrays at its top). The trainers run inside
``single_thread_blas()``, which sets both.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["single_thread_blas", "keep_freed_memory"]


@lru_cache(maxsize=1)
def _openblas_thread_functions():
    """``(get, set)`` for the OpenBLAS bundled with numpy's wheels, or None if not found."""
    root = Path(np.__file__).parent
    candidates = [*root.parent.glob("numpy.libs/*openblas*"), *root.glob(".dylibs/*openblas*")]
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for suffix in ("64_", "_64_", ""):
            for prefix in ("scipy_openblas", "openblas"):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and set_ is not None:
                    return get, set_
    return None


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


@contextmanager
def single_thread_blas():
    """Run the block (or decorated function) with OpenBLAS on one thread, then restore its
    thread count (a no-op where numpy's OpenBLAS is not found, e.g. MKL builds); also calls
    :func:`keep_freed_memory` once."""
    keep_freed_memory()
    functions = _openblas_thread_functions()
    if functions is None:
        yield
        return
    get, set_ = functions
    before = int(get())
    set_(1)
    try:
        yield
    finally:
        set_(before)
