"""Settings of the scoring service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.platform.config import ServiceConfig, setting


@dataclass(frozen=True, kw_only=True)
class ScoringConfig(ServiceConfig):
    service_name: str = setting("scoring", help="service name, used in logs and metric names")
