"""A hand's result, from the table's write-ahead log alone: the log replayed through the engine.

``HandEnded`` is a pointer (table, hand, the log position where the hand ends), never a claim: what
the hand was is what its log replays to. The table appends every engine event (``EngineEventRecord``:
the engine's canonical JSON) and every action it applied (``ActionApplied.engine_action``) to its log
before anyone sees their effect, and the engine is deterministic given the hand's seed and the
actions (ARCHITECTURE "Randomness"), so:

1. the events *before* the hand are folded into a table (earlier hands were scored when they ended);
2. the hand is dealt again from the seed its ``hand_started`` record holds, and every logged action
   is applied again — an action the engine finds illegal refuses the hand;
3. the events this produces must equal the logged ones byte for byte, up to the hand's end;
4. the engine's outcome of the hand (its winner, its win's evaluation, multipliers, erren terms, 猜大小)
   and the hand's ``HandBegun`` record (players, carries, room rules) are what scoring settles on.

Any difference raises :class:`ReplayMismatch` with the first log sequence where they part (0 = at the
end); a log that does not reach the pointer's position yet raises :class:`LogIncomplete` (retry later).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass

from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import EngineError
from duelmahjong.engine.events import Event, HandEnded, HandStarted
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.replay.tables import counts_at_deal


class ReplayMismatch(Exception):
    """The log does not replay to the claimed hand. ``sequence``: the first record that differs."""

    def __init__(self, reason: str, sequence: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sequence = sequence


class LogIncomplete(Exception):
    """The log does not (yet) reach the claimed ``last_sequence``: it may still be arriving."""


@dataclass(frozen=True, slots=True)
class HandPointer:
    """What ``HandEnded`` says: the table, the hand, and the log position where the hand ends."""

    table_id: str
    hand_id: str
    last_sequence: int


@dataclass(frozen=True, slots=True)
class HandBegunFacts:
    """What the table's ``HandBegun`` record says beside the engine: the players, the room's fan rate
    and fee."""

    hand_number: int
    profile: str
    fan_rate: int
    players: tuple[tuple[str, int], ...]  # (player_id, carry) of seats 0 and 1
    fee: int = 0  # the room fee each player owes for a finished hand (H1)


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One ``TableEventAppended``: an engine event (``canonical``), an action, or a ``HandBegun``."""

    sequence: int
    hand_id: str
    table_id: str = ""
    canonical: str = ""
    action: str = ""
    begun: HandBegunFacts | None = None
    kind: str = ""  # an engine event's kind as the table labelled it (EngineEventRecord.kind)


@dataclass(frozen=True, slots=True)
class ReplayedHand:
    """The hand as the engine rebuilt it from its log."""

    pointer: HandPointer
    settings: RoomSettings
    outcome: Outcome  # the hand's outcome the engine reached
    begun: HandBegunFacts  # the hand's HandBegun record: its players, carries and room
    events: int  # engine events compared


# Engine events read back from their canonical JSON, the most recent first kept: every hand's replay
# folds the hands before it again, whose events it would otherwise parse again (most of its CPU).
# Events are immutable; equal text is the equal event, whichever table logged it.
PARSED_EVENTS = 20_000


@functools.lru_cache(maxsize=PARSED_EVENTS)
def _parsed(canonical: str) -> Event:
    return Event.from_json(json.loads(canonical))


def _event(record: LogRecord) -> Event:
    try:
        return _parsed(record.canonical)
    except (ValueError, TypeError, EngineError) as err:
        raise ReplayMismatch(
            f"record {record.sequence} is not an engine event: {err}", record.sequence
        ) from None


def checked_records(records: Sequence[LogRecord], claim: HandPointer) -> list[LogRecord]:
    """The table's records 1..``last_sequence``, in order, without gaps or foreign tables."""
    wanted = [r for r in sorted(records, key=lambda r: r.sequence) if r.sequence <= claim.last_sequence]
    if not wanted or wanted[-1].sequence < claim.last_sequence:
        have = wanted[-1].sequence if wanted else 0
        raise LogIncomplete(f"the log of table {claim.table_id} ends at {have}, before {claim.last_sequence}")
    for expected, record in enumerate(wanted, start=1):
        if record.sequence != expected:
            raise ReplayMismatch(f"the log skips or repeats sequence {expected}", record.sequence)
        if record.table_id and record.table_id != claim.table_id:
            raise ReplayMismatch(f"record {expected} belongs to table {record.table_id}", expected)
    return wanted


