"""A finished hand's decisions, each encoded on the table as it stood: a ``Replay`` played again.

The hand is dealt again from its revealed seed (as ``duel verify`` deals it) and every decision of the
replay is applied in order; before each decision of a wanted seat the encoder sees the table, the seat
and the engine action. Only the decisions are taken from the replay: every event between them is the
engine's own, so a record never reads the replay's state, which shows both hands face up.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from duelmahjong.engine.errors import EngineError
from duelmahjong.export.encoding import DecisionEncoder
from duelmahjong.platform.errors import DomainError
from duelmahjong.replay.stepping import table_before_hand
from duelmahjong.replay.tables import deal_items
from duelmahjong.v1 import archive_pb2, rules_pb2
from duelmahjong.views import codec

_WIND_NUMBERS = {
    rules_pb2.WIND_EAST: 0,
    rules_pb2.WIND_SOUTH: 1,
    rules_pb2.WIND_WEST: 2,
    rules_pb2.WIND_NORTH: 3,
}


class HandNotReplayable(Exception):
    """The replay cannot be played through the engine (the message says where and why)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of one seat: ``number`` counts the seat's decisions in the hand from 0; ``step``
    is the replay step that holds it; ``fields`` are the encoder's."""

    seat: int
    number: int
    step: int
    origin: archive_pb2.DecisionOrigin.ValueType
    fields: dict[str, Any]


def decisions(
    replay: archive_pb2.Replay, seats: Collection[int], encoder: DecisionEncoder
) -> Iterator[Decision]:
    """Every decision of ``seats`` (engine seats 0, 1) in the hand, in order, encoded by ``encoder``."""
    try:
        settings = codec.room_settings(replay.rules, replay.multipliers.negotiated)
    except DomainError as err:
        raise HandNotReplayable(f"hand {replay.hand_id}: its rules are not a room's: {err}") from None
    table = table_before_hand(
        settings, replay.hand_number, codec.seat_index(replay.dealer), _WIND_NUMBERS.get(replay.round_wind, 0)
    )
    counts, grand_shift = deal_items(replay.deal)
    try:
        table.start_hand(
            int.from_bytes(replay.fairness.seed, "big"),
            salt=replay.fairness.salt,
            items=counts,
            qiankun=grand_shift,
        )
    except EngineError as err:
        raise HandNotReplayable(f"hand {replay.hand_id} cannot be dealt from its seed: {err}") from None
    numbers = [0, 0]
    for step in replay.steps:
        if not step.HasField("decision"):
            continue
        seat = codec.seat_index(step.decision.seat)
        try:
            action = codec.decode_action(step.decision.action, seat, table.legal_actions(seat))
        except (DomainError, EngineError, ValueError) as err:
            raise HandNotReplayable(f"hand {replay.hand_id}, step {step.index}: {err}") from None
        if seat in seats:
            yield Decision(
                seat, numbers[seat], step.index, step.decision.origin, encoder(table, seat, action)
            )
        if seat in (0, 1):
            numbers[seat] += 1
        try:
            table.apply(action)
        except EngineError as err:
            raise HandNotReplayable(
                f"hand {replay.hand_id}, step {step.index}: {action} is not legal there: {err}"
            ) from None
