"""No import cycle among the modules of ``libs/`` and ``services/``.

Every import counts, wherever it is written: at module level, under ``if TYPE_CHECKING:``, inside a
function, and ``importlib.import_module("...")`` with a literal name. An import moved into a function
or behind a string still ties the two modules together; it only hides the tie from the reader.

The packages whose cycles fail the test are :data:`CHECKED`; the graph is built over the whole tree, so
a cycle through a module outside them still counts when it passes through one of theirs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TREES = ("libs/duelmahjong", "services")  # every module under them is read (libs/ is a sys.path root)
GENERATED = ("duelmahjong.v1",)  # generated from proto/ (`make gen`): left out
# The packages a cycle must not pass through; services/ joins once the table service is freed of its
# core <-> live cycle.
CHECKED = ("duelmahjong.rules", "duelmahjong.engine")

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path) -> str:
    """``libs/duelmahjong/rules/hand.py`` -> ``duelmahjong.rules.hand``; a package is its ``__init__``."""
    base = root / "libs" if path.is_relative_to(root / "libs") else root
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, trees: Iterable[str]) -> dict[str, Path]:
    """Every module of ``trees`` (directories under ``root``) by name, generated code left out."""
    found = {}
    for tree in trees:
        for path in sorted((root / tree).rglob("*.py")):
            name = module_name(path, root)
            if not any(name == skip or name.startswith(skip + ".") for skip in GENERATED):
                found[name] = path
    return found


def _is_import_module(node: ast.AST) -> bool:
    """``importlib.import_module("literal")`` or ``import_module("literal")``."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = node.args[0]
    return name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str)


def imports_of(path: Path, name: str, found: dict[str, Path]) -> set[str]:
    """The modules of ``found`` that the module ``name`` (at ``path``) imports, wherever it does.
    ``from a import b`` names a.b when that is a module, else a."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in found else base)
        elif _is_import_module(node):
            targets.add(node.args[0].value)  # type: ignore[attr-defined]
    return {target for target in targets if target in found and target != name}


def import_graph(found: dict[str, Path]) -> Graph:
    """module -> the modules of ``found`` it imports."""
    return {name: imports_of(path, name, found) for name, path in found.items()}


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _in_checked(name: str) -> bool:
    return any(name == package or name.startswith(package + ".") for package in CHECKED)


def test_no_import_cycle_in_the_checked_packages() -> None:
    found = modules(ROOT, TREES)
    assert any(_in_checked(name) for name in found), f"no module of {CHECKED} found under {TREES}"
    checked = [cycle for cycle in cycles(import_graph(found)) if any(map(_in_checked, cycle))]
    assert checked == [], "import cycles: " + "; ".join(" <-> ".join(cycle) for cycle in checked)


@pytest.mark.parametrize(
    "second",
    [
        "from pkg import first\n",  # module level
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.first import X\n",
        "def f():\n    from . import first\n",  # in a function, relative
        "import importlib\ndef f():\n    return importlib.import_module('pkg.first')\n",
    ],
)
def test_a_cycle_is_seen_however_the_import_is_written(tmp_path: Path, second: str) -> None:
    files = {"__init__.py": "", "first.py": "from pkg.second import Y\nX = 1\n", "second.py": second}
    for file, text in files.items():
        (tmp_path / "libs" / "pkg").mkdir(parents=True, exist_ok=True)
        (tmp_path / "libs" / "pkg" / file).write_text(text, "utf-8")
    graph = import_graph(modules(tmp_path, ["libs/pkg"]))
    assert cycles(graph) == [["pkg.first", "pkg.second"]]


def test_an_acyclic_graph_has_no_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) == []
