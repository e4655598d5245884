"""The rlcourse command, the README's two commands and its course map, and .ci/run."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course.cli import course_map_markdown, main, stub_solution, student_copy
from rlcourse.course.notebooks import find_lessons, lesson_info

TOP = Path(__file__).resolve().parent.parent
LESSONS = TOP / "lessons"


def readme_commands():
    return re.findall(r"```bash\n(.+?)\n```", (TOP / "README.md").read_text(encoding="utf-8"))


def test_readme_opens_with_the_run_and_the_test_command():
    run, test = readme_commands()[:2]
    assert run.endswith("jupyter lab lessons/") and 'pip install -e ".[dev]"' in run
    assert test.endswith("&& pytest") and 'pip install -e ".[dev,gym]"' in test


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
    student_copy(tmp_path, LESSONS)
    proc = subprocess.run([sys.executable, "-m", "rlcourse", "check", "00", "--lessons", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    nb = json.loads((tmp_path / "00_how_this_course_works.ipynb").read_text(encoding="utf-8"))
    assert not any("assert rc.exercises.check" in "".join(c["source"]) for c in nb["cells"])
