"""Is a reader's answer their own work? Find the code it calls that it was meant to replace.

An exercise asks the reader to write, say, a central-difference gradient; ``rlcourse`` has one
(``rc.numerical_grad``). A function that calls it, directly or through a helper, a lambda or
``functools.partial``, passes every case without being the reader's work. :func:`reference_uses`
reads the function's source (the cell it was defined in) and resolves every name and attribute
chain in it (``rc.numerical_grad``, ``np.linalg.solve``, ``rc.exercises.get(...).reference``)
against the objects an exercise forbids. What is always forbidden:

- the exercise's registered reference, and ``rlcourse``'s public function of the same name;
- anything from the grading layer (``rlcourse.course``: ``exercises.get``, ``exercises.check``,
  the bank), and attributes named ``reference`` or ``_REGISTRY``;
- a function from ``rlcourse`` handed in as the answer itself (``my_fn = rc.softmax``); a
  numpy function handed in is left to the cases (``np.cumsum`` may well be a right answer).

An exercise adds its own list (``register(..., forbid=[rc.Adam, "hessian", np.linalg.solve])``):
objects match by identity once resolved, strings match attribute names (``loss.hessian``) and
global names. User helpers the function calls are read too, recursively.

This is a static check of what the source names, not a sandbox: code that builds a name at run
time (``getattr(rc, "numer" + "ical_grad")``) or edits the checker is not caught. The threat
model is in the README (instructors' section).
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import textwrap
import types

__all__ = ["reference_uses", "always_forbidden_attributes"]

# attribute names that only reach the grading machinery
always_forbidden_attributes = ("reference", "_REGISTRY")
_GRADING_MODULES = ("rlcourse.course",)
_MISSING = object()
_MAX_DEPTH = 6  # helpers calling helpers: deep enough for any honest answer


def _module_of(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    return getattr(obj, "__module__", None) or ""


def _is_grading(obj) -> bool:
    return _module_of(obj).startswith(_GRADING_MODULES)


def _is_library(obj) -> bool:
    module = _module_of(obj)
    return module == "rlcourse" or module.startswith(("rlcourse.", "numpy", "builtins"))


def _describe(obj) -> str:
    module = _module_of(obj)
    if isinstance(obj, types.ModuleType):
        return "rc." + module.split(".", 1)[1] if module.startswith("rlcourse.") else module
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    if module.startswith("rlcourse"):
        return f"rc.{name}" if not module.startswith(_GRADING_MODULES) else \
            f"rc.{module.split('.', 1)[1]}.{name}"
    if module.startswith("numpy"):
        public = [part for part in module.split(".")[1:] if not part.startswith("_")]
        return "np." + "".join(part + "." for part in public) + name
    return f"{module}.{name}" if module else name


def _unwrap(obj, found: list, visit) -> object:
    """Peel functools.partial, decorators (__wrapped__) and bound methods off ``obj``."""
    for _ in range(20):
        if isinstance(obj, functools.partial):
            for value in (*obj.args, *obj.keywords.values()):
                if callable(value):
                    visit(value)
            obj = obj.func
        elif inspect.ismethod(obj):
            obj = obj.__func__
        elif getattr(obj, "__wrapped__", None) is not None and not isinstance(obj, type):
            obj = obj.__wrapped__
        else:
            break
    return obj


def _function_node(fn) -> ast.AST | None:
    """The AST of ``fn``'s definition (the def, or the lambda itself), or None without source."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda cut out of a longer expression
        try:
            tree = ast.parse("(" + source.strip().rstrip(",") + ")")
        except SyntaxError:
            return None
    code = fn.__code__
    if code.co_name == "<lambda>":
        params = list(code.co_varnames[:code.co_argcount])
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                   and [a.arg for a in n.args.args] == params]
        return lambdas[0] if len(lambdas) == 1 else (tree if not lambdas else ast.Module(
            body=[ast.Expr(n) for n in lambdas], type_ignores=[]))
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == code.co_name]
    return defs[0] if defs else tree


