"""The self-checking exercise mechanism, and every registered exercise's own sanity.

The wrong answers of each lesson's exercises are tested in ``tests/test_exercises_lesson_NN.py``
(or ``..._lessons_NN_MM.py``); this file tests ``check`` and the registry themselves, on a toy
exercise registered for the test only.
"""

import json

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises
from rlcourse.course.registry import _REGISTRY, Case


@pytest.mark.parametrize("name", exercises.available())
def test_every_exercise_accepts_its_reference(name, capsys):
    exercise = exercises.get(name)
    assert exercises.check(name, exercise.reference)
    assert f"{name}: " in capsys.readouterr().out


@pytest.mark.parametrize("name", exercises.available())
def test_every_exercise_rejects_a_wrong_answer(name):
    exercise = exercises.get(name)

    def wrong(*args, **kwargs):
        out = exercise.reference(*args, **kwargs)
        return rc.tree_map(lambda v: np.asarray(v) + 1.0 if np.asarray(v).dtype != bool
                           else ~np.asarray(v), out)

    assert not exercises.check(name, wrong, verbose=False)


@pytest.fixture
def toy():
    """A toy exercise: a softmax along the last axis, with an explain for the overflow."""

    def reference(z):
        z = np.asarray(z, dtype=float)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def explain(case, got, expected):
        if np.isnan(np.asarray(got, dtype=float)).any():
            return "NaN: exp(1000) overflows; subtract the max logit first"
        return None

    def explain_error(case, err):
        return "a KeyError: the input is an array, not a dict" if isinstance(err, KeyError) else None

    exercises.register("toy_softmax", reference,
                       [Case("small logits", (np.array([1.0, 2.0, 3.0]),)),
                        Case("huge logits", (np.array([1000.0, 999.0, -1000.0]),))],
                       explain=explain, explain_error=explain_error, hint="shift by the max")
    yield "toy_softmax"
    del _REGISTRY["toy_softmax"]


def test_failure_explains_in_lesson_terms(toy, capsys):
    naive = lambda z: np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        assert not exercises.check(toy, naive)
    out = capsys.readouterr().out
    assert "[pass] small logits" in out
    assert "subtract the max" in out
    assert "1/2 cases pass. Hint: shift by the max" in out


def test_unimplemented_and_crashing_answers_are_reported_not_raised(toy, capsys):
    def todo(x):
        raise NotImplementedError

    def crash(x):
        return x["no such key"]

    def lookup(x):
        return {}["key"]

    assert not exercises.check(toy, todo)
    assert not exercises.check(toy, crash)
    assert not exercises.check(toy, lookup)
    out = capsys.readouterr().out
    assert "[todo]" in out and "raised IndexError" in out
    assert "raised KeyError: 'key' (line" in out and "the input is an array, not a dict" in out


def test_the_line_reported_is_in_the_readers_code_not_numpy(toy, capsys):
    def bad_shapes(z):
        return np.ones((2, 3)) @ np.ones((2, 3))  # this line

    exercises.check(toy, bad_shapes)
    line = bad_shapes.__code__.co_firstlineno + 1
    assert f"(line {line})" in capsys.readouterr().out


def test_inputs_are_copied_so_a_mutating_answer_cannot_spoil_the_reference(toy):
    def mutating(x):
        result = rc.softmax(x.copy())
        x[...] = 0.0
        return result

    assert exercises.check(toy, mutating, verbose=False)


def test_a_plain_value_is_an_answer_and_none_is_todo(capsys):
    exercises.register("toy_choice", lambda: "B", [Case("your choice")])
    try:
        assert exercises.check("toy_choice", "B")
        assert not exercises.check("toy_choice", "A")
        assert not exercises.check("toy_choice", None)
        out = capsys.readouterr().out
        assert "[todo] your choice: not answered yet" in out
        assert "expected 'B', got 'A'" in out
    finally:
        del _REGISTRY["toy_choice"]


def test_call_says_how_a_function_is_graded(capsys):
    """With ``call``, reference and answer are graded through it (here: differentiated)."""
    exercises.register(
        "toy_loss", lambda p: rc.sum(p["w"] ** 2), [Case("w = [1, 2]", ({"w": np.array([1.0, 2.0])},))],
        call=lambda fn, p: rc.value_and_grad(fn)(p))
    try:
        assert exercises.check("toy_loss", lambda p: rc.sum(rc.square(p["w"])))
        # the right value through a path autodiff cannot see: the gradient is wrong
        assert not exercises.check("toy_loss", lambda p: rc.sum(rc.stop_gradient(p["w"]) ** 2))
        assert "['w']" in capsys.readouterr().out
    finally:
        del _REGISTRY["toy_loss"]


def test_results_are_appended_to_the_file_the_grader_names(toy, tmp_path, monkeypatch):
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv(exercises.RESULTS_ENV, str(results))

    def todo(x):
        raise NotImplementedError

    def mine(z):
        return rc.softmax(z)

    exercises.check(toy, todo, verbose=False)
    exercises.check(toy, mine, verbose=False)
    exercises.check(toy, rc.softmax, verbose=False)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [e["exercise"] for e in lines] == ["toy_softmax"] * 3
    assert lines[0] == {"exercise": "toy_softmax", "passed": False, "cases_passed": 0, "cases": 2,
                        "todo": 2, "by": f"{__name__}.{todo.__qualname__}", "uses": [],
                        "question": False, "graded": True}
    assert lines[1]["passed"] and lines[1]["cases_passed"] == 2 and lines[1]["todo"] == 0
    assert lines[2]["by"].startswith("rlcourse.")  # the grader does not count the reference
    assert lines[2]["uses"] == ["rc.softmax"] and not lines[2]["passed"]


