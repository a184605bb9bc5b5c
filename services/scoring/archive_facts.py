"""What the archive keeps of one hand, read from its table's write-ahead log (pure: no I/O).

The log holds everything: the table's opening (pairing, room, players), each hand's ``HandBegun``
(players with their names, the rules), the engine's events with the time both seats were shown them,
and the records a replay is built from. The archive keeps the table's opening (the records before
its first ``HandBegun``) once, and each hand's own slice of the log: from the record after the
previous hand's ``hand_ended`` event (the first hand: from its ``HandBegun``) through ``last_sequence``
of its result. Both boundaries are read from the log the hand is archived from, so a hand's slice is
the same whichever hand arrives first, and the slices of a table's hands join up without gaps (the
previous hand's own slice reaches at least its ``hand_ended``). A hand the table never ended (the
table closed first) is archived VOID through the end of the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from duelmahjong.platform import ids
from duelmahjong.v1 import archive_pb2, rules_pb2
from services.scoring.tablelog import LoggedRecord


class HandNotInLog(ValueError):
    """The log does not hold the hand (or the table's opening): nothing to archive from it."""


@dataclass(frozen=True, slots=True)
class ArchivedPlayer:
    seat: rules_pb2.Seat.ValueType
    player_id: str
    display_name: str
    is_bot: bool


@dataclass(frozen=True, slots=True)
class HandEntry:
    """One hand as the archive stores it."""

    hand_id: str
    pairing_id: str
    table_id: str
    room_id: str
    profile: rules_pb2.Profile.ValueType
    hand_number: int
    private_table: bool
    players: tuple[ArchivedPlayer, ...]
    outcome: archive_pb2.ArchivedOutcome.ValueType
    winner: rules_pb2.Seat.ValueType
    escaper: rules_pb2.Seat.ValueType
    evaluation: bytes | None  # rules.proto Evaluation, won hands only
    started_at: datetime
    ended_at: datetime
    # server_state.proto TableLogRecord: the hand's slice of the log, at first_sequence onwards
    records: tuple[bytes, ...]
    first_sequence: int
    # the table's records before its first HandBegun, at sequences 1, 2, 3…
    opening: tuple[bytes, ...]

    @property
    def last_sequence(self) -> int:
        return self.first_sequence + len(self.records) - 1


@dataclass(frozen=True, slots=True)
class HandResult:
    """How a hand ended, as scoring verified it (or VOID)."""

    outcome: archive_pb2.ArchivedOutcome.ValueType
    winner: rules_pb2.Seat.ValueType = rules_pb2.SEAT_UNSPECIFIED
    escaper: rules_pb2.Seat.ValueType = rules_pb2.SEAT_UNSPECIFIED
    evaluation: rules_pb2.Evaluation | None = None


VOID = HandResult(archive_pb2.ARCHIVED_OUTCOME_VOID)
OUTCOME_OF_RESULT = {
    rules_pb2.HAND_OUTCOME_WIN: archive_pb2.ARCHIVED_OUTCOME_WIN,
    rules_pb2.HAND_OUTCOME_DRAWN: archive_pb2.ARCHIVED_OUTCOME_DRAWN,
    rules_pb2.HAND_OUTCOME_ESCAPE: archive_pb2.ARCHIVED_OUTCOME_ESCAPE,
}


def unended_hand(log: Sequence[LoggedRecord]) -> str | None:
    """The last hand the log begins and never ends, if any (the hand a closed table left void)."""
    begun = [r for r in log if r.record.WhichOneof("kind") == "hand_begun"]
    if not begun:
        return None
    hand_id = begun[-1].record.hand_begun.hidden.hand_id or begun[-1].hand_id
    ended = any(
        r.record.WhichOneof("kind") == "engine_event"
        and r.record.engine_event.kind == "hand_ended"
        and r.sequence > begun[-1].sequence
        for r in log
    )
    return None if ended else hand_id


def _when(nanos: int) -> datetime:
    return datetime.fromtimestamp(nanos / 1e9, UTC)


def hand_entry(
    log: Sequence[LoggedRecord], hand_id: str, result: HandResult, *, last_sequence: int, ended_at: datetime
) -> HandEntry:
    """The archive's entry for ``hand_id`` from its table's log, up to ``last_sequence``.

    ``ended_at`` is when the hand ended if the log does not say (a void hand: when its table closed);
    the hand's ``hand_ended`` event, shown to both seats, says it otherwise.
    """
    records = sorted((r for r in log if r.sequence <= last_sequence), key=lambda r: r.sequence)
    openings = [r.record.table_opening for r in records if r.record.WhichOneof("kind") == "table_opening"]
    if not openings:
        raise HandNotInLog("the log holds no table opening")
    opening = openings[0]
    if [r.sequence for r in records] != list(range(1, len(records) + 1)):
        raise HandNotInLog("the log read skips sequences: its slices would not join up")
    begun_at = [
        i
        for i, r in enumerate(records)
        if r.record.WhichOneof("kind") == "hand_begun"
        and (r.record.hand_begun.hidden.hand_id or r.hand_id) == hand_id
    ]
    if not begun_at:
        raise HandNotInLog(f"the log holds no HandBegun of hand {hand_id}")
    begun = records[begun_at[-1]].record.hand_begun
    hand = records[begun_at[-1] :]
    first_begun = next(i for i, r in enumerate(records) if r.record.WhichOneof("kind") == "hand_begun")
    start = max(
        (
            i + 1
            for i, r in enumerate(records[: begun_at[-1]])
            if r.record.WhichOneof("kind") == "engine_event" and r.record.engine_event.kind == "hand_ended"
        ),
        default=first_begun,
    )
    shown = [
        (r.record.engine_event.kind, r.record.engine_event.shown_at_unix_nanos)
        for r in hand
        if r.record.WhichOneof("kind") == "engine_event" and r.record.engine_event.shown_at_unix_nanos
    ]
    started = next((nanos for kind, nanos in shown if kind == "hand_started"), shown[0][1] if shown else 0)
    finished = next((nanos for kind, nanos in shown if kind == "hand_ended"), 0)
    players = begun.players or opening.players
    return HandEntry(
        hand_id=hand_id,
        pairing_id=opening.pairing_id,
        table_id=opening.table_id,
        room_id=opening.room_id,
        profile=begun.rules.profile or opening.rules.profile,
        hand_number=begun.hand_number,
        private_table=opening.private_table,
        players=tuple(
            ArchivedPlayer(p.seat, p.player_id, p.display_name, ids.is_bot_id(p.player_id))
            for p in sorted(players, key=lambda p: p.seat)
        ),
        outcome=result.outcome,
        winner=result.winner,
        escaper=result.escaper,
        evaluation=None if result.evaluation is None else result.evaluation.SerializeToString(),
        started_at=_when(started) if started else ended_at,
        ended_at=_when(finished) if finished else ended_at,
        records=tuple(r.record.SerializeToString() for r in records[start:]),
        first_sequence=records[start].sequence,
        opening=tuple(r.record.SerializeToString() for r in records[:first_begun]),
    )
