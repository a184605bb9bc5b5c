"""Claim timing that leaks nothing, as players see it on the whole stack (docs/protocol.md "Claim
windows"): two pairs of bot clients (``DuelClient`` with the baseline bot, as ``duel demo`` plays)
queue, negotiate (T7) and play at tables the table service serves — one pair in the shipped room
``duel-even`` (its rules with a 300 ms window and short queue times, so the test is quick), the other
in the same room without the window.

Each client notes when every message of its ``Play`` stream arrives. The discarder measures, from
each of its own discards (``TileDiscarded``), the time to the next event it is shown (the opponent's
draw, or the wall's end), both by arrival and by the events' ``occurred_at``; the opponent's client
knows whether it had an option on that tile (its ``LegalActions`` for that sequence offered chi,
pong, kong or win) and answers it by a policy — pass at once, pass a while later, or not at all (the
server passes it). Joined by sequence, the two samples must be the window and one distribution in
``duel-even``; without the window, an opponent that waits 300 ms before passing makes the wait say
that it had an option."""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot, Decision, pass_action
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import play_pb2, table_pb2
from services.matchmaking.rooms import DEFAULT_ROOMS_FILE
from tests.stats import describe, ks_critical, ks_statistic

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

WINDOW_MS = 300
LATE_PASS_MS = 300  # the opponent's wait before passing in the room without the window
CARRY = 500
DISCARDS = 60  # measured discards (both seats') a table plays for, at least
OPTIONS = 12  # ... of which the opponent had an option on at least so many
HAND_CAP = 12  # and it stops after so many hands whatever it measured
# By occurred_at what follows a discard is shown the window after it, exactly (to float rounding):
# the stamp of a held event is its opener's plus the window, however late the engine moved on.
STAMP_EXACT_MS = 0.01
# At the client, each of the two events also took its own way through the table server's loop, the
# network and the client's loop, on two cores that other processes share: the discard may come late
# by more than the next event does. Far below anything a player could read as a leak, and the same
# whether or not the opponent had an option (the medians and the KS test check that). A client stalled
# for a moment (another process on its core) shortens one wait by its stall: such waits are allowed
# down to ARRIVAL_STALL_MS short, as one in twenty at most.
ARRIVAL_JITTER_MS = 25
ARRIVAL_STALL_MS = 75

SHIPPED = next(r for r in json.loads(DEFAULT_ROOMS_FILE.read_text()) if r["room_id"] == "duel-even")
# The shipped room's rules; a short window, and queue times that do not slow the test. No house bot
# takes a seat (both seats are the test's clients); a fan is worth 1 so a carry lasts the hands.
EVEN = {
    **SHIPPED,
    "claim_window_ms": WINDOW_MS,
    "bot_fill_seconds": 0,
    "negotiation_seconds": 5,
    "fan_rate": 1,
}
OPEN = {**EVEN, "room_id": "duel-open", "name": "duel-even without the window", "claim_window_ms": 0}
OPTION_KINDS = frozenset(
    {play_pb2.ACTION_KIND_CHI, play_pb2.ACTION_KIND_PONG, play_pb2.ACTION_KIND_KONG, play_pb2.ACTION_KIND_WIN}
)
FOLLOWS = ("tile_drawn", "exhausted")  # what shows a discard was passed by (not claimed, not won on)


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    with stack_with("claim", {"MATCHMAKING_ROOMS": json.dumps([EVEN, OPEN])}) as state:
        yield state


@dataclass
class Discard:
    """One of a seat's own discards, as its client saw it."""

    sequence: int
    at: float  # when it arrived at the discarder's client
    stamped: float  # its SeatEvent.occurred_at: when the table showed it
    followed_by: str = ""  # the kind of the next event the discarder was shown
    after_ms: float = 0.0  # from its arrival to the next event's
    stamped_after_ms: float = 0.0  # from its occurred_at to the next event's


@dataclass
class Seat:
    """One client's stream: its own discards and what followed each, and the opponent's discards it
    had an option on (its LegalActions for that sequence offered a claim or a win)."""

    name: str
    seat: int = 0
    own: list[Discard] = field(default_factory=list)
    theirs: set[int] = field(default_factory=set)  # the opponent's discards, by sequence
    options: set[int] = field(default_factory=set)
    answers: dict[str, int] = field(default_factory=dict)
    waiting: Discard | None = None

    def watch(self, response: table_pb2.PlayResponse) -> None:
        now = time.monotonic()
        if not response.HasField("event"):
            return
        event = response.event
        kind = event.WhichOneof("kind") or ""
        stamped = event.occurred_at.ToNanoseconds() / 1e9
        waiting = self.waiting
        if waiting is not None and kind != "seat_connection":
            waiting.followed_by, waiting.after_ms = kind, (now - waiting.at) * 1000
            waiting.stamped_after_ms = (stamped - waiting.stamped) * 1000
            self.waiting = None
        if kind == "tile_discarded":
            if event.tile_discarded.seat == self.seat:
                self.waiting = Discard(event.sequence, now, stamped)
                self.own.append(self.waiting)
            else:
                self.theirs.add(event.sequence)


class Table:
    """Two seats of one table; each one's discards split by whether the other had an option."""

    def __init__(self) -> None:
        self.seats = [Seat("east"), Seat("west")]

    def waits(self, stamped: bool = False) -> tuple[list[float], list[float]]:
        """Milliseconds from each passed discard to the next event, by arrival at the discarder's
        client (or by the events' ``occurred_at``): where the opponent had an option, and where not."""
        option: list[float] = []
        none: list[float] = []
        for discarder, opponent in (self.seats, self.seats[::-1]):
            for discard in discarder.own:
                if discard.followed_by in FOLLOWS:
                    wait = discard.stamped_after_ms if stamped else discard.after_ms
                    (option if discard.sequence in opponent.options else none).append(wait)
        return option, none

    def enough(self) -> bool:
        option, none = self.waits()
        return len(option) + len(none) >= DISCARDS and len(option) >= OPTIONS


