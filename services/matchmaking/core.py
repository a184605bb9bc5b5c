"""Matchmaking's domain: queues, pairing, multiplier negotiation (T7) and table allocation.

One :class:`Matchmaker` owns every queue entry and pairing of this process. Updates for a player's
``Enqueue`` stream go into that entry's ``updates`` queue (domain values of :mod:`.updates`; the API
layer turns them into protobuf). Time is read from an injected clock and the periodic work is one
:meth:`Matchmaker.tick`, so tests drive expiry, widening windows and bot fill without sleeping.

The life of a ticket: queued (balance checked) → matched (a pairing) → the wallet holds carry + fee
for both players (only then do they count as ready) → negotiation (duel, T7) → allocation on the
least-loaded table server with room (none → the pairing waits, nothing is lost) → table ready →
TableClosed from the table server, or — when that server restarted or fell silent for
``server_lost_seconds`` — from matchmaking on the lost table's behalf (the wallet then releases the holds).
"""

from __future__ import annotations

import asyncio
import collections
import time
import uuid
from collections.abc import Callable

from duelmahjong.platform.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from duelmahjong.platform.logging import get_logger
from services.matchmaking import updates
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.pairing import (
    ALLOCATING,
    ENDED,
    NEGOTIATING,
    PLAYING,
    BotFill,
    BotsBusy,
    LostTables,
    Pairing,
    QueueEntry,
    Tables,
    TableUnavailable,
    Wallet,
)
from services.matchmaking.rooms import Room

NEGOTIABLE = (1, 2, 5, 10)  # T7
BOT_RETRY_SECONDS = 1.0  # a bot fill that failed (not merely busy) is tried again after this
LOST_RETRY_SECONDS = 5.0  # closing a lost table failed (NATS away): tried again after this
TABLE_LOST_REASON = "the table server was lost"
_log = get_logger("matchmaking")

Clock = Callable[[], float]


