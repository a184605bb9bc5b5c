"""Settings of the matchmaking service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.platform.config import ServiceConfig, setting


@dataclass(frozen=True, kw_only=True)
class MatchmakingConfig(ServiceConfig):
    service_name: str = setting("matchmaking", help="service name, used in logs and metric names")
    wallet_address: str = setting("", help="host:port of the wallet service (holds for the carry)")
