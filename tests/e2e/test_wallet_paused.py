"""The wallet paused (SIGSTOP) mid-match until a hand has waited 5 s on it (30 s at most), on the
whole stack (real NATS and Postgres).

A hand that ends while the wallet cannot answer leaves its table SETTLING, not stuck: the table server
answers ``GetTableStatus`` at once all the while (p99 < 50 ms) and shows SETTLING; when the wallet
resumes, its answer reaches the table, both seats are shown the settlement and play goes on. The room
plays 猜大小 (T12): a won hand's guess moves in the hand's own ledger transaction, never in one apart.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from duelmahjong.platform import auth, subjects
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import events_pb2, play_pb2, table_pb2, table_pb2_grpc
from tests.e2e.conftest import StackWith

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

PAUSE_SECONDS = 30.0
SETTLING_SECONDS = 5.0  # a hand waits this long on the paused wallet, served all the while
SECRET = secrets.token_urlsafe(48)
ROOM = {
    "room_id": "paused-duel",
    "profile": "duel",
    "fan_rate": 2,
    "fee": 1,
    "carry_min": 100,
    "carry_max": 600,
    "guess_enabled": True,
}


@pytest.fixture(scope="module")
def stack(stack_with: StackWith) -> Iterator[StackState]:
    # The table waits longer than the wallet is away: the settlement is late, not lost.
    settings = {
        "SETTLEMENT_WAIT_SECONDS": "120",
        "TOKEN_SECRET": SECRET,
        "MATCHMAKING_ROOMS": json.dumps([ROOM]),
    }
    with stack_with("wallet-paused", settings) as state:
        yield state


async def _table_id(stack: StackState, stored_messages: Any) -> str:
    payloads = await stored_messages(stack, f"{subjects.TABLE_LOG_PREFIX}.>")
    return events_pb2.TableEventAppended.FromString(payloads[-1]).table_id


async def test_a_paused_wallet_leaves_tables_settling_and_serving(
    stack: StackState, demo_through: Any, stored_messages: Any
) -> None:
    wallet = stack.services["wallet"].pid
    token = auth.issue_token(SECRET, player_id="e2e-probe", role=auth.Role.SERVICE)
    seen: dict[str, Any] = {"settling": 0, "latencies": []}

    async def pause_the_wallet() -> None:
        os.kill(wallet, signal.SIGSTOP)
        paused = time.monotonic()
        try:
            table_id = await _table_id(stack, stored_messages)
            async with stack.client_tls().channel(stack.services["table"].grpc) as channel:
                stub = table_pb2_grpc.TableServiceStub(channel)
                request = table_pb2.GetTableStatusRequest(table_id=table_id)
                settling_since = 0.0
                # paused until a hand has waited SETTLING for SETTLING_SECONDS, PAUSE_SECONDS at most
                while time.monotonic() - paused < PAUSE_SECONDS:
                    if settling_since and time.monotonic() - settling_since >= SETTLING_SECONDS:
                        break
                    started = time.perf_counter()
                    status = await stub.GetTableStatus(request, metadata=auth.bearer_metadata(token))
                    seen["latencies"].append(time.perf_counter() - started)
                    if status.status == table_pb2.TABLE_STATUS_SETTLING:
                        assert status.state.phase == play_pb2.HAND_PHASE_SETTLING
                        seen["settling"] += 1
                        settling_since = settling_since or time.monotonic()
                    await asyncio.sleep(0.02)
        finally:
            os.kill(wallet, signal.SIGCONT)

    summary, _ = await demo_through(stack, 2, pause_the_wallet)
    latencies = sorted(seen["latencies"])
    p99 = latencies[int(len(latencies) * 0.99)]
    print(f"GetTableStatus while the wallet was paused: {len(latencies)} calls, p99 {p99 * 1000:.1f} ms")
    assert seen["settling"] > 0, "the hand never showed SETTLING while the wallet was paused"
    assert p99 < 0.05, f"GetTableStatus p99 {p99 * 1000:.1f} ms while the wallet was paused"
    hands = summary["hands"]
    assert len(hands) == 2, "play did not go on after the wallet came back"
    for hand in hands:
        assert len(hand.get("balances", {})) == 2, f"a hand was shown without its settlement: {hand}"
    conn = await asyncpg.connect(with_database(stack.database_url, "wallet"))
    try:
        guesses = await conn.fetch(
            """SELECT t.hand_id, t.idempotency_key FROM wallet.entries e
               JOIN wallet.transactions t ON t.id = e.transaction_id WHERE e.purpose = 'guess'"""
        )
    finally:
        await conn.close()
    # 猜大小 moved only inside a hand's own transaction; every won hand with winnings had its guess.
    assert all(row["idempotency_key"] == f"hand:{row['hand_id']}" for row in guesses), guesses
    won = {hand["hand_id"] for hand in hands if hand["outcome"] == "win" and hand["transfer"] > 0}
    guessed = {row["hand_id"] for row in guesses}
    print(f"won hands with winnings: {len(won)}; hands whose guess moved prestige: {len(guessed)}")
    assert won <= guessed, (won, guesses)
