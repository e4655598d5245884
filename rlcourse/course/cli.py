"""The ``rlcourse`` command (also ``python -m rlcourse``).

- ``rlcourse start [DIR]``: the student's workspace. Creates ``DIR`` (default ``my-rlcourse``)
  with the student edition of every lesson and the cheat sheets, once: later runs never
  overwrite a file there (they only add lessons that are new), so the student's work is kept.
  Each copy records the version of the lesson it was made from; ``start`` names the lessons
  that changed since, and ``start --refresh NN`` writes the current version of lesson NN beside
  the student's, as ``NN_topic_new.ipynb``. Then opens Jupyter Lab in it (``--no-lab``: only
  create/update the workspace).
- ``rlcourse progress [DIR] [--only NN ...]``: a student's own view: runs their notebooks
  headless and lists each exercise's state (pass, fail, todo, used the reference, not run,
  missing (stale copy)), and the lessons that changed since the copy was made.
- ``rlcourse grade DIR [DIR ...] [--csv PATH]``: an instructor's view: one directory per student
  (the student is the directory's name); prints a table and writes CSV rows
  ``student, lesson, exercise, passed, state``. A lesson that fails or times out is reported,
  not fatal. It runs the students' code as you: see the README on isolation.
- ``rlcourse lessons [--markdown]``: the course map, read from each notebook's title cell.
- ``rlcourse check [LESSON ...]``: run lessons headless in fresh kernels, print the time each took,
  exit 1 if any cell fails (cells tagged ``raises-exception`` may raise).
- ``rlcourse student-copy DEST``: the lessons with every ``solution`` cell replaced by stubs that
  raise ``NotImplementedError`` with the exercise's hint; exercise checks stay in place, no
  longer asserted, so the copy runs top to bottom and shows ``[todo]`` for open exercises.
  Refuses a DEST that already holds lesson notebooks (``--force`` overwrites them) and, always,
  the teacher's edition itself.

Running notebooks needs the ``dev`` extra (nbclient, nbformat); ``start`` also needs Jupyter Lab.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .notebooks import REFRESHED_SUFFIX, execute, find_lessons, lesson_info, lesson_version

__all__ = ["main", "course_map_markdown", "student_copy", "stub_solution", "start_workspace",
           "refresh_lessons", "stale_lessons"]

DEFAULT_WORKSPACE = "my-rlcourse"


def _default_lessons() -> Path:
    """``./lessons`` if there is one, else the lessons beside the package (``pip install -e``)."""
    here = Path.cwd() / "lessons"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "lessons"


def _select(lessons_dir: Path, wanted: list[str]) -> list[Path]:
    from .grading import select_lessons

    try:
        return select_lessons(lessons_dir, wanted)
    except ValueError as err:
        raise SystemExit(str(err)) from None


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


def stub_solution(source: str, hint: str = "", hints: dict | None = None,
                  read_later: set | None = None) -> str:
    """Replace the bodies of the functions in a solution cell by ``raise NotImplementedError``.

    Signatures and docstrings stay, so the exercise check can still call the reader's function.
    A function named like an exercise in ``hints`` (name -> hint) carries that exercise's own
    hint, and the cell's other functions are helpers and say so; in a cell with no such function
    every function carries ``hint``, which also heads the cell. A top-level assignment becomes
    ``name = None`` if a later cell reads the name (``read_later``; None: every name), so those
    cells still run; the rest of the cell (the confirming run) becomes one comment asking for it,
    unless all that is left is a print of the answer.
    """
    tree = ast.parse(source)
    message = "Exercise: write this." + (f" Hint: {hint}" if hint else "")
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    hints = hints if hints and any(f.name in hints for f in functions) else None
    body, dropped = [], False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            keep = [node.body[0]] if ast.get_docstring(node) else []
            if hints is None:
                said = message
            elif node.name in hints:
                said = f"Exercise: write this. Hint: {hints[node.name]}"
            else:
                said = "Exercise: write this helper; the exercise's confirmation uses it."
            node.body = keep + [ast.parse(f"raise NotImplementedError({said!r})").body[0]]
            body.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            kept = [n for n in names if read_later is None or n in read_later]
            dropped = dropped or len(kept) < len(names)
            body.extend(ast.parse(f"{name} = None").body[0] for name in kept)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            body.append(node)
        elif not _is_print(node):  # a lone print of the answer asks for nothing more
            dropped = True
    code = ast.unparse(ast.Module(body=body, type_ignores=[]))
    confirm = ("# Then the confirmation the exercise asks for (a run, a print): write it here.\n"
               if dropped else "")
    return f"# {message}\n" + (code + "\n" if code else "") + confirm


def _is_print(node) -> bool:
    """``node`` is a statement that only calls print."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "print")


