"""Settings of the table service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from duelmahjong.platform.config import ServiceConfig, setting


@dataclass(frozen=True, kw_only=True)
class TableConfig(ServiceConfig):
    service_name: str = setting("table", help="service name, used in logs and metric names")
    table_capacity: int = setting(
        200, help="live tables this server hosts at most (announced to matchmaking)"
    )
    server_id: str = setting("", help="this table server's id in announcements; '' = host name + port")
    advertise_address: str = setting(
        "", help="host:port clients and matchmaking reach this server at; '' = GRPC_HOST:bound port"
    )
    announce_seconds: float = setting(2.0, help="how often the server announces its load on NATS")
    table_queue_size: int = setting(
        64, help="actions waiting per table; a full queue answers RESOURCE_EXHAUSTED (BUSY) to the sender"
    )
    seat_reply_limit: int = setting(
        256,
        help="rejections a seat's Play stream may hold unread; one more closes it RESOURCE_EXHAUSTED",
    )
    settlement_wait_seconds: float = setting(
        15.0, help="how long a finished hand waits for its SettlementApplied before the table carries on"
    )
    join_seconds: float = setting(60.0, help="how long an opened table waits for both seats to connect")
    drain_seconds: float = setting(
        600.0,
        help="on SIGTERM, how long live hands get to finish before their tables are closed, when no "
        "other table server has room to take them",
    )
    table_lease_seconds: float = setting(
        5.0,
        help="a table server whose lease is not renewed for this long has lost its tables: another "
        "server adopts them (the same in every table server)",
    )
    table_owners_bucket: str = setting(
        "DUEL_TABLE_OWNERS",
        help="the JetStream key-value bucket of table servers' leases and tables' owners (one per "
        "deployment: servers that share it adopt each other's tables)",
    )

    watchers_per_table: int = setting(
        100, help="spectator streams (Watch) one table takes at most; one more is RESOURCE_EXHAUSTED"
    )
    watch_max_lag_seconds: float = setting(
        10.0,
        help="a spectator stream that lags this much beyond its room's spectate delay (its client does "
        "not read) is closed RESOURCE_EXHAUSTED",
    )
    gc_freeze_seconds: float = setting(
        1.0,
        help="the longest period between two of the server's collections that freeze what survived "
        "out of the collector (gc.freeze): full collections then walk only what the last period "
        "left; 0 = never freeze",
    )
    gc_pause_target_seconds: float = setting(
        0.005,
        help="what a freeze's collection should take: the period shortens (to 0.25 s at least) while "
        "collections take longer, and lengthens (to GC_FREEZE_SECONDS) while they take less",
    )
    gc_threshold0: int = setting(
        50000, help="allocations (less frees) of tracked objects between two young collections"
    )
    gc_threshold1: int = setting(
        10, help="young collections between two collections of the middle generation"
    )
    gc_threshold2: int = setting(10, help="middle collections between two automatic full collections")

    def validate(self) -> list[str]:
        problems = super().validate()
        problems += self.at_least_one(
            "table_capacity",
            "table_queue_size",
            "seat_reply_limit",
            "watchers_per_table",
            "gc_threshold0",
            "gc_threshold1",
            "gc_threshold2",
        )
        if self.gc_freeze_seconds < 0:
            problems.append("GC_FREEZE_SECONDS must be 0 (never freeze) or more")
        return problems + self.positive(
            "gc_pause_target_seconds",
            "announce_seconds",
            "settlement_wait_seconds",
            "join_seconds",
            "drain_seconds",
            "table_lease_seconds",
            "watch_max_lag_seconds",
        )

    def server_name(self, port: int) -> str:
        return self.server_id or f"{socket.gethostname()}-{port}"
