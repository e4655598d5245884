"""One BLAS thread for the course's small arrays.

A minibatch of a few hundred rows times 64 units takes microseconds; OpenBLAS threads add
synchronisation, and on a busy machine they spin waiting for cores, making a step tens of times
slower. The trainers run inside ``single_thread_blas()``.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["single_thread_blas"]


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


@contextmanager
def single_thread_blas():
    """Run the block (or decorated function) with OpenBLAS on one thread, then restore its
    thread count (a no-op where numpy's OpenBLAS is not found, e.g. MKL builds)."""
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
