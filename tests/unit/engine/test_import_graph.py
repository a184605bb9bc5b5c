"""The engine's modules import each other without a cycle, counting every import: module level,
inside functions and under ``TYPE_CHECKING``. A cycle would mean two modules that can only be
understood (and loaded) together."""

from __future__ import annotations

import ast
from pathlib import Path

import duelmahjong.engine

PACKAGE = "duelmahjong.engine"
ROOT = Path(duelmahjong.engine.__file__).parent


def _modules() -> dict[str, Path]:
    return {f"{PACKAGE}.{path.stem}": path for path in ROOT.glob("*.py") if path.stem != "__init__"}


def _imports(source: str, known: set[str]) -> set[str]:
    """The ``known`` modules that ``source`` imports anywhere in its text."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from duelmahjong.engine import flow`` names a module; ``from ….flow import x`` its module.
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: _imports(path.read_text(encoding="utf-8"), known) - {name} for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as the modules along it (first = last), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph[node]):
            cycle = visit(target)
            if cycle:
                return cycle
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return None


def test_the_engine_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 10 and graph[f"{PACKAGE}.table"], "the graph must see the engine's modules"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_a_cycle_is_found() -> None:
    """The check itself: a cycle through a function-level import is reported, a tree is not."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    known = {f"{PACKAGE}.table", f"{PACKAGE}.flow"}
    source = (
        "if TYPE_CHECKING:\n    import duelmahjong.engine.flow\n"
        "def f():\n    from duelmahjong.engine import table\n"
    )
    assert _imports(source, known) == known
