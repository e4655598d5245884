"""Self-checking exercises: grade a reader's function against the reference.

The reader calls ``rc.exercises.check("discounted_returns", my_fn)``. Every case runs the
reader's function and the reference on the same input; the verdict of each case is printed and,
on a failure, the reason in the lesson's own terms (``explain``), not just "arrays differ".
``check`` returns True only if every case passed. The exercises themselves live in
:mod:`rlcourse.course.bank`, one module per part of the course.

A plain value instead of a function is an answer (to a multiple-choice or numeric question);
``None`` (what a student copy's stub holds) counts as not answered yet.

Grading: when the environment variable ``RLCOURSE_RESULTS`` names a file, every ``check`` also
appends one JSON line to it: ``{"exercise", "passed", "cases_passed", "cases", "todo", "by",
"uses", "question"}`` (``by`` is the module and name of the graded function, or ``"answer"``;
``uses`` what it calls that it should have written itself, see
:mod:`rlcourse.course.integrity`; ``question`` marks an exercise answered by a value).
``rlcourse grade`` and ``rlcourse progress`` set it for each lesson they run, so results come
from the checks themselves, not from parsing printed output.

Two rules keep the grade the reader's own. A function that calls the exercise's reference (or
what the exercise forbids) fails, whatever its cases say: ``[reference]`` names what it used.
A question (an exercise whose cases take no input, answered by a letter or a number) is graded
on the FIRST answer checked in a run: later answers are shown, and say that they are not graded,
so trying every letter in a loop gains nothing.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable

import numpy as np

from . import bank  # noqa: F401  (importing the bank registers every lesson's exercises)
from .integrity import reference_uses
from .registry import _REGISTRY, Case, Exercise, default_compare, register

__all__ = ["check", "available", "get", "Case", "Exercise", "register", "default_compare",
           "RESULTS_ENV"]

RESULTS_ENV = "RLCOURSE_RESULTS"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../rlcourse


def available() -> list[str]:
    """Names of every registered exercise."""
    return sorted(_REGISTRY)


def get(name: str) -> Exercise:
    if name not in _REGISTRY:
        raise KeyError(
            f"no exercise named {name!r} in the installed rlcourse. If this notebook is your copy of "
            f"a lesson that has changed since you made it, `rlcourse start --refresh NN` writes "
            f"the current version beside it; if the course folder is newer than the package, "
            f"run  pip install -e .  there. Available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


# question name -> the first answer checked in this run (its repr): the one that is graded
_FIRST_ANSWERS: dict[str, str] = {}


def check(name: str, fn: Callable | object, verbose: bool = True) -> bool:
    """Run ``fn`` on every case of exercise ``name``; print each verdict; True if all pass.

    ``fn`` may also be a plain value, the reader's answer, compared with the reference's; ``None``
    means "not answered yet" (shown as ``[todo]``). A function that calls the code it was meant
    to replace fails (``[reference]``); a question counts its first answer in a run.
    """
    exercise = get(name)
    cases = exercise.cases()
    is_answer = not callable(fn)
    question = all(not case.args and not case.kwargs for case in cases)
    passed = todo = 0
    answer = None
    for case in cases:
        if case.raises is not None:
            verdict = _check_refusal(exercise, case, fn, verbose)
            passed += verdict is True
            todo += verdict is None
            continue
        expected = _run(exercise, exercise.reference, case)
        if is_answer and fn is None:
            todo += 1
            _say(verbose, f"  [todo] {case.label}: not answered yet")
            continue
        try:
            got = _copy(fn) if is_answer else _run(exercise, fn, case)
        except NotImplementedError:
            todo += 1
            _say(verbose, f"  [todo] {case.label}: not implemented yet")
            continue
        except Exception as err:  # the reader's bug, shown rather than raised
            frame = _reader_frame(err)
            where = f" (line {frame.lineno})" if frame else ""
            why = exercise.explain_error(case, err) if exercise.explain_error else None
            _say(verbose, f"  [fail] {case.label}: raised {type(err).__name__}: {err}{where}"
                 + (f". {why}" if why else ""))
            continue
        if answer is None and got is not None:
            answer = repr(got)
        reason = exercise.compare(got, expected)
        if reason is None:
            passed += 1
            _say(verbose, f"  [pass] {case.label}")
            continue
        _say(verbose, f"  [fail] {case.label}: {_explain(exercise, case, got, expected) or reason}")
    ok = passed == len(cases)
    uses = [] if is_answer or fn is exercise.reference else _uses(exercise, fn)
    if uses:
        ok = False
        _say(verbose, f"  [reference] your function uses {', '.join(uses)}, which does this "
                      f"exercise for you: it does not count. Write it yourself.")
    summary = f"{name}: {passed}/{len(cases)} cases pass" + (", not your own code" if uses else "")
    if not ok and exercise.hint and not uses:
        summary += f". Hint: {exercise.hint}"
    _say(verbose, summary)
    graded = True
    if question and answer is not None:
        first = _FIRST_ANSWERS.setdefault(name, answer)
        if first != answer:
            graded = False
            _say(verbose, f"  (a later answer: shown, not graded. Only the first answer checked in "
                          f"a run counts, here {first}; rlcourse grade runs your notebook afresh "
                          f"and keeps its first answer too)")
    _record(name, fn, ok, passed, len(cases), todo, uses, question, graded)
    return ok


def _explain(exercise: Exercise, case: Case, got, expected) -> str | None:
    """The lesson's reason for a mismatch; None (compare's reason is shown) if it has none or
    if explaining an unexpected answer itself fails."""
    if exercise.explain is None:
        return None
    try:
        return exercise.explain(case, got, expected)
    except Exception:
        return None


def _uses(exercise: Exercise, fn) -> list[str]:
    """What ``fn`` calls that it should have written itself (see rlcourse.course.integrity)."""
    import rlcourse

    same = rlcourse.__dict__.get(exercise.name)
    same = same if callable(same) and getattr(same, "__module__", "").startswith("rlcourse") else None
    try:
        return reference_uses(fn, exercise.forbid, exercise.reference, same)
    except Exception:  # an unreadable function is not evidence of anything
        return []


def _check_refusal(exercise: Exercise, case: Case, fn, verbose: bool) -> bool | None:
    """A case whose input must be refused: True only if ``fn`` raises ``case.raises``; None
    while the reader's function is still a stub."""
    wanted = case.raises.__name__
    try:
        got = _run(exercise, fn, case)
    except NotImplementedError:
        _say(verbose, f"  [todo] {case.label}: not implemented yet")
        return None
    except case.raises:
        _say(verbose, f"  [pass] {case.label} (refused with {wanted})")
        return True
    except Exception as err:
        _say(verbose, f"  [fail] {case.label}: raised {type(err).__name__}: {err}; this input "
             f"must be refused with {wanted}")
        return False
    reason = _explain(exercise, case, got, None)
    if not reason:
        reason = f"returned a value; this input must be refused (raise {wanted})"
    _say(verbose, f"  [fail] {case.label}: {reason}")
    return False


