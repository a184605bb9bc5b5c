"""Scoring re-verifies a hand by replaying the table's write-ahead log (issue 6).

The tables here are engine tables that keep their log laid out as the table service writes it (the
contract: events.proto ``TableEventAppended``, server_state.proto ``TableLogRecord``).

Sequence 1 is ``table_opened``; each hand starts with a ``HandBegun`` record followed by its engine
events; each applied action is an ``ActionApplied`` record followed by the events it produced. The
``HandResult`` of a finished hand is what the table publishes in ``HandEnded``.
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
from services.scoring.core import ScoringCore
from services.scoring.main import SPEC as SCORING
from services.scoring.replay import LogIncomplete, LogRecord, ReplayMismatch, verify_hand

SEATS = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)
_TASKS = {name: number for number, name in codec.TASK_KINDS.items()}


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


def hand_result(table: LoggedTable, result: Outcome) -> rules_pb2.HandResult:
    """The ``HandResult`` of the hand just finished, as the table publishes it."""
    message = rules_pb2.HandResult(
        table_id=table.table_id,
        hand_id=table.hand_id,
        hand_number=result.hand,
        room_id="room-test",
        rules=table.rules,
        players=table.players,
        dealer=SEATS[result.dealer],
        outcome={"win": 1, "drawn": 2, "escape": 3}[result.termination],
        winner=SEATS[result.winner] if result.winner >= 0 else 0,
        escaper=SEATS[result.escaper] if result.escaper >= 0 else 0,
        multipliers=rules_pb2.Multipliers(
            negotiated=result.negotiated, progressive=result.progressive, fan_rate=table.rules.fan_rate
        ),
        last_sequence=len(table.records),
    )
    if result.win is not None:
        message.description.CopyFrom(description_message(result.win.description))
    erren = result.erren
    if erren is None:
        return message
    message.doubling.start_doubled.extend(SEATS[s] for s, chose in enumerate(erren.doubling) if chose)
    message.doubling.win_declines = erren.win_doublings
    task = erren.task
    if task:
        message.task.CopyFrom(
            rules_pb2.HandTask(
                kind=_TASKS[task["kind"]],
                pattern=contract.pattern_enum(task["pattern"]) if task.get("pattern") else 0,
                multiplier=task["multiplier"],
                completed_by_winner=erren.task_completed,
            )
        )
    return message


def description_message(description: dict[str, Any]) -> rules_pb2.HandDescription:
    context = dict(description.get("context", {}))
    message = rules_pb2.HandDescription(
        profile=contract.PROFILES[description["profile"]],
        concealed=description["concealed"],
        win_tile=description["win_tile"],
        self_drawn=bool(description.get("self_drawn")),
    )
    for meld in description.get("melds", []):
        message.melds.add(kind=contract.MELD_KINDS[meld["kind"]], tiles=meld["tiles"])
    out = message.context
    for key, value in context.items():
        if key in ("seat_wind", "round_wind"):
            setattr(out, key, contract.WINDS[value])
        elif key in ("flowers", "revealed_bonus_tiles"):
            setattr(out, key, "".join(value))
        elif key == "first_turn_win":
            out.first_turn_win = rules_pb2.FirstTurnWin.Value(f"FIRST_TURN_WIN_{value.upper()}")
        else:
            setattr(out, key, bool(value))
    return message


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


def edited(result: rules_pb2.HandResult, change: Any) -> rules_pb2.HandResult:
    copy = rules_pb2.HandResult()
    copy.CopyFrom(result)
    change(copy)
    return copy


# --- replay, in process --------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_bot_hands_replay_to_their_results_hand_after_hand(profile: str) -> None:
    table = LoggedTable(profile)
    for number in range(1, 4):
        result = bot_hand(table, seed=100 + number)
        claim = codec.hand_claim(hand_result(table, result))
        replayed = verify_hand(records_of(table), claim)
        assert replayed.outcome == result
        scored = ScoringCore().score(claim, minimum_fan=replayed.settings.effective_minimum_fan)
        if result.win is not None:
            assert scored.evaluation is not None
            assert scored.evaluation.total_fan == result.win.total_fan
        if profile == "duel":  # T7: the progressive multiplier doubles every hand of the pairing
            assert claim.progressive == 2 ** (number - 1)


def test_a_hand_dealt_with_the_t6_grand_shift_item_replays() -> None:
    table = LoggedTable("duel")
    result = bot_hand(table, seed=3, items=({"qiankun": 2}, {}), qiankun=(0,))  # 乾坤大挪移 for seat 0
    verify_hand(records_of(table), codec.hand_claim(hand_result(table, result)))


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
    assert verify_hand(records_of(table), codec.hand_claim(hand_result(table, result))).outcome == result


def test_a_changed_win_tile_is_refused() -> None:
    table, result = first_hand("duel", "win")
    genuine = hand_result(table, result)
    other = "1z" if genuine.description.win_tile != "1z" else "2z"
    tampered = edited(genuine, lambda r: setattr(r.description, "win_tile", other))
    with pytest.raises(ReplayMismatch, match="description"):
        verify_hand(records_of(table), codec.hand_claim(tampered))


def test_a_swapped_winner_is_refused() -> None:
    table, result = first_hand("duel", "win")
    loser = SEATS[result.loser]
    tampered = edited(hand_result(table, result), lambda r: setattr(r, "winner", loser))
    with pytest.raises(ReplayMismatch, match="winner"):
        verify_hand(records_of(table), codec.hand_claim(tampered))


def test_a_rewritten_log_event_is_refused_at_its_sequence() -> None:
    table, result = first_hand("duel", "win")
    discard = next(r for r in table.records if r.record.engine_event.kind == "discarded")
    text = discard.record.engine_event.canonical_json
    tile = json.loads(text)["public"]["tile"]
    swapped = "9m" if tile != "9m" else "1m"
    discard.record.engine_event.canonical_json = text.replace(f'"tile":"{tile}"', f'"tile":"{swapped}"')
    with pytest.raises(ReplayMismatch) as refused:
        verify_hand(records_of(table), codec.hand_claim(hand_result(table, result)))
    assert refused.value.sequence == discard.sequence


def test_a_log_missing_an_action_is_refused() -> None:
    table, result = first_hand("duel", "win")
    claim = codec.hand_claim(hand_result(table, result))
    records = records_of(table)
    action = next(r for r in records if r.action and "discard" in r.action)
    kept = [r for r in records if r is not action]
    renumbered = [dataclasses.replace(r, sequence=n) for n, r in enumerate(kept, start=1)]
    claim = dataclasses.replace(claim, last_sequence=len(renumbered))
    with pytest.raises(ReplayMismatch):
        verify_hand(renumbered, claim)


def test_a_carry_other_than_the_hand_began_with_is_refused() -> None:
    table, result = first_hand("duel", "win")
    tampered = edited(hand_result(table, result), lambda r: setattr(r.players[0], "carry", 10**9))
    with pytest.raises(ReplayMismatch, match="players"):
        verify_hand(records_of(table), codec.hand_claim(tampered))


def test_a_log_short_of_last_sequence_is_incomplete_not_refused() -> None:
    table, result = first_hand("duel", "win")
    claim = codec.hand_claim(hand_result(table, result))
    with pytest.raises(LogIncomplete):
        verify_hand(records_of(table)[:-3], claim)


def test_escape_mid_hand_replays_and_costs_the_t10_h3_penalty() -> None:
    table = LoggedTable("duel", players=(("alice", 5000), ("bob", 300)))
    table.deal(seed=7)
    for seat in (0, 1):
        table.play(f"{seat} exchange []")
    table.play("1 leave")  # T10: leaving during a hand is escape
    result = table.engine.outcome
    assert result is not None and result.termination is Termination.ESCAPE
    claim = codec.hand_claim(hand_result(table, result))
    verify_hand(records_of(table), claim)
    scored = ScoringCore().score(claim)
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
    claim = codec.hand_claim(hand_result(table, result))
    verify_hand(records_of(table), claim)
    settlement = codec.settlement_message(ScoringCore().score(claim).settlement)
    assert settlement.fan_amount == settlement.transfer.amount == 88 * 4 * 10
    assert (settlement.doubling.base_fan, settlement.doubling.s, settlement.total_fan) == (88, 4, 352)
    assert (settlement.transfer.from_player_id, settlement.fee) == ("bob", 0)


def test_a_drawn_hand_moves_nothing() -> None:
    table, result = first_hand("erren", "drawn")
    claim = codec.hand_claim(hand_result(table, result))
    verify_hand(records_of(table), claim)
    settlement = codec.settlement_message(ScoringCore().score(claim).settlement)
    assert not settlement.HasField("transfer") and not settlement.postings


@functools.cache
def _logged_pair(profile: str) -> tuple[tuple[LogRecord, ...], Any]:
    table = LoggedTable(profile)
    bot_hand(table, seed=5)
    result = bot_hand(table, seed=6)  # the second hand: a log with a hand before it
    return tuple(records_of(table)), codec.hand_claim(hand_result(table, result))


@settings(max_examples=30, deadline=None)
@given(
    profile=st.sampled_from(["duel", "erren"]),
    pick=st.integers(0, 10**6),
    how=st.sampled_from(["swap", "drop"]),
)
def test_any_reordered_or_dropped_event_of_the_hand_is_refused(profile: str, pick: int, how: str) -> None:
    records, claim = _logged_pair(profile)
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
        claim = dataclasses.replace(claim, last_sequence=claim.last_sequence - 1)
    with pytest.raises(ReplayMismatch):
        verify_hand(log, claim)


# --- the service on real NATS --------------------------------------------------------------------------
async def write_log(bus: Bus, table: LoggedTable) -> None:
    subject = subjects.table_log_subject(table.table_id)
    for record in table.records:
        await bus.publish(subject, record.SerializeToString(), msg_id=record.envelope.event_id)


HAND_ENDED_AT = 1_790_000_000  # the tests' hands all end at this Unix time


async def hand_ended(bus: Bus, result: rules_pb2.HandResult, event_id: str = "") -> None:
    event = events_pb2.HandEnded(
        envelope=events_pb2.EventEnvelope(
            event_id=event_id or f"hand_ended:{result.hand_id}", occurred_at=Timestamp(seconds=HAND_ENDED_AT)
        ),
        table_id=result.table_id,
        hand_id=result.hand_id,
        result=result,
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
def service_env(service_env: dict[str, str], database_url: str) -> dict[str, str]:
    """Scoring keeps its archive in a database of its own: this test's."""
    return {**service_env, "SCORING_DATABASE_URL": database_url}


