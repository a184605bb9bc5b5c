"""A table outlives its process: its log read back from JetStream rebuilds it, a fresh table server
adopts it, and both seats resume on it with their tickets and last sequences and finish the hand."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import events_pb2
from services.table import main as table_main
from services.table.config import TableConfig
from services.table.rebuild import rebuild
from services.table.wal import read_table_log

pytestmark = pytest.mark.asyncio


async def test_read_table_log_returns_the_log_and_its_last_stream_sequence(
    kit: SimpleNamespace, open_table: Callable[..., Any], bus: Bus
) -> None:
    table_id, first, second = await open_table()
    assert await read_table_log(bus, "t-never-opened") == ([], 0)
    await first.connect()
    await second.connect()
    await kit.play_until_over((first, second))
    log, last = await read_table_log(bus, table_id)
    assert log == await kit.log_messages(bus, table_id)
    assert log[0].record.HasField("table_opening") and log[-1].record.shown.HasField("table_ended")
    stored = await bus.js.get_last_msg(subjects.TABLE_LOG_STREAM.name, subjects.table_log_subject(table_id))
    assert last == stored.seq and events_pb2.TableEventAppended.FromString(stored.data) == log[-1]


async def test_a_table_rebuilt_from_its_log_on_a_fresh_server_resumes_both_seats_and_ends_its_hand(
    kit: SimpleNamespace,
    table_server: Any,
    open_table: Callable[..., Any],
    start_service: Any,
    service_env: dict[str, str],
    bus: Bus,
    client_tls: ClientTls,
) -> None:
    table_server.host.clock = kit.FakeClock(asyncio.get_running_loop().time())  # no timeout meanwhile
    table_id, first, second = await open_table()
    table = kit.live(table_server, table_id)
    mover, _, view = await kit.first_turn(table, first, second)

    # The process "dies": its table writes nothing more from here on (the discard below is lost).
    wal = table_server.host.ports.wal
    revived = asyncio.Event()

    async def dead(*_: Any) -> None:
        await revived.wait()  # then a no-op: the old table never writes again

    wal.append = dead
    await mover.send(kit.simple_choice(view))
    await asyncio.sleep(0.1)
    for client in (first, second):
        client.disconnect()
        await asyncio.wait_for(client.ended.wait(), 5)

    log, last = await read_table_log(bus, table_id)
    assert last > 0
    fresh = table_main.TableServer()
    env = {**service_env, "SETTLEMENT_WAIT_SECONDS": "0.3", "SERVER_ID": "t-fresh", "DRAIN_SECONDS": "1"}
    await start_service(fresh.spec, TableConfig.from_env(env))
    adopted = fresh.host.adopt(rebuild(log, now=fresh.host.now()), last)
    rebuilt = adopted.state.engine.events
    assert rebuilt == table.state.engine.events[: len(rebuilt)]
    assert len(rebuilt) < len(table.state.engine.events)  # the discard never reached the log

    channel = client_tls.channel(fresh.address)
    seats = []
    try:
        for old in (first, second):
            seat = kit.SeatClient(channel, old.token, old.ticket, old.seat)
            seat.last_seen = old.last_seen
            await seat.connect(last_seen=old.last_seen)
            seats.append((old, seat))
        await kit.play_until_over((seats[0][1], seats[1][1]))
        for old, seat in seats:
            sequences = [r.event.sequence for r in (*old.received, *seat.received) if r.HasField("event")]
            assert sequences == list(range(1, len(sequences) + 1)), "every event once, none missed"
            kinds = [r.event.WhichOneof("kind") for r in seat.received if r.HasField("event")]
            assert "hand_revealed" in kinds and "hand_settled" in kinds and kinds[-1] == "table_ended"
        final, _ = await read_table_log(bus, table_id)
        assert final[: len(log)] == log and rebuild(final).ended()
    finally:
        revived.set()
        for _, seat in seats:
            await seat.close()
        await channel.close()
