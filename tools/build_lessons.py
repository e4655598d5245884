"""Rebuild lesson notebooks from their twins: ``python tools/build_lessons.py [NN ...]``.

Each ``lessons/src/NN_topic.py`` is converted and executed in a fresh kernel (MPLBACKEND unset,
no timing metadata) into ``lessons/NN_topic.ipynb``. With no arguments every lesson is rebuilt.
"""

import os
import sys
from pathlib import Path

from rlcourse.notebooks import build

os.environ.pop("MPLBACKEND", None)
root = Path(__file__).resolve().parent.parent / "lessons" / "src"
wanted = sys.argv[1:]
twins = sorted(p for p in root.glob("[0-9][0-9]_*.py") if not wanted or p.stem[:2] in wanted)
if not twins:
    sys.exit(f"no lesson twin matches {wanted} in {root}")
for twin in twins:
    out, seconds = build(twin)
    print(f"{out.name}: executed in {seconds:.1f} s")
