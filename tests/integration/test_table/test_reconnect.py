"""T10 at a real table server (NATS, write-ahead, gRPC streams) on the host's injected clock: a dropped seat
keeps its decision's deadline; one that misses it goes to 托管 (the bot plays at once) until it comes
back; both seats see it as typed SeatConnection events; a resume re-sends every missed event, the
settlement included, each under its own sequence, then the view.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import play_pb2, server_state_pb2, table_pb2
from services.table.live import LiveTable

pytestmark = pytest.mark.asyncio


async def _at_first_turn(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], decision_millis: int
) -> tuple[LiveTable, Any, Any, Any]:
    """A duel table on a clock that moves only when told, both hands kept (T4): (table, clock, the seat
    to discard first, the other), the mover holding its first decision of play."""
    host = table_server.host
    clock = host.clock = kit.FakeClock(asyncio.get_running_loop().time())
    table_id, first, second = await open_table(kit.rules(decision_millis=decision_millis, time_bank_millis=0))
    table = kit.live(table_server, table_id)
    mover, other, _ = await kit.first_turn(table, first, second)
    return table, clock, mover, other


def _connections(client: Any) -> list[tuple[int, bool, bool]]:
    return [
        (r.event.seat_connection.seat, r.event.seat_connection.connected, r.event.seat_connection.auto_play)
        for r in client.received
        if r.HasField("event") and r.event.HasField("seat_connection")
    ]


async def _origins(kit: SimpleNamespace, bus: Bus, table_id: str, seat: int) -> list[int]:
    records = await kit.read_log(bus, table_id)
    contract_seat = seat + 1  # SEAT_FIRST = 1, SEAT_SECOND = 2
    return [
        r.record.action_applied.origin
        for r in records
        if r.record.HasField("action_applied") and r.record.action_applied.seat == contract_seat
    ]


async def _drop(kit: SimpleNamespace, table: LiveTable, client: Any) -> None:
    client.disconnect()
    await asyncio.wait_for(client.ended.wait(), 5)
    await kit.eventually(lambda: table.state.seats[client.seat].session is None)


async def test_a_drop_shorter_than_the_decision_time_keeps_the_decision_for_the_player_t10(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table, clock, mover, other = await _at_first_turn(kit, table_server, open_table, decision_millis=10_000)
    seat, seen = mover.seat, mover.last_seen
    await _drop(kit, table, mover)
    me = table.state.seats[seat].player.seat if table.state.seats[seat].player else 0
    await kit.eventually(lambda: (me, False, False) in _connections(other))
    clock.now += 3.0  # back within the 10 s decision: nothing was played for it
    await table.public_status()
    assert table.state.engine.to_move == seat and not table.state.seats[seat].auto_play
    assert await _origins(kit, bus, table.state.table_id, seat) == [
        server_state_pb2.ACTION_ORIGIN_PLAYER
    ]  # 换牌
    await mover.reconnect(seen)
    view = await mover.decision()
    # Resumed: what it missed (its own drop, its return), then its view, the decision still its own.
    missed = [r.event for r in mover.received if r.HasField("event") and r.event.sequence > seen]
    assert [e.WhichOneof("kind") for e in missed] == ["seat_connection", "seat_connection"]
    assert [e.sequence for e in missed] == [seen + 1, seen + 2]
    assert _connections(other)[-1] == (me, True, False)
    shown = view.table.seats[seat]
    assert shown.connected and not shown.auto_play and view.legal_actions.actions
    tile = view.drawn_tile or view.legal_actions.actions[0].choices[0]
    await mover.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile)))
    await kit.eventually(
        lambda: table.state.engine.to_move != seat or table.state.engine.state.river_marks[seat]
    )
    origins = await _origins(kit, bus, table.state.table_id, seat)
    assert server_state_pb2.ACTION_ORIGIN_AUTOPLAY not in origins and len(origins) == 2


async def test_a_drop_longer_than_the_decision_time_is_auto_played_until_the_seat_returns_t10(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any], bus: Bus
) -> None:
    table, clock, mover, other = await _at_first_turn(kit, table_server, open_table, decision_millis=2_000)
    seat = mover.seat
    me = table.state.seats[seat].player.seat if table.state.seats[seat].player else 0
    await _drop(kit, table, mover)
    clock.now += 2.5  # the decision's deadline passed while away: 托管, and the bot plays it at once
    await table.public_status()
    await kit.eventually(lambda: (me, False, True) in _connections(other))
    await kit.eventually(lambda: table.state.engine.state.discards[seat] >= 1)

    answered: set[int] = set()

    async def other_acts() -> None:
        """The other seat plays its next decision; the table applies it (and what follows) at once. A
        view of a decision already answered (a seat is sent a view again when a connection changes) is
        skipped: answering it again would be refused as stale."""
        view = await other.decision()
        while view.legal_actions.sequence in answered:
            view = await other.decision()
        answered.add(view.legal_actions.sequence)
        before = table.state.log.sequence
        await other.send(kit.simple_choice(view))
        try:
            await kit.eventually(lambda: table.state.log.sequence > before)
        except AssertionError as never:
            refused = [r.rejected for r in other.received if r.HasField("rejected")]
            raise AssertionError(
                f"the action on {view.legal_actions} was not applied; refusals: {refused}"
            ) from never

    # In 托管 the bot plays every later decision at once: the clock never moves.
    played = table.state.engine.state.discards[seat]
    for _ in range(2):
        await other_acts()
    await kit.eventually(lambda: table.state.engine.state.discards[seat] > played)
    origins = await _origins(kit, bus, table.state.table_id, seat)
    assert origins.count(server_state_pb2.ACTION_ORIGIN_AUTOPLAY) >= 2
    assert table.state.status == table_pb2.TABLE_STATUS_PLAYING
    # Back: 托管 ends, both see it; the next decision waits for the player again.
    await mover.reconnect()
    await kit.eventually(lambda: _connections(other)[-1] == (me, True, False))
    assert not table.state.seats[seat].auto_play
    while not table.state.deciding(seat):
        await other_acts()
    before = table.state.log.sequence
    await table.public_status()
    assert table.state.log.sequence == before and table.state.deciding(seat)
    view = await mover.decision()
    assert view.table.seats[seat].connected and not view.table.seats[seat].auto_play


async def test_a_resume_after_the_hand_ended_re_sends_the_settlement_under_its_own_sequence(
    kit: SimpleNamespace, table_server: Any, open_table: Callable[..., Any]
) -> None:
    table, clock, mover, other = await _at_first_turn(kit, table_server, open_table, decision_millis=2_000)
    seen = mover.last_seen
    await _drop(kit, table, mover)
    clock.now += 2.5  # 托管 from here: the bot plays the dropped seat while the other plays the hand out
    await table.public_status()
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while not table.state.between and loop.time() < end:
        if table.state.status == table_pb2.TABLE_STATUS_SETTLING:
            clock.now += 1.0  # no wallet here: the wait for the settlement passes on the table's clock
            await table.public_status()
        if table.state.deciding(other.seat):
            view = await other.decision()
            if table.state.between:
                break
            await other.send(kit.simple_choice(view))
        await asyncio.sleep(0.01)
    assert table.state.between, (
        "the hand ended while the seat was away; the table waits for its return (grace)"
    )
    await mover.reconnect(seen)
    view = await mover.decision()
    # Everything missed, the hand's end and settlement included, each under its own number, then the
    # continue-or-leave view.
    missed = [r.event for r in mover.received if r.HasField("event") and r.event.sequence > seen]
    numbers = [e.sequence for e in missed]
    assert numbers == list(range(seen + 1, seen + 1 + len(numbers)))
    kinds = [e.WhichOneof("kind") for e in missed]
    assert kinds.index("hand_revealed") < kinds.index("hand_settled")
    assert kinds[-1] == "seat_connection" and missed[-1].seat_connection.connected
    assert {a.kind for a in view.legal_actions.actions} == {
        play_pb2.ACTION_KIND_CONTINUE,
        play_pb2.ACTION_KIND_LEAVE,
    }
    # The other seat saw the same numbers for the same events.
    theirs = {r.event.sequence: r.event.WhichOneof("kind") for r in other.received if r.HasField("event")}
    assert all(theirs[e.sequence] == e.WhichOneof("kind") for e in missed[:-1])
