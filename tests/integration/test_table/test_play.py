"""Two raw gRPC clients at a real table server (NATS, write-ahead): a hand played and checked for hidden
information, refused actions that leave the table unharmed, tickets, escape, disconnect and reconnect.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import grpc.aio
import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.rules.tiles import parse_tiles
from duelmahjong.v1 import events_pb2, play_pb2, table_pb2, table_pb2_grpc

pytestmark = pytest.mark.asyncio


async def test_two_clients_play_a_hand_written_ahead_and_hidden(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table_id, first, second = await open_table()
    table = kit.live(table_server, table_id)
    await first.connect()
    await second.connect()
    await kit.play_until_over((first, second))
    assert first.ended.is_set() and second.ended.is_set()
    assert table.state.hands_played == 1
    # Both seats saw the hand revealed; nothing hidden reached either of them.
    for client in (first, second):
        kit.check_saw_a_hand(client, table)
    # Write-ahead: the log subject holds every record, numbered 1, 2, 3… without gaps, and its engine
    # events are exactly the engine's. The seats were sent those both seats learn of (not a silent pass
    # in a claim window, docs/engine.md), numbered 1, 2, 3… apart from the journal.
    records = await kit.read_log(bus, table_id)
    assert [r.sequence for r in records] == list(range(1, len(records) + 1))
    engine = [r.record.engine_event.canonical_json for r in records if r.record.HasField("engine_event")]
    assert engine == [event.canonical() for event in table.state.engine.events]
    shared = [event for event in table.state.engine.events if event.visible_to(0) and event.visible_to(1)]
    # Both seats see every engine event both learn of, but the engine's pairing_ended: the table's own
    # table_ended says it, last.
    assert [s.event for s in table.state.log.events if s.event is not None] == shared[:-1]
    assert shared[-1].kind == "pairing_ended" and table.state.log.events[-1].made.HasField("table_ended")
    assert [s.sequence for s in table.state.log.events] == list(range(1, len(table.state.log.events) + 1))
    assert any(r.record.HasField("hand_begun") and r.record.hand_begun.hidden.seed for r in records)
    # What seats were shown is in the log too: the engine events under their seat sequence, and the
    # table's own (the settlement, the end) as sent.
    logged = {r.record.engine_event.seat_sequence for r in records if r.record.HasField("engine_event")} | {
        r.record.shown.sequence for r in records if r.record.HasField("shown")
    }
    assert logged - {0} == {s.sequence for s in table.state.log.events}
    # Claim windows (docs/engine.md): no seat is sent a silent pass, and what a seat was sent is numbered
    # 1, 2, 3… — no gap where the opponent declined a claim (its action record, its pass) — and each
    # number once: the settlement has its own.
    for client in (first, second):
        numbers = [r.event.sequence for r in client.received if r.HasField("event")]
        assert numbers == list(range(1, len(numbers) + 1))
        assert not [r for r in client.received if r.HasField("event") and r.event.HasField("win_declined")]


async def test_a_seat_that_accepts_batches_gets_each_step_in_one_message_and_the_log_one_per_action(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table_id, first, second = await open_table()
    table = kit.live(table_server, table_id)
    await first.connect(batches=True)
    await second.connect()  # an older client: one response per message, as before
    await kit.play_until_over((first, second))
    assert table.state.hands_played == 1
    assert first.batches > 5 and second.batches == 0
    # Unpacked, the batched seat saw the same kinds of thing as the other, and nothing hidden.
    for client in (first, second):
        kit.check_saw_a_hand(client, table)
    assert [r.event.sequence for r in first.received if r.HasField("event") and r.event.sequence] == [
        r.event.sequence for r in second.received if r.HasField("event") and r.event.sequence
    ]
    # The write-ahead log: one message per step (an applied action's record and its events together),
    # the records still numbered 1, 2, 3… without gaps across messages.
    messages = await kit.log_messages(bus, table_id)
    records = sum(1 + len(m.following) for m in messages)
    assert records == len(await kit.read_log(bus, table_id)) and len(messages) < records
    expected = 1
    for message in messages:
        assert message.sequence == expected and message.envelope.event_id.endswith(f"/{expected}")
        if message.record.HasField("action_applied"):
            assert all(r.HasField("engine_event") for r in message.following)
        expected += 1 + len(message.following)


async def test_stale_and_out_of_turn_actions_are_refused_and_the_table_carries_on(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any]
) -> None:
    table_id, first, second = await open_table()
    await first.connect()
    await second.connect()
    # Both exchange (T4) to reach play; then find who is to discard.
    for client in (first, second):
        await client.decision()
        await client.send(play_pb2.Action(exchange=play_pb2.ExchangeAction(tiles="")))
    table = kit.live(table_server, table_id)
    for _ in range(500):
        if table.state.engine.to_move >= 0:
            break
        await asyncio.sleep(0.01)
    mover, waiter = (first, second) if table.state.engine.to_move == 0 else (second, first)
    view = await mover.decision(phase=play_pb2.HAND_PHASE_PLAY)
    # The waiting seat acts out of turn (an action for the other seat's decision): STALE, table unharmed.
    await waiter.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile="1m")), action_id=7)
    rejected = await kit.next_rejection(waiter)
    assert rejected.code == table_pb2.REJECTION_CODE_STALE and rejected.client_action_id == 7
    # The mover sends an action decided on an older state: STALE with the current view.
    tile = view.drawn_tile or view.legal_actions.actions[0].choices[0]
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile)), last_seen=1, action_id=8)
    rejected = await kit.next_rejection(mover)
    assert rejected.code == table_pb2.REJECTION_CODE_STALE and rejected.view.legal_actions.actions
    # An illegal action (a tile not in hand): INVALID_ARGUMENT-like ILLEGAL, with a reason.
    held = set(parse_tiles(view.concealed + view.drawn_tile))
    missing = next(
        t for t in ("1z", "2z", "3z", "4z", "5z", "6z", "7z", "1m", "9p") if parse_tiles(t)[0] not in held
    )
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=missing)), action_id=9)
    rejected = await kit.next_rejection(mover)
    assert rejected.code == table_pb2.REJECTION_CODE_ILLEGAL and rejected.reason
    # The table carries on: the right action from the right seat is applied.
    before = table.state.log.sequence
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile)))
    for _ in range(500):
        if table.state.log.sequence > before:
            break
        await asyncio.sleep(0.01)
    assert table.state.log.sequence > before
    assert table.state.status == table_pb2.TABLE_STATUS_PLAYING


async def test_a_ticket_of_another_player_is_refused(
    kit: SimpleNamespace,
    table_server: Any,
    open_table: Callable[..., Any],
    issue: Callable[..., tuple[tuple[str, str]]],
    client_tls: ClientTls,
) -> None:
    _table_id, first, _second = await open_table()
    channel = client_tls.channel(table_server.address)
    try:
        stub = table_pb2_grpc.TableServiceStub(channel)
        call = stub.Play(
            iter([table_pb2.PlayRequest(table_ticket=first.ticket)]), metadata=issue("someone-else")
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in call:
                pass
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        await channel.close()


async def test_escape_mid_hand_ends_the_hand_and_the_table(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table_id, first, second = await open_table()
    ended: list[events_pb2.HandEnded] = []

    async def on_hand_ended(message: Any) -> None:
        ended.append(events_pb2.HandEnded.FromString(message.data))

    sub = await bus.client.subscribe(subjects.HAND_ENDED, cb=on_hand_ended)
    await first.connect()
    await second.connect()
    await first.decision()
    await first.send(play_pb2.Action(leave=play_pb2.LeaveAction()))  # T10: leaving mid-hand is escape
    await asyncio.wait_for(second.ended.wait(), 10)
    await sub.unsubscribe()
    mine = [e for e in ended if e.table_id == table_id]
    assert len(mine) == 1 and mine[0].log_position > 0 and not mine[0].HasField("result")
    hand = (await kit.replayed(bus, mine[0])).outcome  # what the log the event points into replays to
    assert (hand.termination, hand.escaper) == ("escape", 0)
    kinds = [r.event.WhichOneof("kind") for r in second.received if r.HasField("event")]
    assert "hand_revealed" in kinds and "table_ended" in kinds
