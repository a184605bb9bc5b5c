"""Settings of the matchmaking service (see ``ServiceConfig`` for those every service shares)."""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.platform.config import ServiceConfig, setting
from duelmahjong.platform.ratelimit import RateLimiter
from services.matchmaking.core import PRIVATE_JOIN_BURST, PRIVATE_JOINS_PER_MINUTE, STREAM_GRACE_SECONDS
from services.matchmaking.leases import LEASE, LEASE_SECONDS, SHARING
from services.matchmaking.rooms import Room, RoomConfigError, load_rooms


@dataclass(frozen=True, kw_only=True)
class MatchmakingConfig(ServiceConfig):
    service_name: str = setting("matchmaking", help="service name, used in logs and metric names")
    wallet_address: str = setting("", help="host:port of the wallet service (holds for the carry)")
    matchmaking_rooms: str = setting("", help="the rooms as an inline JSON list (wins over the file)")
    matchmaking_rooms_file: str = setting(
        "", help="path of a JSON list of rooms; default services/matchmaking/rooms.json"
    )
    matchmaking_tick_seconds: float = setting(0.2, help="how often queues are paired and retried")
    matchmaking_server_ttl_seconds: float = setting(
        15.0, help="a table server silent this long is no longer allocated to"
    )
    matchmaking_server_lost_seconds: float = setting(
        60.0,
        help="a table server silent this long is lost: its tables are closed on its behalf (holds "
        "released, players free to queue); must exceed MATCHMAKING_SERVER_TTL_SECONDS",
    )
    matchmaking_adoption_grace_seconds: float = setting(
        20.0,
        help="a table whose server restarted or was lost is closed only if no other server adopted it "
        "(TableAdopted) within this many seconds after",
    )
    matchmaking_private_joins_per_minute: int = setting(
        PRIVATE_JOINS_PER_MINUTE,
        help="private table codes one player may try a minute (JoinPrivateTable) once the burst is spent; "
        "0 = no limit",
    )
    matchmaking_private_join_burst: int = setting(
        PRIVATE_JOIN_BURST, help="private table codes one player may try at once"
    )
    matchmaking_bucket: str = setting(
        "DUEL_MATCHMAKING",
        help="the JetStream key-value bucket every replica shares (tickets, pairings, codes, leases)",
    )
    matchmaking_store: str = setting(
        "jetstream",
        help="'jetstream': the shared bucket (every deployment); 'memory': this process alone, no fleet, "
        "nothing survives it (the reference `duel bench matchmaking` measures the fleet against)",
    )
    matchmaking_replica_id: str = setting(
        "",
        help="this replica's name in the shared store (letters, digits, '-', '_'); default: the host "
        "name and a fresh suffix, so a restarted process is a new replica",
    )
    matchmaking_lease_seconds: float = setting(
        LEASE_SECONDS,
        help="a replica whose heartbeat is not seen this long is dead: its rooms are taken over",
    )
    matchmaking_room_sharing: str = setting(
        LEASE,
        help="how replicas share a room: 'lease' (one owner pairs it, another takes over when it dies) "
        "or 'claims' (every replica pairs it, compare-and-set decides); docs/benchmarks.md compares them",
    )
    matchmaking_stream_grace_seconds: float = setting(
        STREAM_GRACE_SECONDS,
        help="an unpaired ticket that no stream follows (Enqueue, FollowQueue) this long is cancelled",
    )
    matchmaking_bot_pool: int = setting(
        16, help="house bot players (bot-1 … bot-N) that bot fill takes turns with; all busy = the fill waits"
    )

    def validate(self) -> list[str]:
        problems = super().validate() + self.at_least_one("matchmaking_bot_pool")
        if self.matchmaking_tick_seconds <= 0 or self.matchmaking_server_ttl_seconds <= 0:
            problems.append("MATCHMAKING_TICK_SECONDS and MATCHMAKING_SERVER_TTL_SECONDS must be positive")
        if self.matchmaking_server_lost_seconds <= self.matchmaking_server_ttl_seconds:
            # A server merely slow to announce is first skipped for new tables, and only declared lost
            # (its live tables closed) well after that.
            problems.append("MATCHMAKING_SERVER_LOST_SECONDS must exceed MATCHMAKING_SERVER_TTL_SECONDS")
        if self.matchmaking_private_joins_per_minute < 0 or self.matchmaking_private_join_burst < 1:
            problems.append(
                "MATCHMAKING_PRIVATE_JOINS_PER_MINUTE must not be negative, "
                "MATCHMAKING_PRIVATE_JOIN_BURST at least 1"
            )
        if self.matchmaking_lease_seconds <= 0 or self.matchmaking_stream_grace_seconds < 0:
            problems.append(
                "MATCHMAKING_LEASE_SECONDS must be positive, MATCHMAKING_STREAM_GRACE_SECONDS not negative"
            )
        if self.matchmaking_store not in ("jetstream", "memory"):
            problems.append("MATCHMAKING_STORE must be 'jetstream' or 'memory'")
        if self.matchmaking_room_sharing not in SHARING:
            problems.append(f"MATCHMAKING_ROOM_SHARING must be one of {', '.join(SHARING)}")
        if self.matchmaking_adoption_grace_seconds < 0:
            problems.append("MATCHMAKING_ADOPTION_GRACE_SECONDS must not be negative")
        try:
            self.rooms()
        except RoomConfigError as err:
            problems.append(f"rooms: {err}")
        return problems

    def private_joins(self) -> RateLimiter:
        return RateLimiter(
            per_minute=self.matchmaking_private_joins_per_minute, burst=self.matchmaking_private_join_burst
        )

    def rooms(self) -> dict[str, Room]:
        return load_rooms(self.matchmaking_rooms, self.matchmaking_rooms_file)
