"""The table's events for the other services (``events.proto``), published on NATS: the hand's end
for scoring, the hand's charges for the wallet, the table's opening and closing for both, and its
adoption by another server process for matchmaking."""

from __future__ import annotations

from google.protobuf.message import Message

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.v1 import events_pb2
from duelmahjong.views.codec import timestamp
from services.table.ports import OpenRequest

PRODUCED_STREAMS = (subjects.TABLE_STREAM, subjects.TABLE_LOG_STREAM)


async def declare(bus: Bus) -> None:
    """Declare the streams the table service publishes to (idempotent; every replica does it)."""
    for stream in PRODUCED_STREAMS:
        await bus.declare_stream(stream)


class Producer:
    """Who the table server's events say produced them (``table/<server id>``); the composition root
    names it once the server's id is known (its bound port)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def envelope(self, event_id: str) -> events_pb2.EventEnvelope:
        return events_pb2.EventEnvelope(event_id=event_id, producer=self.name, occurred_at=timestamp())


class NatsTableEvents:
    """:class:`services.table.ports.TableEvents` on NATS."""

    def __init__(self, bus: Bus, producer: Producer) -> None:
        self.bus = bus
        self.producer = producer

    async def publish(self, subject: str, event: Message, event_id: str) -> None:
        """Publish a table event of ``events.proto`` (its envelope filled here) on ``subject``."""
        event.envelope.CopyFrom(self.producer.envelope(event_id))  # type: ignore[attr-defined]
        await self.bus.publish_event(subject, event)

    async def hand_ended(self, table_id: str, hand_id: str, log_position: int) -> None:
        event = events_pb2.HandEnded(
            envelope=self.producer.envelope(f"hand_ended:{hand_id}"),
            table_id=table_id,
            hand_id=hand_id,
            log_position=log_position,
        )
        await self.bus.publish_event(subjects.HAND_ENDED, event)

    async def table_opened(self, request: OpenRequest) -> None:
        event = events_pb2.TableOpened(
            envelope=self.producer.envelope(f"opened:{request.table_id}"),
            table_id=request.table_id,
            server_id=self.producer.name,
            pairing_id=request.pairing_id,
            room_id=request.room_id,
            players=list(request.players),
        )
        await self.bus.publish_event(subjects.TABLE_OPENED, event)

    async def table_closed(self, request: OpenRequest, reason: str, hands_played: int) -> None:
        event = events_pb2.TableClosed(
            envelope=self.producer.envelope(subjects.table_closed_id(request.table_id)),
            table_id=request.table_id,
            server_id=self.producer.name,
            pairing_id=request.pairing_id,
            reason=reason,
            hands_played=hands_played,
        )
        await self.bus.publish_event(subjects.TABLE_CLOSED, event)

    async def table_adopted(
        self,
        request: OpenRequest,
        how: events_pb2.AdoptionKind.ValueType,
        *,
        server_id: str,
        address: str,
        incarnation: str,
    ) -> None:
        event = events_pb2.TableAdopted(
            envelope=self.producer.envelope(subjects.table_adopted_id(request.table_id, incarnation)),
            table_id=request.table_id,
            pairing_id=request.pairing_id,
            server_id=server_id,
            address=address,
            incarnation=incarnation,
            how=how,
        )
        await self.bus.publish_event(subjects.TABLE_ADOPTED, event)
