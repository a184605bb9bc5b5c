"""A table is its log (services/table/rebuild.py): random matches of both profiles are played through a
real ``LiveTable`` in process (fake bus ports, a clock that moves when the test says), and the log is
cut at every message boundary and rebuilt.

Where the live table is at rest (its task waits for its inbox), the rebuilt state must be the live one:
the state's fields, each seat's view and legal actions, time banks, the events a resuming seat is
sent. Connections and clocks are not restored (the rebuild's docstring says why): views are compared
with both seats shown away, and an open decision's time left may only be longer after a rebuild.
Inside a step of several messages (a hand's end and its settlement, 托管 and the bot's moves), the live
table has no state of its own to compare with; there the rebuilt engine and the events shown must be
the live table's up to that message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.platform.errors import PermissionDenied
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, server_state_pb2, table_pb2
from duelmahjong.views import codec, seat_views
from services.scoring import codec as scoring_codec
from services.scoring.core import ScoredHand, ScoringCore
from services.scoring.replay import replay_hand
from services.table.broadcast import Broadcast
from services.table.live import LiveTable
from services.table.live_state import LiveState
from services.table.ports import BusPorts, OpenRequest
from services.table.rebuild import rebuild
from services.table.seats import SeatSession
from services.table.spectators import SpectatorFeed, Spectators
from tests.unit.table_fakes import Host, Quiet, RecordingLog

DECISION_SECONDS = 10.0
BANK_SECONDS = 20.0


def _request(profile: str) -> OpenRequest:
    duel = profile == "duel"
    rules = rules_pb2.RoomRules(
        profile=rules_pb2.PROFILE_DUEL if duel else rules_pb2.PROFILE_ERREN,
        fan_rate=10,
        decision_millis=int(DECISION_SECONDS * 1000),
        time_bank_millis=int(BANK_SECONDS * 1000),
        items_enabled=duel,
    )
    stock = [
        rules_pb2.ItemCount(item=kind, count=1)
        for kind in (
            rules_pb2.ITEM_KIND_GRAND_SHIFT,
            rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY,
            rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS,
        )
    ]
    players = (
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id="a", carry=1000, items=stock),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id="b", carry=900),
    )
    return OpenRequest("t-rebuild", "p-1", "r-1", rules, players, 2 if duel else 1)


def _seen(state: LiveState, now: float) -> dict[str, Any]:
    """What the table is, as the comparison reads it: connections shown as away on both sides, and
    the time left of an open decision apart (``_time_left``)."""
    facts = dataclasses.replace(state.facts(), connected=(False, False))
    out = Broadcast(state, RecordingLog(), lambda: now)
    waiting = state.status == table_pb2.TABLE_STATUS_WAITING
    seats = []
    for seat, seat_state in enumerate(state.seats):
        legal = out.legal_message(seat)
        if legal is not None:
            legal.ClearField("deadline")
            legal.ClearField("decision_millis_remaining")
        seats.append(
            {
                "bank": seat_state.bank,
                "auto_play": seat_state.auto_play,
                "continuing": seat_state.continuing,
                "grand_shift": None if waiting else seat_state.grand_shift,  # said again at attach
                "deciding": seat_state.decision_since is not None,
                "decision_sequence": seat_state.decision_sequence,
                "view": seat_views.seat_view(state.engine, seat, facts, legal).SerializeToString(),
                "sent": [out.response(s, seat, facts).SerializeToString() for s in state.log.events],
            }
        )
    return {
        "status": state.status,
        "hand_id": state.hand_id,
        "hands_played": state.hands_played,
        "between": state.between,
        "close_reason": state.close_reason if state.status == table_pb2.TABLE_STATUS_CLOSED else "",
        "journal": state.log.sequence,
        "engine": [event.canonical() for event in state.engine.events],
        "items": [dict(counts) for counts in state.item_counts],
        "offer_ids": list(state.narrator.offer_ids),
        "seats": seats,
    }


def _time_left(state: LiveState, now: float) -> list[int]:
    out = Broadcast(state, RecordingLog(), lambda: now)
    return [
        legal.decision_millis_remaining if legal is not None else -1
        for legal in (out.legal_message(0), out.legal_message(1))
    ]


class Match:
    """One table played by a random policy through the live table's own inbox."""

    def __init__(
        self,
        profile: str,
        seed: int,
        adopted: list[events_pb2.TableEventAppended] | None = None,
        *,
        private_table: bool = False,
    ) -> None:
        """A new table, or (``adopted``: a log's first messages) the table rebuilt from them."""
        self.rng = random.Random(seed)
        self.host = Host(now_value=1000.0, rng=random.Random(seed + 1))
        self.log = RecordingLog()
        self.quiet = Quiet()
        ports = BusPorts(self.log, self.quiet, self.quiet)
        if adopted is None:
            request = dataclasses.replace(_request(profile), private_table=private_table)
            self.table = LiveTable(request, self.host, ports)
        else:
            self.log.messages.extend(adopted)
            state = rebuild(adopted, now=self.host.now_value)
            self.table = LiveTable.adopted(state, self.host, ports)
        self.sessions = [SeatSession(0, grand_shift=True), SeatSession(1)]
        self.rest: dict[int, tuple[dict[str, Any], list[int], float]] = {}  # messages → what was seen

    async def settle(self) -> None:
        """Until the table's task waits for its inbox again; then note what it is at rest."""
        # A table that closes meanwhile answers no more.
        answer = asyncio.ensure_future(self.table.public_status())
        gone = asyncio.ensure_future(self.host.gone.wait())
        await asyncio.wait((answer, gone), return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if answer.done():
            answer.result()
        else:
            answer.cancel()
        if self.table.state.status != table_pb2.TABLE_STATUS_CLOSED:
            now = self.host.now_value
            self.rest[len(self.log.messages)] = (
                _seen(self.table.state, now),
                _time_left(self.table.state, now),
                now,
            )

    def scored(self) -> list[ScoredHand]:
        """Every hand the table ended, as scoring turns the log it points into into the hand's result."""
        records = [r for message in self.log.messages for r in scoring_codec.log_records(message)]
        return [ScoringCore().score_replayed(replay_hand(records, ended)) for ended in self.quiet.ended]

    async def begin(self) -> None:
        """The table started and both seats attached."""
        self.table.start()
        await self.settle()
        for session in self.sessions:
            self.table.attach(session, 0)
            await self.settle()

    async def play(self, hands: int) -> None:
        await self.begin()
        for _ in range(2000):
            state = self.table.state
            if state.status == table_pb2.TABLE_STATUS_CLOSED:
                break
            await self._step(state, hands)
            await self.settle()
        await self.table.stop()

    async def _step(self, state: LiveState, hands: int) -> None:
        roll = self.rng.random()
        seat = self.rng.choice([s for s in (0, 1) if self._deciding(state, s)] or [0, 1])
        session = self.sessions[seat]
        if roll < 0.04 and state.seats[seat].session is session:  # the seat goes away (T10)
            self.table.detach(session)
            return
        if state.seats[seat].session is not session or roll < 0.08:
            if state.seats[seat].session is not session and self.rng.random() < 0.5:
                self.host.now_value += self.rng.choice([DECISION_SECONDS + 1, 40.0])  # 托管, or the grace
                return
            self.sessions[seat] = SeatSession(seat)
            self.table.attach(self.sessions[seat], self.rng.randrange(state.last_event_sequence() + 1))
            return
        if roll < 0.12:  # time passes: banks are spent, deadlines pass
            self.host.now_value += self.rng.choice(
                [3.0, DECISION_SECONDS + 4, DECISION_SECONDS + BANK_SECONDS]
            )
            return
        action = self._choice(state, seat, hands)
        self.table.submit(
            session, table_pb2.PlayRequest(action=action, last_seen_sequence=state.last_event_sequence())
        )

    @staticmethod
    def _deciding(state: LiveState, seat: int) -> bool:
        return (state.between and not state.seats[seat].continuing) or state.deciding(seat)

    def _choice(self, state: LiveState, seat: int, hands: int) -> play_pb2.Action:
        if state.between:
            if state.hands_played >= hands or self.rng.random() < 0.1:
                return play_pb2.Action(leave=play_pb2.LeaveAction())
            shift = self.rng.random() < 0.5
            return play_pb2.Action(continue_playing=play_pb2.ContinueAction(use_grand_shift=shift))
        legal = state.engine.legal_actions(seat)
        choices = [a for a in legal if a.kind != A.LEAVE] or legal
        if self.rng.random() < 0.01:
            return codec.encode_action(next(a for a in legal if a.kind == A.LEAVE))
        pick = bot.choose(state.engine.state, seat, legal) if self.rng.random() < 0.7 else None
        return codec.encode_action(pick or self.rng.choice(choices))


def _check(match: Match) -> int:
    live = match.table.state
    cuts = 0
    for count in range(1, len(match.log.messages) + 1):
        at_rest = match.rest.get(count)
        now = at_rest[2] if at_rest else 0.0
        rebuilt = rebuild(match.log.messages[:count], now=now)
        cuts += 1
        if at_rest is not None:
            seen, time_left, _ = at_rest
            assert _seen(rebuilt, now) == seen, f"at message {count}"
            for live_left, rebuilt_left in zip(time_left, _time_left(rebuilt, now), strict=True):
                assert rebuilt_left >= live_left  # an open decision gets its whole time again
            continue
        # inside a step: what the log says so far is what the live table did
        engine = [e.canonical() for e in rebuilt.engine.events]
        assert engine == [e.canonical() for e in live.engine.events[: len(engine)]]
        shown = [(s.sequence, s.note, s.at) for s in rebuilt.log.events]
        assert shown == [(s.sequence, s.note, s.at) for s in live.log.events[: len(shown)]]
    return cuts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=st.sampled_from(["duel", "erren"]), seed=st.integers(0, 2**32), hands=st.integers(1, 3))
