"""Spectators of a table (services/table/spectators.py) on a live table's state, in process: each
event reaches a watcher no earlier than the delay after it happened, first the table as of the delayed
moment, a resume within the hand sends what was missed, a watcher that does not read is cut off
without the table ever waiting, and a table that left the server is watchable until its last event
is of age. tests/unit/test_table_rebuild.py plays random matches for what a spectator may see."""

from __future__ import annotations

import asyncio
import time

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.platform.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unavailable,
)
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2
from services.table.live_state import LiveState, Shown
from services.table.ports import OpenRequest
from services.table.spectators import SpectatorFeed, SpectatorMetrics, Spectators

DELAY = 0.3
SLACK = 0.25  # how much later than the delay an event may come on a loaded machine

pytestmark = pytest.mark.asyncio


def _state(*, watchable: bool = True, delay: int = 0) -> LiveState:
    rules = rules_pb2.RoomRules(
        profile=rules_pb2.PROFILE_DUEL, fan_rate=10, watchable=watchable, spectate_delay_seconds=delay
    )
    players = (
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a", display_name="Ana"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b", display_name="Bo"),
    )
    return LiveState.opened(OpenRequest("t-watched", "p-1", "room-1", rules, players, 1))


def _show(state: LiveState, *, ended: bool = False, at: float | None = None) -> play_pb2.SeatEvent:
    """One event of the table's own, shown now (or ``at``), as the table's Broadcast shows it."""
    sequence = state.last_event_sequence() + 1
    stamp = Timestamp()
    stamp.FromNanoseconds(int((time.time() if at is None else at) * 1e9))
    event = play_pb2.SeatEvent(sequence=sequence, occurred_at=stamp)
    if ended:
        event.table_ended.reason = "the pairing ended"
    else:
        event.seat_connection.seat = rules_pb2.SEAT_FIRST
        event.seat_connection.connected = sequence % 2 == 0
    state.log.events.append(Shown(sequence, made=event))
    state.news.ring()
    return event


def _spectators(**limits: float) -> Spectators:
    return Spectators(**limits)  # type: ignore[arg-type]


class Watcher:
    """One spectator's stream, written into a list with the time each message came."""

    def __init__(self, spectators: Spectators, feed: SpectatorFeed, last_seen: int = 0) -> None:
        self.got: list[tuple[float, table_pb2.WatchResponse]] = []
        self.task = asyncio.create_task(spectators.watch(feed, last_seen, self._write))

    async def _write(self, response: table_pb2.WatchResponse) -> None:
        self.got.append((time.time(), response))

    def events(self) -> list[play_pb2.SeatEvent]:
        return [r.event for _, r in self.got if r.HasField("event")]


def _feed(spectators: Spectators, state: LiveState) -> SpectatorFeed:
    feed = spectators.feed(state.table_id, state)
    feed.delay_ns = int(DELAY * 1e9)  # the room's whole seconds, shortened for the test
    return feed


async def test_events_come_no_earlier_than_the_delay_after_they_happened_and_end_after_the_end() -> None:
    state, spectators = _state(), _spectators()
    _show(state, at=time.time() - 10)  # long ago: in the delayed table at once
    feed = _feed(spectators, state)
    watcher = Watcher(spectators, feed)
    for _ in range(4):
        _show(state)
        await asyncio.sleep(0.1)
    _show(state, ended=True)
    async with asyncio.timeout(5):
        await watcher.task
    first = watcher.got[0][1]
    assert first.HasField("state") and first.state.sequence == 1 and first.delay_seconds == 0
    assert first.state.table_id == "t-watched" and [s.display_name for s in first.state.seats] == [
        "Ana",
        "Bo",
    ]
    events = watcher.events()
    assert [e.sequence for e in events] == [2, 3, 4, 5, 6] and events[-1].HasField("table_ended")
    for received, response in watcher.got[1:]:
        lag = received - response.event.occurred_at.ToNanoseconds() / 1e9
        assert DELAY <= lag < DELAY + SLACK, lag
    await spectators.stop()


async def test_the_room_s_delay_is_the_stream_s_and_30_seconds_by_default() -> None:
    assert SpectatorFeed(_state()).delay_ns == 30 * 10**9
    assert SpectatorFeed(_state(delay=4)).delay_ns == 4 * 10**9


async def test_a_resume_within_the_hand_gets_what_it_missed_and_one_ahead_of_the_table_is_refused() -> None:
    state, spectators = _state(), _spectators()
    for _ in range(5):
        _show(state, at=time.time() - 5)
    feed = _feed(spectators, state)
    watcher = Watcher(spectators, feed, last_seen=2)
    await asyncio.sleep(0.05)
    assert [e.sequence for e in watcher.events()] == [3, 4, 5]  # no state: it was watching this hand
    assert all(r.HasField("event") for _, r in watcher.got)
    with pytest.raises(InvalidArgument, match="ahead of the table"):
        await spectators.watch(feed, 9, watcher._write)
    _show(state, ended=True)
    async with asyncio.timeout(5):
        await watcher.task
    await spectators.stop()


