"""A live table rebuilt from its write-ahead log alone: :func:`rebuild`, a pure function.

The log (:mod:`services.table.records`) is one ``TableEventAppended`` per step of the table, in order:
``TableOpening`` and the engine's ``table_opened`` first, then each hand's ``HandBegun``, each action
with the engine events it caused, the time banks it changed, the seats that chose to play on, and the
events of the table's own that both seats were shown. Folding those steps in order gives the
:class:`~services.table.live_state.LiveState` the table had after its last logged step: the engine
(the fold of its events), the events both seats were shown with their sequences and notes (a seat
that resumes with ``last_seen_sequence`` is sent exactly what it missed), the journal's last sequence
(the next record is written after it), status, hand id, hands played, item counts, time banks, 托管,
each seat's open decision and the sequence it was offered at, and who chose to continue between hands.

What a rebuilt table does NOT restore, and why:

- Connections. The seats' streams ended with the process that served them: no seat is connected. A
  seat of a table past its first deal is held as if it had just gone away (its T10 grace starts at
  ``now``), so its reattaching is shown to the other seat like any return.
- Clocks. Times are a process's monotonic clock and the time a server was dead is no seat's fault:
  every open decision starts again at ``now`` with its full per-decision time (plus the bank the log
  says), between hands the continue-or-leave decision too, and a table still waiting for its seats
  waits its whole join time again. No seat is timed out or auto-played for the time the server was
  dead; a seat already in 托管 stays in it.
- Claim windows (``RoomRules.claim_window_ms``): a log that stops inside one opens it again, whole, from
  ``now``, and holds again what the log's last step did after its discard (``_reopen_window``).
- What a seat asked for at its first attach, before the first deal (乾坤大挪移 for the first hand): a
  table waiting for its seats has written nothing about them, and each seat says it again when it
  attaches to the rebuilt table.
- Draining: a table that settled its hand while its old server drained would have closed; the log
  does not say its server drained, so the rebuilt table offers the next hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from duelmahjong.engine.events import Event, HandEnded, HandStarted, TableOpened
from duelmahjong.engine.state import CLOSED
from duelmahjong.v1 import events_pb2, play_pb2, table_pb2
from duelmahjong.views import codec, items
from services.table import claim_window, records
from services.table.live_state import LiveState, Shown


class RebuildError(Exception):
    """The log is not one table's log from its first record on, without gaps."""


def rebuild(log: Sequence[events_pb2.TableEventAppended], now: float = 0.0) -> LiveState:
    """The state of the live table whose write-ahead log is ``log`` (its messages, in order), with every
    clock started at ``now`` (the adopting host's clock); see the module doc for what is not restored."""
    if not log or not log[0].record.HasField("table_opening"):
        raise RebuildError("a table's log starts with its TableOpening record")
    state = LiveState.opened(records.opening_request(log[0].record.table_opening))
    state.opened_at = now
    for step in log:
        if step.table_id != state.table_id:
            raise RebuildError(f"record {step.sequence} belongs to table {step.table_id}")
        if step.sequence != state.log.sequence + 1:
            raise RebuildError(f"the log skips or repeats sequence {state.log.sequence + 1}")
        _fold(state, [step.record, *step.following], now)
        state.log.sequence += 1 + len(step.following)
    if state.status != table_pb2.TABLE_STATUS_WAITING:
        for seat in state.seats:  # every seat is away: held for its grace from now (T10)
            seat.ever_attached, seat.left_at = True, now
    _reopen_window(state, now)
    return state


def _fold(state: LiveState, step: list[records.Record], now: float) -> None:
    """One step of the table, as its live task took it (:mod:`services.table.hands`)."""
    engine = state.engine
    before = (len(engine.events), len(state.log.events))
    acted = -1
    dealt = False
    shown: list[Shown] = []
    for record in step:
        which = record.WhichOneof("kind")
        if which == "engine_event":
            logged = record.engine_event
            event = Event.from_json(json.loads(logged.canonical_json))
            if not isinstance(event, TableOpened):
                engine.emit(event)
            elif event.canonical() != engine.events[0].canonical():  # opened with the TableOpening's rules
                raise RebuildError("the engine's table_opened differs from the TableOpening's rules")
            if logged.seat_sequence:
                shown.append(Shown(logged.seat_sequence, event, at=logged.shown_at_unix_nanos))
        elif which == "hand_begun":
            dealt = True
            state.hand_id = record.hand_begun.hidden.hand_id
        elif which == "action_applied":
            acted = codec.seat_index(record.action_applied.seat)
            if state.between:  # T7 / T10: leaving between hands ends the pairing
                state.between = False
                state.ending("a player left between hands")
        elif which == "time_bank":
            state.seats[codec.seat_index(record.time_bank.seat)].bank = record.time_bank.seconds
        elif which == "seat_continued":
            seat = state.seats[codec.seat_index(record.seat_continued.seat)]
            seat.continuing = True
            seat.grand_shift = seat.grand_shift or record.seat_continued.grand_shift
        elif which == "shown":
            _table_event(state, record.shown, now)
            state.log.events.append(Shown(record.shown.sequence, made=record.shown))
    # The notes are taken once the step's events are all folded, as the live table takes them.
    for index, item in enumerate(shown):
        assert item.event is not None
        note = state.narrator.note(item.event, item.sequence, engine.state)
        shown[index] = Shown(item.sequence, item.event, note=note, at=item.at)
    state.log.events.extend(shown)
    if len(engine.events) > before[0]:
        state.last_step = before
    sent = [(item.sequence, item.event) for item in shown if item.event is not None]
    if dealt:
        _dealt(state, sent, now)
    elif acted >= 0:
        state.seats[acted].decision_since = None  # the seat decided
        _spent(state, sent, frozenset())
        if any(isinstance(event, HandEnded) for _, event in sent):
            state.hands_played += 1
            state.status = table_pb2.TABLE_STATUS_SETTLING
        elif engine.phase != CLOSED:
            _offer(state, now)


