"""The one boundary between the contract's messages and scoring's domain values.

Inbound: a ``HandDescription`` becomes the docs/decisions.md §7 JSON the rules library validates; a
``HandResult`` becomes a :class:`~services.scoring.core.HandClaim` (contract invariants checked here,
so the core sees only well-formed claims); the table's ``TableEventAppended`` records become
:class:`~services.scoring.replay.LogRecord` values. Outbound: evaluations, catalogue rows and
settlements as messages. Contract seats ``SEAT_FIRST``/``SEAT_SECOND`` are engine seats 0/1.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from duelmahjong.contract import (
    CONTEXT_FLAGS,
    FIRST_TURN_WIN_WORDS,
    MELD_KIND_WORDS,
    PROFILE_WORDS,
    PROFILES,
    WIND_WORDS,
    enum_words,
    pattern_enum,
)
from duelmahjong.engine.actions import GUESS_BIG
from duelmahjong.engine.outcome import Guess
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.rules.patterns import Catalogue
from duelmahjong.v1 import events_pb2, rules_pb2, scoring_pb2, server_state_pb2
from services.scoring.core import (
    MAX_FAN_RATE,
    MAX_PRESTIGE,
    Breakdown,
    HandClaim,
    SeatClaim,
    SettlementFigures,
    TaskClaim,
)
from services.scoring.replay import HandBegunFacts, HandPointer, LogRecord
from services.scoring.tablelog import CACHED_RECORDS, LoggedRecord, logged_records

SEAT_ENUMS: dict[int, rules_pb2.Seat.ValueType] = {0: rules_pb2.SEAT_FIRST, 1: rules_pb2.SEAT_SECOND}
SEATS: dict[int, int] = {number: seat for seat, number in SEAT_ENUMS.items()}
OUTCOMES = enum_words(rules_pb2.HandOutcome.DESCRIPTOR, "HAND_OUTCOME_")  # win, drawn, escape
TASK_KINDS = enum_words(rules_pb2.TaskKind.DESCRIPTOR, "TASK_KIND_") | {
    rules_pb2.TASK_KIND_DOUBLING: "double"  # the engine's name of the 加倍 task (T8)
}


def profile_name(profile: int) -> str:
    name = PROFILE_WORDS.get(profile)
    if name is None:
        raise InvalidArgument("a profile is required: PROFILE_DUEL or PROFILE_ERREN")
    return name


def pattern_name(number: rules_pb2.PatternId.ValueType) -> str:
    # proto3 enums are open: a number this build does not know is bad input, not a crash
    if number not in rules_pb2.PatternId.values():
        raise InvalidArgument(f"unknown pattern id {number}")
    return rules_pb2.PatternId.Name(number).removeprefix("PATTERN_ID_").lower()


# --- inbound ------------------------------------------------------------------------------------------
def description_json(hand: rules_pb2.HandDescription) -> dict[str, Any]:
    """docs/decisions.md §7 JSON of a described hand; the rules library validates the rest."""
    melds = []
    for index, meld in enumerate(hand.melds):
        kind = MELD_KIND_WORDS.get(meld.kind)
        if kind is None:
            raise InvalidArgument(f"melds[{index}] needs a kind (MELD_KIND_CHI … MELD_KIND_ADDED_KONG)")
        melds.append({"kind": kind, "tiles": meld.tiles})
    source = hand.context
    context: dict[str, Any] = {flag: True for flag in CONTEXT_FLAGS if getattr(source, flag)}
    for key in ("seat_wind", "round_wind"):
        wind = getattr(source, key)
        if wind:
            if wind not in WIND_WORDS:
                raise InvalidArgument(f"context.{key} {wind} is not a wind")
            context[key] = WIND_WORDS[wind]
    for key in ("flowers", "revealed_bonus_tiles"):
        if getattr(source, key):
            context[key] = getattr(source, key)
    if source.first_turn_win:
        context["first_turn_win"] = FIRST_TURN_WIN_WORDS.get(source.first_turn_win, "unknown")
    out: dict[str, Any] = {
        "profile": profile_name(hand.profile),
        "concealed": hand.concealed,
        "melds": melds,
        "win_tile": hand.win_tile,
        "self_drawn": hand.self_drawn,
    }
    if context:
        out["context"] = context
    return out


def _bounded(what: str, value: int, lowest: int, highest: int) -> None:
    """An amount of the contract within its bounds (rules.proto), else INVALID_ARGUMENT saying so."""
    if not lowest <= value <= highest:
        raise InvalidArgument(f"{what} must be {lowest:,} to {highest:,}, got {value:,}")


def _seat(value: int, what: str, *, required: bool) -> int:
    if value in SEATS:
        return SEATS[value]
    if required or value != rules_pb2.SEAT_UNSPECIFIED:
        raise InvalidArgument(f"{what} must be SEAT_FIRST or SEAT_SECOND")
    return -1


def hand_claim(result: rules_pb2.HandResult) -> HandClaim:
    """The claim a ``HandResult`` makes, after the contract's invariants (rules.proto)."""
    outcome = OUTCOMES.get(result.outcome)
    if outcome is None:
        raise InvalidArgument("the hand result needs an outcome (win, drawn or escape)")
    if len(result.players) != 2:
        raise InvalidArgument(f"a hand result names exactly two players, got {len(result.players)}")
    seats: dict[int, SeatClaim] = {}
    for player in result.players:
        seat = _seat(player.seat, "players[].seat", required=True)
        if seat in seats:
            raise InvalidArgument("the two players must sit in different seats")
        if not player.player_id:
            raise InvalidArgument("every player of a hand result needs a player_id")
        _bounded("players[].carry", player.carry, 0, MAX_PRESTIGE)
        seats[seat] = SeatClaim(player.player_id, player.carry)
    winner = _seat(result.winner, "winner", required=outcome == "win")
    escaper = _seat(result.escaper, "escaper", required=outcome == "escape")
    if (outcome == "win") != result.HasField("description"):
        raise InvalidArgument("a won hand, and only a won hand, carries a description")
    if outcome != "win" and winner >= 0:
        raise InvalidArgument(f"a {outcome} hand has no winner")
    if outcome != "escape" and escaper >= 0:
        raise InvalidArgument(f"a {outcome} hand has no escaper")
    if outcome == "win" and profile_name(result.description.profile) != profile_name(result.rules.profile):
        raise InvalidArgument("the description's profile differs from the room's")
    doubled = tuple(
        sorted(_seat(s, "doubling.start_doubled", required=True) for s in result.doubling.start_doubled)
    )
    if len(set(doubled)) != len(doubled):
        raise InvalidArgument("doubling.start_doubled names a seat twice (each seat chooses 开始加倍 once)")
    fan_rate = result.multipliers.fan_rate or result.rules.fan_rate
    _bounded("multipliers.fan_rate (or rules.fan_rate)", fan_rate, 1, MAX_FAN_RATE)
    _bounded("rules.fee", result.rules.fee, 0, MAX_PRESTIGE)
    task = None
    if result.HasField("task") and result.task.kind:
        task = TaskClaim(
            kind=TASK_KINDS.get(result.task.kind, "unknown"),
            pattern=pattern_name(result.task.pattern) if result.task.pattern else "",
            multiplier=result.task.multiplier,
            completed=result.task.completed_by_winner,
        )
    return HandClaim(
        table_id=result.table_id,
        hand_id=result.hand_id,
        hand_number=result.hand_number,
        room_id=result.room_id,
        profile=profile_name(result.rules.profile),
        outcome=outcome,
        dealer=_seat(result.dealer, "dealer", required=False),
        winner=winner,
        escaper=escaper,
        description=description_json(result.description) if outcome == "win" else None,
        negotiated=result.multipliers.negotiated or 1,
        progressive=result.multipliers.progressive or 1,
        fan_rate=fan_rate,
        players=(seats[0], seats[1]),
        start_doubled=doubled,
        win_declines=result.doubling.win_declines,
        task=task,
        minimum_fan=result.rules.minimum_fan,
        last_sequence=result.last_sequence,
        fee=result.rules.fee if outcome != "escape" else 0,  # H1: each finished hand costs the fee
    )