async def test_a_spectator_that_does_not_read_is_cut_off_and_the_table_never_waits_for_it() -> None:
    metrics = SpectatorMetrics.create(ServiceMetrics("table"))
    state, spectators = _state(), Spectators(max_lag=0.3, metrics=metrics)
    feed = _feed(spectators, state)
    stuck = asyncio.Event()

    async def never_taken(response: table_pb2.WatchResponse) -> None:
        if response.HasField("event"):
            await stuck.wait()  # a client that never reads: the write waits on flow control

    watcher = asyncio.create_task(spectators.watch(feed, 0, never_taken))
    started = time.perf_counter()
    for _ in range(200):  # the table shows on: nothing it does waits for the watcher
        _show(state)
    assert time.perf_counter() - started < 0.5
    await asyncio.sleep(0.05)
    assert metrics.watching._value.get() == 1
    with pytest.raises(ResourceExhausted, match=r"fell more than 0\.3 s behind"):
        async with asyncio.timeout(5):
            await watcher
    assert feed.watchers == 0
    assert (metrics.watching._value.get(), metrics.cut_off._value.get()) == (0, 1)
    await spectators.stop()


async def test_a_table_takes_so_many_spectators_and_only_a_watchable_one_is_watched() -> None:
    state, spectators = _state(), _spectators(per_table=1)
    feed = _feed(spectators, state)
    first = Watcher(spectators, feed)
    await asyncio.sleep(0.05)
    with pytest.raises(ResourceExhausted, match="has 1 spectators, the most it takes"):
        await spectators.watch(feed, 0, first._write)
    with pytest.raises(PermissionDenied, match="not watchable"):
        spectators.feed("t-quiet", _state(watchable=False))
    with pytest.raises(NotFound, match="no table t-gone to watch on this server"):
        spectators.feed("t-gone", None)
    first.task.cancel()
    await spectators.stop()


async def test_a_table_that_moved_is_watchable_until_its_last_event_is_of_age_then_says_where_to_look() -> (
    None
):
    state, spectators = _state(), _spectators()
    _show(state, at=time.time() - 10)
    feed = _feed(spectators, state)
    watcher = Watcher(spectators, feed)
    _show(state)
    spectators.departed(state)  # handed over to another server
    assert spectators.feed(state.table_id, None) is feed  # still found here, though no longer served
    with pytest.raises(Unavailable, match="no longer served here: find it with"):
        async with asyncio.timeout(5):
            await watcher.task
    assert [e.sequence for e in watcher.events()] == [2]  # what this server had, delayed
    assert watcher.got[-1][0] - watcher.events()[-1].occurred_at.ToNanoseconds() / 1e9 >= DELAY
    await asyncio.sleep(0.05)
    with pytest.raises(NotFound):  # every event of age: nothing more to watch here
        spectators.feed(state.table_id, None)
    closed = _state(delay=1)
    _show(closed)
    _show(closed, ended=True)
    spectators.departed(closed)  # closed before anyone watched: watchable until its end is of age
    late = Watcher(spectators, spectators.feed(closed.table_id, None))
    async with asyncio.timeout(5):
        await late.task
    assert late.got[0][1].HasField("state") and late.got[0][1].state.sequence == 0
    assert [e.sequence for e in late.events()] == [1, 2]
    assert all(t - r.event.occurred_at.ToNanoseconds() / 1e9 >= 1 for t, r in late.got[1:])
    await spectators.stop()


async def test_many_spectators_cost_the_table_one_ring_a_step_and_each_gets_every_event() -> None:
    state, spectators = _state(), _spectators(per_table=100)
    feed = _feed(spectators, state)
    feed.delay_ns = int(0.05 * 1e9)
    watchers = [Watcher(spectators, feed) for _ in range(100)]
    await asyncio.sleep(0.05)  # all of them wait for the first event
    assert feed.watchers == 100
    started = time.perf_counter()
    for _ in range(300):
        _show(state)  # what the table does per step: append, ring its bell (one waiter: the feed)
    showing = time.perf_counter() - started
    _show(state, ended=True)
    async with asyncio.timeout(20):
        await asyncio.gather(*(w.task for w in watchers))
    assert all([e.sequence for e in w.events()] == list(range(1, 302)) for w in watchers)
    assert showing < 0.1, showing  # 300 steps: the spectators waiting cost the table nothing
    print(f"300 steps shown with 100 spectators waiting: {showing * 1000:.1f} ms")
    await spectators.stop()