async def start_scoring(start_service: Any, service_env: dict[str, str]) -> Any:
    return await start_service(SCORING, ScoringConfig.from_env(service_env))


async def logged_win(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> tuple[Any, dict[str, Any], rules_pb2.HandResult]:
    """A running scoring service and a won duel hand whose log is on NATS (not yet ended)."""
    runtime = await start_scoring(start_service, service_env)
    table, result = first_hand("duel", "win")
    await write_log(bus, table)
    return runtime, result, hand_result(table, result)


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_good_hand_is_scored_and_published_once(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    runtime, result, genuine = await logged_win(bus, start_service, service_env)
    await hand_ended(bus, genuine)
    await hand_ended(bus, genuine, event_id="hand_ended:redelivered")  # a duplicate is harmless
    scored = await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, genuine.hand_id)
    await asyncio.sleep(0.5)  # room for a second, wrongly published settlement
    scored = await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, genuine.hand_id)
    assert len(scored) == 1
    event = scored[0]
    assert event.envelope.event_id == f"scoring:hand_scored:{genuine.hand_id}"
    assert event.hand_ended_at.seconds == HAND_ENDED_AT  # carried for the wallet's settlement lag
    assert result.win is not None
    fan = result.win.total_fan
    assert event.evaluation.total_fan == fan
    winner, loser = genuine.players[result.winner], genuine.players[result.loser]
    assert event.settlement.transfer.to_player_id == winner.player_id
    assert event.settlement.transfer.amount == fan * 1 * 1 * 10  # H1 with N = 10, uncapped as scored
    assert event.settlement.transfer.from_player_id == loser.player_id
    assert not event.settlement.postings  # what moves is the wallet's to say (SettlementApplied)
    assert list(event.player_ids) == [p.player_id for p in genuine.players]  # who owes the fee
    assert event.profile == rules_pb2.PROFILE_DUEL  # the ratings the hand moves
    # This service verified and scored the hand. The redelivery may be taken by another test's scoring
    # on the same durable consumer (the suite shares one NATS): that it published nothing twice is
    # the check above.
    assert metric(runtime, 'duel_scoring_hands_scored_total{outcome="win",profile="duel"}') >= 1


