"""Settings of the scoring service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.platform.config import ServiceConfig, setting


@dataclass(frozen=True, kw_only=True)
class ScoringConfig(ServiceConfig):
    service_name: str = setting("scoring", help="service name, used in logs and metric names")
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
        2.0, env="SCORING_LOG_FETCH_SECONDS", help="longest wait for one batch of a table's log"
    )

    def validate(self) -> list[str]:
        problems = super().validate()
        if self.log_wait_deliveries < 1:
            problems.append(f"SCORING_LOG_WAIT_DELIVERIES={self.log_wait_deliveries} must be at least 1")
        if self.consumer_workers < 1:
            problems.append(f"SCORING_CONSUMER_WORKERS={self.consumer_workers} must be at least 1")
        if self.log_fetch_seconds <= 0:
            problems.append(f"SCORING_LOG_FETCH_SECONDS={self.log_fetch_seconds} must be positive")
        return problems
