"""Composition root of the matchmaking service: builds its parts and hands them to the platform."""

from __future__ import annotations

import asyncio
import socket
import uuid

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import matchmaking_pb2_grpc
from services.matchmaking import events, metrics
from services.matchmaking.api import SERVICE_NAME, MatchmakingApi
from services.matchmaking.bots import BotPool, ClientBots
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServerDirectory
from services.matchmaking.leases import Leases
from services.matchmaking.records import Records
from services.matchmaking.remote import ServiceToken, TableClient, WalletClient, WalletMissing
from services.matchmaking.store import Backend, JetStreamBackend, MemoryBackend, Mirror

HEALTH_SECONDS = 1.0


def replica_name(config: MatchmakingConfig) -> str:
    """The configured name, else the host's and a fresh suffix (a restarted process is a new replica:
    its predecessor's rooms are taken over like any dead replica's)."""
    if config.matchmaking_replica_id:
        return config.matchmaking_replica_id
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname()) or "mm"
    return f"{host}-{uuid.uuid4().hex[:6]}"


async def wire(runtime: ServiceRuntime[MatchmakingConfig]) -> None:
    config = runtime.config
    bus = runtime.require_bus()
    await events.declare(bus)
    backend: Backend
    if config.matchmaking_store == "memory":
        backend = MemoryBackend()
    else:
        backend = JetStreamBackend(bus, config.matchmaking_bucket)
        await backend.open()
    records = Records()
    replica_id = replica_name(config)
    rooms = config.rooms()
    leases: Leases | None = None

    def on_change(key: str, value: bytes | None) -> None:
        records.apply(key, value)
        if leases is not None:
            leases.observe(key, value)

    mirror = Mirror(backend, on_change=on_change)
    records.attach(mirror)
    await mirror.start()
    leases = (
        None
        if config.matchmaking_store == "memory"
        else Leases(
            mirror,
            replica_id,
            list(rooms),
            lease_seconds=config.matchmaking_lease_seconds,
            sharing=config.matchmaking_room_sharing,
        )
    )
    if leases is not None:
        # The bucket's stream may still be electing its leader (a replicated bucket just created, a
        # cluster node lost): the first heartbeat is put again until it is stored, as a publish would be.
        await bus.until_stored(leases.renew, what={"heartbeat": replica_id})
        await leases.start()

    token = ServiceToken(config.token_keys())
    tls = config.client_tls()
    wallet = WalletClient(config.wallet_address, token, tls) if config.wallet_address else WalletMissing()
    tables = TableClient(token, tls)
    directory = TableServerDirectory(ttl_seconds=config.matchmaking_server_ttl_seconds)
    matchmaker = Matchmaker(
        rooms,
        wallet,
        tables,
        directory,
        records,
        # Streams are followed by this process, not the replica name a restarted process takes again.
        replica_id=replica_id if leases is None else leases.process,
        leases=leases,
        lost_tables=events.LostTableCloser(bus),
        server_lost_seconds=config.matchmaking_server_lost_seconds,
        adoption_grace_seconds=config.matchmaking_adoption_grace_seconds,
        private_joins=config.private_joins(),
        stream_grace_seconds=config.matchmaking_stream_grace_seconds,
    )
    metrics.register(runtime.metrics, matchmaker)
    bots = None
    if isinstance(wallet, WalletClient):
        pool = BotPool(config.matchmaking_bot_pool)
        bots = ClientBots(
            config.wallet_address,
            wallet,
            lambda: runtime.server.address,
            matchmaker,
            pool,
            tls,
            lambda: runtime.server.own_tls(tls),
        )
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

    async def report_health() -> None:
        # Ready while this replica's view of the store is current; a replica cut off from NATS says
        # NOT_SERVING (readiness), not dead (liveness), and serves again once it is back.
        while True:
            await asyncio.sleep(HEALTH_SECONDS)
            await runtime.server.mark(serving=leases is None or leases.current())

    runtime.spawn(report_health(), name="store-health")

    async def close() -> None:
        if bots is not None:
            await bots.close()
        await matchmaker.close()
        if leases is not None:
            await leases.stop(release=True)
        await mirror.stop()
        await tables.close()
        await wallet.close()

    runtime.on_close(close)


SPEC = ServiceSpec(wire=wire)


def main() -> int:
    return run(MatchmakingConfig, SPEC)
