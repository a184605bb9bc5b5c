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
import math
import uuid

from duelmahjong.platform.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from duelmahjong.platform.logging import get_logger
from services.matchmaking import codes, updates
from services.matchmaking.negotiation import MultiplierNegotiation
from services.matchmaking.pairing import (
    ALLOCATING,
    ENDED,
    NEGOTIATING,
    BotFill,
    BotsBusy,
    Pairing,
    QueueEntry,
)
from services.matchmaking.rooms import Room

BOT_RETRY_SECONDS = 1.0  # a bot fill that failed (not merely busy) is tried again after this
_log = get_logger("matchmaking")


class Matchmaker(MultiplierNegotiation):
    """Queues and pairing, on the layers below: :mod:`.state`, :mod:`.allocation`, :mod:`.negotiation`."""

    # --- queue --------------------------------------------------------------------------------
    async def enqueue(self, player_id: str, room_id: str, carry: int) -> QueueEntry:
        room = self.room(room_id)
        entry = await self._admit(player_id, room, carry)
        fill_for = self._bot_players.pop(player_id, "")
        if fill_for:
            entry.is_bot, entry.fill_for = True, fill_for
        self._register(entry)
        entry.send(updates.Queued(entry.ticket_id, room.ticket_seconds))
        self._send_positions(room.room_id)
        self.tick()
        return entry

    async def _admit(self, player_id: str, room: Room, carry: int) -> QueueEntry:
        """A new entry of ``player_id`` in ``room``, its carry and balance checked; the player's slot is
        claimed ("pending") until :meth:`_register` or :meth:`_unclaim`."""
        if not room.carry_min <= carry <= room.carry_max:
            raise InvalidArgument(
                f"carry {carry} is outside room {room.room_id}'s range {room.carry_min}..{room.carry_max}"
            )
        if player_id in self._player_ticket:
            raise FailedPrecondition(
                "you are already in a queue or a pairing; a player queues once at a time"
            )
        self._player_ticket[player_id] = "pending"  # claim the slot before awaiting the wallet
        try:
            available = await self._wallet.available(player_id)
            display_name = await self._wallet.display_name(player_id)
            skill = await self._wallet.rating(player_id, room.profile)
        except BaseException:
            self._unclaim(player_id)
            raise
        needed = room.needed(carry)
        if available < needed:
            self._unclaim(player_id)
            raise FailedPrecondition(
                f"room {room.room_id} needs {needed} prestige available (carry {carry} + fee {room.fee}, "
                f"minimum {room.minimum_balance}); you have {available}"
            )
        now = self._clock()
        return QueueEntry(
            ticket_id=f"q-{uuid.uuid4().hex[:16]}",
            player_id=player_id,
            room=room,
            carry=carry,
            skill=skill,
            enqueued_at=now,
            expires_at=now + room.ticket_seconds,
            display_name=display_name,
        )

    def _register(self, entry: QueueEntry) -> None:
        self._entries[entry.ticket_id] = entry
        self._player_ticket[entry.player_id] = entry.ticket_id

    def _unclaim(self, player_id: str) -> None:
        if self._player_ticket.get(player_id) == "pending":
            del self._player_ticket[player_id]

    # --- private tables (docs/protocol.md "Private tables") -----------------------------------
    async def open_private(self, player_id: str, room_id: str, carry: int) -> QueueEntry:
        """A private table in ``room_id`` waiting for a friend: the carry and fee are held at once (the
        friend who joins finds them secured), and the entry gets a code instead of a queue place."""
        room = self.room(room_id)
        entry = await self._admit(player_id, room, carry)
        entry.held_for = f"p-{uuid.uuid4().hex[:16]}"
        try:
            await self._wallet.place_hold(player_id, entry.held_for, carry + room.fee, room.fee)
        except BaseException:
            self._unclaim(player_id)
            self._spawn(self._release_held(entry))  # a hold placed as the call was cancelled is not kept
            raise
        entry.private_code = self._private.issue(entry)
        self._register(entry)
        self.counts["private_opened", room.room_id] += 1
        entry.send(updates.PrivateCode(entry.private_code, room.room_id, room.ticket_seconds))
        entry.send(updates.Queued(entry.ticket_id, room.ticket_seconds))
        return entry

    async def join_private(self, player_id: str, code: str, carry: int) -> QueueEntry:
        """Join the private table of ``code`` (case and white space ignored) as its second seat."""
        wait = self._private_joins.take(player_id)
        if wait > 0:
            raise RateLimited(
                f"too many private codes tried ({self._private_joins.burst} at once, then "
                f"{self._private_joins.per_minute:g} a minute); retry in {math.ceil(wait)} s",
                retry_after=wait,
            )
        wanted = codes.normalise(code)
        if not wanted:
            raise InvalidArgument("code is required: the code your friend's OpenPrivateTable gave")
        opener = self._private.find(wanted) if codes.well_formed(wanted) else None
        if opener is None:
            raise NotFound(_unknown_code(wanted))
        if opener.player_id == player_id:
            raise FailedPrecondition(
                f"{wanted} is the code of your own private table: give it to the friend you want to play"
            )
        entry = await self._admit(player_id, opener.room, carry)
        if opener.done or opener.pairing is not None:  # joined, cancelled or expired as the wallet answered
            self._unclaim(player_id)
            raise NotFound(_unknown_code(wanted))
        entry.private_code = opener.private_code
        self._register(entry)
        entry.send(updates.Queued(entry.ticket_id, opener.room.ticket_seconds))
        self._pair(opener.room, opener, entry, pairing_id=opener.held_for, private_table=True)
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

    # --- the periodic work --------------------------------------------------------------------
    def tick(self) -> None:
        """Expire tickets and negotiations, pair players, request bot fill, retry allocations, close
        the tables of lost servers."""
        now = self._clock()
        for entry in list(self._entries.values()):
            if entry.pairing is None and now >= entry.expires_at:
                self.counts["expired", entry.room.room_id] += 1
                self._finish(entry, updates.Expired(_expiry(entry)))
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
        waiting = self._queued(room.room_id)
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
        # Skill ratings with their uncertainty, not balances; the window widens with waiting time and
        # the more patient of the two decides.
        waited = now - min(a.enqueued_at, b.enqueued_at)
        window = a.room.rating_window_for((a.skill.deviation, b.skill.deviation), waited)
        return abs(a.skill.rating - b.skill.rating) <= window

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

    def _pair(
        self,
        room: Room,
        first: QueueEntry,
        second: QueueEntry,
        *,
        pairing_id: str = "",
        private_table: bool = False,
    ) -> None:
        pairing = Pairing(
            pairing_id or f"p-{uuid.uuid4().hex[:16]}", room, (first, second), private_table=private_table
        )
        self._pairings[pairing.pairing_id] = pairing
        first.pairing = second.pairing = pairing
        self.counts["private_joined" if private_table else "paired", room.room_id] += 1
        now = self._clock()
        for entry in (first, second):
            # A bot's wait is the fill delay, a private table's the friend's: neither is the queue's.
            if not entry.is_bot and not private_table:
                self.observe_wait(room.room_id, now - entry.enqueued_at)
        for seat, (me, other) in enumerate(((first, second), (second, first))):
            me.send(
                updates.Matched(
                    pairing.pairing_id,
                    seat,
                    other.player_id,
                    other.is_bot,
                    other.display_name,
                    private_table=private_table,
                )
            )
        self._send_positions(room.room_id)
        self._spawn(self._hold(pairing))

    async def _hold(self, pairing: Pairing) -> None:
        """The wallet holds carry + fee for both before they count as ready (issue 6)."""
        room = pairing.room
        held: list[QueueEntry] = []
        for entry in pairing.seats:
            if entry.held_for == pairing.pairing_id:
                continue  # a private table's opener: held when it opened, kept if the friend is refused
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

    async def run(self, interval: float = 0.2) -> None:
        while True:
            self.tick()
            await asyncio.sleep(interval)


def _unknown_code(code: str) -> str:
    # Only a code that could have been issued is repeated back: what else was typed may be anything.
    named = f"the code {code!r}" if codes.well_formed(code) else "that code"
    return (
        f"no private table has {named}: it is mistyped, or it expired or was used already (a code is "
        f"{codes.LENGTH} of {codes.ALPHABET} and lives as long as its room's queue ticket); ask your "
        "friend for the code of a new private table"
    )


def _expiry(entry: QueueEntry) -> str:
    if entry.private_code:
        return f"nobody joined with code {entry.private_code} before it expired; the hold is released"
    return "the queue ticket expired before a match was found"
