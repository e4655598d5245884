"""The self-checking exercise mechanism, and every registered exercise's own sanity."""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises


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


def test_failure_explains_in_lesson_terms(capsys):
    naive = lambda z: np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        assert not exercises.check("softmax", naive)
    out = capsys.readouterr().out
    assert "[pass] small logits" in out
    assert "subtract the max" in out
    assert "2/3 cases pass" in out


def test_unimplemented_and_crashing_answers_are_reported_not_raised(capsys):
    def todo(x):
        raise NotImplementedError

    def crash(x):
        return x["no such key"]

    assert not exercises.check("softmax", todo)
    assert not exercises.check("softmax", crash)
    out = capsys.readouterr().out
    assert "[todo]" in out and "raised IndexError" in out


def test_inputs_are_copied_so_a_mutating_answer_cannot_spoil_the_reference():
    def mutating(x):
        result = rc.softmax(x.copy())
        x[...] = 0.0
        return result

    assert exercises.check("softmax", mutating, verbose=False)


def test_numerical_grad_explains_a_missing_factor_of_two(capsys):
    def one_sided(f, x):
        return 2 * rc.numerical_grad(f, x)

    assert not exercises.check("numerical_grad", one_sided)
    assert "2*eps" in capsys.readouterr().out


def test_adam_explains_missing_bias_correction(capsys):
    def no_correction(params, grads, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
        m = b1 * m + (1 - b1) * grads
        v = b2 * v + (1 - b2) * grads**2
        return params - lr * m / (np.sqrt(v) + eps), m, v

    assert not exercises.check("adam_step", no_correction)
    assert "bias correction" in capsys.readouterr().out


def test_unknown_exercise_names_the_available_ones():
    with pytest.raises(KeyError, match="softmax"):
        exercises.check("no-such-exercise", print)


def test_default_compare_catches_scalar_and_array_mismatches():
    assert exercises.default_compare(1.0, 2.0) == "expected 2.0, got 1.0"
    assert exercises.default_compare(np.float64(3.0), 3.0) is None
    assert "1 of 3 entries differ; first at index (2,)" in exercises.default_compare(
        np.array([1, 2, 4]), np.array([1, 2, 3]))
    assert "shape" in exercises.default_compare(np.ones(2), np.ones(3))
    assert "NaN" in exercises.default_compare(np.array([np.nan]), np.array([1.0]))
