"""Composition root of the scoring service: builds its parts and hands them to the platform."""

from __future__ import annotations

import asyncio
from pathlib import Path

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.rules import analysis
from duelmahjong.v1 import archive_pb2_grpc, scoring_pb2_grpc
from services.scoring import archive_api, archive_events, events
from services.scoring.api import SERVICE_NAME, ScoringApi
from services.scoring.archive_store import ArchiveStore
from services.scoring.config import ScoringConfig
from services.scoring.core import ScoringCore
from services.scoring.tablelog import TableLogReader

MIGRATIONS = Path(__file__).parent / "migrations"


async def wire(runtime: ServiceRuntime[ScoringConfig]) -> None:
    bus = runtime.require_bus()
    config = runtime.config
    store = ArchiveStore(runtime.require_db())
    await events.declare(bus)
    await asyncio.to_thread(analysis.load_tables)  # the replays' rules, before the first hand
    core = ScoringCore()
    reader = TableLogReader(bus, fetch_seconds=config.log_fetch_seconds)
    archiver = archive_events.Archiver(store, runtime.metrics)
    handler = events.HandEndedHandler(
        bus,
        core,
        runtime.metrics,
        producer=f"scoring/{config.service_name}",
        archiver=archiver,
        reader=reader,
        log_wait_deliveries=config.log_wait_deliveries,
    )
    for worker in range(config.consumer_workers):  # each binds the shared durable and fetches from it
        runtime.spawn(
            bus.consume(events.HANDS_ENDED, handler, stop=runtime.stopping), name=f"hands-ended-{worker}"
        )
    closed = archive_events.TableClosedHandler(archiver, reader)
    settled = archive_events.SettlementAppliedHandler(store, runtime.metrics)
    for worker in range(config.archive_workers):
        runtime.spawn(
            bus.consume(archive_events.TABLES_CLOSED, closed, stop=runtime.stopping),
            name=f"tables-closed-{worker}",
        )
        runtime.spawn(
            bus.consume(archive_events.SETTLEMENTS_APPLIED, settled, stop=runtime.stopping),
            name=f"settlements-applied-{worker}",
        )
    runtime.server.add_service(
        SERVICE_NAME, scoring_pb2_grpc.add_ScoringServiceServicer_to_server, ScoringApi(core)
    )
    runtime.server.add_service(
        archive_api.SERVICE_NAME,
        archive_pb2_grpc.add_ArchiveServiceServicer_to_server,
        archive_api.ArchiveApi(store),
    )


SPEC = ServiceSpec(wire=wire, migrations=MIGRATIONS)


def main() -> int:
    return run(ScoringConfig, SPEC)
