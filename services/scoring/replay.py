"""Re-verifying a hand by replaying the table's write-ahead log through the engine.

The table appends every engine event (``EngineEventRecord``: the engine's canonical JSON) and every
action it applied (``ActionApplied.engine_action``) to its log before anyone sees their effect. The
engine is deterministic given the hand's seed and the actions (ARCHITECTURE "Randomness"), so:

1. the events *before* the hand are folded into a table (earlier hands were verified when scored);
2. the hand is dealt again from the seed its ``hand_started`` record holds, and every logged action
   is applied again — an action the engine finds illegal refuses the hand;
3. the events this produces must equal the logged ones byte for byte, up to the hand's end;
4. the hand result the engine reaches must be the one claimed (outcome, seats, multipliers, the §7
   description, erren doubling and task), and the players and fan rate those of ``HandBegun``.

Any difference raises :class:`ReplayMismatch` with the first log sequence where they part (0 = at the
end); a log that does not reach ``last_sequence`` yet raises :class:`LogIncomplete` (retry later).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import EngineError
from duelmahjong.engine.events import Event, HandEnded, HandStarted
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.replay.tables import counts_at_deal
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import RulesError

if TYPE_CHECKING:
    from services.scoring.core import HandClaim


class ReplayMismatch(Exception):
    """The log does not replay to the claimed hand. ``sequence``: the first record that differs."""

    def __init__(self, reason: str, sequence: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sequence = sequence


class LogIncomplete(Exception):
    """The log does not (yet) reach the claimed ``last_sequence``: it may still be arriving."""


@dataclass(frozen=True, slots=True)
class HandBegunFacts:
    """What the table's ``HandBegun`` record says beside the engine: the players and the fan rate."""

    hand_number: int
    profile: str
    fan_rate: int
    players: tuple[tuple[str, int], ...]  # (player_id, carry) of seats 0 and 1


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One ``TableEventAppended``: an engine event (``canonical``), an action, or a ``HandBegun``."""

    sequence: int
    hand_id: str
    table_id: str = ""
    canonical: str = ""
    action: str = ""
    begun: HandBegunFacts | None = None


@dataclass(frozen=True, slots=True)
class ReplayedHand:
    """The hand as the engine rebuilt it."""

    settings: RoomSettings
    outcome: Outcome  # the hand's outcome the engine reached
    events: int  # engine events compared


def _event(record: LogRecord) -> Event:
    try:
        return Event.from_json(json.loads(record.canonical))
    except (ValueError, TypeError, EngineError) as err:
        raise ReplayMismatch(
            f"record {record.sequence} is not an engine event: {err}", record.sequence
        ) from None


def checked_records(records: Sequence[LogRecord], claim: HandClaim) -> list[LogRecord]:
    """The table's records 1..``last_sequence``, in order, without gaps or foreign tables."""
    wanted = [r for r in sorted(records, key=lambda r: r.sequence) if r.sequence <= claim.last_sequence]
    if not wanted or wanted[-1].sequence < claim.last_sequence:
        have = wanted[-1].sequence if wanted else 0
        raise LogIncomplete(f"the log of table {claim.table_id} ends at {have}, before {claim.last_sequence}")
    for expected, record in enumerate(wanted, start=1):
        if record.sequence != expected:
            raise ReplayMismatch(f"the log skips or repeats sequence {expected}", record.sequence)
        if record.table_id and record.table_id != claim.table_id:
            raise ReplayMismatch(f"record {expected} belongs to table {record.table_id}", expected)
    return wanted


def verify_hand(records: Sequence[LogRecord], claim: HandClaim) -> ReplayedHand:
    """Replay the hand ``claim`` describes from ``records`` (the table's log); see the module doc."""
    log = checked_records(records, claim)
    events = {r.sequence: _event(r) for r in log if r.canonical}  # each record parsed once
    starts = [sequence for sequence, event in events.items() if isinstance(event, HandStarted)]
    if not starts:
        raise ReplayMismatch("the log up to last_sequence starts no hand")
    start = log[starts[-1] - 1]  # sequences are 1..n without gaps
    prior = [event for sequence, event in events.items() if sequence < start.sequence]
    try:
        table = Table.replay(prior)
    except EngineError as err:
        raise ReplayMismatch(f"the table before the hand does not replay: {err}", start.sequence) from None
    hand = [r for r in log if r.sequence >= start.sequence]
    for record in hand:
        if record.hand_id and record.hand_id != claim.hand_id:
            raise ReplayMismatch(
                f"record {record.sequence} belongs to hand {record.hand_id}", record.sequence
            )
    logged = [r for r in hand if r.canonical]
    produced = _deal_again(table, events[start.sequence], start.sequence)
    for record in hand:
        if record.action:
            produced.extend(_apply(table, record))
    _compare(logged, produced)
    ended = [e for e in produced[: len(logged)] if isinstance(e, HandEnded)]
    if not ended:
        raise ReplayMismatch("the log up to last_sequence does not end the hand")
    outcome = ended[0].outcome
    _check_claim(table.settings, outcome, claim)
    begun = [r.begun for r in log if r.begun is not None and r.hand_id == claim.hand_id]
    if begun:
        _check_begun(begun[-1], claim)
    return ReplayedHand(table.settings, outcome, len(logged))