def test_a_table_rebuilt_at_any_message_of_its_log_is_the_live_table(
    profile: str, seed: int, hands: int
) -> None:
    match = Match(profile, seed)
    asyncio.run(match.play(hands))
    assert match.table.state.status == table_pb2.TABLE_STATUS_CLOSED
    assert _check(match) == len(match.log.messages)
    assert rebuild(match.log.messages).status == table_pb2.TABLE_STATUS_CLOSED


def test_a_private_table_rebuilt_from_its_log_is_private_and_refuses_spectators() -> None:
    match = Match("duel", 5, private_table=True)
    asyncio.run(match.play(1))
    opening = match.log.messages[0].record.table_opening
    assert opening.private_table
    for cut in (1, len(match.log.messages) // 2, len(match.log.messages)):
        state = rebuild(match.log.messages[:cut])
        assert state.request.private_table
        with pytest.raises(PermissionDenied, match="private table"):
            Spectators().feed(state.table_id, state)
    public = Match("duel", 5)
    asyncio.run(public.play(1))
    assert not rebuild(public.log.messages).request.private_table


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_scoring_replays_every_hand_of_a_log_with_the_record_kinds_it_does_not_read(profile: str) -> None:
    match = Match(profile, 12)  # a match whose log has every record kind
    asyncio.run(match.play(3))
    kinds = {r.WhichOneof("kind") for m in match.log.messages for r in (m.record, *m.following)}
    assert kinds == {f.name for f in server_state_pb2.TableLogRecord.DESCRIPTOR.oneofs_by_name["kind"].fields}
    records = [r for message in match.log.messages for r in scoring_codec.log_records(message)]
    assert match.quiet.ended and {r.sequence for r in records} == set(range(1, len(records) + 1))
    hands = [replay_hand(records, ended) for ended in match.quiet.ended]
    assert [h.outcome.hand for h in hands] == list(range(1, len(hands) + 1))
    assert all(h.begun.players == (("a", 1000), ("b", 900)) for h in hands), hands[0].begun


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=st.sampled_from(["duel", "erren"]), seed=st.integers(0, 2**32), cut=st.floats(0, 1))
@example(profile="duel", seed=3, cut=1.0)  # the whole log: the table had closed
@example(profile="erren", seed=3, cut=0.0)  # opened, nobody came yet
def test_a_table_adopted_from_any_part_of_its_log_resumes_both_seats_and_plays_on(
    profile: str, seed: int, cut: float
) -> None:
    first = Match(profile, seed)
    asyncio.run(first.play(3))
    count = 1 + int(cut * (len(first.log.messages) - 1))
    prefix = first.log.messages[:count]
    last = rebuild(prefix).last_event_sequence()

    async def resumed() -> Match:
        match = Match(profile, seed + 7, adopted=prefix)
        match.table.start()
        await match.settle()
        if match.table.state.status == table_pb2.TABLE_STATUS_CLOSED:
            if rebuild(prefix).ended():  # the whole log: nothing more is written
                assert len(match.log.messages) == count
            return match
        seen = [first.rng.randrange(last + 1) for _ in (0, 1)]
        for seat, session in enumerate(match.sessions):
            match.table.attach(session, seen[seat])
            await match.settle()
            sent = [r.event for r in await session.take() if r is not None and r.HasField("event")]
            facts = dataclasses.replace(first.table.state.facts(), connected=(False, False))
            missed = [e for e in first.table.state.log.events if seen[seat] < e.sequence <= last]
            resent = [e for e in sent if e.sequence <= last]
            assert [e.sequence for e in resent] == [e.sequence for e in missed]
            for event, shown in zip(resent, missed, strict=True):
                assert event == Broadcast.response(shown, seat, facts).event
        for _ in range(2000):
            if match.table.state.status == table_pb2.TABLE_STATUS_CLOSED:
                break
            await match._step(match.table.state, 3)
            await match.settle()
        await match.table.stop()
        return match

    match = asyncio.run(resumed())
    assert match.table.state.status == table_pb2.TABLE_STATUS_CLOSED
    assert match.log.messages[:count] == prefix
    assert rebuild(match.log.messages).status == table_pb2.TABLE_STATUS_CLOSED  # numbered on, no gap


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_a_table_adopted_while_settling_points_scoring_at_the_same_hand_again(profile: str) -> None:
    """The server that ended a hand died before its settlement was shown: the adopter is SETTLING,
    publishes the same hand's pointer again (scoring and the wallet take it once and answer again),
    and goes on once settled, the wait for the answer starting again on its own clock."""
    first = Match(profile, 21)
    asyncio.run(first.play(3))
    assert first.quiet.ended
    ended = first.quiet.ended[0]
    # The log as it stood when the hand ended: every message up to the hand's end, none after.
    prefix = [m for m in first.log.messages if m.sequence <= ended.last_sequence]
    assert rebuild(prefix).status == table_pb2.TABLE_STATUS_SETTLING

    async def adopted() -> Match:
        match = Match(profile, 22, adopted=prefix)
        match.host.settlement_wait = 5.0
        match.table.start()
        await match.settle()
        assert match.table.state.status == table_pb2.TABLE_STATUS_SETTLING
        assert [(e.table_id, e.hand_id) for e in match.quiet.ended] == [(ended.table_id, ended.hand_id)]
        assert match.quiet.ended[0].last_sequence >= ended.last_sequence  # its own records follow
        match.host.now_value += 5.0  # no wallet here: the wait passes, on the adopter's clock
        await match.settle()
        assert match.table.state.between
        await match.table.stop()
        return match

    asyncio.run(adopted())


