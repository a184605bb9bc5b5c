"""Reading one table's write-ahead log (``duel.tablelog.<table_id>``) back from JetStream.

Scoring reads a table's log twice over: to replay a finished hand before it scores it, and to archive
a hand (its records from the table's opening through its end, what a replay is built from) or, once
the table closed, the hand that never ended.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import OrderedDict
from dataclasses import dataclass

import nats.errors
import nats.js.errors
from google.protobuf.message import DecodeError

from duelmahjong.platform import direct_get, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import events_pb2, server_state_pb2
from services.scoring.replay import ReplayMismatch

# Read to the end of the log: a sequence no table reaches.
WHOLE_LOG = 2**63 - 1
# How long a read that a lagging replica answered short waits before it asks again.
REPLICA_CATCH_UP_SECONDS = 0.02
# The least time one direct get is given to answer, even when the read's own time is up.
MINIMUM_ANSWER_SECONDS = 0.5


# Records of table logs kept between reads (a few hundred bytes each): enough for the hands a
# replica scores while their tables play on.
CACHED_RECORDS = 50_000


@dataclass(frozen=True, slots=True)
class LoggedRecord:
    """One record of a table's log at its table sequence (``hand_id`` empty between hands)."""

    sequence: int
    table_id: str
    hand_id: str
    record: server_state_pb2.TableLogRecord


def logged_records(appended: events_pb2.TableEventAppended) -> list[LoggedRecord]:
    """The records of one log message: ``record`` at ``sequence``, then ``following`` at the next
    sequences (the table writes all one applied action logs as one message)."""
    return [
        LoggedRecord(appended.sequence + offset, appended.table_id, appended.hand_id, record)
        for offset, record in enumerate([appended.record, *appended.following])
    ]


@dataclass(frozen=True, slots=True)
class _Prefix:
    """What was read of one table's log: its records from sequence 1, and the stream sequence to read
    on from."""

    records: list[LoggedRecord]
    start: int


def _sequence(record: LoggedRecord) -> int:
    return record.sequence


class TableLogReader:
    """Reads one table's log up to a table sequence.

    A read is batched direct gets of the table's subject (``batch`` messages an answer, no consumer:
    platform.direct_get) from its first message on, until the claimed last sequence. A table's log
    only grows (its owner fences out every other writer, services/table/ownership.py), so what was
    read of it is kept (``cached_records`` records in all, the least recently read tables dropped
    first) and the next read of the table asks only for what came since: the next hand's replay reads
    that hand's records, not the table's whole log again. Any replica may
    answer a direct get, so a read that ends short asks the stream's leader where the subject ends,
    and reads on from there while a replica catches up (for at most ``fetch_seconds``); what the
    leader does not have either is the log as it is, and the replay decides what a short log means.
    """

    def __init__(
        self, bus: Bus, *, batch: int = 256, fetch_seconds: float = 2.0, cached_records: int = CACHED_RECORDS
    ) -> None:
        self._bus = bus
        self._gets = direct_get.DirectGets(bus.client)
        self._stream = subjects.TABLE_LOG_STREAM.name
        self._batch = batch
        self._fetch_seconds = fetch_seconds
        self._known: OrderedDict[str, _Prefix] = OrderedDict()
        self._cached = 0  # records kept in _known
        self._cached_limit = cached_records

    async def read(self, table_id: str, last_sequence: int = WHOLE_LOG) -> list[LoggedRecord]:
        """The table's records 1..``last_sequence`` (as far as the log has them)."""
        try:
            subjects.table_log_subject(table_id)
        except ValueError as err:  # an id no table could have logged under
            raise ReplayMismatch(str(err)) from None
        known = self._known.pop(table_id, None)
        records, start = [], 1
        if known is not None:
            self._cached -= len(known.records)
            records, start = list(known.records), known.start
        if not records or records[-1].sequence < last_sequence:
            start = await self._read_on(table_id, records, start, last_sequence)
        self._remember(table_id, _Prefix(records, start))
        return records[: bisect.bisect_right(records, last_sequence, key=_sequence)]  # a copy, the cache kept

    async def _read_on(
        self, table_id: str, records: list[LoggedRecord], start: int, last_sequence: int
    ) -> int:
        """Append to ``records`` the table's log messages from stream sequence ``start`` on, until one
        reaches ``last_sequence`` or the subject ends; the stream sequence to read on from next time."""
        subject = subjects.table_log_subject(table_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._fetch_seconds
        leader_end: int | None = None  # where the leader's copy of the subject ends, once asked
        while True:
            try:
                batch = await self._gets.read_batch(
                    self._stream,
                    subject,
                    start=start,
                    batch=self._batch,
                    answer_seconds=max(deadline - loop.time(), MINIMUM_ANSWER_SECONDS),
                )
            except (nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError):
                batch = direct_get.Batch([], more=False)  # no answer: the leader says what there is
            for message in batch.messages:
                logged = logged_records(_appended(message))
                records.extend(logged)
                start = message.sequence + 1
                if logged[-1].sequence >= last_sequence:
                    return start
            if batch.more:
                continue
            if leader_end is None:
                leader_end = await direct_get.last_sequence(self._bus.js, self._stream, subject)
            if start > leader_end or loop.time() >= deadline:
                return start  # the whole subject as its leader has it
            await asyncio.sleep(REPLICA_CATCH_UP_SECONDS)  # a replica behind its leader answered

    def _remember(self, table_id: str, prefix: _Prefix) -> None:
        """Keep what was read of the table's log, the most recently read tables first, at most
        ``cached_records`` records in all."""
        self._known[table_id] = prefix
        self._cached += len(prefix.records)
        while self._cached > self._cached_limit and len(self._known) > 1:
            _, dropped = self._known.popitem(last=False)
            self._cached -= len(dropped.records)


def _appended(message: direct_get.StoredMessage) -> events_pb2.TableEventAppended:
    try:
        return events_pb2.TableEventAppended.FromString(message.data)
    except DecodeError:
        raise ReplayMismatch(f"the log's message {message.sequence} is not a TableEventAppended") from None
