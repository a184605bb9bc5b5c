"""Reading one table's write-ahead log (``duel.tablelog.<table_id>``) back from JetStream.

Scoring reads a table's log twice over: to replay a finished hand before it scores it, and to archive
a hand (its records from the table's opening through its end, what a replay is built from) or, once
the table closed, the hand that never ended.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import nats.errors
import nats.js.errors
from google.protobuf.message import DecodeError
from nats.aio.msg import Msg
from nats.js import api

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import events_pb2, server_state_pb2
from services.scoring.replay import ReplayMismatch

# Read to the end of the log: a sequence no table reaches.
WHOLE_LOG = 2**63 - 1


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


class TableLogReader:
    """Reads one table's log up to a table sequence.

    Each read uses its own short-lived consumer filtered on the table's subject (memory storage, no
    acks), deleted afterwards; it stops at the claimed last sequence or the subject's last message.
    """

    def __init__(self, bus: Bus, *, batch: int = 256, fetch_seconds: float = 2.0) -> None:
        self._bus = bus
        self._stream = subjects.TABLE_LOG_STREAM.name
        self._batch = batch
        self._fetch_seconds = fetch_seconds

    async def read(self, table_id: str, last_sequence: int = WHOLE_LOG) -> list[LoggedRecord]:
        try:
            subject = subjects.table_log_subject(table_id)
        except ValueError as err:  # an id no table could have logged under
            raise ReplayMismatch(str(err)) from None
        js = self._bus.js
        try:
            end = (await js.get_last_msg(self._stream, subject)).seq or 0
        except nats.js.errors.NotFoundError:
            return []  # no log at all: the replay refuses (or waits for) it
        name = f"scoring-replay-{uuid.uuid4().hex}"
        config = api.ConsumerConfig(
            name=name,
            filter_subject=subject,
            deliver_policy=api.DeliverPolicy.ALL,
            ack_policy=api.AckPolicy.NONE,
            inactive_threshold=60.0,  # the server cleans up after a reader that died
            mem_storage=True,
        )
        await js.add_consumer(self._stream, config=config)
        records: list[LoggedRecord] = []
        try:
            subscription = await js.pull_subscribe_bind(consumer=name, stream=self._stream)
            try:
                while True:
                    messages = await subscription.fetch(self._batch, timeout=self._fetch_seconds)
                    for message in messages:
                        logged = logged_records(_appended(message))
                        records.extend(r for r in logged if r.sequence <= last_sequence)
                        if logged[-1].sequence >= last_sequence or message.metadata.sequence.stream >= end:
                            return records
            except (nats.errors.TimeoutError, TimeoutError):
                return records  # nothing more arrived: the replay decides what a short log means
            finally:
                await subscription.unsubscribe()
        finally:
            try:
                await js.delete_consumer(self._stream, name)
            except nats.js.errors.NotFoundError:
                pass


def _appended(message: Msg) -> events_pb2.TableEventAppended:
    try:
        return events_pb2.TableEventAppended.FromString(message.data)
    except DecodeError:
        stream_sequence = message.metadata.sequence.stream
        raise ReplayMismatch(f"the log's message {stream_sequence} is not a TableEventAppended") from None
