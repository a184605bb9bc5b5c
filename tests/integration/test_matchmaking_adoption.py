"""Tables that move, as matchmaking sees them (real wallet, matchmaking and table server; gRPC, NATS):
``LocateTable`` answers where a table is served — the opener, then whoever adopted it — to its two
players only; a table whose server restarted is closed as lost only once the adoption grace has
passed without a ``TableAdopted``, and not at all when one comes within it."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import grpc.aio
import pytest

from duelmahjong.client.session import DuelClient
from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.service import ServiceRuntime
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import events_pb2
from duelmahjong.v1 import matchmaking_pb2 as mm
from services.table.config import TableConfig
from services.table.main import TableServer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ROOM_ID = "erren-move"
ROOM = {"room_id": ROOM_ID, "profile": "erren", "fan_rate": 1, "fee": 1, "carry_min": 100}
GRACE = 2.0


async def _table_server(start_service: Any, env: dict[str, str], server_id: str) -> TableServer:
    server = TableServer()
    # DRAIN_SECONDS: its tables at teardown wait for seats that never come; the stop stays bounded.
    settings = {
        **env,
        "ANNOUNCE_SECONDS": "0.2",
        "JOIN_SECONDS": "120",
        "SERVER_ID": server_id,
        "DRAIN_SECONDS": "2",
    }
    await start_service(server.spec, TableConfig.from_env(settings))
    return server


async def _players(
    matchmaking: ServiceRuntime[Any], wallet: ServiceRuntime[Any], n: int, client_tls: ClientTls
) -> list[DuelClient]:
    clients = [
        DuelClient(tls=client_tls, wallet=wallet.server.address, matchmaking=matchmaking.server.address)
        for _ in range(n)
    ]
    for number, client in enumerate(clients):
        await client.login(f"mover-{number}")
    return clients


async def _seated(clients: list[DuelClient]) -> list[mm.TableReady]:
    return list(await asyncio.gather(*(c.find_table(ROOM_ID, 200) for c in clients)))


async def _locate(client: DuelClient, table_id: str) -> mm.LocateTableResponse:
    return await client.matchmaking.LocateTable(
        mm.LocateTableRequest(table_id=table_id), metadata=client.metadata
    )


def _adopted(
    table_id: str, pairing_id: str, server_id: str, address: str, incarnation: str
) -> events_pb2.TableAdopted:
    return events_pb2.TableAdopted(
        envelope=events_pb2.EventEnvelope(
            event_id=subjects.table_adopted_id(table_id, incarnation), producer=f"table/{server_id}"
        ),
        table_id=table_id,
        pairing_id=pairing_id,
        server_id=server_id,
        address=address,
        incarnation=incarnation,
        how=events_pb2.ADOPTION_KIND_HANDED_OVER,
    )


def _metric(matchmaking: ServiceRuntime[Any], name: str, labels: str) -> float:
    """The value of ``duel_matchmaking_<name>_total{<labels>}`` now."""
    with urllib.request.urlopen(f"http://127.0.0.1:{matchmaking.metrics_port}/metrics", timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(f"duel_matchmaking_{name}_total{{{labels}}}"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _until(check: Callable[[], Awaitable[bool]], within: float) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.05)


async def test_locate_table_follows_an_adoption_and_answers_only_the_table_s_players(
    start_service: Any,
    service_env: dict[str, str],
    start_matchmaking: Callable[..., Any],
    unique_name: Callable[[str], str],
    bus: Bus,
    client_tls: ClientTls,
) -> None:
    wallet, matchmaking = await start_matchmaking([ROOM])
    server_id = unique_name("opener")
    table_server = await _table_server(start_service, service_env, server_id)
    clients = await _players(matchmaking, wallet, 3, client_tls)
    try:
        readies = await _seated(clients[:2])
        table_id = readies[0].table_id
        for client in clients[:2]:
            located = await _locate(client, table_id)
            assert (located.table_id, located.address, located.server_id, located.open) == (
                table_id,
                table_server.address,
                server_id,
                True,
            )
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await _locate(clients[2], table_id)  # not a player at that table
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert f"not a player at table {table_id}" in (denied.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await _locate(clients[0], "t-nowhere")
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        assert "no table 't-nowhere' is known to matchmaking" in (unknown.value.details() or "")

        moved = _adopted(table_id, readies[0].pairing_id, "adopter", "127.0.0.1:1", "adopter-1")
        await bus.publish_event(subjects.TABLE_ADOPTED, moved)

        async def moved_there() -> bool:
            return (await _locate(clients[1], table_id)).address == "127.0.0.1:1"

        await _until(moved_there, within=10)
        located = await _locate(clients[0], table_id)
        assert (located.server_id, located.open) == ("adopter", True)
        assert _metric(matchmaking, "table_adopted", 'kind="handed_over"') == 1
        with pytest.raises(grpc.aio.AioRpcError) as still_denied:
            await _locate(clients[2], table_id)
        assert still_denied.value.code() == grpc.StatusCode.PERMISSION_DENIED

        closed = events_pb2.TableClosed(
            envelope=events_pb2.EventEnvelope(event_id=subjects.table_closed_id(table_id), producer="test"),
            table_id=table_id,
            server_id="adopter",
            pairing_id=readies[0].pairing_id,
            reason="the test closed it",
        )
        await bus.publish_event(subjects.TABLE_CLOSED, closed)

        async def closed_there() -> bool:
            return not (await _locate(clients[0], table_id)).open

        await _until(closed_there, within=10)
        assert (await _locate(clients[0], table_id)).address == "127.0.0.1:1"  # where it was last
    finally:
        for client in clients:
            await client.close()


async def _announce_restarted(bus: Bus, server: TableServer, server_id: str, incarnation: str) -> None:
    """Announce ``server_id`` as restarted (another incarnation), outnumbering the real heartbeats."""
    number = time.time_ns() // 1_000_000 + 10**9
    while True:
        number += 1
        event = events_pb2.TableServerAnnounced(
            envelope=events_pb2.EventEnvelope(event_id=f"announce:{server_id}:{number}", producer="test"),
            server_id=server_id,
            address=server.address,
            capacity=10,
            announce_number=number,
            incarnation=incarnation,
        )
        await bus.publish_event(subjects.TABLE_SERVER_ANNOUNCED, event)
        await asyncio.sleep(0.2)


async def test_a_lost_table_closes_after_the_grace_unless_adopted_within_it(
    start_service: Any,
    service_env: dict[str, str],
    start_matchmaking: Callable[..., Any],
    unique_name: Callable[[str], str],
    bus: Bus,
    client_tls: ClientTls,
) -> None:
    settings = {
        "MATCHMAKING_SERVER_TTL_SECONDS": "1",
        "MATCHMAKING_SERVER_LOST_SECONDS": "1.5",
        "MATCHMAKING_ADOPTION_GRACE_SECONDS": str(GRACE),
    }
    wallet, matchmaking = await start_matchmaking([ROOM], settings)
    server_id = unique_name("restarting")
    table_server = await _table_server(start_service, service_env, server_id)
    clients = await _players(matchmaking, wallet, 4, client_tls)
    restarted: asyncio.Task[None] | None = None
    try:
        kept = await _seated(clients[:2])
        orphaned = await _seated(clients[2:])
        assert kept[0].table_id != orphaned[0].table_id

        # The server id comes back as another process: both its tables are lost from now on.
        restarted = asyncio.create_task(_announce_restarted(bus, table_server, server_id, "second"))
        lost_at = time.monotonic()
        await asyncio.sleep(GRACE / 4)
        # The new process adopts one of them within the grace.
        moved = _adopted(kept[0].table_id, kept[0].pairing_id, server_id, table_server.address, "second")
        await bus.publish_event(subjects.TABLE_ADOPTED, moved)

        await asyncio.sleep(GRACE / 2)
        assert (await _locate(clients[2], orphaned[0].table_id)).open  # the grace is not over yet

        async def orphan_closed() -> bool:
            return not (await _locate(clients[2], orphaned[0].table_id)).open

        await _until(orphan_closed, within=GRACE + 5)
        assert time.monotonic() - lost_at >= GRACE
        assert _metric(matchmaking, "table_lost", f'room="{ROOM_ID}"') == 1  # closed as lost

        await asyncio.sleep(GRACE)  # well past the grace: the adopted table is still open
        located = await _locate(clients[0], kept[0].table_id)
        assert located.open and located.server_id == server_id
        assert _metric(matchmaking, "table_lost", f'room="{ROOM_ID}"') == 1
        assert _metric(matchmaking, "table_adopted", 'kind="handed_over"') == 1
    finally:
        if restarted is not None:
            restarted.cancel()
            await asyncio.gather(restarted, return_exceptions=True)
        for client in clients:
            await client.close()