def _names_read(cells) -> set:
    """Every name the code of ``cells`` reads (cells that do not parse are skipped)."""
    names = set()
    for cell in cells:
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:  # a cell with IPython magic: every word in it counts as read
            names.update(re.findall(r"[A-Za-z_]\w*", "".join(cell["source"])))
            continue
        names.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return names


_CHECKED_FUNCTION = re.compile(r"exercises\.check\(\s*[\"']([^\"']+)[\"']\s*,\s*([A-Za-z_]\w*)\s*\)")


def _hints_by_function(cells) -> dict:
    """function name -> hint: each exercise's name, and each function a lesson checks under an
    exercise's name (``check("corridor_learned_p", corridor_ascent)``), carry its hint."""
    from .exercises import _REGISTRY

    hints = {name: e.hint for name, e in _REGISTRY.items() if e.hint}
    for cell in cells:
        if cell["cell_type"] == "code":
            for exercise, function in _CHECKED_FUNCTION.findall("".join(cell["source"])):
                if exercise in _REGISTRY and _REGISTRY[exercise].hint:
                    hints[function] = _REGISTRY[exercise].hint
    return hints


def _student_edition(path: Path) -> dict:
    """The student edition of one teacher's notebook, in memory (nothing is written).

    Raises ValueError, naming the lesson and the exercise, when a check names an exercise the
    installed ``rlcourse`` does not register (the lessons and the package are out of step).
    """
    from .exercises import _REGISTRY

    nb = json.loads(path.read_text(encoding="utf-8"))
    version = lesson_version(nb)
    cells = nb["cells"]
    hints = _hints_by_function(cells)
    # the names each cell that stays as it is reads (solution cells are replaced by stubs)
    read = [_names_read([c]) if c["cell_type"] == "code"
            and "solution" not in c.get("metadata", {}).get("tags", []) else set() for c in cells]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        source = "".join(cell["source"])
        for name in _CHECK_CALL.findall(source):
            if name not in _REGISTRY:
                import rlcourse

                raise ValueError(
                    f"{path.name} checks the exercise {name!r}, which the installed rlcourse "
                    f"({Path(rlcourse.__file__).parent}) does not have: the lessons and the package "
                    f"are out of step. In the course folder, run  pip install -e .  (or use the "
                    f"lessons that came with this rlcourse: --lessons)")
        if "solution" in tags:
            name = next((m.group(1) for c in cells[i + 1:] if c["cell_type"] == "code"
                         for m in [_CHECK_CALL.search("".join(c["source"]))] if m), None)
            hint = _REGISTRY[name].hint if name in _REGISTRY else ""
            cell["source"] = stub_solution(source, hint, hints, set().union(*read[i + 1:]))
        if _CHECK_CALL.search(source) and "solution" not in tags:
            cell["source"] = _ASSERTED_CHECK.sub(r"\1\2", source)
        if "solution" in tags or _CHECK_CALL.search(source):
            cell["outputs"], cell["execution_count"] = [], None
    nb.setdefault("metadata", {})["rlcourse"] = {"lesson": path.stem, "version": version}
    return nb


