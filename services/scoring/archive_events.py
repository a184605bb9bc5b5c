"""Filling the archive from the bus: finished hands (after scoring verified them), void hands (a
table closed before its last hand ended: ``table.closed``) and what the ledger moved for each hand
(``wallet.settlement_applied``).

Every write is idempotent (on the hand id, on the wallet's transaction id), so a redelivered event
writes nothing new, and order does not matter: a hand's transactions are kept by hand id whether or
not the hand is archived yet, and joined to it when it is read.
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.message import DecodeError
from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.msg import Msg

from duelmahjong.platform import subjects
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.streams import ConsumerSpec
from duelmahjong.v1 import archive_pb2, events_pb2
from services.scoring.archive_facts import VOID, HandNotInLog, HandResult, hand_entry, unended_hand
from services.scoring.archive_store import ArchiveStore, Posting, TransactionRow
from services.scoring.tablelog import WHOLE_LOG, LoggedRecord, TableLogReader

_log = get_logger("scoring.archive")

TABLES_CLOSED = ConsumerSpec(
    stream=subjects.TABLE_STREAM.name, durable="scoring-table-closed", filter_subject=subjects.TABLE_CLOSED
)
SETTLEMENTS_APPLIED = ConsumerSpec(
    stream=subjects.WALLET_STREAM.name,
    durable="scoring-settlement-applied",
    filter_subject=subjects.SETTLEMENT_APPLIED,
)


def _time(stamp: Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC) if stamp.ByteSize() else datetime.now(UTC)


class Archiver:
    """Stores hands in the archive; counts what it stored."""

    def __init__(self, store: ArchiveStore, metrics: ServiceMetrics) -> None:
        self._store = store
        self.archived = metrics.counter("hands_archived", "total", "hands stored in the archive", ["outcome"])

    async def hand(
        self,
        log: list[LoggedRecord],
        hand_id: str,
        result: HandResult,
        *,
        last_sequence: int,
        ended_at: datetime,
    ) -> None:
        try:
            entry = hand_entry(log, hand_id, result, last_sequence=last_sequence, ended_at=ended_at)
        except HandNotInLog as missing:
            _log.error(
                "hand not archived: its log does not hold it",
                extra={"fields": {"hand_id": hand_id, "reason": str(missing)}},
            )
            return
        if await self._store.archive_hand(entry):
            outcome = archive_pb2.ArchivedOutcome.Name(entry.outcome)
            self.archived.labels(outcome=outcome.removeprefix("ARCHIVED_OUTCOME_").lower()).inc()


class TableClosedHandler:
    """A table closed: archive the hand it began and never ended, if any, as VOID."""

    def __init__(self, archiver: Archiver, reader: TableLogReader) -> None:
        self._archiver = archiver
        self._reader = reader

    async def __call__(self, message: Msg) -> None:
        try:
            closed = events_pb2.TableClosed.FromString(message.data)
        except DecodeError:
            _log.error("TableClosed does not decode; dropped", extra={"fields": {"subject": message.subject}})
            return
        log = await self._reader.read(closed.table_id, WHOLE_LOG)
        hand_id = unended_hand(log)
        if hand_id is None:
            return
        ended_at = _time(closed.envelope.occurred_at)
        await self._archiver.hand(log, hand_id, VOID, last_sequence=WHOLE_LOG, ended_at=ended_at)


class SettlementAppliedHandler:
    """Keep every applied transaction that names a hand, with all its postings."""

    def __init__(self, store: ArchiveStore, metrics: ServiceMetrics) -> None:
        self._store = store
        self.recorded = metrics.counter(
            "settlements_archived", "total", "wallet transactions of hands stored in the archive"
        )

    async def __call__(self, message: Msg) -> None:
        try:
            applied = events_pb2.SettlementApplied.FromString(message.data)
        except DecodeError:
            _log.error(
                "SettlementApplied does not decode; dropped", extra={"fields": {"subject": message.subject}}
            )
            return
        if applied.rejected_reason or not applied.transaction_id or not applied.hand_id:
            return  # nothing moved, or not a hand's (a table's opening, its close)
        postings = applied.postings or applied.settlement.postings
        row = TransactionRow(
            transaction_id=applied.transaction_id,
            hand_id=applied.hand_id,
            table_id=applied.table_id,
            source_event_id=applied.source_event_id,
            hand_transaction=applied.hand_transaction,
            settlement=applied.settlement.SerializeToString() if applied.HasField("settlement") else None,
            postings=tuple(Posting(p.account, p.amount, p.reason) for p in postings),
            ratings=tuple(r.SerializeToString() for r in applied.ratings) if applied.hand_transaction else (),
        )
        if await self._store.record_transaction(row):
            self.recorded.inc()
