"""Composition root of the scoring service: builds its parts and hands them to the platform."""

from __future__ import annotations

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import scoring_pb2_grpc
from services.scoring import events
from services.scoring.api import ARRIVES_WITH, SERVICE_NAME, ScoringApi
from services.scoring.config import ScoringConfig
from services.scoring.core import ScoringCore


async def wire(runtime: ServiceRuntime[ScoringConfig]) -> None:
    await events.declare(runtime.require_bus())
    api = ScoringApi(ScoringCore())
    runtime.server.add_service(SERVICE_NAME, scoring_pb2_grpc.add_ScoringServiceServicer_to_server, api)


SPEC = ServiceSpec(wire=wire, pending_note=ARRIVES_WITH)


def main() -> int:
    return run(ScoringConfig, SPEC)
