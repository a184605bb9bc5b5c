"""Settings of the scoring service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from duelmahjong.platform.config import ServiceConfig, setting


@dataclass(frozen=True, kw_only=True)
class ScoringConfig(ServiceConfig):
    REQUIRES_DATABASE: ClassVar[bool] = True

    service_name: str = setting("scoring", help="service name, used in logs and metric names")
    # Its own variable: scoring's archive is a database of its own, beside the wallet's ledger.
    database_url: str = setting(
        "",
        env="SCORING_DATABASE_URL",
        help="Postgres URL of the archive of finished hands, scoring's own database as its own role, "
        "TLS verified (postgresql://scoring:<password>@host:port/scoring?sslmode=verify-full"
        "&sslrootcert=<CA file>)",
        secret=True,
    )
    log_wait_deliveries: int = setting(
        5,
        env="SCORING_LOG_WAIT_DELIVERIES",
        help="deliveries of a HandEnded whose table log is still short of last_sequence before the "
        "hand is refused (the table writes its log ahead, so only a lagging stream is waited for)",
    )
    consumer_workers: int = setting(
        2, env="SCORING_CONSUMER_WORKERS", help="HandEnded workers per replica sharing the durable consumer"
    )
    log_fetch_seconds: float = setting(
        2.0,
        env="SCORING_LOG_FETCH_SECONDS",
        help="longest a read of a table's log waits for its answers (a lagging replica catching up included)",
    )
    archive_workers: int = setting(
        1,
        env="SCORING_ARCHIVE_WORKERS",
        help="workers per replica for each archive consumer (closed tables' void hands, the wallet's "
        "settlements)",
    )

    def validate(self) -> list[str]:
        problems = super().validate()
        problems += self.at_least_one("log_wait_deliveries", "consumer_workers", "archive_workers")
        return problems + self.positive("log_fetch_seconds")
