"""Each table's write-ahead log on JetStream (``duel.tablelog.<table_id>``): what a seat is shown is
stored there, acked, first; scoring replays it, and :func:`read_table_log` reads it back to rebuild the
table (:mod:`services.table.rebuild`)."""

from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2, server_state_pb2
from services.table.codec import timestamp
from services.table.publishers import Producer

READ_WAIT_SECONDS = 5.0  # the longest wait for one stored message while reading a log back
WRITE_ATTEMPTS = 5  # a log record not acked after these many tries stops its table (nothing was shown)
_log = get_logger("table.wal")


class NatsWriteAheadLog:
    """:class:`services.table.ports.WriteAheadLog` on JetStream: one message per step, acked."""

    def __init__(self, bus: Bus, producer: Producer) -> None:
        self.bus = bus
        self.producer = producer

    async def append(
        self, table_id: str, hand_id: str, records: list[tuple[int, server_state_pb2.TableLogRecord]]
    ) -> None:
        """Write one step's records (consecutive sequences) as ONE JetStream message and wait for its
        ack: one publish and one ack per applied action, not one per record. Nothing is shown to a
        seat before this returns (write-ahead)."""
        if not records:
            return
        appended = step_message(table_id, hand_id, records, self.producer.name)
        await self._stored(
            subjects.table_log_subject(table_id), appended.SerializeToString(), appended.envelope.event_id
        )

    async def _stored(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Publish until JetStream acks: a retry carries the same message id, so the stream keeps one
        copy (duplicate window) and the log never gets a gap or a double."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                await self.bus.publish(subject, payload, msg_id=msg_id)
                return
            except (
                nats.errors.TimeoutError,
                nats.errors.NoRespondersError,
                nats.errors.ConnectionClosedError,
            ):
                if attempt == WRITE_ATTEMPTS:
                    raise
                _log.warning("write-ahead publish not acked; retrying", extra={"fields": {"msg_id": msg_id}})
                await asyncio.sleep(0.05 * attempt)


def step_message(
    table_id: str,
    hand_id: str,
    records: list[tuple[int, server_state_pb2.TableLogRecord]],
    producer: str,
) -> events_pb2.TableEventAppended:
    """One step's records (consecutive sequences, at least one) as the log's message: the first as
    ``record``, the rest as ``following``."""
    first, record = records[0]
    # Filled in place (one copy of each record, not two): this runs for every action.
    appended = events_pb2.TableEventAppended(table_id=table_id, hand_id=hand_id, sequence=first)
    envelope = appended.envelope
    envelope.event_id, envelope.producer = f"{table_id}/{hand_id}/{first}", producer
    envelope.occurred_at.CopyFrom(timestamp())
    appended.record.CopyFrom(record)
    appended.following.extend([r for _, r in records[1:]])
    return appended


async def read_table_log(bus: Bus, table_id: str) -> tuple[list[events_pb2.TableEventAppended], int]:
    """A table's whole log as stored, in order, and the stream sequence of its last message (0: the
    table has none): who writes on must expect exactly that one last on the subject (fencing)."""
    subject = subjects.table_log_subject(table_id)
    try:
        last = await bus.js.get_last_msg(subjects.TABLE_LOG_STREAM.name, subject)
    except nats.js.errors.NotFoundError:
        return [], 0
    last_sequence = last.seq or 0
    log: list[events_pb2.TableEventAppended] = []
    sub = await bus.js.subscribe(subject, ordered_consumer=True)
    try:
        while True:
            message = await sub.next_msg(timeout=READ_WAIT_SECONDS)
            log.append(events_pb2.TableEventAppended.FromString(message.data))
            if message.metadata.sequence.stream >= last_sequence:
                return log, message.metadata.sequence.stream
    finally:
        await sub.unsubscribe()
