"""Claim timing that leaks nothing (RoomRules.claim_window_ms, services/table/claim_window.py).

Real ``LiveTable``s on the real clock (the table's own timers, a 200 ms window), in process: the bus
ports are fakes that keep the log, the seats are ``SeatSession`` outboxes read by two driver tasks.
The opponent of each discard answers its claim decisions by a policy (pass at once, pass after a
while, or never: the window passes it); turns are played by the baseline bot (it declares ready, so
declared-ready hands discard by themselves too). From the discarder's stream the time from each
``tile_discarded`` to the ``tile_drawn`` after it is measured and split by whether the opponent had
an option on the discard: both samples must be the window, and the same distribution (two-sample
Kolmogorov–Smirnov). The same run without the option shows the difference the window removes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
import statistics
import time
from typing import Any

import pytest

from duelmahjong.engine import actions as A
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, server_state_pb2, table_pb2
from services.table import codec, wal
from services.table.live import LiveTable
from services.table.ports import BusPorts, OpenRequest
from services.table.rebuild import rebuild
from services.table.seats import SeatSession

WINDOW_MS = 200
BANK_SECONDS = 5.0
PASS = play_pb2.Action(**{"pass": play_pb2.PassAction()})
CLAIMS = frozenset({A.CHI, A.PONG, A.KONG})


class Log:
    """The write-ahead log: one message per step, kept."""

    def __init__(self) -> None:
        self.messages: list[events_pb2.TableEventAppended] = []

    async def append(self, table_id: str, hand_id: str, records: list[tuple[int, Any]]) -> None:
        if records:
            self.messages.append(wal.step_message(table_id, hand_id, records, "test"))

    def continues(self, table_id: str, log_end: int) -> None:
        return None

    def forget(self, table_id: str) -> None:
        return None


class Services:
    """Scoring, the wallet and the rest of the bus: nobody answers (an empty settlement is shown)."""

    async def publish(self, subject: str, event: Any, event_id: str) -> None:
        return None

    async def hand_ended(self, result: rules_pb2.HandResult) -> None:
        return None

    async def table_opened(self, request: OpenRequest) -> None:
        return None

    async def table_closed(self, request: OpenRequest, reason: str, hands_played: int) -> None:
        return None

    async def settlement(self, hand_id: str, within: float) -> events_pb2.SettlementApplied | None:
        return None


@dataclasses.dataclass
class RealClock:
    rng: random.Random
    metrics: None = None
    queue_size: int = 64
    settlement_wait: float = 0.0
    join_seconds: float = 60.0
    draining: bool = False
    gone: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    def now(self) -> float:
        return time.monotonic()

    def seed(self, table_id: str, hand_number: int) -> int:
        return self.rng.getrandbits(64)

    def closed(self, table_id: str) -> None:
        self.gone.set()

    def let_go(self, table_id: str) -> None:
        return None


def _request(window_ms: int, profile: int = rules_pb2.PROFILE_DUEL) -> OpenRequest:
    rules = rules_pb2.RoomRules(
        profile=profile,
        fan_rate=10,
        decision_millis=WINDOW_MS + 100,  # a T11 timeout without the option comes later than the window
        time_bank_millis=int(BANK_SECONDS * 1000),
        claim_window_ms=window_ms,
    )
    players = (
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a", carry=1000),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b", carry=1000),
    )
    return OpenRequest("t-window", "p-1", "r-1", rules, players, 1)


@dataclasses.dataclass
class Discard:
    seat: int
    sequence: int
    shown: float  # when the discarder's stream got it
    option: bool = False  # the opponent was asked to decide on it
    answer: str = ""  # "pass", "late pass", "silence", "claim"
    followed_by: str = ""  # the kind of the next event the discarder got
    after: float = 0.0  # seconds from the discard to it


class Match:
    """One table, two seats driven by tasks that read their streams as a client would."""

    def __init__(self, window_ms: int, seed: int, answers: tuple[str, ...]) -> None:
        self.rng = random.Random(seed)
        self.answers = answers
        self.log = Log()
        ports = BusPorts(self.log, Services(), Services())
        self.table = LiveTable(_request(window_ms), RealClock(random.Random(seed + 1)), ports)
        self.sessions = [SeatSession(0), SeatSession(1)]
        self.discards: dict[int, Discard] = {}  # by sequence
        self.open: list[Discard | None] = [None, None]  # per discarder: the discard it waits after
        self.frozen: list[tuple[int, int]] = []  # (discard sequence, status sequence) asked in windows
        self.rejected: list[str] = []

    async def play(self, discards: int, hands: int = 30) -> None:
        self.table.start()
        for session in self.sessions:
            self.table.attach(session, 0)
        drivers = [asyncio.create_task(self._drive(seat, discards, hands)) for seat in (0, 1)]
        await asyncio.wait_for(self.table_gone(), timeout=600)
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)

    async def table_gone(self) -> None:
        await self.table._host.gone.wait()  # type: ignore[attr-defined]

    def enough(self, discards: int) -> bool:
        measured = [d for d in self.discards.values() if d.followed_by]
        return len(measured) >= discards and sum(d.option for d in measured) >= discards // 4

    async def _drive(self, seat: int, discards: int, hands: int) -> None:
        session = self.sessions[seat]
        while True:
            for response in await session.take():
                if response is None:
                    return
                now = time.monotonic()
                if response.HasField("event"):
                    self._event(seat, response.event, now)
                elif response.HasField("rejected"):
                    self.rejected.append(response.rejected.reason)
                elif response.view.legal_actions.actions:
                    await self._decide(seat, response.view, discards, hands)

    def _event(self, seat: int, event: play_pb2.SeatEvent, now: float) -> None:
        kind = event.WhichOneof("kind")
        waiting = self.open[seat]
        if waiting is not None and kind != "seat_connection":
            waiting.followed_by, waiting.after = kind or "", now - waiting.shown
            self.open[seat] = None
        if kind == "tile_discarded":
            # whichever driver reads it first notes it; the time is the discarder's
            discarder = codec.seat_index(event.tile_discarded.seat)
            discard = self.discards.setdefault(event.sequence, Discard(discarder, event.sequence, now))
            if discarder == seat:
                discard.shown = now
                self.open[seat] = discard
                asyncio.get_running_loop().create_task(self._status(event.sequence))

    async def _status(self, sequence: int) -> None:
        """What anybody asking during the window is told: the table as of the discard."""
        status = await self.table.public_status()
        if self.table.state.windows is not None and self.table.state.windows.open:
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
        if play_pb2.ACTION_KIND_PASS in kinds:
            discard = self.discards[sequence]
            assert discard.seat != seat
            discard.option = True
            discard.answer = self.rng.choice(self.answers)
            if discard.answer == "pass":
                return self._send(seat, PASS, sequence)
            if discard.answer == "late pass":
                delay = self.rng.uniform(0.0, WINDOW_MS / 1000 * 0.5)
                asyncio.get_running_loop().call_later(delay, self._send, seat, PASS, sequence)
                return None
            if discard.answer == "claim":
                claims = [a for a in self.table.state.engine.legal_actions(seat) if a.kind in CLAIMS]
                if claims:
                    return self._send(seat, codec.encode_action(claims[0]), sequence)
                discard.answer = "pass"
                return self._send(seat, PASS, sequence)
            return None  # silence: the window passes it
        self._send(seat, codec.encode_action(self._turn(seat)), sequence)

    def _turn(self, seat: int) -> A.Action:
        """A quick turn (the drivers share the table's loop: a slow policy would delay what they read):
        win, declare ready when it may (its later draws are discarded by the table), or discard the
        drawn tile."""
        engine = self.table.state.engine
        legal = engine.legal_actions(seat)
        by_kind = {a.kind: a for a in legal}
        for kind in (A.SELF_DRAW_WIN, A.DECLARE_READY, A.EXCHANGE, A.DECLINE_DOUBLING, A.COLLECT):
            if kind in by_kind:
                return by_kind[kind]
        discards = [a for a in legal if a.kind == A.DISCARD]
        drawn = [a for a in discards if a.tile == engine.state.last_draw]
        return (drawn or discards or [a for a in legal if a.kind != A.LEAVE] or legal)[0]

    def _send(self, seat: int, action: play_pb2.Action, sequence: int) -> None:
        request = table_pb2.PlayRequest(action=action, last_seen_sequence=sequence)
        self.table.submit(self.sessions[seat], request)


def _ks(first: list[float], second: list[float]) -> float:
    """The two-sample Kolmogorov–Smirnov statistic: the largest gap between the empirical CDFs."""
    points = sorted(first + second)
    n, m = len(first), len(second)
    return max(abs(sum(x <= p for x in first) / n - sum(x <= p for x in second) / m) for p in points)


def _ks_critical(n: int, m: int, alpha: float = 0.001) -> float:
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def _draws(match: Match) -> tuple[list[float], list[float]]:
    drawn = [d for d in match.discards.values() if d.followed_by == "tile_drawn"]
    return [d.after * 1000 for d in drawn if d.option], [d.after * 1000 for d in drawn if not d.option]


def _describe(name: str, sample: list[float]) -> str:
    q = statistics.quantiles(sample, n=20)
    return (
        f"{name}: n={len(sample)} min={min(sample):.1f} p5={q[0]:.1f} median={statistics.median(sample):.1f} "
        f"p95={q[-1]:.1f} max={max(sample):.1f} ms"
    )


def test_the_wait_after_a_discard_is_the_window_whether_or_not_the_opponent_had_an_option() -> None:
    match = Match(WINDOW_MS, seed=7, answers=("pass", "late pass", "silence"))
    asyncio.run(match.play(discards=120))
    option, none = _draws(match)
    statistic, critical = _ks(option, none), _ks_critical(len(option), len(none))
    print(_describe("with an option", option))
    print(_describe("without one", none))
    print(f"two-sample KS D={statistic:.3f} (critical at alpha 0.001: {critical:.3f})")
    answers = {a: sum(d.answer == a for d in match.discards.values() if d.option) for a in match.answers}
    print(f"answers: {answers}")
    assert len(option) >= 20 and len(none) >= 40 and all(answers.values())
    # never before the window ends, and at most a scheduling hiccup after it
    assert min(option + none) >= WINDOW_MS - 10  # the reader may see the discard a little late
    for sample in (option, none):
        assert abs(statistics.median(sample) - WINDOW_MS) < 15
    assert abs(statistics.median(option) - statistics.median(none)) < 5
    assert statistic < critical
    # whatever follows a discard (the draw, the wall's end) waits for the window; only a claim or a win
    # would not, and the policy here makes none on discards
    followed = [d for d in match.discards.values() if d.followed_by]
    assert all(d.followed_by not in ("meld_made", "won") for d in followed)
    assert all(d.after >= WINDOW_MS / 1000 - 0.01 for d in followed)
    assert match.frozen and all(status == discard for discard, status in match.frozen)
    # a window not answered is passed without the time bank or 托管
    timed_out = [
        r
        for m in match.log.messages
        for r in (m.record, *m.following)
        if r.WhichOneof("kind") == "action_applied"
        and r.action_applied.origin == server_state_pb2.ACTION_ORIGIN_TIMEOUT
    ]
    assert timed_out and all(r.action_applied.action.HasField("pass") for r in timed_out)
    records = [r for m in match.log.messages for r in (m.record, *m.following)]
    banks = [r.time_bank.seconds for r in records if r.HasField("time_bank")]
    assert banks == [], "a claim window's answer spent a time bank"
    assert not any(s.auto_play for s in match.table.state.seats)


def test_without_the_option_the_wait_says_whether_the_opponent_had_one() -> None:
    """The measurement sees the leak the window closes (so the test above can fail)."""
    match = Match(0, seed=7, answers=("pass", "late pass", "silence"))
    asyncio.run(match.play(discards=60))
    option, none = _draws(match)
    print(_describe("with an option", option))
    print(_describe("without one", none))
    print(f"two-sample KS D={_ks(option, none):.3f}")
    assert statistics.median(none) < 20 < statistics.median(option)
    assert _ks(option, none) > _ks_critical(len(option), len(none))


def test_a_claim_ends_the_window_at_once() -> None:
    match = Match(WINDOW_MS, seed=3, answers=("claim",))
    asyncio.run(match.play(discards=40, hands=4))
    claimed = [d for d in match.discards.values() if d.answer == "claim" and d.followed_by == "meld_made"]
    print(_describe("claimed", [d.after * 1000 for d in claimed]))
    assert claimed and all(d.after < WINDOW_MS / 1000 / 2 for d in claimed)


def test_a_table_adopted_while_the_opponent_decides_opens_the_window_again() -> None:
    match = Match(WINDOW_MS, seed=11, answers=("pass", "silence"))
    asyncio.run(match.play(discards=20, hands=1))
    cuts = [
        i
        for i in range(1, len(match.log.messages))
        if rebuild(match.log.messages[:i]).engine.phase == "claim"
    ]
    state = rebuild(match.log.messages[: cuts[0]], now=time.monotonic())
    deciding = next(s for s in (0, 1) if state.deciding(s))
    adopted = LiveTable.adopted(state, RealClock(random.Random(1)), BusPorts(Log(), Services(), Services()))

    async def resume() -> float:
        started = time.monotonic()
        await adopted._hands.resume()
        return started

    started = asyncio.run(resume())
    assert state.windows is not None and len(state.windows.open) == 1
    window_until = state.seats[deciding].window_until
    assert window_until is not None
    assert abs(window_until - (started + WINDOW_MS / 1000 - 0.05)) < 0.05  # the whole window, from adoption
    assert state.seats[1 - deciding].window_until is None


def test_a_window_is_validated() -> None:
    with pytest.raises(InvalidArgument, match=r"claim_window_ms must be 0\.\.60000"):
        codec.room_settings(rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, claim_window_ms=60_001), 1)
    assert codec.room_settings(rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, claim_window_ms=60_000), 1)