def replay_hand(records: Sequence[LogRecord], claim: HandPointer) -> ReplayedHand:
    """Replay the hand ``claim`` points at from ``records`` (the table's log); see the module doc."""
    log = checked_records(records, claim)
    # The hand's own events are compared as text; only the events before it and its hand_started are
    # read as events. The table labels each record with its kind; a label that lies is caught below
    # (the start must parse as a hand_started) or by the byte-for-byte comparison.
    starts = [r.sequence for r in log if r.canonical and _labelled_start(r)]
    if not starts:
        raise ReplayMismatch("the log up to last_sequence starts no hand")
    start = log[starts[-1] - 1]  # sequences are 1..n without gaps
    started = _event(start)
    if not isinstance(started, HandStarted):
        raise ReplayMismatch(f"record {start.sequence} is labelled hand_started but is not", start.sequence)
    prior = [_event(r) for r in log[: start.sequence - 1] if r.canonical]
    try:
        table = Table.replay(prior)
    except EngineError as err:
        raise ReplayMismatch(f"the table before the hand does not replay: {err}", start.sequence) from None
    hand = [r for r in log if r.sequence >= start.sequence]
    for record in hand:
        if record.hand_id and record.hand_id != claim.hand_id:
            raise ReplayMismatch(
                f"record {record.sequence} belongs to hand {record.hand_id}", record.sequence
            )
    logged = [r for r in hand if r.canonical]
    produced = _deal_again(table, started, start.sequence)
    for record in hand:
        if record.action:
            produced.extend(_apply(table, record))
    _compare(logged, produced)
    ended = [e for e in produced[: len(logged)] if isinstance(e, HandEnded)]
    if not ended:
        raise ReplayMismatch("the log up to last_sequence does not end the hand")
    outcome = ended[0].outcome
    begun = [r.begun for r in log if r.begun is not None and r.hand_id == claim.hand_id]
    if not begun:
        raise ReplayMismatch("the log holds no HandBegun record of the hand", start.sequence)
    _check_begun(begun[-1], outcome, table.settings)
    return ReplayedHand(claim, table.settings, outcome, begun[-1], len(logged))


def _labelled_start(record: LogRecord) -> bool:
    """Whether the table labelled the record a hand's start (a log without labels: read the event)."""
    if record.kind:
        return record.kind == HandStarted.kind
    return isinstance(_event(record), HandStarted)


def _deal_again(table: Table, started: HandStarted, sequence: int) -> list[Event]:
    """Deal the hand from the logged seed, salt, items and 乾坤大挪移 seats (T6)."""
    items = counts_at_deal(started)  # the event records the counts after 乾坤大挪移 was spent
    try:
        salt = bytes.fromhex(started.salt or "")  # a hand dealt without one (older logs) has none
        return list(table.start_hand(started.seed, salt=salt, items=items, qiankun=started.qiankun))
    except (EngineError, IndexError, TypeError, ValueError) as err:
        raise ReplayMismatch(f"the hand cannot be dealt again: {err}", sequence) from None


def _apply(table: Table, record: LogRecord) -> list[Event]:
    try:
        action = Action.parse(record.action)
    except (EngineError, ValueError) as err:
        raise ReplayMismatch(
            f"record {record.sequence}: unreadable action {record.action!r}: {err}", record.sequence
        ) from None
    try:
        return list(table.apply(action))
    except EngineError as err:
        raise ReplayMismatch(
            f"record {record.sequence}: {action} is not legal there: {err}", record.sequence
        ) from None


def _compare(logged: list[LogRecord], produced: list[Event]) -> None:
    """The logged events must be exactly the first events the replay produces (byte for byte)."""
    for record, event in zip(logged, produced, strict=False):
        if record.canonical != event.canonical():
            raise ReplayMismatch(
                f"record {record.sequence} logs {_kind(record)!r} where the replay gives {event.kind!r}"
                + ("" if _kind(record) != event.kind else " with other contents"),
                record.sequence,
            )
    if len(logged) > len(produced):
        extra = logged[len(produced)]
        raise ReplayMismatch(
            f"record {extra.sequence} logs an event no logged action produces", extra.sequence
        )


def _kind(record: LogRecord) -> str:
    try:
        return str(json.loads(record.canonical).get("kind", "?"))
    except (ValueError, AttributeError):
        return "?"


def _check_begun(begun: HandBegunFacts, outcome: Outcome, settings: RoomSettings) -> None:
    """The hand's ``HandBegun`` record names the hand the engine replayed and its two players."""
    if begun.hand_number != outcome.hand:
        raise ReplayMismatch(f"HandBegun names hand {begun.hand_number}; the log replays hand {outcome.hand}")
    if begun.profile != settings.profile:
        raise ReplayMismatch(
            f"HandBegun names profile {begun.profile!r}; the table plays {settings.profile!r}"
        )
    if len(begun.players) != 2 or not all(player for player, _carry in begun.players):
        raise ReplayMismatch(f"HandBegun does not name both players: {begun.players!r}")
    if begun.players[0][0] == begun.players[1][0]:
        raise ReplayMismatch("HandBegun names one player in both seats")