class Matchmaker:
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
        clock: Clock = time.time,
    ) -> None:
        self.rooms = rooms
        self.directory = directory
        self._wallet = wallet
        self._tables = tables
        self._bots = bots
        self._lost_tables = lost_tables  # None: tables are never declared lost (nothing could close them)
        self._server_lost_seconds = server_lost_seconds
        self._clock = clock
        self._entries: dict[str, QueueEntry] = {}  # by ticket id
        self._player_ticket: dict[str, str] = {}  # one queue (or pairing) per player
        self._pairings: dict[str, Pairing] = {}
        self._by_table: dict[str, Pairing] = {}
        self._bot_players: dict[str, str] = {}  # bot player id → the ticket it fills for
        self._tasks: set[asyncio.Task[None]] = set()
        # Outcomes by (what, room id), read by the metrics collector: paired, expired, declined,
        # hold_refused, bot_fill, table_opened, table_lost.
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        # Called with (room id, seconds a player queued) for each human paired; the metrics set it.
        self.observe_wait: Callable[[str, float], None] = lambda _room_id, _seconds: None

    # --- queue --------------------------------------------------------------------------------
    def room(self, room_id: str) -> Room:
        room = self.rooms.get(room_id)
        if room is None:
            raise NotFound(f"no room {room_id!r}; ListRooms names the rooms")
        return room

    def waiting(self, room_id: str) -> int:
        return sum(1 for e in self._entries.values() if e.room.room_id == room_id and e.pairing is None)

    async def enqueue(self, player_id: str, room_id: str, carry: int) -> QueueEntry:
        room = self.room(room_id)
        if not room.carry_min <= carry <= room.carry_max:
            raise InvalidArgument(
                f"carry {carry} is outside room {room_id}'s range {room.carry_min}..{room.carry_max}"
            )
        if player_id in self._player_ticket:
            raise FailedPrecondition(
                "you are already in a queue or a pairing; a player queues once at a time"
            )
        self._player_ticket[player_id] = "pending"  # claim the slot before awaiting the wallet
        try:
            available = await self._wallet.available(player_id)
            display_name = await self._wallet.display_name(player_id)
        except BaseException:
            del self._player_ticket[player_id]
            raise
        needed = room.needed(carry)
        if available < needed:
            del self._player_ticket[player_id]
            raise FailedPrecondition(
                f"room {room_id} needs {needed} prestige available (carry {carry} + fee {room.fee}, "
                f"minimum {room.minimum_balance}); you have {available}"
            )
        now = self._clock()
        entry = QueueEntry(
            ticket_id=f"q-{uuid.uuid4().hex[:16]}",
            player_id=player_id,
            room=room,
            carry=carry,
            rating=available,  # prestige is the rating the window compares
            enqueued_at=now,
            expires_at=now + room.ticket_seconds,
            display_name=display_name,
        )
        fill_for = self._bot_players.pop(player_id, "")
        if fill_for:
            entry.is_bot, entry.fill_for = True, fill_for
        self._entries[entry.ticket_id] = entry
        self._player_ticket[player_id] = entry.ticket_id
        entry.send(updates.Queued(entry.ticket_id, room.ticket_seconds))
        self._send_positions(room.room_id)
        self.tick()
        return entry

    def cancel(self, player_id: str, ticket_id: str) -> None:
        entry = self._entries.get(ticket_id)
        if entry is None or entry.done:
            raise NotFound(f"no queue ticket {ticket_id!r}")
        if entry.player_id != player_id:
            raise PermissionDenied("this queue ticket is another player's")
        if entry.pairing is not None:
            raise FailedPrecondition("already paired; leave the pairing instead")
        self._finish(entry, updates.Expired("cancelled by the player"))

    def stream_closed(self, entry: QueueEntry) -> None:
        """The player's Enqueue stream went away: an unpaired ticket is cancelled with it."""
        if not entry.done and entry.pairing is None:
            self._finish(entry, updates.Expired("the queue stream closed"))

    def _finish(self, entry: QueueEntry, last: updates.Update | None) -> None:
        entry.done = True
        self._entries.pop(entry.ticket_id, None)
        if self._player_ticket.get(entry.player_id) == entry.ticket_id and (
            entry.pairing is None or entry.pairing.state == ENDED
        ):
            del self._player_ticket[entry.player_id]
        if last is not None:
            entry.send(last)
        entry.send(updates.END)
        self._send_positions(entry.room.room_id)

    def _send_positions(self, room_id: str) -> None:
        waiting = [e for e in self._entries.values() if e.room.room_id == room_id and e.pairing is None]
        waiting.sort(key=lambda e: e.enqueued_at)
        for index, entry in enumerate(waiting):
            entry.send(updates.Position(index + 1, len(waiting)))

    # --- the periodic work --------------------------------------------------------------------
    def tick(self) -> None:
        """Expire tickets and negotiations, pair players, request bot fill, retry allocations, close
        the tables of lost servers."""
        now = self._clock()
        for entry in list(self._entries.values()):
            if entry.pairing is None and now >= entry.expires_at:
                self.counts["expired", entry.room.room_id] += 1
                self._finish(entry, updates.Expired("the queue ticket expired before a match was found"))
            elif entry.is_bot and entry.pairing is None and not self._waits_for_bot(entry.fill_for):
                # Its player left or paired with someone else: free the house bot for another fill.
                self._finish(entry, updates.Expired("the player this bot filled for is no longer waiting"))
        for pairing in list(self._pairings.values()):
            if pairing.state == NEGOTIATING and now >= pairing.negotiation_deadline:
                self._end_pairing(pairing, "the multiplier negotiation timed out (T7)")
        for room in self.rooms.values():
            self._pair_room(room, now)
        for pairing in list(self._pairings.values()):
            if pairing.state == ALLOCATING:
                self._allocate(pairing)
        self._close_lost_tables(now)

    def _pair_room(self, room: Room, now: float) -> None:
        waiting = sorted(
            (e for e in self._entries.values() if e.room is room and e.pairing is None),
            key=lambda e: e.enqueued_at,
        )
        taken: set[str] = set()
        for index, first in enumerate(waiting):
            if first.ticket_id in taken:
                continue
            for second in waiting[index + 1 :]:
                if second.ticket_id in taken or not self._compatible(first, second, now):
                    continue
                taken.update((first.ticket_id, second.ticket_id))
                self._pair(room, first, second)
                break
        for entry in waiting:
            if (
                entry.ticket_id not in taken
                and not entry.is_bot
                and not entry.bot_requested
                and self._bots is not None
                and room.bot_fill_seconds > 0
                and now - entry.enqueued_at >= room.bot_fill_seconds
                and now >= entry.bot_not_before
            ):
                entry.bot_requested = True
                self._spawn(self._start_bot(room, entry))

    def _compatible(self, a: QueueEntry, b: QueueEntry, now: float) -> bool:
        if a.player_id == b.player_id:
            return False
        if a.is_bot or b.is_bot:  # a bot plays only the player it was started for
            return a.fill_for == b.ticket_id or b.fill_for == a.ticket_id
        # The window widens with waiting time; the more patient of the two decides.
        window = max(
            a.room.rating_window_after(now - a.enqueued_at), a.room.rating_window_after(now - b.enqueued_at)
        )
        return abs(a.rating - b.rating) <= window

    async def _start_bot(self, room: Room, entry: QueueEntry) -> None:
        if self._bots is None:
            return
        try:
            await self._bots.start(room, entry.ticket_id)
        except BotsBusy as busy:  # expected: no log, the ticket keeps waiting for a bot
            entry.bot_requested = False
            entry.bot_not_before = self._clock() + busy.retry_after
            return
        except Exception:
            _log.exception("bot fill failed", extra={"fields": {"room": room.room_id}})
            self._retry_bot_fill(entry)
            return
        self.counts["bot_fill", room.room_id] += 1

    def _retry_bot_fill(self, entry: QueueEntry) -> None:
        entry.bot_requested = False
        entry.bot_not_before = self._clock() + BOT_RETRY_SECONDS

    def _waits_for_bot(self, ticket_id: str) -> bool:
        entry = self._entries.get(ticket_id)
        return entry is not None and not entry.done and entry.pairing is None

    def attach_bots(self, bots: BotFill) -> None:
        self._bots = bots

    def expect_bot(self, bot_player_id: str, for_ticket: str) -> None:
        """Called by bot fill before the bot enqueues: that bot pairs only with ``for_ticket``."""
        self._bot_players[bot_player_id] = for_ticket

    def engaged(self, player_id: str) -> bool:
        """The player is queued, paired, at a table not yet closed, or an expected bot: a house bot
        that is must not start another fill."""
        return player_id in self._player_ticket or player_id in self._bot_players

    def bot_stopped(self, bot_player_id: str, for_ticket: str) -> None:
        """Bot fill's client for ``for_ticket`` stopped. If it never got that player a table (its
        enqueue or hold was refused, its pairing ended), the player, still waiting, gets another fill."""
        if self._bot_players.get(bot_player_id) == for_ticket:
            del self._bot_players[bot_player_id]
        entry = self._entries.get(for_ticket)
        if entry is not None and self._waits_for_bot(for_ticket) and entry.bot_requested:
            self._retry_bot_fill(entry)

    def _pair(self, room: Room, first: QueueEntry, second: QueueEntry) -> None:
        pairing = Pairing(f"p-{uuid.uuid4().hex[:16]}", room, (first, second))
        self._pairings[pairing.pairing_id] = pairing
        first.pairing = second.pairing = pairing
        self.counts["paired", room.room_id] += 1
        now = self._clock()
        for entry in (first, second):
            if not entry.is_bot:  # a bot's wait is the fill delay, not a player's
                self.observe_wait(room.room_id, now - entry.enqueued_at)
        for seat, (me, other) in enumerate(((first, second), (second, first))):
            me.send(
                updates.Matched(pairing.pairing_id, seat, other.player_id, other.is_bot, other.display_name)
            )
        self._send_positions(room.room_id)
        self._spawn(self._hold(pairing))

    async def _hold(self, pairing: Pairing) -> None:
        """The wallet holds carry + fee for both before they count as ready (issue 6)."""
        room = pairing.room
        held: list[QueueEntry] = []
        for entry in pairing.seats:
            try:
                await self._wallet.place_hold(
                    entry.player_id, pairing.pairing_id, entry.carry + room.fee, room.fee
                )
            except Exception as err:
                _log.info("hold refused", extra={"fields": {"player_id": entry.player_id, "error": str(err)}})
                self.counts["hold_refused", room.room_id] += 1
                for other in held:
                    await self._release(other, pairing)
                self._unpair(pairing, refused=entry, reason=f"the wallet refused the hold: {err}")
                return
            held.append(entry)
        if room.plays_items:
            for entry in pairing.seats:
                entry.items = await self._inventory(entry)
        if room.negotiates:
            pairing.state = NEGOTIATING
            pairing.negotiation_deadline = self._clock() + room.negotiation_seconds
            self._send_negotiation(pairing, updates.AWAITING_PROPOSAL)
        else:
            pairing.multiplier = 1
            pairing.state = ALLOCATING
            self._allocate(pairing)

    async def _inventory(self, entry: QueueEntry) -> dict[int, int]:
        """T6: the counts the table may offer. Read once the holds are placed (a player is in one
        pairing at a time, so nothing else spends them meanwhile); an unanswered read seats the player
        without items rather than offering ones the wallet could refuse."""
        try:
            return await self._wallet.inventory(entry.player_id)
        except Exception as err:
            _log.info("inventory unread", extra={"fields": {"player_id": entry.player_id, "error": str(err)}})
            return {}

    def _unpair(self, pairing: Pairing, *, refused: QueueEntry, reason: str) -> None:
        """A hold failed: the refused player leaves the queue, the other waits on (not lost)."""
        pairing.state = ENDED
        self._pairings.pop(pairing.pairing_id, None)
        for entry in pairing.seats:
            entry.pairing = None
            if entry is refused:
                self._finish(entry, updates.Expired(reason))
        self._send_positions(pairing.room.room_id)

    async def _release(self, entry: QueueEntry, pairing: Pairing) -> None:
        try:
            await self._wallet.release_hold(entry.player_id, pairing.pairing_id)
        except Exception:
            _log.exception("releasing a hold failed", extra={"fields": {"player_id": entry.player_id}})

    # --- negotiation (T7) ---------------------------------------------------------------------
    def _pairing_of(self, player_id: str, pairing_id: str) -> tuple[Pairing, int]:
        pairing = self._pairings.get(pairing_id)
        if pairing is None:
            raise NotFound(f"no pairing {pairing_id!r}")
        return pairing, pairing.seat_of(player_id)

    def _send_negotiation(self, pairing: Pairing, state: str) -> None:
        for seat, entry in enumerate(pairing.seats):
            entry.send(self.negotiation(pairing, state, seat))

    def negotiation(self, pairing: Pairing, state: str, seat: int) -> updates.Negotiation:
        your_turn = (state == updates.AWAITING_PROPOSAL and seat == 0) or (
            state == updates.PROPOSED and seat == 1
        )
        return updates.Negotiation(
            pairing.pairing_id, state, pairing.multiplier, your_turn, pairing.negotiation_deadline
        )

    def propose(self, player_id: str, pairing_id: str, multiplier: int) -> updates.Negotiation:
        pairing, seat = self._pairing_of(player_id, pairing_id)
        if multiplier not in NEGOTIABLE:
            raise InvalidArgument(f"the multiplier must be 1, 2, 5 or 10 (T7), not {multiplier}")
        if seat != 0:
            raise FailedPrecondition("the first seated player proposes the multiplier (T7)")
        if pairing.state != NEGOTIATING or pairing.multiplier:
            raise FailedPrecondition("the multiplier is not open for a proposal now")
        pairing.multiplier = multiplier
        pairing.negotiation_deadline = self._clock() + pairing.room.negotiation_seconds
        self._send_negotiation(pairing, updates.PROPOSED)
        return self.negotiation(pairing, updates.PROPOSED, seat)

    def respond(self, player_id: str, pairing_id: str, accept: bool) -> updates.Negotiation:
        pairing, seat = self._pairing_of(player_id, pairing_id)
        if seat != 1:
            raise FailedPrecondition("the second seated player answers the proposal (T7)")
        if pairing.state != NEGOTIATING or not pairing.multiplier:
            raise FailedPrecondition("there is no proposal to answer now")
        if not accept:
            self.counts["declined", pairing.room.room_id] += 1
            self._send_negotiation(pairing, updates.DECLINED)
            self._end_pairing(pairing, "the multiplier was declined; the pairing ends (T7)")
            return self.negotiation(pairing, updates.DECLINED, seat)
        pairing.state = ALLOCATING
        self._send_negotiation(pairing, updates.ACCEPTED)
        self._allocate(pairing)
        return self.negotiation(pairing, updates.ACCEPTED, seat)

    def _end_pairing(self, pairing: Pairing, reason: str) -> None:
        """Before a table: the pairing ends, both holds are released, both streams end."""
        pairing.state = ENDED
        self._pairings.pop(pairing.pairing_id, None)
        for entry in pairing.seats:
            self._finish(entry, updates.Expired(reason))
            self._spawn(self._release(entry, pairing))

    # --- allocation ---------------------------------------------------------------------------
    def _allocate(self, pairing: Pairing) -> None:
        if pairing.table_id:  # an OpenTable call is in flight
            return
        server = self.directory.roomiest()
        if server is None:
            return  # no server with room: the pairing waits for the next announcement (not lost)
        pairing.table_id = f"t-{uuid.uuid4().hex[:16]}"
        self.directory.took_one(server.server_id)
        self._spawn(self._open(pairing, server))

    async def _open(self, pairing: Pairing, server: TableServer) -> None:
        try:
            opened = await self._tables.open(server, pairing)
        except TableUnavailable as err:
            _log.warning(
                "table server refused", extra={"fields": {"server": server.server_id, "error": str(err)}}
            )
            self.directory.unusable(server.server_id)
            pairing.table_id = ""  # retried on the next tick, maybe elsewhere
            return
        if pairing.state != ALLOCATING:
            return
        pairing.state = PLAYING
        pairing.server_id = server.server_id
        # The server's own word on which process opened it beats the announcement allocation read: the
        # server may have restarted since (then the new process opened it, and that one is not lost).
        pairing.incarnation = opened.incarnation or server.incarnation
        pairing.opened_at = self._clock()
        self._by_table[pairing.table_id] = pairing
        self.counts["table_opened", pairing.room.room_id] += 1
        for seat, entry in enumerate(pairing.seats):
            entry.send(
                updates.TableReady(
                    pairing.pairing_id, pairing.table_id, opened.address, opened.tickets[seat], seat
                )
            )
            entry.done = True
            entry.send(updates.END)
            self._entries.pop(entry.ticket_id, None)

    def table_closed(self, table_id: str) -> bool:
        """TableClosed: the pairing is over (the wallet releases its holds); the players may queue again.
        False if the table was not (or no longer) open: a second TableClosed of a table is a no-op."""
        pairing = self._by_table.pop(table_id, None)
        if pairing is None:
            return False
        pairing.state = ENDED
        self._pairings.pop(pairing.pairing_id, None)
        for entry in pairing.seats:
            if self._player_ticket.get(entry.player_id) == entry.ticket_id:
                del self._player_ticket[entry.player_id]
        return True

    # --- lost table servers -------------------------------------------------------------------
    # A table server that dies (crash, OOM, node lost) publishes no TableClosed: without this its
    # pairings would stay PLAYING and their holds held until matchmaking restarts.
    def _close_lost_tables(self, now: float) -> None:
        closer = self._lost_tables
        if closer is None:
            return
        for pairing in list(self._by_table.values()):
            if pairing.closing_lost or now < pairing.lost_retry_at:
                continue
            why = self.directory.lost(
                pairing.server_id,
                pairing.incarnation,
                opened_at=pairing.opened_at,
                silent_seconds=self._server_lost_seconds,
            )
            if why:
                pairing.closing_lost = True
                self._spawn(self._close_lost(closer, pairing, why))

    async def _close_lost(self, closer: LostTables, pairing: Pairing, why: str) -> None:
        """Publish TableClosed for the table (the wallet releases both holds: the hand in progress is
        void, nothing was scored), then end the pairing here. If the server's own TableClosed comes
        too, it is one more close of the same table: a duplicate the stream, wallet and we drop."""
        fields = {
            "table_id": pairing.table_id,
            "server_id": pairing.server_id,
            "pairing_id": pairing.pairing_id,
            "why": why,
        }
        try:
            await closer.close(pairing, TABLE_LOST_REASON)
        except Exception:
            _log.exception("closing a lost table failed; retrying", extra={"fields": fields})
            pairing.closing_lost = False
            pairing.lost_retry_at = self._clock() + LOST_RETRY_SECONDS
            return
        # Our own TableClosed may come back through the table-events consumer before this resumes
        # and end the pairing first: the table was lost and closed by us either way, count it once.
        self.table_closed(pairing.table_id)
        self.counts["table_lost", pairing.room.room_id] += 1
        _log.warning("table server lost: its table is closed, the holds released", extra={"fields": fields})

    # --- after a hand (T7 progression, T10 leaving between hands) -----------------------------
    # Once the pair sits at a table, the table owns the pairing's live state: the continue-or-leave
    # decision travels on its Play stream (ContinueAction / LeaveAction) where it is ordered with
    # the hand's events. These RPCs cover the time before the table; at the table they say where to go.
    def continue_pairing(self, player_id: str, pairing_id: str) -> tuple[int, bool]:
        pairing, _seat = self._pairing_of(player_id, pairing_id)
        raise FailedPrecondition(self._at_table(pairing) or "no hand has been played in this pairing yet")

    def leave_pairing(self, player_id: str, pairing_id: str) -> None:
        pairing, _seat = self._pairing_of(player_id, pairing_id)
        at_table = self._at_table(pairing)
        if at_table:
            raise FailedPrecondition(at_table)
        self._end_pairing(pairing, f"player {player_id} left the pairing before the table")

    @staticmethod
    def _at_table(pairing: Pairing) -> str:
        if pairing.state != PLAYING:
            return ""
        return (
            f"the pairing plays at table {pairing.table_id}: continue or leave on its Play stream "
            "(ContinueAction / LeaveAction)"
        )

    def awaiting_table(self) -> int:
        """Pairings agreed and waiting for a table server with room."""
        return sum(1 for p in self._pairings.values() if p.state == ALLOCATING)

    def now(self) -> float:
        return self._clock()

    # --- background work ----------------------------------------------------------------------
    def _spawn(self, work: object) -> None:
        task = asyncio.ensure_future(work)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def run(self, interval: float = 0.2) -> None:
        while True:
            self.tick()
            await asyncio.sleep(interval)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
