"""The wallet's settings, read once from the environment (platform ``ServiceConfig``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from duelmahjong.platform.config import ServiceConfig, setting
from services.wallet.levels import DEFAULT_LEVELS, LevelTable


@dataclass(frozen=True, kw_only=True)
class WalletConfig(ServiceConfig):
    REQUIRES_DATABASE: ClassVar[bool] = True

    service_name: str = setting("wallet", help="service name, used in logs and metric names")
    starting_grant: int = setting(
        1000,
        env="WALLET_STARTING_GRANT",
        help="prestige (威望) a new guest receives, minted from the grants house account",
    )
    guest_logins_per_minute: int = setting(
        10,
        env="WALLET_GUEST_LOGINS_PER_MINUTE",
        help="guest accounts (each with its starting grant) one client address may create a minute, after "
        "the burst; more are refused RESOURCE_EXHAUSTED with a retry hint; 0 = no limit",
    )
    guest_login_burst: int = setting(
        20, env="WALLET_GUEST_LOGIN_BURST", help="guest logins one client address may make at once"
    )
    levels: str = setting(
        DEFAULT_LEVELS,
        env="WALLET_LEVELS",
        help="level (级别) table: comma-separated 'min_prestige:name', ascending from 0",
    )
    session_ttl_seconds: int = setting(
        3600, env="WALLET_SESSION_TTL_SECONDS", help="lifetime of a session token"
    )
    refresh_ttl_seconds: int = setting(
        30 * 24 * 3600, env="WALLET_REFRESH_TTL_SECONDS", help="lifetime of a refresh token (used once)"
    )
    consumer_workers: int = setting(
        8, env="WALLET_CONSUMER_WORKERS", help="settlement workers sharing the hot consumer"
    )
    ack_wait_seconds: float = setting(
        30.0, env="WALLET_ACK_WAIT_SECONDS", help="JetStream redelivers an event not acked within this"
    )
    audit_interval_seconds: float = setting(
        60.0,
        env="WALLET_AUDIT_INTERVAL_SECONDS",
        help="how often the ledger audit runs for the ledger metrics (it scans every entry)",
    )
    event_namespace: str = setting(
        "", env="WALLET_EVENT_NAMESPACE", help="tests only: private copies of the event subjects and streams"
    )

    def validate(self) -> list[str]:
        problems = super().validate()
        if self.starting_grant < 0:
            problems.append("WALLET_STARTING_GRANT must not be negative")
        if self.guest_logins_per_minute < 0 or self.guest_login_burst < 1:
            problems.append(
                "WALLET_GUEST_LOGINS_PER_MINUTE must not be negative, WALLET_GUEST_LOGIN_BURST at least 1"
            )
        try:
            LevelTable.parse(self.levels)
        except ValueError as err:
            problems.append(f"WALLET_LEVELS: {err}")
        if self.session_ttl_seconds <= 0 or self.refresh_ttl_seconds <= 0:
            problems.append("WALLET_SESSION_TTL_SECONDS and WALLET_REFRESH_TTL_SECONDS must be positive")
        problems += self.at_least_one("consumer_workers")
        return problems + self.positive("ack_wait_seconds", "audit_interval_seconds")

    @property
    def level_table(self) -> LevelTable:
        return LevelTable.parse(self.levels)
