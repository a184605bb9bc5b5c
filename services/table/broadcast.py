"""What both seats of a live table are shown, and in which order: each step's events numbered, written
ahead (acked by JetStream) before any seat sees them, then sent to each seat in its own copy; views
with the seat's decision; refusals.

Runs in the live table's task only, on the :class:`~services.table.live_state.LiveState` it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from duelmahjong.engine.events import Event
from duelmahjong.platform.errors import readable_details
from duelmahjong.v1 import play_pb2, table_pb2
from duelmahjong.views import codec, seat_events, seat_views
from services.table import claim_window, records
from services.table.live_state import LiveState, Shown
from services.table.ports import Clock, WriteAheadLog
from services.table.seats import SeatSession


class Broadcast:
    """The live table's voice: the only way anything reaches its seats' streams."""

    def __init__(self, state: LiveState, wal: WriteAheadLog, now: Clock) -> None:
        self._state = state
        self._wal = wal
        self._now = now

    async def publish(self, leading: list[records.Record], events: list[Event]) -> list[tuple[int, Event]]:
        """Number the events both seats learn of, write everything ahead, then send each seat its copies
        (or hold them for a claim window); returns the engine events shown, with their sequences."""
        at = time.time_ns()
        now = self._now()
        windows = self._state.windows
        written = list(leading)
        shown: list[Shown] = []
        at_once: list[Shown] = []
        sequence = self._state.last_event_sequence()
        counted = len(self._state.engine.events) - len(events)  # engine events before this step's
        opened_at_once: int | None = None  # the first window this step opened on an opener shown now
        for event in events:
            counted += 1
            window = None
            if windows is not None:
                windows.answered(event)
                window = windows.open[-1] if windows.open else None
                if window is not None:
                    window.moved = True
                else:
                    windows.shown_events = counted
            # Held events carry the time they will be shown: the log says when each seat saw them.
            when = at if window is None or windows is None else windows.stamp(window, at, now)
            # A seat-only event (a pass in a claim or robbing window, docs/engine.md "Claim windows") is
            # journaled but sent to nobody: to the other seat it would show that the opponent had an
            # option, and numbering it for the deciding seat would leave the other a gap to see.
            number = 0
            if seat_events.is_shown(event):
                sequence = number = sequence + 1
                note = self._state.narrator.note(event, number, self._state.engine.state)
                item = Shown(number, event, note=note, at=when)
                shown.append(item)
                if window is None:
                    at_once.append(item)
                else:
                    window.held.append((item, counted))
            written.append(records.engine_event(event, number, when))
            if windows is not None and claim_window.opens(event, self._state.engine.state.ready):
                if window is None:
                    opened_at_once = len(windows.open)
                windows.open_after(now, when)
        if windows is not None:
            windows.catch_up(self._state.engine)
        await self.write(written)
        self._state.log.events.extend(shown)
        self._state.news.ring()
        self.send(at_once)
        if windows is not None and opened_at_once is not None:
            # the window runs from when its opener left for the streams, after the write-ahead
            windows.delay(opened_at_once, self._now() - now)
        return [(item.sequence, item.event) for item in shown if item.event is not None]

    async def announce(
        self, build: Callable[[int], play_pb2.SeatEvent], leading: Sequence[records.Record] = ()
    ) -> None:
        """One event of the table's own (settlement, connection), numbered next, written ahead (after
        ``leading``, in the same step), sent — after what a claim window holds, if it holds anything."""
        sequence = self._state.last_event_sequence() + 1
        event = build(sequence)
        await self.write([*leading, records.shown(event)])
        shown = Shown(sequence, made=event)
        self._state.log.events.append(shown)
        self._state.news.ring()
        window = self._state.windows.holding_window() if self._state.windows is not None else None
        if window is not None:
            window.held.append((shown, 0))
        else:
            self.send([shown])

    def release(self, now: float) -> bool:
        """Show what the claim windows that have ended held; True if a window ended."""
        windows = self._state.windows
        if windows is None:
            return False
        window = windows.due(now)
        if window is not None:
            for item, counted in window.held:
                windows.shown_events = max(windows.shown_events, counted)
                self.send([item])
            # the windows after it were opened by what it held: they run from when that left
            windows.delay(0, self._now() - window.ends_at)
        if not windows.holding():  # what nobody is shown (a seat-only pass) is past too
            windows.shown_events = len(self._state.engine.events)
        windows.catch_up(self._state.engine)
        return window is not None

    def send(self, shown: list[Shown]) -> None:
        facts = self._state.facts()
        for item in shown:
            shared = None  # an event with no private part reads the same for both seats: build it once
            for seat, state in enumerate(self._state.seats):
                if state.session is None:
                    continue
                if item.event is not None and not seat_events.same_for_both(item.event):
                    state.session.send(self.response(item, seat, facts))
                    continue
                if shared is None:
                    shared = self.response(item, seat, facts)
                state.session.send(shared)

    @staticmethod
    def response(item: Shown, seat: int, facts: seat_views.TableFacts) -> table_pb2.PlayResponse:
        if item.made is not None:
            return table_pb2.PlayResponse(event=item.made)
        assert item.event is not None
        return seat_events.seat_event_response(item.event, seat, item.sequence, facts, item.note, item.at)

    async def write(self, written: list[records.Record]) -> None:
        """Write-ahead: the records, numbered after the journal's last without gaps, acked."""
        numbered = [(self._state.log.sequence + i + 1, r) for i, r in enumerate(written)]
        await self._wal.append(self._state.table_id, self._state.hand_id or "table", numbered)
        self._state.log.sequence += len(written)

    def legal_message(self, seat: int) -> play_pb2.LegalActions | None:
        state = self._state.seats[seat]
        if self._state.between:
            if state.continuing:
                return None
            actions = codec.between_hands_legal()
            default = play_pb2.Action(leave=play_pb2.LeaveAction())  # T10: silence between hands = leave
        elif self._state.status == table_pb2.TABLE_STATUS_PLAYING and self._state.deciding(seat):
            actions, default = seat_views.engine_decision(self._state.engine, seat)
        else:
            return None
        deadline = self._state.deadline(seat)
        remaining = None if deadline is None else max(0.0, deadline - self._now())
        # A claim window's decision has the window's time; the bank (shown as it is) is not drawn on.
        window = remaining if state.window_until is not None else None
        # A decision keeps the sequence it was offered at: a view sent again for it (a connection
        # changed, the seat resumed) names the same decision, so a client answers it once.
        pending = not self._state.between and state.decision_since is not None
        return seat_views.legal_actions(
            actions,
            default,
            sequence=state.decision_sequence if pending else self._state.last_event_sequence(),
            remaining=remaining,
            decision_seconds=self._state.settings.decision_seconds if window is None else window,
            bank=state.bank,
        )

    def send_views(self, seats: Sequence[int] = (0, 1)) -> None:
        facts = self._state.facts()
        engine = self._state.shown_engine()
        for seat in seats:
            state = self._state.seats[seat]
            if state.session is not None:
                view = seat_views.seat_view(engine, seat, facts, self.legal_message(seat))
                state.session.send(table_pb2.PlayResponse(view=view))

    def reject(
        self,
        session: SeatSession,
        request: table_pb2.PlayRequest,
        code: table_pb2.RejectionCode.ValueType,
        reason: str,
    ) -> None:
        legal = self.legal_message(session.seat)
        rejected = table_pb2.ActionRejected(
            client_action_id=request.client_action_id,
            code=code,
            reason=readable_details(reason),  # the engine's reason may quote a 100 kB tile string
            view=seat_views.seat_view(self._state.shown_engine(), session.seat, self._state.facts(), legal),
        )
        session.send(table_pb2.PlayResponse(rejected=rejected))
