"""Schedule the slowest lessons first.

``pytest`` runs on two or more workers with ``--dist loadfile``: each worker takes the next
file when it is free. Files in collection order leave the longest lessons (several deep-RL
runs each) to the end, where one worker runs them while the others wait. So the lessons go
first, the longest first, by the seconds ``tools/build_lessons.py`` last measured for each
(``tools/lesson_seconds.json``); the test files follow in their usual order. The order inside
a file is kept: nbval runs a notebook's cells top to bottom. (``--no-loadscope-reorder`` in
pyproject.toml keeps xdist from reordering the files by their number of tests: a lesson's
cells are few, however long they run.)
"""

import json
from pathlib import Path

_SECONDS = Path(__file__).parent / "tools" / "lesson_seconds.json"


def pytest_collection_modifyitems(session, config, items):
    try:
        seconds = json.loads(_SECONDS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    items.sort(key=lambda item: -seconds.get(Path(str(item.fspath)).stem, 0.0))  # stable
