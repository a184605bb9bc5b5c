"""One hand read out of its table's write-ahead log (``server_state.proto`` ``TableLogRecord``).

A table's log is ``TableOpening`` and the engine's ``table_opened`` first, then per hand a
``HandBegun`` with the deal's engine events after it, and per applied action an ``ActionApplied``
followed by the engine events it caused (each step is written in one piece, services/table/records.py).
Around them stand records the replay does not need (time banks, the table's own ``shown`` events,
seats continuing between hands). A hand ends with the step whose events hold ``hand_ended``; a void
hand's log stops before one (or the next hand begins).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from duelmahjong.engine.errors import EngineError
from duelmahjong.engine.events import Event, HandEnded, HandStarted
from duelmahjong.v1 import events_pb2, play_pb2, server_state_pb2


class ReplayError(Exception):
    """The log does not hold the hand, or does not replay to the events it logged."""


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One engine event of the log: the event, and the sequence and time both seats were shown it
    under (0, 0: shown to nobody)."""

    event: Event
    canonical: str
    sequence: int
    at: int


@dataclass(frozen=True, slots=True)
class LoggedAction:
    """One applied action and the engine events it caused, as logged."""

    applied: server_state_pb2.ActionApplied
    events: tuple[LoggedEvent, ...]


@dataclass(frozen=True, slots=True)
class HandLog:
    opening: server_state_pb2.TableOpening
    begun: server_state_pb2.HandBegun
    prior: tuple[Event, ...]  # every engine event of the table before the hand (table_opened first)
    deal: tuple[LoggedEvent, ...]  # hand_started and the rest of the deal
    actions: tuple[LoggedAction, ...]
    settled: play_pb2.SeatEvent | None  # the table's HandSettled for the hand, when it was shown

    @property
    def started(self) -> HandStarted:
        started = self.deal[0].event
        assert isinstance(started, HandStarted)  # read_hand checks it
        return started


def log_records(log: Sequence[events_pb2.TableEventAppended]) -> list[server_state_pb2.TableLogRecord]:
    """A table's log messages (as services/table/wal.py ``read_table_log`` returns them) as its
    records in order: each message's ``record``, then its ``following``."""
    return [record for message in log for record in (message.record, *message.following)]


def _logged(record: server_state_pb2.EngineEventRecord, where: int) -> LoggedEvent:
    try:
        event = Event.from_json(json.loads(record.canonical_json))
    except (ValueError, TypeError, KeyError, EngineError) as err:
        raise ReplayError(f"log record {where} is not an engine event: {err}") from None
    return LoggedEvent(event, record.canonical_json, record.seat_sequence, record.shown_at_unix_nanos)


def read_hand(records: Sequence[server_state_pb2.TableLogRecord], hand_id: str) -> HandLog:
    """The hand ``hand_id`` of one table's log ``records`` (in order, the table's whole log)."""
    if not records or not records[0].HasField("table_opening"):
        raise ReplayError("a table's log starts with its TableOpening record")
    opening = records[0].table_opening
    start = next(
        (
            index
            for index, record in enumerate(records)
            if record.HasField("hand_begun") and record.hand_begun.hidden.hand_id == hand_id
        ),
        None,
    )
    if start is None:
        raise ReplayError(f"the log of table {opening.table_id} holds no hand {hand_id!r}")
    prior = tuple(
        _logged(record.engine_event, index).event
        for index, record in enumerate(records[:start])
        if record.HasField("engine_event")
    )
    deal: list[LoggedEvent] = []
    actions: list[LoggedAction] = []
    current: list[LoggedEvent] = deal
    applied: server_state_pb2.ActionApplied | None = None
    settled = None
    ended = False
    for index in range(start + 1, len(records)):
        record = records[index]
        which = record.WhichOneof("kind")
        if which == "hand_begun":
            break
        if which == "shown" and record.shown.HasField("hand_settled"):
            settled = record.shown
            break
        if ended and which == "action_applied":
            break  # the hand is over: what follows is between hands
        if which == "engine_event":
            current.append(_logged(record.engine_event, index))
            ended = ended or isinstance(current[-1].event, HandEnded)
        elif which == "action_applied":
            if applied is not None:
                actions.append(LoggedAction(applied, tuple(current)))
            applied, current = record.action_applied, []
    if applied is not None:
        actions.append(LoggedAction(applied, tuple(current)))
    if not deal or not isinstance(deal[0].event, HandStarted):
        raise ReplayError(f"hand {hand_id!r}: its HandBegun is not followed by hand_started")
    return HandLog(opening, records[start].hand_begun, prior, tuple(deal), tuple(actions), settled)
