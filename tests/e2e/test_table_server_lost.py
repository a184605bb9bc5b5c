"""A table server that dies mid-hand (SIGKILL: no drain, no TableClosed) strands nobody: the whole stack
(``make run``'s four service processes, embedded NATS and Postgres) with a short announce interval,
directory TTL, lost threshold and adoption grace; once matchmaking declares the table lost and the
grace has passed with no server adopting it (no TableAdopted: there is no other table server), it
closes the table on the server's behalf, the wallet releases both holds (the void hand moved nothing),
scoring archives the hand as VOID (it never ended: the players' match history shows it, and its
replay), both players may queue again, and a late TableClosed of the same table changes nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import asyncpg
import grpc.aio
import nats
import pytest

from duelmahjong.cli.demo import ledger_balances
from duelmahjong.client.history import MatchHistory
from duelmahjong.client.session import DuelClient
from duelmahjong.platform import subjects
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import archive_pb2, events_pb2, table_pb2, table_pb2_grpc
from duelmahjong.v1 import matchmaking_pb2 as mm
from services.wallet.audit import audit_ledger

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

ROOM = {"room_id": "lost-erren", "profile": "erren", "fan_rate": 1, "fee": 3, "carry_min": 100}
CARRY = 300
LOST_SECONDS = 3.0
GRACE_SECONDS = 1.0  # how long a lost table waits for an adoption before it is closed


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    """The whole stack, its table server announcing often, declared lost after LOST_SECONDS and its
    tables closed GRACE_SECONDS after that."""
    settings = {
        "MATCHMAKING_ROOMS": json.dumps([ROOM]),
        "ANNOUNCE_SECONDS": "0.3",
        "MATCHMAKING_SERVER_TTL_SECONDS": "1",
        "MATCHMAKING_SERVER_LOST_SECONDS": str(LOST_SECONDS),
        "MATCHMAKING_ADOPTION_GRACE_SECONDS": str(GRACE_SECONDS),
    }
    with stack_with("lost", settings) as state:
        yield state


async def _seat(client: DuelClient, ready: mm.TableReady) -> AsyncIterator[table_pb2.PlayResponse]:
    """Join the table on a Play stream and yield what it sends; the seat never acts."""
    async with client.tls.channel(ready.address) as channel:
        call = table_pb2_grpc.TableServiceStub(channel).Play(metadata=client.metadata)
        await call.write(table_pb2.PlayRequest(table_ticket=ready.table_ticket))
        try:
            while (message := await call.read()) is not grpc.aio.EOF:
                yield message
        except grpc.aio.AioRpcError:
            return  # the server died under the stream


async def _until_a_decision(client: DuelClient, ready: mm.TableReady, dealt: asyncio.Event) -> None:
    async for message in _seat(client, ready):
        views = message.batch.responses if message.HasField("batch") else [message]
        if any(v.HasField("view") and v.view.legal_actions.actions for v in views):
            dealt.set()  # the hand is under way: a seat is asked to act


async def _held_becomes_zero(clients: list[DuelClient], within: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while any([(await c.balance()).held for c in clients]):
        if loop.time() > deadline:
            pytest.fail(f"the holds were not released within {within}s of the table server's death")
        await asyncio.sleep(0.2)


async def _archived_void(
    stack: StackState, client: DuelClient, pairing_id: str
) -> archive_pb2.GetMatchResponse:
    """The pairing as the archive holds it, once its hand is there (scoring consumes the TableClosed)."""
    async with MatchHistory(
        scoring=stack.services["scoring"].grpc, token=client.token, tls=client.tls
    ) as history:
        for _ in range(100):
            try:
                match = await history.match(pairing_id)
                if match.hands:
                    return match
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.NOT_FOUND:
                    raise
            await asyncio.sleep(0.2)
    pytest.fail(f"the void hand of pairing {pairing_id} was not archived")


def _table_lost_total(stack: StackState) -> float:
    """The room's tables matchmaking closed as lost, summed over its replicas (whichever noticed)."""
    total = 0.0
    for name in stack.instances("matchmaking"):
        with urllib.request.urlopen(stack.services[name].metrics, timeout=5) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith("duel_matchmaking_table_lost_total{") and f'room="{ROOM["room_id"]}"' in line:
                total += float(line.rsplit(" ", 1)[1])
    return total


