"""Composition root of the matchmaking service: builds its parts and hands them to the platform."""

from __future__ import annotations

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import matchmaking_pb2_grpc
from services.matchmaking import events
from services.matchmaking.api import ARRIVES_WITH, SERVICE_NAME, MatchmakingApi
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.core import TableServerDirectory


async def wire(runtime: ServiceRuntime[MatchmakingConfig]) -> None:
    await events.declare(runtime.require_bus())
    api = MatchmakingApi(TableServerDirectory())
    runtime.server.add_service(
        SERVICE_NAME, matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server, api
    )


SPEC = ServiceSpec(wire=wire, pending_note=ARRIVES_WITH)


def main() -> int:
    return run(MatchmakingConfig, SPEC)