class Opponent:
    """The baseline bot, except that it answers an option on the opponent's discard by one of
    ``answers`` (never claiming): pass at once, pass within ``late_ms`` ("late pass") or after it
    ("wait"), or not at all ("silence"); and it plays on between hands until its table has measured enough."""

    def __init__(self, table: Table, seat: Seat, answers: tuple[str, ...], late_ms: float, seed: int) -> None:
        self.table, self.seat, self.answers, self.late_ms = table, seat, answers, late_ms
        self.rng = random.Random(seed)
        self.bot = BaselineBot()
        self.hands = 0

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> Decision:
        kinds = {entry.kind for entry in legal.actions}
        if play_pb2.ACTION_KIND_CONTINUE in kinds:
            self.hands += 1
            if self.table.enough() or self.hands >= HAND_CAP:
                return play_pb2.Action(leave=play_pb2.LeaveAction())
            return play_pb2.Action(continue_playing=play_pb2.ContinueAction())
        if legal.sequence in self.seat.theirs and kinds & OPTION_KINDS:
            self.seat.options.add(legal.sequence)
            answer = self.rng.choice(self.answers)
            self.seat.answers[answer] = self.seat.answers.get(answer, 0) + 1
            if answer == "pass":
                return pass_action()
            if answer == "late pass":
                return self._pass_after(self.rng.uniform(0, self.late_ms) / 1000)
            if answer == "wait":
                return self._pass_after(self.late_ms / 1000)
            return asyncio.get_running_loop().create_future()  # silence: the server passes it
        # off the event loop: four clients share it, and a bot thinking on it would delay when the
        # other streams' messages are read (and so the waits measured at them)
        return asyncio.to_thread(self.bot.decide, view, legal)

    async def _pass_after(self, seconds: float) -> play_pb2.Action:
        await asyncio.sleep(seconds)
        return pass_action()


async def _play_a_table(
    stack: StackState, room: str, answers: tuple[str, ...], late_ms: float, seed: int
) -> Table:
    table = Table()
    clients = [
        DuelClient(
            tls=stack.client_tls(),
            wallet=stack.services["wallet"].grpc,
            matchmaking=stack.target("matchmaking"),
        )
        for _ in table.seats
    ]
    try:
        for client, seat in zip(clients, table.seats, strict=True):
            await client.login(f"{room} {seat.name}")
        readies = await asyncio.gather(*(client.find_table(room, CARRY) for client in clients))
        plan = MatchPlan(hands=HAND_CAP, ask_between_hands=True)
        plays = []
        for number, (client, seat, ready) in enumerate(zip(clients, table.seats, readies, strict=True)):
            seat.seat = ready.seat
            policy = Opponent(table, seat, answers, late_ms, seed + number)
            plays.append(client.play(ready, policy, plan, watch=seat.watch))
        await asyncio.gather(*plays)
    finally:
        for client in clients:
            await client.close()
    return table


@pytest.mark.timeout(120)
async def test_the_wait_after_a_discard_says_nothing_in_a_room_with_a_claim_window(stack: StackState) -> None:
    even, open_ = await asyncio.gather(
        _play_a_table(stack, "duel-even", ("pass", "late pass", "silence"), WINDOW_MS / 2, seed=1),
        _play_a_table(stack, "duel-open", ("wait",), LATE_PASS_MS, seed=3),
    )
    answers = {a: sum(s.answers.get(a, 0) for s in even.seats) for a in ("pass", "late pass", "silence")}
    print(f"\nduel-even: the opponent's answers: {answers}")
    for stamped, measured in ((False, "at the discarder's client"), (True, "by occurred_at")):
        option, none = even.waits(stamped)
        statistic, critical = ks_statistic(option, none), ks_critical(len(option), len(none))
        print(describe(f"duel-even ({WINDOW_MS} ms) {measured}: the opponent had an option", option))
        print(describe(f"duel-even ({WINDOW_MS} ms) {measured}: it had none", none))
        early = sum(wait < WINDOW_MS - 5 for wait in option + none)
        print(f"duel-even {measured}: {early} of {len(option) + len(none)} waits more than 5 ms short")
        print(f"duel-even {measured}: two-sample KS D={statistic:.3f} (critical at 0.001: {critical:.3f})")
        assert len(option) >= OPTIONS and len(option) + len(none) >= DISCARDS, "too few discards measured"
        if stamped:
            assert all(abs(wait - WINDOW_MS) < STAMP_EXACT_MS for wait in option + none)
        waits = option + none
        assert min(waits) >= WINDOW_MS - ARRIVAL_STALL_MS
        assert sum(wait < WINDOW_MS - ARRIVAL_JITTER_MS for wait in waits) <= len(waits) / 20
        for sample in (option, none):
            assert abs(statistics.median(sample) - WINDOW_MS) < 15
        assert abs(statistics.median(option) - statistics.median(none)) < 5
        assert statistic < critical

    # the same measurement sees the leak where there is no window (so the assertions above can fail)
    late_option, late_none = open_.waits()
    late_statistic = ks_statistic(late_option, late_none)
    print(describe(f"duel-open: the opponent had an option and passed after {LATE_PASS_MS} ms", late_option))
    print(describe("duel-open: it had none", late_none))
    print(f"duel-open: two-sample KS D={late_statistic:.3f}")
    assert statistics.median(late_none) < 50 < LATE_PASS_MS - 50 < statistics.median(late_option)
    assert late_statistic > ks_critical(len(late_option), len(late_none))
