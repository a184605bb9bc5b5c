"""Spectating through real gRPC channels (wallet, matchmaking and a table server; NATS, Postgres): a
signed-in player lists a watchable room's live tables (ListLiveTables) and watches one while two
bots play it (Watch): the delayed table first, each event no earlier than the room's delay after it
happened, nothing a seat hides, the end; and the refusals of both RPCs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import rules_pb2, table_pb2, table_pb2_grpc
from services.table.config import TableConfig
from services.table.core import check_open_request
from services.table.main import TableServer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

DELAY = 2
WATCHED = {
    "room_id": "erren-watched",
    "profile": "erren",
    "fan_rate": 1,
    "fee": 1,
    "carry_min": 100,
    "watchable": True,
    "spectate_delay_seconds": DELAY,
}
QUIET = {"room_id": "erren-quiet", "profile": "erren", "fan_rate": 1, "fee": 1, "carry_min": 100}


async def _refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        async for _ in call:
            pass
    return refused.value


async def test_a_player_lists_a_rooms_live_tables_and_watches_one_delayed_without_a_hidden_tile(
    start_service: Any,
    service_env: dict[str, str],
    start_matchmaking: Callable[..., Any],
    unique_name: Callable[[str], str],
    seat_secrets: Callable[[Any], list[str]],
    client_tls: ClientTls,
) -> None:
    wallet, matchmaking = await start_matchmaking([WATCHED, QUIET])
    table_server = TableServer()
    settings = {
        **service_env,
        "ANNOUNCE_SECONDS": "0.2",
        "SERVER_ID": unique_name("watched"),
        "DRAIN_SECONDS": "2",
        # No scoring runs here: a hand's end need not wait long for a settlement that never comes.
        "SETTLEMENT_WAIT_SECONDS": "0.5",
    }
    await start_service(table_server.spec, TableConfig.from_env(settings))
    clients = [
        DuelClient(tls=client_tls, wallet=wallet.server.address, matchmaking=matchmaking.server.address)
        for _ in range(3)
    ]
    for name, client in zip(("ana", "bo", "watcher"), clients, strict=True):
        await client.login(name)
    players, spectator = clients[:2], clients[2]
    try:
        rooms = {room.room_id: room.rules for room in await spectator.rooms()}
        assert (rooms["erren-watched"].watchable, rooms["erren-watched"].spectate_delay_seconds) == (
            True,
            DELAY,
        )
        assert (rooms["erren-quiet"].watchable, rooms["erren-quiet"].spectate_delay_seconds) == (False, 30)
        readies = await asyncio.gather(*(p.find_table("erren-watched", 200) for p in players))
        plays = [
            asyncio.create_task(p.play(ready, BaselineBot(), MatchPlan(hands=2)))
            for p, ready in zip(players, readies, strict=True)
        ]
        listed = await spectator.live_tables("erren-watched")
        assert [t.table_id for t in listed] == [readies[0].table_id]
        table = listed[0]
        assert (table.room_id, table.address, table.spectate_delay_seconds) == (
            "erren-watched",
            table_server.address,
            DELAY,
        )
        assert [p.seat for p in table.players] == [rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND]
        assert {(p.player_id, p.display_name) for p in table.players} == {
            (players[0].player_id, "ana"),
            (players[1].player_id, "bo"),
        }
        assert table.opened_at.seconds > 0
        assert await spectator.live_tables("erren-quiet") == []
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await spectator.live_tables("erren-nowhere")
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

        duel = Path(sys.executable).parent / "duel"
        command = [str(duel), "watch", "erren-watched", "--wallet", wallet.server.address]
        command += ["--matchmaking", matchmaking.server.address, "--ca-file", str(client_tls.ca_file)]
        cli = await asyncio.create_subprocess_exec(*command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        got: list[tuple[float, table_pb2.WatchResponse]] = []
        async with asyncio.timeout(120):
            async for response in spectator.watch(table):
                got.append((time.time(), response))
        await asyncio.gather(*plays)
        printed, errors = await asyncio.wait_for(cli.communicate(), 60)
        assert cli.returncode == 0, errors.decode()
        lines = printed.decode().splitlines()
        assert (
            lines[0].startswith(f"watching table {table.table_id} in erren-watched")
            and "2 s behind" in lines[0]
        )
        assert lines[1].startswith("── the table as of the delay:")
        assert any(" discards " in line for line in lines) and lines[-1].startswith("── table closed:")

        first = got[0][1]
        assert first.HasField("state") and first.delay_seconds == DELAY
        assert first.state.table_id == table.table_id
        events = [(at, r.event) for at, r in got[1:]]
        assert all(r.HasField("event") for _, r in got[1:])
        sequences = [e.sequence for _, e in events]
        assert sequences == list(range(first.state.sequence + 1, first.state.sequence + 1 + len(sequences)))
        assert events[-1][1].HasField("table_ended")
        kinds = {e.WhichOneof("kind") for _, e in events}
        assert {"hand_started", "tiles_dealt", "tile_drawn", "tile_discarded", "hand_revealed"} <= kinds
        lags = [at - e.occurred_at.ToNanoseconds() / 1e9 for at, e in events]
        assert min(lags) >= DELAY, min(lags)
        assert [hidden for _, e in events for hidden in seat_secrets(e)] == []
        dealt = [e.tiles_dealt for _, e in events if e.HasField("tiles_dealt")]
        assert dealt and all(d.count >= 13 and not d.tiles for d in dealt)
        print(
            f"spectator lag after occurred_at: min {min(lags):.3f} s, max {max(lags):.3f} s (delay {DELAY} s)"
        )

        async with client_tls.channel(table_server.address) as channel:
            stub = table_pb2_grpc.TableServiceStub(channel)
            request = table_pb2.WatchRequest(table_id="t-nowhere")
            refused = await _refused(stub.Watch(request, metadata=spectator.metadata))
            assert refused.code() == grpc.StatusCode.NOT_FOUND
            assert "ListLiveTables" in (refused.details() or "")
            refused = await _refused(stub.Watch(request))
            assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
            quiet = check_open_request(
                "t-quiet",
                "p-quiet",
                "erren-quiet",
                rules_pb2.RoomRules(profile=rules_pb2.PROFILE_ERREN, fan_rate=1),
                [
                    rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="x"),
                    rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="y"),
                ],
                1,
            )
            table_server.host.open(quiet)
            request = table_pb2.WatchRequest(table_id="t-quiet")
            refused = await _refused(stub.Watch(request, metadata=spectator.metadata))
            assert refused.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "not watchable" in (refused.details() or "")
    finally:
        for client in clients:
            await client.close()
