"""Matchmaking on NATS. It reads:

- ``TableServerAnnounced`` heartbeats through a plain (core NATS) subscription, not a shared durable
  consumer: every matchmaking replica needs every server's load, and a missed heartbeat is replaced by
  the next one. The directory keeps the highest ``announce_number`` per server.
- ``TableClosed`` from a durable pull consumer: the pairing is over and its players may queue again
  (the wallet releases the holds on the same event).
- ``TableAdopted`` from a durable pull consumer, as ``TableClosed``: another server process serves the
  table now (``LocateTable`` sends its players there), and it is no longer lost.

It publishes one event, and only on a table's behalf: the ``TableClosed`` of a table whose server was
lost (restarted or silent; see :mod:`.allocation`), with the id the table server would have used,
so the wallet releases the holds once whoever closes the table first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.streams import ConsumerSpec
from duelmahjong.v1 import events_pb2
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServer
from services.matchmaking.records import Pairing

PRODUCER = "matchmaking"

TABLE_CLOSED = ConsumerSpec(
    stream=subjects.TABLE_STREAM.name,
    durable="matchmaking-table-closed",
    filter_subject=subjects.TABLE_CLOSED,
)

TABLE_ADOPTED = ConsumerSpec(
    stream=subjects.TABLE_STREAM.name,
    durable="matchmaking-table-adopted",
    filter_subject=subjects.TABLE_ADOPTED,
)
# TableAdopted.how as the metrics' kind label.
ADOPTION_KINDS = {
    events_pb2.ADOPTION_KIND_ORPHAN: "orphan",
    events_pb2.ADOPTION_KIND_HANDED_OVER: "handed_over",
}


CONSUMERS = (TABLE_CLOSED, TABLE_ADOPTED)


async def declare(bus: Bus) -> None:
    """Declare what matchmaking reads from (idempotent). The stream is the table service's; creating
    it here when missing lets either service start first."""
    await bus.ensure_stream(subjects.TABLE_STREAM)
    for consumer in CONSUMERS:
        await bus.declare_consumer(consumer)


def server_of(event: events_pb2.TableServerAnnounced) -> TableServer:
    return TableServer(
        server_id=event.server_id,
        address=event.address,
        free_capacity=max(0, event.capacity - event.load),
        announce_number=event.announce_number,
        draining=event.draining,
        incarnation=event.incarnation,
    )


async def follow_announcements(bus: Bus, matchmaker: Matchmaker) -> Subscription:
    async def on_announced(msg: Msg) -> None:
        event = events_pb2.TableServerAnnounced.FromString(msg.data)
        matchmaker.directory.observe(server_of(event))

    return await bus.client.subscribe(subjects.TABLE_SERVER_ANNOUNCED, cb=on_announced)


def table_closed_handler(matchmaker: Matchmaker) -> Callable[[Msg], Awaitable[None]]:
    async def handle(msg: Msg) -> None:
        await matchmaker.table_closed(events_pb2.TableClosed.FromString(msg.data).table_id)

    return handle


def table_adopted_handler(matchmaker: Matchmaker) -> Callable[[Msg], Awaitable[None]]:
    async def handle(msg: Msg) -> None:
        event = events_pb2.TableAdopted.FromString(msg.data)
        await matchmaker.table_adopted(
            event.table_id,
            server_id=event.server_id,
            address=event.address,
            incarnation=event.incarnation,
            kind=ADOPTION_KINDS.get(event.how, "unspecified"),
        )

    return handle


class LostTableCloser:
    """:class:`services.matchmaking.pairing.LostTables` on JetStream: ``TableClosed`` on the table
    stream, with the table's own close id (``closed:<table_id>``)."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus

    async def close(self, pairing: Pairing, reason: str) -> None:
        occurred_at = Timestamp()
        occurred_at.GetCurrentTime()
        event = events_pb2.TableClosed(
            envelope=events_pb2.EventEnvelope(
                event_id=subjects.table_closed_id(pairing.table_id),
                producer=PRODUCER,
                occurred_at=occurred_at,
            ),
            table_id=pairing.table_id,
            server_id=pairing.server_id,
            pairing_id=pairing.pairing_id,
            reason=reason,
            hands_played=0,  # unknown here: the hands were counted by the server that is gone
        )
        await self._bus.publish_event(subjects.TABLE_CLOSED, event)
