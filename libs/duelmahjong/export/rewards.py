"""A seat's reward for a hand: the prestige the wallet moved for it by the hand's result, in 1番.

Read from the archived hand's settlement *as applied* (``ArchivedHand.settlement``: every posting of
the hand's ledger transaction, after the carry caps), not computed again: the postings of the hand's
transfer (``HAND_TRANSFER``) and escape penalty (``ESCAPE_PENALTY``) on the seat's player's account,
divided by the prestige of 1番 (the room's fan rate). Fees, exchanges, items and guesses are left
out: they are the room's prices, not the hand's result. So a reward is the fan the hand was worth times
the pairing's multipliers (T7), less where a carry capped it; 0 for a drawn hand.

A hand whose settlement has not reached the archive yet, or a void hand (nothing was scored), has no
reward: :func:`seat_rewards` answers None and the exporter leaves the hand out.
"""

from __future__ import annotations

from duelmahjong.v1 import archive_pb2, rules_pb2

RESULT_REASONS = frozenset({rules_pb2.POSTING_REASON_HAND_TRANSFER, rules_pb2.POSTING_REASON_ESCAPE_PENALTY})


def player_account(player_id: str) -> str:
    """The ledger account of a player, as postings name it."""
    return f"player:{player_id}"


def fan_rate(replay: archive_pb2.Replay) -> int:
    """The prestige of 1番 in the hand's room (the hand's multipliers, else its rules)."""
    return replay.multipliers.fan_rate or replay.rules.fan_rate


def seat_rewards(replay: archive_pb2.Replay) -> tuple[float, float] | None:
    """Each seat's reward (SEAT_FIRST, SEAT_SECOND) in 1番, or None while the hand has none."""
    result = replay.result
    rate = fan_rate(replay)
    if not result.settled or not result.HasField("settlement") or rate <= 0:
        return None
    if result.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID:
        return None
    players = {player.seat: player.player_id for player in replay.players}
    moved = []
    for seat in (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND):
        account = player_account(players.get(seat, ""))
        moved.append(
            sum(
                posting.amount
                for posting in result.settlement.postings
                if posting.account == account and posting.reason in RESULT_REASONS
            )
        )
    return moved[0] / rate, moved[1] / rate
