"""The archive's rows as the contract's messages (archive.proto MatchSummary, ArchivedHand).

What a hand moved is summed from every posting of its transactions (its own, its exchanges', items'
and guesses') on each player's account. A pairing's ``result`` weighs only what passed between the
two players (hand transfers and escape penalties), so a pairing of drawn hands is EVEN though both
paid their fees; ``prestige_moved`` counts everything, fees included.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.v1 import archive_pb2, play_pb2, rules_pb2, wallet_pb2
from services.scoring.archive_facts import ArchivedPlayer
from services.scoring.archive_store import HandRow, PairingRow

_BETWEEN_PLAYERS = frozenset(
    {rules_pb2.POSTING_REASON_HAND_TRANSFER, rules_pb2.POSTING_REASON_ESCAPE_PENALTY}
)
_OTHER_OUTCOMES = frozenset({archive_pb2.ARCHIVED_OUTCOME_ESCAPE, archive_pb2.ARCHIVED_OUTCOME_VOID})


def account(player_id: str) -> str:
    """The ledger's account name of a player (rules.proto Posting.account)."""
    return f"player:{player_id}"


def _stamp(when: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


def _player(player: ArchivedPlayer) -> play_pb2.TablePlayer:
    return play_pb2.TablePlayer(
        seat=player.seat, player_id=player.player_id, display_name=player.display_name
    )


def moved_by(hand: HandRow, player_id: str, reasons: frozenset[int] | None = None) -> int:
    """``player_id``'s net prestige change by ``hand`` (only postings of ``reasons``, if given)."""
    name = account(player_id)
    return sum(
        posting.amount
        for transaction in hand.transactions
        for posting in transaction.postings
        if posting.account == name and (reasons is None or posting.reason in reasons)
    )


def ratings_of(hand: HandRow) -> list[wallet_pb2.RatingChange]:
    """Both seats' rating changes by ``hand``, as its own transaction applied them (SEAT_FIRST first;
    none for a void hand, or before the wallet's answer is archived)."""
    if hand.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID:
        return []
    own = next((t for t in hand.transactions if t.hand_transaction and t.ratings), None)
    changes = [wallet_pb2.RatingChange.FromString(raw) for raw in own.ratings] if own else []
    return sorted(changes, key=lambda change: change.seat)


def rating_change(hands: Sequence[HandRow], player_id: str) -> wallet_pb2.RatingChange | None:
    """``player_id``'s rating before the first rated hand of ``hands`` (oldest first) and after the
    last; None when none of them is rated."""
    mine = [c for hand in hands for c in ratings_of(hand) if c.player_id == player_id]
    if not mine:
        return None
    return wallet_pb2.RatingChange(
        seat=mine[0].seat, player_id=player_id, before=mine[0].before, after=mine[-1].after
    )


def archived_hand(hand: HandRow, pairing: PairingRow) -> archive_pb2.ArchivedHand:
    message = archive_pb2.ArchivedHand(
        hand_id=hand.hand_id,
        pairing_id=hand.pairing_id,
        table_id=hand.table_id,
        hand_number=hand.hand_number,
        outcome=hand.outcome,
        winner=hand.winner,
        escaper=hand.escaper,
        moved=[
            archive_pb2.SeatMovement(seat=p.seat, player_id=p.player_id, amount=moved_by(hand, p.player_id))
            for p in pairing.players
        ],
        started_at=_stamp(hand.started_at),
        ended_at=_stamp(hand.ended_at),
        ratings=ratings_of(hand),
    )
    if hand.evaluation is not None:
        message.evaluation.ParseFromString(hand.evaluation)
    own = [t for t in hand.transactions if t.hand_transaction and t.settlement is not None]
    if own:
        message.settled = True
        message.settlement.ParseFromString(own[0].settlement or b"")
    return message


def match_summary(pairing: PairingRow, hands: Sequence[HandRow], player_id: str) -> archive_pb2.MatchSummary:
    """``pairing`` as seen by ``player_id`` (one of its players; else by SEAT_FIRST)."""
    seats = list(pairing.players)
    me = next((p for p in seats if p.player_id == player_id), seats[0])
    opponent = next(p for p in seats if p is not me)
    won = sum(1 for h in hands if h.outcome == archive_pb2.ARCHIVED_OUTCOME_WIN and h.winner == me.seat)
    lost = sum(1 for h in hands if h.outcome == archive_pb2.ARCHIVED_OUTCOME_WIN and h.winner != me.seat)
    between = sum(moved_by(h, me.player_id, _BETWEEN_PLAYERS) for h in hands)
    result = (
        archive_pb2.MATCH_RESULT_WON
        if between > 0
        else archive_pb2.MATCH_RESULT_LOST
        if between < 0
        else archive_pb2.MATCH_RESULT_EVEN
    )
    summary = archive_pb2.MatchSummary(
        pairing_id=pairing.pairing_id,
        table_id=pairing.table_id,
        room_id=pairing.room_id,
        profile=pairing.profile,
        player=_player(me),
        opponent=_player(opponent),
        opponent_is_bot=opponent.is_bot,
        hands=len(hands),
        hands_won=won,
        hands_lost=lost,
        hands_drawn=sum(1 for h in hands if h.outcome == archive_pb2.ARCHIVED_OUTCOME_DRAWN),
        hands_other=sum(1 for h in hands if h.outcome in _OTHER_OUTCOMES),
        prestige_moved=sum(moved_by(h, me.player_id) for h in hands),
        result=result,
        started_at=_stamp(pairing.started_at),
        private_table=pairing.private_table,
    )
    change = rating_change(hands, me.player_id)
    if change is not None:
        summary.rating_change.CopyFrom(change)
    if hands:
        summary.last_hand_at.CopyFrom(_stamp(max(h.ended_at for h in hands)))
    return summary
