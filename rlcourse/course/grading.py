"""Grade student copies: run each lesson headless and collect every exercise's result.

``rlcourse grade DIR [DIR ...]`` (one directory of notebooks per student) and ``rlcourse progress
[DIR]`` (a student's own view) both come down to :func:`grade_copy`.

**Which exercises a lesson has** comes from the teacher's edition (``lessons/``), not from the
student's notebook: an exercise is graded when a check cell calls
``rc.exercises.check("name", fn)`` on an ``fn`` that a ``solution`` cell defines (or a lambda
reading such a name), so a worked example checked in the lesson's prose is not graded.

**How results are collected**: each lesson runs in a fresh kernel whose environment variable
``RLCOURSE_RESULTS`` names a file; every ``rc.exercises.check`` appends one JSON line to it (see
:mod:`rlcourse.course.exercises`). This is more robust than parsing the executed notebook's
outputs: it does not depend on how verdicts are printed (``verbose=False``, a check inside a
loop or a function, a student's own prints that look like verdicts, cleared or merged output
streams), it carries structured fields (cases passed, not implemented yet, what the graded
function used), and whatever was recorded before a cell failed or the lesson timed out is kept.
A function's result is its last check in the run; a question's is its first answer.

**The state of each exercise** (the CSV's ``state`` column; :data:`STATES`):

- ``pass``: every case passed, with the student's own code;
- ``fail``: checked, some case failed;
- ``todo``: still the stub (not implemented, not answered);
- ``reference``: the graded function calls the exercise's reference or what it forbids
  (``rc.numerical_grad`` inside ``my_numerical_grad``, ``rc.exercises.get(...)``, a bare alias
  of an ``rlcourse`` function), or its solution cell reaches into the grader;
- ``not run``: the lesson raised or ran out of time before the check ran;
- ``stale``: the student's copy has no check of this exercise because it was made from an older
  version of the lesson (each copy records the version it was made from);
- ``missing``: the student's copy has no check of it (a deleted cell, or no notebook at all).

The run keeps going past a cell that raises (``allow_errors``), so one broken step does not hide
the rest of the lesson; the lesson is then reported as ``error`` with its first failing cell. A
lesson has a wall-clock budget (``timeout`` seconds from its first cell; the kernel's start-up
is not counted); past it the kernel is stopped and the lesson is reported as ``timeout``.
Neither stops the grading of the other lessons or students. The grader never writes into a
student's directory.

**What this is not**: a sandbox. Each notebook runs as the user who runs the grader, with that
user's environment and files, so grade in a container or as a throw-away user. A determined
student can still forge a result (write to the results file, edit ``rlcourse`` in their own
environment, hide a call from the static reading of their code); the checks above catch the
easy routes: calling the reference, wrapping it, aliasing it, and trying every answer in a loop.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .exercises import RESULTS_ENV
from .notebooks import execute, find_lessons, lesson_version

__all__ = ["ExerciseResult", "LessonRun", "graded_exercises", "checked_exercises", "run_lesson",
           "grade_copy", "grade_table", "write_csv", "progress_report", "copy_status",
           "STATES", "STATE_LABELS"]

STATES = ("pass", "fail", "todo", "reference", "not run", "stale", "missing")
STATE_LABELS = {
    "pass": "pass", "fail": "fail", "todo": "todo", "reference": "used the reference",
    "not run": "not run (the lesson stopped first)", "stale": "missing (stale copy)",
    "missing": "missing",
}


@dataclass(frozen=True)
class ExerciseResult:
    """One exercise of one student: ``state`` is one of :data:`STATES`."""

    student: str
    lesson: str
    exercise: str
    state: str
    cases_passed: int = 0
    cases: int = 0

    @property
    def passed(self) -> bool:
        return self.state == "pass"


@dataclass
class LessonRun:
    """What running one lesson gave: ``status`` is ok, error, timeout or missing; ``copy`` is
    current, stale or unknown (see :func:`copy_status`)."""

    lesson: str
    status: str
    detail: str = ""
    seconds: float = 0.0
    checks: dict = field(default_factory=dict)  # exercise name -> its graded check
    copy: str = "current"


class LessonTimeout(Exception):
    """The lesson's wall-clock budget ran out."""


