"""A hand's end on a real table server and real NATS: the table is SETTLING while the wallet's
answer is on its way, serves everything else meanwhile (status, streams that go and come back,
spectators), and takes the answer from its inbox.

No wallet runs here: the test answers for it on the bus, as the wallet would, when it chooses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2, table_pb2_grpc

pytestmark = pytest.mark.asyncio

SETTLING = table_pb2.TABLE_STATUS_SETTLING


async def _until_the_hand_ends(kit: SimpleNamespace, table: Any, clients: tuple[Any, Any]) -> None:
    """Both seats play by ``simple_choice`` until the hand has ended (nobody leaves: the hand is won,
    drawn or exhausted)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while table.state.status != SETTLING:
        assert loop.time() < end, "the hand did not end"
        for client in clients:
            if table.state.status != SETTLING and table.state.deciding(client.seat):
                view = await client.decision()
                if table.state.status != SETTLING:
                    await client.send(kit.simple_choice(view))
        await asyncio.sleep(0.005)


def _last_view(client: Any) -> play_pb2.SeatView:
    return [r.view for r in client.received if r.HasField("view")][-1]


async def test_a_settling_table_serves_everything_and_takes_its_settlement_from_the_inbox(
    kit: SimpleNamespace,
    table_server: Any,
    open_table: Callable[..., Any],
    issue: Callable[..., Any],
    bus: Bus,
    client_tls: ClientTls,
) -> None:
    table_server.host.settlement_wait = 60.0  # the wallet is late, not gone
    table_id, first, second = await open_table(kit.rules(watchable=True, spectate_delay_seconds=1))
    table = kit.live(table_server, table_id)
    await first.connect()
    await second.connect()
    await _until_the_hand_ends(kit, table, (first, second))
    hand_id = table.state.hand_id

    # Both seats see SETTLING and have nothing to decide.
    await kit.eventually(
        lambda: all(_last_view(c).table.phase == play_pb2.HAND_PHASE_SETTLING for c in (first, second))
    )
    assert not any(_last_view(c).legal_actions.actions for c in (first, second))

    # Status answers at once, many times over, while the settlement is awaited.
    channel = client_tls.channel(table_server.address)
    stub = table_pb2_grpc.TableServiceStub(channel)
    latencies = []
    for _ in range(100):
        started = time.perf_counter()
        status = await stub.GetTableStatus(
            table_pb2.GetTableStatusRequest(table_id=table_id), metadata=issue(f"{table_id}-a")
        )
        latencies.append(time.perf_counter() - started)
        assert status.status == SETTLING
        assert status.state.phase == play_pb2.HAND_PHASE_SETTLING
    latencies.sort()
    assert latencies[98] < 0.05, f"GetTableStatus p99 {latencies[98] * 1000:.1f} ms while settling"
    # A spectator who comes now is served: the delayed table first, at once.
    watch = stub.Watch(table_pb2.WatchRequest(table_id=table_id), metadata=issue("spectator"))
    started = time.perf_counter()
    shown = await asyncio.wait_for(watch.read(), 5)
    assert shown.HasField("state") and shown.state.table_id == table_id
    assert time.perf_counter() - started < 0.5
    watch.cancel()
    await channel.close()

    # A seat that goes away and comes back is served: it is sent what it missed, then SETTLING.
    seen = second.last_seen
    second.disconnect()
    await kit.eventually(lambda: not table.state.seats[second.seat].connected)
    await second.reconnect(seen)
    await kit.eventually(lambda: table.state.seats[second.seat].connected)
    await kit.eventually(lambda: _last_view(second).table.phase == play_pb2.HAND_PHASE_SETTLING)

    # A decision now is refused (STALE), readably; a leave is kept for when the hand is settled.
    await first.send(play_pb2.Action(discard=play_pb2.DiscardAction(tile="1m")))
    refused = await kit.next_rejection(first)
    assert refused.code == table_pb2.REJECTION_CODE_STALE and "settled" in refused.reason
    await first.send(play_pb2.Action(leave=play_pb2.LeaveAction()))
    await kit.eventually(lambda: table.state.leaving == {first.seat})
    assert table.state.status == SETTLING

    # The wallet answers: the answer reaches the table through its inbox and both seats are shown it.
    players = table.state.request.players
    applied = events_pb2.SettlementApplied(
        source_event_id=f"hand:{hand_id}",
        transaction_id="tx-settling",
        table_id=table_id,
        hand_id=hand_id,
        hand_transaction=True,
        settlement=rules_pb2.Settlement(
            hand_id=hand_id,
            total_fan=1,
            fan_amount=20,
            transfer=rules_pb2.Transfer(
                from_player_id=players[0].player_id, to_player_id=players[1].player_id, amount=20
            ),
        ),
    )
    await bus.client.publish(subjects.SETTLEMENT_APPLIED, applied.SerializeToString())

    def settled(client: Any) -> list[play_pb2.HandSettled]:
        return [r.event.hand_settled for r in client.received if r.event.HasField("hand_settled")]

    await kit.eventually(lambda: all(settled(c) for c in (first, second)))
    for client in (first, second):
        (shown,) = settled(client)
        assert shown.settlement.transfer.amount == 20
    # The leave asked for while settling is the leave between hands: the pairing ends (T7).
    await asyncio.wait_for(first.ended.wait(), 10)
    await asyncio.wait_for(second.ended.wait(), 10)
    ended = [r.event.table_ended.reason for r in second.received if r.event.HasField("table_ended")]
    assert ended == ["a player left between hands"]
    latency = table_server.host.metrics.settlement_latency.collect()[0]
    assert any(s.name.endswith("_count") and s.value == 1 for s in latency.samples)
