"""The table authority's domain: the live tables one server hosts, and what they need from outside.

Each live table (:mod:`services.table.live`) is one asyncio task that alone owns its engine ``Table``;
everything else talks to it through its inbox. The host opens tables (idempotently: the table id is
matchmaking's key), finds them for Play streams, counts them against capacity and drains.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from google.protobuf.message import Message
from prometheus_client import Counter, Gauge, Histogram

from duelmahjong.platform import ids
from duelmahjong.platform.errors import InvalidArgument, NotFound, ResourceExhausted, Unavailable
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import events_pb2, rules_pb2, server_state_pb2
from services.table.tickets import TicketBook

if TYPE_CHECKING:
    from services.table.live import LiveTable

Clock = Callable[[], float]  # monotonic seconds; the event loop's clock unless a test injects one
# (table id, hand number) → the hand's seed; the OS's secure source unless a test injects one.
Seeds = Callable[[str, int], int]


def secure_seed(table_id: str, hand_number: int) -> int:
    """A hand's only randomness, from the OS's secure source; it never leaves the servers."""
    return secrets.randbits(64)


class TableJournal(Protocol):
    """What a live table needs from the bus (``services.table.events`` implements it on NATS)."""

    async def append(
        self, table_id: str, hand_id: str, records: list[tuple[int, server_state_pb2.TableLogRecord]]
    ) -> None:
        """Write-ahead: store the records (acked) before anyone sees their effect."""

    async def hand_ended(self, result: rules_pb2.HandResult) -> None: ...

    async def publish(self, subject: str, event: Message, event_id: str) -> None:
        """Another table event (ExchangeCharged, GuessResolved…): envelope filled, de-duplicated on id."""

    async def settlement(self, hand_id: str, within: float) -> events_pb2.SettlementApplied | None:
        """What the wallet applied for the hand (the only settlement seats are shown), or None."""

    async def table_opened(self, request: OpenRequest) -> None: ...

    async def table_closed(self, request: OpenRequest, reason: str, hands_played: int) -> None: ...


@dataclass(frozen=True)
class OpenRequest:
    """An OpenTable call, checked: two players in seat order, a valid negotiated multiplier."""

    table_id: str
    pairing_id: str
    room_id: str
    rules: rules_pb2.RoomRules
    players: tuple[rules_pb2.SeatPlayer, rules_pb2.SeatPlayer]
    negotiated: int


# Ids of an OpenTable request name NATS subjects (table) and end up in tickets and in the wallet's
# idempotency keys, whose id rule (ASCII, at most 64) they follow; Unicode letters would pass isalnum().


def check_open_request(
    table_id: str,
    pairing_id: str,
    room_id: str,
    rules: rules_pb2.RoomRules,
    players: list[rules_pb2.SeatPlayer],
    negotiated: int,
) -> OpenRequest:
    if not ids.is_table_id(table_id):
        raise InvalidArgument(f"table_id must be {ids.TABLE_ID_RULE}")
    for name, value in (("pairing_id", pairing_id), ("room_id", room_id)):
        if value and not ids.is_entity_id(value):
            raise InvalidArgument(f"{name} must be {ids.ENTITY_ID_RULE}")
    seats = sorted(players, key=lambda p: p.seat)
    if [p.seat for p in seats] != [rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND]:
        raise InvalidArgument("a table needs exactly two players, in SEAT_FIRST and SEAT_SECOND")
    if any(not p.player_id for p in seats) or seats[0].player_id == seats[1].player_id:
        raise InvalidArgument("the two seats need two different player ids")
    if not all(ids.is_entity_id(p.player_id) for p in seats):
        raise InvalidArgument(f"player ids must be {ids.ENTITY_ID_RULE}")
    if any(p.carry < 0 for p in seats):
        raise InvalidArgument("a seat's carry cannot be negative")
    if rules.fan_rate <= 0:
        raise InvalidArgument("room rules need fan_rate > 0 (1番 = N 威望)")
    multiplier = negotiated or 1
    if multiplier not in (1, 2, 5, 10):
        raise InvalidArgument(f"negotiated multiplier must be 1, 2, 5 or 10 (T7), got {negotiated}")
    return OpenRequest(table_id, pairing_id, room_id, rules, (seats[0], seats[1]), multiplier)


@dataclass
class TableMetrics:
    """The table server's own metrics, ``duel_table_<what>_<unit>`` (dashboards read these names)."""

    live_tables: Gauge
    actions: Counter
    action_latency: Histogram
    timeouts: Counter
    autoplays: Counter
    reconnects: Counter
    escapes: Counter
    queue_full: Counter
    hands: Counter
    # actions' children by (kind, origin): labels() checks and locks on every call, once per action.
    _actions_by: dict[tuple[str, str], Counter] = field(default_factory=dict)

    def action_applied(self, kind: str, origin: str) -> None:
        child = self._actions_by.get((kind, origin))
        if child is None:
            child = self._actions_by[kind, origin] = self.actions.labels(kind=kind, origin=origin)
        child.inc()

    @classmethod
    def create(cls, metrics: ServiceMetrics) -> TableMetrics:
        return cls(
            live_tables=metrics.gauge("live_tables", "count", "tables hosted now"),
            actions=metrics.counter(
                "actions", "total", "actions applied, by engine kind and origin", ["kind", "origin"]
            ),
            action_latency=metrics.histogram(
                "action_latency", "seconds", "a seat's action received → its events written ahead and sent"
            ),
            timeouts=metrics.counter("timeouts", "total", "decisions the server played by default (T11)"),
            autoplays=metrics.counter(
                "autoplays", "total", "decisions the bot played for a disconnected seat"
            ),
            reconnects=metrics.counter("reconnects", "total", "seats that came back to their table"),
            escapes=metrics.counter("escapes", "total", "players who left during a hand (T10)"),
            queue_full=metrics.counter(
                "queue_full", "total", "actions refused BUSY: the table's queue was full"
            ),
            hands=metrics.counter("hands", "total", "hands finished, by outcome", ["outcome"]),
        )


