"""Tables outlive the process hosting them. The whole stack with two table servers; tables are live
mid-hand on one of them (``table``) when it is

- SIGKILLed: the other server adopts every table from its write-ahead log within seconds (default
  lease), and every seat's client follows its table there by itself;
- paused (SIGSTOP) for longer than its lease, then resumed: the other server adopts its tables, and
  the resumed server changes nothing and sends its seats nothing more (fencing) — their clients
  follow the tables;
- SIGTERMed: it hands each table, mid-hand, to the other server and exits within seconds.

Every time, every hand ends: each seat's stream is continuous (its sequence numbers go up by one,
none twice), each hand settled exactly once, the ledger total is unchanged and the audit clean."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from duelmahjong.cli.demo import ledger_balances
from duelmahjong.client.play import MatchPlan, PlayOutcome
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stackfile import ServiceEndpoint, StackState
from duelmahjong.v1 import table_pb2
from services.wallet.audit import audit_ledger

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

ROOM = {"room_id": "adopt-duel", "profile": "duel", "fan_rate": 1, "fee": 2, "carry_min": 100}
HANDS = 3  # the fault lands in the first; each table plays on through the others
ADOPTED_WITHIN = 10.0  # seconds from the kill, with the default TABLE_LEASE_SECONDS
SETTINGS = {
    "TABLE_SERVERS": "2",
    "MATCHMAKING_ROOMS": json.dumps([ROOM]),
    "ANNOUNCE_SECONDS": "0.3",
    "MATCHMAKING_SERVER_TTL_SECONDS": "1",
}
PAUSED_LEASE = 2.0
Fault = Callable[[ServiceEndpoint, ServiceEndpoint], Awaitable[None]]


@pytest.fixture
def stack(stack_with: Any, request: pytest.FixtureRequest) -> Iterator[StackState]:
    """A stack of its own for each test (a fault leaves one server dead or drained); the test's
    ``stack_settings`` mark adds to SETTINGS."""
    mark = request.node.get_closest_marker("stack_settings")
    extra = mark.args[0] if mark is not None else {}
    with stack_with(request.node.name[:20], {**SETTINGS, **extra}) as state:
        yield state


class Seat:
    def __init__(self, stack: StackState, name: str) -> None:
        self.client = DuelClient(
            tls=stack.client_tls(),
            wallet=stack.services["wallet"].grpc,
            matchmaking=stack.target("matchmaking"),
        )
        self.name = name
        self.received: list[table_pb2.PlayResponse] = []

    def sequences(self) -> list[int]:
        numbers = []
        for message in self.received:
            for response in message.batch.responses if message.HasField("batch") else [message]:
                if response.HasField("event"):
                    numbers.append(response.event.sequence)
        return numbers


async def _match_through_a_fault(stack: StackState, tables: int, fault: Fault) -> list[PlayOutcome]:
    """``tables`` tables opened on ``table``, played HANDS hands each; ``fault(table, other)`` runs
    once every seat has been dealt. Checks everything the module promises; the seats' outcomes."""
    table, other = stack.services["table"], stack.services["table-2"]
    ledger_before = await ledger_balances(stack.database_url)
    assert ledger_before is not None
    os.kill(other.pid, signal.SIGSTOP)  # every new table goes to `table`
    await asyncio.sleep(2.0)  # matchmaking stops offering table-2 (TTL 1 s)
    seats = [Seat(stack, f"p{n}") for n in range(2 * tables)]
    for seat in seats:
        await seat.client.login(seat.name)
    readies = await asyncio.gather(*(seat.client.find_table(ROOM["room_id"], 300) for seat in seats))
    assert len({ready.table_id for ready in readies}) == tables
    assert {ready.address for ready in readies} == {table.grpc}
    os.kill(other.pid, signal.SIGCONT)

    dealt = [asyncio.Event() for _ in seats]

    async def play(seat: Seat, ready: Any, dealt: asyncio.Event) -> PlayOutcome:
        def watch(message: table_pb2.PlayResponse) -> None:
            seat.received.append(message)
            dealt.set()

        return await seat.client.play(ready, BaselineBot(), MatchPlan(hands=HANDS), watch=watch)

    playing = [asyncio.create_task(play(s, r, d)) for s, r, d in zip(seats, readies, dealt, strict=True)]
    await asyncio.wait_for(asyncio.gather(*(d.wait() for d in dealt)), 60)
    await fault(table, other)
    outcomes = await asyncio.wait_for(asyncio.gather(*playing), 180)

    assert all(outcome.hands_settled == HANDS for outcome in outcomes), [o.ended_reason for o in outcomes]
    assert sum(outcome.relocations for outcome in outcomes) >= 2 * tables  # every seat followed
    for seat in seats:
        numbers = seat.sequences()
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), f"{seat.name}: {numbers}"
    ledger_after = await ledger_balances(stack.database_url)
    assert ledger_after is not None and sum(ledger_after.values()) == sum(ledger_before.values())
    pool = await asyncpg.create_pool(with_database(stack.database_url, "wallet"), min_size=1, max_size=1)
    try:
        assert await audit_ledger(pool) == []
        keys = [row["idempotency_key"] for row in await pool.fetch(
            "SELECT idempotency_key FROM wallet.transactions WHERE idempotency_key LIKE 'hand:%'"
        )]  # fmt: skip
        assert len(keys) == len(set(keys)) == tables * HANDS  # each hand settled once
    finally:
        await pool.close()
    for seat in seats:
        await seat.client.close()
    return outcomes


