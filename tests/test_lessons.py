"""Every lesson notebook has the template's parts, is stored executed, and equals its twin."""

import json
import re
from pathlib import Path

import pytest

from rlcourse.course.notebooks import cell_summary, find_lessons, lesson_info, twin_path

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
NOTEBOOKS = find_lessons(LESSONS)
HEADINGS = ["The problem", "The idea", "Build it", "Check it", "Use it", "Pitfalls",
            "Exercises", "Key terms", "Further reading"]
ids = [nb.stem for nb in NOTEBOOKS]
# Lessons whose Build it is already the student's work (graded `solution` steps). The lead adds
# each lesson here as it lands; test_build_it_steps_are_graded then holds it to that.
BUILD_IT_DONE = [
    "00_how_this_course_works", "01_bandits", "02_mdps_bellman", "03_dynamic_programming",
    "04_monte_carlo", "05_td_learning", "06_control", "09_actor_critic_gae", "10_ppo",
    "07_dqn", "08_reinforce", "11_importance_sampling", "12_reward_models_rlhf", "13_dpo_ipo", "14_grpo",
    "15_search_and_decoding",
]


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_there_are_lessons():
    assert NOTEBOOKS, f"no lesson notebooks found in {LESSONS}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_title_cell_names_number_prerequisites_time_and_goal(path):
    info = lesson_info(path)
    assert path.name.startswith(info.number + "_")
    assert 5 <= info.minutes <= 180
    assert all(p < info.number for p in info.prerequisites), "prerequisites must come earlier"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_template_headings_in_order(path):
    markdown = "\n".join("".join(c["source"]) for c in load(path)["cells"]
                         if c["cell_type"] == "markdown")
    found = re.findall(r"^## (.+?)\s*$", markdown, flags=re.M)
    positions = []
    for heading in HEADINGS:
        assert heading in found, f"{path.name} lacks the heading '## {heading}'"
        positions.append(found.index(heading))
    assert positions == sorted(positions), f"{path.name}: headings out of template order"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_stored_executed_in_order_without_timing_metadata(path):
    nb = load(path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    counts = [c["execution_count"] for c in code]
    assert None not in counts, f"{path.name}: a code cell was never executed"
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: not run top to bottom once"
    for cell in nb["cells"]:
        assert "execution" not in cell.get("metadata", {}), f"{path.name}: timing metadata stored"
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", [])
                       if "raises-exception" not in cell["metadata"].get("tags", [])), \
            f"{path.name}: an unexpected error is stored"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_exercises_are_checked_and_solutions_tagged(path):
    cells = load(path)["cells"]
    sources = ["".join(c["source"]) for c in cells]
    start = next(i for i, s in enumerate(sources) if re.search(r"^## Exercises", s, re.M))
    end = next(i for i, s in enumerate(sources) if re.search(r"^## Key terms", s, re.M))
    part = cells[start:end]
    assert any("solution" in c["metadata"].get("tags", []) for c in part), \
        f"{path.name}: no exercise solution cell is tagged 'solution'"
    assert any("exercises.check(" in "".join(c["source"]) for c in part), \
        f"{path.name}: no exercise is checked with rc.exercises.check"


def test_build_it_done_names_existing_lessons():
    assert set(BUILD_IT_DONE) <= set(ids), sorted(set(BUILD_IT_DONE) - set(ids))


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem in BUILD_IT_DONE],
                         ids=[i for i in ids if i in BUILD_IT_DONE])
def test_build_it_steps_are_graded(path):
    """Build it holds at least one `solution` cell, and each is followed (before the next
    solution cell) by a cell of `rc.exercises.check` calls on what it defines."""
    import ast

    cells = load(path)["cells"]
    sources = ["".join(c["source"]) for c in cells]
    start = next(i for i, s in enumerate(sources) if re.search(r"^## Build it", s, re.M))
    end = next(i for i, s in enumerate(sources) if re.search(r"^## Check it", s, re.M))
    part = cells[start:end]
    steps = [i for i, c in enumerate(part) if "solution" in c["metadata"].get("tags", [])]
    assert steps, f"{path.name}: Build it has no step tagged 'solution'"
    for k, i in enumerate(steps):
        tree = ast.parse("".join(part[i]["source"]))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert names, f"{path.name}: a Build-it solution cell defines no function"
        stop = steps[k + 1] if k + 1 < len(steps) else len(part)
        checked = {ast.unparse(call.args[1]) for c in part[i + 1:stop] if c["cell_type"] == "code"
                   for call in ast.walk(ast.parse("".join(c["source"])))
                   if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("exercises.check")
                   and len(call.args) >= 2}
        assert names & checked, (f"{path.name}: Build-it step {sorted(names)} is not graded by an "
                                 f"rc.exercises.check cell after it")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_student_copies_still_run_top_to_bottom(path):
    """Solutions live only under Build it and Exercises, and what a solution cell defines is used
    only by the exercise checks, so a student copy (solutions stubbed) runs top to bottom,
    showing [todo]."""
    import ast

    section, defined, solved = None, set(), set()
    for cell in load(path)["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            section = (re.findall(r"^## (.+?)\s*$", source, re.M) or [section])[-1]
            continue
        if "solution" in cell["metadata"].get("tags", []):
            assert section in ("Build it", "Exercises"), \
                f"{path.name}: a solution cell under '## {section}'"
            solved.add(section)
            tree = ast.parse(source)
            defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            defined |= {t.id for n in tree.body if isinstance(n, ast.Assign)
                        for t in n.targets if isinstance(t, ast.Name)}
        elif section in solved | {"Exercises"} and "exercises.check(" in source:
            for statement in ast.parse(source).body:
                call = statement.test if isinstance(statement, ast.Assert) else statement
                call = call.value if isinstance(call, ast.Expr) else call
                assert isinstance(call, ast.Call) and ast.unparse(call.func).endswith(
                    "exercises.check"), (f"{path.name}: a check cell may hold only exercise "
                                         f"checks, found: {ast.unparse(statement)[:80]}")
        elif defined:
            used = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)} & defined
            assert not used, f"{path.name}: {sorted(used)} from a solution cell used outside a check"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_notebook_equals_its_plain_text_twin(path):
    jupytext = pytest.importorskip("jupytext")
    twin = twin_path(path)
    assert twin.exists(), f"{path.name} has no twin {twin}"
    assert cell_summary(load(path)) == cell_summary(jupytext.read(twin)), (
        f"{path.name} and {twin.name} differ: rebuild with `python tools/build_lessons.py "
        f"{path.name[:2]}`")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_solutions_do_not_call_what_they_are_graded_on(path):
    """A teacher's solution never calls rlcourse's function of its exercise's name (rc.gae for
    "gae") nor reaches into the grader: it would be graded as 'used the reference' (the full
    rule, with each exercise's forbid list, runs in every check; this is its static part)."""
    import ast

    from rlcourse.course.grading import _check_calls, _defined, _grader_use

    nb = load(path)
    assert not _grader_use(nb), f"{path.name}: a solution cell uses the grader"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    calls = _check_calls(code)
    for cell in code:
        if "solution" not in cell["metadata"].get("tags", []):
            continue
        tree = ast.parse("".join(cell["source"]))
        graded = {name for name, reads in calls if reads & _defined(tree)}
        used = {n.attr for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "rc"}
        assert not used & graded, f"{path.name}: a solution calls rc.{sorted(used & graded)}"
