"""The table servers matchmaking allocates from, as their ``TableServerAnnounced`` heartbeats describe
them: newest announcement per server wins, a silent server is forgotten, a refusing one is skipped
until it announces again. The same heartbeats tell whether the server that hosts a table is still the
process that opened it (:meth:`TableServerDirectory.lost`).

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
>>> servers.lost("a", "", opened_at=0.0, silent_seconds=30)  # silent, but not for long enough
''
>>> servers.observe(TableServer("a", "h:1", 3, announce_number=8, incarnation="second"))
True
>>> servers.lost("a", "", opened_at=0.0, silent_seconds=30)  # announced by another process
'restarted'
"""

from __future__ import annotations

import dataclasses
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
    incarnation: str = ""  # the announcing process; "" from a server that does not say


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
        self._servers[announced.server_id] = dataclasses.replace(announced, seen_at=self._clock())
        return True

    def lost(self, server_id: str, incarnation: str, *, opened_at: float, silent_seconds: float) -> str:
        """Why a table that process ``incarnation`` of ``server_id`` opened at ``opened_at`` is gone
        with its process — ``"restarted"``, ``"silent"`` — or "" while that process may still host it.

        Restarted: the server announced another incarnation after the table was opened (an older
        announcement could come from the process before the one that opened it). Silent: nothing from
        the server for ``silent_seconds`` (counted from the opening at the latest)."""
        server = self._servers.get(server_id)
        heard_at = opened_at
        if server is not None:
            if server.incarnation != incarnation and server.seen_at > opened_at:
                return "restarted"
            heard_at = max(heard_at, server.seen_at)
        if self._clock() - heard_at > silent_seconds:
            return "silent"
        return ""

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
            self._servers[server_id] = dataclasses.replace(server, free_capacity=server.free_capacity - 1)

    def unusable(self, server_id: str) -> None:
        """The server refused or could not be reached: skip it until it announces again."""
        server = self._servers.get(server_id)
        if server is not None:
            self._servers[server_id] = dataclasses.replace(server, free_capacity=0)
