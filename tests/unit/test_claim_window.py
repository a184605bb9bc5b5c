"""Claim timing that leaks nothing (RoomRules.claim_window_ms, services/table/claim_window.py).

Real ``LiveTable``s on the real clock (the table's own timers, a 50 ms window), in process: the bus
ports are fakes that keep the log, the seats are ``SeatSession`` outboxes read by two driver tasks.
Several tables share one event loop where a test needs many openers: they spend their time waiting
for their windows.
The seat with a hidden option answers it by a policy (pass at once, pass after a while, or never: the
window passes it): the opponent of a discard (claim, win), a declared-ready hand on its own draw
(win). Turns are the baseline bot's (it declares ready). From the stream of the seat that must not
learn of the option, the time from the opener to the next event is measured (a discard to the draw
after it, a ready hand's draw to its discard) and split by whether there was an option: both samples
must be the window, and the same distribution (two-sample Kolmogorov–Smirnov). The same run without
the option shows the difference the window removes."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.v1 import play_pb2, rules_pb2, server_state_pb2, table_pb2
from duelmahjong.views import codec
from services.matchmaking.remote import room_rules
from services.matchmaking.rooms import Room, RoomConfigError, load_rooms
from services.table import claim_window
from services.table.live import LiveTable
from services.table.live_state import LiveState
from services.table.ports import BusPorts, OpenRequest
from services.table.rebuild import rebuild
from services.table.seats import SeatSession
from tests.stats import describe, ks_critical, ks_statistic
from tests.unit.table_fakes import Quiet, RealClock, RecordingLog

# Short: what is checked is that every wait is the window and the same with or without an option, to
# a few milliseconds; the window's length only sets how long the tests take.
WINDOW_MS = 50
BANK_SECONDS = 5.0  # never drawn on inside a window: a record of the bank spent would fail the test
PASS = play_pb2.Action(**{"pass": play_pb2.PassAction()})
CLAIMS = frozenset({A.CHI, A.PONG, A.KONG})
# How the opponent answers a hidden option: at once, a while into the window, or not at all.
ANSWERS = ("pass", "late pass", "silence")


def _request(window_ms: int, bank_seconds: float) -> OpenRequest:
    rules = rules_pb2.RoomRules(
        profile=rules_pb2.PROFILE_DUEL,
        fan_rate=10,
        decision_millis=WINDOW_MS + 100,  # a T11 timeout without the option comes later than the window
        time_bank_millis=int(bank_seconds * 1000),
        claim_window_ms=window_ms,
    )
    players = (
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a", carry=1000),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b", carry=1000),
    )
    return OpenRequest("t-window", "p-1", "r-1", rules, players, 1)


class TimedSession(SeatSession):
    """A seat's outbox that notes when the table hands it each message: the time the message leaves
    for the seat's stream, whenever the driver (sharing the loop with the table) gets to read it."""

    def __init__(self, seat: int, ready: Callable[[], tuple[bool, ...]]) -> None:
        super().__init__(seat)
        self.ready = ready
        self.sent_at: dict[int, tuple[float, tuple[bool, ...]]] = {}

    def send(self, response: table_pb2.PlayResponse) -> None:
        # and which seats had declared ready then: by the time the driver reads a draw, its seat may
        # have declared ready on it, and the draw would pass for a ready hand's
        self.sent_at[id(response)] = (time.monotonic(), self.ready())
        super().send(response)


@dataclasses.dataclass
class Opener:
    """A discard, or a declared-ready seat's draw: the other seat may have a hidden option on it (to
    claim or win the discard; the ready seat to win on its draw, T3), and ``watcher`` must not see it."""

    kind: str  # "discard" or "ready draw"
    actor: int  # who discarded or drew
    sequence: int
    shown: float  # when the table handed it to the watcher's stream
    option: bool = False  # the deciding seat was asked to decide on it
    answer: str = ""  # "pass", "late pass", "silence", "claim"
    followed_by: str = ""  # the kind of the next event the watcher got
    after: float = 0.0  # seconds from the opener to it

    @property
    def watcher(self) -> int:
        return self.actor if self.kind == "discard" else 1 - self.actor