def _reader_frame(err: BaseException):
    """The innermost traceback frame in the reader's code (not numpy's or rlcourse's), or None."""
    frames = traceback.extract_tb(err.__traceback__)
    library = (os.path.dirname(np.__file__), _PACKAGE_DIR)
    own = [f for f in frames if not f.filename.startswith(library)]
    return own[-1] if own else None


def _run(exercise: Exercise, fn: Callable, case):
    args, kwargs = _copy(case.args), _copy(case.kwargs)
    if exercise.call is not None:
        return exercise.call(fn, *args, **kwargs)
    return fn(*args, **kwargs)


def _origin(fn) -> str:
    if not callable(fn):
        return "answer"
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _record(name: str, fn, ok: bool, passed: int, total: int, todo: int, uses=(),
            question: bool = False, graded: bool = True) -> None:
    """Append this check's result to the file named by ``RLCOURSE_RESULTS``, if it is set."""
    path = os.environ.get(RESULTS_ENV)
    if not path:
        return
    entry = {"exercise": name, "passed": bool(ok), "cases_passed": passed, "cases": total,
             "todo": todo, "by": _origin(fn), "uses": list(uses), "question": bool(question),
             "graded": bool(graded)}
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")
    except OSError as err:  # grading must never break the lesson itself
        print(f"(could not record the result in {path}: {err})")


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
