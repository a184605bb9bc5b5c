"""Scoring on NATS: it consumes ``HandEnded`` from the table stream and produces ``HandScored``,
``EscapePenalty`` and ``ReplayRejected`` on its own stream."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus, ConsumerSpec

# Replicas of scoring bind the same durable name and share the hands to score (pull consumer).
HANDS_ENDED = ConsumerSpec(
    stream=subjects.TABLE_STREAM.name,
    durable="scoring-hand-ended",
    filter_subject=subjects.HAND_ENDED,
)


async def declare(bus: Bus) -> None:
    """Declare the stream scoring publishes to and the consumer it reads with (idempotent)."""
    await bus.declare_stream(subjects.SCORING_STREAM)
    await bus.declare_stream(subjects.TABLE_STREAM)  # so scoring may start before the table service
    await bus.declare_consumer(HANDS_ENDED)
