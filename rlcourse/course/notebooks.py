"""Find, describe, build and execute the lesson notebooks.

Each lesson has two files: ``lessons/NN_topic.ipynb`` (what students open and nbval checks,
stored executed) and its plain-text twin ``lessons/src/NN_topic.py`` (jupytext percent format,
the file authors edit and review). ``build`` turns a twin into an executed notebook; a test
checks that every notebook's cells equal its twin's.

Running notebooks needs the ``dev`` extra (jupytext, nbformat, nbclient); those imports are
made inside the functions so that ``import rlcourse`` stays numpy + matplotlib only.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LessonInfo", "find_lessons", "lesson_info", "build", "execute", "cell_summary",
           "lesson_version", "REFRESHED_SUFFIX"]

# ``rlcourse start --refresh NN`` writes the current lesson beside the student's as
# ``NN_topic_new.ipynb``: a copy to compare with, not a lesson of its own.
REFRESHED_SUFFIX = "_new"

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
_TITLE = re.compile(r"^#\s+(\d\d)\s+·\s+(.+?)\s*$", re.M)
_FIELD = re.compile(r"^\*(Prerequisites|Time|You will build):\*\s*(.+?)\s*$", re.M)


@dataclass(frozen=True)
class LessonInfo:
    number: str
    title: str
    prerequisites: tuple[str, ...]
    minutes: int
    builds: str
    path: Path


def find_lessons(root: str | Path | None = None) -> list[Path]:
    """The lesson notebooks ``NN_*.ipynb`` under ``root`` (default: ``./lessons``), in order.

    A refreshed copy ``NN_topic_new.ipynb`` (see ``REFRESHED_SUFFIX``) is not counted.
    """
    root = Path("lessons") if root is None else Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"lessons folder {str(root)!r} does not exist")
    return sorted(p for p in root.glob("[0-9][0-9]_*.ipynb")
                  if not p.stem.endswith(REFRESHED_SUFFIX))


def lesson_info(path: str | Path) -> LessonInfo:
    """Number, title, prerequisites, time and goal, read from the notebook's title cell."""
    import json

    path = Path(path)
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    if not cells or cells[0]["cell_type"] != "markdown":
        raise ValueError(f"{path.name}: the first cell must be the markdown title cell")
    text = "".join(cells[0]["source"])
    title = _TITLE.search(text)
    if title is None:
        raise ValueError(f"{path.name}: title cell must start with '# NN · Title', got {text[:60]!r}")
    fields = dict(_FIELD.findall(text))
    missing = {"Prerequisites", "Time", "You will build"} - fields.keys()
    if missing:
        raise ValueError(f"{path.name}: title cell lacks the line(s) {sorted(missing)}")
    prereq = fields["Prerequisites"]
    prereqs = () if prereq.lower().startswith("none") else tuple(re.findall(r"\d\d", prereq))
    minutes = re.match(r"(\d+)", fields["Time"])
    if minutes is None:
        raise ValueError(f"{path.name}: *Time:* must start with minutes, got {fields['Time']!r}")
    return LessonInfo(
        number=title.group(1),
        title=title.group(2),
        prerequisites=prereqs,
        minutes=int(minutes.group(1)),
        builds=fields["You will build"],
        path=path,
    )


def twin_path(notebook: str | Path) -> Path:
    """The jupytext percent twin of a lesson notebook: ``lessons/src/NN_topic.py``."""
    notebook = Path(notebook)
    return notebook.parent / "src" / (notebook.stem + ".py")


def cell_summary(nb) -> list[tuple[str, str, tuple[str, ...]]]:
    """(type, source, tags) of every cell: what a twin and its notebook must agree on."""
    return [
        (c["cell_type"], "".join(c["source"]).strip(), tuple(c.get("metadata", {}).get("tags", ())))
        for c in nb["cells"]
    ]


def lesson_version(nb) -> str:
    """A short hash of a lesson's cells (type, source, tags; not outputs): it changes exactly
    when the lesson's text or code does. Student copies record the version they were made from
    (``metadata["rlcourse"]["version"]``), so a changed lesson can be noticed."""
    import hashlib
    import json

    text = json.dumps(cell_summary(nb), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def execute(nb, cwd: str | Path, timeout: int = 300, *, env: dict | None = None,
            allow_errors: bool = False, timeout_func=None, quiet: bool = False):
    """Run every cell of ``nb`` in a fresh python3 kernel (no timing metadata); returns ``nb``.

    ``timeout`` is per cell (``timeout_func(cell)``, if given, decides instead); ``env`` is the
    kernel's environment (default: this process's); with ``allow_errors`` a failing cell is
    recorded in the outputs and execution goes on; ``quiet`` silences the kernel process's own
    log on stderr (what the cells print still reaches the outputs).
    """
    import subprocess

    from nbclient import NotebookClient

    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    client = NotebookClient(
        nb,
        timeout=timeout,
        timeout_func=timeout_func,
        allow_errors=allow_errors,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        record_timing=False,
    )
    kernel_options = {} if env is None else {"env": env}
    if quiet:
        kernel_options["stderr"] = subprocess.DEVNULL
    client.execute(**kernel_options)
    return nb


def _merge_streams(outputs: list) -> list:
    """Join consecutive stdout (or stderr) chunks: how a kernel splits them varies run to run."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.output_type == "stream" and prev is not None and prev.output_type == "stream"
                and prev.name == out.name):
            prev.text += out.text
        else:
            merged.append(out)
    return merged


def build(twin: str | Path, timeout: int = 300) -> tuple[Path, float]:
    """Turn ``lessons/src/NN_topic.py`` into the executed ``lessons/NN_topic.ipynb``.

    Returns the notebook path and the seconds the execution took.
    """
    import jupytext
    import nbformat

    twin = Path(twin)
    nb = jupytext.read(twin)
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    out = twin.parent.parent / (twin.stem + ".ipynb")
    start = time.perf_counter()
    execute(nb, cwd=out.parent, timeout=timeout)
    seconds = time.perf_counter() - start
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.pop("id", None)
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    nb.nbformat, nb.nbformat_minor = 4, 4
    nbformat.write(nb, out)
    return out, seconds
