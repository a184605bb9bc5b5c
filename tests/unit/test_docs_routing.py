"""The docs say which service consumes which event as the code does.

What the code consumes is read from ``services/<name>/*.py`` with ``ast``: the subject of every call that
subscribes or declares a consumer (:data:`CONSUMING_CALLS`), written as a constant of
``duelmahjong.platform.subjects``, a call of ``subjects.table_log_subject``, or a local name assigned one
of those in the same function. What the docs say is read from the bus lines of the diagrams in
``README.md`` and ``docs/architecture.md`` (``table.hand_ended / … ──► scoring``) and from the events
table of ``docs/protocol.md`` (``producer → consumers``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from duelmahjong.platform import subjects

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("matchmaking", "scoring", "table", "wallet")
TABLE_LOG = f"{subjects.TABLE_LOG_PREFIX}.<table_id>"  # every table's write-ahead log subject
KNOWN = {*subjects.SUBJECT_OF_EVENT.values(), TABLE_LOG}
EVENT_OF_TABLE_LOG = "TableEventAppended"
# Calls whose subject a service reads: NATS subscriptions, durable consumers (the platform's
# ConsumerSpec, nats' ConsumerConfig), direct gets of stored messages (platform.direct_get's
# read_batch) and the wallet's declared list of consumed events (Source).
CONSUMING_CALLS = frozenset({"subscribe", "ConsumerSpec", "ConsumerConfig", "read_batch", "Source"})
# Consuming calls whose subject is not written at the call, with where it comes from instead.
INDIRECT = {
    ("wallet", "sources.py", "ConsumerSpec"): "each Source of services/wallet/sources.py SOURCES",
}

Routes = dict[str, set[str]]  # subject -> the services consuming it


# --- the code ---------------------------------------------------------------------------------------
def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _subject_of(node: ast.expr, assigned: dict[str, list[ast.expr]]) -> set[str]:
    """The subjects an argument expression stands for (none if it is no subject)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "subjects":
        value = getattr(subjects, node.attr, None)
        return {value} if isinstance(value, str) and value in KNOWN else set()
    if isinstance(node, ast.Call) and _call_name(node) == "table_log_subject":
        return {TABLE_LOG}
    if isinstance(node, ast.Name):
        return {s for value in assigned.get(node.id, ()) for s in _subject_of(value, {})}
    return set()


def _assignments(scope: ast.AST) -> dict[str, list[ast.expr]]:
    """name -> the values assigned to it anywhere in ``scope``."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
    return assigned


def _calls_with_scope(tree: ast.Module) -> list[tuple[ast.Call, ast.AST]]:
    """Every call, with the innermost function holding it (the module for a module-level call)."""
    found: list[tuple[ast.Call, ast.AST]] = []

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else scope
            if isinstance(child, ast.Call):
                found.append((child, inner))
            visit(child, inner)

    visit(tree, tree)
    return found


def consumed_by_code(root: Path) -> tuple[Routes, list[str]]:
    """subject -> consuming services, and the consuming calls whose subject could not be read."""
    routes: Routes = {}
    unread: list[str] = []
    for service in SERVICES:
        for path in sorted((root / "services" / service).glob("*.py")):
            tree = ast.parse(path.read_text("utf-8"), str(path))
            for call, scope in _calls_with_scope(tree):
                name = _call_name(call)
                if name not in CONSUMING_CALLS:
                    continue
                assigned = _assignments(scope)
                found = {
                    subject
                    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]
                    for subject in _subject_of(argument, assigned)
                }
                for subject in found:
                    routes.setdefault(subject, set()).add(service)
                if not found and (service, path.name, name) not in INDIRECT:
                    unread.append(f"services/{service}/{path.name}:{call.lineno} {name}")
    return routes, unread


# --- the docs ---------------------------------------------------------------------------------------
_PRODUCERS = "|".join(sorted({subject.split(".")[1] for subject in KNOWN}))
_BUS_LINE = re.compile(
    rf"\b(?P<producer>{_PRODUCERS})\.(?P<events>(?:<table_id>|[a-z_]+)(?:\s*/\s*[a-z_]+)*)"
    r"[^─►]*─+►\s*(?P<consumer>[a-z]+)"
)


def _fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def routes_of_diagrams(text: str) -> Routes:
    """subject -> consumers from the diagrams' bus lines ``producer.a / b ──► consumer``."""
    routes: Routes = {}
    for block in _fenced_blocks(text):
        for line in block.splitlines():
            for match in _BUS_LINE.finditer(line):
                producer = match["producer"]
                for event in re.split(r"\s*/\s*", match["events"]):
                    routes.setdefault(f"duel.{producer}.{event}", set()).add(match["consumer"])
    return routes


