"""Grading's states, stale copies and the workspace's safety, on toy lessons (fast).

- every state of the CSV in one run: pass, fail, todo, reference (a wrapper of the reference, a
  solution cell that reaches into the grader), not run, stale, missing;
- a copy records the version of the lesson it was made from; a changed lesson is named by
  ``start`` and ``progress``; ``start --refresh NN`` writes the new version beside the
  student's, never over it;
- ``student-copy`` refuses a folder with lessons (unless ``--force``) and, always, the teacher's
  edition; an exercise the package does not know stops ``start``/``student-copy`` with a clear
  message before anything is written.
"""

import csv
import json
import re

import pytest

from rlcourse.course.cli import main, refresh_lessons, stale_lessons, student_copy
from rlcourse.course.grading import copy_status, graded_exercises
from rlcourse.course.notebooks import find_lessons, lesson_version


def _notebook(*cells):
    """A notebook of code cells: (source, tags), or a plain string for an untagged cell."""
    cells = [(c, []) if isinstance(c, str) else c for c in cells]
    return {"cells": [{"cell_type": "code", "metadata": {"tags": list(tags)}, "source": source,
                       "outputs": [], "execution_count": None} for source, tags in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 4}


def _write(folder, name, nb):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(nb), encoding="utf-8")
    return folder / name


IMPORT = "import numpy as np\nimport rlcourse as rc\n"
RETURN = ("def my_return(rewards):\n    return float(sum(rewards))\n", ["solution"])
RETURN_CHECK = "assert rc.exercises.check('episode_return', my_return)\n"
GRAD = ("def my_grad(f, x, eps=1e-6):\n    x = np.array(x, dtype=float)\n    g = np.zeros_like(x)\n"
        "    for i in range(x.size):\n        e = np.zeros_like(x)\n        e.flat[i] = eps\n"
        "        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)\n    return g\n", ["solution"])
GRAD_CHECK = "assert rc.exercises.check('numerical_grad', my_grad)\n"
SPEEDUP = ("speedup = 10", ["solution"])
SPEEDUP_CHECK = "assert rc.exercises.check('momentum_speedup', speedup)\n"
CS = ("def my_cs(f, x, h=1e-20):\n    x = np.asarray(x, dtype=float)\n    g = np.zeros(x.shape)\n"
      "    for i in range(x.size):\n        z = x.astype(complex)\n        z.flat[i] += 1j * h\n"
      "        g.flat[i] = np.imag(f(z)) / h\n    return g\n", ["solution"])
CS_CHECK = "assert rc.exercises.check('complex_step_grad', my_cs)\n"
BEST = ("def my_best(f_x, f3_x, u=2.0**-53):\n    return (3 * u * abs(f_x) / abs(f3_x)) ** (1 / 3)\n",
        ["solution"])
BEST_CHECK = "assert rc.exercises.check('best_eps', my_best)\n"
MV = ("def my_mv(G, A, B):\n    return G @ B.T, A.T @ G\n", ["solution"])
MV_CHECK = "assert rc.exercises.check('matmul_vjp', my_mv)\n"


def _teacher(folder):
    """Two toy lessons of the teacher's edition."""
    _write(folder, "01_toy.ipynb", _notebook(
        IMPORT, RETURN, RETURN_CHECK, GRAD, GRAD_CHECK, SPEEDUP, SPEEDUP_CHECK, CS, CS_CHECK,
        MV, MV_CHECK, BEST, BEST_CHECK))
    _write(folder, "02_toy.ipynb", _notebook(IMPORT, RETURN, RETURN_CHECK))
    return folder


def _set_source(path, old, new):
    nb = json.loads(path.read_text(encoding="utf-8"))
    hits = [c for c in nb["cells"] if "".join(c["source"]).startswith(old)]
    assert len(hits) == 1, old
    hits[0]["source"] = new
    path.write_text(json.dumps(nb), encoding="utf-8")


