"""The wallet's Postgres restarts mid-match (stopped — open transactions rolled back, every connection
cut — and, once a hand's settlement has met the closed database, started again on the same port): the
wallet reconnects by itself, that settlement applies when the database is back, every hand's exactly
once, and play never stops; scoring's archive, on the same server, holds every hand once, settled.
The stack is ``make run``'s, on a Postgres this test owns so that it can restart it."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from duelmahjong.platform.db import with_database
from duelmahjong.platform.embedded import EmbeddedPostgres
from duelmahjong.platform.stackfile import StackState
from services.wallet.audit import audit_ledger

# tests/e2e/conftest.py's fixture (conftest modules are not imported by name here).
DemoThrough = Callable[
    [StackState, int, Callable[[], Awaitable[None]]], Awaitable[tuple[dict[str, Any], list[Any]]]
]

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

ROOM = {"room_id": "pg-restart-duel", "profile": "duel", "fan_rate": 1, "fee": 2, "carry_min": 100}
HANDS = 3
DOWN_SECONDS = 3.0


@pytest.fixture(scope="module")
def postgres() -> Iterator[EmbeddedPostgres]:
    data_dir = Path(tempfile.mkdtemp(prefix="duel-pg-restart-"))
    try:
        with EmbeddedPostgres(data_dir) as server:
            yield server
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(stack_with: Any, postgres: EmbeddedPostgres) -> Iterator[StackState]:
    settings = {"DATABASE_URL": postgres.url, "MATCHMAKING_ROOMS": json.dumps([ROOM])}
    with stack_with("pg-restart", settings) as state:
        yield state


async def test_a_database_restart_mid_match_delays_settlements_and_applies_each_once(
    stack: StackState, postgres: EmbeddedPostgres, demo_through: DemoThrough
) -> None:
    wallet_log = Path(stack.logs_dir) / "wallet.log"

    async def restart_the_database() -> None:
        """Down until a settlement has met the closed database (the hand ended meanwhile), then up."""
        port = postgres.port
        await asyncio.to_thread(postgres.stop)
        deadline = asyncio.get_running_loop().time() + 60
        while "database unavailable; the event will be redelivered" not in wallet_log.read_text():
            assert asyncio.get_running_loop().time() < deadline, "no settlement was tried while it was down"
            await asyncio.sleep(0.2)
        await asyncio.sleep(DOWN_SECONDS)
        await asyncio.to_thread(postgres.start, port)

    summary, _ = await demo_through(stack, HANDS, restart_the_database)
    assert len(summary["hands"]) == HANDS
    assert summary["ledger_total_before"] == summary["ledger_total_after"]
    pool = await asyncpg.create_pool(with_database(stack.database_url, "wallet"), min_size=1, max_size=1)
    try:
        assert await audit_ledger(pool) == []
        keys = [row["idempotency_key"] for row in await pool.fetch(
            "SELECT idempotency_key FROM wallet.transactions WHERE idempotency_key LIKE 'hand:%' "
            "AND status = 'applied'"
        )]  # fmt: skip
        assert len(keys) == HANDS == len(set(keys))  # one transaction per hand: each settled once
        assert await pool.fetchval("SELECT count(*) FROM wallet.holds WHERE open") == 0
    finally:
        await pool.close()
    # Scoring's archive is on the same server: every hand is on the record once, settled, all the same.
    archive = await asyncpg.connect(with_database(stack.database_url, "scoring"))
    try:
        for _ in range(100):
            hands = await archive.fetch(
                "SELECT hand_id, (SELECT count(*) FROM archive.transactions t WHERE t.hand_id = h.hand_id "
                "AND t.hand_transaction) AS settled FROM archive.hands h"
            )
            if len(hands) == HANDS and all(row["settled"] == 1 for row in hands):
                break
            await asyncio.sleep(0.2)
        assert sorted(f"hand:{row['hand_id']}" for row in hands) == sorted(keys)
        assert all(row["settled"] == 1 for row in hands), [dict(row) for row in hands]
    finally:
        await archive.close()
