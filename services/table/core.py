"""The table server's host: the live tables one server hosts, and the check of an OpenTable request.

Each live table (:mod:`services.table.live`) is one asyncio task that alone owns its engine ``Table``;
everything else talks to it through its inbox. A live table knows its host only as the
:class:`~services.table.ports.TableOwner` it reads. The host opens tables (idempotently: the table id is
matchmaking's key), finds them for Play streams, counts them against capacity and drains.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Callable

from duelmahjong.engine import fairness
from duelmahjong.platform import ids
from duelmahjong.platform.errors import InvalidArgument, NotFound, ResourceExhausted, Unavailable
from duelmahjong.v1 import rules_pb2
from services.table.live import LiveTable
from services.table.live_state import LiveState
from services.table.metrics import TableMetrics
from services.table.ports import BusPorts, Clock, OpenRequest, Salts, Seeds
from services.table.spectators import Spectators
from services.table.tickets import TicketBook


def secure_seed(table_id: str, hand_number: int) -> int:
    """A hand's only randomness, from the OS's secure source; it never leaves the servers."""
    return secrets.randbits(64)


def secure_salt(table_id: str, hand_number: int) -> bytes:
    """The salt of a hand's commitment, from the OS's secure source."""
    return fairness.secure_salt()


# Ids of an OpenTable request name NATS subjects (table) and end up in tickets and in the wallet's
# idempotency keys, whose id rule (ASCII, at most 64) they follow; Unicode letters would pass isalnum().


def check_open_request(
    table_id: str,
    pairing_id: str,
    room_id: str,
    rules: rules_pb2.RoomRules,
    players: list[rules_pb2.SeatPlayer],
    negotiated: int,
    *,
    private_table: bool = False,
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
    return OpenRequest(
        table_id, pairing_id, room_id, rules, (seats[0], seats[1]), multiplier, private_table=private_table
    )


class TableHost:
    """The tables of this server, each owned by one task; bounded by ``capacity``."""

    def __init__(
        self,
        capacity: int,
        *,
        ports: BusPorts | None = None,
        tickets: TicketBook | None = None,
        metrics: TableMetrics | None = None,
        queue_size: int = 64,
        settlement_wait: float = 15.0,
        join_seconds: float = 60.0,
        clock: Clock | None = None,
        seeds: Seeds = secure_seed,
        salts: Salts = secure_salt,
        spectators: Spectators | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("a table server hosts at least one table")
        self.capacity = capacity
        self.ports = ports
        self.tickets = tickets
        self.metrics = metrics
        self.queue_size = queue_size
        self.settlement_wait = settlement_wait
        self.join_seconds = join_seconds
        self.clock = clock
        self.seeds = seeds  # tests deal known hands through it; the seed is in the log either way
        self.salts = salts
        self.live_tables: dict[str, LiveTable] = {}
        self.spectators = spectators or Spectators()
        self.draining = False
        # Fresh per process start (one host per process), announced with every heartbeat and returned
        # by OpenTable: a server id seen with another incarnation has restarted and lost its tables.
        self.incarnation = uuid.uuid4().hex
        # Where clients reach this server (host:port); the composition root points it at the bound port.
        self.locate: Callable[[], str] = lambda: ""
        # Told when a table closes for good (its ownership record is then released).
        self.on_closed: Callable[[str], None] | None = None
        self._emptied = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

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
        return self._serve(request.table_id, lambda ports: LiveTable(request, self, ports))

    def adopt(self, state: LiveState, log_end: int) -> LiveTable:
        """Serve a table rebuilt from its log (:mod:`services.table.rebuild`), started; an existing live
        table of the same id is kept. ``log_end`` is where the stored log ends (what
        :func:`services.table.wal.read_table_log` returned): the next append must follow it."""

        def adopted(ports: BusPorts) -> LiveTable:
            ports.wal.continues(state.table_id, log_end)
            return LiveTable.adopted(state, self, ports)

        return self._serve(state.table_id, adopted)

    def _serve(self, table_id: str, make: Callable[[BusPorts], LiveTable]) -> LiveTable:
        existing = self.live_tables.get(table_id)
        if existing is not None:
            return existing
        self.check_capacity()
        if self.ports is None or self.tickets is None:
            raise Unavailable("this table server is not wired to a bus")
        table = make(self.ports)
        self.live_tables[table_id] = table
        self._emptied.clear()
        self._count()
        table.start()
        return table

    def now(self) -> float:
        if self.clock is not None:
            return self.clock()
        # The loop is looked up once: asyncio.get_running_loop() checks the process id with a system
        # call each time, and the tables ask the time several times per action.
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        return loop.time()

    def seed(self, table_id: str, hand_number: int) -> int:
        return self.seeds(table_id, hand_number)

    def salt(self, table_id: str, hand_number: int) -> bytes:
        return self.salts(table_id, hand_number)

    def find(self, table_id: str) -> LiveTable:
        table = self.live_tables.get(table_id)
        if table is None:
            raise NotFound(f"no live table {table_id} on this server (closed, or hosted elsewhere)")
        return table

    def closed(self, table_id: str) -> None:
        self._gone(table_id)
        if self.on_closed is not None:
            self.on_closed(table_id)

    def let_go(self, table_id: str) -> None:
        self._gone(table_id)

    def _gone(self, table_id: str) -> None:
        table = self.live_tables.pop(table_id, None)
        if table is not None:
            self.spectators.departed(table.state)  # watchable until its last events are of age
        if self.ports is not None:
            self.ports.wal.forget(table_id)
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