def routes_of_event_table(text: str) -> Routes:
    """subject -> consumers from the rows ``| `Event` … | producer → consumers | key |`` of the events
    table: the services named after the arrow (none: nobody consumes it)."""
    subject_of = {**subjects.SUBJECT_OF_EVENT, EVENT_OF_TABLE_LOG: TABLE_LOG}
    routes: Routes = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = re.match(r"`(\w+)`", cells[0]) if len(cells) >= 3 else None
        if name is None or name[1] not in subject_of or "→" not in cells[1]:
            continue
        after = cells[1].rsplit("→", 1)[1]
        routes[subject_of[name[1]]] = set(re.findall(r"\b[a-z]+\b", after)) & set(SERVICES)
    return routes


# --- the comparisons --------------------------------------------------------------------------------
def _differences(said: Routes, done: Routes) -> list[str]:
    return [
        f"{subject}: the docs say {sorted(said.get(subject, ()))}, the code {sorted(done.get(subject, ()))}"
        for subject in sorted(said.keys() | done.keys())
        if said.get(subject, set()) != done.get(subject, set())
    ]


@pytest.fixture(scope="module")
def code_routes() -> Routes:
    routes, unread = consumed_by_code(ROOT)
    assert unread == [], f"consuming calls whose subject the test cannot read: {unread}"
    assert set().union(*routes.values()) == set(SERVICES), f"a service consumes nothing? {routes}"
    return routes


@pytest.mark.parametrize("doc", ["README.md", "docs/architecture.md"])
def test_the_diagrams_route_every_consumed_event_as_the_code_does(doc: str, code_routes: Routes) -> None:
    said = routes_of_diagrams((ROOT / doc).read_text("utf-8"))
    assert said.keys() <= KNOWN, f"{doc} names subjects that do not exist: {sorted(said.keys() - KNOWN)}"
    assert _differences(said, code_routes) == []


def test_the_protocol_events_table_names_each_events_consumers(code_routes: Routes) -> None:
    said = routes_of_event_table((ROOT / "docs/protocol.md").read_text("utf-8"))
    assert said.keys() == KNOWN, f"events missing from the table: {sorted(KNOWN - said.keys())}"
    assert _differences(said, code_routes) == []


def test_the_readers_see_what_they_are_meant_to() -> None:
    diagram = """```
   table.hand_ended ──────► scoring
   │◄── table.opened / closed (and more) ──► wallet
   tablelog.<table_id> (the log) ──► scoring (replay)
   scoring.replay_rejected: nobody
```
"""
    assert routes_of_diagrams(diagram) == {
        "duel.table.hand_ended": {"scoring"},
        "duel.table.opened": {"wallet"},
        "duel.table.closed": {"wallet"},
        TABLE_LOG: {"scoring"},
    }
    table = "| `TableClosed` | table (or matchmaking) → matchmaking, wallet | `table_id` |\n"
    table += "| `ReplayRejected` | scoring → alerting (no service) | `hand_id` |\n"
    assert routes_of_event_table(table) == {
        "duel.table.closed": {"matchmaking", "wallet"},
        subjects.REPLAY_REJECTED: set(),
    }


def test_the_code_reader_follows_a_local_name(tmp_path: Path) -> None:
    service = tmp_path / "services" / "scoring"
    service.mkdir(parents=True)
    (service / "events.py").write_text(
        "async def read(js, table_id):\n"
        "    subject = subjects.table_log_subject(table_id)\n"
        "    await js.add_consumer('S', config=ConsumerConfig(filter_subject=subject))\n"
        "SPEC = ConsumerSpec(\n"
        "    stream=subjects.TABLE_STREAM.name, durable='d', filter_subject=subjects.HAND_ENDED\n"
        ")\n",
        "utf-8",
    )
    (service / "other.py").write_text("async def f(client, x):\n    await client.subscribe(x)\n", "utf-8")
    routes, unread = consumed_by_code(tmp_path)
    assert routes == {TABLE_LOG: {"scoring"}, subjects.HAND_ENDED: {"scoring"}}
    assert unread == ["services/scoring/other.py:2 subscribe"]
