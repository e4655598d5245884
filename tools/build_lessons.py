"""Rebuild lesson notebooks from their twins: ``python tools/build_lessons.py [NN ...]``.

Each ``lessons/src/NN_topic.py`` is converted and executed in a fresh kernel (MPLBACKEND unset,
no timing metadata) into ``lessons/NN_topic.ipynb``. With no arguments every lesson is rebuilt.
Afterwards the README's course map is regenerated from the notebooks' title cells, and each
rebuilt lesson's execution time is written to ``tools/lesson_seconds.json`` (the root
``conftest.py`` runs the longest lessons first).
"""

import json
import os
import re
import sys
from pathlib import Path

from rlcourse.course.cli import course_map_markdown
from rlcourse.course.notebooks import build

os.environ.pop("MPLBACKEND", None)
top = Path(__file__).resolve().parent.parent
wanted = sys.argv[1:]
twins = sorted(p for p in (top / "lessons" / "src").glob("[0-9][0-9]_*.py")
               if not wanted or p.stem[:2] in wanted)
if not twins:
    sys.exit(f"no lesson twin matches {wanted} in {top / 'lessons' / 'src'}")
# Each lesson's last build time: the root conftest.py runs the longest lessons first.
seconds_file = top / "tools" / "lesson_seconds.json"
measured = json.loads(seconds_file.read_text(encoding="utf-8")) if seconds_file.exists() else {}
failed = []
for twin in twins:
    try:
        out, seconds = build(twin)
    except Exception as err:  # keep building the others; report every failure at the end
        failed.append(twin.name)
        print(f"{twin.name}: FAILED: {type(err).__name__}: {str(err)[-2000:]}", flush=True)
        continue
    print(f"{out.name}: executed in {seconds:.1f} s", flush=True)
    measured[out.stem] = round(seconds, 1)

seconds_file.write_text(json.dumps(dict(sorted(measured.items())), indent=1) + "\n", encoding="utf-8")
readme = top / "README.md"
text = readme.read_text(encoding="utf-8")
block = f"<!-- course-map:start -->\n{course_map_markdown(top / 'lessons')}\n<!-- course-map:end -->"
readme.write_text(re.sub(r"<!-- course-map:start -->.*?<!-- course-map:end -->", lambda _: block,
                         text, flags=re.S), encoding="utf-8")
if failed:
    sys.exit(f"failed: {', '.join(failed)}")
