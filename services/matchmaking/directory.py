"""The table servers matchmaking allocates from, as their ``TableServerAnnounced`` heartbeats describe
them: newest announcement per server wins, a silent server is forgotten, a refusing one is skipped
until it announces again.

>>> now = [0.0]
>>> servers = TableServerDirectory(clock=lambda: now[0], ttl_seconds=10)
>>> servers.observe(TableServer("a", "h:1", free_capacity=3, announce_number=7))
True
>>> servers.observe(TableServer("a", "h:1", free_capacity=9, announce_number=6))  # older: ignored
False
>>> servers.roomiest().free_capacity
3
>>> now[0] = 11.0
>>> servers.roomiest() is None  # silent for longer than the TTL
True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]


@dataclass(frozen=True)
class TableServer:
    """A table server as last announced: where it is and how much room it has."""

    server_id: str
    address: str
    free_capacity: int
    announce_number: int
    draining: bool = False
    seen_at: float = 0.0


class TableServerDirectory:
    """The table servers matchmaking knows, keeping only each server's newest announcement; a server
    silent for ``ttl_seconds`` is forgotten (it died without saying so)."""

    def __init__(self, *, clock: Clock = time.time, ttl_seconds: float = 15.0) -> None:
        self._servers: dict[str, TableServer] = {}
        self._clock = clock
        self._ttl = ttl_seconds

    def observe(self, announced: TableServer) -> bool:
        """Record an announcement; False if it is not newer than what we have (a replay or reorder)."""
        known = self._servers.get(announced.server_id)
        if known is not None and known.announce_number >= announced.announce_number:
            return False
        self._servers[announced.server_id] = TableServer(
            announced.server_id,
            announced.address,
            announced.free_capacity,
            announced.announce_number,
            announced.draining,
            seen_at=self._clock(),
        )
        return True

    def roomiest(self) -> TableServer | None:
        """The live, non-draining server with the most free capacity, if any has room."""
        oldest = self._clock() - self._ttl
        candidates = [
            s
            for s in self._servers.values()
            if not s.draining and s.free_capacity > 0 and s.seen_at >= oldest
        ]
        return max(candidates, key=lambda s: (s.free_capacity, s.server_id), default=None)

    def took_one(self, server_id: str) -> None:
        """A table was opened there: count it until the server's next announcement says so itself."""
        server = self._servers.get(server_id)
        if server is not None:
            self._servers[server_id] = TableServer(
                server.server_id,
                server.address,
                server.free_capacity - 1,
                server.announce_number,
                server.draining,
                server.seen_at,
            )

    def unusable(self, server_id: str) -> None:
        """The server refused or could not be reached: skip it until it announces again."""
        server = self._servers.get(server_id)
        if server is not None:
            self._servers[server_id] = TableServer(
                server.server_id, server.address, 0, server.announce_number, server.draining, server.seen_at
            )
