"""Matchmaking on NATS: it consumes the table servers' announcements (and, with issue 6, table and
settlement events). It produces no events of its own."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus, ConsumerSpec

# Replicas of matchmaking bind the same durable name and share the announcements (pull consumer).
SERVER_ANNOUNCEMENTS = ConsumerSpec(
    stream=subjects.TABLE_STREAM.name,
    durable="matchmaking-server-announced",
    filter_subject=subjects.TABLE_SERVER_ANNOUNCED,
)


async def declare(bus: Bus) -> None:
    """Declare what matchmaking reads from (idempotent). The stream is the table service's; declaring
    it here too lets either service start first."""
    await bus.declare_stream(subjects.TABLE_STREAM)
    await bus.declare_consumer(SERVER_ANNOUNCEMENTS)
