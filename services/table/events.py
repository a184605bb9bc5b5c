"""The table service on NATS: each table's write-ahead log, its events, settlements, announcements."""

from __future__ import annotations

import asyncio
import time

from google.protobuf.message import Message
from nats.aio.msg import Msg

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2, rules_pb2, server_state_pb2
from services.table.core import OpenRequest, TableHost
from services.table.views import timestamp

PRODUCED_STREAMS = (subjects.TABLE_STREAM, subjects.TABLE_LOG_STREAM)
_log = get_logger("table.events")


async def declare(bus: Bus) -> None:
    """Declare the streams the table service publishes to (idempotent; every replica does it)."""
    for stream in PRODUCED_STREAMS:
        await bus.declare_stream(stream)


class NatsJournal:
    """:class:`services.table.core.TableJournal` on JetStream, plus the settlement board.

    Settlements are followed with a plain subscription from the moment the server starts: a table only
    waits for hands it finished itself, so it never needs older messages; a settlement missed while
    NATS reconnects costs the wait (``settlement_wait_seconds``), never the table.
    """

    def __init__(self, bus: Bus, producer: str) -> None:
        self.bus = bus
        self.producer = producer
        self._applied: dict[str, events_pb2.SettlementApplied] = {}
        self._arrived = asyncio.Condition()
        self._subscriptions: list[object] = []

    def _envelope(self, event_id: str) -> events_pb2.EventEnvelope:
        return events_pb2.EventEnvelope(event_id=event_id, producer=self.producer, occurred_at=timestamp())

    async def start(self) -> None:
        client = self.bus.client
        self._subscriptions.append(await client.subscribe(subjects.SETTLEMENT_APPLIED, cb=self._on_applied))

    async def _on_applied(self, message: Msg) -> None:
        event = events_pb2.SettlementApplied.FromString(message.data)
        # The hand's own transaction: the transfer (wallet:hand:<id>) or the escape penalty.
        if event.envelope.event_id not in (f"wallet:hand:{event.hand_id}", f"wallet:escape:{event.hand_id}"):
            return
        async with self._arrived:
            self._applied[event.hand_id] = event
            self._arrived.notify_all()

    async def settlement(self, hand_id: str, within: float) -> events_pb2.SettlementApplied | None:
        try:
            async with asyncio.timeout(within):
                async with self._arrived:
                    await self._arrived.wait_for(lambda: hand_id in self._applied)
        except TimeoutError:
            _log.warning(
                "no settlement for the hand in time; carrying on", extra={"fields": {"hand_id": hand_id}}
            )
        return self._applied.pop(hand_id, None)

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
        envelope.event_id, envelope.producer = event_id, self.producer
        envelope.occurred_at.CopyFrom(timestamp())
        appended.record.CopyFrom(record)
        appended.following.extend([r for _, r in records[1:]])
        await self._stored(subjects.table_log_subject(table_id), appended.SerializeToString(), event_id)

    async def _stored(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Publish until JetStream acks (the bus sends it again through a reconnect or a leader
        election, with the same message id, so the log never gets a gap or a double)."""
        await self.bus.publish(subject, payload, msg_id=msg_id)

    async def publish(self, subject: str, event: Message, event_id: str) -> None:
        """Publish a table event of ``events.proto`` (its envelope filled here) on ``subject``."""
        event.envelope.CopyFrom(self._envelope(event_id))  # type: ignore[attr-defined]
        await self.bus.publish_event(subject, event)

    async def hand_ended(self, result: rules_pb2.HandResult) -> None:
        event = events_pb2.HandEnded(
            envelope=self._envelope(f"hand_ended:{result.hand_id}"),
            table_id=result.table_id,
            hand_id=result.hand_id,
            result=result,
        )
        await self.bus.publish_event(subjects.HAND_ENDED, event)

    async def table_opened(self, request: OpenRequest) -> None:
        event = events_pb2.TableOpened(
            envelope=self._envelope(f"opened:{request.table_id}"),
            table_id=request.table_id,
            server_id=self.producer,
            pairing_id=request.pairing_id,
            room_id=request.room_id,
            players=list(request.players),
        )
        await self.bus.publish_event(subjects.TABLE_OPENED, event)

    async def table_closed(self, request: OpenRequest, reason: str, hands_played: int) -> None:
        event = events_pb2.TableClosed(
            envelope=self._envelope(subjects.table_closed_id(request.table_id)),
            table_id=request.table_id,
            server_id=self.producer,
            pairing_id=request.pairing_id,
            reason=reason,
            hands_played=hands_played,
        )
        await self.bus.publish_event(subjects.TABLE_CLOSED, event)

    async def announce(self, server_id: str, host: TableHost, number: int) -> None:
        event = events_pb2.TableServerAnnounced(
            envelope=self._envelope(f"announce:{server_id}:{number}"),
            server_id=server_id,
            address=host.address,
            capacity=host.capacity,
            load=min(len(host.live_tables), host.capacity),
            draining=host.draining,
            announce_number=number,
            incarnation=host.incarnation,
        )
        await self.bus.publish_event(subjects.TABLE_SERVER_ANNOUNCED, event)


async def announce_forever(journal: NatsJournal, server_id: str, host: TableHost, every: float) -> None:
    """Heartbeat for matchmaking: address, capacity, load, draining, incarnation. Numbers grow across
    restarts (milliseconds since the epoch), so the highest announce_number per server is the latest."""
    while True:
        try:
            await journal.announce(server_id, host, time.time_ns() // 1_000_000)
        except Exception as err:  # NATS away: the next heartbeat tries again
            _log.warning("announce failed; retrying", extra={"fields": {"error": repr(err)}})
        await asyncio.sleep(every)
