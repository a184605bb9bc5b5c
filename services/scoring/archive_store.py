"""The archive in Postgres (schema ``archive``, services/scoring/migrations): writes idempotent on the
hand id and on the wallet's transaction id, and the reads ListMatches, GetMatch and GetReplay need.

Rows are plain values here (:class:`PairingRow`, :class:`HandRow`, :class:`TransactionRow`); the
messages are built from them in ``archive_codec``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from duelmahjong.platform.db import Connection
from duelmahjong.v1 import archive_pb2, rules_pb2
from services.scoring.archive_chain import Slice
from services.scoring.archive_facts import ArchivedPlayer, HandEntry


@dataclass(frozen=True, slots=True)
class Posting:
    account: str
    amount: int
    reason: rules_pb2.PostingReason.ValueType


@dataclass(frozen=True, slots=True)
class TransactionRow:
    """One applied wallet transaction of a hand: its own (with the settlement) or an exchange's,
    an item's, a guess's."""

    transaction_id: str
    hand_id: str
    table_id: str
    source_event_id: str
    hand_transaction: bool
    settlement: bytes | None  # rules.proto Settlement as applied, the hand's own transaction only
    postings: tuple[Posting, ...]
    # wallet.proto RatingChange of both seats, SEAT_FIRST then SEAT_SECOND: the hand's own only
    ratings: tuple[bytes, ...] = ()


@dataclass(frozen=True, slots=True)
class PairingRow:
    pairing_id: str
    table_id: str
    room_id: str
    profile: rules_pb2.Profile.ValueType
    private_table: bool
    started_at: datetime
    players: tuple[ArchivedPlayer, ...]  # seat order


@dataclass(frozen=True, slots=True)
class HandRow:
    hand_id: str
    pairing_id: str
    table_id: str
    hand_number: int
    outcome: archive_pb2.ArchivedOutcome.ValueType
    winner: rules_pb2.Seat.ValueType
    escaper: rules_pb2.Seat.ValueType
    evaluation: bytes | None
    started_at: datetime
    ended_at: datetime
    transactions: tuple[TransactionRow, ...]


@dataclass(frozen=True, slots=True)
class TableChain:
    """What the archive keeps of one table's log up to a hand: its opening and its hands' slices."""

    opening: tuple[bytes, ...]
    slices: tuple[Slice, ...]


@dataclass(frozen=True, slots=True)
class PageKey:
    """Where a ListMatches page ends: pairings older than this one come next."""

    started_at: datetime
    pairing_id: str


# One statement each (data-modifying CTEs): atomic without a transaction of their own, one round trip
# a hand instead of five or six. The result: 1 when the hand (the transaction) was new, else 0.
_ARCHIVE_HAND = """
WITH pairing AS (
    INSERT INTO archive.pairings (pairing_id, table_id, room_id, profile, private_table, started_at, opening)
    VALUES ($2, $3, $13, $14, $15, $9, $16)
    ON CONFLICT (pairing_id)
        DO UPDATE SET started_at = LEAST(archive.pairings.started_at, EXCLUDED.started_at)
    RETURNING 1
), players AS (
    INSERT INTO archive.pairing_players (pairing_id, seat, player_id, display_name, is_bot)
    SELECT $2, p.seat, p.player_id, p.display_name, p.is_bot
    FROM unnest($17::smallint[], $18::text[], $19::text[], $20::boolean[])
        AS p(seat, player_id, display_name, is_bot)
    ON CONFLICT DO NOTHING
    RETURNING 1
), hand AS (
    INSERT INTO archive.hands (hand_id, pairing_id, table_id, hand_number, outcome, winner, escaper,
                               evaluation, started_at, ended_at, records, first_sequence)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (hand_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM hand
"""
_RECORD_TRANSACTION = """
WITH transaction AS (
    INSERT INTO archive.transactions (transaction_id, hand_id, table_id, source_event_id, hand_transaction,
                                      settlement, ratings)
    VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (transaction_id) DO NOTHING
    RETURNING transaction_id
), postings AS (
    INSERT INTO archive.postings (transaction_id, position, account, amount, reason)
    SELECT t.transaction_id, p.position, p.account, p.amount, p.reason
    FROM transaction t,
         unnest($8::integer[], $9::text[], $10::bigint[], $11::smallint[])
            AS p(position, account, amount, reason)
    RETURNING 1
)
SELECT count(*) FROM transaction
"""
_PAIRINGS_OF_PLAYER = """
SELECT p.pairing_id, p.started_at
FROM archive.pairing_players me JOIN archive.pairings p USING (pairing_id)
WHERE me.player_id = $1 AND ($2 OR NOT p.private_table)
  AND ($3::timestamptz IS NULL OR (p.started_at, p.pairing_id) < ($3, $4))
ORDER BY p.started_at DESC, p.pairing_id DESC
LIMIT $5
"""
_PAIRINGS = """
SELECT pairing_id, table_id, room_id, profile, private_table, started_at
FROM archive.pairings WHERE pairing_id = ANY($1)
"""
_PLAYERS = """
SELECT pairing_id, seat, player_id, display_name, is_bot
FROM archive.pairing_players WHERE pairing_id = ANY($1) ORDER BY pairing_id, seat
"""
_HANDS = """
SELECT hand_id, pairing_id, table_id, hand_number, outcome, winner, escaper, evaluation, started_at,
       ended_at
FROM archive.hands WHERE pairing_id = ANY($1) ORDER BY pairing_id, hand_number, started_at
"""
_HAND = """
SELECT hand_id, pairing_id, table_id, hand_number, outcome, winner, escaper, evaluation, started_at,
       ended_at, first_sequence + cardinality(records) - 1 AS last_sequence
FROM archive.hands WHERE hand_id = $1
"""
_OPENING = "SELECT opening FROM archive.pairings WHERE table_id = $1"
_SLICES = """
SELECT hand_number, first_sequence, records
FROM archive.hands WHERE table_id = $1 AND first_sequence <= $2 ORDER BY first_sequence
"""
_TRANSACTIONS = """
SELECT transaction_id, hand_id, table_id, source_event_id, hand_transaction, settlement, ratings
FROM archive.transactions WHERE hand_id = ANY($1) ORDER BY transaction_id
"""
_POSTINGS = """
SELECT p.transaction_id, p.account, p.amount, p.reason
FROM archive.postings p JOIN archive.transactions t USING (transaction_id)
WHERE t.hand_id = ANY($1) ORDER BY p.transaction_id, p.position
"""


class ArchiveStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    # -- writes ------------------------------------------------------------------------------------

    async def archive_hand(self, entry: HandEntry) -> bool:
        """Store ``entry`` (and its pairing on first sight); False when the hand was stored already."""
        players = entry.players
        stored = await self._pool.fetchval(
            _ARCHIVE_HAND,
            entry.hand_id,
            entry.pairing_id,
            entry.table_id,
            entry.hand_number,
            entry.outcome,
            entry.winner,
            entry.escaper,
            entry.evaluation,
            entry.started_at,
            entry.ended_at,
            list(entry.records),
            entry.first_sequence,
            entry.room_id,
            entry.profile,
            entry.private_table,
            list(entry.opening),
            [p.seat for p in players],
            [p.player_id for p in players],
            [p.display_name for p in players],
            [p.is_bot for p in players],
        )
        return bool(stored)

    async def record_transaction(self, row: TransactionRow) -> bool:
        """Store one applied transaction of a hand; False when it was stored already."""
        stored = await self._pool.fetchval(
            _RECORD_TRANSACTION,
            row.transaction_id,
            row.hand_id,
            row.table_id,
            row.source_event_id,
            row.hand_transaction,
            row.settlement,
            list(row.ratings),
            list(range(len(row.postings))),
            [p.account for p in row.postings],
            [p.amount for p in row.postings],
            [p.reason for p in row.postings],
        )
        return bool(stored)

    # -- reads -------------------------------------------------------------------------------------

    async def pairings_of(
        self, player_id: str, *, with_private: bool, after: PageKey | None, limit: int
    ) -> list[str]:
        """The ids of ``player_id``'s pairings, newest first, older than ``after``."""
        rows = await self._pool.fetch(
            _PAIRINGS_OF_PLAYER,
            player_id,
            with_private,
            after.started_at if after else None,
            after.pairing_id if after else "",
            limit,
        )
        return [row["pairing_id"] for row in rows]

    async def pairings(self, pairing_ids: Sequence[str]) -> dict[str, PairingRow]:
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(_PAIRINGS, list(pairing_ids))
            players: dict[str, list[ArchivedPlayer]] = {}
            for row in await conn.fetch(_PLAYERS, list(pairing_ids)):
                players.setdefault(row["pairing_id"], []).append(
                    ArchivedPlayer(row["seat"], row["player_id"], row["display_name"], row["is_bot"])
                )
        return {
            row["pairing_id"]: PairingRow(
                row["pairing_id"],
                row["table_id"],
                row["room_id"],
                row["profile"],
                row["private_table"],
                row["started_at"],
                tuple(players.get(row["pairing_id"], ())),
            )
            for row in rows
        }

    async def hands(self, pairing_ids: Sequence[str]) -> dict[str, list[HandRow]]:
        """The archived hands of each pairing, oldest first, with the transactions of each."""
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(_HANDS, list(pairing_ids))
            moved = await self._transactions(conn, [row["hand_id"] for row in rows])
        out: dict[str, list[HandRow]] = {}
        for row in rows:
            hand = HandRow(**{**dict(row), "transactions": tuple(moved.get(row["hand_id"], ()))})
            out.setdefault(hand.pairing_id, []).append(hand)
        return out

    async def hand(self, hand_id: str) -> tuple[HandRow, int] | None:
        """One archived hand and the sequence of its last log record, or None."""
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(_HAND, hand_id)
            if row is None:
                return None
            moved = await self._transactions(conn, [hand_id])
        values = dict(row)
        last_sequence = int(values.pop("last_sequence"))
        return HandRow(**values, transactions=tuple(moved.get(hand_id, ()))), last_sequence

    async def chain(self, table_id: str, last_sequence: int) -> TableChain:
        """The opening of ``table_id`` and the slices of its hands that start by ``last_sequence``."""
        async with self._pool.acquire() as conn:
            opening = await conn.fetchval(_OPENING, table_id)
            rows = await conn.fetch(_SLICES, table_id, last_sequence)
        return TableChain(
            tuple(opening or ()),
            tuple(Slice(r["hand_number"], r["first_sequence"], tuple(r["records"])) for r in rows),
        )

    @staticmethod
    async def _transactions(conn: Connection, hand_ids: list[str]) -> dict[str, list[TransactionRow]]:
        postings: dict[str, list[Posting]] = {}
        for row in await conn.fetch(_POSTINGS, hand_ids):
            postings.setdefault(row["transaction_id"], []).append(
                Posting(row["account"], row["amount"], row["reason"])
            )
        out: dict[str, list[TransactionRow]] = {}
        for row in await conn.fetch(_TRANSACTIONS, hand_ids):
            values = {**dict(row), "ratings": tuple(row["ratings"])}
            transaction = TransactionRow(**values, postings=tuple(postings.get(row["transaction_id"], ())))
            out.setdefault(transaction.hand_id, []).append(transaction)
        return out