def _hand_begun(begun: server_state_pb2.HandBegun) -> HandBegunFacts:
    players = {SEATS.get(p.seat, -1): (p.player_id, p.carry) for p in begun.players}
    return HandBegunFacts(
        hand_number=begun.hand_number,
        profile=PROFILE_WORDS.get(begun.rules.profile, ""),
        fan_rate=begun.multipliers.fan_rate or begun.rules.fan_rate,
        players=tuple(players.get(seat, ("", 0)) for seat in (0, 1)),
        fee=begun.rules.fee,
    )


def log_records(appended: events_pb2.TableEventAppended) -> list[LogRecord]:
    """The write-ahead records of one log message: ``record`` at ``sequence``, then ``following`` at
    the next sequences (the table writes all one applied action logs as one message)."""
    return replay_records(logged_records(appended))


def log_record(
    appended: events_pb2.TableEventAppended,
    record: server_state_pb2.TableLogRecord | None = None,
    sequence: int | None = None,
) -> LogRecord:
    """One write-ahead record as replay reads it (an unreadable one is kept, and refused by replay):
    the message's own ``record`` unless another of its records and that one's sequence are given."""
    record = appended.record if record is None else record
    sequence = appended.sequence if sequence is None else sequence
    return _log_record(LoggedRecord(sequence, appended.table_id, appended.hand_id, record))


def hand_pointer(event: events_pb2.HandEnded) -> HandPointer:
    """Where a ``HandEnded`` points: its table, its hand, and the log position where the hand ends (from
    a producer that predates ``log_position``, its result's ``last_sequence``)."""
    result = event.result  # read only for producers that predate log_position
    return HandPointer(
        event.table_id or result.table_id,
        event.hand_id or result.hand_id,
        event.log_position or result.last_sequence,
    )


def replay_records(logged: Sequence[LoggedRecord]) -> list[LogRecord]:
    """A table's records as read back (``tablelog``), as replay reads them."""
    return [_log_record(record) for record in logged]