def _deal_again(table: Table, started: Event, sequence: int) -> list[Event]:
    """Deal the hand from the logged seed, salt, items and 乾坤大挪移 seats (T6)."""
    assert isinstance(started, HandStarted)  # the record verify_hand found starting the hand
    items = counts_at_deal(started)  # the event records the counts after 乾坤大挪移 was spent
    try:
        salt = bytes.fromhex(started.salt or "")  # a hand dealt without one (older logs) has none
        return list(table.start_hand(started.seed, salt=salt, items=items, qiankun=started.qiankun))
    except (EngineError, IndexError, TypeError, ValueError) as err:
        raise ReplayMismatch(f"the hand cannot be dealt again: {err}", sequence) from None


def _apply(table: Table, record: LogRecord) -> list[Event]:
    try:
        action = Action.parse(record.action)
    except (EngineError, ValueError) as err:
        raise ReplayMismatch(
            f"record {record.sequence}: unreadable action {record.action!r}: {err}", record.sequence
        ) from None
    try:
        return list(table.apply(action))
    except EngineError as err:
        raise ReplayMismatch(
            f"record {record.sequence}: {action} is not legal there: {err}", record.sequence
        ) from None


def _compare(logged: list[LogRecord], produced: list[Event]) -> None:
    """The logged events must be exactly the first events the replay produces (byte for byte)."""
    for record, event in zip(logged, produced, strict=False):
        if record.canonical != event.canonical():
            raise ReplayMismatch(
                f"record {record.sequence} logs {_kind(record)!r} where the replay gives {event.kind!r}"
                + ("" if _kind(record) != event.kind else " with other contents"),
                record.sequence,
            )
    if len(logged) > len(produced):
        extra = logged[len(produced)]
        raise ReplayMismatch(
            f"record {extra.sequence} logs an event no logged action produces", extra.sequence
        )


def _kind(record: LogRecord) -> str:
    try:
        return str(json.loads(record.canonical).get("kind", "?"))
    except (ValueError, AttributeError):
        return "?"


def _description(value: Any, whose: str) -> HandDescription:
    try:
        return HandDescription.from_json(value)
    except RulesError as err:
        raise ReplayMismatch(f"the {whose} description is not a valid hand: {err}") from None


def _check_claim(settings: RoomSettings, outcome: Outcome, claim: HandClaim) -> None:
    """The claimed hand result must be what the engine reached."""
    differences = []

    def same(what: str, replayed: Any, claimed: Any) -> None:
        if replayed != claimed:
            differences.append(f"{what}: replay {replayed!r}, claimed {claimed!r}")

    same("profile", settings.profile, claim.profile)
    same("hand number", outcome.hand, claim.hand_number)
    same("outcome", outcome.termination.value, claim.outcome)
    same("dealer", outcome.dealer, claim.dealer)
    same("winner", outcome.winner, claim.winner)
    same("escaper", outcome.escaper, claim.escaper)
    same("negotiated multiplier", outcome.negotiated, claim.negotiated)
    same("progressive multiplier", outcome.progressive, claim.progressive)
    if outcome.win is not None and claim.description is not None:
        replayed = _description(outcome.win.description, "replayed").to_json()
        claimed = _description(claim.description, "claimed").to_json()
        for key in sorted(set(replayed) | set(claimed)):  # name only the keys that differ
            same(f"description {key}", replayed.get(key), claimed.get(key))
    erren = outcome.erren
    if erren is not None:  # erren (T8, H2)
        same(
            "start doublers",
            tuple(s for s, chose in enumerate(erren.doubling) if chose),
            claim.start_doubled,
        )
        same("win declines", erren.win_doublings, claim.win_declines)
        same("task", _task(erren.task or None, erren.task_completed), _task_claim(claim.task))
    if differences:
        raise ReplayMismatch("the hand result differs from the replay: " + "; ".join(differences))


def _task(task: dict[str, Any] | None, completed: bool) -> tuple[str, str, int, bool] | None:
    if not task:
        return None
    return (str(task["kind"]), str(task.get("pattern", "")), int(task.get("multiplier", 0)), completed)


def _task_claim(task: Any) -> tuple[str, str, int, bool] | None:
    return None if task is None else (task.kind, task.pattern, task.multiplier, task.completed)


def _check_begun(begun: HandBegunFacts, claim: HandClaim) -> None:
    """The players, carries and fan rate the hand began with are the ones the result is settled on."""
    claimed = tuple((p.player_id, p.carry) for p in claim.players)
    for what, logged, said in (
        ("hand number", begun.hand_number, claim.hand_number),
        ("profile", begun.profile, claim.profile),
        ("fan rate", begun.fan_rate, claim.fan_rate),
        ("players", begun.players, claimed),
    ):
        if logged != said:
            raise ReplayMismatch(f"{what} differs from the hand's HandBegun record: {logged!r} vs {said!r}")
