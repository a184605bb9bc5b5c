"""Scoring reads a table's log with batched direct gets (services/scoring/tablelog.py), on real NATS.

A log message holds one or more records (``record`` then ``following``); other tables' logs share the
stream, so a read must take the table's subject only, across as many batches as it needs, stop at the
claimed last sequence, and give back at once what a short log has.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

import nats.js.errors
import pytest
import pytest_asyncio

from duelmahjong.platform import direct_get, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import events_pb2, server_state_pb2
from services.scoring.replay import ReplayMismatch
from services.scoring.tablelog import WHOLE_LOG, TableLogReader

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def _record(text: str) -> server_state_pb2.TableLogRecord:
    return server_state_pb2.TableLogRecord(
        engine_event=server_state_pb2.EngineEventRecord(kind="note", canonical_json=text)
    )


async def _append(bus: Bus, table_id: str, sequence: int, records: int) -> None:
    """One log message of ``records`` records, the first at table sequence ``sequence``."""
    texts = [f"{table_id}:{sequence + offset}" for offset in range(records)]
    appended = events_pb2.TableEventAppended(
        table_id=table_id,
        sequence=sequence,
        hand_id="h-1",
        record=_record(texts[0]),
        following=[_record(text) for text in texts[1:]],
    )
    await bus.publish(
        subjects.table_log_subject(table_id), appended.SerializeToString(), msg_id=f"{table_id}:{sequence}"
    )


async def _log(bus: Bus, table_id: str, messages: int, *, other: str | None = None) -> int:
    """``messages`` messages of 1–3 records each (another table's between them); the last sequence."""
    sequence = 1
    for number in range(messages):
        records = number % 3 + 1
        await _append(bus, table_id, sequence, records)
        if other is not None:
            await _append(bus, other, sequence, 1)
        sequence += records
    return sequence - 1


@pytest_asyncio.fixture
async def log_bus(bus: Bus) -> Bus:
    await bus.declare_stream(subjects.TABLE_LOG_STREAM)
    return bus


def _texts(records: list) -> list[str]:
    return [r.record.engine_event.canonical_json for r in records]


async def test_a_read_takes_the_tables_records_in_order_across_batches(log_bus: Bus) -> None:
    table, other = f"t-{secrets.token_hex(5)}", f"t-{secrets.token_hex(5)}"
    last = await _log(log_bus, table, 10, other=other)
    records = await TableLogReader(log_bus, batch=3).read(table)
    assert [r.sequence for r in records] == list(range(1, last + 1))
    assert _texts(records) == [f"{table}:{n}" for n in range(1, last + 1)]
    assert {r.table_id for r in records} == {table}


async def test_a_read_stops_at_the_claimed_last_sequence_inside_a_message(log_bus: Bus) -> None:
    table = f"t-{secrets.token_hex(5)}"
    await _log(log_bus, table, 6)  # messages of 1, 2, 3, 1, 2, 3 records: sequences 1..12
    records = await TableLogReader(log_bus, batch=2).read(table, last_sequence=5)
    assert [r.sequence for r in records] == [1, 2, 3, 4, 5]


async def test_a_short_log_comes_back_at_once_and_a_missing_one_empty(log_bus: Bus) -> None:
    table = f"t-{secrets.token_hex(5)}"
    last = await _log(log_bus, table, 4)
    reader = TableLogReader(log_bus, batch=2, fetch_seconds=2.0)
    started = time.perf_counter()
    records = await reader.read(table, last_sequence=last + 10)
    assert [r.sequence for r in records] == list(range(1, last + 1))
    assert time.perf_counter() - started < 1.0  # the leader said where the log ends: no waiting
    assert await reader.read(f"t-{secrets.token_hex(5)}", WHOLE_LOG) == []


async def test_a_read_refuses_an_id_no_table_logs_under_and_a_message_that_is_no_record(
    log_bus: Bus,
) -> None:
    with pytest.raises(ReplayMismatch):
        await TableLogReader(log_bus).read("no.such>table")
    table = f"t-{secrets.token_hex(5)}"
    await log_bus.publish(subjects.table_log_subject(table), b"\xff\xff", msg_id=f"{table}:junk")
    with pytest.raises(ReplayMismatch, match="is not a TableEventAppended"):
        await TableLogReader(log_bus).read(table)


async def test_a_direct_get_on_a_stream_that_does_not_allow_them_is_refused(bus: Bus) -> None:
    name = f"NODIRECT_{secrets.token_hex(4).upper()}"
    await bus.js.add_stream(name=name, subjects=[f"nodirect.{name}.>"])
    try:
        await bus.publish(f"nodirect.{name}.a", b"x", msg_id="a")
        with pytest.raises(nats.js.errors.NoStreamResponseError):  # nobody listens for them
            await direct_get.DirectGets(bus.client).read_batch(
                name, f"nodirect.{name}.a", start=1, batch=5, answer_seconds=2.0
            )
    finally:
        await bus.js.delete_stream(name)


async def test_reads_at_once_share_one_inbox_and_each_gets_its_own_tables_records(log_bus: Bus) -> None:
    tables = [f"t-{secrets.token_hex(5)}" for _ in range(8)]
    lasts = [await _log(log_bus, table, 3 + number) for number, table in enumerate(tables)]
    reader = TableLogReader(log_bus, batch=2)
    before = len(log_bus.client._subs)
    read = await asyncio.gather(*(reader.read(table) for table in tables))
    for table, last, records in zip(tables, lasts, read, strict=True):
        assert _texts(records) == [f"{table}:{n}" for n in range(1, last + 1)]
    assert len(log_bus.client._subs) == before + 1  # the reader's one wildcard inbox


async def test_a_later_read_of_a_table_asks_only_for_what_its_log_gained(log_bus: Bus) -> None:
    """A table's log only grows: a reader keeps what it read, and the next hand's read fetches the
    messages written since (the stream sequences it asks from show it), within a bound on what it
    keeps."""
    table = f"t-{secrets.token_hex(5)}"
    first = await _log(log_bus, table, 3)  # 1 + 2 + 3 records
    reader = TableLogReader(log_bus, batch=2)
    gets = reader._gets
    asked: list[int] = []

    class Counted:
        """The reader's direct gets, noting the stream sequence each batch is asked from."""

        async def read_batch(self, stream: str, subject: str, **options: Any) -> direct_get.Batch:
            asked.append(int(options["start"]))
            return await gets.read_batch(stream, subject, **options)

    reader._gets = Counted()  # type: ignore[assignment]
    assert [r.sequence for r in await reader.read(table, first)] == list(range(1, first + 1))
    since = len(asked)
    assert [r.sequence for r in await reader.read(table, 3)] == [1, 2, 3]  # all known: nothing asked
    assert len(asked) == since
    await _append(log_bus, table, first + 1, 2)
    again = await reader.read(table, first + 2)
    assert [r.sequence for r in again] == list(range(1, first + 3))
    assert _texts(again) == [f"{table}:{n}" for n in range(1, first + 3)]
    assert asked[since:] and min(asked[since:]) > max(asked[:since])  # on from where it stopped
    # Bounded: a reader keeping 4 records drops the least recently read table's.
    small = TableLogReader(log_bus, batch=2, cached_records=4)
    other = f"t-{secrets.token_hex(5)}"
    await _log(log_bus, other, 2)
    await small.read(table, first)
    await small.read(other, 3)
    assert list(small._known) == [other]