class TableHost:
    """The tables of this server, each owned by one task; bounded by ``capacity``."""

    def __init__(
        self,
        capacity: int,
        *,
        journal: TableJournal | None = None,
        tickets: TicketBook | None = None,
        metrics: TableMetrics | None = None,
        queue_size: int = 64,
        settlement_wait: float = 15.0,
        join_seconds: float = 60.0,
        clock: Clock | None = None,
        seeds: Seeds = secure_seed,
    ) -> None:
        if capacity < 1:
            raise ValueError("a table server hosts at least one table")
        self.capacity = capacity
        self.journal = journal
        self.tickets = tickets
        self.metrics = metrics
        self.queue_size = queue_size
        self.settlement_wait = settlement_wait
        self.join_seconds = join_seconds
        self.clock = clock
        self.seeds = seeds  # tests deal known hands through it; the seed is in the log either way
        self.live_tables: dict[str, LiveTable] = {}
        self.draining = False
        # Fresh per process start (one host per process), announced with every heartbeat and returned
        # by OpenTable: a server id seen with another incarnation has restarted and lost its tables.
        self.incarnation = uuid.uuid4().hex
        # Where clients reach this server (host:port); the composition root points it at the bound port.
        self.locate: Callable[[], str] = lambda: ""
        self._emptied = asyncio.Event()

    @property
    def address(self) -> str:
        return self.locate()

    @property
    def free_capacity(self) -> int:
        return self.capacity - len(self.live_tables)

    def check_capacity(self) -> None:
        """Refuse a new table when the server is full (matchmaking then picks another server)."""
        if self.draining:
            raise Unavailable("this table server is draining and takes no new tables")
        if self.free_capacity <= 0:
            raise ResourceExhausted(f"this table server is full ({self.capacity} live tables)")

    def open(self, request: OpenRequest) -> LiveTable:
        """The live table of ``request`` (an existing one for a repeated table id), started if new."""
        from services.table.live import LiveTable  # live imports core's types

        existing = self.live_tables.get(request.table_id)
        if existing is not None:
            return existing
        self.check_capacity()
        if self.journal is None or self.tickets is None:
            raise Unavailable("this table server is not wired to a bus")
        table = LiveTable(request, self)
        self.live_tables[request.table_id] = table
        self._emptied.clear()
        self._count()
        table.start()
        return table

    def find(self, table_id: str) -> LiveTable:
        table = self.live_tables.get(table_id)
        if table is None:
            raise NotFound(f"no live table {table_id} on this server (closed, or hosted elsewhere)")
        return table

    def closed(self, table_id: str) -> None:
        self.live_tables.pop(table_id, None)
        self._count()
        if not self.live_tables:
            self._emptied.set()

    def _count(self) -> None:
        if self.metrics is not None:
            self.metrics.live_tables.set(len(self.live_tables))

    async def drain(self, within: float) -> None:
        """Take no new tables; let every live table finish its hand and close (SIGTERM). Tables still
        live after ``within`` seconds are stopped (each still publishes TableClosed)."""
        self.draining = True
        for table in list(self.live_tables.values()):
            table.wake_for_drain()  # tables with no hand in play close at once
        if not self.live_tables:
            return
        try:
            async with asyncio.timeout(within):
                await self._emptied.wait()
        except TimeoutError:
            for table in list(self.live_tables.values()):
                await table.stop()
