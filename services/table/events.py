"""The table service on NATS: it produces table events and each table's write-ahead log."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus

PRODUCED_STREAMS = (subjects.TABLE_STREAM, subjects.TABLE_LOG_STREAM)


async def declare(bus: Bus) -> None:
    """Declare the streams the table service publishes to (idempotent; every replica does it)."""
    for stream in PRODUCED_STREAMS:
        await bus.declare_stream(stream)