def _dealt(state: LiveState, sent: list[tuple[int, Event]], now: float) -> None:
    started = next(event for _, event in sent if isinstance(event, HandStarted))
    grand_shift = frozenset(started.qiankun)
    state.status, state.between = table_pb2.TABLE_STATUS_PLAYING, False
    for seat in state.seats:
        seat.new_hand(state.settings.time_bank_seconds)
        seat.grand_shift = False
    _spent(state, sent, grand_shift)
    _offer(state, now)


def _spent(state: LiveState, sent: list[tuple[int, Event]], grand_shift: frozenset[int]) -> None:
    """T6: the items the step's events show used leave their seat's counts."""
    for _, seat, name in items.used_items(sent, grand_shift):
        counts = state.item_counts[seat]
        counts[name] = counts.get(name, 0) - 1


def _offer(state: LiveState, now: float) -> None:
    """Each seat that decides now has its decision, offered at the last sequence shown unless it was
    already deciding (it keeps that decision's sequence); its clock starts at ``now``."""
    sequence = state.last_event_sequence()
    for seat, seat_state in enumerate(state.seats):
        if state.deciding(seat):
            seat_state.offer(now, sequence)
        else:
            seat_state.no_decision()


def _table_event(state: LiveState, event: play_pb2.SeatEvent, now: float) -> None:
    which = event.WhichOneof("kind")
    if which == "seat_connection":
        connection = event.seat_connection
        state.seats[codec.seat_index(connection.seat)].auto_play = connection.auto_play
    elif which == "hand_settled":
        if state.engine.phase == CLOSED:
            state.ending("a player left during the hand")
        else:
            state.status = table_pb2.TABLE_STATUS_BETWEEN_HANDS
            state.between, state.between_since = True, now
            for seat in state.seats:
                seat.continuing = False
    elif which == "table_ended":
        state.ending(event.table_ended.reason)


def _reopen_window(state: LiveState, now: float) -> None:
    """A log that stops inside a claim window (services/table/claim_window.py) opens it again, whole,
    from ``now``: what the log's last engine step did after its first opener is held again (the old
    server may not have shown it; a seat that saw it is shown it again when the window ends), and a
    seat deciding in the window decides in it, not on T11's clock."""
    windows, engine = state.windows, state.engine
    if windows is None or state.status != table_pb2.TABLE_STATUS_PLAYING:
        return
    engine_start, shown_start = state.last_step
    ready = engine.state.ready
    events = engine.events
    opener = next((i for i in range(engine_start, len(events)) if claim_window.opens(events[i], ready)), None)
    windows.shown_events = len(events) if opener is None else opener + 1
    windows.catch_up(engine)
    if opener is None:
        return
    windows.open_after(now)
    log = state.log.events[shown_start:]
    shown = {id(item.event): item for item in log if item.event is not None}
    for index in range(opener + 1, len(events)):
        windows.answered(events[index])
        if not windows.open:  # a claim or a win: the old server showed it at once
            windows.shown_events = index + 1
            continue
        windows.open[-1].moved = True
        item = shown.get(id(events[index]))
        if item is not None:
            windows.open[-1].held.append((item, index + 1))
        if claim_window.opens(events[index], ready):
            windows.open_after(now)
    windows.catch_up(engine)
    holding = windows.holding_window()
    if holding is not None:  # the table's own events since (an earlier adoption's) follow them
        holding.held.extend((item, 0) for item in log if item.made is not None)
    window_end = windows.deciding_until()
    for seat in state.seats:
        if holding is not None:
            seat.no_decision()  # offered when the window ends
        elif window_end is not None and seat.decision_since is not None:
            seat.window_until = window_end - claim_window.answer_margin(windows.seconds)
