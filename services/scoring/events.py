"""Scoring on NATS: it consumes ``HandEnded`` from the table stream, replays the table's write-ahead
log, and produces ``HandScored``, ``EscapePenalty`` or ``ReplayRejected`` on its own stream; a hand it
scored goes into the archive (``archive_events``) with the log records it was verified from.

Idempotent end to end: every event scoring publishes has a message id made from the hand id, so a
redelivered ``HandEnded`` (or a second replica scoring the same hand) publishes nothing new —
JetStream drops the repeat within its duplicate window, and the wallet keys on the hand id beyond it.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from google.protobuf.message import DecodeError
from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.msg import Msg

from duelmahjong.contract import PROFILES
from duelmahjong.engine.outcome import Termination
from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.errors import DomainError
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.streams import ConsumerSpec
from duelmahjong.v1 import events_pb2, rules_pb2
from duelmahjong.views.codec import seat_enum, timestamp
from duelmahjong.views.seat_views import OUTCOMES
from services.scoring import codec
from services.scoring.archive_events import Archiver
from services.scoring.archive_facts import OUTCOME_OF_RESULT, HandResult
from services.scoring.core import ScoredHand, ScoringCore
from services.scoring.replay import LogIncomplete, ReplayMismatch, replay_hand
from services.scoring.tablelog import TableLogReader

_log = get_logger("scoring.events")

# Replicas of scoring bind the same durable name and share the hands to score (pull consumer).
HANDS_ENDED = ConsumerSpec(
    stream=subjects.TABLE_STREAM.name,
    durable="scoring-hand-ended",
    filter_subject=subjects.HAND_ENDED,
)


# The other services' streams scoring reads: created here if missing, so scoring may start first.
CONSUMED_STREAMS = (subjects.TABLE_STREAM, subjects.TABLE_LOG_STREAM, subjects.WALLET_STREAM)


async def declare(bus: Bus) -> None:
    """Declare the stream scoring publishes to, the ones it reads from, and its consumer (idempotent)."""
    await bus.declare_stream(subjects.SCORING_STREAM)
    for stream in CONSUMED_STREAMS:
        await bus.ensure_stream(stream)
    await bus.declare_consumer(HANDS_ENDED)


def _envelope(kind: str, hand_id: str, producer: str) -> events_pb2.EventEnvelope:
    # Deterministic per hand: a retried publish of the same fact is the same message (de-duplicated).
    # Stamped without a datetime: FromDatetime(datetime.now()) is ~29 µs, this ~5 µs.
    return events_pb2.EventEnvelope(
        event_id=f"scoring:{kind}:{hand_id}", producer=producer, occurred_at=timestamp()
    )


class HandEndedHandler:
    """Verify, score and publish one ``HandEnded`` (the bus acks on return, naks on raise)."""

    def __init__(
        self,
        bus: Bus,
        core: ScoringCore,
        metrics: ServiceMetrics,
        *,
        producer: str,
        archiver: Archiver,
        reader: TableLogReader | None = None,
        log_wait_deliveries: int = 5,
    ) -> None:
        self._bus = bus
        self._core = core
        self._archiver = archiver
        self._reader = reader or TableLogReader(bus)
        self._records = codec.ReplayRecords()  # the log's records as replay reads them, converted once
        self._producer = producer
        self._log_wait_deliveries = log_wait_deliveries
        self.scored = metrics.counter(
            "hands_scored", "total", "hands verified and scored", ["profile", "outcome"]
        )
        self.rejected = metrics.counter(
            "replay_rejected", "total", "hand results refused: the table's log does not replay to them"
        )
        self.malformed = metrics.counter("malformed_events", "total", "HandEnded messages that do not decode")
        self.latency = metrics.histogram(
            "hand_scoring", "seconds", "HandEnded received → scored event published (replay included)"
        )

    async def __call__(self, message: Msg) -> None:
        started = time.perf_counter()
        try:
            event = events_pb2.HandEnded.FromString(message.data)
        except DecodeError:
            self.malformed.inc()
            _log.error("HandEnded does not decode; dropped", extra={"fields": {"subject": message.subject}})
            return
        pointer = codec.hand_pointer(event)
        table_id, hand_id = pointer.table_id, pointer.hand_id
        try:
            if not (table_id and hand_id and pointer.last_sequence):
                raise ReplayMismatch("the HandEnded names no table, hand or log position")
            log = await self._reader.read(table_id, pointer.last_sequence)
            # CPU-bound: in a thread, so gRPC calls and other hands' log reads go on.
            records = self._records.of(table_id, log)
            replayed = await asyncio.to_thread(replay_hand, records, pointer)
            scored = self._core.score_replayed(replayed)
        except LogIncomplete as short:
            if message.metadata.num_delivered < self._log_wait_deliveries:
                raise  # redelivered after a delay: the log may still be landing
            await self._reject(table_id, hand_id, str(short), 0)
            return
        except ReplayMismatch as mismatch:
            await self._reject(table_id, hand_id, mismatch.reason, mismatch.sequence)
            return
        except DomainError as invalid:  # a result that breaks the contract or the rules
            await self._reject(table_id, hand_id, invalid.message, 0)
            return
        claim = scored.claim
        await self.publish(scored, event.envelope.occurred_at)
        self.scored.labels(profile=claim.profile, outcome=claim.outcome).inc()
        self.latency.observe(time.perf_counter() - started)
        # After the publish, so play never waits on the archive; a failure here naks the HandEnded,
        # whose redelivery publishes the same ids again (dropped as duplicates) and archives it then.
        verified = HandResult(
            OUTCOME_OF_RESULT[OUTCOMES[Termination(claim.outcome)]],
            winner=seat_enum(claim.winner),
            escaper=seat_enum(claim.escaper),
            evaluation=None if scored.evaluation is None else codec.evaluation_message(scored.evaluation),
        )
        ended_at = event.envelope.occurred_at
        await self._archiver.hand(
            log,
            claim.hand_id,
            verified,
            last_sequence=claim.last_sequence,
            ended_at=ended_at.ToDatetime(tzinfo=UTC) if ended_at.ByteSize() else datetime.now(UTC),
        )

    async def publish(self, scored: ScoredHand, hand_ended_at: Timestamp | None = None) -> None:
        claim, figures = scored.claim, scored.settlement
        if scored.escape:
            penalty = events_pb2.EscapePenalty(
                envelope=_envelope("escape_penalty", claim.hand_id, self._producer),
                table_id=claim.table_id,
                hand_id=claim.hand_id,
                escaper_player_id=figures.payer,
                opponent_player_id=figures.payee,
                amount=figures.fan_amount,  # uncapped: the wallet caps it by the escaper's carry (H3)
                settlement=codec.settlement_message(figures),
                # The rating the escape moves, and the seats' order of its rating changes.
                profile=PROFILES.get(claim.profile, rules_pb2.PROFILE_UNSPECIFIED),
                player_ids=[player.player_id for player in claim.players],
            )
            await self._bus.publish_event(subjects.ESCAPE_PENALTY, penalty)
            return
        event = events_pb2.HandScored(
            envelope=_envelope("hand_scored", claim.hand_id, self._producer),
            table_id=claim.table_id,
            hand_id=claim.hand_id,
            settlement=codec.settlement_message(figures),
            player_ids=[player.player_id for player in claim.players],  # who owes the fee
            profile=PROFILES.get(claim.profile, rules_pb2.PROFILE_UNSPECIFIED),  # the rating the hand moves
        )
        if scored.evaluation is not None:
            event.evaluation.CopyFrom(codec.evaluation_message(scored.evaluation))
        if hand_ended_at is not None and hand_ended_at.ByteSize():  # for the wallet's settlement lag
            event.hand_ended_at.CopyFrom(hand_ended_at)
        if scored.guess is not None:  # T12: the wallet stakes it on the transfer, in the same transaction
            event.guess.CopyFrom(codec.guess_message(scored.guess))
        await self._bus.publish_event(subjects.HAND_SCORED, event)

    async def _reject(self, table_id: str, hand_id: str, reason: str, sequence: int) -> None:
        self.rejected.inc()
        _log.error(
            "hand result refused: it does not replay from the table's log",
            extra={
                "fields": {"table_id": table_id, "hand_id": hand_id, "reason": reason, "sequence": sequence}
            },
        )
        rejected = events_pb2.ReplayRejected(
            envelope=_envelope("replay_rejected", hand_id or "unknown", self._producer),
            table_id=table_id,
            hand_id=hand_id,
            reason=reason,
            sequence=sequence,
        )
        await self._bus.publish_event(subjects.REPLAY_REJECTED, rejected)