def _write_notebook(nb: dict, out: Path) -> None:
    out.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _is_teachers_edition(folder: Path, lessons_dir: Path) -> bool:
    """``folder`` is the teacher's lessons folder (or another one: it has the twins in src/)."""
    folder = folder.resolve()
    return folder == lessons_dir.resolve() or any((folder / "src").glob("[0-9][0-9]_*.py"))


def student_copy(dest: str | Path, lessons_dir: str | Path | None = None, only=(),
                 keep_existing: bool = False, overwrite: bool = False) -> list[Path]:
    """Write the lessons to ``dest`` with solutions stubbed; returns the written paths.

    ``only`` restricts to some lessons (numbers or names). A notebook already in ``dest`` is
    left as it is (and not returned) with ``keep_existing``, replaced with ``overwrite``, and
    otherwise the copy is refused (FileExistsError) before anything is written. ``dest`` may
    never be the teacher's edition (ValueError). Every notebook is prepared before the first is
    written, so an error leaves ``dest`` as it was. Each copy records the lesson's version in
    its metadata (``metadata["rlcourse"]``).
    """
    from .grading import select_lessons

    lessons_dir = Path(lessons_dir or _default_lessons())
    dest = Path(dest)
    if dest.exists() and _is_teachers_edition(dest, lessons_dir):
        raise ValueError(f"{dest} is the teacher's edition (it holds the lessons' sources): a "
                         f"student copy must go to another folder")
    todo = []
    for path in select_lessons(lessons_dir, only):
        out = dest / path.name
        if keep_existing and out.exists():
            continue
        todo.append((path, out))
    existing = find_lessons(dest) if dest.is_dir() else []
    if existing and not (keep_existing or overwrite):
        raise FileExistsError(
            f"{dest} already holds {len(existing)} lesson notebook(s) ({existing[0].name}, ...): "
            f"writing the student edition there would replace a student's work. Choose a new "
            f"folder, or overwrite on purpose with --force")
    prepared = [(_student_edition(path), out) for path, out in todo]
    dest.mkdir(parents=True, exist_ok=True)
    for nb, out in prepared:
        _write_notebook(nb, out)
    return [out for _, out in prepared]


def _copy_sheets(lessons_dir: Path, dest: Path) -> list[Path]:
    written = []
    sheets = lessons_dir.resolve().parent / "cheatsheets"
    if sheets.is_dir():
        for sheet in sorted(sheets.glob("*.md")):
            target = dest / "cheatsheets" / sheet.name
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(sheet, target)
                written.append(target)
    return written


def start_workspace(dest: str | Path, lessons_dir: str | Path | None = None) -> tuple[list, int]:
    """Create or update a student's workspace; returns (files written, notebooks kept).

    Writes the student edition of each lesson and the cheat sheets (``cheatsheets/`` beside the
    lessons folder, if there is one) into ``dest``, never overwriting a file already there.
    """
    lessons_dir = Path(lessons_dir or _default_lessons())
    dest = Path(dest)
    kept = len(find_lessons(dest)) if dest.is_dir() else 0
    written = student_copy(dest, lessons_dir, keep_existing=True)
    written += _copy_sheets(lessons_dir, dest)
    return written, kept


def stale_lessons(dest: str | Path, lessons_dir: str | Path | None = None) -> list[Path]:
    """The teacher's lessons that changed since the student's copy of them in ``dest`` was made."""
    from .grading import copy_status

    lessons_dir = Path(lessons_dir or _default_lessons())
    stale = []
    for teacher in find_lessons(lessons_dir):
        mine = Path(dest) / teacher.name
        if mine.exists():
            try:
                if copy_status(mine, teacher) == "stale":
                    stale.append(teacher)
            except (ValueError, KeyError, TypeError):
                continue
    return stale


