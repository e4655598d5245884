"""Self-checking exercises: grade a reader's function against the reference.

A lesson registers an exercise once::

    register("discounted_returns", reference=rc.discounted_returns, cases=[...],
             explain=why_returns_differ)

and the reader calls ``rc.exercises.check("discounted_returns", my_fn)``. Every case runs the
reader's function and the reference on the same input; the verdict of each case is printed and,
on a failure, the reason in the lesson's own terms (``explain``), not just "arrays differ".
``check`` returns True only if every case passed.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Case", "Exercise", "register", "check", "available", "default_compare"]


@dataclass(frozen=True)
class Case:
    """One input to grade on: ``fn(*args, **kwargs)`` against ``reference(*args, **kwargs)``."""

    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Exercise:
    name: str
    reference: Callable
    cases: Callable[[], list[Case]]
    compare: Callable[[Any, Any], str | None]
    explain: Callable[[Case, Any, Any], str | None] | None
    hint: str


_REGISTRY: dict[str, Exercise] = {}


def default_compare(got, expected, rtol: float = 1e-6, atol: float = 1e-8) -> str | None:
    """None if ``got`` matches ``expected`` (nested tuples/lists/dicts of arrays), else why not."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"expected a dict with keys {sorted(expected)}, got {type(got).__name__}"
        for key in expected:
            reason = default_compare(got[key], expected[key], rtol, atol)
            if reason:
                return f"[{key!r}] {reason}"
        return None
    if isinstance(expected, (tuple, list)) and not isinstance(expected, np.ndarray):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"expected a sequence of {len(expected)} items, got {type(got).__name__}"
        for i, (g, e) in enumerate(zip(got, expected)):
            reason = default_compare(g, e, rtol, atol)
            if reason:
                return f"item {i}: {reason}"
        return None
    got_arr, exp_arr = np.asarray(got), np.asarray(expected)
    if got_arr.shape != exp_arr.shape:
        return f"expected shape {exp_arr.shape}, got shape {got_arr.shape}"
    if exp_arr.dtype.kind in "biu" and got_arr.dtype.kind in "biu":
        wrong = got_arr != exp_arr
    else:
        got_f, exp_f = got_arr.astype(float), exp_arr.astype(float)
        if np.isnan(got_f).any() and not np.isnan(exp_f).any():
            return "your result contains NaN"
        wrong = ~np.isclose(got_f, exp_f, rtol=rtol, atol=atol, equal_nan=True)
    if not wrong.any():
        return None
    if exp_arr.ndim == 0:
        return f"expected {exp_arr.item()!r}, got {got_arr.item()!r}"
    where = tuple(int(i) for i in np.argwhere(wrong)[0])
    return (
        f"{int(wrong.sum())} of {exp_arr.size} entries differ; first at index {where}: "
        f"expected {exp_arr[where].item()!r}, got {got_arr[where].item()!r}"
    )


def register(
    name: str,
    reference: Callable,
    cases: list[Case] | Callable[[], list[Case]],
    compare: Callable[[Any, Any], str | None] = default_compare,
    explain: Callable[[Case, Any, Any], str | None] | None = None,
    hint: str = "",
) -> None:
    """Register (or replace) exercise ``name``.

    ``cases`` may be a function that builds the cases, so that large inputs are made only when
    checked. ``explain(case, got, expected)`` returns the lesson-level reason for a mismatch
    (or None to fall back on ``compare``'s). ``hint`` is shown when a case fails and is the text
    student copies put in their stubs.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    builder = cases if callable(cases) else (lambda: list(cases))
    _REGISTRY[name] = Exercise(name, reference, builder, compare, explain, hint)


def available() -> list[str]:
    """Names of every registered exercise."""
    _load_lesson_exercises()
    return sorted(_REGISTRY)


def get(name: str) -> Exercise:
    _load_lesson_exercises()
    if name not in _REGISTRY:
        raise KeyError(f"no exercise named {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def check(name: str, fn: Callable, verbose: bool = True) -> bool:
    """Run ``fn`` on every case of exercise ``name``; print each verdict; True if all pass."""
    exercise = get(name)
    cases = exercise.cases()
    passed = 0
    for case in cases:
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


def _load_lesson_exercises() -> None:
    """Import the modules that register exercises (each registers on import)."""
    from . import exercise_bank  # noqa: F401
