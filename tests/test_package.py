"""The package's shape (docs/architecture.md): layers whose imports point down, no cycles, the
course layer never imported by the library, modules not shadowed, one explicit top level."""

import ast
import builtins
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rlcourse as rc

ROOT = Path(rc.__file__).parent
LAYERS = {"core": 0, "envs": 0, "tabular": 1, "algos": 1, "posttrain": 1, "search": 1, "viz": 1,
          "course": 2}
# what each folder may import besides itself (building blocks import building blocks only)
ALLOWED = {"core": {"core"}, "envs": {"core", "envs"}, "viz": {"core", "envs", "viz"},
           "tabular": {"core", "envs", "tabular"}, "algos": {"core", "envs", "algos"},
           "posttrain": {"core", "envs", "posttrain"}, "search": {"core", "envs", "search"}}


def modules() -> list[str]:
    """Every module of the package (``__main__`` left out: importing it runs the command)."""
    return sorted(m.name for m in pkgutil.walk_packages([str(ROOT)], "rlcourse.")
                  if m.name != "rlcourse.__main__")


def module_path(name: str) -> Path:
    parts = name.split(".")[1:]
    package = ROOT.joinpath(*parts) / "__init__.py"
    return package if package.exists() else ROOT.joinpath(*parts[:-1]) / f"{parts[-1]}.py"


def imports_of(name: str) -> set[str]:
    """The rlcourse modules ``name`` imports, anywhere in its code (inside functions too)."""
    path = module_path(name)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found |= {c for c in candidates if c.startswith("rlcourse.") and c in set(modules())}
    return found - {name}


def folder(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or parts[1] in LAYERS else None


def test_every_module_is_in_a_layer():
    stray = [m for m in modules() if folder(m) is None]
    assert not stray, f"modules outside the layer folders: {stray}"


def test_imports_point_down_and_the_library_never_imports_the_course_layer():
    problems = []
    for name in modules():
        own = folder(name)
        if own in (None, "course"):
            continue
        for target in imports_of(name):
            other = folder(target)
            if other is not None and other not in ALLOWED[own]:
                problems.append(f"{name} imports {target}")
    assert not problems, "\n".join(problems)


def test_there_are_no_import_cycles():
    graph = {name: imports_of(name) for name in modules()}
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, ()):
            # a package's __init__ importing its own submodules is not a cycle through them
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path + [nxt]))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])


def test_the_import_graph_checker_catches_a_planted_violation(monkeypatch):
    real = imports_of

    def with_bad_edge(name):
        found = real(name)
        return found | {"rlcourse.course.exercises"} if name == "rlcourse.core.returns" else found

    monkeypatch.setattr(sys.modules[__name__], "imports_of", with_bad_edge)
    with pytest.raises(AssertionError, match="core.returns imports rlcourse.course.exercises"):
        test_imports_point_down_and_the_library_never_imports_the_course_layer()


def test_import_rlcourse_does_not_load_the_course_layer():
    code = "import sys, rlcourse; print(any(m.startswith('rlcourse.course') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert rc.exercises.__name__ == "rlcourse.course.exercises"


def test_every_module_defines_all():
    missing = [name for name in modules() if not hasattr(importlib.import_module(name), "__all__")
               and not module_path(name).name == "__init__.py"]
    assert not missing, f"modules without __all__: {missing}"


def test_no_submodule_is_shadowed():
    """``pkg.x`` is the submodule ``pkg.x`` wherever one exists (rlcourse.algos.ppo is the
    module, not the function ``ppo``)."""
    shadowed = []
    for name in modules():
        parent, _, child = name.rpartition(".")
        value = getattr(importlib.import_module(parent), child, None)
        if value is not None and getattr(value, "__name__", None) != name:
            shadowed.append(f"{parent}.{child} is {type(value).__name__}")
    assert not shadowed, shadowed
    assert rc.algos.ppo.__doc__.startswith("Proximal policy optimisation")


def test_top_level_all_is_every_module_all_without_builtin_names():
    names = set()
    for name in modules():
        module = importlib.import_module(name)
        if module_path(name).name != "__init__.py" and folder(name) != "course" \
                and not name.rsplit(".", 1)[1].startswith("_"):
            names |= set(module.__all__)
    builtin = {n for n in names if hasattr(builtins, n)}
    assert builtin == {"sum", "abs"}
    assert set(rc.__all__) == names - builtin
    assert len(rc.__all__) == len(set(rc.__all__))
    for n in rc.__all__:
        assert getattr(rc, n) is not None


def test_star_import_shadows_no_builtin():
    namespace: dict = {}
    exec("from rlcourse import *", namespace)
    assert not [n for n in namespace if n != "__builtins__" and hasattr(builtins, n)]
