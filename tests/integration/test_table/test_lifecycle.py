"""A table server's life around the hands: T11 defaults, back-pressure, opening, status, announcements,
erren exchange charges, the T10 grace period and draining.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import grpc.aio
import pytest

from duelmahjong.platform import auth, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.rules.tiles import format_tiles, parse_tiles
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, server_state_pb2, table_pb2, table_pb2_grpc

pytestmark = pytest.mark.asyncio


async def test_idle_seats_are_played_by_their_defaults_at_the_deadline_t11(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    rules = kit.rules(decision_millis=20, time_bank_millis=0)
    table_id, first, second = await open_table(rules)
    await first.connect()
    await second.connect()
    # Nobody acts: every decision is the server's default at the deadline (keep the hand, discard the
    # drawn tile, pass), the hand runs to its end, and between hands the default is to leave.
    await asyncio.wait_for(asyncio.gather(first.ended.wait(), second.ended.wait()), 30)
    origins = {
        r.record.action_applied.origin
        for r in await kit.read_log(bus, table_id)
        if r.record.HasField("action_applied")
    }
    assert origins == {server_state_pb2.ACTION_ORIGIN_TIMEOUT}
    host = table_server.host
    assert host.metrics is not None and host.metrics.timeouts._value.get() > 10
    assert table_id not in host.live_tables  # the capacity is back


async def test_a_full_table_queue_answers_busy_and_loses_nothing_else(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any]
) -> None:
    table_id, first, second = await open_table()
    await first.connect()
    await second.connect()
    await first.decision()
    table = kit.live(table_server, table_id)
    host = table_server.host
    host.queue_size = 1
    try:
        session = table.state.seats[0].session
        assert session is not None
        keep = table_pb2.PlayRequest(action=play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles="")))
        table.submit(session, keep)
        table.submit(session, keep)  # the queue holds one: this one is refused at once
        rejected = await kit.next_rejection(first)
        assert rejected.code == table_pb2.REJECTION_CODE_BUSY
        assert rejected.view.legal_actions.actions  # the seat's last view, to decide again from
        assert host.metrics is not None and host.metrics.queue_full._value.get() >= 1
    finally:
        host.queue_size = 64


async def test_open_table_is_idempotent_and_status_shows_only_public_state(
    kit: SimpleNamespace,
    table_server: Any,
    issue: Callable[..., tuple[tuple[str, str]]],
    client_tls: ClientTls,
) -> None:
    players = [
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="idem-a"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="idem-b"),
    ]
    request = table_pb2.OpenTableRequest(table_id="idem-1", rules=kit.rules(), players=players, negotiated=1)
    async with client_tls.channel(table_server.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        service = issue("matchmaking", auth.Role.SERVICE)
        once = await stub.OpenTable(request, metadata=service)
        twice = await stub.OpenTable(request, metadata=service)
        assert once.table_id == twice.table_id == "idem-1" and once.address == table_server.address
        host = table_server.host
        assert len(host.live_tables) == 1
        assert once.incarnation == twice.incarnation == host.incarnation != ""  # this process opened it
        with pytest.raises(grpc.aio.AioRpcError) as player_call:
            await stub.OpenTable(request, metadata=issue("idem-a"))
        assert player_call.value.code() == grpc.StatusCode.PERMISSION_DENIED
        status = await stub.GetTableStatus(
            table_pb2.GetTableStatusRequest(table_id="idem-1"), metadata=issue("idem-b")
        )
        assert status.status == table_pb2.TABLE_STATUS_WAITING
        assert status.state.table_id == "idem-1"
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetTableStatus(table_pb2.GetTableStatusRequest(table_id="nope"), metadata=issue())
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND


async def test_the_server_announces_its_address_and_load(
    kit: SimpleNamespace, table_server: Any, bus: Bus
) -> None:
    heard: asyncio.Queue[events_pb2.TableServerAnnounced] = asyncio.Queue()

    async def on_announce(message: Any) -> None:
        heard.put_nowait(events_pb2.TableServerAnnounced.FromString(message.data))

    sub = await bus.client.subscribe(subjects.TABLE_SERVER_ANNOUNCED, cb=on_announce)
    try:
        while True:
            announced = await asyncio.wait_for(heard.get(), 5)
            if announced.server_id == "t-test":
                break
    finally:
        await sub.unsubscribe()
    assert announced.address == table_server.address
    assert announced.capacity == 200 and announced.load <= announced.capacity and not announced.draining
    # The process's incarnation: what tells matchmaking a restarted server lost its tables.
    assert announced.incarnation == table_server.host.incarnation != ""


async def test_a_paid_erren_exchange_is_charged_to_the_wallet_once_t4(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    charged: list[events_pb2.ExchangeCharged] = []

    async def on_charge(message: Any) -> None:
        charged.append(events_pb2.ExchangeCharged.FromString(message.data))

    sub = await bus.client.subscribe(subjects.EXCHANGE_CHARGED, cb=on_charge)
    try:
        table_id, first, second = await open_table(kit.rules(profile=rules_pb2.PROFILE_ERREN, exchange_fee=5))
        await first.connect()
        await second.connect()
        for client in (first, second):  # erren: 开始加倍 first (T8), declined
            await client.decision()
            await client.send(
                play_pb2.Action(choose_doubling=play_pb2.ChooseDoublingAction(start_doubled=False))
            )
        view = await first.decision(phase=play_pb2.HAND_PHASE_EXCHANGE)
        give = format_tiles(parse_tiles(view.concealed + view.drawn_tile)[:3])
        await first.send(play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles=give)))
        for _ in range(300):
            if any(c.table_id == table_id for c in charged):
                break
            await asyncio.sleep(0.01)
    finally:
        await sub.unsubscribe()
    mine = [c for c in charged if c.table_id == table_id]
    assert len(mine) == 1
    assert mine[0].amount == 10 and mine[0].exchange_number == 3  # three tiles, the first one free
    assert mine[0].player_id.endswith("-a") and mine[0].sequence > 0


async def test_a_seat_gone_past_the_grace_period_has_left_mid_hand_t10(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    ended: list[events_pb2.HandEnded] = []

    async def on_hand_ended(message: Any) -> None:
        ended.append(events_pb2.HandEnded.FromString(message.data))

    sub = await bus.client.subscribe(subjects.HAND_ENDED, cb=on_hand_ended)
    try:
        table_id, first, second = await open_table(kit.rules(reconnect_grace_millis=300))
        await first.connect()
        await second.connect()
        await first.decision()
        first.disconnect()  # never comes back: held and auto-played, then counted as leaving
        await asyncio.wait_for(second.ended.wait(), 10)
    finally:
        await sub.unsubscribe()
    mine = [(await kit.replayed(bus, e)).outcome for e in ended if e.table_id == table_id]
    assert [(hand.termination, hand.escaper) for hand in mine] == [("escape", 0)]
    host = table_server.host
    assert host.metrics is not None and host.metrics.escapes._value.get() >= 1


async def test_draining_refuses_new_tables_and_closes_those_with_no_hand_in_play(
    kit: SimpleNamespace,
    table_server: Any,
    issue: Callable[..., tuple[tuple[str, str]]],
    bus: Bus,
    client_tls: ClientTls,
) -> None:
    closed: list[events_pb2.TableClosed] = []
    draining: list[events_pb2.TableServerAnnounced] = []

    async def on_closed(message: Any) -> None:
        closed.append(events_pb2.TableClosed.FromString(message.data))

    async def on_announce(message: Any) -> None:
        announced = events_pb2.TableServerAnnounced.FromString(message.data)
        if announced.server_id == "t-test" and announced.draining:
            draining.append(announced)

    sub = await bus.client.subscribe(subjects.TABLE_CLOSED, cb=on_closed)
    heartbeat = await bus.client.subscribe(subjects.TABLE_SERVER_ANNOUNCED, cb=on_announce)
    players = [
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="drain-a"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="drain-b"),
    ]
    service = issue("matchmaking", auth.Role.SERVICE)
    host = table_server.host
    try:
        async with client_tls.channel(table_server.address) as channel:
            stub = table_pb2_grpc.TableServiceStub(channel)
            request = table_pb2.OpenTableRequest(table_id="drain-1", rules=kit.rules(), players=players)
            await stub.OpenTable(request, metadata=service)
            # SIGTERM's hook (the service's drain): announced at once, the waiting table closes at once.
            await asyncio.wait_for(table_server.drain(), 5)
            assert not host.live_tables
            request.table_id = "drain-2"
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.OpenTable(request, metadata=service)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        for _ in range(100):
            if draining and any(c.table_id == "drain-1" for c in closed):
                break
            await asyncio.sleep(0.02)
    finally:
        await sub.unsubscribe()
        await heartbeat.unsubscribe()
    assert [c.reason for c in closed if c.table_id == "drain-1"] == ["the table server is draining"]
    assert draining and draining[0].capacity == 200
