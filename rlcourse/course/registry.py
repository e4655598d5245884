"""The exercise registry: what an exercise is, and how the lessons' exercise bank registers one.

A lesson's exercise is registered once, in :mod:`rlcourse.course.bank`::

    register("discounted_returns", reference=rc.discounted_returns, cases=[...],
             explain=why_returns_differ)

Each ``explain(case, got, expected)`` gives the reason for a mismatch in the lesson's own terms
(``expected`` is None for a case that must raise); ``explain_error(case, err)`` does the same for
an answer that raised. ``call(fn, *args, **kwargs)`` says how a function is graded when calling
it is not enough (e.g. differentiate a loss: ``call=lambda fn, params, x:
value_and_grad(fn)(params, x)``); reference and answer go through it alike. ``forbid`` lists
what an answer may not call because it would do the exercise for the reader (``rc.Adam`` for an
Adam step, ``np.linalg.solve`` for a conjugate-gradient solver, ``"hessian"`` for an attribute):
see :mod:`rlcourse.course.integrity`. Readers never call this module; they call
:func:`rlcourse.course.exercises.check`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Case", "Exercise", "register", "default_compare"]


@dataclass(frozen=True)
class Case:
    """One input to grade on: ``fn(*args, **kwargs)`` against ``reference(*args, **kwargs)``.

    ``raises``: an exception type the input must be refused with (as the reference refuses it);
    a function that returns a value instead fails the case.
    """

    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    raises: type[BaseException] | None = None


@dataclass(frozen=True)
class Exercise:
    name: str
    reference: Callable
    cases: Callable[[], list[Case]]
    compare: Callable[[Any, Any], str | None]
    explain: Callable[[Case, Any, Any], str | None] | None
    hint: str
    call: Callable[..., Any] | None = None
    explain_error: Callable[[Case, BaseException], str | None] | None = None
    forbid: tuple = ()


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
    if exp_arr.dtype.kind in "USO" or got_arr.dtype.kind in "USO":  # text answers, objects
        if exp_arr.shape == () and got_arr.shape == ():
            return None if got_arr.item() == exp_arr.item() else \
                f"expected {exp_arr.item()!r}, got {got_arr.item()!r}"
        wrong = np.array([g != e for g, e in zip(got_arr.flat, exp_arr.flat)]).reshape(exp_arr.shape)
    elif exp_arr.dtype.kind in "biu" and got_arr.dtype.kind in "biu":
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
    call: Callable[..., Any] | None = None,
    explain_error: Callable[[Case, BaseException], str | None] | None = None,
    forbid=(),
) -> None:
    """Register exercise ``name``; a name already registered is refused (ValueError).

    Every lesson's bank registers into one namespace, so two lessons that pick the same name
    would otherwise silently replace each other's exercise (the last import wins). A test that
    registers a temporary exercise deletes it from ``_REGISTRY`` afterwards.

    ``cases`` may be a function that builds the cases, so that large inputs are made only when
    checked. ``explain(case, got, expected)`` returns the lesson-level reason for a mismatch
    (or None to fall back on ``compare``'s). ``hint`` is shown when a case fails and is the text
    student copies put in their stubs. ``call(fn, *args, **kwargs)`` (default ``fn(*args,
    **kwargs)``) runs the reference and the reader's function on a case. ``explain_error(case,
    err)`` names the mistake behind an exception the reader's function raised (or None).
    ``forbid``: objects (by identity) and names (attributes such as ``"hessian"``) an answer must
    not use, besides the reference, ``rlcourse``'s function named ``name`` and the grading code,
    which are always forbidden (:mod:`rlcourse.course.integrity`).

    The reader may also pass a plain value instead of a function (the answer to a multiple-choice
    or numeric question): it is compared with ``reference(*case.args, **case.kwargs)``.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"name: expected a non-empty string, got {name!r}")
    if name in _REGISTRY:
        raise ValueError(
            f"exercise {name!r} is already registered (reference "
            f"{getattr(_REGISTRY[name].reference, '__module__', '?')}."
            f"{getattr(_REGISTRY[name].reference, '__qualname__', '?')}); every exercise needs "
            f"its own name: pick another one for the new exercise")
    builder = cases if callable(cases) else (lambda: list(cases))
    _REGISTRY[name] = Exercise(name, reference, builder, compare, explain, hint, call, explain_error,
                               tuple(forbid))
