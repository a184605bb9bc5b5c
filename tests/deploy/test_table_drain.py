"""The drain Kubernetes relies on (deploy/k8s/base/table.yaml: preStop, SIGTERM, grace period): a
table server told to stop while it hosts a live table takes no new table, plays the live hand to
its end (the seats sit idle, so every decision is the server's default at the room's timer, T11),
and only then exits 0.

The table server is the one `make run` starts (the whole stack, on the session's NATS/Postgres).
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

from duelmahjong.platform import auth
from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import StackState
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import rules_pb2, table_pb2, table_pb2_grpc

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

# T11 timers of the test room: short enough that a whole hand of defaults takes seconds, long enough
# that the hand is still live when SIGTERM arrives.
DECISION_MILLIS = 100
DRAIN_WITHIN_SECONDS = 120.0
# A finished hand waits this long for its settlement before the draining table closes.
STACK_ENVIRONMENT = {"SETTLEMENT_WAIT_SECONDS": "3"}


def _room() -> rules_pb2.RoomRules:
    return rules_pb2.RoomRules(
        profile=rules_pb2.PROFILE_DUEL,
        fan_rate=1,
        carry_min=100,
        carry_max=10_000,
        revealed_bonus_tiles=2,
        task_multiplier=2,
        decision_millis=DECISION_MILLIS,
        time_bank_millis=0,
        reconnect_grace_millis=600_000,
    )


def _open_request(table_id: str) -> table_pb2.OpenTableRequest:
    players = [
        rules_pb2.SeatPlayer(
            seat=seat, player_id=f"drain-{seat}-{table_id[:8]}", display_name=f"p{seat}", carry=1000
        )
        for seat in (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)
    ]
    return table_pb2.OpenTableRequest(
        table_id=table_id,
        pairing_id=f"pairing-{table_id}",
        room_id="drain-check",
        rules=_room(),
        players=players,
        negotiated=1,
    )


def _metric(page: str, name: str) -> float:
    """Sum of every sample of `name` on a /metrics page (0 when absent)."""
    return sum(float(value) for value in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", page, re.MULTILINE))


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return str(reply.read().decode())


async def _sit(
    address: str, ticket: table_pb2.SeatTicket, secret: str, tls: ClientTls
) -> AsyncIterator[table_pb2.PlayResponse]:
    """A seat that joins and then never acts: the server plays its defaults at each timeout."""
    bearer = auth.bearer_metadata(auth.issue_token(secret, player_id=ticket.player_id))
    channel = tls.channel(address)
    requests: asyncio.Queue[table_pb2.PlayRequest | None] = asyncio.Queue()
    await requests.put(table_pb2.PlayRequest(table_ticket=ticket.table_ticket))

    async def outgoing() -> AsyncIterator[table_pb2.PlayRequest]:
        while (request := await requests.get()) is not None:
            yield request

    try:
        async for response in table_pb2_grpc.TableServiceStub(channel).Play(outgoing(), metadata=bearer):
            yield response
    finally:
        await requests.put(None)
        await channel.close()


async def _watch(seat: AsyncIterator[table_pb2.PlayResponse], seen: list[table_pb2.PlayResponse]) -> None:
    try:
        async for response in seat:
            seen.append(response)
    except grpc.aio.AioRpcError:
        pass  # the table closed under the seat: the drain ended it


async def test_sigterm_refuses_new_tables_finishes_the_live_hand_and_exits_0(
    make_run_stack: tuple[Stack, StackState], token_secret: str
) -> None:
    stack, state = make_run_stack
    table = next(p for p in stack.processes if p.name == "table")
    address, metrics_url = state.services["table"].grpc, state.services["table"].metrics
    service = auth.bearer_metadata(
        auth.issue_token(token_secret, player_id="matchmaking", role=auth.Role.SERVICE)
    )
    async with state.client_tls().channel(address) as channel:
        tables = table_pb2_grpc.TableServiceStub(channel)
        opened = await tables.OpenTable(_open_request(uuid.uuid4().hex), metadata=service, timeout=10)
        seen: list[list[table_pb2.PlayResponse]] = [[], []]
        seats = [
            asyncio.create_task(_watch(_sit(opened.address, ticket, token_secret, state.client_tls()), log))
            for ticket, log in zip(opened.tickets, seen, strict=True)
        ]
        deadline = time.monotonic() + 30
        while not all(any(r.HasField("event") for r in log) for log in seen):
            assert time.monotonic() < deadline, "the hand did not start"
            await asyncio.sleep(0.05)
        page = await asyncio.to_thread(_scrape, metrics_url)
        assert _metric(page, "duel_table_live_tables_count") == 1
        assert _metric(page, "duel_table_hands_total") == 0
        assert not any(r.HasField("event") and r.event.HasField("hand_settled") for log in seen for r in log)

        table.process.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.5)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await tables.OpenTable(_open_request(uuid.uuid4().hex), metadata=service, timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert table.process.poll() is None, "the server exited with a hand still live"

        deadline = time.monotonic() + DRAIN_WITHIN_SECONDS
        while table.process.poll() is None:
            assert time.monotonic() < deadline, "the drain did not end"
            await asyncio.sleep(0.1)
        await asyncio.gather(*seats)
    assert table.process.returncode == 0
    for log in seen:  # both seats were shown the end of the hand before the server went away
        assert any(r.HasField("event") and r.event.HasField("hand_settled") for r in log)
