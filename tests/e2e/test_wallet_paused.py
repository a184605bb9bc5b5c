"""The wallet paused (SIGSTOP) for 30 s mid-match, on the whole stack (real NATS and Postgres).

A hand that ends while the wallet cannot answer leaves its table SETTLING, not stuck: the table server
answers ``GetTableStatus`` at once all the while (p99 < 50 ms) and shows SETTLING; when the wallet
resumes, its answer reaches the table, both seats are shown the settlement and play goes on.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import Iterator
from typing import Any

import grpc.aio
import pytest

from duelmahjong.platform import auth, subjects
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import events_pb2, play_pb2, table_pb2, table_pb2_grpc
from tests.e2e.conftest import StackWith

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

PAUSE_SECONDS = 30.0
SECRET = secrets.token_urlsafe(48)


@pytest.fixture(scope="module")
def stack(stack_with: StackWith) -> Iterator[StackState]:
    # The table waits longer than the wallet is away: the settlement is late, not lost.
    with stack_with("wallet-paused", {"SETTLEMENT_WAIT_SECONDS": "120", "TOKEN_SECRET": SECRET}) as state:
        yield state


async def _table_id(stack: StackState, stored_messages: Any) -> str:
    payloads = await stored_messages(stack.nats_url, f"{subjects.TABLE_LOG_PREFIX}.>")
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
            async with grpc.aio.insecure_channel(stack.services["table"].grpc) as channel:
                stub = table_pb2_grpc.TableServiceStub(channel)
                request = table_pb2.GetTableStatusRequest(table_id=table_id)
                while time.monotonic() - paused < PAUSE_SECONDS:
                    started = time.perf_counter()
                    status = await stub.GetTableStatus(request, metadata=auth.bearer_metadata(token))
                    seen["latencies"].append(time.perf_counter() - started)
                    if status.status == table_pb2.TABLE_STATUS_SETTLING:
                        assert status.state.phase == play_pb2.HAND_PHASE_SETTLING
                        seen["settling"] += 1
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
