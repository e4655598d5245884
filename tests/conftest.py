"""Test-session settings.

BLAS threads: the course's matrices are small (batches of a few hundred by 64), too small to
gain from threads, and on a busy 2-core CI machine OpenBLAS threads spin waiting for cores and
make each step tens of times slower. One thread for this process and, through the
environment, for every kernel nbval starts.
"""

import os

os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ.pop("MPLBACKEND", None)

# Hypothesis's per-example deadline turns a busy CI machine's slowness into failures; the
# properties are about values, not speed (speed is measured by benchmarks/).
from hypothesis import settings  # noqa: E402

settings.register_profile("rlcourse", deadline=None)
settings.load_profile("rlcourse")