class Match:
    """One table, two seats driven by tasks that read their streams as a client would."""

    def __init__(
        self, window_ms: int, seed: int, answers: tuple[str, ...], bank_seconds: float = BANK_SECONDS
    ) -> None:
        self.rng = random.Random(seed)
        self.answers = answers
        self.log = RecordingLog()
        ports = BusPorts(self.log, Quiet(), Quiet())
        request = _request(window_ms, bank_seconds)
        self.table = LiveTable(request, RealClock(random.Random(seed + 1)), ports)
        self.sessions = [TimedSession(0, self._ready), TimedSession(1, self._ready)]
        self.openers: dict[int, Opener] = {}  # by sequence
        self.open: list[Opener | None] = [None, None]  # per watcher: the opener it waits after
        self.frozen: list[tuple[int, int]] = []  # (opener sequence, status sequence) asked in windows
        self.rejected: list[table_pb2.ActionRejected] = []

    async def play(self, discards: int, hands: int = 30) -> None:
        self.table.start()
        for session in self.sessions:
            self.table.attach(session, 0)
        drivers = [asyncio.create_task(self._drive(seat, discards, hands)) for seat in (0, 1)]
        await asyncio.wait_for(self.table_gone(), timeout=600)
        for driver in drivers:
            driver.cancel()
        for ended in await asyncio.gather(*drivers, return_exceptions=True):
            if isinstance(ended, Exception):  # a seat whose driver failed would only time out
                raise ended

    async def table_gone(self) -> None:
        await self.table._host.gone.wait()  # type: ignore[attr-defined]

    def measured(self, kind: str) -> list[Opener]:
        return [o for o in self.openers.values() if o.kind == kind and o.followed_by]

    def enough(self, discards: int) -> bool:
        measured = self.measured("discard")
        return len(measured) >= discards and sum(d.option for d in measured) >= discards // 4

    async def _drive(self, seat: int, discards: int, hands: int) -> None:
        session = self.sessions[seat]
        while True:
            taken = await session.take()
            session.written()  # read as a stream writes them out: the seat's replies are not held
            for response in taken:
                if response is None:
                    return
                now, ready = session.sent_at.pop(id(response), (time.monotonic(), self._ready()))
                if response.HasField("event"):
                    self._event(seat, response.event, now, ready)
                elif response.HasField("rejected"):
                    self.rejected.append(response.rejected)
                elif response.view.legal_actions.actions:
                    await self._decide(seat, response.view, discards, hands)

    def _ready(self) -> tuple[bool, ...]:
        return tuple(self.table.state.engine.state.ready)

    def _event(self, seat: int, event: play_pb2.SeatEvent, now: float, ready: tuple[bool, ...]) -> None:
        kind = event.WhichOneof("kind")
        waiting = self.open[seat]
        if waiting is not None and kind != "seat_connection":
            waiting.followed_by, waiting.after = kind or "", now - waiting.shown
            self.open[seat] = None
        opener = None
        if kind == "tile_discarded":
            opener = Opener("discard", codec.seat_index(event.tile_discarded.seat), event.sequence, now)
        elif kind == "tile_drawn":
            drawer = codec.seat_index(event.tile_drawn.seat)
            if ready[drawer]:
                opener = Opener("ready draw", drawer, event.sequence, now)
        if opener is not None:
            # whichever driver reads it first notes it (the deciding seat may read first); the time
            # is the watcher's
            opener = self.openers.setdefault(event.sequence, opener)
            if opener.watcher == seat:
                opener.shown = now
                self.open[seat] = opener
                asyncio.get_running_loop().create_task(self._status(event.sequence))
                # a move out of turn: refused with the view as of the opener, whatever is held
                self._send(seat, PASS, event.sequence, action_id=event.sequence)

    async def _status(self, sequence: int) -> None:
        """What anybody asking during the window is told: the table as of the opener."""
        status = await self.table.public_status()
        # still inside this opener's window (nothing after it shown yet): a busy loop may answer later,
        # inside the next opener's window
        state = self.table.state
        if state.windows is not None and state.windows.open and state.shown_sequence() == sequence:
            self.frozen.append((sequence, status.state.sequence))

    async def _decide(self, seat: int, view: play_pb2.SeatView, discards: int, hands: int) -> None:
        kinds = {a.kind for a in view.legal_actions.actions}
        sequence = view.legal_actions.sequence
        if play_pb2.ACTION_KIND_CONTINUE in kinds:
            done = self.enough(discards) or self.table.state.hands_played >= hands
            action = (
                play_pb2.Action(leave=play_pb2.LeaveAction())
                if done
                else play_pb2.Action(continue_playing=play_pb2.ContinueAction())
            )
            return self._send(seat, action, sequence)
        opener = self.openers.get(sequence)
        if opener is not None and (opener.kind == "discard") == (opener.actor != seat):
            return self._answer(seat, opener, view)
        self._send(seat, codec.encode_action(self._turn(seat)), sequence)

    def _answer(self, seat: int, opener: Opener, view: play_pb2.SeatView) -> None:
        """The hidden option: a claim or win on a discard, a win on a declared-ready hand's draw."""
        opener.option = True
        opener.answer = self.rng.choice(self.answers)
        engine = self.table.state.engine
        legal = engine.legal_actions(seat)
        discard = next((a for a in legal if a.kind == A.DISCARD), None)
        if opener.kind == "discard" or discard is None:
            decline = PASS  # a ready hand's draw after a kong is passed (thrown away), not discarded
        else:
            decline = codec.encode_action(discard)
        sequence = view.legal_actions.sequence
        if opener.answer == "pass":
            return self._send(seat, decline, sequence)
        if opener.answer == "late pass":
            delay = self.rng.uniform(0.0, WINDOW_MS / 1000 * 0.5)
            asyncio.get_running_loop().call_later(delay, self._send, seat, decline, sequence)
            return None
        if opener.answer == "claim":
            taken = [a for a in legal if a.kind in CLAIMS or a.kind in (A.WIN, A.SELF_DRAW_WIN)]
            if taken:
                return self._send(seat, codec.encode_action(taken[0]), sequence)
            opener.answer = "pass"
            return self._send(seat, decline, sequence)
        return None  # silence: the window passes it

    def _turn(self, seat: int) -> A.Action:
        """The baseline bot's turn (it declares ready: that hand's later draws are the table's)."""
        engine = self.table.state.engine
        return bot.choose(engine.state, seat, engine.legal_actions(seat))

    def _send(self, seat: int, action: play_pb2.Action, sequence: int, action_id: int = 0) -> None:
        request = table_pb2.PlayRequest(
            action=action, last_seen_sequence=sequence, client_action_id=action_id
        )
        self.table.submit(self.sessions[seat], request)