def _drop_cell(path, start):
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"] = [c for c in nb["cells"] if not "".join(c["source"]).startswith(start)]
    path.write_text(json.dumps(nb), encoding="utf-8")


def test_every_state_in_one_grading_run(tmp_path, capsys):
    """One student, two toy lessons: each of the seven states, in the CSV and the table."""
    pytest.importorskip("nbclient")
    teacher = _teacher(tmp_path / "teacher")
    ada = tmp_path / "ada"
    student_copy(ada, teacher)
    one = ada / "01_toy.ipynb"
    _set_source(one, "# Exercise: write this. Hint: the return", RETURN[0])          # pass
    _set_source(one, "# Exercise: write this. Hint: move one",                      # reference
                "def my_grad(f, x, eps=1e-6):\n    return rc.numerical_grad(f, x, eps)\n")
    _set_source(one, "# Exercise: write this. Hint: write the velocity",            # fail (first
                "speedup = next(a for a in (9, 10) if rc.exercises.check('momentum_speedup', a))")
    _set_source(one, "# Exercise: write this. Hint: write one entry",               # not run
                "raise RuntimeError('my step is broken')\n")
    _drop_cell(one, "rc.exercises.check('best_eps'")                                # missing
    # complex_step_grad stays a stub: todo
    # the teacher then changes lesson 02: a new exercise the student's copy does not have
    _write(teacher, "02_toy.ipynb", _notebook(IMPORT, RETURN, RETURN_CHECK, CS, CS_CHECK))
    _set_source(ada / "02_toy.ipynb", "# Exercise: write this.", RETURN[0])

    table = tmp_path / "grades.csv"
    assert main(["grade", str(ada), "--lessons", str(teacher), "--csv", str(table)]) == 0
    out = capsys.readouterr().out
    states = {(r["lesson"], r["exercise"]): r["state"] for r in csv.DictReader(table.open())}
    assert states == {
        ("01_toy", "episode_return"): "pass", ("01_toy", "numerical_grad"): "reference",
        ("01_toy", "momentum_speedup"): "fail", ("01_toy", "complex_step_grad"): "todo",
        ("01_toy", "matmul_vjp"): "not run", ("01_toy", "best_eps"): "missing",
        ("02_toy", "episode_return"): "pass", ("02_toy", "complex_step_grad"): "stale"}, out
    assert re.search(r"^ada\s+1/6\s+1/2\s+2/8$", out, re.M), out
    assert ("ada 01: fail 1, todo 1, used the reference 1 (numerical_grad), not run (the lesson "
            "stopped first) 1 (matmul_vjp), missing 1 (best_eps)") in out, out
    assert "ada 02: missing (stale copy) 1 (complex_step_grad)" in out
    assert "ada 02_toy: made from an older version of the lesson" in out
    assert "rlcourse start --refresh 02" in out
    assert "ada 01_toy: error (2 cell(s) raised; first: cell" in out


def test_a_solution_cell_that_reaches_into_the_grader_is_graded_as_reference(tmp_path, capsys):
    """Even an answer the checks cannot see through (a value computed in the solution cell from
    the exercise's reference) is caught by reading the student's solution cells."""
    pytest.importorskip("nbclient")
    teacher = _write(tmp_path / "teacher", "01_toy.ipynb", _notebook(IMPORT, SPEEDUP, SPEEDUP_CHECK)).parent
    bob = tmp_path / "bob"
    student_copy(bob, teacher)
    _set_source(bob / "01_toy.ipynb", "# Exercise: write this.",
                "speedup = rc.exercises.get('momentum_speedup').reference()\n")
    assert main(["grade", str(bob), "--lessons", str(teacher), "--csv", str(tmp_path / "g.csv")]) == 0
    out = capsys.readouterr().out
    (row,) = list(csv.DictReader((tmp_path / "g.csv").open()))
    assert row["state"] == "reference" and row["passed"] == "0", out