def _load(notebook: str | Path | dict) -> dict:
    return notebook if isinstance(notebook, dict) else json.loads(
        Path(notebook).read_text(encoding="utf-8"))


def _is_solution(cell) -> bool:
    return "solution" in cell.get("metadata", {}).get("tags", [])


def _defined(tree: ast.Module) -> set[str]:
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
              for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
              if isinstance(t, ast.Name)}
    return names


def _check_calls(cells) -> list[tuple[str, set[str]]]:
    """(exercise, names its answer reads) for each ``exercises.check("name", answer)`` call in
    cells not tagged ``solution``: the answer's name, or the names a lambda answer reads."""
    calls = []
    for cell in cells:
        if _is_solution(cell):
            continue
        for node in ast.walk(_parse("".join(cell["source"]))):
            if (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("exercises.check")
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                answer = node.args[1]
                if isinstance(answer, ast.Name):
                    reads = {answer.id}
                elif isinstance(answer, ast.Lambda):
                    reads = {n.id for n in ast.walk(answer.body) if isinstance(n, ast.Name)}
                else:
                    reads = set()
                calls.append((node.args[0].value, reads))
    return calls


def graded_exercises(notebook: str | Path | dict) -> list[str]:
    """The exercises of a lesson that a student writes, in notebook order.

    A name counts when a code cell calls ``exercises.check("name", fn)`` with ``fn`` a name that
    a cell tagged ``solution`` defines (a function or an assigned answer), or a lambda that
    reads one (``lambda: my_answer``).
    """
    cells = [c for c in _load(notebook)["cells"] if c["cell_type"] == "code"]
    defined: set[str] = set()
    for cell in cells:
        if _is_solution(cell):
            defined |= _defined(_parse("".join(cell["source"])))
    names: list[str] = []
    for exercise, reads in _check_calls(cells):
        if reads & defined and exercise not in names:
            names.append(exercise)
    return names


def checked_exercises(notebook: str | Path | dict) -> set[str]:
    """Every exercise name a check call in the notebook names (graded or not)."""
    cells = [c for c in _load(notebook)["cells"] if c["cell_type"] == "code"]
    return {exercise for exercise, _ in _check_calls(cells)}


def _grader_use(notebook: dict) -> set[str]:
    """Exercises whose solution cell reaches into the grader (``exercises.get``, ``.reference``,
    ``_REGISTRY``, ``rlcourse.course``): graded as ``reference`` whatever its checks said."""
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    flagged: set[str] = set()
    for cell in cells:
        if not _is_solution(cell):
            continue
        tree = _parse("".join(cell["source"]))
        text = [ast.unparse(n) for n in ast.walk(tree)
                if isinstance(n, (ast.Attribute, ast.Import, ast.ImportFrom))]
        if any(t.endswith(("exercises.get", ".reference", "._REGISTRY", "_REGISTRY"))
               or "rlcourse.course" in t for t in text):
            flagged |= _defined(tree)
    return {exercise for exercise, reads in _check_calls(cells) if reads & flagged}


def copy_status(student: str | Path | dict, teacher: str | Path | dict) -> str:
    """Was the student's copy made from the teacher's current lesson?

    ``current``: it records the lesson's current version (or, made before versions were
    recorded, it checks the same exercises); ``stale``: it records another version, or checks
    other exercises than the lesson now grades; ``unknown``: no record, same exercises.
    """
    student, teacher = _load(student), _load(teacher)
    recorded = student.get("metadata", {}).get("rlcourse", {}).get("version")
    if recorded is not None:
        return "current" if recorded == lesson_version(teacher) else "stale"
    same = set(graded_exercises(teacher)) <= checked_exercises(student)
    return "unknown" if same else "stale"


def _parse(source: str) -> ast.Module:
    # IPython magics (%time, !pip) are not Python: blank them out before parsing.
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def run_lesson(path: str | Path, timeout: float = 300) -> LessonRun:
    """Run one notebook headless (in its own folder) and collect its exercise checks."""
    import nbformat

    path = Path(path)
    lesson = path.stem
    if not path.exists():
        return LessonRun(lesson, "missing", f"no {path.name} in {path.parent}")
    with tempfile.TemporaryDirectory(prefix="rlcourse-grade-") as tmp:
        results = Path(tmp) / "results.jsonl"
        env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
        env[RESULTS_ENV] = str(results)
        start = time.perf_counter()
        deadline = []  # set when the first cell runs: the kernel's start-up does not count

        def remaining(cell) -> int:
            if not deadline:
                deadline.append(time.perf_counter() + timeout)
            left = deadline[0] - time.perf_counter()
            if left <= 0:
                raise LessonTimeout
            return max(1, math.ceil(left))

        status, detail = "ok", ""
        try:
            nb = nbformat.read(path, as_version=4)
            execute(nb, cwd=path.parent, env=env, allow_errors=True, timeout_func=remaining,
                    quiet=True)
            errors = _errors(nb)
            if errors:
                status, detail = "error", f"{len(errors)} cell(s) raised; first: {errors[0]}"
        except Exception as err:  # a timeout, a dead kernel, an unreadable notebook
            timed_out = isinstance(err, LessonTimeout) or type(err).__name__ == "CellTimeoutError"
            if timed_out:
                status, detail = "timeout", f"stopped after {timeout:g} s"
            else:
                message = (str(err).strip().splitlines() or [""])[-1][:200]
                status, detail = "error", f"{type(err).__name__}: {message}"
        seconds = time.perf_counter() - start
        checks = {}
        if results.exists():
            for line in results.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    name = entry["exercise"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a stopped kernel
                if entry.get("graded", True) is False:
                    continue  # a later answer to a question: shown to the student, not graded
                if entry.get("question") and name in checks and not checks[name].get("todo"):
                    continue  # a question keeps its first answer
                checks[name] = entry
    return LessonRun(lesson, status, detail, seconds, checks)


def _errors(nb) -> list[str]:
    """'cell N: Error: message' for each cell that raised although not tagged to."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"cell {index}: {out.get('ename')}: {str(out.get('evalue'))[:160]}")
    return found


def _state(check: dict | None) -> str:
    if check is None:
        return "not run"
    if str(check.get("by", "")).startswith("rlcourse.") or check.get("uses"):
        return "reference"
    if check.get("passed"):
        return "pass"
    if check.get("todo", 0) and check.get("cases_passed", 0) == 0:
        return "todo"
    return "fail"


def grade_copy(student_dir: str | Path, lessons_dir: str | Path, only: Iterable[str] = (),
               timeout: float = 300, student: str | None = None,
               say: Callable[[str], None] = print) -> tuple[list[ExerciseResult], list[LessonRun]]:
    """Run a student's copy of every lesson of ``lessons_dir`` (the teacher's edition).

    Returns one :class:`ExerciseResult` per graded exercise and one :class:`LessonRun` per
    lesson. ``only`` restricts to lesson numbers or names; ``student`` defaults to the
    directory's name.
    """
    student_dir = Path(student_dir)
    student = student or student_dir.resolve().name
    rows: list[ExerciseResult] = []
    runs: list[LessonRun] = []
    for teacher_nb in select_lessons(lessons_dir, only):
        teacher = _load(teacher_nb)
        names = graded_exercises(teacher)
        if not names:
            continue
        say(f"{student}: {teacher_nb.stem} ...")
        mine = student_dir / teacher_nb.name
        run = run_lesson(mine, timeout=timeout)
        runs.append(run)
        present, grader_use = set(), set()
        if mine.exists():
            try:
                copy = _load(mine)
                present, grader_use = checked_exercises(copy), _grader_use(copy)
                run.copy = copy_status(copy, teacher)
            except (ValueError, KeyError, TypeError):  # an unreadable notebook: run says why
                run.copy = "unknown"
        for name in names:
            check = run.checks.get(name)
            if run.status == "missing":
                state = "missing"
            elif name not in present and check is None:
                state = "stale" if run.copy == "stale" else "missing"
            elif name in grader_use:
                state = "reference"
            else:
                state = _state(check)
            rows.append(ExerciseResult(student, run.lesson, name, state,
                                       int((check or {}).get("cases_passed", 0)),
                                       int((check or {}).get("cases", 0))))
    return rows, runs


def select_lessons(lessons_dir: str | Path, only: Iterable[str] = ()) -> list[Path]:
    """The lessons of ``lessons_dir``, or those whose number or name is in ``only``."""
    paths = find_lessons(lessons_dir)
    only = list(only)
    if not only:
        return paths
    chosen = []
    for key in only:
        matches = [p for p in paths if p.name.startswith(key.zfill(2) + "_") or p.stem == key
                   or p.name == Path(key).name]
        if not matches:
            raise ValueError(f"no lesson matches {key!r} in {lessons_dir} "
                             f"(have {', '.join(p.stem for p in paths)})")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def _why_not(rows: list[ExerciseResult]) -> str:
    """'todo 3, used the reference 1 (adam_step)' for the rows that did not pass."""
    parts = []
    for state in STATES[1:]:
        names = [r.exercise for r in rows if r.state == state]
        if names:
            listed = f" ({', '.join(names)})" if state not in ("todo", "fail") else ""
            parts.append(f"{STATE_LABELS[state]} {len(names)}{listed}")
    return ", ".join(parts)


def grade_table(rows: list[ExerciseResult], runs: dict[str, list[LessonRun]]) -> str:
    """A table: one line per student, passed/graded per lesson and in total; then, per student
    and lesson, why the other exercises did not pass; then lessons that did not run cleanly."""
    students = list(dict.fromkeys(r.student for r in rows)) or list(runs)
    lessons = list(dict.fromkeys(r.lesson for r in rows))
    numbers = [lesson[:2] for lesson in lessons]
    width = max([len(s) for s in students] + [7])
    lines = [f"{'student':<{width}}  " + "  ".join(f"{n:>5}" for n in numbers) + "  total"]
    for student in students:
        mine = [r for r in rows if r.student == student]
        cells = []
        for lesson in lessons:
            part = [r for r in mine if r.lesson == lesson]
            cells.append(f"{sum(r.passed for r in part)}/{len(part)}".rjust(5))
        total = f"{sum(r.passed for r in mine)}/{len(mine)}"
        lines.append(f"{student:<{width}}  " + "  ".join(cells) + f"  {total}")
    why = []
    for student in students:
        for lesson in lessons:
            part = [r for r in rows if r.student == student and r.lesson == lesson]
            text = _why_not(part)
            if text:
                why.append(f"  {student} {lesson[:2]}: {text}")
    if why:
        lines += ["", "not passed, and why:"] + why
    stale = [f"  {student} {run.lesson}: made from an older version of the lesson "
             f"(the student can run: rlcourse start --refresh {run.lesson[:2]})"
             for student, student_runs in runs.items() for run in student_runs
             if run.copy == "stale"]
    if stale:
        lines += ["", "stale copies:"] + stale
    problems = [f"  {student} {run.lesson}: {run.status} ({run.detail})"
                for student, student_runs in runs.items() for run in student_runs
                if run.status != "ok"]
    if problems:
        lines += ["", "lessons that did not run cleanly (their exercises not reached count as "
                      "not passed):"] + problems
    return "\n".join(lines)


def write_csv(rows: list[ExerciseResult], path: str | Path) -> None:
    """CSV with the header ``student,lesson,exercise,passed,state`` (passed is 1 or 0; state is
    one of :data:`STATES`: pass, fail, todo, reference, not run, stale, missing)."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["student", "lesson", "exercise", "passed", "state"])
        for r in rows:
            writer.writerow([r.student, r.lesson, r.exercise, int(r.passed), r.state])


def progress_report(rows: list[ExerciseResult], runs: list[LessonRun]) -> str:
    """A student's view: per lesson, each exercise's state, and what to do next."""
    lines = []
    status = {run.lesson: run for run in runs}
    for lesson in dict.fromkeys(r.lesson for r in rows):
        part = [r for r in rows if r.lesson == lesson]
        run = status[lesson]
        note = "" if run.status == "ok" else f"   [{run.status}: {run.detail}]"
        lines.append(f"{lesson}: {sum(r.passed for r in part)}/{len(part)} passed{note}")
        if run.copy == "stale":
            lines.append(f"  this lesson changed since your copy was made: rlcourse start "
                         f"--refresh {lesson[:2]} writes the current version beside yours")
        for r in part:
            cases = f" ({r.cases_passed}/{r.cases} cases)" if r.state == "fail" else ""
            lines.append(f"  [{STATE_LABELS[r.state]}] {r.exercise}{cases}")
    done = sum(r.passed for r in rows)
    lines.append(f"{done}/{len(rows)} exercises passed")
    return "\n".join(lines)