def refresh_lessons(dest: str | Path, lessons_dir: str | Path | None = None,
                    only=()) -> list[Path]:
    """Write the current student edition of some lessons beside the student's copies.

    Lesson ``NN_topic`` goes to ``NN_topic_new.ipynb`` (to ``NN_topic.ipynb`` if the student
    has no copy yet); the student's own notebook is never touched, and an earlier
    ``_new`` file is not replaced (FileExistsError: rename or delete it first).
    """
    from .grading import select_lessons

    lessons_dir = Path(lessons_dir or _default_lessons())
    dest = Path(dest)
    todo = []
    for path in select_lessons(lessons_dir, only):
        out = dest / path.name
        if out.exists():
            out = dest / f"{path.stem}{REFRESHED_SUFFIX}.ipynb"
            if out.exists():
                raise FileExistsError(f"{out} already exists (from an earlier --refresh): rename "
                                      f"or delete it first; it is never overwritten")
        todo.append((path, out))
    prepared = [(_student_edition(path), out) for path, out in todo]
    dest.mkdir(parents=True, exist_ok=True)
    for nb, out in prepared:
        _write_notebook(nb, out)
    return [out for _, out in prepared]


def _stale_warning(dest: Path, lessons_dir: Path) -> list[str]:
    lines = []
    for teacher in stale_lessons(dest, lessons_dir):
        lines.append(f"lesson {teacher.name[:2]} changed since your copy was made: rlcourse start "
                     f"{dest} --refresh {teacher.name[:2]} writes the current version as "
                     f"{teacher.stem}{REFRESHED_SUFFIX}.ipynb beside yours (yours is never "
                     f"overwritten)")
    return lines


def _cmd_start(args) -> int:
    dest = args.dir
    if args.refresh:
        if not dest.is_dir():
            raise SystemExit(f"{dest} does not exist: create your workspace with rlcourse start")
        try:
            written = refresh_lessons(dest, args.lessons, args.refresh)
        except (ValueError, FileExistsError) as err:
            raise SystemExit(str(err)) from None
        for path in written:
            print(f"wrote {path} (the current version of the lesson; your own copy is untouched)")
        return 0
    fresh = not dest.exists()
    if dest.exists() and _is_teachers_edition(dest, args.lessons):
        raise SystemExit(f"{dest} is the teacher's edition: your workspace must be another folder")
    try:
        written, kept = start_workspace(dest, args.lessons)
    except ValueError as err:
        raise SystemExit(str(err)) from None
    new_lessons = [p for p in written if p.suffix == ".ipynb"]
    if fresh:
        print(f"created your workspace {dest}/ with {len(new_lessons)} lessons (the student "
              f"edition: the Build-it steps and exercises are yours to write) and the cheat sheets")
    else:
        print(f"{dest}/ already exists: kept your {kept} notebooks as they are (this command "
              f"never overwrites them)" + (f"; added {len(new_lessons)} new lesson(s)"
                                            if new_lessons else ""))
        for line in _stale_warning(dest, args.lessons):
            print(line)
    print(f"your progress at any time: rlcourse progress {dest}")
    if args.no_lab:
        return 0
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={dest.resolve()}"]
    first = dest / "00_how_this_course_works.ipynb"
    if fresh and first.exists():
        command.append(str(first.resolve()))
    if args.no_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers often run as root
        command.append("--allow-root")
        print("(running as root: Jupyter Lab is started with --allow-root)")
    print("opening Jupyter Lab (stop it with Ctrl-C) ...", flush=True)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 0


def _cmd_progress(args) -> int:
    from .grading import grade_copy, progress_report

    if not args.dir.is_dir():
        raise SystemExit(f"{args.dir} does not exist: create your workspace with rlcourse start")
    os.environ.pop("MPLBACKEND", None)
    for line in _stale_warning(args.dir, args.lessons):
        print(line)
    rows, runs = grade_copy(args.dir, args.lessons, args.only, args.timeout,
                            say=lambda text: print(f"running {text}", flush=True))
    print(progress_report(rows, runs))
    return 0


