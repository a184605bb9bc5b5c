"""A seat at a live table: its Play stream's outbox and its clocks (T11 decisions and bank, T10 grace
and 托管).

The clock arithmetic is plain functions of ``now`` values, so it is tested without waiting:

>>> seat = SeatState(player=None)
>>> seat.new_hand(bank=30.0)
>>> seat.offer(now=100.0, sequence=7)
True
>>> seat.deadline(decision_seconds=15.0)
145.0
>>> seat.spend(now=120.0, decision_seconds=15.0)   # 5 s over the decision time come off the bank
>>> seat.bank, seat.deadline(15.0)
(25.0, None)
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2

# Replies (rejections) one seat's stream may hold unread before the stream is closed: see SeatSession.
DEFAULT_REPLY_LIMIT = 256


class SeatSession:
    """One Play stream's end of a seat: the table writes to ``outbox``; ``None`` ends the stream.

    What the seat's own requests make the server hold is bounded. Every request is answered (an event,
    a view or an ``ActionRejected``), and a client that sends without reading would have the server
    queue its rejections without end: the table's queue limit never applies, since each request is
    answered at once. So the replies queued or being written and not yet written out are counted; the
    one that would make more than ``reply_limit`` closes the stream instead (``overflowed`` is set, the
    outbox is let go, nothing more is queued). The stream ends with ``RESOURCE_EXHAUSTED`` and the client
    reconnects to resume; the events it had not read come back then. What the table itself sends (the
    events of the game and views) is bounded by the game and never counted.
    """

    def __init__(
        self,
        seat: int,
        batched: bool = False,
        grand_shift: bool = False,
        reply_limit: int = DEFAULT_REPLY_LIMIT,
    ) -> None:
        self.seat = seat
        # T6: the first request asked for 乾坤大挪移 in the table's first hand (later hands: Continue).
        self.grand_shift = grand_shift
        # The client set accept_batches: what the table queued while the stream was writing goes out
        # as one PlayBatch (one write and one read instead of one per event).
        self.batched = batched
        self.reply_limit = reply_limit
        # What the table queued and the stream has not taken yet; the stream takes it all at once. A
        # deque and one future rather than an asyncio.Queue: a step queues several messages per seat,
        # and the queue's per-item bookkeeping was a visible share of the server's time per action.
        self._outbox: deque[table_pb2.PlayResponse | None] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the stream's, at its first take
        self._queued_replies = 0  # rejections in the outbox
        self._taken_replies = 0  # rejections taken by the stream and not yet written
        self.overflowed = asyncio.Event()
        # The last view the table sent this seat: what a refusal made outside the table's task shows.
        self.last_view: play_pb2.SeatView | None = None

    def send(self, response: table_pb2.PlayResponse) -> None:
        if self.overflowed.is_set():
            return  # the stream is closing: the client resumes from its last sequence
        if response.HasField("view"):
            self.last_view = response.view
        if response.HasField("rejected"):
            if self._queued_replies + self._taken_replies >= self.reply_limit:
                self._overflow()
                return
            self._queued_replies += 1
        self._put(response)

    def end(self) -> None:
        self._put(None)

    def _overflow(self) -> None:
        self._outbox.clear()
        self._queued_replies = 0
        self.overflowed.set()
        self._wake()

    def _put(self, response: table_pb2.PlayResponse | None) -> None:
        self._outbox.append(response)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def take(self) -> list[table_pb2.PlayResponse | None]:
        """Wait until something is queued, then take everything queued, in order (``None``: end).

        The replies taken count against the limit until :meth:`written` says they are out.
        """
        while not self._outbox:
            loop = self._loop
            if loop is None:  # once: each lookup checks the process id (a system call)
                loop = self._loop = asyncio.get_running_loop()
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        taken = list(self._outbox)
        self._outbox.clear()
        self._taken_replies += self._queued_replies
        self._queued_replies = 0
        return taken

    def written(self) -> None:
        """What the stream took last has been written to the client's connection."""
        self._taken_replies = 0


@dataclass
class SeatState:
    """One seat as its table tracks it. Times are the table's monotonic clock, in seconds."""

    player: rules_pb2.SeatPlayer | None
    session: SeatSession | None = None
    ever_attached: bool = False
    left_at: float | None = None  # disconnected since (T10 grace)
    auto_play: bool = False  # T10 托管: away and past a deadline; the bot plays at once until it returns
    decision_since: float | None = None  # T11: when the pending decision was offered
    decision_sequence: int = 0  # the sequence that decision follows (older actions are stale)
    # A claim window's decision (services/table/claim_window.py): answered by this time, bank untouched.
    window_until: float | None = None
    bank: float = 0.0  # T11: what is left of this hand's time bank
    continuing: bool = False  # between hands: this seat chose to play on
    grand_shift: bool = False  # T6: 乾坤大挪移 chosen for the next deal

    @property
    def connected(self) -> bool:
        return self.session is not None

    def new_hand(self, bank: float) -> None:
        self.bank, self.continuing, self.decision_since, self.window_until = bank, False, None, None

    def offer(self, now: float, sequence: int) -> bool:
        """A decision is pending: start its clock unless one is running. True if it is a new one."""
        if self.decision_since is not None:
            return False
        self.decision_since, self.decision_sequence = now, sequence
        return True

    def no_decision(self) -> None:
        self.decision_since = self.window_until = None

    def spend(self, now: float, decision_seconds: float) -> None:
        """The seat decided: time beyond the per-decision allowance comes off the bank (T11); a claim
        window's decision has its own fixed time and spends none."""
        if self.window_until is not None:
            self.decision_since = self.window_until = None
        elif self.decision_since is not None:
            over = now - self.decision_since - decision_seconds
            self.bank = max(0.0, self.bank - max(0.0, over))
            self.decision_since = None

    def deadline(self, decision_seconds: float) -> float | None:
        """When the server plays the default for this seat; None when nothing is pending."""
        if self.decision_since is None:
            return None
        if self.window_until is not None:
            return self.window_until
        return self.decision_since + decision_seconds + self.bank