# ------------------------------------------------------------------ versions and stale copies


def test_a_copy_records_the_version_it_was_made_from(tmp_path):
    teacher = _teacher(tmp_path / "teacher")
    copy = student_copy(tmp_path / "ws", teacher)
    for original, mine in zip(find_lessons(teacher), copy):
        record = json.loads(mine.read_text())["metadata"]["rlcourse"]
        assert record == {"lesson": original.stem,
                          "version": lesson_version(json.loads(original.read_text()))}
        assert copy_status(mine, original) == "current"


def test_the_version_changes_with_the_text_not_the_outputs(tmp_path):
    nb = _notebook(IMPORT, RETURN, RETURN_CHECK)
    ran = json.loads(json.dumps(nb))
    ran["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hi"}]
    assert lesson_version(nb) == lesson_version(ran)
    edited = json.loads(json.dumps(nb))
    edited["cells"][2]["source"] += "# a comment\n"
    assert lesson_version(nb) != lesson_version(edited)


def test_copy_status_without_a_recorded_version_compares_the_exercises(tmp_path):
    teacher = _write(tmp_path / "t", "01_toy.ipynb", _notebook(IMPORT, RETURN, RETURN_CHECK, GRAD,
                                                               GRAD_CHECK))
    old_style = _notebook(IMPORT, RETURN, "rc.exercises.check('episode_return', my_return)",
                          GRAD, "rc.exercises.check('numerical_grad', my_grad)")
    assert copy_status(old_style, teacher) == "unknown"  # same exercises: no warning
    older = _notebook(IMPORT, RETURN, "rc.exercises.check('episode_return', my_return)")
    assert copy_status(older, teacher) == "stale"


def test_start_and_progress_name_a_changed_lesson_and_refresh_writes_beside(tmp_path, capsys):
    teacher = _teacher(tmp_path / "teacher")
    ws = tmp_path / "ws"
    assert main(["start", str(ws), "--no-lab", "--lessons", str(teacher)]) == 0
    capsys.readouterr()
    mine = ws / "02_toy.ipynb"
    mine.write_text(mine.read_text().replace("raise NotImplementedError", "return 0  # my work"))
    before = mine.read_text()
    assert stale_lessons(ws, teacher) == []

    _write(teacher, "02_toy.ipynb", _notebook(IMPORT, RETURN, RETURN_CHECK, CS, CS_CHECK))
    assert [p.name for p in stale_lessons(ws, teacher)] == ["02_toy.ipynb"]
    assert main(["start", str(ws), "--no-lab", "--lessons", str(teacher)]) == 0
    out = capsys.readouterr().out
    assert "lesson 02 changed since your copy was made" in out
    assert f"rlcourse start {ws} --refresh 02" in out and "02_toy_new.ipynb" in out
    assert mine.read_text() == before

    assert main(["start", str(ws), "--refresh", "02", "--lessons", str(teacher)]) == 0
    assert "02_toy_new.ipynb" in capsys.readouterr().out
    new = ws / "02_toy_new.ipynb"
    assert mine.read_text() == before  # the student's own copy is never touched
    assert "complex_step_grad" in new.read_text()
    assert copy_status(new, teacher / "02_toy.ipynb") == "current"
    assert [p.name for p in find_lessons(ws)] == ["01_toy.ipynb", "02_toy.ipynb"]  # not a lesson
    with pytest.raises(SystemExit, match="already exists"):  # an earlier refresh is kept too
        main(["start", str(ws), "--refresh", "02", "--lessons", str(teacher)])
    assert refresh_lessons(tmp_path / "other", teacher, ["02"])[0].name == "02_toy.ipynb"


