"""Composition root of the table service: builds its parts and hands them to the platform."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import table_pb2_grpc
from services.table import events
from services.table.api import SERVICE_NAME, TableApi
from services.table.config import TableConfig
from services.table.core import TableHost, TableMetrics
from services.table.tickets import TicketBook

# runtime id → the live tables' host, for the drain hook (and tests reaching a running server's tables)
HOSTS: dict[int, TableHost] = {}
_JOURNALS: dict[int, events.NatsJournal] = {}

_log = get_logger("table.main")


async def wire(runtime: ServiceRuntime[TableConfig]) -> None:
    config = runtime.config
    bus = runtime.require_bus()
    await events.declare(bus)
    journal = events.NatsJournal(bus, producer=f"table/{config.server_id or 'table'}")
    await journal.start()
    host = TableHost(
        config.table_capacity,
        journal=journal,
        tickets=TicketBook(config.token_secret),
        metrics=TableMetrics.create(runtime.metrics),
        queue_size=config.table_queue_size,
        settlement_wait=config.settlement_wait_seconds,
        join_seconds=config.join_seconds,
    )
    host.locate = lambda: config.advertise_address or f"{config.grpc_host}:{runtime.server.port}"
    HOSTS[id(runtime)] = host
    _JOURNALS[id(runtime)] = journal
    runtime.server.add_service(
        SERVICE_NAME,
        table_pb2_grpc.add_TableServiceServicer_to_server,
        TableApi(host, reply_limit=config.seat_reply_limit),
    )
    runtime.spawn(_announce(runtime, journal, host), name="announce")


async def _announce(
    runtime: ServiceRuntime[TableConfig], journal: events.NatsJournal, host: TableHost
) -> None:
    while True:  # the gRPC port is known once the server has started, right after wiring
        try:
            port = runtime.server.port
            break
        except RuntimeError:
            await asyncio.sleep(0.05)
    server_id = runtime.config.server_name(port)
    journal.producer = f"table/{server_id}"
    await events.announce_forever(journal, server_id, host, runtime.config.announce_seconds)


async def drain(runtime: ServiceRuntime[Any]) -> None:
    """SIGTERM: announce draining, take no new tables, let live hands finish, then stop (exit 0)."""
    host, journal = HOSTS.pop(id(runtime), None), _JOURNALS.pop(id(runtime), None)
    if host is None or journal is None:
        return
    host.draining = True
    try:  # tell matchmaking at once rather than at the next heartbeat
        server_id = runtime.config.server_name(runtime.server.port)
        await journal.announce(server_id, host, time.time_ns() // 1_000_000)
    except Exception:
        _log.exception("could not announce the drain; the next heartbeat will")
    await host.drain(runtime.config.drain_seconds)


SPEC = ServiceSpec(wire=wire, drain=drain)


def main() -> int:
    return run(TableConfig, SPEC)
