"""Settings of the table service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.platform.config import ServiceConfig, setting


@dataclass(frozen=True, kw_only=True)
class TableConfig(ServiceConfig):
    service_name: str = setting("table", help="service name, used in logs and metric names")
    table_capacity: int = setting(
        200, help="live tables this server hosts at most (announced to matchmaking)"
    )

    def validate(self) -> list[str]:
        problems = super().validate()
        if self.table_capacity < 1:
            problems.append(f"TABLE_CAPACITY={self.table_capacity} must be at least 1")
        return problems
