"""Matchmaking's ports in memory, and a harness that runs matchmakers on them (tests/unit/
test_matchmaking_core.py, test_matchmaking_private.py, test_matchmaking_fleet.py).

Every matchmaker a :class:`Harness` makes shares the harness's clock and :class:`MemoryBackend`, so two
of them play two replicas of one fleet in this process. The wallet and the table servers answer after
one loop turn, as a call over the network would, so other work (another replica's step, a stream)
runs while they answer. :func:`run` is what the service's room workers do, minus the waiting.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest_asyncio

from duelmahjong.platform.errors import FailedPrecondition
from services.matchmaking import updates
from services.matchmaking.bots import BotPool
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.leases import Leases
from services.matchmaking.ports import BotsBusy, OpenedTable, SkillEstimate, TableUnavailable
from services.matchmaking.records import Pairing, Records, Ticket
from services.matchmaking.rooms import Room
from services.matchmaking.store import MemoryBackend, Mirror


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Wallet:
    """The wallet's holds as matchmaking sees them: a hold is (player, pairing) → carry + fee, placed
    and released idempotently (as the wallet's command ids make them). Every call is recorded."""

    def __init__(
        self,
        balances: dict[str, int],
        refuse: frozenset[str] = frozenset(),
        ratings: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.balances, self.refuse = balances, refuse
        self.ratings = ratings or {}  # player -> (rating, deviation); a new player's by default
        self.rated: list[tuple[str, str]] = []
        self.holds: dict[tuple[str, str], int] = {}
        self.placed: list[tuple[str, str]] = []  # every place_hold call, (player, pairing)
        self.released: list[tuple[str, str]] = []  # every release_hold call, (player, pairing)

    async def available(self, player_id: str) -> int:
        await asyncio.sleep(0)
        return self.balances[player_id]

    async def rating(self, player_id: str, profile: str) -> SkillEstimate:
        self.rated.append((player_id, profile))
        return SkillEstimate(*self.ratings.get(player_id, (1500.0, 350.0)))

    async def display_name(self, player_id: str) -> str:
        return player_id.upper()

    async def place_hold(self, player_id: str, pairing_id: str, amount: int, fee: int) -> None:
        await asyncio.sleep(0)
        self.placed.append((player_id, pairing_id))
        if player_id in self.refuse:
            raise FailedPrecondition("not enough prestige")
        self.holds[(player_id, pairing_id)] = amount

    async def release_hold(self, player_id: str, pairing_id: str) -> None:
        await asyncio.sleep(0)
        self.released.append((player_id, pairing_id))
        self.holds.pop((player_id, pairing_id), None)

    async def inventory(self, player_id: str) -> dict[int, int]:
        return {}

    def held(self, player_id: str) -> list[str]:
        """The pairings the player's holds are placed for now."""
        return [pairing for player, pairing in self.holds if player == player_id]


class StalledWallet:
    """The shared wallet as a replica sees it whose PlaceHold calls do not return (the replica hangs,
    or dies, while the wallet answers) until ``answer`` is set; everything else goes to ``wallet``."""

    def __init__(self, wallet: Wallet) -> None:
        self.wallet = wallet
        self.stalled: list[tuple[str, str]] = []
        self.answer = asyncio.Event()

    async def place_hold(self, player_id: str, pairing_id: str, amount: int, fee: int) -> None:
        self.stalled.append((player_id, pairing_id))
        await self.answer.wait()
        await self.wallet.place_hold(player_id, pairing_id, amount, fee)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wallet, name)


class Tables:
    """OpenTable on in-memory table servers; those named in ``refuse`` are full."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.refuse = refuse
        self.opened: list[tuple[str, str]] = []  # (server, table)
        self.pairings: list[Pairing] = []  # the pairing of each table opened, as OpenTable got it

    async def open(self, server: TableServer, room: Room, pairing: Pairing) -> OpenedTable:
        await asyncio.sleep(0)
        if server.server_id in self.refuse:
            raise TableUnavailable("full")
        self.opened.append((server.server_id, pairing.table_id))
        self.pairings.append(pairing)
        return OpenedTable(server.address, {0: "ticket-0", 1: "ticket-1"})


class ReportingTables(Tables):
    """OpenTable as a server that names its process in the reply."""

    def __init__(self, incarnation: str) -> None:
        super().__init__()
        self.incarnation = incarnation

    async def open(self, server: TableServer, room: Room, pairing: Pairing) -> OpenedTable:
        opened = await super().open(server, room, pairing)
        return OpenedTable(opened.address, opened.tickets, incarnation=self.incarnation)


class LostTables:
    """The TableClosed matchmaking publishes for a lost table, recorded (or refused: NATS away).
    ``echo``: the published TableClosed comes back through matchmaking's own table-events consumer
    before the publish returns (the consumer is quicker than the PubAck)."""

    def __init__(self) -> None:
        self.closed: list[tuple[str, str, str, str]] = []  # (table, server, pairing, reason)
        self.refuse = False
        self.echo: Matchmaker | None = None

    async def close(self, pairing: Pairing, reason: str) -> None:
        if self.refuse:
            raise ConnectionError("nats is away")
        self.closed.append((pairing.table_id, pairing.server_id, pairing.pairing_id, reason))
        if self.echo is not None:
            await self.echo.table_closed(pairing.table_id)


class PooledBots:
    """Bot fill as ClientBots does it, minus the client: a house bot from the pool enqueues at once."""

    def __init__(self, pool: BotPool) -> None:
        self.pool = pool
        self.mm: Matchmaker | None = None
        self.started: list[tuple[str, str]] = []  # (bot id, ticket filled for)

    async def start(self, room: Room, for_ticket: str) -> str:
        assert self.mm is not None
        bot_id = self.pool.take(self.mm.engaged)
        if bot_id is None:
            raise BotsBusy("every house bot is playing")
        self.started.append((bot_id, for_ticket))
        self.mm.expect_bot(bot_id, for_ticket)
        await self.mm.enqueue(bot_id, room.room_id, room.carry_min)
        return bot_id

    async def stopped(self, bot_id: str, for_ticket: str) -> None:
        """What ClientBots does once the bot's client stops (its stream ended)."""
        assert self.mm is not None
        await self.mm.bot_stopped(bot_id, for_ticket)
        self.pool.give_back(bot_id)


def room(**overrides: object) -> Room:
    settings: dict[str, object] = {"room_id": "r", "profile": "erren", "fan_rate": 1, "fee": 5}
    settings.update(overrides)
    return Room(**settings)  # type: ignore[arg-type]


R = TypeVar("R", Ticket, Pairing)


def latest(mm: Matchmaker, record: R) -> R:
    """The record as ``mm`` holds it now (records are immutable: read again after acting)."""
    if isinstance(record, Ticket):
        return mm.records.tickets[record.ticket_id]
    return mm.records.pairings[record.pairing_id]


def pairing_of(mm: Matchmaker, ticket: Ticket) -> Pairing | None:
    """The pairing the ticket is in now (or was given its table by), None while it waits."""
    now = mm.records.tickets.get(ticket.ticket_id)
    return mm.records.pairings.get(now.pairing_id) if now is not None and now.pairing_id else None


def paired(mm: Matchmaker, ticket: Ticket) -> Pairing:
    """The pairing the ticket is in now, which it must be in."""
    pairing = pairing_of(mm, ticket)
    assert pairing is not None, f"{ticket.player_id} is not paired"
    return pairing


class Stream:
    """A player's stream (:meth:`Matchmaker.follow`) as a client reads it, every update in order."""

    def __init__(self, updates: AsyncIterator[updates.Update]) -> None:
        self.seen: list[updates.Update] = []
        self._read = 0
        self.task = asyncio.create_task(self._follow(updates))

    async def _follow(self, stream: AsyncIterator[updates.Update]) -> None:
        async for update in stream:
            self.seen.append(update)

    def new(self) -> list[updates.Update]:
        """The updates seen since the last call."""
        fresh = self.seen[self._read :]
        self._read = len(self.seen)
        return fresh

    def of(self, kind: type[Any]) -> list[Any]:
        return [update for update in self.seen if isinstance(update, kind)]

    @property
    def ended(self) -> bool:
        """The stream ended by itself (TableReady or Expired), as Enqueue's does."""
        return self.task.done() and not self.task.cancelled()

    async def close(self) -> None:
        """The client went away."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def turns(count: int = 3) -> None:
    """Let the loop run: the mirrors apply what the backend told them, the streams read it."""
    for _ in range(count):
        await asyncio.sleep(0)


async def run(*matchmakers: Matchmaker, rounds: int = 3) -> None:
    """Each matchmaker steps its rooms and waits for the work it spawned (holds, releases, tables),
    ``rounds`` times: enough for a pairing to be made, held and given its table."""
    for _ in range(rounds):
        await turns()
        for mm in matchmakers:
            await mm.tick()
        for mm in matchmakers:
            await mm.settle()
    await turns()


class Mirrors:
    """Mirrors of one in-memory store, one a replica, stopped by ``close``."""

    def __init__(self) -> None:
        self.backend = MemoryBackend()
        self._started: list[Mirror] = []

    async def mirror(self, on_change: Callable[[str, bytes | None], None] | None = None) -> Mirror:
        return await self.start(Mirror(self.backend, on_change=on_change))

    async def start(self, mirror: Mirror) -> Mirror:
        """Start a mirror of ``backend`` made by the test."""
        await mirror.start()
        self._started.append(mirror)
        return mirror

    def backend_keys(self, prefix: str) -> list[str]:
        """The keys the store holds under ``prefix``, sorted."""
        return sorted(key for key in self.backend.keys() if key.startswith(prefix + "."))

    async def close(self) -> None:
        for mirror in self._started:
            await mirror.stop()


class Harness:
    """Matchmakers on one clock and one shared store, and the streams that follow them; ``close``
    stops them all."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.backend = MemoryBackend()
        self._streams: dict[Matchmaker, list[Stream]] = collections.defaultdict(list)

    async def matchmaker(
        self,
        rooms: Room | dict[str, Room],
        wallet: Any,
        tables: Tables | None = None,
        directory: TableServerDirectory | None = None,
        **kwargs: Any,
    ) -> Matchmaker:
        mm = await Matchmaker.in_memory(
            {rooms.room_id: rooms} if isinstance(rooms, Room) else rooms,
            wallet,
            tables or Tables(),
            directory or TableServerDirectory(clock=self.clock),
            backend=self.backend,
            clock=self.clock,
            **kwargs,
        )
        self._streams[mm] = []
        bots = kwargs.get("bots")
        if isinstance(bots, PooledBots):
            bots.mm = mm
        return mm

    async def leased(
        self,
        rooms: dict[str, Room],
        wallet: Any,
        replica_id: str,
        monotonic: Clock,
        *,
        lease_seconds: float = 5.0,
        **kwargs: Any,
    ) -> Matchmaker:
        """A replica that owns the rooms its leases give it, on its own monotonic clock, wired as
        services/matchmaking/main.py wires it (its leases renew when the test says: ``renew()``)."""
        records = Records()
        leases: Leases | None = None

        def on_change(key: str, value: bytes | None) -> None:
            records.apply(key, value)
            if leases is not None:
                leases.observe(key, value)

        mirror = Mirror(self.backend, on_change=on_change)
        records.attach(mirror)
        await mirror.start()
        leases = Leases(mirror, replica_id, list(rooms), lease_seconds=lease_seconds, clock=monotonic)
        await leases.start()
        mm = Matchmaker(
            rooms,
            wallet,
            kwargs.pop("tables", None) or Tables(),
            kwargs.pop("directory", None) or TableServerDirectory(clock=self.clock),
            records,
            replica_id=leases.process,  # streams are followed by this process (main.py)
            leases=leases,
            clock=self.clock,
            **kwargs,
        )
        self._streams[mm] = []
        return mm

    def follow(self, mm: Matchmaker, ticket: Ticket) -> Stream:
        """The ticket's player follows it on ``mm``."""
        stream = Stream(mm.follow(ticket.player_id, ticket.ticket_id))
        self._streams[mm].append(stream)
        return stream

    async def stop(self, mm: Matchmaker) -> None:
        """The replica stops: its streams break, its background work is cancelled, its mirror stops."""
        for stream in self._streams.pop(mm, []):
            await stream.close()
        await mm.close()
        if mm.leases is not None:
            await mm.leases.stop(release=False)
        await mm.records.mirror.stop()

    async def close(self) -> None:
        for mm in list(self._streams):
            await self.stop(mm)


@pytest_asyncio.fixture
async def harness() -> AsyncIterator[Harness]:
    """A :class:`Harness` for one test, closed after it (tests/unit/conftest.py offers it)."""
    made = Harness()
    yield made
    await made.close()


@pytest_asyncio.fixture
async def mirrors() -> AsyncIterator[Mirrors]:
    """:class:`Mirrors` for one test, stopped after it (tests/unit/conftest.py offers it)."""
    made = Mirrors()
    yield made
    await made.close()