@pytest.mark.integration
@pytest.mark.asyncio
async def test_a_tampered_result_is_refused_with_the_event_and_the_metric(
    bus: Bus, start_service: Any, service_env: dict[str, str]
) -> None:
    runtime, _, genuine = await logged_win(bus, start_service, service_env)
    other = "1z" if genuine.description.win_tile != "1z" else "2z"
    await hand_ended(bus, edited(genuine, lambda r: setattr(r.description, "win_tile", other)))
    rejected = await stored(bus, subjects.REPLAY_REJECTED, events_pb2.ReplayRejected, genuine.hand_id)
    assert len(rejected) == 1 and "win_tile" in rejected[0].reason
    assert metric(runtime, "duel_scoring_replay_rejected_total") >= 1
    assert not await stored(bus, subjects.HAND_SCORED, events_pb2.HandScored, genuine.hand_id, within=0)


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
    escaped = hand_result(table, table.engine.outcome or {})
    await hand_ended(bus, escaped)
    penalties = await stored(bus, subjects.ESCAPE_PENALTY, events_pb2.EscapePenalty, escaped.hand_id)
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
    table, result = first_hand("duel", "win")  # played, but its log never reaches NATS
    unlogged = hand_result(table, result)
    await hand_ended(bus, unlogged)
    rejected = await stored(bus, subjects.REPLAY_REJECTED, events_pb2.ReplayRejected, unlogged.hand_id)
    assert len(rejected) == 1 and "before" in rejected[0].reason
    assert metric(runtime, "duel_scoring_malformed_events_total") >= 1
