"""Composition root of the scoring service: builds its parts and hands them to the platform."""

from __future__ import annotations

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import scoring_pb2_grpc
from services.scoring import events
from services.scoring.api import SERVICE_NAME, ScoringApi
from services.scoring.config import ScoringConfig
from services.scoring.core import ScoringCore


async def wire(runtime: ServiceRuntime[ScoringConfig]) -> None:
    bus = runtime.require_bus()
    config = runtime.config
    await events.declare(bus)
    core = ScoringCore()
    handler = events.HandEndedHandler(
        bus,
        core,
        runtime.metrics,
        producer=f"scoring/{config.service_name}",
        reader=events.TableLogReader(bus, fetch_seconds=config.log_fetch_seconds),
        log_wait_deliveries=config.log_wait_deliveries,
    )
    for worker in range(config.consumer_workers):  # each binds the shared durable and fetches from it
        runtime.spawn(
            bus.consume(events.HANDS_ENDED, handler, stop=runtime.stopping), name=f"hands-ended-{worker}"
        )
    api = ScoringApi(core)
    runtime.server.add_service(SERVICE_NAME, scoring_pb2_grpc.add_ScoringServiceServicer_to_server, api)


SPEC = ServiceSpec(wire=wire)


def main() -> int:
    return run(ScoringConfig, SPEC)
