"""One live table: an asyncio task that alone owns its engine ``Table``, fed by its inbox.

Play streams put what happens to them (a seat attaches, sends an action, goes away) into the inbox and
read what the table sends them from their own outbox; nothing else touches the engine. Every action the
engine accepts becomes log records written ahead (acked by JetStream) before any seat sees its effect.
Timers (T11), auto-play of disconnected seats (T10), the hand's end, settlement and the next deal all
happen inside this one task, so their order is the log's order.

:class:`LiveTable` owns the table: its state (:class:`~services.table.live_state.LiveState`, declared
there), its inbox and its task. It checks what the seats send and hands the rest to two collaborators
it builds on that state: :class:`~services.table.broadcast.Broadcast` (what the seats are shown) and
:class:`~services.table.hands.HandCycle` (what moves the hands on: dealing, steps, settling, between
hands and the timers, one collaborator each). A table is opened from its checked
OpenTable request, or adopted with the state its write-ahead log rebuilt
(:mod:`services.table.rebuild`) when the process that served it is gone.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass

from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.state import CLOSED
from duelmahjong.platform.errors import DomainError, Unavailable
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2, table_pb2
from duelmahjong.views import codec, items, seat_events, seat_views
from services.table import records
from services.table.broadcast import Broadcast
from services.table.hands import HandCycle
from services.table.live_state import LiveState
from services.table.ports import BusPorts, Fenced, OpenRequest, TableOwner
from services.table.seats import SeatSession

_log = get_logger("table.live")


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class _Item:
    what: str  # "attach", "detach", "action", "drain", "status", "let_go", "settled"
    session: SeatSession | None
    request: table_pb2.PlayRequest | None = None
    received: float = 0.0
    last_seen: int = 0
    reply: asyncio.Future[table_pb2.GetTableStatusResponse] | None = None
    settlement: events_pb2.SettlementApplied | None = None


class _Inbox:
    """What the table's task reads, in order, and the task's wait for it. Apart from the table, so
    that what posts into it (the settlement board, for the hand being settled) holds the inbox only,
    never the table: a table that ends is freed by reference counting (services/table/gc_policy.py)."""

    def __init__(self) -> None:
        self.items: deque[_Item] = deque()
        self.waiter: asyncio.Future[None] | None = None  # the task's wait for its inbox, if waiting

    def put(self, item: _Item) -> None:
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def post_settlement(self, settlement: events_pb2.SettlementApplied) -> None:
        """The wallet's answer for the hand this table is settling: a message of its inbox like any."""
        self.put(_Item("settled", None, settlement=settlement))


