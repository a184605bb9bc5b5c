"""Spectators of a live table (``TableService.Watch``): what no seat hides, each event sent the room's
``spectate_delay_seconds`` after it happened, so a watcher cannot coach a player.

Everything a spectator is sent is derived from what the table keeps and a rebuild restores
(:mod:`services.table.rebuild`): the events both seats were shown (``LiveState.log.events``, with when
each was first shown) and the engine's events. So a table adopted by another server is watchable
there exactly as on the server that opened it, under the same sequences and the same delays.

- A spectator's copy of an engine event is built by :mod:`duelmahjong.views.spectator` (the public
  part only: what the event's opponent was shown). The table's own events (settlement, connections,
  the end) are the same for everyone.
- The table never waits for a spectator. It rings its ``news`` bell when it has shown more (one
  future, whoever listens); one :class:`SpectatorFeed` per watched table listens, keeps the table's
  delayed frontier (how many events are of age) and wakes its watchers when it moves. Each watcher
  reads the table's event list at its own pace and holds nothing of its own: a watcher that lags more
  than ``max_lag`` behind the delay is ended ``RESOURCE_EXHAUSTED`` (it resumes with
  ``last_seen_sequence``), so a slow client costs the server one stream, never memory or the table's
  time.
- A table that closes or moves away stays watchable here until its last event is of age; then a
  watcher of a moved table is ended ``UNAVAILABLE`` and finds the table where it is now
  (``ListLiveTables``), resuming with the last sequence it saw.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from prometheus_client import Counter, Gauge

from duelmahjong.engine.events import Event, HandStarted, TableOpened
from duelmahjong.engine.table import Table
from duelmahjong.platform.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unavailable,
)
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import play_pb2, table_pb2
from duelmahjong.views import codec
from duelmahjong.views.seat_views import TableFacts
from duelmahjong.views.spectator import spectator_event as engine_event_seen
from duelmahjong.views.spectator import spectator_table
from services.table.live_state import Bell, LiveState, Shown

DEFAULT_DELAY_SECONDS = 30  # RoomRules.spectate_delay_seconds = 0
DEFAULT_WATCHERS_PER_TABLE = 100
DEFAULT_MAX_LAG_SECONDS = 10.0
WallClock = Callable[[], int]  # nanoseconds since the epoch, as the events' occurred_at
Write = Callable[[table_pb2.WatchResponse], Awaitable[None]]


def delay_seconds(state: LiveState) -> int:
    return state.request.rules.spectate_delay_seconds or DEFAULT_DELAY_SECONDS


def spectator_event(shown: Shown, facts: TableFacts) -> play_pb2.SeatEvent:
    """One event both seats were shown, as a spectator may see it."""
    if shown.made is not None:  # the table's own: the same message for everyone
        return shown.made
    assert shown.event is not None
    return engine_event_seen(shown.event, shown.sequence, facts, shown.note, shown.at)


def occurred_ns(shown: Shown) -> int:
    """When the event happened (was first shown), nanoseconds since the epoch; 0 if unknown."""
    if shown.made is not None:
        return shown.made.occurred_at.ToNanoseconds()
    return shown.at


def _facts(state: LiveState, sequence: int, hand_number: int, events: list[Shown]) -> TableFacts:
    """The table's facts as of ``events`` (its first ``sequence`` events): who was connected then."""
    dealt = hand_number > 0
    connected, auto_play = [dealt, dealt], [False, False]
    for shown in events:
        if shown.made is not None and shown.made.HasField("seat_connection"):
            change = shown.made.seat_connection
            seat = codec.seat_index(change.seat)
            connected[seat], auto_play[seat] = change.connected, change.auto_play
    return TableFacts(
        table_id=state.table_id,
        hand_id=f"{state.table_id}-h{hand_number}" if dealt else "",
        players=state.request.players,
        connected=(connected[0], connected[1]),
        fan_rate=state.request.rules.fan_rate,
        sequence=sequence,
        negotiated=state.request.negotiated,
        rules=state.request.rules,
        auto_play=(auto_play[0], auto_play[1]),
    )


class _Replica:
    """The engine as of the delayed moment: folded from the table's own engine events, only forward."""

    def __init__(self, state: LiveState) -> None:
        self._state = state
        self._table = Table()
        self._folded = 0  # engine events folded, from the table's engine.events

    def at(self, last: Event | None) -> Table:
        """The engine right after ``last`` (one of the table's shown engine events)."""
        events = self._state.engine.events
        if last is None or isinstance(last, TableOpened):
            target = 1  # a rebuilt table's logged table_opened is a copy of its engine's first event
        else:
            found = (i + 1 for i in range(len(events) - 1, -1, -1) if events[i] is last)
            target = next(found, self._folded or 1)  # never beyond what is of age
        if target < self._folded:
            self._table, self._folded = Table(), 0
        for event in events[self._folded : target]:
            self._table.emit(event)
        self._folded = target
        return self._table


