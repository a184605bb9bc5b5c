"""What one matchmaking process holds: its rooms, queue entries and pairings, and the work they share.

:class:`MatchmakerState` is the bottom layer of :class:`~services.matchmaking.core.Matchmaker`: the
state and the steps every later layer takes on it (a ticket finished, positions sent, a pairing ended
and its holds released, background work spawned). Allocation (:mod:`.allocation`), negotiation
(:mod:`.negotiation`) and the queue (:mod:`.core`) build on it.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable

from duelmahjong.platform.errors import NotFound
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.ratelimit import RateLimiter
from services.matchmaking import codes, updates
from services.matchmaking.directory import TableServerDirectory
from services.matchmaking.pairing import (
    ALLOCATING,
    ENDED,
    BotFill,
    LostTables,
    Pairing,
    QueueEntry,
    TableLocation,
    Tables,
    Wallet,
)
from services.matchmaking.rooms import Room

_log = get_logger("matchmaking")
CLOSED_TABLES_KEPT = 4096
# The private codes one player may try (JoinPrivateTable), unless the service is configured otherwise:
# docs/protocol.md "Private tables" says what this costs a guesser.
PRIVATE_JOINS_PER_MINUTE = 10
PRIVATE_JOIN_BURST = 5

Clock = Callable[[], float]


class MatchmakerState:
    """Every queue entry and pairing of this process, and the steps the layers above share."""

    def __init__(
        self,
        rooms: dict[str, Room],
        wallet: Wallet,
        tables: Tables,
        directory: TableServerDirectory,
        *,
        bots: BotFill | None = None,
        lost_tables: LostTables | None = None,
        server_lost_seconds: float = 60.0,
        adoption_grace_seconds: float = 0.0,
        private_joins: RateLimiter | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.rooms = rooms
        self.directory = directory
        self._wallet = wallet
        self._tables = tables
        self._bots = bots
        self._lost_tables = lost_tables  # None: tables are never declared lost (nothing could close them)
        self._server_lost_seconds = server_lost_seconds
        # A lost table is closed only this long after it was found lost, if no server adopted it by
        # then (0: closed at once).
        self._adoption_grace_seconds = adoption_grace_seconds
        self._clock = clock
        self._entries: dict[str, QueueEntry] = {}  # by ticket id
        self._player_ticket: dict[str, str] = {}  # one queue (or pairing) per player
        self._pairings: dict[str, Pairing] = {}
        self._by_table: dict[str, Pairing] = {}
        # The last CLOSED_TABLES_KEPT closed tables, oldest first: LocateTable tells their players
        # they closed (a seat whose stream broke as its table ended must not wait for it).
        self._closed_tables: collections.OrderedDict[str, TableLocation] = collections.OrderedDict()
        # Closed tables of watchable rooms, listed for spectators until their delayed stream has shown
        # the end (table id → the pairing, until when on the clock).
        self._watched_ends: dict[str, tuple[Pairing, float]] = {}
        self._bot_players: dict[str, str] = {}  # bot player id → the ticket it fills for
        # The codes of the private tables waiting for a friend, and the guesses each player may try.
        self._private = codes.LiveCodes[QueueEntry](lambda entry: not entry.done and entry.pairing is None)
        self._private_joins = private_joins or RateLimiter(
            per_minute=PRIVATE_JOINS_PER_MINUTE, burst=PRIVATE_JOIN_BURST
        )
        self._tasks: set[asyncio.Task[None]] = set()
        # Outcomes by (what, room id), read by the metrics collector: paired, expired, declined,
        # hold_refused, bot_fill, table_opened, table_lost.
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        # TableAdopted events that moved a table, by how ("orphan", "handed_over"), read by the metrics.
        self.adoptions: collections.Counter[str] = collections.Counter()
        # Called with (room id, seconds a player queued) for each human paired; the metrics set it.
        self.observe_wait: Callable[[str, float], None] = lambda _room_id, _seconds: None

    def room(self, room_id: str) -> Room:
        room = self.rooms.get(room_id)
        if room is None:
            raise NotFound(f"no room {room_id!r}; ListRooms names the rooms")
        return room

    def waiting(self, room_id: str) -> int:
        return len(self._queued(room_id))

    def _queued(self, room_id: str) -> list[QueueEntry]:
        """The room's queue: its unpaired entries but a private table's, first come first."""
        waiting = [
            e
            for e in self._entries.values()
            if e.room.room_id == room_id and e.pairing is None and not e.private_code
        ]
        return sorted(waiting, key=lambda e: e.enqueued_at)

    def _finish(self, entry: QueueEntry, last: updates.Update | None) -> None:
        entry.done = True
        self._entries.pop(entry.ticket_id, None)
        if self._player_ticket.get(entry.player_id) == entry.ticket_id and (
            entry.pairing is None or entry.pairing.state == ENDED
        ):
            del self._player_ticket[entry.player_id]
        if entry.held_for and entry.pairing is None:
            # A private table's opener, never joined (expired, cancelled, its stream gone): its hold
            # was placed when it opened.
            self._private.forget(entry.private_code)
            self._spawn(self._release_held(entry))
        if last is not None:
            entry.send(last)
        entry.send(updates.END)
        self._send_positions(entry.room.room_id)

    def _send_positions(self, room_id: str) -> None:
        waiting = self._queued(room_id)
        for index, entry in enumerate(waiting):
            entry.send(updates.Position(index + 1, len(waiting)))

    async def _release(self, entry: QueueEntry, pairing: Pairing) -> None:
        await self._release_held(entry, pairing.pairing_id)

    async def _release_held(self, entry: QueueEntry, pairing_id: str = "") -> None:
        try:
            await self._wallet.release_hold(entry.player_id, pairing_id or entry.held_for)
        except Exception:
            _log.exception("releasing a hold failed", extra={"fields": {"player_id": entry.player_id}})

    def _pairing_of(self, player_id: str, pairing_id: str) -> tuple[Pairing, int]:
        pairing = self._pairings.get(pairing_id)
        if pairing is None:
            raise NotFound(f"no pairing {pairing_id!r}")
        return pairing, pairing.seat_of(player_id)

    def _end_pairing(self, pairing: Pairing, reason: str) -> None:
        """Before a table: the pairing ends, both holds are released, both streams end."""
        pairing.state = ENDED
        self._pairings.pop(pairing.pairing_id, None)
        for entry in pairing.seats:
            self._finish(entry, updates.Expired(reason))
            self._spawn(self._release(entry, pairing))

    def awaiting_table(self) -> int:
        """Pairings agreed and waiting for a table server with room."""
        return sum(1 for p in self._pairings.values() if p.state == ALLOCATING)

    def now(self) -> float:
        return self._clock()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