def _played(seeds: tuple[int, ...], discards: int, hands: int = 30, **match: Any) -> list[Match]:
    """Tables played side by side on one loop, one a seed: what they spend is waiting for their own
    windows, so a sample of many openers takes the time of a few."""
    matches = [Match(seed=seed, **match) for seed in seeds]

    async def play() -> None:
        await asyncio.gather(*(m.play(discards, hands) for m in matches))

    asyncio.run(play())
    return matches


def _waits(matches: list[Match], kind: str = "discard") -> tuple[list[float], list[float]]:
    """Milliseconds from each opener to what the watcher saw next, with and without an option."""
    follows = ("tile_drawn", "exhausted") if kind == "discard" else ("tile_discarded", "thrown_away")
    seen = [o for match in matches for o in match.measured(kind) if o.followed_by in follows]
    return [o.after * 1000 for o in seen if o.option], [o.after * 1000 for o in seen if not o.option]


def _log_records(match: Match) -> list[server_state_pb2.TableLogRecord]:
    return [r for m in match.log.messages for r in (m.record, *m.following)]


# The waits are read at the seats' streams: on two loaded cores the moment an opener is handed to a
# stream and the moment its window is timed from can lie a few milliseconds apart (the event loop
# runs other tables' steps between them), far below anything a player could read as a leak.
EARLY_SLACK_MS = 5


