"""Each table's write-ahead log on JetStream (``duel.tablelog.<table_id>``): what a seat is shown is
stored there, acked, first; scoring replays it, and :func:`read_table_log` reads it back to rebuild the
table (:mod:`services.table.rebuild`).

Every append is **fenced**: it states the stream sequence of the message it expects last on the
table's subject (JetStream's expected-last-subject-sequence). A server that lost the table — paused
or cut off while another server adopted it and wrote on — finds another message there, and its
append fails with :class:`~services.table.ports.Fenced` instead of forking the log.
"""

from __future__ import annotations

import nats.js.errors

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus, SequenceConflict
from duelmahjong.v1 import events_pb2, server_state_pb2
from duelmahjong.views.codec import timestamp
from services.table.ports import Fenced
from services.table.publishers import Producer

READ_WAIT_SECONDS = 5.0  # the longest wait for one stored message while reading a log back


class NatsWriteAheadLog:
    """:class:`services.table.ports.WriteAheadLog` on JetStream: one message per step, acked, fenced."""

    def __init__(self, bus: Bus, producer: Producer) -> None:
        self.bus = bus
        self.producer = producer
        # Per live table: the stream sequence of its log's last message, which the next append
        # expects (0: a new table's subject is empty). An adopted table's starts at what was read.
        self._last: dict[str, int] = {}

    def continues(self, table_id: str, log_end: int) -> None:
        """This server writes on an adopted table's log, which ends at stream sequence ``log_end``."""
        self._last[table_id] = log_end

    def forget(self, table_id: str) -> None:
        self._last.pop(table_id, None)

    async def append(
        self, table_id: str, hand_id: str, records: list[tuple[int, server_state_pb2.TableLogRecord]]
    ) -> None:
        """Write one step's records (consecutive sequences) as ONE JetStream message and wait for its
        ack: one publish and one ack per applied action, not one per record. Nothing is shown to a
        seat before this returns (write-ahead). The bus sends it again through a NATS reconnect or a
        leader election, with the same message id, so the log never gets a gap or a double."""
        if not records:
            return
        appended = step_message(table_id, hand_id, records, self.producer.name)
        try:
            self._last[table_id] = await self.bus.append_fenced(
                subjects.TABLE_LOG_STREAM.name,
                subjects.table_log_subject(table_id),
                appended.SerializeToString(),
                msg_id=appended.envelope.event_id,
                expected_last_sequence=self._last.get(table_id, 0),
            )
        except SequenceConflict as err:
            raise Fenced(f"table {table_id} is written by another server now: {err}") from err


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