def test_nothing_is_written_without_the_variable(toy, tmp_path, monkeypatch):
    monkeypatch.delenv(exercises.RESULTS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    exercises.check(toy, rc.softmax, verbose=False)
    assert not list(tmp_path.iterdir())


def test_unknown_exercise_names_the_available_ones_and_the_refresh():
    with pytest.raises(KeyError, match="numerical_grad") as info:
        exercises.check("no-such-exercise", print)
    assert "rlcourse start --refresh NN" in str(info.value)


def test_an_explain_that_fails_falls_back_on_the_compare_reason(capsys):
    def explain(case, got, expected):
        return float(got) > 0  # crashes on a text answer

    exercises.register("toy_fragile", lambda: 2.0, [Case("your number")], explain=explain)
    try:
        assert not exercises.check("toy_fragile", "two")
        assert "expected 2.0, got 'two'" in capsys.readouterr().out
    finally:
        del _REGISTRY["toy_fragile"]


def test_forbid_names_what_an_answer_may_not_call(capsys):
    """An exercise's own list (objects by identity, attribute names) and, always, rlcourse's
    function of the exercise's name: the cases pass, the check does not."""
    exercises.register("toy_clip", lambda x: np.clip(x, 0, 1), [Case("x", (np.array([-1.0, 2.0]),))],
                       forbid=[np.clip, "clip_grad"])
    try:
        assert not exercises.check("toy_clip", lambda x: np.clip(x, 0.0, 1.0))
        out = capsys.readouterr().out
        assert "[pass] x" in out and "[reference] your function uses np.clip" in out
        assert exercises.check("toy_clip", lambda x: np.minimum(np.maximum(x, 0.0), 1.0))

        class Tool:
            def clip_grad(self, x):
                return np.minimum(np.maximum(x, 0.0), 1.0)

        tool = Tool()
        assert not exercises.check("toy_clip", lambda x: tool.clip_grad(x), verbose=False)
    finally:
        del _REGISTRY["toy_clip"]


def test_the_exercise_of_a_library_name_forbids_that_function(capsys):
    saved = _REGISTRY.pop("softmax", None)
    exercises.register("softmax", lambda z: rc.softmax(z), [Case("z", (np.array([1.0, 2.0]),))])
    try:
        def mine(z):
            return rc.softmax(z)

        assert not exercises.check("softmax", mine)
        assert "rc.softmax" in capsys.readouterr().out
    finally:
        del _REGISTRY["softmax"]
        if saved is not None:
            _REGISTRY["softmax"] = saved


def test_the_reference_itself_still_passes_for_the_banks_own_tests():
    """check(name, get(name).reference) is how every bank's tests validate a reference: True."""
    exercises.register("toy_abs", abs, [Case("-2", (-2,))])
    try:
        assert exercises.check("toy_abs", exercises.get("toy_abs").reference, verbose=False)
    finally:
        del _REGISTRY["toy_abs"]


def test_a_question_answered_through_a_lambda_counts_its_first_answer(tmp_path, monkeypatch,
                                                                      capsys):
    """Lesson 11 checks its questions as check(name, lambda: answer): the same rule holds."""
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv(exercises.RESULTS_ENV, str(results))
    monkeypatch.setattr(exercises, "_FIRST_ANSWERS", {})
    exercises.register("toy_q", lambda: "b", [Case("which?")])
    try:
        for letter in "abc":
            exercises.check("toy_q", lambda letter=letter: letter)
        exercises.check("toy_q", lambda: "a")  # the first answer again: graded, still wrong
        out = capsys.readouterr().out
        assert out.count("a later answer: shown, not graded") == 2
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        assert [(e["passed"], e["graded"]) for e in lines] == \
            [(False, True), (True, False), (False, False), (False, True)]
    finally:
        del _REGISTRY["toy_q"]


def test_default_compare_catches_scalar_and_array_mismatches():
    assert exercises.default_compare(1.0, 2.0) == "expected 2.0, got 1.0"
    assert exercises.default_compare(np.float64(3.0), 3.0) is None
    assert "1 of 3 entries differ; first at index (2,)" in exercises.default_compare(
        np.array([1, 2, 4]), np.array([1, 2, 3]))
    assert "shape" in exercises.default_compare(np.ones(2), np.ones(3))
    assert "NaN" in exercises.default_compare(np.array([np.nan]), np.array([1.0]))


def test_register_keeps_its_positional_signature():
    """Other lessons' banks call register(name, reference, cases, compare=, explain=, hint=)."""
    exercises.register("toy_old_style", abs, [Case("-2", (-2,))], exercises.default_compare, None, "h")
    try:
        assert exercises.check("toy_old_style", lambda x: 2, verbose=False)
        assert exercises.get("toy_old_style").call is None
    finally:
        del _REGISTRY["toy_old_style"]