# --- spectators (services/table/spectators.py): derived from the log, shown nothing a seat hides -------
def _spectated(state: LiveState) -> tuple[SpectatorFeed, list[play_pb2.SeatEvent]]:
    """Every event a spectator is sent of the table, once all are of age."""
    feed = SpectatorFeed(state, delay_ns=0)
    feed.advance()
    assert feed.aged == len(state.log.events)
    return feed, [feed.copy(index) for index in range(feed.aged)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=st.sampled_from(["duel", "erren"]), seed=st.integers(0, 2**32), hands=st.integers(1, 3))
def test_a_spectator_sees_what_neither_seat_hides_and_the_same_from_the_log_alone(
    seat_secrets: Callable[[Any], list[str]], profile: str, seed: int, hands: int
) -> None:
    match = Match(profile, seed)
    asyncio.run(match.play(hands))
    live = match.table.state
    feed, seen = _spectated(live)
    _, rebuilt = _spectated(rebuild(match.log.messages))
    assert [e.SerializeToString() for e in rebuilt] == [e.SerializeToString() for e in seen]
    facts = live.facts()
    in_hand = False
    for shown, event in zip(live.log.events, seen, strict=True):
        assert event.sequence == shown.sequence
        assert seat_secrets(event) == [], shown.event.kind if shown.event else "table's own"
        if shown.event is None:
            assert event == shown.made  # the table's own: what both seats were shown
            continue
        copies = [Broadcast.response(shown, seat, facts).event for seat in (0, 1)]
        if shown.event.seat in (0, 1):  # about a seat: what its opponent was shown
            assert event == copies[1 - shown.event.seat], shown.event.kind
        else:
            assert event == copies[0] == copies[1], shown.event.kind
        in_hand = (in_hand or event.HasField("hand_started")) and not event.HasField("hand_revealed")
        state = feed.public_state(shown.sequence)
        assert state.sequence == shown.sequence
        for seat in state.seats:  # the hands are shown face up only once the hand is over
            assert not (in_hand and seat.revealed_concealed), shown.event.kind
    # A resume within the hand the delayed moment is in gets the events it missed; one from an earlier
    # hand the delayed table (then the events after it).
    starts = [s.sequence for s in live.log.events if s.event is not None and s.event.kind == "hand_started"]
    last_start = starts[-1] if starts else 0
    for last_seen in {1, last_start - 1, last_start, len(seen)} - {0, -1}:
        start = feed.start_at(last_seen)
        if last_seen < last_start:
            assert start.state is not None and start.index == len(seen)
            assert start.state.state.sequence == len(seen)
        else:
            assert start.state is None and start.index == last_seen
