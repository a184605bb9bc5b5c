"""The wallet's answers a table waits for: the ``SettlementApplied`` of each hand's own transaction.

Every table server hears every hand's settlement (one subject for the whole fleet), so the inbox keeps
nothing it was not asked for: a hand's answer is handed to whoever :meth:`SettlementInbox.expect`\\ s
it, and every other answer is dropped at once — a hand of another server's (counted as foreign), or
one of this server's tables that stopped waiting for it (counted as unclaimed). What a server holds is
one entry per hand its tables are settling, whatever the fleet's traffic.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from nats.aio.msg import Msg

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2
from services.table.metrics import TableMetrics

_log = get_logger("table.settlements")

Deliver = Callable[[events_pb2.SettlementApplied], None]

# Hands whose table stopped waiting, remembered so that their late answer counts as unclaimed: the
# most recent ones only, so the memory stays bounded however many answers never come.
GAVE_UP_REMEMBERED = 4096


class SettlementInbox:
    """:class:`services.table.ports.Settlements` on NATS: the settlement board of this server.

    Settlements are followed with a plain subscription from the moment the server starts: a table only
    waits for hands it finished itself, so it never needs older messages; a settlement missed while
    NATS reconnects costs the wait (``settlement_wait_seconds``), never the table.
    """

    def __init__(self, bus: Bus, hosts: Callable[[str], bool], metrics: TableMetrics | None = None) -> None:
        self.bus = bus
        self._hosts = hosts  # table id → whether a table of this server's
        self._metrics = metrics
        self._expected: dict[str, Deliver] = {}
        self._gave_up: OrderedDict[str, None] = OrderedDict()
        self._subscriptions: list[object] = []

    async def start(self) -> None:
        client = self.bus.client
        self._subscriptions.append(await client.subscribe(subjects.SETTLEMENT_APPLIED, cb=self._on_applied))

    def expect(self, hand_id: str, deliver: Deliver) -> None:
        """The hand's answer goes to ``deliver`` once, when it arrives (call before the hand's result
        is published, so no answer can come before it is expected)."""
        self._expected[hand_id] = deliver

    def forget(self, hand_id: str) -> None:
        """The hand's table no longer waits: an answer that comes later is dropped."""
        if self._expected.pop(hand_id, None) is None:
            return
        self._gave_up[hand_id] = None
        if len(self._gave_up) > GAVE_UP_REMEMBERED:
            self._gave_up.popitem(last=False)

    @property
    def waiting(self) -> int:
        """Hands whose answer is expected now."""
        return len(self._expected)

    async def _on_applied(self, message: Msg) -> None:
        self.received(events_pb2.SettlementApplied.FromString(message.data))

    def received(self, event: events_pb2.SettlementApplied) -> None:
        if not event.hand_transaction:  # a fee, a charge, an item… of the hand: not its settlement
            return
        deliver = self._expected.pop(event.hand_id, None)
        if deliver is not None:
            deliver(event)
            return
        if event.hand_id not in self._gave_up and not self._hosts(event.table_id):
            if self._metrics is not None:
                self._metrics.settlements_foreign.inc()
            return
        if self._metrics is not None:
            self._metrics.settlements_unclaimed.inc()
        _log.info(
            "a settlement no table waits for; dropped",
            extra={"fields": {"table_id": event.table_id, "hand_id": event.hand_id}},
        )
