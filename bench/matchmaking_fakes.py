"""The services matchmaking calls, as fast fakes in one process for ``duel bench matchmaking``: what the
bench measures is matchmaking, so the wallet and the table server answer from memory, at once, over
real gRPC (the calls' wire cost stays in the figures, their work does not).

* ``WalletService``: the calls :class:`services.matchmaking.remote.WalletClient` makes — ``GetBalance``
  (a large available balance, the player id as display name), ``GetRating`` (every player 1500 ± 350
  in every profile, so any two players pair), ``PlaceHold`` / ``ReleaseHold`` (kept in a dict) and
  ``GetInventory`` (empty).
* ``TableService.OpenTable``: a ticket for each seat, this process's address and incarnation.
* ``TableServerAnnounced`` every second on NATS, as a table server announces itself, with room for
  far more tables than a run opens.

``python -m bench.matchmaking_fakes <port> <nats url>`` serves until SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from typing import Any

import grpc.aio

from bench.common import add_port
from duelmahjong.platform import eventloop, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.grpc_server import PENDING_CALL_OPTIONS
from duelmahjong.v1 import events_pb2, rules_pb2, table_pb2, table_pb2_grpc, wallet_pb2, wallet_pb2_grpc

SERVER_ID = "bench-tables"
CAPACITY = 10_000_000
AVAILABLE = 1_000_000_000
ANNOUNCE_SECONDS = 1.0
RATING, DEVIATION = 1500.0, 350.0
_RATINGS = [
    wallet_pb2.SkillRating(profile=profile, rating=RATING, deviation=DEVIATION)
    for profile in (rules_pb2.PROFILE_DUEL, rules_pb2.PROFILE_ERREN)
]
Context = grpc.aio.ServicerContext[Any, Any]


class Wallet(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(self) -> None:
        self.holds: dict[tuple[str, str], int] = {}

    async def GetBalance(
        self, request: wallet_pb2.GetBalanceRequest, context: Context
    ) -> wallet_pb2.GetBalanceResponse:
        return wallet_pb2.GetBalanceResponse(
            player_id=request.player_id,
            balance=AVAILABLE,
            available=AVAILABLE,
            display_name=request.player_id,
        )

    async def GetRating(
        self, request: wallet_pb2.GetRatingRequest, context: Context
    ) -> wallet_pb2.GetRatingResponse:
        return wallet_pb2.GetRatingResponse(player_id=request.player_id, ratings=_RATINGS)

    async def PlaceHold(
        self, request: wallet_pb2.PlaceHoldRequest, context: Context
    ) -> wallet_pb2.PlaceHoldResponse:
        self.holds[request.player_id, request.pairing_id] = request.amount
        return wallet_pb2.PlaceHoldResponse(hold_id=request.pairing_id, available=AVAILABLE - request.amount)

    async def ReleaseHold(
        self, request: wallet_pb2.ReleaseHoldRequest, context: Context
    ) -> wallet_pb2.ReleaseHoldResponse:
        self.holds.pop((request.player_id, request.pairing_id), None)
        return wallet_pb2.ReleaseHoldResponse(available=AVAILABLE)

    async def GetInventory(
        self, request: wallet_pb2.GetInventoryRequest, context: Context
    ) -> wallet_pb2.GetInventoryResponse:
        return wallet_pb2.GetInventoryResponse()


class Tables(table_pb2_grpc.TableServiceServicer):
    def __init__(self, address: str) -> None:
        self.address = address
        self.incarnation = uuid.uuid4().hex[:12]
        self.opened = 0

    async def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: Context
    ) -> table_pb2.OpenTableResponse:
        self.opened += 1
        return table_pb2.OpenTableResponse(
            table_id=request.table_id,
            address=self.address,
            incarnation=self.incarnation,
            tickets=[
                table_pb2.SeatTicket(
                    seat=player.seat,
                    player_id=player.player_id,
                    table_ticket=f"{request.table_id}.{player.seat}",
                )
                for player in request.players
            ],
        )


async def _announce(bus: Bus, tables: Tables, stop: asyncio.Event) -> None:
    await bus.declare_stream(subjects.TABLE_STREAM)
    while not stop.is_set():
        number = time.time_ns() // 1_000_000
        event = events_pb2.TableServerAnnounced(
            envelope=events_pb2.EventEnvelope(event_id=f"announce:{SERVER_ID}:{number}", producer="bench"),
            server_id=SERVER_ID,
            address=tables.address,
            capacity=CAPACITY,
            load=min(tables.opened, CAPACITY),
            announce_number=number,
            incarnation=tables.incarnation,
        )
        await bus.publish_event(subjects.TABLE_SERVER_ANNOUNCED, event)
        try:
            await asyncio.wait_for(stop.wait(), timeout=ANNOUNCE_SECONDS)
        except TimeoutError:
            pass


async def serve(port: int, nats_url: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    address = f"127.0.0.1:{port}"
    tables = Tables(address)
    server = grpc.aio.server(options=PENDING_CALL_OPTIONS)
    wallet_pb2_grpc.add_WalletServiceServicer_to_server(Wallet(), server)
    table_pb2_grpc.add_TableServiceServicer_to_server(tables, server)
    add_port(server, address, os.environ)  # TLS, as the real wallet and table servers serve it
    await server.start()
    bus = await Bus.connect(nats_url, name="bench-matchmaking-fakes")
    try:
        await _announce(bus, tables, stop)
    finally:
        await server.stop(0.5)
        await bus.close()


if __name__ == "__main__":
    eventloop.run(serve(int(sys.argv[1]), sys.argv[2]))