class LiveTable:
    """One live table: the owner of its state, its inbox and the task that alone reads them."""

    def __init__(
        self, request: OpenRequest, host: TableOwner, ports: BusPorts, state: LiveState | None = None
    ) -> None:
        # A table is opened from its request, or adopted with the state its log rebuilt.
        self._adopted = state is not None
        self.state = state if state is not None else LiveState.opened(request)
        self._host = host
        self._ports = ports
        self._out = Broadcast(self.state, ports.wal, host.now)
        self._inbox = _Inbox()
        self._hands = HandCycle(
            self.state, self._out, host, ports.events, ports.settlements, self._inbox.post_settlement
        )
        self._pending_actions = 0
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the task's, set when it runs
        # Another server serves the table now (or is about to): this one stops without a word.
        self._let_go = False

    @classmethod
    def adopted(cls, state: LiveState, host: TableOwner, ports: BusPorts) -> LiveTable:
        """The live table of ``state`` rebuilt from its log (:func:`services.table.rebuild.rebuild`):
        started, it goes on where the log stops and writes on after the log's last record."""
        return cls(state.request, host, ports, state)

    # --- outside: Play streams and the host ------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"table-{self.state.table_id}")

    async def stop(self) -> None:
        """End the table's task now (drain deadline passed); it closes the table on its way out."""
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            # A cancelled task keeps its CancelledError, whose traceback holds the task's frames and so
            # this table: dropped, the table is freed by reference counting, frozen or not
            # (services/table/gc_policy.py).
            self._task = None

    async def hand_off(self) -> None:
        """Stop serving the table after the step in hand, its last records acked — so its log is
        whole for the server it goes to. The seats' streams end with no further event (their clients
        find the table where it is served next); nothing is published."""
        self._put(_Item("let_go", None))
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def taken(self) -> None:
        """Another server has taken the table: stop now, mid-step if need be (whatever this server
        would still write is refused by the log's fencing), tell the seats nothing, publish nothing."""
        self._let_go = True
        await self.stop()

    def attach(self, session: SeatSession, last_seen: int) -> None:
        self._put(_Item("attach", session, last_seen=last_seen))

    def detach(self, session: SeatSession) -> None:
        self._put(_Item("detach", session))

    def submit(self, session: SeatSession, request: table_pb2.PlayRequest) -> None:
        """Queue a seat's action, or refuse it BUSY when the table's queue is full (back-pressure)."""
        if self._pending_actions >= self._host.queue_size:
            if self._host.metrics is not None:
                self._host.metrics.queue_full.inc()
            # Refused on the stream's side with the last view the table sent: only the table's task
            # reads its engine.
            busy = table_pb2.ActionRejected(
                client_action_id=request.client_action_id,
                code=table_pb2.REJECTION_CODE_BUSY,
                reason=f"the table is busy ({self._host.queue_size} actions waiting); send again",
            )
            if session.last_view is not None:
                busy.view.CopyFrom(session.last_view)
            session.send(table_pb2.PlayResponse(rejected=busy))
            return
        self._pending_actions += 1
        self._put(_Item("action", session, request, received=time.perf_counter()))

    def _put(self, item: _Item) -> None:
        self._inbox.put(item)

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()  # once: each lookup checks the process id (a system call)
        try:
            if self._adopted:
                await self._hands.resume()
            else:
                self.state.opened_at = self._host.now()
                opening = records.table_opening(self.state.request)
                await self._out.publish([opening], self.state.engine.events[:1])  # table_opened: sequence 1
                await self._ports.events.table_opened(self.state.request)
            while (
                # An escape closes the engine's pairing with the hand; the table stays to settle it.
                (self.state.engine.phase != CLOSED or self.state.status == table_pb2.TABLE_STATUS_SETTLING)
                and self.state.status != table_pb2.TABLE_STATUS_CLOSED
                and not self._let_go
            ):
                await self._next()
        except asyncio.CancelledError:
            raise
        except Fenced:
            self._let_go = True
            _log.warning(
                "table written by another server; let go", extra={"fields": {"table_id": self.state.table_id}}
            )
            if self._host.metrics is not None:
                self._host.metrics.fenced.inc()
        except Exception:
            self.state.close_reason = "the table stopped on a server error"
            _log.exception(
                "table task failed; closing the table", extra={"fields": {"table_id": self.state.table_id}}
            )
        finally:
            self._hands.abandon()  # the server's board holds nothing of a table that stopped
            if self._let_go:
                self._end_streams()
                self._host.let_go(self.state.table_id)
            else:
                await self._close(self.state.close_reason)

    def _end_streams(self) -> None:
        for state in self.state.seats:
            if state.session is not None:
                state.session.end()
                state.session = None

    async def _next(self) -> None:
        if not self._inbox.items:
            deadline = self._hands.next_deadline()
            loop = self._loop or asyncio.get_running_loop()
            # One future and, with a deadline, one timer that resolves it: the wait for the next item
            # or the next deadline, whichever comes first (cheaper than an Event under a timeout, and
            # it happens once per action).
            waiter = self._inbox.waiter = loop.create_future()
            timer = None
            if deadline is not None:
                timer = loop.call_later(max(0.0, deadline - self._host.now()), _release, waiter)
            try:
                await waiter
            finally:
                self._inbox.waiter = None
                if timer is not None:
                    timer.cancel()
        if self._inbox.items:
            item = self._inbox.items.popleft()
            if item.what == "action":
                self._pending_actions -= 1
            await self._handle(item)
        await self._hands.on_clock()

    async def _handle(self, item: _Item) -> None:
        if item.reply is not None:
            if not item.reply.done():
                # A spectator's view (no seat): seat 0's would show its own open claim window.
                view = seat_views.seat_view(self.state.shown_engine(), -1, self.state.facts(), None)
                item.reply.set_result(
                    table_pb2.GetTableStatusResponse(status=self.state.status, state=view.table)
                )
            return
        if item.what == "let_go":
            self._let_go = True
            return
        if item.what == "settled":
            await self._hands.settled(item.settlement)
            return
        if item.session is None:  # the server drains: a table with no hand in play closes now
            if self.state.status == table_pb2.TABLE_STATUS_WAITING or self.state.between:
                self.state.ending("the table server is draining")
            return
        seat = item.session.seat
        state = self.state.seats[seat]
        if item.what == "attach":
            await self._attach(item.session, item.last_seen)
        elif item.what == "detach":
            if state.session is item.session:
                # T10: the seat is held. Its decisions keep their deadlines (the player is probably
                # coming back); one missed while away puts it in 托管 (``_on_clock``).
                state.session = None
                state.left_at = self._host.now()
                if self.state.status != table_pb2.TABLE_STATUS_CLOSED:
                    await self._out.announce(
                        lambda sequence: seat_events.seat_connection(seat, False, False, sequence)
                    )
        elif state.session is item.session and item.request is not None:
            await self._seat_action(item.session, item.request, item.received)

    async def _attach(self, session: SeatSession, last_seen: int) -> None:
        state = self.state.seats[session.seat]
        if state.session is not None and state.session is not session:
            state.session.end()  # a second stream for the seat replaces the first
        if state.ever_attached and self._host.metrics is not None:
            self._host.metrics.reconnects.inc()
        returning = state.ever_attached and state.session is None
        state.session, state.ever_attached, state.left_at = session, True, None
        state.auto_play = False  # T10: reattaching ends 托管
        if session.grand_shift and self.state.status == table_pb2.TABLE_STATUS_WAITING:
            # T6: chosen before the first deal; without the item it is simply not used.
            state.grand_shift = self.state.item_counts[session.seat].get(items.GRAND_SHIFT, 0) > 0
        facts = self.state.facts()
        shown_up_to = self.state.shown_sequence()  # a claim window's held events follow when it ends
        for shown in self.state.log.events:  # T10: resume from the last event the client saw
            if last_seen < shown.sequence <= shown_up_to:
                session.send(self._out.response(shown, session.seat, facts))
        if returning:
            seat = session.seat
            await self._out.announce(
                lambda sequence: seat_events.seat_connection(seat, True, False, sequence)
            )
        if self.state.status == table_pb2.TABLE_STATUS_WAITING and all(s.connected for s in self.state.seats):
            await self._hands.deal()
        else:
            self._out.send_views()

    async def _seat_action(
        self, session: SeatSession, request: table_pb2.PlayRequest, received: float
    ) -> None:
        seat, message = session.seat, request.action
        which = message.WhichOneof("kind")
        if self.state.status == table_pb2.TABLE_STATUS_SETTLING:
            if which == "leave":  # T7: leaving between hands, once the hand is settled
                self.state.leaving.add(seat)
            else:
                why = "the hand is being settled: no decision until its settlement is shown"
                self._out.reject(session, request, table_pb2.REJECTION_CODE_STALE, why)
            return
        if self.state.between:
            await self._hands.between_hands(seat, which, request=request)
            return
        legal = self.state.engine.legal_actions(seat)
        deciding = self.state.deciding(seat)  # nobody decides while a claim window holds events
        if which != "leave":
            if self.state.status != table_pb2.TABLE_STATUS_PLAYING or not deciding:
                self._out.reject(
                    session, request, table_pb2.REJECTION_CODE_STALE, "it is not your decision now"
                )
                return
            if request.last_seen_sequence < self.state.seats[seat].decision_sequence:
                why = (
                    f"decided on an older state (sequence {request.last_seen_sequence}; "
                    f"the table is at {self.state.seats[seat].decision_sequence})"
                )
                self._out.reject(session, request, table_pb2.REJECTION_CODE_STALE, why)
                return
        try:
            action = codec.decode_action(message, seat, legal)
            self.state.engine.check(action)
        except IllegalActionError as err:
            why = codec.refusal(message, legal, str(err)) if which is not None else str(err)
            self._out.reject(session, request, table_pb2.REJECTION_CODE_ILLEGAL, why)
            return
        except DomainError as err:
            self._out.reject(session, request, table_pb2.REJECTION_CODE_ILLEGAL, err.message)
            return
        await self._hands.apply(action, "player")
        if self._host.metrics is not None:
            self._host.metrics.action_latency.observe(time.perf_counter() - received)

    def wake_for_drain(self) -> None:
        self._put(_Item("drain", None))

    async def _close(self, reason: str) -> None:
        self.state.status = table_pb2.TABLE_STATUS_CLOSED
        try:  # the last event of both streams (the engine's pairing_ended is not shown: this says it)
            if not self.state.ended():  # an adopted table may have shown it already
                await self._out.announce(lambda sequence: seat_events.table_ended(reason, sequence))
        except Exception:  # the log itself failed: the streams end all the same
            _log.exception("could not write TableEnded", extra={"fields": {"table_id": self.state.table_id}})
        self._end_streams()
        self._host.closed(self.state.table_id)
        try:
            await self._ports.events.table_closed(self.state.request, reason, self.state.hands_played)
        except Exception:
            self.state.close_reason = "the table stopped on a server error"
            _log.exception(
                "could not publish TableClosed", extra={"fields": {"table_id": self.state.table_id}}
            )

    async def public_status(self) -> table_pb2.GetTableStatusResponse:
        """What every seat sees of the table now, answered by the table's own task (in its turn)."""
        reply: asyncio.Future[table_pb2.GetTableStatusResponse] = asyncio.get_running_loop().create_future()
        self._put(_Item("status", None, reply=reply))
        try:
            async with asyncio.timeout(5.0):
                return await asyncio.shield(reply)
        except TimeoutError:
            closed = self.state.status == table_pb2.TABLE_STATUS_CLOSED
            raise Unavailable("the table did not answer" + (": it has closed" if closed else "")) from None
