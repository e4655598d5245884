"""The ``rlcourse`` command (also ``python -m rlcourse``).

- ``rlcourse lessons [--markdown]``: the course map, read from each notebook's title cell.
- ``rlcourse check [LESSON ...]``: run lessons headless in fresh kernels, print the time each took,
  exit 1 if any cell fails (cells tagged ``raises-exception`` may raise).
- ``rlcourse student-copy DEST``: the lessons with every ``solution`` cell replaced by stubs that
  raise ``NotImplementedError`` with the exercise's hint; exercise checks stay in place, no
  longer asserted, so the copy runs top to bottom and shows ``[todo]`` for open exercises.

Running notebooks needs the ``dev`` extra (nbclient, nbformat).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import time
from pathlib import Path

from .notebooks import execute, find_lessons, lesson_info

__all__ = ["main", "course_map_markdown", "student_copy", "stub_solution"]


def _default_lessons() -> Path:
    here = Path.cwd() / "lessons"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parent.parent / "lessons"


def _select(lessons_dir: Path, wanted: list[str]) -> list[Path]:
    paths = find_lessons(lessons_dir)
    if not wanted:
        return paths
    chosen = []
    for key in wanted:
        matches = [p for p in paths if p.name.startswith(key.zfill(2)) or p.stem == key
                   or p.name == Path(key).name]
        if not matches:
            raise SystemExit(f"no lesson matches {key!r} in {lessons_dir} "
                             f"(have {', '.join(p.stem for p in paths)})")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def course_map_markdown(lessons_dir: str | Path | None = None) -> str:
    """The course map as a markdown table (the README embeds exactly this)."""
    rows = ["| # | lesson | prerequisites | time | you will build |", "|---|---|---|---|---|"]
    for path in find_lessons(lessons_dir or _default_lessons()):
        info = lesson_info(path)
        prereq = ", ".join(info.prerequisites) or "none"
        rows.append(f"| {info.number} | [{info.title}](lessons/{path.name}) | {prereq} | "
                    f"{info.minutes} min | {info.builds} |")
    return "\n".join(rows)


def _cmd_lessons(args) -> int:
    if args.markdown:
        print(course_map_markdown(args.lessons))
        return 0
    infos = [lesson_info(p) for p in find_lessons(args.lessons)]
    width = max(len(i.title) for i in infos) if infos else 10
    print(f"{'#':<3} {'lesson':<{width}}  {'prerequisites':<14} time")
    for i in infos:
        prereq = ", ".join(i.prerequisites) or "none"
        print(f"{i.number:<3} {i.title:<{width}}  {prereq:<14} {i.minutes} min")
    print(f"{len(infos)} lessons, about {sum(i.minutes for i in infos) / 60:.1f} hours")
    return 0


def _cmd_check(args) -> int:
    import os

    import nbformat

    os.environ.pop("MPLBACKEND", None)
    paths = _select(args.lessons, args.lesson)
    failures, total = [], 0.0
    for k, path in enumerate(paths, 1):
        print(f"[{k}/{len(paths)}] {path.name} ...", end=" ", flush=True)
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        try:
            execute(nb, cwd=path.parent, timeout=args.timeout)
            status = "ok"
        except Exception as err:  # report every lesson, then fail
            status = f"FAILED: {type(err).__name__}: {str(err).strip().splitlines()[-1][:200]}"
            failures.append(path.name)
        seconds = time.perf_counter() - start
        total += seconds
        print(f"{seconds:6.1f} s  {status}", flush=True)
    print(f"{len(paths) - len(failures)}/{len(paths)} lessons ran cleanly in {total:.1f} s")
    if failures:
        print("failed: " + ", ".join(failures))
    return 1 if failures else 0


_CHECK_CALL = re.compile(r"exercises\.check\(\s*[\"']([^\"']+)[\"']")
# In the course an exercise check is asserted (a broken reference fails CI); in a student copy it
# must only report, so that the notebook runs on past an exercise not done yet.
_ASSERTED_CHECK = re.compile(r"^(\s*)assert\s+(.*exercises\.check\(.*)$", re.M)


def stub_solution(source: str, hint: str = "") -> str:
    """Replace the bodies of the functions in a solution cell by ``raise NotImplementedError``.

    Signatures and docstrings stay, so the exercise check can still call the reader's function;
    top-level assignments (answers computed in the cell) become ``name = None``. The first line
    is a comment with the exercise's hint.
    """
    tree = ast.parse(source)
    message = "Exercise: write this." + (f" Hint: {hint}" if hint else "")
    body = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            keep = [node.body[0]] if ast.get_docstring(node) else []
            raise_stmt = ast.parse(f"raise NotImplementedError({message!r})").body[0]
            node.body = keep + [raise_stmt]
            body.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            body.extend(ast.parse(f"{n.id} = None").body for n in names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            body.append(node)
    flat = [n for item in body for n in (item if isinstance(item, list) else [item])]
    return f"# {message}\n" + ast.unparse(ast.Module(body=flat, type_ignores=[])) + "\n"


def student_copy(dest: str | Path, lessons_dir: str | Path | None = None) -> list[Path]:
    """Write every lesson to ``dest`` with solutions stubbed; returns the written paths."""
    from .exercises import get

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for path in find_lessons(lessons_dir or _default_lessons()):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
        for i, cell in enumerate(cells):
            tags = cell.get("metadata", {}).get("tags", [])
            source = "".join(cell["source"])
            if cell["cell_type"] != "code":
                continue
            if "solution" in tags:
                name = next((m.group(1) for c in cells[i + 1:] if c["cell_type"] == "code"
                             for m in [_CHECK_CALL.search("".join(c["source"]))] if m), None)
                hint = get(name).hint if name else ""
                cell["source"] = stub_solution(source, hint)
            if _CHECK_CALL.search(source) and "solution" not in tags:
                cell["source"] = _ASSERTED_CHECK.sub(r"\1\2", source)
            if "solution" in tags or _CHECK_CALL.search(source):
                cell["outputs"], cell["execution_count"] = [], None
        out = dest / path.name
        out.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(out)
    return written


def _cmd_student_copy(args) -> int:
    written = student_copy(args.dest, args.lessons)
    print(f"wrote {len(written)} student notebooks to {args.dest} (solutions replaced by stubs)")
    return 0


def main(argv: list[str] | None = None) -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lessons", type=Path, default=None,
                        help="lessons folder (default: ./lessons, else the installed course's)")
    parser = argparse.ArgumentParser(prog="rlcourse", description="The rlcourse lessons.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("lessons", parents=[common], help="print the course map")
    p.add_argument("--markdown", action="store_true", help="as the README's markdown table")
    p = sub.add_parser("check", parents=[common], help="run lessons headless and time them")
    p.add_argument("lesson", nargs="*", help="lesson numbers or names (default: all)")
    p.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    p = sub.add_parser("student-copy", parents=[common], help="write lessons with solutions blanked")
    p.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.lessons is None:
        args.lessons = _default_lessons()
    handler = {"lessons": _cmd_lessons, "check": _cmd_check, "student-copy": _cmd_student_copy}
    return handler[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
