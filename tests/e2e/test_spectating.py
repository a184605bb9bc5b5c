"""Spectating on the whole stack (four service processes, two table servers, embedded NATS and
Postgres), in a watchable room with a short delay: a signed-in player lists the room's live tables,
watches one while two bots play it, and the table's server is SIGTERMed mid-match — it hands the
table over to the other server, and the spectator's client follows it there (ListLiveTables says
where) and resumes with the last sequence it saw. The spectator receives every event once, in order,
each no earlier than the delay after it happened (measured against ``occurred_at``), never a hidden
tile, and the stream ends with the table's end."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import table_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

DELAY = 2
ROOM = {
    "room_id": "watch-duel",
    "profile": "duel",
    "fan_rate": 1,
    "fee": 2,
    "carry_min": 100,
    "watchable": True,
    "spectate_delay_seconds": DELAY,
}
HANDS = 3
SETTINGS = {
    "TABLE_SERVERS": "2",
    "MATCHMAKING_ROOMS": json.dumps([ROOM]),
    "ANNOUNCE_SECONDS": "0.3",
    "MATCHMAKING_SERVER_TTL_SECONDS": "1",
}


@pytest.fixture
def stack(stack_with: Any) -> Iterator[StackState]:
    with stack_with("watch", SETTINGS) as state:
        yield state


async def test_a_spectator_watches_a_table_delayed_across_its_hand_over_and_sees_no_hidden_tile(
    stack: StackState, seat_secrets: Callable[[Any], list[str]]
) -> None:
    services = stack.services
    clients = [
        DuelClient(
            tls=stack.client_tls(), wallet=services["wallet"].grpc, matchmaking=stack.target("matchmaking")
        )
        for _ in range(3)
    ]
    for name, client in zip(("ana", "bo", "watcher"), clients, strict=True):
        await client.login(name)
    players, spectator = clients[:2], clients[2]
    try:
        readies = await asyncio.gather(*(p.find_table(ROOM["room_id"], 300) for p in players))
        discarded = asyncio.Event()

        def seen(message: table_pb2.PlayResponse) -> None:
            for response in message.batch.responses if message.HasField("batch") else [message]:
                if response.event.HasField("tile_discarded"):
                    discarded.set()

        plays = [
            asyncio.create_task(p.play(ready, BaselineBot(), MatchPlan(hands=HANDS), watch=seen))
            for p, ready in zip(players, readies, strict=True)
        ]
        listed = await spectator.live_tables(ROOM["room_id"])
        assert [t.table_id for t in listed] == [readies[0].table_id]
        table = listed[0]
        assert table.address == readies[0].address and table.spectate_delay_seconds == DELAY
        assert sorted(p.display_name for p in table.players) == ["ana", "bo"]
        host = next(s for s in services.values() if s.grpc == table.address)

        async def hand_over() -> None:
            await discarded.wait()
            os.kill(host.pid, signal.SIGTERM)  # mid-hand: the table moves to the other server

        handing_over = asyncio.create_task(hand_over())
        got: list[tuple[float, table_pb2.WatchResponse]] = []
        moves: list[str] = []
        async with asyncio.timeout(240):
            async for response in spectator.watch(table, on_move=moves.append):
                got.append((time.time(), response))
        await handing_over
        outcomes = await asyncio.wait_for(asyncio.gather(*plays), 120)
        assert all(o.hands_settled == HANDS for o in outcomes), [o.ended_reason for o in outcomes]
        assert any(o.relocations for o in outcomes)  # the seats followed the table too
        for _ in range(100):  # listed until its spectators have seen the end, then no more
            if not await spectator.live_tables(ROOM["room_id"]):
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the closed table is still listed")

        other = next(s.grpc for name, s in services.items() if name.startswith("table") and s is not host)
        assert moves == [other]  # the spectator followed the table to the server it was handed to
        states = [r.state for _, r in got if r.HasField("state")]
        assert len(states) == 1 and got[0][1].HasField("state")  # the resume kept to its hand
        events = [(at, r.event) for at, r in got if r.HasField("event")]
        sequences = [e.sequence for _, e in events]
        start = states[0].sequence + 1
        assert sequences == list(range(start, start + len(sequences))), sequences  # once each, in order
        assert events[-1][1].HasField("table_ended")
        assert sum(1 for _, e in events if e.HasField("hand_settled")) == HANDS
        lags = [at - e.occurred_at.ToNanoseconds() / 1e9 for at, e in events]
        assert min(lags) >= DELAY, min(lags)
        assert [hidden for _, e in events for hidden in seat_secrets(e)] == []
        print(
            f"\n{len(events)} events watched across the hand-over; lag after occurred_at: "
            f"min {min(lags):.3f} s, median {sorted(lags)[len(lags) // 2]:.3f} s, max {max(lags):.3f} s "
            f"(delay {DELAY} s)"
        )
    finally:
        for client in clients:
            await client.close()
