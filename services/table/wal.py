"""Each table's write-ahead log on JetStream (``duel.tablelog.<table_id>``): what a seat is shown is
stored there, acked, first; scoring replays it."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import events_pb2, server_state_pb2
from services.table.codec import timestamp
from services.table.publishers import Producer


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
        first, record = records[0]
        event_id = f"{table_id}/{hand_id}/{first}"
        # Filled in place (one copy of each record, not two): this runs for every action.
        appended = events_pb2.TableEventAppended(table_id=table_id, hand_id=hand_id, sequence=first)
        envelope = appended.envelope
        envelope.event_id, envelope.producer = event_id, self.producer.name
        envelope.occurred_at.CopyFrom(timestamp())
        appended.record.CopyFrom(record)
        appended.following.extend([r for _, r in records[1:]])
        # Sent again through a NATS reconnect or a leader election, with the same message id, so the
        # stream keeps one copy and the log never gets a gap or a double (Bus.publish).
        await self.bus.publish(
            subjects.table_log_subject(table_id), appended.SerializeToString(), msg_id=event_id
        )