async def test_a_killed_table_server_s_players_are_released_and_may_queue_again(
    stack: StackState, stored_messages: Callable[[str, str], Awaitable[list[bytes]]]
) -> None:
    clients = [
        DuelClient(
            tls=stack.client_tls(),
            wallet=stack.services["wallet"].grpc,
            matchmaking=stack.target("matchmaking"),
        )
        for _ in range(2)
    ]
    seats: list[asyncio.Task[None]] = []
    try:
        for client, name in zip(clients, ("alice", "bob"), strict=True):
            await client.login(name)
        before = [(await c.balance()).balance for c in clients]
        ledger_before = await ledger_balances(stack.database_url)
        assert ledger_before is not None
        readies = await asyncio.gather(*(c.find_table(ROOM["room_id"], CARRY) for c in clients))
        table_id = readies[0].table_id
        assert all([(await c.balance()).held > 0 for c in clients])

        dealt = asyncio.Event()
        seats = [
            asyncio.create_task(_until_a_decision(c, r, dealt)) for c, r in zip(clients, readies, strict=True)
        ]
        await asyncio.wait_for(dealt.wait(), 30)
        os.kill(stack.services["table"].pid, signal.SIGKILL)  # mid-hand; no drain, no TableClosed
        killed_at = asyncio.get_running_loop().time()

        # Declared lost after LOST_SECONDS of silence, closed GRACE_SECONDS later when nobody adopted
        # it (plus a tick and the wallet's consumer).
        await _held_becomes_zero(clients, within=LOST_SECONDS + GRACE_SECONDS + 15)
        # Silence counts from the last heartbeat, up to one announce interval before the kill.
        assert asyncio.get_running_loop().time() - killed_at >= LOST_SECONDS + GRACE_SECONDS - 0.5
        assert [(await c.balance()).balance for c in clients] == before  # the void hand moved nothing
        closed_events = [
            events_pb2.TableClosed.FromString(payload)
            for payload in await stored_messages(stack, subjects.TABLE_CLOSED)
        ]
        (closed,) = [event for event in closed_events if event.table_id == table_id]
        assert closed.reason == "the table server was lost"
        assert closed.envelope.producer == "matchmaking" and closed.pairing_id and closed.server_id
        assert _table_lost_total(stack) == 1

        # The hand the table never ended is on the record, VOID, as of the close; nothing moved.
        archived = await _archived_void(stack, clients[0], closed.pairing_id)
        (hand,) = archived.hands
        assert hand.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID and hand.hand_number == 1
        assert not hand.settled and [m.amount for m in hand.moved] == [0, 0]
        assert hand.ended_at == closed.envelope.occurred_at
        assert archived.match.table_id == table_id and archived.match.hands_other == 1
        assert archived.match.result == archive_pb2.MATCH_RESULT_EVEN and archived.match.prestige_moved == 0
        async with MatchHistory(
            scoring=stack.services["scoring"].grpc, token=clients[1].token, tls=clients[1].tls
        ) as history:
            replay = await history.replay(hand.hand_id)
        assert replay.result == hand and replay.steps  # up to the last event before the server died

        # The dead server's own TableClosed, arriving late (past JetStream's duplicate window, so under
        # another message id): the wallet closes a table once; nothing moves, nothing is held.
        late = events_pb2.TableClosed()
        late.CopyFrom(closed)
        late.envelope.event_id = f"late:{table_id}"
        late.envelope.producer = f"table/{closed.server_id}"
        late.reason = "the server's own close, late"
        connection = await nats.connect(stack.nats_url, **stack.nats_options("table"))  # as the server
        try:
            await connection.jetstream().publish(
                subjects.TABLE_CLOSED,
                late.SerializeToString(),
                headers={"Nats-Msg-Id": late.envelope.event_id},
            )
        finally:
            await connection.close()
        await asyncio.sleep(2)  # the wallet's consumer polls every second
        assert [(await c.balance()).held for c in clients] == [0, 0]
        assert [(await c.balance()).balance for c in clients] == before
        assert _table_lost_total(stack) == 1

        ledger_after = await ledger_balances(stack.database_url)
        assert ledger_after is not None and sum(ledger_after.values()) == sum(ledger_before.values())
        pool = await asyncpg.create_pool(with_database(stack.database_url, "wallet"), min_size=1, max_size=1)
        try:
            assert await audit_ledger(pool) == []
        finally:
            await pool.close()

        # Both may queue again (no table server is left, so a new pairing would wait for one).
        for client in clients:
            updates = client.queue(ROOM["room_id"], CARRY)
            first = await asyncio.wait_for(anext(updates), 10)
            assert first.WhichOneof("kind") == "queued"
            await updates.aclose()  # ends the Enqueue stream: the ticket is cancelled
    finally:
        for seat in seats:
            seat.cancel()
        await asyncio.gather(*seats, return_exceptions=True)
        for client in clients:
            await client.close()
