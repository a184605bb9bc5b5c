"""Matchmaking's domain: rooms, queues, pairing, multiplier negotiation and table allocation.

Its logic arrives with issue 6. What is here already is the view of the table servers it allocates
from, fed by ``TableServerAnnounced`` heartbeats (idempotency: the highest announce number wins).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableServer:
    """A table server as last announced: where it is and how much room it has."""

    server_id: str
    address: str
    free_capacity: int
    announce_number: int
    draining: bool = False


class TableServerDirectory:
    """The table servers matchmaking knows, keeping only each server's newest announcement."""

    def __init__(self) -> None:
        self._servers: dict[str, TableServer] = {}

    def observe(self, announced: TableServer) -> bool:
        """Record an announcement; False if it is not newer than what we have (a replay or reorder)."""
        known = self._servers.get(announced.server_id)
        if known is not None and known.announce_number >= announced.announce_number:
            return False
        self._servers[announced.server_id] = announced
        return True

    def roomiest(self) -> TableServer | None:
        """The non-draining server with the most free capacity, if any has room."""
        candidates = [s for s in self._servers.values() if not s.draining and s.free_capacity > 0]
        return max(candidates, key=lambda s: (s.free_capacity, s.server_id), default=None)
