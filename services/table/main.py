"""Composition root of the table service: builds its parts and hands them to the platform.

One :class:`TableServer` per server process (tests run several in one): its ``spec`` is what the
platform runs, and its ``host`` is the handle to the server's live tables once wired.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.rules import analysis
from duelmahjong.v1 import table_pb2_grpc
from services.table import publishers
from services.table.adoption import AdoptionMetrics
from services.table.announcer import Announcer
from services.table.api import SERVICE_NAME, TableApi
from services.table.config import TableConfig
from services.table.core import TableHost
from services.table.failover import Failover
from services.table.gc_pauses import GcPauses
from services.table.gc_policy import GcPolicy, GcSettings
from services.table.metrics import TableMetrics
from services.table.ports import BusPorts
from services.table.publishers import NatsTableEvents, Producer
from services.table.settlements import SettlementInbox
from services.table.spectators import SpectatorMetrics, Spectators
from services.table.tickets import TicketBook
from services.table.wal import NatsWriteAheadLog

_log = get_logger("table.main")


@dataclass
class _Wired:
    runtime: ServiceRuntime[TableConfig]
    host: TableHost
    producer: Producer
    announcer: Announcer
    failover: Failover
    drained: bool = False


class TableServer:
    """One table server: wired once by the platform (``spec``), drained on SIGTERM."""

    def __init__(self) -> None:
        self.spec = ServiceSpec(wire=self._wire, drain=self._drain)
        self._wired: _Wired | None = None

    @property
    def host(self) -> TableHost:
        """The server's live tables (for its drain, and for tests reaching a running server's tables)."""
        return self._parts().host

    @property
    def failover(self) -> Failover:
        """The server's lease, ownership watch and hand-off (for tests reaching a running server's)."""
        return self._parts().failover

    @property
    def address(self) -> str:
        """Where the server's gRPC port is reached (host:port)."""
        return self._parts().runtime.server.address

    def _parts(self) -> _Wired:
        if self._wired is None:
            raise RuntimeError("the table server is not wired yet: start its spec first")
        return self._wired

    async def _wire(self, runtime: ServiceRuntime[TableConfig]) -> None:
        if self._wired is not None:
            raise RuntimeError("a TableServer wires one server: make one per server")
        config = runtime.config
        bus = runtime.require_bus()
        # The engine's rules, before the first table and before the collector freezes what exists.
        await asyncio.to_thread(analysis.load_tables)
        await publishers.declare(bus)
        producer = Producer(f"table/{config.server_id or 'table'}")
        metrics = TableMetrics.create(runtime.metrics)
        settlements = SettlementInbox(
            bus, hosts=lambda table_id: table_id in host.live_tables, metrics=metrics
        )
        events = NatsTableEvents(bus, producer)
        host = TableHost(
            config.table_capacity,
            ports=BusPorts(wal=NatsWriteAheadLog(bus, producer), events=events, settlements=settlements),
            tickets=TicketBook(config.token_keys()),
            metrics=metrics,
            queue_size=config.table_queue_size,
            settlement_wait=config.settlement_wait_seconds,
            join_seconds=config.join_seconds,
            spectators=Spectators(
                per_table=config.watchers_per_table,
                max_lag=config.watch_max_lag_seconds,
                metrics=SpectatorMetrics.create(runtime.metrics),
            ),
        )
        await settlements.start()
        host.locate = lambda: config.advertise_address or f"{config.grpc_host}:{runtime.server.port}"
        failover = Failover(
            bus,
            host,
            events,
            lease_seconds=config.table_lease_seconds,
            bucket=config.table_owners_bucket,
            metrics=AdoptionMetrics.create(runtime.metrics),
        )
        wired = self._wired = _Wired(runtime, host, producer, Announcer(bus, producer, host), failover)
        runtime.server.add_service(
            SERVICE_NAME,
            table_pb2_grpc.add_TableServiceServicer_to_server,
            TableApi(host, reply_limit=config.seat_reply_limit, opener=failover.open),
        )
        runtime.on_close(lambda: failover.stop(release=True))
        gc_pauses = GcPauses(runtime.metrics)  # a full collection pauses every table of the process
        gc_pauses.install()
        runtime.on_close(gc_pauses.close)
        thresholds = (config.gc_threshold0, config.gc_threshold1, config.gc_threshold2)
        gc_settings = GcSettings(config.gc_freeze_seconds, thresholds, config.gc_pause_target_seconds)
        gc_policy = GcPolicy(gc_settings)
        runtime.metrics.gauge(
            "gc_freeze_period", "seconds", "the current period between two freezes of the collector"
        ).set_function(lambda: gc_policy.period)
        gc_policy.install()  # what the server has built so far (modules, its parts) lives as long as it
        runtime.on_close(gc_policy.close)
        runtime.spawn(gc_policy.run_forever(), name="gc-freeze")
        runtime.on_close(host.spectators.stop)
        runtime.spawn(self._announce(wired), name="announce")

    @staticmethod
    async def _announce(wired: _Wired) -> None:
        runtime = wired.runtime
        while True:  # the gRPC port is known once the server has started, right after wiring
            try:
                port = runtime.server.port
                break
            except RuntimeError:
                await asyncio.sleep(0.05)
        server_id = runtime.config.server_name(port)
        wired.producer.name = f"table/{server_id}"
        # Owned before announced: matchmaking opens no table here before this server can claim it.
        adopter = await wired.failover.start(server_id)
        runtime.spawn(adopter.run_forever(), name="adoption")
        await wired.announcer.announce_forever(server_id, runtime.config.announce_seconds)

    async def _drain(self, runtime: ServiceRuntime[Any]) -> None:
        await self.drain()

    async def drain(self) -> None:
        """SIGTERM: announce draining, take no new tables, let live hands finish, then stop (exit 0).
        Once: a second call (the platform's, after a test's) does nothing."""
        wired = self._wired
        if wired is None or wired.drained:
            return
        wired.drained = True
        host, runtime = wired.host, wired.runtime
        host.draining = True
        try:  # tell matchmaking at once rather than at the next heartbeat
            await wired.announcer.announce(runtime.config.server_name(runtime.server.port))
        except Exception:
            _log.exception("could not announce the drain; the next heartbeat will")
        kept = await wired.failover.hand_off()  # mid-hand, to the live servers with room
        if kept:
            _log.info("no room elsewhere: these tables finish here", extra={"fields": {"tables": kept}})
        await host.drain(runtime.config.drain_seconds)


def main() -> int:
    return run(TableConfig, TableServer().spec)
