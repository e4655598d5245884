"""Self-checking exercises: grade a reader's function against the reference.

The reader calls ``rc.exercises.check("discounted_returns", my_fn)``. Every case runs the
reader's function and the reference on the same input; the verdict of each case is printed and,
on a failure, the reason in the lesson's own terms (``explain``), not just "arrays differ".
``check`` returns True only if every case passed. The exercises themselves live in
:mod:`rlcourse.course.bank`, one module per part of the course.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import numpy as np

from . import bank  # noqa: F401  (importing the bank registers every lesson's exercises)
from .registry import _REGISTRY, Case, Exercise, default_compare, register

__all__ = ["check", "available", "get", "Case", "Exercise", "register", "default_compare"]


def available() -> list[str]:
    """Names of every registered exercise."""
    return sorted(_REGISTRY)


def get(name: str) -> Exercise:
    if name not in _REGISTRY:
        raise KeyError(f"no exercise named {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def check(name: str, fn: Callable, verbose: bool = True) -> bool:
    """Run ``fn`` on every case of exercise ``name``; print each verdict; True if all pass."""
    exercise = get(name)
    cases = exercise.cases()
    passed = 0
    for case in cases:
        if case.raises is not None:
            passed += _check_refusal(exercise, case, fn, verbose)
            continue
        expected = exercise.reference(*_copy(case.args), **_copy(case.kwargs))
        try:
            got = fn(*_copy(case.args), **_copy(case.kwargs))
        except NotImplementedError:
            _say(verbose, f"  [todo] {case.label}: not implemented yet")
            continue
        except Exception as err:  # the reader's bug, shown rather than raised
            frame = traceback.extract_tb(err.__traceback__)[-1]
            _say(verbose, f"  [fail] {case.label}: raised {type(err).__name__}: {err} "
                 f"(line {frame.lineno})")
            continue
        reason = exercise.compare(got, expected)
        if reason is None:
            passed += 1
            _say(verbose, f"  [pass] {case.label}")
            continue
        lesson_reason = exercise.explain(case, got, expected) if exercise.explain else None
        _say(verbose, f"  [fail] {case.label}: {lesson_reason or reason}")
    ok = passed == len(cases)
    summary = f"{name}: {passed}/{len(cases)} cases pass"
    if not ok and exercise.hint:
        summary += f". Hint: {exercise.hint}"
    _say(verbose, summary)
    return ok


def _check_refusal(exercise: Exercise, case: Case, fn: Callable, verbose: bool) -> bool:
    """A case whose input must be refused: passes only if ``fn`` raises ``case.raises``."""
    wanted = case.raises.__name__
    try:
        got = fn(*_copy(case.args), **_copy(case.kwargs))
    except NotImplementedError:
        _say(verbose, f"  [todo] {case.label}: not implemented yet")
        return False
    except case.raises:
        _say(verbose, f"  [pass] {case.label} (refused with {wanted})")
        return True
    except Exception as err:
        _say(verbose, f"  [fail] {case.label}: raised {type(err).__name__}: {err}; this input "
             f"must be refused with {wanted}")
        return False
    reason = exercise.explain(case, got, None) if exercise.explain else None
    if not reason:
        reason = f"returned a value; this input must be refused (raise {wanted})"
    _say(verbose, f"  [fail] {case.label}: {reason}")
    return False


def _say(verbose: bool, text: str) -> None:
    if verbose:
        print(text)


def _copy(obj):
    """Deep-copy arrays so a function that writes into its input cannot spoil the next call."""
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_copy(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy(v) for v in obj)
    return obj
