"""The rlcourse command, the README's two commands and its course map, and .ci/run; the
student's workspace (rlcourse start), grading (rlcourse grade) and progress (rlcourse progress)."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course.cli import course_map_markdown, main, stub_solution, student_copy
from rlcourse.course.grading import graded_exercises, run_lesson
from rlcourse.course.notebooks import find_lessons, lesson_info

TOP = Path(__file__).resolve().parent.parent
LESSONS = TOP / "lessons"


def readme_commands():
    return re.findall(r"```bash\n(.+?)\n```", (TOP / "README.md").read_text(encoding="utf-8"))


def test_readme_opens_with_the_run_and_the_test_command():
    run, test = readme_commands()[:2]
    assert run == 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && rlcourse start'
    assert test.endswith("&& pytest") and 'pip install -e ".[test,gym]"' in test


def test_the_default_workspace_is_ignored_by_git():
    assert "my-rlcourse/" in (TOP / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_ci_runs_exactly_the_readme_test_command_and_ruff():
    ci = (TOP / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert readme_commands()[1] in ci
    assert "ruff check ." in ci


def test_pytest_runs_strict_nbval_over_the_lessons():
    config = (TOP / "pyproject.toml").read_text(encoding="utf-8")
    addopts = re.search(r"addopts = \"(.+)\"", config).group(1).split()
    assert "--nbval" in addopts and "--nbval-lax" not in addopts
    assert "--nbval-current-env" in addopts and "--nbval-sanitize-with" in addopts
    assert re.search(r'testpaths = \[.*"lessons".*\]', config)


def test_readme_course_map_is_generated_from_the_notebooks():
    text = (TOP / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- course-map:start -->\n(.*?)\n<!-- course-map:end -->", text, re.S)
    assert block, "README lacks the course-map markers"
    assert block.group(1) == course_map_markdown(LESSONS), \
        "README course map is stale: run python tools/build_lessons.py (or rlcourse lessons --markdown)"


def test_lessons_command_lists_every_lesson(capsys):
    assert main(["lessons", "--lessons", str(LESSONS)]) == 0
    out = capsys.readouterr().out
    for path in find_lessons(LESSONS):
        info = lesson_info(path)
        assert re.search(rf"^{info.number}\s+{re.escape(info.title)}\s", out, re.M)
    assert f"{len(find_lessons(LESSONS))} lessons" in out


def test_stub_keeps_signature_and_docstring_and_raises_with_hint():
    source = 'import numpy as np\n\ndef f(x, eps=1e-5):\n    """Doc."""\n    return x * 2\n\nanswer = 3\n'
    stub = stub_solution(source, hint="double it")
    namespace = {}
    exec(stub, namespace)
    assert namespace["f"].__doc__ == "Doc." and namespace["answer"] is None
    assert stub.startswith("# Exercise: write this. Hint: double it")
    with pytest.raises(NotImplementedError, match="double it"):
        namespace["f"](1)
    assert "x * 2" not in stub


def test_stub_solution_gives_each_exercise_function_its_own_hint():
    """A cell with two exercises' functions: each stub names its own exercise's hint (review 07f:
    tau_for_period's stub carried polyak_mean_lag's)."""
    source = ("def lag(tau):\n    return 1 / tau\n\n\ndef period(n):\n    return 2 / (n + 1)\n\n\n"
              "def drift(n):\n    return n\n\n\nn = 5\nlags = [lag(0.1), period(n), drift(n)]\n"
              "print(lags)\nanswer = 'B'\n")
    stub = stub_solution(source, hint="first", hints={"lag": "first", "period": "the second one"},
                         read_later={"answer"})
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="Hint: first"):
        namespace["lag"](0.5)
    with pytest.raises(NotImplementedError, match="Hint: the second one"):
        namespace["period"](3)
    # review 07h, F9: a helper carried an exercise's hint, and the confirming run left a row of
    # dangling "name = None" lines; a name a later cell reads stays defined
    with pytest.raises(NotImplementedError, match="helper"):
        namespace["drift"](3)
    assert namespace["answer"] is None and "lags" not in namespace and "n" not in namespace
    assert stub.rstrip().endswith(
        "# Then the confirmation the exercise asks for (a run, a print): write it here.")


def test_a_print_of_the_answer_asks_for_no_confirmation():
    """review 07i, F9: a cell that computes one answer and prints it has nothing to confirm."""
    stub = stub_solution("lag = 127.0\nprint(f'lag {lag}')\n", hint="h", read_later={"lag"})
    assert stub == "# Exercise: write this. Hint: h\nlag = None\n"


def test_a_cell_without_an_exercise_function_gives_every_function_the_cells_hint():
    stub = stub_solution("def run(beta):\n    return beta\n\n\nrun(1)\n", hint="run it twice",
                         hints={"other": "not this"}, read_later=set())
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match="Hint: run it twice"):
        namespace["run"](1)


def test_a_function_checked_under_an_exercise_name_gets_that_exercises_hint():
    """Lesson 08 checks corridor_ascent as corridor_learned_p: its stub carries that exercise's
    hint, not the hint of the first check after the cell (review 0708g, H3)."""
    from rlcourse.course.cli import _student_edition
    from rlcourse.course.exercises import get

    nb = _student_edition(LESSONS / "08_reinforce.ipynb")
    stub = next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and "def corridor_ascent" in "".join(c["source"]))
    namespace = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError) as raised:
        namespace["corridor_ascent"](0.9, None)
    assert get("corridor_learned_p").hint in str(raised.value)
    # zero_of is checked as corridor_fixed_points (review 08h, F7: it carried the exact
    # gradients' hint while its answer was checked as a value)
    stub = next("".join(c["source"]) for c in nb["cells"]
                if c["cell_type"] == "code" and "def zero_of" in "".join(c["source"]))
    exec(stub, namespace)
    with pytest.raises(NotImplementedError) as raised:
        namespace["zero_of"](0, 0.5)
    assert get("corridor_fixed_points").hint in str(raised.value)


def test_student_copy_blanks_solutions_and_keeps_checks(tmp_path):
    written = student_copy(tmp_path, LESSONS)
    assert [p.name for p in written] == [p.name for p in find_lessons(LESSONS)]
    for original, copy in zip(find_lessons(LESSONS), written):
        cells = json.loads(original.read_text(encoding="utf-8"))["cells"]
        copied = json.loads(copy.read_text(encoding="utf-8"))["cells"]
        assert len(cells) == len(copied)
        for before, after in zip(cells, copied):
            source, new = "".join(before["source"]), "".join(after["source"])
            if "solution" in before["metadata"].get("tags", []):
                assert new.startswith("# Exercise: write this.") and not after["outputs"]
                assert "NotImplementedError" in new or "= None" in new
            elif before["cell_type"] == "code" and "exercises.check(" in source:
                assert new == re.sub(r"^assert\s+(?=rc\.exercises\.check\()", "", source, flags=re.M)
                assert not after["outputs"]
            else:
                assert new == source


def test_check_command_times_lessons_and_fails_on_an_error(tmp_path):
    pytest.importorskip("nbclient")
    good = {"cells": [{"cell_type": "code", "metadata": {}, "source": "print(1 + 1)",
                       "outputs": [], "execution_count": None}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    bad = json.loads(json.dumps(good))
    bad["cells"][0]["source"] = "raise RuntimeError('planted failure')"
    (tmp_path / "01_good.ipynb").write_text(json.dumps(good))
    (tmp_path / "02_bad.ipynb").write_text(json.dumps(bad))
    proc = subprocess.run([sys.executable, "-m", "rlcourse", "check", "--lessons", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert re.search(r"01_good.ipynb \.\.\.\s+[0-9.]+ s  ok", proc.stdout)
    assert "02_bad.ipynb" in proc.stdout and "planted failure" in proc.stdout
    assert "1/2 lessons ran cleanly" in proc.stdout


def test_readme_library_example_runs():
    code = re.search(r"```python\n(.+?)\n```", (TOP / "README.md").read_text(encoding="utf-8"),
                     re.S).group(1)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["score"].mean == 500.0  # CartPole-v1's maximum: the preset solves it
    adv = namespace["adv"]
    assert adv[1, 0] == 1.0  # the terminal step's advantage is its reward alone


def test_a_student_copy_runs_top_to_bottom_and_shows_todo(tmp_path):
    pytest.importorskip("nbclient")
    student_copy(tmp_path, LESSONS, only=["00"])
    proc = subprocess.run([sys.executable, "-m", "rlcourse", "check", "00", "--lessons", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    nb = json.loads((tmp_path / "00_how_this_course_works.ipynb").read_text(encoding="utf-8"))
    assert not any("assert rc.exercises.check" in "".join(c["source"]) for c in nb["cells"])


# ------------------------------------------------------------------ rlcourse start


def test_start_creates_the_workspace_once_and_never_overwrites_it(tmp_path, capsys):
    workspace = tmp_path / "my-rlcourse"
    assert main(["start", str(workspace), "--no-lab", "--lessons", str(LESSONS)]) == 0
    assert "created your workspace" in capsys.readouterr().out
    names = [p.name for p in find_lessons(workspace)]
    assert names == [p.name for p in find_lessons(LESSONS)]
    assert sorted(p.name for p in (workspace / "cheatsheets").glob("*.md")) == \
        sorted(p.name for p in (TOP / "cheatsheets").glob("*.md"))
    first = json.loads((workspace / names[0]).read_text(encoding="utf-8"))
    assert any("".join(c["source"]).startswith("# Exercise: write this.") for c in first["cells"])

    # the student works: a notebook and a cheat sheet edited, a lesson deleted by mistake
    edited = workspace / names[0]
    edited.write_text(edited.read_text(encoding="utf-8").replace("raise NotImplementedError",
                                                                 "return 0  # my work"))
    (workspace / "cheatsheets" / "tabular.md").write_text("my notes\n")
    (workspace / names[1]).unlink()
    before = edited.read_text(encoding="utf-8")

    assert main(["start", str(workspace), "--no-lab", "--lessons", str(LESSONS)]) == 0
    out = capsys.readouterr().out
    assert f"kept your {len(names) - 1} notebooks" in out and "added 1 new lesson" in out
    assert edited.read_text(encoding="utf-8") == before
    assert (workspace / "cheatsheets" / "tabular.md").read_text() == "my notes\n"
    assert (workspace / names[1]).exists()


def test_start_opens_jupyter_lab_in_the_workspace(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(subprocess, "call", lambda command: calls.append(command) or 0)
    workspace = tmp_path / "ws"
    assert main(["start", str(workspace), "--no-browser", "--lessons", str(LESSONS)]) == 0
    (command,) = calls
    assert command[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={workspace.resolve()}" in command and "--no-browser" in command
    assert str((workspace / "00_how_this_course_works.ipynb").resolve()) in command


# ------------------------------------------------------------------ grading


def test_graded_exercises_are_the_checks_of_solution_cells():
    """Lesson 00's worked example (episode_return, checked on functions the lesson writes) is
    not graded; every Build-it step and exercise is."""
    names = graded_exercises(LESSONS / "00_how_this_course_works.ipynb")
    assert names == ["numerical_grad", "matmul_vjp", "backprop", "adam_step", "sgd_momentum_step",
                     "momentum_speedup", "complex_step_grad", "best_eps", "newton_cg"]


def _notebook(*cells):
    """A notebook of (source, tags) code cells."""
    return {"cells": [{"cell_type": "code", "metadata": {"tags": list(tags)}, "source": source,
                       "outputs": [], "execution_count": None} for source, tags in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 4}


def _write(folder, name, nb):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(nb), encoding="utf-8")


SOLVED = "def my_return(rewards):\n    return float(sum(rewards))\n"
CHECK = "import rlcourse as rc\nassert rc.exercises.check('episode_return', my_return)\n"


def test_grade_reports_a_failing_lesson_and_a_timeout_and_keeps_going(tmp_path, capsys):
    """Toy lessons: one clean, one whose later cell raises (what ran before still counts), one
    that runs out of time (its unreached exercise fails), one missing from the student's copy;
    a check of rlcourse's own function does not count as the student's work."""
    pytest.importorskip("nbclient")
    teacher = tmp_path / "teacher"
    _write(teacher, "01_clean.ipynb", _notebook((SOLVED, ["solution"]), (CHECK, [])))
    _write(teacher, "02_raises.ipynb", _notebook(
        (SOLVED, ["solution"]), (CHECK, []), ("raise RuntimeError('planted failure')", []),
        ("my_grad = None", ["solution"]),
        ("assert rc.exercises.check('numerical_grad', my_grad)", [])))
    _write(teacher, "03_slow.ipynb", _notebook(
        ("import time\ntime.sleep(60)", []), (SOLVED, ["solution"]), (CHECK, [])))
    _write(teacher, "04_gone.ipynb", _notebook((SOLVED, ["solution"]), (CHECK, [])))
    _write(teacher, "05_reference.ipynb", _notebook(
        ("import rlcourse as rc\nmy_grad = rc.numerical_grad", ["solution"]),
        ("assert rc.exercises.check('numerical_grad', my_grad)", [])))
    student = tmp_path / "ada"
    for path in find_lessons(teacher):
        if path.name != "04_gone.ipynb":
            _write(student, path.name, json.loads(path.read_text()))

    table = tmp_path / "grades.csv"
    code = main(["grade", str(student), "--lessons", str(teacher), "--timeout", "4",
                 "--csv", str(table)])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = list(csv.DictReader(table.open()))
    passed = {(r["lesson"], r["exercise"]): r["passed"] for r in rows}
    assert passed == {("01_clean", "episode_return"): "1", ("02_raises", "episode_return"): "1",
                      ("02_raises", "numerical_grad"): "0", ("03_slow", "episode_return"): "0",
                      ("04_gone", "episode_return"): "0", ("05_reference", "numerical_grad"): "0"}
    assert re.search(r"^ada\s+1/1\s+1/2\s+0/1\s+0/1\s+0/1\s+2/6$", out, re.M), out
    # the teacher's edition asserts its checks, so the unwritten my_grad raises too
    assert "ada 02_raises: error (2 cell(s) raised; first: cell 2: RuntimeError: planted failure)" in out
    assert "ada 03_slow: timeout (stopped after 4 s)" in out
    assert "ada 04_gone: missing" in out


def test_progress_lists_each_exercise_for_the_student(tmp_path, capsys):
    pytest.importorskip("nbclient")
    folder = tmp_path / "me"
    _write(folder, "01_toy.ipynb", _notebook(
        (SOLVED, ["solution"]), (CHECK, []),
        ("def my_grad(f, x):\n    raise NotImplementedError\n", ["solution"]),
        ("rc.exercises.check('numerical_grad', my_grad)", []),
        ("my_number = 9", ["solution"]),
        ("rc.exercises.check('momentum_speedup', my_number)", [])))
    assert main(["progress", str(folder), "--lessons", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "01_toy: 1/3 passed\n" in out
    assert "  [pass] episode_return\n  [todo] numerical_grad\n  [fail] momentum_speedup (0/1 cases)" in out
    assert out.rstrip().endswith("1/3 exercises passed")


CHEATS_00 = {  # the review's cheats, written into a student's copy of lesson 00
    "def my_numerical_grad": "import functools\n"
                             "my_numerical_grad = functools.partial("
                             "rc.exercises.get('numerical_grad').reference)\n",
    "def my_adam_step": "def my_adam_step(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):\n"
                        "    opt = rc.Adam(lr=lr, betas=(b1, b2), eps=eps)\n"
                        "    new, s = opt.step({'p': p}, {'p': g}, {'t': t - 1, 'm': {'p': m}, "
                        "'v': {'p': v}})\n"
                        "    return new['p'], s['m']['p'], s['v']['p']\n",
    "momentum_speedup = ": "momentum_speedup = next(a for a in (1, 9, 10, 100) "
                           "if rc.exercises.check('momentum_speedup', a, verbose=False))\n",
    "def newton_cg": "def newton_cg(loss, w, iters):\n"
                     "    return -np.linalg.inv(loss.hessian(w)) @ rc.grad(loss)(w)\n",
}


def test_grade_lesson_00_untouched_teacher_one_step_solved_and_cheats(tmp_path, capsys):
    """The real lesson: an untouched student copy passes nothing, the teacher's edition passes
    everything; a copy with one Build-it step written honestly and the review's cheats in four
    others passes exactly the honest step, and the CSV says why each other one did not pass."""
    pytest.importorskip("nbclient")
    untouched, mixed = tmp_path / "untouched", tmp_path / "mixed"
    student_copy(untouched, LESSONS, only=["00"])
    student_copy(mixed, LESSONS, only=["00"])
    name = "00_how_this_course_works.ipynb"
    teacher_cells = json.loads((LESSONS / name).read_text(encoding="utf-8"))["cells"]
    nb = json.loads((mixed / name).read_text(encoding="utf-8"))
    for theirs, mine in zip(teacher_cells, nb["cells"]):
        source = "".join(theirs["source"])
        if "def my_matmul_vjp" in source:
            mine["source"] = theirs["source"]  # the student writes this one step
        for start, cheat in CHEATS_00.items():
            if "solution" in theirs["metadata"].get("tags", []) and start in source:
                if start == "momentum_speedup = ":  # the cell also holds sgd_momentum_step's stub
                    cheat = "".join(mine["source"]).split("momentum_speedup = None")[0] + cheat
                mine["source"] = cheat
    (mixed / name).write_text(json.dumps(nb), encoding="utf-8")

    table = tmp_path / "grades.csv"
    assert main(["grade", str(LESSONS), str(untouched), str(mixed), "--only", "00",
                 "--csv", str(table)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^lessons\s+9/9\s+9/9$", out, re.M), out
    assert re.search(r"^untouched\s+0/9\s+0/9$", out, re.M), out
    assert re.search(r"^mixed\s+1/9\s+1/9$", out, re.M), out
    assert "did not run cleanly" not in out  # a student copy with nothing written runs cleanly
    assert "mixed 00: fail 1, todo 4, used the reference 3 (numerical_grad, adam_step, newton_cg)" \
        in out, out
    rows = list(csv.DictReader(table.open()))
    assert list(rows[0]) == ["student", "lesson", "exercise", "passed", "state"]
    assert len(rows) == 3 * 9
    mixed_states = {r["exercise"]: r["state"] for r in rows if r["student"] == "mixed"}
    assert mixed_states == {"numerical_grad": "reference", "matmul_vjp": "pass", "backprop": "todo",
                            "adam_step": "reference", "sgd_momentum_step": "todo",
                            "momentum_speedup": "fail", "complex_step_grad": "todo",
                            "best_eps": "todo", "newton_cg": "reference"}
    assert {r["exercise"] for r in rows if r["student"] == "mixed" and r["passed"] == "1"} == \
        {"matmul_vjp"}
    assert all(r["passed"] == "1" and r["state"] == "pass" for r in rows if r["student"] == "lessons")
    assert all(r["state"] == "todo" for r in rows if r["student"] == "untouched")
    assert all(r["lesson"] == "00_how_this_course_works" for r in rows)


def test_run_lesson_reports_a_missing_notebook(tmp_path):
    run = run_lesson(tmp_path / "07_absent.ipynb")
    assert run.status == "missing" and not run.checks