def _local_names(node: ast.AST) -> set[str]:
    """Arguments and assigned names anywhere in ``node`` (they shadow globals)."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            names.add(n.name)
    return names


def reference_uses(fn, forbidden=(), reference=None, same_name=None) -> list[str]:
    """What ``fn`` uses that it should not: a list of descriptions (empty: its own work).

    ``forbidden``: objects (matched by identity) and strings (attribute or global names);
    ``reference``: the exercise's reference; ``same_name``: ``rlcourse``'s function of the
    exercise's name, if any. Functions from the reader's own code that ``fn`` calls are read too.
    """
    objects = [o for o in forbidden if not isinstance(o, str)]
    if reference is not None:
        objects.append(reference)
    if same_name is not None:
        objects.append(same_name)
    names = {o for o in forbidden if isinstance(o, str)} | set(always_forbidden_attributes)
    object_names = {getattr(o, "__name__", None) for o in objects} - {None, "<lambda>"}
    object_names.add("exercises")
    found: list[str] = []
    seen: set[int] = set()

    def flag(text: str) -> None:
        if text not in found:
            found.append(text)

    def check_object(obj) -> bool:
        """Flag a resolved object if forbidden; True if flagged."""
        if reference is not None and obj is reference:
            flag("the exercise's reference")
            return True
        if any(obj is o for o in objects):
            flag(_describe(obj))
            return True
        if _is_grading(obj):
            flag(_describe(obj) + " (the grader)")
            return True
        return False

    def visit_callable(obj, depth: int = 0) -> None:
        obj = _unwrap(obj, found, lambda inner: visit_callable(inner, depth + 1))
        if id(obj) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(obj))
        if check_object(obj):
            return
        if depth == 0 and _module_of(obj).startswith("rlcourse") and callable(obj):
            flag(_describe(obj))  # rlcourse's own function handed in as the answer (an alias)
            return
        if isinstance(obj, types.FunctionType):
            if not _is_library(obj):
                visit_function(obj, depth)
        elif not isinstance(obj, type) and callable(obj) and not _is_library(type(obj)):
            call = inspect.getattr_static(type(obj), "__call__", None)
            if isinstance(call, types.FunctionType):
                visit_function(call, depth)

    def resolve(node, scope: dict, local: set):
        """The object an expression of names and attributes denotes, or _MISSING."""
        if isinstance(node, ast.Name):
            if node.id in local:
                return _MISSING
            if node.id in scope:
                return scope[node.id]
            return getattr(builtins, node.id, _MISSING)
        if isinstance(node, ast.Attribute):
            base = resolve(node.value, scope, local)
            if base is _MISSING or not isinstance(base, (types.ModuleType, type)):
                return _MISSING  # never evaluate attributes of instances: no side effects
            return getattr(base, node.attr, _MISSING)
        return _MISSING

    def visit_function(func: types.FunctionType, depth: int) -> None:
        scope = dict(func.__globals__)
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    scope[name] = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
        node = _function_node(func)
        if node is None:
            visit_code(func.__code__, scope, depth)
            return
        local = _local_names(node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr in names:
                flag(f".{sub.attr}")
            if isinstance(sub, ast.Name) and sub.id in names and sub.id not in local:
                named = resolve(sub, scope, local)
                if not (isinstance(named, types.FunctionType) and not _is_library(named)):
                    flag(sub.id)  # (a helper of the reader's own that happens to share the
                    #                name is not flagged; what it calls is read below)
            if isinstance(sub, (ast.Name, ast.Attribute)):
                obj = resolve(sub, scope, local)
                if obj is _MISSING:
                    continue
                if check_object(obj):
                    continue
                if callable(obj) and not _is_library(obj) and not isinstance(obj, type):
                    visit_callable(obj, depth + 1)

    def visit_code(code: types.CodeType, scope: dict, depth: int) -> None:
        """Without source: the names the bytecode loads (globals and attributes alike)."""
        for name in code.co_names:
            if name in names or name in object_names:
                flag(name)
            obj = scope.get(name, _MISSING)
            if obj is not _MISSING and not check_object(obj) and callable(obj) \
                    and not _is_library(obj) and not isinstance(obj, type):
                visit_callable(obj, depth + 1)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit_code(const, scope, depth)

    visit_callable(fn)
    return found
