"""Process settings for small arrays: BLAS threads restored after the block, glibc heap kept."""

import platform

import pytest

import rlcourse as rc
from rlcourse.core import blas


def test_single_thread_blas_sets_one_thread_and_restores_the_count():
    functions = blas._openblas_thread_functions()
    if functions is None:
        pytest.skip("numpy is not linked to a bundled OpenBLAS here")
    get, set_ = functions
    set_(2)
    with rc.single_thread_blas():
        assert get() == 1
    assert get() == 2
    set_(1)


def test_keep_freed_memory_takes_effect_on_glibc():
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert rc.keep_freed_memory() is True
