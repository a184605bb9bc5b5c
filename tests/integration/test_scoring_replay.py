"""Scoring re-verifies a hand by replaying the table's write-ahead log (issue 6).

The tables here are engine tables that keep their log laid out as the table service writes it (the
contract: events.proto ``TableEventAppended``, server_state.proto ``TableLogRecord``).

Sequence 1 is ``table_opened``; each hand starts with a ``HandBegun`` record followed by its engine
events; each applied action is an ``ActionApplied`` record followed by the events it produced. When a
hand ends the table publishes ``HandEnded``: a pointer (table, hand, log position), which scoring alone
turns into the hand's result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import secrets
from typing import Any

import nats.errors
import pytest
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from duelmahjong import contract
from duelmahjong.engine.actions import Action
from duelmahjong.engine.bot import choose
from duelmahjong.engine.events import Event
from duelmahjong.engine.outcome import Outcome, Termination
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import events_pb2, rules_pb2, server_state_pb2
from services.scoring import codec
from services.scoring.config import ScoringConfig
from services.scoring.core import ScoringCore, SeatClaim
from services.scoring.main import SPEC as SCORING
from services.scoring.replay import HandPointer, LogIncomplete, LogRecord, ReplayMismatch, replay_hand

SEATS = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)


class LoggedTable:
    """One engine table and its log, played by the baseline bot or by given actions."""

    def __init__(
        self,
        profile: str = "duel",
        *,
        table_id: str | None = None,
        players: tuple[tuple[str, int], tuple[str, int]] = (("alice", 5000), ("bob", 5000)),
        fan_rate: int = 10,
        **settings: Any,
    ) -> None:
        self.table_id = table_id or f"t-{secrets.token_hex(6)}"
        self.engine = Table(RoomSettings(profile=profile, **settings))
        self.rules = rules_pb2.RoomRules(profile=contract.PROFILES[profile], fan_rate=fan_rate)
        self.players = [
            rules_pb2.SeatPlayer(seat=SEATS[seat], player_id=player_id, carry=carry)
            for seat, (player_id, carry) in enumerate(players)
        ]
        self.records: list[events_pb2.TableEventAppended] = []
        self.hand_id = "table"
        self._write([], self.engine.events[:1])

    def _write(self, leading: list[server_state_pb2.TableLogRecord], events: list[Event]) -> None:
        records = list(leading) + [
            server_state_pb2.TableLogRecord(
                engine_event=server_state_pb2.EngineEventRecord(
                    kind=e.kind, seat=SEATS[e.seat] if e.seat >= 0 else 0, canonical_json=e.canonical()
                )
            )
            for e in events
        ]
        for record in records:
            sequence = len(self.records) + 1
            self.records.append(
                events_pb2.TableEventAppended(
                    envelope=events_pb2.EventEnvelope(event_id=f"{self.table_id}/{self.hand_id}/{sequence}"),
                    table_id=self.table_id,
                    hand_id=self.hand_id,
                    sequence=sequence,
                    record=record,
                )
            )

    def deal(self, seed: int | None = None, **options: Any) -> None:
        """Deal the next hand (``options``: the engine's ``items`` and ``qiankun``, T6)."""
        number = self.engine.state.hand_number + 1
        self.hand_id = f"{self.table_id}-h{number}"
        events = self.engine.start_hand(secrets.randbits(64) if seed is None else seed, **options)
        begun = server_state_pb2.HandBegun(
            hand_number=number,
            rules=self.rules,
            players=self.players,
            multipliers=rules_pb2.Multipliers(fan_rate=self.rules.fan_rate),
        )
        self._write([server_state_pb2.TableLogRecord(hand_begun=begun)], events)

    def play(self, action: Action | str) -> list[Event]:
        action = Action.parse(action) if isinstance(action, str) else action
        events = self.engine.apply(action)
        applied = server_state_pb2.ActionApplied(seat=SEATS[action.seat], engine_action=str(action))
        self._write([server_state_pb2.TableLogRecord(action_applied=applied)], events)
        return events


def bot_hand(table: LoggedTable, seed: int | None = None, **options: Any) -> Outcome:
    """Deal and let the baseline bot play both seats through ``table.play`` until the hand ends."""
    table.deal(seed, **options)
    while table.engine.outcome is None:
        for seat in (0, 1):
            legal = [a for a in table.engine.legal_actions(seat) if a.kind != "leave"]
            if legal:
                table.play(choose(table.engine.state, seat, table.engine.legal_actions(seat)))
                break
        else:
            raise RuntimeError("nobody can act, yet the hand is not over")
    outcome = table.engine.outcome
    assert outcome is not None
    return outcome


def pointer(table: LoggedTable, last_sequence: int | None = None) -> HandPointer:
    """Where the hand just finished ends in the table's log, as the table's ``HandEnded`` says."""
    return HandPointer(
        table.table_id, table.hand_id, len(table.records) if last_sequence is None else last_sequence
    )


def records_of(table: LoggedTable) -> list[LogRecord]:
    return [codec.log_record(record) for record in table.records]


def first_hand(profile: str, outcome: str, **settings: Any) -> tuple[LoggedTable, Outcome]:
    """A fresh table whose first bot hand ends with ``outcome`` (seeds tried in order: deterministic)."""
    for seed in range(1, 200):
        table = LoggedTable(profile, **settings)
        result = bot_hand(table, seed)
        if result.termination == outcome:
            return table, result
    raise AssertionError(f"no {profile} hand ended {outcome} in 200 seeds")


# --- replay, in process --------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_bot_hands_replay_to_their_results_hand_after_hand(profile: str) -> None:
    table = LoggedTable(profile)
    for number in range(1, 4):
        result = bot_hand(table, seed=100 + number)
        replayed = replay_hand(records_of(table), pointer(table))
        assert replayed.outcome == result
        scored = ScoringCore().score_replayed(replayed)
        assert scored.claim.players == (SeatClaim("alice", 5000), SeatClaim("bob", 5000))  # HandBegun's
        if result.win is not None:
            assert scored.evaluation is not None
            assert scored.evaluation.evaluation.to_json() == result.win.evaluation  # the engine's, as is
        if profile == "duel":  # T7: the progressive multiplier doubles every hand of the pairing
            assert scored.claim.progressive == 2 ** (number - 1)


def test_a_hand_dealt_with_the_t6_grand_shift_item_replays() -> None:
    table = LoggedTable("duel")
    result = bot_hand(table, seed=3, items=({"qiankun": 2}, {}), qiankun=(0,))  # 乾坤大挪移 for seat 0
    assert replay_hand(records_of(table), pointer(table)).outcome == result


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_log_names_a_win_and_a_kong_as_the_contract_does(profile: str) -> None:
    """The write-ahead log keeps the engine's text of each action, which replay parses again: a win is
    logged as ``win`` or ``self_draw_win`` (kongs as ``concealed_kong``/``added_kong``), and replays."""
    table, result = first_hand(profile, "win")
    logged = [
        r.record.action_applied.engine_action for r in table.records if r.record.HasField("action_applied")
    ]
    kinds = {text.split()[1] for text in logged}
    assert kinds & {"win", "self_draw_win"}
    assert not kinds & {"ron", "tsumo", "ankan", "kakan"}
    assert replay_hand(records_of(table), pointer(table)).outcome == result


def test_t12_a_rolled_guess_rides_with_the_hand_for_the_wallet() -> None:
    """猜大小 is part of the hand's outcome in its log: scoring passes it on with the hand's settlement
    (the wallet stakes it on the transfer it moves); collecting is no guess."""
    table, result = first_hand("duel", "win", guess_enabled=True)
    assert result.guess is not None and result.guess.rolled  # the baseline bot guesses big
    scored = ScoringCore().score_replayed(replay_hand(records_of(table), pointer(table)))
    assert scored.guess == result.guess
    stake = codec.guess_message(result.guess)
    assert (stake.guess, list(stake.dice), stake.won) == (
        rules_pb2.GUESS_BIG,
        list(result.guess.dice or ()),
        bool(result.guess.right),
    )
    assert stake.payout_multiplier == (result.guess.factor if result.guess.right else 0)


def test_a_pointer_short_of_the_hands_end_is_refused() -> None:
    """What scoring settles is what the log replays to, up to where ``HandEnded`` points: a pointer into
    the middle of the hand names no finished hand."""
    table, _ = first_hand("duel", "win")
    with pytest.raises(ReplayMismatch, match="does not end the hand"):
        replay_hand(records_of(table), pointer(table, len(table.records) - 2))


def test_a_hand_begun_naming_one_player_twice_is_refused() -> None:
    table, _ = first_hand("duel", "win")
    begun = next(r for r in reversed(table.records) if r.record.HasField("hand_begun"))
    begun.record.hand_begun.players[1].player_id = begun.record.hand_begun.players[0].player_id
    with pytest.raises(ReplayMismatch, match="both seats"):
        replay_hand(records_of(table), pointer(table))


def test_a_rewritten_log_event_is_refused_at_its_sequence() -> None:
    table, _ = first_hand("duel", "win")
    discard = next(r for r in table.records if r.record.engine_event.kind == "discarded")
    text = discard.record.engine_event.canonical_json
    tile = json.loads(text)["public"]["tile"]
    swapped = "9m" if tile != "9m" else "1m"
    discard.record.engine_event.canonical_json = text.replace(f'"tile":"{tile}"', f'"tile":"{swapped}"')
    with pytest.raises(ReplayMismatch) as refused:
        replay_hand(records_of(table), pointer(table))
    assert refused.value.sequence == discard.sequence


def test_a_log_missing_an_action_is_refused() -> None:
    table, _ = first_hand("duel", "win")
    records = records_of(table)
    action = next(r for r in records if r.action and "discard" in r.action)
    kept = [r for r in records if r is not action]
    renumbered = [dataclasses.replace(r, sequence=n) for n, r in enumerate(kept, start=1)]
    with pytest.raises(ReplayMismatch):
        replay_hand(renumbered, pointer(table, len(renumbered)))


def test_a_log_short_of_last_sequence_is_incomplete_not_refused() -> None:
    table, _ = first_hand("duel", "win")
    with pytest.raises(LogIncomplete):
        replay_hand(records_of(table)[:-3], pointer(table))


def test_escape_mid_hand_replays_and_costs_the_t10_h3_penalty() -> None:
    table = LoggedTable("duel", players=(("alice", 5000), ("bob", 300)))
    table.deal(seed=7)
    for seat in (0, 1):
        table.play(f"{seat} exchange []")
    table.play("1 leave")  # T10: leaving during a hand is escape
    result = table.engine.outcome
    assert result is not None and result.termination is Termination.ESCAPE
    scored = ScoringCore().score_replayed(replay_hand(records_of(table), pointer(table)))
    # H3: 64 fan × 1 × 1 × N=10 = 640, uncapped: the wallet caps it by the carry it holds for bob.
    assert (scored.settlement.payer, scored.settlement.payee) == ("bob", "alice")
    assert scored.settlement.fan_amount == 640
    settlement = codec.settlement_message(scored.settlement)
    assert settlement.transfer.amount == 640 and not settlement.capped_by_carry and not settlement.postings


def test_H3_an_erren_escape_after_both_doubled_replays_and_costs_88_x_4_x_n() -> None:
    """H3, erren: the hand's multiplier is H2's 开始加倍 factor S (seed 000: 该倍数为当局倍数)."""
    table = LoggedTable("erren", players=(("alice", 5000), ("bob", 5000)))
    table.deal(seed=7)
    for seat in (0, 1):
        table.play(f"{seat} double")
    table.play("1 leave")
    result = table.engine.outcome
    assert result is not None and result.termination is Termination.ESCAPE
    assert result.erren is not None and result.erren.doubling == (True, True)
    scored = ScoringCore().score_replayed(replay_hand(records_of(table), pointer(table)))
    settlement = codec.settlement_message(scored.settlement)
    assert settlement.fan_amount == settlement.transfer.amount == 88 * 4 * 10
    assert (settlement.doubling.base_fan, settlement.doubling.s, settlement.total_fan) == (88, 4, 352)
    assert (settlement.transfer.from_player_id, settlement.fee) == ("bob", 0)


def test_a_drawn_hand_moves_nothing() -> None:
    table, _ = first_hand("erren", "drawn")
    scored = ScoringCore().score_replayed(replay_hand(records_of(table), pointer(table)))
    settlement = codec.settlement_message(scored.settlement)
    assert not settlement.HasField("transfer") and not settlement.postings


@functools.cache
def _logged_pair(profile: str) -> tuple[tuple[LogRecord, ...], HandPointer]:
    table = LoggedTable(profile)
    bot_hand(table, seed=5)
    bot_hand(table, seed=6)  # the second hand: a log with a hand before it
    return tuple(records_of(table)), pointer(table)


@settings(max_examples=30, deadline=None)
@given(
    profile=st.sampled_from(["duel", "erren"]),
    pick=st.integers(0, 10**6),
    how=st.sampled_from(["swap", "drop"]),
)
def test_any_reordered_or_dropped_event_of_the_hand_is_refused(profile: str, pick: int, how: str) -> None:
    records, ended = _logged_pair(profile)
    start = max(r.sequence for r in records if r.canonical and '"kind":"hand_started"' in r.canonical)
    events = [r for r in records if r.canonical and r.sequence >= start]
    first = events[pick % (len(events) - 1)]
    second = events[events.index(first) + 1]
    log = list(records)
    if how == "swap":
        assume(first.canonical != second.canonical)
        log[first.sequence - 1] = dataclasses.replace(first, canonical=second.canonical)
        log[second.sequence - 1] = dataclasses.replace(second, canonical=first.canonical)
    else:  # the record is gone and the rest renumbered, so the log has no gap to give it away
        log = [
            dataclasses.replace(r, sequence=n) for n, r in enumerate([r for r in log if r is not first], 1)
        ]
        ended = dataclasses.replace(ended, last_sequence=ended.last_sequence - 1)
    with pytest.raises(ReplayMismatch):
        replay_hand(log, ended)


# --- the service on real NATS --------------------------------------------------------------------------
async def write_log(bus: Bus, table: LoggedTable) -> None:
    subject = subjects.table_log_subject(table.table_id)
    for record in table.records:
        await bus.publish(subject, record.SerializeToString(), msg_id=record.envelope.event_id)


HAND_ENDED_AT = 1_790_000_000  # the tests' hands all end at this Unix time


async def hand_ended(bus: Bus, ended: HandPointer, event_id: str = "") -> None:
    """The table's ``HandEnded`` for the hand ``ended`` points at."""
    event = events_pb2.HandEnded(
        envelope=events_pb2.EventEnvelope(
            event_id=event_id or f"hand_ended:{ended.hand_id}", occurred_at=Timestamp(seconds=HAND_ENDED_AT)
        ),
        table_id=ended.table_id,
        hand_id=ended.hand_id,
        log_position=ended.last_sequence,
    )
    await bus.publish_event(subjects.HAND_ENDED, event)


async def stored(
    bus: Bus, subject: str, message: type[Message], hand_id: str, *, within: float = 15
) -> list[Any]:
    """The events of ``hand_id`` stored on ``subject`` once at least one is there."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        subscription = await bus.js.pull_subscribe(subject, stream=subjects.SCORING_STREAM.name)
        found = []
        try:
            while True:
                batch = await subscription.fetch(100, timeout=0.3)
                found += [e for e in (message.FromString(m.data) for m in batch) if e.hand_id == hand_id]
        except (nats.errors.TimeoutError, TimeoutError):
            pass
        finally:
            await subscription.unsubscribe()
        if found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.2)


def metric(runtime: Any, sample: str) -> float:
    """The value of one sample (name with its labels) of the running service's /metrics."""
    for line in runtime.metrics.exposition().decode().splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture
def service_env(service_env: dict[str, str], scoring_database_url: str) -> dict[str, str]:
    """Scoring keeps its archive in a database of its own: this test's."""
    return {**service_env, "SCORING_DATABASE_URL": scoring_database_url}


async def start_scoring(start_service: Any, service_env: dict[str, str]) -> Any:
    return await start_service(SCORING, ScoringConfig.from_env(service_env))


async def logged_win(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> tuple[Any, Outcome, LoggedTable]:
    """A running scoring service and a won duel hand whose log is on NATS (not yet ended)."""
    runtime = await start_scoring(start_service, service_env)
    table, result = first_hand("duel", "win")
    await write_log(bus, table)
    return runtime, result, table


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_good_hand_is_scored_and_published_once(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    runtime, result, table = await logged_win(bus, start_service, service_env)
    ended = pointer(table)
    await hand_ended(bus, ended)
    await hand_ended(bus, ended, event_id="hand_ended:redelivered")  # a duplicate is harmless
    scored = await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, ended.hand_id)
    await asyncio.sleep(0.5)  # room for a second, wrongly published settlement
    scored = await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, ended.hand_id)
    assert len(scored) == 1
    event = scored[0]
    assert event.envelope.event_id == f"scoring:hand_scored:{ended.hand_id}"
    assert event.hand_ended_at.seconds == HAND_ENDED_AT  # carried for the wallet's settlement lag
    assert result.win is not None
    fan = result.win.total_fan
    assert event.evaluation.total_fan == fan
    winner, loser = table.players[result.winner], table.players[result.loser]
    assert event.settlement.transfer.to_player_id == winner.player_id
    assert event.settlement.transfer.amount == fan * 1 * 1 * 10  # H1 with N = 10, uncapped as scored
    assert event.settlement.transfer.from_player_id == loser.player_id
    assert not event.settlement.postings  # what moves is the wallet's to say (SettlementApplied)
    assert list(event.player_ids) == [p.player_id for p in table.players]  # who owes the fee
    assert event.profile == rules_pb2.PROFILE_DUEL  # the ratings the hand moves
    assert not event.HasField("guess")  # no 猜大小 in this room
    # This service verified and scored the hand. The redelivery may be taken by another test's scoring
    # on the same durable consumer (the suite shares one NATS): that it published nothing twice is
    # the check above.
    assert metric(runtime, 'duel_scoring_hands_scored_total{outcome="win",profile="duel"}') >= 1


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_pointer_into_the_middle_of_a_hand_is_refused_with_the_event_and_the_metric(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    runtime, _, table = await logged_win(bus, start_service, service_env)
    short = pointer(table, len(table.records) - 2)
    await hand_ended(bus, short)
    rejected = await stored(bus, subjects.REPLAY_REJECTED, events_pb2.ReplayRejected, short.hand_id)
    assert len(rejected) == 1 and "does not end the hand" in rejected[0].reason
    assert metric(runtime, "duel_scoring_replay_rejected_total") >= 1
    assert not await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, short.hand_id, within=0)


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_won_guess_is_published_with_the_hand_for_the_wallet(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    await start_scoring(start_service, service_env)
    table, result = first_hand("duel", "win", guess_enabled=True)
    await write_log(bus, table)
    await hand_ended(bus, pointer(table))
    (scored,) = await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, table.hand_id)
    assert result.guess is not None and scored.HasField("guess")
    assert scored.guess == codec.guess_message(result.guess)


@pytest.mark.integration
@pytest.mark.asyncio
async def test_an_escape_publishes_the_penalty_for_the_wallet(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    await start_scoring(start_service, service_env)
    table = LoggedTable("duel")
    table.deal(seed=11)
    table.play("0 leave")
    await write_log(bus, table)
    await hand_ended(bus, pointer(table))
    penalties = await stored(bus, subjects.ESCAPE_PENALTY, events_pb2.EscapePenalty, table.hand_id)
    assert [(p.escaper_player_id, p.opponent_player_id, p.amount) for p in penalties] == [
        ("alice", "bob", 640)
    ]
    # For the ratings: the profile, and the players in seat order (an escape is the escaper's loss).
    assert (penalties[0].profile, list(penalties[0].player_ids)) == (rules_pb2.PROFILE_DUEL, ["alice", "bob"])


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_hand_without_a_log_is_refused_and_garbage_is_dropped(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    config = ScoringConfig.from_env({**service_env, "SCORING_LOG_WAIT_DELIVERIES": "1"})
    runtime = await start_service(SCORING, config)
    await bus.publish(subjects.HAND_ENDED, b"\x0a\x05ab", msg_id=f"garbage-{secrets.token_hex(4)}")
    table, _ = first_hand("duel", "win")  # played, but its log never reaches NATS
    await hand_ended(bus, pointer(table))
    rejected = await stored(bus, subjects.REPLAY_REJECTED, events_pb2.ReplayRejected, table.hand_id)
    assert len(rejected) == 1 and "before" in rejected[0].reason
    assert metric(runtime, "duel_scoring_malformed_events_total") >= 1
