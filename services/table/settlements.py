"""The wallet's answers a table waits for: the ``SettlementApplied`` of each hand's own transaction."""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2

_log = get_logger("table.settlements")


class SettlementInbox:
    """:class:`services.table.ports.Settlements` on NATS: the settlement board of this server.

    Settlements are followed with a plain subscription from the moment the server starts: a table only
    waits for hands it finished itself, so it never needs older messages; a settlement missed while
    NATS reconnects costs the wait (``settlement_wait_seconds``), never the table.
    """

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._applied: dict[str, events_pb2.SettlementApplied] = {}
        self._arrived = asyncio.Condition()
        self._subscriptions: list[object] = []

    async def start(self) -> None:
        client = self.bus.client
        self._subscriptions.append(await client.subscribe(subjects.SETTLEMENT_APPLIED, cb=self._on_applied))

    async def _on_applied(self, message: Msg) -> None:
        event = events_pb2.SettlementApplied.FromString(message.data)
        if not event.hand_transaction:  # a fee, a charge, an item… of the hand: not its settlement
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
