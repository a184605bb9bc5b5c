"""The hand's outcome (the engine's :class:`~duelmahjong.engine.outcome.Outcome`) as the contract's
``HandResult``.

``HandEnded`` carries it to scoring, which replays the table's log and compares: so this encoding is
a pure function of the outcome plus the table's facts (ids, room, players, fan rate).
"""

from __future__ import annotations

from typing import Any

from duelmahjong import contract
from duelmahjong.engine.actions import GUESS_BIG
from duelmahjong.engine.events import Exchanged
from duelmahjong.engine.outcome import Outcome
from duelmahjong.v1 import events_pb2, rules_pb2
from duelmahjong.views import codec
from duelmahjong.views.seat_views import OUTCOMES, hand_task


def hand_description(description: dict[str, Any]) -> rules_pb2.HandDescription:
    """§7 JSON of docs/decisions.md (as the engine reports a win) → ``HandDescription`` (shared converter)."""
    return contract.description_message(description)


def hand_result(
    outcome: Outcome,
    *,
    table_id: str,
    hand_id: str,
    room_id: str,
    rules: rules_pb2.RoomRules,
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer],
    last_sequence: int,
) -> rules_pb2.HandResult:
    """The ``HandResult`` scoring verifies and scores (invariants of rules.proto: WIN ⇔ winner and
    description; ESCAPE ⇔ escaper; exactly two players)."""
    message = rules_pb2.HandResult(
        table_id=table_id,
        hand_id=hand_id,
        hand_number=outcome.hand,
        room_id=room_id,
        rules=rules,
        players=list(players),
        dealer=codec.seat_enum(outcome.dealer),
        outcome=OUTCOMES[outcome.termination],
        winner=codec.seat_enum(outcome.winner),
        escaper=codec.seat_enum(outcome.escaper),
        multipliers=rules_pb2.Multipliers(
            negotiated=outcome.negotiated,
            progressive=outcome.progressive,
            fan_rate=rules.fan_rate,
        ),
        last_sequence=last_sequence,
    )
    if outcome.win is not None:
        message.description.CopyFrom(hand_description(outcome.win.description))
    erren = outcome.erren
    if erren is not None:
        message.doubling.CopyFrom(
            rules_pb2.DoublingChoices(
                start_doubled=[codec.seat_enum(seat) for seat, chose in enumerate(erren.doubling) if chose],
                win_declines=erren.win_doublings,
            )
        )
        task = hand_task(erren.task, erren.task_completed)
        if task is not None:
            message.task.CopyFrom(task)
    return message


def exchange_charged(
    event: Exchanged, *, table_id: str, hand_id: str, sequence: int, player_id: str, fee: int
) -> events_pb2.ExchangeCharged | None:
    """erren T4: the paid part of an exchange (the first tile of a hand's exchange is free). One event
    per ``exchanged`` record, keyed by its sequence; ``exchange_number`` is the count exchanged."""
    paid = event.paid
    if paid <= 0 or fee <= 0:
        return None
    return events_pb2.ExchangeCharged(
        table_id=table_id,
        hand_id=hand_id,
        sequence=sequence,
        player_id=player_id,
        exchange_number=event.count,
        amount=paid * fee,
    )


def guess_resolved(
    outcome: Outcome,
    applied: events_pb2.SettlementApplied | None,
    *,
    table_id: str,
    hand_id: str,
    player_id: str,
) -> events_pb2.GuessResolved | None:
    """T12: the winner's 猜大小 on the hand's winnings — the transfer the wallet moved to them
    (``applied``), once it is known; none without the wallet's settlement of the hand."""
    guess = outcome.guess
    if guess is None or guess.dice is None:  # collecting rolls nothing
        return None
    if applied is None or not applied.settlement.HasField("transfer"):
        return None
    return events_pb2.GuessResolved(
        table_id=table_id,
        hand_id=hand_id,
        player_id=player_id,
        guess=rules_pb2.GUESS_BIG if guess.choice == GUESS_BIG else rules_pb2.GUESS_SMALL,
        dice=list(guess.dice),
        won=bool(guess.right),
        payout_multiplier=guess.factor or 0,
        stake=applied.settlement.transfer.amount,
    )
