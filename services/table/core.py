"""The table authority's domain: the live tables one server hosts.

Today it only knows how many tables it may host; opening tables, the per-seat play streams, the
write-ahead log and recovery arrive with issue 6 on top of ``duelmahjong.engine``.
"""

from __future__ import annotations

from duelmahjong.platform.errors import ResourceExhausted


class TableHost:
    """The tables of this server, each owned by one task (issue 6); bounded by ``capacity``."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a table server hosts at least one table")
        self.capacity = capacity
        self.live_tables: dict[str, object] = {}

    @property
    def free_capacity(self) -> int:
        return self.capacity - len(self.live_tables)

    def check_capacity(self) -> None:
        """Refuse a new table when the server is full (matchmaking then picks another server)."""
        if self.free_capacity <= 0:
            raise ResourceExhausted(f"this table server is full ({self.capacity} live tables)")