def test_progress_warns_about_a_changed_lesson(tmp_path, capsys):
    pytest.importorskip("nbclient")
    teacher = _write(tmp_path / "t", "01_toy.ipynb", _notebook(IMPORT, RETURN, RETURN_CHECK))
    ws = tmp_path / "ws"
    student_copy(ws, teacher.parent)
    _write(teacher.parent, "01_toy.ipynb", _notebook(IMPORT, RETURN, RETURN_CHECK, CS, CS_CHECK))
    assert main(["progress", str(ws), "--lessons", str(teacher.parent)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("lesson 01 changed since your copy was made")
    assert "[missing (stale copy)] complex_step_grad" in out
    assert "  [todo] episode_return" in out


# ------------------------------------------------------------------ a workspace is never lost


def test_student_copy_refuses_a_folder_with_lessons_unless_forced(tmp_path, capsys):
    teacher = _teacher(tmp_path / "teacher")
    ws = tmp_path / "ws"
    assert main(["student-copy", str(ws), "--lessons", str(teacher)]) == 0
    work = ws / "01_toy.ipynb"
    work.write_text(work.read_text().replace("raise NotImplementedError", "return 0  # my work"))
    with pytest.raises(SystemExit, match="would replace a student's work"):
        main(["student-copy", str(ws), "--lessons", str(teacher)])
    assert "my work" in work.read_text()
    assert main(["student-copy", str(ws), "--force", "--lessons", str(teacher)]) == 0
    assert "my work" not in work.read_text()


def test_student_copy_never_writes_into_the_teachers_edition(tmp_path):
    teacher = _teacher(tmp_path / "course" / "lessons")
    before = {p.name: p.read_text() for p in teacher.iterdir()}
    for argv in (["student-copy", str(teacher)], ["student-copy", str(teacher), "--force"]):
        with pytest.raises(SystemExit, match="teacher's edition"):
            main(argv + ["--lessons", str(teacher)])
    other = tmp_path / "other_course" / "lessons"  # another teacher's edition: it has src/ twins
    (other / "src").mkdir(parents=True)
    (other / "src" / "01_toy.py").write_text("# %%\n")
    with pytest.raises(SystemExit, match="teacher's edition"):
        main(["student-copy", str(other), "--force", "--lessons", str(teacher)])
    with pytest.raises(SystemExit, match="teacher's edition"):
        main(["start", str(teacher), "--no-lab", "--lessons", str(teacher)])
    assert {p.name: p.read_text() for p in teacher.iterdir()} == before


def test_an_unknown_exercise_stops_the_copy_before_anything_is_written(tmp_path, capsys):
    teacher = _teacher(tmp_path / "course" / "lessons")
    (tmp_path / "course" / "cheatsheets").mkdir()
    (tmp_path / "course" / "cheatsheets" / "a.md").write_text("# A\n")
    _write(teacher, "03_newer.ipynb", _notebook(
        IMPORT, ("def my_best_of_n(x):\n    return x\n", ["solution"]),
        "assert rc.exercises.check('best_of_n', my_best_of_n)"))
    ws = tmp_path / "ws"
    with pytest.raises(SystemExit) as info:
        main(["start", str(ws), "--no-lab", "--lessons", str(teacher)])
    message = str(info.value)
    assert "03_newer.ipynb checks the exercise 'best_of_n'" in message
    assert "pip install -e ." in message and "KeyError" not in message
    assert not ws.exists()  # no half-written workspace: the next start is a fresh one
    with pytest.raises(SystemExit, match="best_of_n"):
        main(["student-copy", str(ws), "--lessons", str(teacher)])
    assert not ws.exists()


def test_a_lambda_answer_is_graded_too():
    """Lesson 11 checks its questions as check(name, lambda: answer)."""
    nb = _notebook(IMPORT, ("answer = 'a'", ["solution"]),
                   "assert rc.exercises.check('episode_return', lambda: answer)",
                   "assert rc.exercises.check('numerical_grad', lambda f, x: rc.numerical_grad(f, x))")
    assert graded_exercises(nb) == ["episode_return"]
