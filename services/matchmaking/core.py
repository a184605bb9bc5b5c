"""Matchmaking's domain: queues, pairing, multiplier negotiation (T7) and table allocation, for a
fleet of replicas that share one store (:mod:`.records`, docs/architecture.md "Matchmaking as a fleet").

:class:`Matchmaker` is the thin facade the API calls. The work is done by collaborators, each one
concept over the shared records: :class:`~.queue.Queue` (tickets), :class:`~.pairings.Pairings`
(pairing, holds, ends and releases), :class:`~.negotiation.Negotiation` (T7 and the pairing RPCs),
:class:`~.allocation.Allocation` (tables), :class:`~.private.PrivateTables` (codes),
:class:`~.botfill.BotFills` (house bots) and :class:`~.feed.Feed` (a player's stream).

Any replica answers any RPC. The periodic work of a room — pairing its queue, its deadlines, bot
fill, allocation, lost tables — is done by the room's owner (:mod:`.leases`): :meth:`Matchmaker.step`,
woken by every change of the room's records and at least every tick. Time is read from an injected
clock, so tests drive expiry, widening windows and bot fill without sleeping.

The life of a ticket: queued (balance checked) → matched (a pairing) → the wallet holds carry + fee
for both players (only then do they count as ready) → negotiation (duel, T7) → allocation on the
least-loaded table server with room (none → the pairing waits, nothing is lost) → table ready →
TableClosed from the table server, or — when that server restarted or fell silent — from matchmaking
on the lost table's behalf (the wallet then releases the holds).
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from duelmahjong.platform.errors import FailedPrecondition, NotFound, PermissionDenied
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.ratelimit import RateLimiter
from services.matchmaking import updates
from services.matchmaking.allocation import Allocation
from services.matchmaking.botfill import BotFills
from services.matchmaking.directory import TableServerDirectory
from services.matchmaking.feed import Feed, negotiation_of
from services.matchmaking.leases import Leases
from services.matchmaking.negotiation import Negotiation
from services.matchmaking.pairings import Pairings
from services.matchmaking.ports import BotFill, LostTables, TableLocation, Tables, Wallet
from services.matchmaking.private import PrivateTables
from services.matchmaking.queue import Fleet, Queue
from services.matchmaking.records import (
    ALLOCATING,
    HOLDING,
    NEGOTIATING,
    WAITING,
    Pairing,
    Records,
    Ticket,
    pairings_topic,
    room_topic,
)
from services.matchmaking.rooms import Room
from services.matchmaking.store import Conflict, MemoryBackend, Mirror

# The private codes one player may try (JoinPrivateTable), unless the service is configured otherwise:
# docs/protocol.md "Private tables" says what this costs a guesser.
PRIVATE_JOINS_PER_MINUTE = 10
PRIVATE_JOIN_BURST = 5
STREAM_GRACE_SECONDS = 10.0
OVERDUE_SECONDS = 5.0  # a deadline passed this long ago and not acted on is overdue (a metric)
HOUSEKEEPING_SECONDS = 5.0
LOST_CHECK_SECONDS = 1.0  # how often a room's owner asks whether its tables' servers are lost
_log = get_logger("matchmaking")

Clock = Callable[[], float]
T = TypeVar("T")


class Matchmaker:
    def __init__(
        self,
        rooms: dict[str, Room],
        wallet: Wallet,
        tables: Tables,
        directory: TableServerDirectory,
        records: Records,
        *,
        replica_id: str = "local",
        leases: Leases | None = None,
        bots: BotFill | None = None,
        lost_tables: LostTables | None = None,
        server_lost_seconds: float = 60.0,
        adoption_grace_seconds: float = 0.0,
        private_joins: RateLimiter | None = None,
        stream_grace_seconds: float = STREAM_GRACE_SECONDS,
        clock: Clock = time.time,
    ) -> None:
        self.rooms = rooms
        self.records = records
        self.directory = directory
        self.leases = leases  # None: this process is the whole fleet and owns every room
        self._clock = clock
        self._stream_grace = stream_grace_seconds
        self._tasks: set[asyncio.Task[None]] = set()
        # The streams following each ticket here: a client whose stream broke may follow again on this
        # replica before the broken one is noticed and closed.
        self._streams: collections.Counter[str] = collections.Counter()
        # Outcomes by (what, room id), read by the metrics collector: paired, expired, cancelled,
        # unfollowed, declined, hold_refused, lapsed, bot_fill, table_opened, table_lost,
        # private_opened, private_joined.
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self.holds_released: collections.Counter[str] = collections.Counter()
        # Called with (room id, seconds a player queued) for each human paired; the metrics set it.
        self.observe_wait: Callable[[str, float], None] = lambda _room_id, _seconds: None
        fleet = Fleet(
            records=records,
            rooms=rooms,
            wallet=wallet,
            clock=clock,
            replica_id=replica_id,
            spawn=self._spawn,
            count=self._count,
            released=self._released,
            waited=lambda room_id, seconds: self.observe_wait(room_id, seconds),
        )
        self._fleet = fleet
        self.queue = Queue(fleet)
        self.pairings = Pairings(fleet, self.queue)
        self.negotiation = Negotiation(fleet, self.pairings)
        self.allocation = Allocation(
            fleet,
            tables,
            directory,
            lost_tables=lost_tables,
            server_lost_seconds=server_lost_seconds,
            adoption_grace_seconds=adoption_grace_seconds,
        )
        self.private = PrivateTables(
            fleet,
            self.queue,
            self.pairings,
            private_joins or RateLimiter(per_minute=PRIVATE_JOINS_PER_MINUTE, burst=PRIVATE_JOIN_BURST),
        )
        self.bot_fills = BotFills(fleet, self.queue, bots)
        self.feed = Feed(records, rooms, clock)
        self.replica_id = replica_id

    @classmethod
    async def in_memory(
        cls,
        rooms: dict[str, Room],
        wallet: Wallet,
        tables: Tables,
        directory: TableServerDirectory,
        **kwargs: object,
    ) -> Matchmaker:
        """A matchmaker whose store is this process's memory (tests, the benchmark's reference);
        ``backend=`` a shared :class:`MemoryBackend` plays a fleet in one process."""
        backend = kwargs.pop("backend", None) or MemoryBackend()
        records = Records()
        mirror = Mirror(backend, on_change=records.apply)  # type: ignore[arg-type]
        records.attach(mirror)
        await mirror.start()
        return cls(rooms, wallet, tables, directory, records, **kwargs)  # type: ignore[arg-type]

    # --- the queue -----------------------------------------------------------------------------------
    def room(self, room_id: str) -> Room:
        return self._fleet.room(room_id)

    def waiting(self, room_id: str) -> int:
        return len(self.records.waiting(room_id))

    async def enqueue(self, player_id: str, room_id: str, carry: int) -> Ticket:
        room = self.room(room_id)
        fill_for = self.bot_fills.take_expected(player_id)
        return await self.queue.admit(player_id, room, carry, is_bot=bool(fill_for), fill_for=fill_for)

    async def open_private(self, player_id: str, room_id: str, carry: int) -> Ticket:
        return await self.private.open(player_id, room_id, carry)

    async def join_private(self, player_id: str, code: str, carry: int) -> Ticket:
        return await self.private.join(player_id, code, carry)

    async def cancel(self, player_id: str, ticket_id: str) -> None:
        await self._fresh(lambda: self.queue.cancel(player_id, ticket_id))

    async def _fresh(self, answer: Callable[[], Awaitable[T]]) -> T:
        """``answer()``; if it refuses the player (not found, not now, not yours), asked again once
        this replica's view holds every write the store had: a refusal must not come from a mirror
        a moment behind another replica's write. Only for answers that write nothing before refusing."""
        try:
            return await answer()
        except (NotFound, FailedPrecondition, PermissionDenied):
            if not await self.records.mirror.sync():
                raise
        return await answer()

    async def follow(self, player_id: str, ticket_id: str) -> AsyncIterator[updates.Update]:
        """The updates of the player's ticket from its state now; while this stream lasts the ticket
        counts as followed (an unpaired ticket nobody follows for the stream grace is cancelled)."""

        async def own() -> Ticket:
            return self.queue.own_ticket(player_id, ticket_id)

        ticket = await self._fresh(own)
        self._streams[ticket_id] += 1
        try:
            await self._followed(ticket, by=self.replica_id, since=0.0)
            async for update in self.feed.follow(ticket_id):
                yield update
        finally:
            self._streams[ticket_id] -= 1
            if not self._streams[ticket_id]:  # the last of this replica's streams of the ticket
                del self._streams[ticket_id]
                current = self.records.tickets.get(ticket_id)
                if current is not None and current.state == WAITING and current.follower == self.replica_id:
                    await self._followed(current, by=self.replica_id, since=self._clock())

    async def _followed(self, ticket: Ticket, *, by: str, since: float) -> None:
        if (ticket.follower, ticket.unfollowed_at) == (by, since) or ticket.state != WAITING:
            return
        try:
            await self.records.update(ticket, follower=by, unfollowed_at=since)
        except Conflict:
            pass  # it changed (paired, expired): the feed shows what it became

    def is_followed(self, ticket: Ticket) -> bool:
        if ticket.unfollowed_at:
            return False
        return self.leases is None or self.leases.alive(ticket.follower)

    # --- pairings --------------------------------------------------------------------------------------
    async def propose(self, player_id: str, pairing_id: str, multiplier: int) -> updates.Negotiation:
        pairing, seat = await self._fresh(lambda: self.negotiation.propose(player_id, pairing_id, multiplier))
        return negotiation_of(pairing, seat)

    async def respond(self, player_id: str, pairing_id: str, accept: bool) -> updates.Negotiation:
        pairing, seat = await self._fresh(lambda: self.negotiation.respond(player_id, pairing_id, accept))
        return negotiation_of(pairing, seat)

    def continue_pairing(self, player_id: str, pairing_id: str) -> tuple[int, bool]:
        return self.negotiation.continue_pairing(player_id, pairing_id)

    async def leave_pairing(self, player_id: str, pairing_id: str) -> None:
        await self._fresh(lambda: self.negotiation.leave(player_id, pairing_id))

    # --- tables --------------------------------------------------------------------------------------
    async def locate(self, player_id: str, table_id: str) -> TableLocation:
        async def located() -> TableLocation:
            return self.allocation.locate(player_id, table_id)

        return await self._fresh(located)

    def live_tables(self, room_id: str) -> list[Pairing]:
        return self.allocation.live_tables(room_id)

    def awaiting_table(self) -> int:
        return self.allocation.awaiting_table()

    async def table_closed(self, table_id: str) -> bool:
        return await self.allocation.table_closed(table_id)

    async def table_adopted(
        self, table_id: str, *, server_id: str, address: str, incarnation: str, kind: str
    ) -> bool:
        return await self.allocation.table_adopted(
            table_id, server_id=server_id, address=address, incarnation=incarnation, kind=kind
        )

    # --- the rooms' owner's work ---------------------------------------------------------------------
    def owns(self, room_id: str) -> bool:
        return self.leases is None or self.leases.owns(room_id)

    async def tick(self) -> None:
        """One step, the lost tables' check and the housekeeping of every room this replica owns (tests
        drive it)."""
        for room_id in self.rooms:
            if self.owns(room_id):
                await self.step(room_id)
                await self.allocation.check_lost(room_id, self._clock())
        await self.housekeeping()

    async def housekeeping(self) -> None:
        """The slower work of the rooms this replica owns: releases to retry, records to forget; and,
        by the owner of the first room, the private-join buckets that filled up again and the
        heartbeats of replicas long dead."""
        now = self._clock()
        for room_id, room in self.rooms.items():
            if self.owns(room_id):
                await self.queue.housekeep(room, now)
                await self.pairings.housekeep(room, now)
        first = min(self.rooms, default="")
        if first and self.owns(first):
            await self.private.forget_idle_joins()
            if self.leases is not None:
                await self.leases.forget_dead()

    async def step(self, room_id: str) -> None:
        """Act on what is due in the room: expiries, streams gone, holds, negotiations, releases,
        allocation, lost tables; then pair its queue and ask for bot fill."""
        room = self.rooms[room_id]
        now = self._clock()
        await self.queue.sweep(room, now, self.is_followed, self._stream_grace)
        await self.pairings.sweep(room, now)
        await self.allocation.sweep(room_id, now)
        paired = await self._pair_room(room, now)
        await self.bot_fills.sweep(room, now, paired)

    async def _pair_room(self, room: Room, now: float) -> set[str]:
        waiting = self.records.waiting(room.room_id)
        taken: set[str] = set()
        for index, first in enumerate(waiting):
            if first.ticket_id in taken:
                continue
            for second in waiting[index + 1 :]:
                if second.ticket_id in taken or not _compatible(room, first, second, now):
                    continue
                if not await self.pairings.pair(room, first, second):
                    # A ticket changed since this replica's mirror read the queue: the rest of it is as
                    # stale. The change wakes the room's next step, which reads it again.
                    return taken
                taken.update((first.ticket_id, second.ticket_id))
                break
        return taken

    async def run(self, interval: float = 0.2) -> None:
        """Each room's step, at every change of its records and at least every ``interval``."""
        workers = [asyncio.create_task(self._room_worker(room_id, interval)) for room_id in self.rooms]
        workers.append(asyncio.create_task(self._housekeeper(HOUSEKEEPING_SECONDS)))
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _housekeeper(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.housekeeping()
            except Exception:
                _log.exception("housekeeping failed")

    async def _room_worker(self, room_id: str, interval: float) -> None:
        mirror = self.records.mirror
        topics = (room_topic(room_id), pairings_topic(room_id))
        loop = asyncio.get_running_loop()
        lost_checked = 0.0
        while True:
            changed = mirror.changed(*topics)
            try:
                if self.owns(room_id):
                    await self.step(room_id)
                    # The tables in play, whose server may be lost: once a second, not at every change.
                    if loop.time() - lost_checked >= LOST_CHECK_SECONDS:
                        lost_checked = loop.time()
                        await self.allocation.check_lost(room_id, self._clock())
                await asyncio.wait_for(changed.wait(), timeout=interval)
            except TimeoutError:
                pass
            except Exception:
                _log.exception("a room step failed", extra={"fields": {"room": room_id}})
                await asyncio.sleep(interval)
            finally:
                mirror.forget(changed, *topics)

    # --- what the metrics read -----------------------------------------------------------------------
    def overdue(self) -> int:
        """Stored deadlines passed more than :data:`OVERDUE_SECONDS` ago that no replica acted on."""
        late = self._clock() - OVERDUE_SECONDS
        tickets = sum(1 for t in self.records.tickets.values() if t.state == WAITING and t.expires_at < late)
        pairings = sum(
            1
            for p in self.records.pairings.values()
            if p.state in (HOLDING, NEGOTIATING, ALLOCATING)
            and p.deadline
            and p.deadline < late
            and not (p.state == ALLOCATING and not p.table_id)
        )
        return tickets + pairings

    def stranded(self) -> int:
        return self.pairings.stranded(self._clock())

    # --- bot fill ------------------------------------------------------------------------------------
    def attach_bots(self, bots: BotFill) -> None:
        self.bot_fills.bots = bots

    def expect_bot(self, bot_player_id: str, for_ticket: str) -> None:
        self.bot_fills.expect(bot_player_id, for_ticket)

    def engaged(self, player_id: str) -> bool:
        return self.bot_fills.engaged(player_id)

    async def bot_stopped(self, bot_player_id: str, for_ticket: str) -> None:
        await self.bot_fills.stopped(bot_player_id, for_ticket)

    # --- internals -----------------------------------------------------------------------------------
    def now(self) -> float:
        return self._clock()

    def _count(self, what: str, room_id: str) -> None:
        self.counts[what, room_id] += 1

    def _released(self, how: str) -> None:
        self.holds_released[how] += 1

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the background work spawned so far (holds, releases, allocations): tests."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _compatible(room: Room, a: Ticket, b: Ticket, now: float) -> bool:
    if a.player_id == b.player_id:
        return False
    if a.is_bot or b.is_bot:  # a bot plays only the player it was started for
        return a.fill_for == b.ticket_id or b.fill_for == a.ticket_id
    # Skill ratings with their uncertainty, not balances; the window widens with waiting time and the
    # more patient of the two decides.
    waited = now - min(a.enqueued_at, b.enqueued_at)
    window = room.rating_window_for((a.deviation, b.deviation), waited)
    return abs(a.rating - b.rating) <= window