def test_the_wait_after_a_discard_is_the_window_whether_or_not_the_opponent_had_an_option() -> None:
    matches = _played((7, 8, 9, 10), discards=40, window_ms=WINDOW_MS, answers=ANSWERS)
    option, none = _waits(matches)
    statistic, critical = ks_statistic(option, none), ks_critical(len(option), len(none))
    print(describe("discard → next draw, the opponent had an option", option))
    print(describe("discard → next draw, it had none", none))
    print(f"two-sample KS D={statistic:.3f} (critical at alpha 0.001: {critical:.3f})")
    openers = [o for match in matches for o in match.openers.values()]
    asked = [o for o in openers if o.option and o.kind == "discard"]
    answers = {a: sum(o.answer == a for o in asked) for a in ANSWERS}
    print(f"the opponent's answers: {answers}")
    assert len(option) >= 40 and len(none) >= 120 and all(answers.values())
    # never before the window ends, the same medians
    assert min(option + none) >= WINDOW_MS - EARLY_SLACK_MS
    for sample in (option, none):
        assert abs(statistics.median(sample) - WINDOW_MS) < 15
    assert abs(statistics.median(option) - statistics.median(none)) < 5
    assert statistic < critical
    # whatever follows an opener (the draw, the wall's end, a ready hand's discard) waits for the
    # window: only a claim or a win would not, and this policy takes none
    followed = [o for o in openers if o.followed_by]
    assert all(o.followed_by not in ("meld_made", "won") for o in followed)
    early = [o for o in followed if o.after < (WINDOW_MS - EARLY_SLACK_MS) / 1000]
    assert not early, early
    ready_option, ready_none = _waits(matches, "ready draw")
    if ready_option:
        print(describe("ready hand's draw → its discard, it could win", ready_option))
    print(describe("ready hand's draw → its discard, it could not", ready_none))
    assert ready_none and all(abs(w - WINDOW_MS) < 50 for w in ready_option)
    for match in matches:
        # asked during a window, the table shows the opener's state and sequence; so does the refusal
        # of a move out of turn, with no decision in it
        assert match.frozen and all(status == opener for opener, status in match.frozen)
        refused = [r for r in match.rejected if r.client_action_id]
        assert len(refused) >= sum(bool(o.followed_by) for o in match.openers.values()) // 2
        assert all(
            r.code == table_pb2.REJECTION_CODE_STALE and not r.view.legal_actions.actions for r in refused
        )
        assert all(r.view.table.sequence == r.client_action_id for r in refused)
        # a window not answered is passed (a ready hand's draw discarded) without the bank or 托管
        records = _log_records(match)
        # the log (and occurred_at) stamps what follows each opener its stamp plus the window, exactly,
        # option or not: a stamp that carried the opener's write-ahead only after a pass would tell
        shown_at = {
            r.engine_event.seat_sequence: r.engine_event.shown_at_unix_nanos
            for r in records
            if r.HasField("engine_event") and r.engine_event.seat_sequence
        }
        stamped = {
            shown_at[o.sequence + 1] - shown_at[o.sequence] for o in match.openers.values() if o.followed_by
        }
        assert stamped == {WINDOW_MS * 1_000_000}, sorted(stamped)[:5]
        timed_out = [
            r.action_applied.action
            for r in records
            if r.HasField("action_applied")
            and r.action_applied.origin == server_state_pb2.ACTION_ORIGIN_TIMEOUT
        ]
        assert timed_out and all(a.HasField("pass") or a.HasField("discard") for a in timed_out)
        assert [r for r in records if r.HasField("time_bank")] == [], "a window's answer spent a time bank"
        assert not any(s.auto_play for s in match.table.state.seats)


def test_without_the_option_the_wait_says_whether_the_opponent_had_one() -> None:
    """The same measurement sees the leak the window closes (so the test above can fail). No time bank:
    a silence waits the decision's time only (the bank would add the same to every silence)."""
    matches = _played((7,), discards=60, window_ms=0, answers=ANSWERS, bank_seconds=0.0)
    option, none = _waits(matches)
    print(describe("no window: the opponent had an option", option))
    print(describe("no window: it had none", none))
    print(f"two-sample KS D={ks_statistic(option, none):.3f}")
    # a third of the answers are passes at once: the late passes and silences show in the upper quartile
    assert statistics.median(none) < 20 < statistics.quantiles(option, n=4)[-1]
    assert ks_statistic(option, none) > ks_critical(len(option), len(none))


def test_a_claim_or_a_win_ends_the_window_at_once() -> None:
    # one table: a claim is timed from the discard to the meld, through the seat's driver, which
    # another table's steps on the loop would hold up
    matches = _played((3,), discards=20, hands=2, window_ms=WINDOW_MS, answers=("claim",))
    openers = [o for match in matches for o in match.openers.values()]
    taken = [o for o in openers if o.answer == "claim" and o.followed_by in ("meld_made", "won")]
    print(describe("claimed or won", [o.after * 1000 for o in taken]))
    assert taken
    # a window that waited on would put every one at the window or later. A loaded machine may hold
    # up a few (the claim goes through the seat's driver on the loop), not the middle one of them all;
    # a kind seen once or twice (a win is rare in 20 discards) is judged against the window itself
    waits = sorted(o.after * 1000 for o in taken)
    assert statistics.median(waits) < WINDOW_MS / 4, waits
    for kind in ("meld_made", "won"):
        kind_waits = [o.after * 1000 for o in taken if o.followed_by == kind]
        assert not kind_waits or statistics.median(kind_waits) < WINDOW_MS, (kind, sorted(kind_waits))


