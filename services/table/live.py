"""One live table: an asyncio task that alone owns its engine ``Table``, fed by its inbox.

Play streams put what happens to them (a seat attaches, sends an action, goes away) into the inbox and
read what the table sends them from their own outbox; nothing else touches the engine. Every action the
engine accepts becomes log records written ahead (acked by JetStream) before any seat sees its effect.
Timers (T11), auto-play of disconnected seats (T10), the hand's end, settlement and the next deal all
happen inside this one task, so their order is the log's order. What both seats are shown — engine
events and the table's own (settlement, connections, the end) — is numbered 1, 2, 3… and kept, so a
seat that comes back is sent everything after the last sequence it saw.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.events import Event
from duelmahjong.engine.state import CLOSED
from duelmahjong.engine.table import Table
from duelmahjong.platform.errors import DomainError, Unavailable, readable_details
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import play_pb2, table_pb2
from services.table import codec, items, records, views
from services.table.hands import HandCycle
from services.table.ports import BusPorts, OpenRequest, TableOwner
from services.table.seats import SeatSession, SeatState

_log = get_logger("table.live")
DEFAULT_GRACE_SECONDS = 60.0


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class _Item:
    what: str  # "attach", "detach", "action", "drain", "status"
    session: SeatSession | None
    request: table_pb2.PlayRequest | None = None
    received: float = 0.0
    last_seen: int = 0
    reply: asyncio.Future[table_pb2.GetTableStatusResponse] | None = None


@dataclass(frozen=True, slots=True)
class Shown:
    """One event both seats were shown: an engine event (each seat's copy is built from it, with its
    note) or one of the table's own (``made``: the same message for both seats)."""

    sequence: int
    event: Event | None = None
    made: play_pb2.SeatEvent | None = None
    note: views.Note = views.NO_NOTE
    at: int = 0  # when it was first shown, nanoseconds since the epoch


@dataclass
class _Log:
    sequence: int = 0  # the journal's: every record (action records too), numbered without gaps
    # What seats are sent, numbered 1, 2, 3… apart from the journal, so neither an action record nor a
    # seat-only event leaves a gap to see.
    events: list[Shown] = field(default_factory=list)