@dataclass
class _Start:
    index: int  # the first event to send (its position in the table's shown events)
    state: table_pb2.WatchResponse | None  # sent first, when the watcher needs the table as it is


class SpectatorFeed:
    """The delayed frontier of one table's events, shared by its watchers (see the module doc)."""

    def __init__(
        self,
        state: LiveState,
        *,
        serving: bool = True,
        wall_ns: WallClock = time.time_ns,
        delay_ns: int | None = None,
    ) -> None:
        self.state = state
        self.serving = serving  # False once the table is no longer served by this server
        self.delay_ns = delay_seconds(state) * 1_000_000_000 if delay_ns is None else delay_ns
        self.aged = 0  # the first ``aged`` shown events are of age
        self.over = False  # every event this server will have of the table is of age
        self.watchers = 0
        self._wall_ns = wall_ns
        self._created = wall_ns()
        self._moved = Bell()
        self._facts = _facts(state, 0, 0, [])
        self._copies: list[play_pb2.SeatEvent] = []
        self._replica = _Replica(state)
        self._task: asyncio.Task[None] | None = None

    def start(self, on_over: Callable[[], None] = lambda: None) -> None:
        self._task = asyncio.create_task(self._run(on_over), name=f"spectators-{self.state.table_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def due_ns(self, index: int) -> int:
        """When event ``index`` may be sent: its time plus the delay."""
        return (occurred_ns(self.state.log.events[index]) or self._created) + self.delay_ns

    def advance(self) -> int | None:
        """Move the frontier to now; the nanoseconds until the next event comes of age (None: none
        waits)."""
        events = self.state.log.events
        now = self._wall_ns()
        aged = self.aged
        while aged < len(events) and self.due_ns(aged) <= now:
            aged += 1
        if aged != self.aged:
            self.aged = aged
            self._moved.ring()
        if aged == len(events) and (not self.serving or self.state.ended()):
            self.over = True
            self._moved.ring()
        return self.due_ns(aged) - now if aged < len(events) else None

    async def _run(self, on_over: Callable[[], None]) -> None:
        try:
            while not self.over:
                wait = self.advance()
                if self.over:
                    break
                if wait is not None:
                    await asyncio.sleep(wait / 1e9)
                elif self.serving:
                    await self.state.news.wait()
                else:
                    break  # no longer served, nothing more will come: advance() ends it next
        finally:
            self.over = True
            self._moved.ring()
            on_over()

    def copy(self, index: int) -> play_pb2.SeatEvent:
        """The spectator's copy of shown event ``index``, built once for every watcher."""
        events = self.state.log.events
        while len(self._copies) <= index:
            self._copies.append(spectator_event(events[len(self._copies)], self._facts))
        return self._copies[index]

    def public_state(self, count: int) -> play_pb2.PublicTableState:
        """The table as a spectator sees it right after its first ``count`` shown events."""
        shown = self.state.log.events[:count]
        last = next((s.event for s in reversed(shown) if s.event is not None), None)
        engine = self._replica.at(last)
        facts = _facts(self.state, shown[-1].sequence if shown else 0, engine.state.hand_number, shown)
        return spectator_table(engine, facts)

    def start_at(self, last_seen: int) -> _Start:
        """Where a watcher that saw up to ``last_seen`` (0: nothing) begins: the delayed table first,
        unless it resumes within the hand it was watching (it then gets the events after
        ``last_seen``)."""
        events = self.state.log.events
        if last_seen > len(events):
            raise InvalidArgument(
                f"last_seen_sequence {last_seen} is ahead of the table (its last event is {len(events)})"
            )
        self.advance()
        aged = self.aged
        skipped = any(isinstance(s.event, HandStarted) for s in events[last_seen:aged])
        if last_seen and not skipped:
            return _Start(last_seen, None)
        delay = self.delay_ns // 1_000_000_000
        return _Start(aged, table_pb2.WatchResponse(state=self.public_state(aged), delay_seconds=delay))

    async def wait_beyond(self, index: int) -> None:
        """Until event ``index`` is of age, or nothing more will come."""
        while self.aged <= index and not self.over:
            await self._moved.wait()


@dataclass
class SpectatorMetrics:
    """``duel_table_spectators_count`` and ``duel_table_spectators_cut_off_total``."""

    watching: Gauge
    cut_off: Counter

    @classmethod
    def create(cls, metrics: ServiceMetrics) -> SpectatorMetrics:
        return cls(
            watching=metrics.gauge("spectators", "count", "spectator streams (Watch) open now"),
            cut_off=metrics.counter(
                "spectators_cut_off",
                "total",
                "spectator streams closed for lagging past WATCH_MAX_LAG_SECONDS",
            ),
        )


class Spectators:
    """The feeds of this server's watched tables, and the limits every watcher is held to."""

    def __init__(
        self,
        *,
        per_table: int = DEFAULT_WATCHERS_PER_TABLE,
        max_lag: float = DEFAULT_MAX_LAG_SECONDS,
        wall_ns: WallClock = time.time_ns,
        metrics: SpectatorMetrics | None = None,
    ) -> None:
        self.per_table = per_table
        self.max_lag = max_lag
        self.metrics = metrics
        self._wall_ns = wall_ns
        self._feeds: dict[str, SpectatorFeed] = {}

    def feed(self, table_id: str, live: LiveState | None) -> SpectatorFeed:
        """The feed of a table this server serves (``live``) or served until a moment ago."""
        feed = self._feeds.get(table_id)
        if feed is not None and live is not None and feed.state is not live:
            feed = None  # served here again (adopted back): the departed copy's feed ends by itself
        state = feed.state if feed is not None else live
        if state is None:
            raise NotFound(
                f"no table {table_id} to watch on this server (closed, or served elsewhere: "
                "MatchmakingService.ListLiveTables says where)"
            )
        if state.request.private_table:
            raise PermissionDenied(
                f"table {table_id} is a private table: only its two players see it, on their Play streams"
            )
        if not state.request.rules.watchable:
            raise PermissionDenied(
                f"table {table_id} is in room {state.request.room_id}, which is not watchable"
            )
        return feed if feed is not None else self._start(state, serving=True)

    def departed(self, state: LiveState) -> None:
        """The table is no longer served here (closed, or moved): its feed ends once the events it has
        are all of age; a watchable table nobody watched yet stays watchable until then."""
        feed = self._feeds.get(state.table_id)
        if feed is None and state.request.rules.watchable and not state.request.private_table:
            feed = self._start(state, serving=False)
        if feed is not None:
            feed.serving = False
            state.news.ring()

    def _start(self, state: LiveState, *, serving: bool) -> SpectatorFeed:
        feed = SpectatorFeed(state, serving=serving, wall_ns=self._wall_ns)
        self._feeds[state.table_id] = feed

        def over() -> None:
            if self._feeds.get(state.table_id) is feed:
                del self._feeds[state.table_id]

        feed.start(over)
        return feed

    async def stop(self) -> None:
        for feed in list(self._feeds.values()):
            await feed.stop()

    async def watch(self, feed: SpectatorFeed, last_seen: int, write: Write) -> None:
        """One spectator's stream, written with ``write`` until the table's end (see the module doc)."""
        if feed.watchers >= self.per_table:
            raise ResourceExhausted(
                f"table {feed.state.table_id} has {self.per_table} spectators, the most it takes; try later"
            )
        feed.watchers += 1
        if self.metrics is not None:
            self.metrics.watching.inc()
        try:
            await self._stream(feed, last_seen, write)
        except ResourceExhausted:
            if self.metrics is not None:
                self.metrics.cut_off.inc()
            raise
        finally:
            feed.watchers -= 1
            if self.metrics is not None:
                self.metrics.watching.dec()

    async def _stream(self, feed: SpectatorFeed, last_seen: int, write: Write) -> None:
        start = feed.start_at(last_seen)
        if start.state is not None:
            await write(start.state)
        delay = feed.delay_ns // 1_000_000_000
        index = start.index
        max_lag_ns = int(self.max_lag * 1e9)
        while True:
            await feed.wait_beyond(index)
            if index >= feed.aged:
                if feed.state.ended():
                    return  # the table ended before this watcher came, and it was sent the end
                raise Unavailable(
                    f"table {feed.state.table_id} is no longer served here: find it with "
                    "MatchmakingService.ListLiveTables and Watch it there with last_seen_sequence"
                )
            late = self._wall_ns() - feed.due_ns(index)
            if late > max_lag_ns:
                raise ResourceExhausted(self._behind(feed))
            event = feed.copy(index)
            try:
                async with asyncio.timeout((max_lag_ns - late) / 1e9):
                    await write(table_pb2.WatchResponse(event=event, delay_seconds=delay))
            except TimeoutError:
                raise ResourceExhausted(self._behind(feed)) from None
            index += 1
            if event.HasField("table_ended"):
                return

    def _behind(self, feed: SpectatorFeed) -> str:
        return (
            f"this spectator stream fell more than {self.max_lag:g} s behind the table's "
            f"{feed.delay_ns // 1_000_000_000} s delay, so it is closed; read the stream as it comes, "
            "and Watch again with last_seen_sequence to resume"
        )
