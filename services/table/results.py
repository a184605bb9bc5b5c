"""What a hand's play charges a player as it happens, for the wallet: erren's paid exchanges (T4).

The hand's own result travels as no message of the table's: ``HandEnded`` points into the table's log,
and scoring turns that log into the result.
"""

from __future__ import annotations

from duelmahjong.engine.events import Exchanged
from duelmahjong.v1 import events_pb2


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
