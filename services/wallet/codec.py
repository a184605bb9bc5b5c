"""Conversions between the contract (protobuf) and the wallet's domain values, in one place."""

from __future__ import annotations

import time
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.contract import PROFILE_WORDS, PROFILES
from duelmahjong.v1 import rules_pb2, wallet_pb2
from services.wallet.errors import InvalidAmountError
from services.wallet.rating import RatingMove, Skill

_ITEM_PREFIX = "ITEM_KIND_"

# ledger posting purpose -> contract reason
POSTING_REASONS: dict[str, rules_pb2.PostingReason.ValueType] = {
    "hand": rules_pb2.POSTING_REASON_HAND_TRANSFER,
    "fee": rules_pb2.POSTING_REASON_FEE,
    "escape": rules_pb2.POSTING_REASON_ESCAPE_PENALTY,
    "exchange": rules_pb2.POSTING_REASON_EXCHANGE,
    "item": rules_pb2.POSTING_REASON_ITEM,
    "guess": rules_pb2.POSTING_REASON_GUESS,
    "grant": rules_pb2.POSTING_REASON_GRANT,
}


def item_name(kind: rules_pb2.ItemKind.ValueType) -> str:
    """The inventory's name of an item kind: ``ITEM_KIND_GRAND_SHIFT`` -> ``grand_shift``."""
    if kind == rules_pb2.ITEM_KIND_UNSPECIFIED or kind not in rules_pb2.ItemKind.values():
        raise InvalidAmountError(f"unknown item kind {kind}")
    return rules_pb2.ItemKind.Name(kind).removeprefix(_ITEM_PREFIX).lower()


def item_kind(name: str) -> rules_pb2.ItemKind.ValueType:
    return rules_pb2.ItemKind.Value(_ITEM_PREFIX + name.upper())


def timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def now() -> Timestamp:
    """This instant, without a datetime on the way (an event stamp per settlement: it shows)."""
    nanoseconds = time.time_ns()
    return Timestamp(seconds=nanoseconds // 1_000_000_000, nanos=nanoseconds % 1_000_000_000)


def player_account(player_id: str) -> str:
    """The contract's account name of a player (``AccountBalance.account``)."""
    return f"player:{player_id}"


# A hand's postings in one order whatever path wrote or re-read them: fees, then the transfer.
_POSTING_ORDER = {"fee": 0, "hand": 1, "escape": 1}


def posting_messages(postings: tuple[tuple[str, int, str], ...]) -> list[rules_pb2.Posting]:
    """A transaction's entries as messages: fees first, then the transfer, then the rest."""
    ordered = sorted(postings, key=lambda p: (_POSTING_ORDER.get(p[2], 2), p[0], p[1]))
    return [
        rules_pb2.Posting(account=account, amount=amount, reason=POSTING_REASONS[purpose])
        for account, amount, purpose in ordered
    ]


def applied_settlement(
    scored: rules_pb2.Settlement,
    postings: tuple[tuple[str, int, str], ...],
    *,
    payer: str,
    payee: str,
    uncapped: int,
) -> rules_pb2.Settlement:
    """The settlement as applied (rules.proto): scoring's breakdown as it came, with the transfer
    this wallet moved (the HAND_TRANSFER / ESCAPE_PENALTY credit, 0 if a carry was empty), whether a
    carry capped it, and every posting of the hand's ledger transaction."""
    applied = rules_pb2.Settlement()
    applied.CopyFrom(scored)
    applied.ClearField("transfer")
    applied.ClearField("postings")
    applied.postings.extend(posting_messages(postings))
    if payer:
        moved = sum(
            amount
            for account, amount, purpose in postings
            if purpose in ("hand", "escape") and account == player_account(payee) and amount > 0
        )
        applied.transfer.CopyFrom(rules_pb2.Transfer(from_player_id=payer, to_player_id=payee, amount=moved))
        applied.capped_by_carry = moved < uncapped
    else:
        applied.capped_by_carry = False
    return applied


def profile_name(profile: rules_pb2.Profile.ValueType) -> str:
    """The wallet's name of a profile (``duel``, ``erren``); "" for PROFILE_UNSPECIFIED (no rating)."""
    if profile == rules_pb2.PROFILE_UNSPECIFIED:
        return ""
    name = PROFILE_WORDS.get(profile)
    if name is None:
        raise InvalidAmountError(f"unknown profile {profile}")
    return name


def required_profile(profile: rules_pb2.Profile.ValueType) -> str:
    name = profile_name(profile)
    if not name:
        raise InvalidAmountError("a profile is required: PROFILE_DUEL or PROFILE_ERREN")
    return name


def skill_rating(profile: str, skill: Skill) -> wallet_pb2.SkillRating:
    return wallet_pb2.SkillRating(
        profile=PROFILES[profile],
        rating=skill.rating,
        deviation=skill.deviation,
        volatility=skill.volatility,
        hands_rated=skill.hands_rated,
        conservative=skill.conservative,
    )


def rating_change(move: RatingMove) -> wallet_pb2.RatingChange:
    return wallet_pb2.RatingChange(
        seat=rules_pb2.SEAT_FIRST if move.seat == 1 else rules_pb2.SEAT_SECOND,
        player_id=move.player_id,
        before=skill_rating(move.profile, move.before),
        after=skill_rating(move.profile, move.after),
    )