class LiveTable(HandCycle):
    def __init__(self, request: OpenRequest, host: TableOwner, ports: BusPorts) -> None:
        self.request = request
        self.host = host
        self.table_id = request.table_id
        self.settings = codec.room_settings(request.rules, request.negotiated)
        self.engine = Table(self.settings)
        self.seats = [SeatState(request.players[0]), SeatState(request.players[1])]
        # T6: what each seat has left to use here, from the pairing's wallet counts; spent as used.
        self.item_counts = [items.seat_counts(player, request.rules) for player in request.players]
        self.status = table_pb2.TABLE_STATUS_WAITING
        self.hand_id = ""
        self.hands_played = 0
        self._log = _Log()
        self._narrator = views.Narrator()
        self._inbox: deque[_Item] = deque()
        self._waiter: asyncio.Future[None] | None = None  # the task's wait for its inbox, if waiting
        self._pending_actions = 0
        self._between = False
        self._between_since = 0.0
        self._opened_at = 0.0
        self._task: asyncio.Task[None] | None = None
        self._close_reason = "the pairing ended"
        rules = request.rules
        self.grace = (rules.reconnect_grace_millis / 1000) or DEFAULT_GRACE_SECONDS
        self._ports = ports

    # --- outside: Play streams and the host ------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"table-{self.table_id}")

    async def stop(self) -> None:
        """End the table's task now (drain deadline passed); it closes the table on its way out."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def now(self) -> float:
        return self.host.now()

    def attach(self, session: SeatSession, last_seen: int) -> None:
        self._put(_Item("attach", session, last_seen=last_seen))

    def detach(self, session: SeatSession) -> None:
        self._put(_Item("detach", session))

    def submit(self, session: SeatSession, request: table_pb2.PlayRequest) -> None:
        """Queue a seat's action, or refuse it BUSY when the table's queue is full (back-pressure)."""
        if self._pending_actions >= self.host.queue_size:
            if self.host.metrics is not None:
                self.host.metrics.queue_full.inc()
            # Refused on the stream's side with the last view the table sent: only the table's task
            # reads its engine.
            busy = table_pb2.ActionRejected(
                client_action_id=request.client_action_id,
                code=table_pb2.REJECTION_CODE_BUSY,
                reason=f"the table is busy ({self.host.queue_size} actions waiting); send again",
            )
            if session.last_view is not None:
                busy.view.CopyFrom(session.last_view)
            session.send(table_pb2.PlayResponse(rejected=busy))
            return
        self._pending_actions += 1
        self._put(_Item("action", session, request, received=time.perf_counter()))

    def _put(self, item: _Item) -> None:
        self._inbox.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the task ---
    async def _run(self) -> None:
        try:
            self._opened_at = self.now()
            await self._publish([], self.engine.events[:1])  # table_opened: sequence 1
            await self._ports.events.table_opened(self.request)
            while self.engine.phase != CLOSED and self.status != table_pb2.TABLE_STATUS_CLOSED:
                await self._next()
        except asyncio.CancelledError:
            raise
        except Exception:
            self._close_reason = "the table stopped on a server error"
            _log.exception(
                "table task failed; closing the table", extra={"fields": {"table_id": self.table_id}}
            )
        finally:
            await self._close(self._close_reason)

    async def _next(self) -> None:
        if not self._inbox:
            deadline = self._next_deadline()
            loop = asyncio.get_running_loop()
            # One future and, with a deadline, one timer that resolves it: the wait for the next item
            # or the next deadline, whichever comes first (cheaper than an Event under a timeout, and
            # it happens once per action).
            waiter = self._waiter = loop.create_future()
            timer = None
            if deadline is not None:
                timer = loop.call_later(max(0.0, deadline - self.now()), _release, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
        if self._inbox:
            item = self._inbox.popleft()
            if item.what == "action":
                self._pending_actions -= 1
            await self._handle(item)
        await self._on_clock()

    async def _handle(self, item: _Item) -> None:
        if item.reply is not None:
            if not item.reply.done():
                # A spectator's view (no seat): seat 0's would show its own open claim window.
                view = views.seat_view(self.engine, -1, self._facts(), None)
                item.reply.set_result(table_pb2.GetTableStatusResponse(status=self.status, state=view.table))
            return
        if item.session is None:  # the server drains: a table with no hand in play closes now
            if self.status == table_pb2.TABLE_STATUS_WAITING or self._between:
                self._ending("the table server is draining")
            return
        seat = item.session.seat
        state = self.seats[seat]
        if item.what == "attach":
            await self._attach(item.session, item.last_seen)
        elif item.what == "detach":
            if state.session is item.session:
                # T10: the seat is held. Its decisions keep their deadlines (the player is probably
                # coming back); one missed while away puts it in 托管 (``_on_clock``).
                state.session = None
                state.left_at = self.now()
                if self.status != table_pb2.TABLE_STATUS_CLOSED:
                    await self._announce(lambda sequence: views.seat_connection(seat, False, False, sequence))
        elif state.session is item.session and item.request is not None:
            await self._seat_action(item.session, item.request, item.received)

    async def _attach(self, session: SeatSession, last_seen: int) -> None:
        state = self.seats[session.seat]
        if state.session is not None and state.session is not session:
            state.session.end()  # a second stream for the seat replaces the first
        if state.ever_attached and self.host.metrics is not None:
            self.host.metrics.reconnects.inc()
        returning = state.ever_attached and state.session is None
        state.session, state.ever_attached, state.left_at = session, True, None
        state.auto_play = False  # T10: reattaching ends 托管
        if session.grand_shift and self.status == table_pb2.TABLE_STATUS_WAITING:
            # T6: chosen before the first deal; without the item it is simply not used.
            state.grand_shift = self.item_counts[session.seat].get(items.GRAND_SHIFT, 0) > 0
        facts = self._facts()
        for shown in self._log.events:  # T10: resume from the last event the client saw
            if shown.sequence > last_seen:
                session.send(self._response(shown, session.seat, facts))
        if returning:
            seat = session.seat
            await self._announce(lambda sequence: views.seat_connection(seat, True, False, sequence))
        if self.status == table_pb2.TABLE_STATUS_WAITING and all(s.connected for s in self.seats):
            await self._deal()
        else:
            self._send_views()

    # --- actions ---
    async def _seat_action(
        self, session: SeatSession, request: table_pb2.PlayRequest, received: float
    ) -> None:
        seat, message = session.seat, request.action
        which = message.WhichOneof("kind")
        if self._between:
            await self._between_hands(seat, which, request=request)
            return
        legal = self.engine.legal_actions(seat)
        deciding = any(a.kind != A.LEAVE for a in legal)
        if which != "leave":
            if self.status != table_pb2.TABLE_STATUS_PLAYING or not deciding:
                self._reject(session, request, table_pb2.REJECTION_CODE_STALE, "it is not your decision now")
                return
            if request.last_seen_sequence < self.seats[seat].decision_sequence:
                why = (
                    f"decided on an older state (sequence {request.last_seen_sequence}; "
                    f"the table is at {self.seats[seat].decision_sequence})"
                )
                self._reject(session, request, table_pb2.REJECTION_CODE_STALE, why)
                return
        try:
            action = codec.decode_action(message, seat, legal)
            self.engine.check(action)
        except IllegalActionError as err:
            why = codec.refusal(message, legal, str(err)) if which is not None else str(err)
            self._reject(session, request, table_pb2.REJECTION_CODE_ILLEGAL, why)
            return
        except DomainError as err:
            self._reject(session, request, table_pb2.REJECTION_CODE_ILLEGAL, err.message)
            return
        await self._apply(action, "player")
        if self.host.metrics is not None:
            self.host.metrics.action_latency.observe(time.perf_counter() - received)

    def _reject(self, session: SeatSession, request: table_pb2.PlayRequest, code: int, reason: str) -> None:
        legal = self._legal_message(session.seat)
        rejected = table_pb2.ActionRejected(
            client_action_id=request.client_action_id,
            code=code,
            reason=readable_details(reason),  # the engine's reason may quote a 100 kB tile string
            view=views.seat_view(self.engine, session.seat, self._facts(), legal),
        )
        session.send(table_pb2.PlayResponse(rejected=rejected))

    async def _apply(self, action: Action, origin: str) -> None:
        """Apply one legal action: write its records ahead, then show its events, then what follows."""
        self.seats[action.seat].spend(self.now(), self.settings.decision_seconds)
        events = self.engine.apply(action)
        sent = await self._publish([records.action_applied(action, origin)], events)
        await self._charges(sent)
        if self.host.metrics is not None:
            self.host.metrics.action_applied(action.kind, origin)
            if action.kind == A.LEAVE and any(e.kind == "escaped" for e in events):
                self.host.metrics.escapes.inc()
        ended = next((e for e in events if e.kind == "hand_ended"), None)
        if ended is not None:
            await self._hand_over((ended.public or {})["result"])
        elif self.engine.phase != CLOSED:
            self._offer_decisions()
            await self._autoplay()

    async def _publish(self, leading: list[records.Record], events: list[Event]) -> list[tuple[int, Event]]:
        """Number the events both seats learn of, write everything ahead, then send each seat its copies;
        returns the engine events shown, with their sequences."""
        at = time.time_ns()
        written = list(leading)
        shown: list[Shown] = []
        sequence = self._last_event_sequence()
        for event in events:
            # A seat-only event (a pass in a claim or robbing window, docs/engine.md "Claim windows") is
            # journaled but sent to nobody: to the other seat it would show that the opponent had an
            # option, and numbering it for the deciding seat would leave the other a gap to see.
            number = 0
            if views.is_shown(event):
                sequence = number = sequence + 1
                note = self._narrator.note(event, number, self.engine.state)
                shown.append(Shown(number, event, note=note, at=at))
            written.append(records.engine_event(event, number))
        await self._write(written)
        self._log.events.extend(shown)
        self._send(shown)
        return [(item.sequence, item.event) for item in shown if item.event is not None]

    async def _announce(self, build: Callable[[int], play_pb2.SeatEvent]) -> None:
        """One event of the table's own (settlement, connection), numbered next, written ahead, sent."""
        sequence = self._last_event_sequence() + 1
        event = build(sequence)
        await self._write([records.shown(event)])
        shown = Shown(sequence, made=event)
        self._log.events.append(shown)
        self._send([shown])

    def _send(self, shown: list[Shown]) -> None:
        facts = self._facts()
        for item in shown:
            shared = None  # an event with no private part reads the same for both seats: build it once
            for seat, state in enumerate(self.seats):
                if state.session is None:
                    continue
                if item.event is not None and item.event.private:
                    state.session.send(self._response(item, seat, facts))
                    continue
                if shared is None:
                    shared = self._response(item, seat, facts)
                state.session.send(shared)

    @staticmethod
    def _response(item: Shown, seat: int, facts: views.TableFacts) -> table_pb2.PlayResponse:
        if item.made is not None:
            return table_pb2.PlayResponse(event=item.made)
        assert item.event is not None
        return views.seat_event_response(item.event, seat, item.sequence, facts, item.note, item.at)

    async def _write(self, written: list[records.Record]) -> None:
        """Write-ahead: the records, numbered after the journal's last without gaps, acked."""
        numbered = [(self._log.sequence + i + 1, r) for i, r in enumerate(written)]
        await self._ports.wal.append(self.table_id, self.hand_id or "table", numbered)
        self._log.sequence += len(written)

    async def _autoplay(self) -> None:
        """T10 托管: a seat that is away and missed a deadline has its decisions played by the baseline
        bot at once, until it reconnects."""
        while self.status == table_pb2.TABLE_STATUS_PLAYING and not self._between:
            seat = next(
                (
                    s
                    for s in (0, 1)
                    if self.seats[s].auto_play and not self.seats[s].connected and self._deciding(s)
                ),
                None,
            )
            if seat is None:
                return
            legal = self.engine.legal_actions(seat)
            if self.host.metrics is not None:
                self.host.metrics.autoplays.inc()
            await self._apply(bot.choose(self.engine.state, seat, legal), "autoplay")

    def _deciding(self, seat: int) -> bool:
        return any(a.kind != A.LEAVE for a in self.engine.legal_actions(seat))

    def wake_for_drain(self) -> None:
        self._put(_Item("drain", None))

    # --- what seats see ---
    def _last_event_sequence(self) -> int:
        return self._log.events[-1].sequence if self._log.events else 0

    def _facts(self) -> views.TableFacts:
        return views.TableFacts(
            table_id=self.table_id,
            hand_id=self.hand_id,
            players=self.request.players,
            connected=(self.seats[0].connected, self.seats[1].connected),
            fan_rate=self.request.rules.fan_rate,
            sequence=self._last_event_sequence(),
            items=(self.item_counts[0], self.item_counts[1]),
            negotiated=self.engine.state.settings.negotiated_multiplier,
            rules=self.request.rules,
            offer_ids=(self._narrator.offer_ids[0], self._narrator.offer_ids[1]),
            auto_play=(self.seats[0].auto_play, self.seats[1].auto_play),
        )

    def _legal_message(self, seat: int) -> play_pb2.LegalActions | None:
        state = self.seats[seat]
        if self._between:
            if state.continuing:
                return None
            actions = codec.between_hands_legal()
            default = play_pb2.Action(leave=play_pb2.LeaveAction())  # T10: silence between hands = leave
        elif self.status == table_pb2.TABLE_STATUS_PLAYING and self._deciding(seat):
            actions, default = views.engine_decision(self.engine, seat)
        else:
            return None
        deadline = self._deadline(seat)
        remaining = None if deadline is None else max(0.0, deadline - self.now())
        # A decision keeps the sequence it was offered at: a view sent again for it (a connection
        # changed, the seat resumed) names the same decision, so a client answers it once.
        pending = not self._between and state.decision_since is not None
        return views.legal_actions(
            actions,
            default,
            sequence=state.decision_sequence if pending else self._last_event_sequence(),
            remaining=remaining,
            decision_seconds=self.settings.decision_seconds,
            bank=state.bank,
        )

    def _send_views(self, seats: Sequence[int] = (0, 1)) -> None:
        facts = self._facts()
        for seat in seats:
            state = self.seats[seat]
            if state.session is not None:
                view = views.seat_view(self.engine, seat, facts, self._legal_message(seat))
                state.session.send(table_pb2.PlayResponse(view=view))

    async def _close(self, reason: str) -> None:
        self.status = table_pb2.TABLE_STATUS_CLOSED
        try:  # the last event of both streams (the engine's pairing_ended is not shown: this says it)
            await self._announce(lambda sequence: views.table_ended(reason, sequence))
        except Exception:  # the log itself failed: the streams end all the same
            _log.exception("could not write TableEnded", extra={"fields": {"table_id": self.table_id}})
        for state in self.seats:
            if state.session is not None:
                state.session.end()
                state.session = None
        self.host.closed(self.table_id)
        try:
            await self._ports.events.table_closed(self.request, reason, self.hands_played)
        except Exception:
            self._close_reason = "the table stopped on a server error"
            _log.exception("could not publish TableClosed", extra={"fields": {"table_id": self.table_id}})

    async def public_status(self) -> table_pb2.GetTableStatusResponse:
        """What every seat sees of the table now, answered by the table's own task (in its turn)."""
        reply: asyncio.Future[table_pb2.GetTableStatusResponse] = asyncio.get_running_loop().create_future()
        self._put(_Item("status", None, reply=reply))
        try:
            async with asyncio.timeout(5.0):
                return await asyncio.shield(reply)
        except TimeoutError:
            closed = self.status == table_pb2.TABLE_STATUS_CLOSED
            raise Unavailable("the table did not answer" + (": it has closed" if closed else "")) from None
