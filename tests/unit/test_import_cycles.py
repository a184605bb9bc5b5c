"""No import cycle among the modules of ``libs/``, ``services/`` and ``bench/``.

Every import counts, wherever it is written: at module level, under ``if TYPE_CHECKING:``, inside a
function, and ``importlib.import_module("...")`` with a literal name. An import moved into a function
or behind a string still ties the two modules together; it only hides the tie from the reader.

Every module of :data:`TREES` is checked: any cycle among them fails the test, except one listed in
:data:`ALLOWED`, and an entry of :data:`ALLOWED` whose cycle is gone fails it too (so the list only
shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Every package of the product and its benchmarks (libs/ is a sys.path root, the others the repository).
TREES = ("libs", "services", "bench")
GENERATED = ("duelmahjong.v1",)  # generated from proto/ (`make gen`): left out
# Known cycles, each a whole strongly connected component (sorted), kept only until it is untied: a
# cycle that grows (a third module joins) is a new one and fails.
ALLOWED: tuple[tuple[str, ...], ...] = ()

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


def unexpected(found: list[list[str]], allowed: Iterable[Iterable[str]]) -> tuple[list[str], list[str]]:
    """The cycles of ``found`` not in ``allowed``, and the entries of ``allowed`` no cycle matches,
    each as ``a <-> b`` text."""
    known = {tuple(sorted(cycle)) for cycle in allowed}
    seen = {tuple(cycle) for cycle in found}
    return (
        [" <-> ".join(cycle) for cycle in sorted(seen - known)],
        [" <-> ".join(cycle) for cycle in sorted(known - seen)],
    )


def test_no_import_cycle_in_libs_services_or_bench() -> None:
    found = modules(ROOT, TREES)
    for tree in ("duelmahjong.rules", "duelmahjong.engine", "services.table", "bench.rules"):
        assert any(name.startswith(tree) for name in found), f"{tree} not found under {TREES}"
    new, gone = unexpected(cycles(import_graph(found)), ALLOWED)
    assert new == [], "import cycles: " + "; ".join(new)
    assert gone == [], "ALLOWED lists cycles that are gone (remove them): " + "; ".join(gone)


def test_a_new_cycle_fails_and_an_allowed_one_does_not(tmp_path: Path) -> None:
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "from pkg import a\n",  # a <-> b
        "c.py": "import pkg.d\n",
        "d.py": "def f():\n    import pkg.c\n",  # c <-> d
    }
    (tmp_path / "libs" / "pkg").mkdir(parents=True)
    for file, text in files.items():
        (tmp_path / "libs" / "pkg" / file).write_text(text, "utf-8")
    found = cycles(import_graph(modules(tmp_path, ["libs"])))
    assert unexpected(found, [("pkg.b", "pkg.a")]) == (["pkg.c <-> pkg.d"], [])
    assert unexpected(found, [("pkg.a", "pkg.b"), ("pkg.c", "pkg.d"), ("pkg.x", "pkg.y")]) == (
        [],
        ["pkg.x <-> pkg.y"],
    )


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