def test_windows_held_by_a_window_released_late_each_run_whole_from_when_they_are_shown() -> None:
    """A ready hand's draw held by a discard's window, and its discard held by the draw's: the loop
    gets to the first window's end only after the second's would have passed (a stall)."""
    windows: claim_window.Windows[str] = claim_window.Windows(0.05, Table(RoomSettings(profile="duel")))
    for _ in range(3):  # opened in one step at 0.0: each after the last one open
        windows.open_after(0.0)
    assert [w.ends_at for w in windows.open] == pytest.approx([0.05, 0.10, 0.15])
    first = windows.due(0.2)  # the oldest only: the second's opener is not shown yet
    assert first is not None and first.ends_at == pytest.approx(0.05) and len(windows.open) == 2
    windows.delay(0, 0.21 - first.ends_at)  # what the first held left for the streams at 0.21
    assert [w.ends_at for w in windows.open] == pytest.approx([0.26, 0.31])
    assert windows.due(0.21) is None and windows.due(0.259) is None and windows.due(0.26) is not None


def _cut(match: Match, phase: str, held: bool) -> LiveState:
    """The table rebuilt (now) from the first part of its log that stops inside a window: with the
    opponent deciding (``held`` False) or with events held (the engine moved on)."""
    for end in range(2, len(match.log.messages)):
        state = rebuild(match.log.messages[:end], now=time.monotonic())
        if state.engine.phase == phase and state.windows is not None and state.windows.open:
            if state.holding() == held:
                return state
    raise AssertionError("no such cut")


@pytest.fixture(scope="module")
def one_hand() -> Match:
    """One hand played, its log cut inside windows by the adoption tests (which only read it)."""
    (match,) = _played((11,), discards=30, hands=1, window_ms=WINDOW_MS, answers=("pass", "silence"))
    return match


def test_a_table_adopted_while_the_opponent_decides_opens_the_window_again(one_hand: Match) -> None:
    match = one_hand
    started = time.monotonic()
    state = _cut(match, "claim", held=False)
    deciding = next(s for s in (0, 1) if state.deciding(s))
    window_until = state.seats[deciding].window_until
    assert window_until is not None and state.seats[1 - deciding].window_until is None
    seconds = WINDOW_MS / 1000
    assert started + seconds - claim_window.answer_margin(seconds) <= window_until
    assert window_until < time.monotonic() + seconds


def test_a_table_adopted_inside_a_window_holds_what_it_held(one_hand: Match) -> None:
    state = _cut(one_hand, "turn", held=True)
    shown_up_to = state.shown_sequence()
    assert shown_up_to < state.last_event_sequence()

    async def resume() -> tuple[list[int], list[int]]:
        host = RealClock(random.Random(1))
        table = LiveTable.adopted(state, host, BusPorts(RecordingLog(), Quiet(), Quiet()))
        table.start()
        session = SeatSession(0)
        table.attach(session, 0)
        first = await session.take()
        await asyncio.sleep(WINDOW_MS / 1000 + 0.05)
        later = await session.take()
        await table.stop()
        return (
            [r.event.sequence for r in first if r is not None and r.HasField("event")],
            [r.event.sequence for r in later if r is not None and r.HasField("event")],
        )

    first, later = asyncio.run(resume())
    assert max(first) == shown_up_to  # at once: up to the opener, nothing it holds
    assert min(later) == shown_up_to + 1  # then the rest, when the window has passed


def test_a_window_is_validated() -> None:
    with pytest.raises(InvalidArgument, match=r"claim_window_ms must be 0\.\.60000"):
        codec.room_settings(rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, claim_window_ms=60_001), 1)
    assert codec.room_settings(rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, claim_window_ms=60_000), 1)


def test_a_shipped_room_has_a_window_and_rooms_check_it() -> None:
    shipped = load_rooms("", "")
    windowed = [room for room in shipped.values() if room.claim_window_ms]
    assert windowed and all(room_rules(room).claim_window_ms == room.claim_window_ms for room in windowed)
    for bad in (60_001, -1, "2000", True):
        with pytest.raises(RoomConfigError, match=r"claim_window_ms must be a whole number 0\.\.60000"):
            Room.from_json({"room_id": "r", "profile": "duel", "fan_rate": 1, "claim_window_ms": bad})
