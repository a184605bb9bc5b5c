"""Allocation against real table servers (gRPC, NATS): a pairing waits while no server has announced
room, then opens on an announced one, and each player gets that server's address and a ticket its
Play stream accepts. (Choosing the least-loaded server: tests/unit/test_matchmaking_core.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio
import pytest

from duelmahjong.client.session import DuelClient
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.table.config import TableConfig
from services.table.main import TableServer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ROOMS = [{"room_id": "erren-alloc", "profile": "erren", "fan_rate": 1, "fee": 1, "carry_min": 100}]


async def _next(updates: asyncio.Queue[mm.QueueUpdate], kind: str, within: float = 15.0) -> mm.QueueUpdate:
    async with asyncio.timeout(within):
        while True:
            update = await updates.get()
            if update.WhichOneof("kind") == kind:
                return update


async def test_a_pairing_waits_for_a_table_server_then_opens_on_an_announced_one(
    start_service: Any,
    service_env: dict[str, str],
    unique_name: Callable[[str], str],
    start_matchmaking: Callable[..., Any],
    client_tls: ClientTls,
) -> None:
    wallet, matchmaking = await start_matchmaking(ROOMS)

    players = [
        DuelClient(tls=client_tls, wallet=wallet.server.address, matchmaking=matchmaking.server.address)
        for _ in range(2)
    ]
    streams: list[asyncio.Queue[mm.QueueUpdate]] = [asyncio.Queue(), asyncio.Queue()]

    async def follow(client: DuelClient, updates: asyncio.Queue[mm.QueueUpdate]) -> None:
        async for update in client.queue("erren-alloc", 200):
            updates.put_nowait(update)

    readers = []
    try:
        for client, name in zip(players, ("alice", "bob"), strict=True):
            await client.login(name)
        readers = [asyncio.create_task(follow(c, q)) for c, q in zip(players, streams, strict=True)]
        for updates in streams:
            await _next(updates, "matched")
        # No table server yet: nothing is ready, and nothing is lost.
        with pytest.raises(TimeoutError):
            await _next(streams[0], "table_ready", within=0.6)

        table_env = {**service_env, "ANNOUNCE_SECONDS": "0.2", "TABLE_CAPACITY": "2", "JOIN_SECONDS": "1"}
        small = await start_service(
            TableServer().spec, TableConfig.from_env({**table_env, "SERVER_ID": unique_name("small")})
        )
        roomy_env = {**table_env, "TABLE_CAPACITY": "50", "SERVER_ID": unique_name("roomy")}
        roomy = await start_service(TableServer().spec, TableConfig.from_env(roomy_env))
        readies = [(await _next(updates, "table_ready")).table_ready for updates in streams]
        assert readies[0].table_id == readies[1].table_id
        assert {r.address for r in readies} <= {roomy.server.address, small.server.address}
        assert readies[0].table_ticket != readies[1].table_ticket

        # The ticket is one the chosen table server accepts on its Play stream.
        async with client_tls.channel(readies[0].address) as channel:
            call = table_pb2_grpc.TableServiceStub(channel).Play(metadata=players[0].metadata)
            await call.write(table_pb2.PlayRequest(table_ticket=readies[0].table_ticket))
            first = await asyncio.wait_for(call.read(), 10)
            assert first is not grpc.aio.EOF
            call.cancel()
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        for client in players:
            await client.close()
