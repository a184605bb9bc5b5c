"""The table server's heartbeat for matchmaking (``TableServerAnnounced``): address, capacity, load,
draining, incarnation."""

from __future__ import annotations

import asyncio
import time

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2
from services.table.core import TableHost
from services.table.publishers import Producer

_log = get_logger("table.announcer")


class Announcer:
    """Announces one host's state on NATS, now and then and when asked (the drain)."""

    def __init__(self, bus: Bus, producer: Producer, host: TableHost) -> None:
        self.bus = bus
        self.producer = producer
        self.host = host

    async def announce(self, server_id: str) -> None:
        """Announce now. Numbers grow across restarts (milliseconds since the epoch), so the highest
        announce_number per server is the latest."""
        host, number = self.host, time.time_ns() // 1_000_000
        event = events_pb2.TableServerAnnounced(
            envelope=self.producer.envelope(f"announce:{server_id}:{number}"),
            server_id=server_id,
            address=host.address,
            capacity=host.capacity,
            load=min(len(host.live_tables), host.capacity),
            draining=host.draining,
            announce_number=number,
            incarnation=host.incarnation,
        )
        await self.bus.publish_event(subjects.TABLE_SERVER_ANNOUNCED, event)

    async def announce_forever(self, server_id: str, every: float) -> None:
        while True:
            try:
                await self.announce(server_id)
            except Exception as err:  # NATS away: the next heartbeat tries again
                _log.warning("announce failed; retrying", extra={"fields": {"error": repr(err)}})
            await asyncio.sleep(every)
