"""Composition root of the matchmaking service: builds its parts and hands them to the platform."""

from __future__ import annotations

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import matchmaking_pb2_grpc
from services.matchmaking import events, metrics
from services.matchmaking.api import SERVICE_NAME, MatchmakingApi
from services.matchmaking.bots import BotPool, ClientBots
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServerDirectory
from services.matchmaking.remote import ServiceToken, TableClient, WalletClient, WalletMissing


async def wire(runtime: ServiceRuntime[MatchmakingConfig]) -> None:
    config = runtime.config
    bus = runtime.require_bus()
    await events.declare(bus)
    token = ServiceToken(config.token_secret)
    wallet = WalletClient(config.wallet_address, token) if config.wallet_address else WalletMissing()
    tables = TableClient(token)
    directory = TableServerDirectory(ttl_seconds=config.matchmaking_server_ttl_seconds)
    matchmaker = Matchmaker(
        config.rooms(),
        wallet,
        tables,
        directory,
        lost_tables=events.LostTableCloser(bus),
        server_lost_seconds=config.matchmaking_server_lost_seconds,
        adoption_grace_seconds=config.matchmaking_adoption_grace_seconds,
        private_joins=config.private_joins(),
    )
    metrics.register(runtime.metrics, matchmaker)
    bots = None
    if isinstance(wallet, WalletClient):
        pool = BotPool(config.matchmaking_bot_pool)
        bots = ClientBots(config.wallet_address, wallet, lambda: runtime.server.address, matchmaker, pool)
        matchmaker.attach_bots(bots)
    runtime.server.add_service(
        SERVICE_NAME,
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server,
        MatchmakingApi(matchmaker),
    )
    await events.follow_announcements(bus, matchmaker)
    runtime.spawn(
        bus.consume(events.TABLE_CLOSED, events.table_closed_handler(matchmaker)), name="table-closed"
    )
    runtime.spawn(
        bus.consume(events.TABLE_ADOPTED, events.table_adopted_handler(matchmaker)), name="table-adopted"
    )
    runtime.spawn(matchmaker.run(config.matchmaking_tick_seconds), name="matchmaker")

    async def close() -> None:
        if bots is not None:
            await bots.close()
        await matchmaker.close()
        await tables.close()
        await wallet.close()

    runtime.on_close(close)


SPEC = ServiceSpec(wire=wire)


def main() -> int:
    return run(MatchmakingConfig, SPEC)