class ReplayRecords:
    """Tables' records as replay reads them, each converted once: a table's next hand is read as the
    same records and more (``TableLogReader`` keeps what it read and reads on), so only the new ones are
    converted. At most ``limit`` records in all, the least recently read tables dropped first."""

    def __init__(self, limit: int = CACHED_RECORDS) -> None:
        self._tables: OrderedDict[str, list[LogRecord]] = OrderedDict()
        self._kept = 0
        self._limit = limit

    def of(self, table_id: str, logged: Sequence[LoggedRecord]) -> list[LogRecord]:
        known = self._tables.pop(table_id, [])
        self._kept -= len(known)
        # What was converted is reused while it is the same records: a prefix of what is read now.
        reused = min(len(known), len(logged))
        if reused and known[reused - 1].sequence != logged[reused - 1].sequence:
            reused = 0
        converted = known[:reused] + [_log_record(record) for record in logged[reused:]]
        kept = converted if len(converted) >= len(known) else known
        self._tables[table_id] = kept
        self._kept += len(kept)
        while self._kept > self._limit and len(self._tables) > 1:
            _, dropped = self._tables.popitem(last=False)
            self._kept -= len(dropped)
        return converted


def _log_record(logged: LoggedRecord) -> LogRecord:
    # Built in one call (not a base then dataclasses.replace): a hand has a hundred records or more.
    record, sequence, hand_id, table_id = logged.record, logged.sequence, logged.hand_id, logged.table_id
    which = record.WhichOneof("kind")
    if which == "engine_event":
        logged_event = record.engine_event
        return LogRecord(
            sequence, hand_id, table_id, canonical=logged_event.canonical_json, kind=logged_event.kind
        )
    if which == "action_applied":
        return LogRecord(sequence, hand_id, table_id, action=record.action_applied.engine_action or "?")
    if which == "hand_begun":
        return LogRecord(sequence, hand_id, table_id, begun=_hand_begun(record.hand_begun))
    return LogRecord(sequence, hand_id, table_id)


# --- outbound -----------------------------------------------------------------------------------------
def evaluation_message(breakdown: Breakdown) -> rules_pb2.Evaluation:
    evaluation = breakdown.evaluation
    return rules_pb2.Evaluation(
        patterns=[
            rules_pb2.PatternScore(id=pattern_enum(p.id), name_zh=p.name_zh, fan=p.fan)
            for p in evaluation.patterns
        ],
        total_fan=evaluation.total_fan,
        capped=evaluation.capped,
        limit=evaluation.limit,
        meets_minimum=breakdown.meets_minimum,
    )


def guess_message(guess: Guess) -> rules_pb2.GuessStake:
    """T12 猜大小 as the engine rolled it (a guess, never a collect: that rolls nothing)."""
    return rules_pb2.GuessStake(
        guess=rules_pb2.GUESS_BIG if guess.choice == GUESS_BIG else rules_pb2.GUESS_SMALL,
        dice=list(guess.dice or ()),
        won=bool(guess.right),
        payout_multiplier=(guess.factor or 0) if guess.right else 0,
    )


def catalogue_response(catalogue: Catalogue) -> scoring_pb2.GetCatalogueResponse:
    """Every pattern of a profile in catalogue order; a limit hand's fan is its tier (D9)."""
    entries = [
        scoring_pb2.CatalogueEntry(
            id=pattern_enum(p.id),
            name_zh=p.name_zh,
            fan=p.value,
            limit=p.limit_tier is not None,
            excludes=[pattern_enum(e) for e in sorted(p.excludes, key=catalogue.position.__getitem__)],
        )
        for p in catalogue
    ]
    return scoring_pb2.GetCatalogueResponse(profile=PROFILES[catalogue.profile], entries=entries)


def settlement_message(figures: SettlementFigures) -> rules_pb2.Settlement:
    """The settlement as scored (rules.proto): the breakdown, the uncapped transfer (amount =
    fan_amount) and the fee; no postings — what the ledger moves is the wallet's to say."""
    message = rules_pb2.Settlement(
        hand_id=figures.hand_id,
        total_fan=figures.total_fan,
        multipliers=rules_pb2.Multipliers(
            negotiated=figures.negotiated, progressive=figures.progressive, fan_rate=figures.fan_rate
        ),
        fan_amount=figures.fan_amount,
        fee=figures.fee,
    )
    doubling = figures.doubling
    if doubling is not None:
        message.doubling.CopyFrom(
            rules_pb2.DoublingBreakdown(
                base_fan=doubling.base_fan,
                s=doubling.s,
                h=doubling.h,
                t=doubling.t,
                doubled_fan=doubling.doubled_fan,
            )
        )
    if figures.payer:
        message.transfer.CopyFrom(
            rules_pb2.Transfer(
                from_player_id=figures.payer, to_player_id=figures.payee, amount=figures.fan_amount
            )
        )
    return message


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: how replay compares JSON (the engine's ``Event.canonical`` form)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
