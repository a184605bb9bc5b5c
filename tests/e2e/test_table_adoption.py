"""Tables outlive the process hosting them: the whole stack with two table servers; sixteen tables are
live mid-hand on one of them when it is SIGKILLed. The other server adopts every table from its
write-ahead log within seconds (default lease), every seat's client follows its table there by
itself, and every hand ends: each seat's stream is continuous (no gap in its sequence numbers), each
hand settled exactly once, the ledger total is unchanged and the audit clean."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from duelmahjong.cli.demo import ledger_balances
from duelmahjong.client.play import MatchPlan, PlayOutcome
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import table_pb2
from services.wallet.audit import audit_ledger

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

ROOM = {"room_id": "adopt-duel", "profile": "duel", "fan_rate": 1, "fee": 2, "carry_min": 100}
TABLES = 16
HANDS = 3  # the kill lands in the first; each table plays on through the others
ADOPTED_WITHIN = 10.0  # seconds from the kill, with the default TABLE_LEASE_SECONDS


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    settings = {
        "TABLE_SERVERS": "2",
        "MATCHMAKING_ROOMS": json.dumps([ROOM]),
        "ANNOUNCE_SECONDS": "0.3",
        "MATCHMAKING_SERVER_TTL_SECONDS": "1",
    }
    with stack_with("adopt", settings) as state:
        yield state


class Seat:
    def __init__(self, stack: StackState, name: str) -> None:
        self.client = DuelClient(
            wallet=stack.services["wallet"].grpc, matchmaking=stack.services["matchmaking"].grpc
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


async def test_sixteen_tables_of_a_killed_server_finish_their_hands_on_the_other(stack: StackState) -> None:
    table, other = stack.services["table"], stack.services["table-2"]
    ledger_before = await ledger_balances(stack.database_url)
    assert ledger_before is not None
    os.kill(other.pid, signal.SIGSTOP)  # every new table goes to `table`
    await asyncio.sleep(2.0)  # matchmaking stops offering table-2 (TTL 1 s)
    seats = [Seat(stack, f"p{n}") for n in range(2 * TABLES)]
    for seat in seats:
        await seat.client.login(seat.name)
    readies = await asyncio.gather(*(seat.client.find_table(ROOM["room_id"], 300) for seat in seats))
    tables = {ready.table_id for ready in readies}
    assert len(tables) == TABLES
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
    killed_at = time.monotonic()
    os.kill(table.pid, signal.SIGKILL)
    outcomes = await asyncio.wait_for(asyncio.gather(*playing), 180)
    finished_after = time.monotonic() - killed_at

    assert all(outcome.hands_settled == HANDS for outcome in outcomes), [o.ended_reason for o in outcomes]
    assert sum(outcome.relocations for outcome in outcomes) >= 2 * TABLES  # every seat followed
    for seat in seats:
        numbers = seat.sequences()
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), f"{seat.name}: a gap"
    adoption = _adoption_seconds(other.metrics)
    print(f"adoption <= {adoption}s; all hands ended {finished_after:.1f}s after the kill")
    assert adoption is not None and adoption <= ADOPTED_WITHIN, (adoption, finished_after)

    ledger_after = await ledger_balances(stack.database_url)
    assert ledger_after is not None and sum(ledger_after.values()) == sum(ledger_before.values())
    pool = await asyncpg.create_pool(with_database(stack.database_url, "wallet"), min_size=1, max_size=1)
    try:
        assert await audit_ledger(pool) == []
        keys = [row["idempotency_key"] for row in await pool.fetch(
            "SELECT idempotency_key FROM wallet.transactions WHERE idempotency_key LIKE 'hand:%'"
        )]  # fmt: skip
        assert len(keys) == len(set(keys)) == TABLES * HANDS  # each hand settled once
    finally:
        await pool.close()
    for seat in seats:
        await seat.client.close()


def _adoption_seconds(url: str) -> float | None:
    """The slowest adoption the surviving server measured (its histogram's upper bound)."""
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    buckets = []
    for family in text_string_to_metric_families(text):
        if family.name == "duel_table_adoption_latency_seconds":
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    buckets.append((float(sample.labels["le"]), sample.value))
    if not buckets:
        return None
    total = max(count for _, count in buckets)
    return min(bound for bound, count in buckets if count >= total) if total else None
