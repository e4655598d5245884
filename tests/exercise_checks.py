"""Submitting answers to the exercise checkers in tests: the shared helpers of the
``test_exercises_lesson*.py`` files."""

import numpy as np

from rlcourse.course import exercises


def rejected(name, fn, capsys):
    """Submit ``fn`` to the checker ``name``; it must fail. Returns what the check printed."""
    capsys.readouterr()
    with np.errstate(all="ignore"):
        ok = exercises.check(name, fn)
    out = capsys.readouterr().out
    assert not ok, f"{name}: a wrong answer passed:\n{out}"
    return out


def accepted(name, fn, capsys):
    """Submit ``fn`` to the checker ``name``; it must pass."""
    ok = exercises.check(name, fn)
    out = capsys.readouterr().out
    assert ok, f"{name}: a right answer failed:\n{out}"
