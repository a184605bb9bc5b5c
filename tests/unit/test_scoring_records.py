"""Scoring converts a table's log records to replay's form once (services/scoring/codec.py
``ReplayRecords``): a table's next hand is read as the same records and more."""

from __future__ import annotations

import pytest

from duelmahjong.v1 import server_state_pb2
from services.scoring import codec
from services.scoring.tablelog import LoggedRecord


def _logged(table_id: str, count: int) -> list[LoggedRecord]:
    return [
        LoggedRecord(
            n,
            table_id,
            "h1",
            server_state_pb2.TableLogRecord(
                engine_event=server_state_pb2.EngineEventRecord(kind="note", canonical_json=f"{table_id}:{n}")
            ),
        )
        for n in range(1, count + 1)
    ]


def test_a_tables_records_are_converted_once_and_each_read_gets_exactly_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = _logged("t1", 12)
    other = _logged("t1", 4)[1:]  # records that are not what was read before
    expected = {n: codec.replay_records(log[:n]) for n in (3, 5, 12)}
    expected_other = codec.replay_records(other)
    converted: list[int] = []
    convert = codec._log_record

    def counted(logged: LoggedRecord) -> codec.LogRecord:
        converted.append(logged.sequence)
        return convert(logged)

    monkeypatch.setattr(codec, "_log_record", counted)
    records = codec.ReplayRecords()
    assert records.of("t1", log[:5]) == expected[5]
    assert records.of("t1", log) == expected[12]
    assert records.of("t1", log[:3]) == expected[3]  # an earlier hand, redelivered
    assert converted == [*range(1, 6), *range(6, 13)]  # each record once
    converted.clear()
    assert records.of("t1", other) == expected_other  # not a prefix of what was read: afresh
    assert converted == [2, 3, 4]


def test_what_is_kept_is_bounded_the_least_recently_read_table_first() -> None:
    records = codec.ReplayRecords(limit=10)
    records.of("t1", _logged("t1", 6))
    records.of("t2", _logged("t2", 6))
    assert list(records._tables) == ["t2"]