def _samples(url: str, name: str) -> list[tuple[dict[str, str], float]]:
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    return [
        (sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]


def _adoption_seconds(url: str) -> float | None:
    """The slowest adoption the server measured (the upper bound of its histogram's bucket)."""
    buckets = [
        (float(labels["le"]), count)
        for labels, count in _samples(url, "duel_table_adoption_latency_seconds_bucket")
    ]
    total = max((count for _, count in buckets), default=0)
    return min(bound for bound, count in buckets if count >= total) if total else None


def _adopted(url: str, how: str) -> float:
    return sum(v for labels, v in _samples(url, "duel_table_tables_adopted_total") if labels["how"] == how)


async def test_sixteen_tables_of_a_killed_server_finish_their_hands_on_the_other(stack: StackState) -> None:
    killed_at = 0.0

    async def kill(table: ServiceEndpoint, other: ServiceEndpoint) -> None:
        nonlocal killed_at
        killed_at = time.monotonic()
        os.kill(table.pid, signal.SIGKILL)

    await _match_through_a_fault(stack, 16, kill)
    finished_after = time.monotonic() - killed_at
    other = stack.services["table-2"].metrics
    assert _adopted(other, "orphan") == 16
    adoption = _adoption_seconds(other)
    assert adoption is not None and adoption <= ADOPTED_WITHIN, (adoption, finished_after)


@pytest.mark.stack_settings({"TABLE_LEASE_SECONDS": str(PAUSED_LEASE)})
async def test_a_paused_server_that_lost_its_lease_changes_nothing_when_it_resumes(stack: StackState) -> None:
    async def pause(table: ServiceEndpoint, other: ServiceEndpoint) -> None:
        os.kill(table.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while _adopted(other.metrics, "orphan") < 4:  # lease lost, the other server serves them
            assert time.monotonic() < deadline, "the paused server's tables were not adopted"
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)  # the adopter writes on each table's log
        os.kill(table.pid, signal.SIGCONT)

    await _match_through_a_fault(stack, 4, pause)
    assert _alive(stack.services["table"].pid)  # it lives on, serving none of these tables
    lines = (Path(stack.logs_dir) / "table.log").read_text()
    assert "table taken by another server" in lines or "table written by another server" in lines


async def test_a_draining_server_hands_its_tables_over_mid_hand_and_exits_within_seconds(
    stack: StackState,
) -> None:
    exited_after = -1.0

    async def drain(table: ServiceEndpoint, other: ServiceEndpoint) -> None:
        nonlocal exited_after
        started = time.monotonic()
        os.kill(table.pid, signal.SIGTERM)
        while _alive(table.pid):
            assert time.monotonic() - started < 30, "the draining server did not exit"
            await asyncio.sleep(0.1)
        exited_after = time.monotonic() - started

    await _match_through_a_fault(stack, 4, drain)
    assert 0 <= exited_after < 10, exited_after
    # Every table of the drained server went over (none kept for the old drain to finish). The counter
    # counts each time the adopter began serving a handed-over table.
    assert _adopted(stack.services["table-2"].metrics, "handed_over") >= 4


def _alive(pid: int) -> bool:
    """False once the process has exited (a zombie counts as exited: the stack reaps it later)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False