def _cmd_grade(args) -> int:
    from .grading import grade_copy, grade_table, write_csv

    os.environ.pop("MPLBACKEND", None)
    missing = [d for d in args.dirs if not d.is_dir()]
    if missing:
        raise SystemExit(f"not a directory: {', '.join(map(str, missing))}")
    names = [d.resolve().name for d in args.dirs]
    if len(set(names)) != len(names):
        raise SystemExit(f"two student directories share a name: {names}")
    rows, runs = [], {}
    for directory in args.dirs:
        student_rows, student_runs = grade_copy(
            directory, args.lessons, args.only, args.timeout,
            say=lambda text: print(f"grading {text}", flush=True))
        rows += student_rows
        runs[directory.resolve().name] = student_runs
    print()
    print(grade_table(rows, runs))
    if args.csv:
        write_csv(rows, args.csv)
        print(f"\nwrote {len(rows)} rows to {args.csv}")
    return 0


def _cmd_student_copy(args) -> int:
    try:
        written = student_copy(args.dest, args.lessons, overwrite=args.force)
    except (ValueError, FileExistsError) as err:
        raise SystemExit(str(err)) from None
    print(f"wrote {len(written)} student notebooks to {args.dest} (solutions replaced by stubs)")
    return 0


def main(argv: list[str] | None = None) -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lessons", type=Path, default=None,
                        help="the teacher's edition (default: ./lessons, else the installed course's)")
    parser = argparse.ArgumentParser(prog="rlcourse", description="The rlcourse lessons.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", parents=[common],
                       help="create your workspace (once; never overwritten) and open Jupyter Lab")
    p.add_argument("dir", nargs="?", type=Path, default=Path(DEFAULT_WORKSPACE),
                   help=f"your workspace (default: {DEFAULT_WORKSPACE})")
    p.add_argument("--no-lab", action="store_true", help="only create or update the workspace")
    p.add_argument("--no-browser", action="store_true", help="start Jupyter Lab without a browser")
    p.add_argument("--refresh", nargs="+", default=[], metavar="LESSON",
                   help="write the current version of these lessons beside yours, as NN_topic_new"
                        ".ipynb (yours is never overwritten); nothing else is done")
    p = sub.add_parser("progress", parents=[common],
                       help="run your notebooks and list each exercise's state (pass, fail, todo, ...)")
    p.add_argument("dir", nargs="?", type=Path, default=Path(DEFAULT_WORKSPACE))
    p.add_argument("--only", nargs="+", default=[], metavar="LESSON", help="lesson numbers or names")
    p.add_argument("--timeout", type=float, default=300, help="seconds per lesson (default 300)")
    p = sub.add_parser("grade", parents=[common],
                       help="grade student copies (one directory per student)")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    p.add_argument("--csv", type=Path, default=None,
                   help="write rows student,lesson,exercise,passed,state")
    p.add_argument("--only", nargs="+", default=[], metavar="LESSON", help="lesson numbers or names")
    p.add_argument("--timeout", type=float, default=300, help="seconds per lesson (default 300)")
    p = sub.add_parser("lessons", parents=[common], help="print the course map")
    p.add_argument("--markdown", action="store_true", help="as the README's markdown table")
    p = sub.add_parser("check", parents=[common], help="run lessons headless and time them")
    p.add_argument("lesson", nargs="*", help="lesson numbers or names (default: all)")
    p.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    p = sub.add_parser("student-copy", parents=[common], help="write lessons with solutions blanked")
    p.add_argument("dest", type=Path)
    p.add_argument("--force", action="store_true",
                   help="overwrite lesson notebooks already in DEST (a student's work there is lost)")
    args = parser.parse_args(argv)
    if args.lessons is None:
        args.lessons = _default_lessons()
    handler = {"start": _cmd_start, "progress": _cmd_progress, "grade": _cmd_grade,
               "lessons": _cmd_lessons, "check": _cmd_check, "student-copy": _cmd_student_copy}
    return handler[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
