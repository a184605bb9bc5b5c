"""Pairings before their table: two waiting tickets claimed by compare-and-set, the wallet's holds
placed for both (issue 6), and the end of a pairing with the release of every hold it placed.

A pairing record is created first (``HOLDING``, due within :data:`HOLD_SECONDS`), then both tickets
are claimed for it. So whatever the moment a replica dies, the store says what is left to do: a
pairing still ``HOLDING`` past its deadline lapsed (its tickets go back to the queue at their old
places, any hold placed is released), and an ``ENDED`` pairing still listing players in ``release``
is released again by whichever replica owns the room (the wallet's release is idempotent).
"""

from __future__ import annotations

import uuid

from duelmahjong.platform.logging import get_logger
from services.matchmaking.queue import Fleet, Queue
from services.matchmaking.records import (
    ALLOCATING,
    DONE,
    ENDED,
    HOLDING,
    NEGOTIATING,
    PAIRED,
    WAITING,
    Pairing,
    Seat,
    Ticket,
)
from services.matchmaking.rooms import Room
from services.matchmaking.store import Conflict, unless_changed

HOLD_SECONDS = 15.0  # both holds placed within this, or the pairing lapses
RELEASE_RETRY_SECONDS = 10.0  # an ENDED pairing's release not done by then is done again
# An ended pairing is forgotten after this; one that had a table is kept longer, so LocateTable tells a
# seat whose stream broke as its table ended that it closed.
ENDED_KEPT_SECONDS = 120.0
CLOSED_TABLE_KEPT_SECONDS = 600.0
STRANDED_SECONDS = 60.0  # a release overdue this long is a stranded hold (an alert)
_log = get_logger("matchmaking")


class Pairings:
    def __init__(self, fleet: Fleet, queue: Queue) -> None:
        self._fleet = fleet
        self._records = fleet.records
        self._queue = queue
        self._holding: set[str] = set()  # pairings whose holds this replica is placing now

    def of(self, player_id: str, pairing_id: str) -> tuple[Pairing, int]:
        from duelmahjong.platform.errors import NotFound, PermissionDenied

        pairing = self._records.pairings.get(pairing_id)
        if pairing is None or pairing.state == ENDED:
            raise NotFound(f"no pairing {pairing_id!r}")
        seat = pairing.seat_of(player_id)
        if seat is None:
            raise PermissionDenied(f"you are not a player of pairing {pairing_id}")
        return pairing, seat

    # --- making a pairing ----------------------------------------------------------------------------
    async def pair(
        self, room: Room, first: Ticket, second: Ticket, *, pairing_id: str = "", private: bool = False
    ) -> Pairing | None:
        """Pair two waiting tickets; None if either was no longer waiting as read (nothing is left
        behind: the pairing record is ended and both tickets are as they were)."""
        now = self._fleet.clock()
        pairing = Pairing(
            pairing_id=pairing_id or f"p-{uuid.uuid4().hex[:16]}",
            room_id=room.room_id,
            seats=(_seat(first), _seat(second)),
            created_at=now,
            deadline=now + HOLD_SECONDS,
            private_table=private,
            # A private opener's hold was placed under this pairing's id when it opened.
            held=tuple(t.player_id for t in (first, second) if t.held_for and t.held_for == pairing_id),
        )
        if pairing_id:
            await self._forget_undone(pairing_id)
        try:
            pairing = await self._records.create(pairing)
        except Conflict:
            return None
        claimed: list[Ticket] = []
        for seat, ticket in enumerate((first, second)):
            try:
                claimed.append(
                    await self._records.update(ticket, state=PAIRED, pairing_id=pairing.pairing_id, seat=seat)
                )
            except Conflict:
                for back in claimed:
                    await unless_changed(self._records.update(back, state=WAITING, pairing_id="", seat=0))
                await unless_changed(
                    self._records.update(pairing, state=ENDED, ended_at=now, reason="not paired")
                )
                return None
        self._fleet.count("private_joined" if private else "paired", room.room_id)
        for ticket in (first, second):
            # A bot's wait is the fill delay, a private table's the friend's: neither is the queue's.
            if not ticket.is_bot and not private:
                self._fleet.waited(room.room_id, now - ticket.enqueued_at)
        self._fleet.spawn(self.hold(room, pairing))
        return pairing

    async def _forget_undone(self, pairing_id: str) -> None:
        """A private table's pairing id is its opener's: a friend whose hold was refused left an ended
        record under it, removed before the next friend's pairing takes the id."""
        undone = self._records.pairings.get(pairing_id)
        if undone is not None and undone.state == ENDED and not undone.release:
            await unless_changed(self._records.remove(undone))

    async def hold(self, room: Room, pairing: Pairing) -> None:
        """The wallet holds carry + fee for both before they count as ready (issue 6); then the
        pairing negotiates (duel, T7) or goes to allocation."""
        if pairing.pairing_id in self._holding:
            return
        self._holding.add(pairing.pairing_id)
        try:
            await self._hold(room, pairing)
        finally:
            self._holding.discard(pairing.pairing_id)

    async def _hold(self, room: Room, pairing: Pairing) -> None:
        wallet = self._fleet.wallet
        for seat in pairing.seats:
            if seat.player_id in pairing.held:
                continue
            try:
                await wallet.place_hold(seat.player_id, pairing.pairing_id, seat.carry + room.fee, room.fee)
            except Exception as err:
                _log.info("hold refused", extra={"fields": {"player_id": seat.player_id, "error": str(err)}})
                self._fleet.count("hold_refused", room.room_id)
                await self.undo(pairing, refused=seat.player_id, reason=f"the wallet refused the hold: {err}")
                return
            recorded = await self._record_hold(pairing.pairing_id, seat.player_id)
            if recorded is None:
                # It lapsed or ended before the hold was listed: this hold is nobody's, give it back.
                await self._release(seat.player_id, pairing.pairing_id, "lapsed")
                return
            if recorded.state != HOLDING:
                return  # another replica placing the same holds took the pairing on
            pairing = recorded
        seats = pairing.seats
        if room.plays_items:
            seats = (await self._with_items(seats[0]), await self._with_items(seats[1]))
        now = self._fleet.clock()
        changes = (
            {"state": NEGOTIATING, "deadline": now + room.negotiation_seconds}
            if room.negotiates
            else {"state": ALLOCATING, "deadline": 0.0, "multiplier": 1}
        )
        await unless_changed(self._records.update(pairing, seats=seats, **changes))

    async def _record_hold(self, pairing_id: str, player_id: str) -> Pairing | None:
        """The pairing with ``player_id``'s hold listed; None if it is gone or moved on without it.
        Another replica placing the same holds (a private join's pairing is also picked up by the
        room's owner) may have listed it first: the wallet placed it once, under the same id."""
        while True:
            current = self._records.pairings.get(pairing_id)
            if current is None:
                return None
            if player_id in current.held:
                return current
            if current.state != HOLDING:
                return None
            try:
                return await self._records.update(current, held=(*current.held, player_id))
            except Conflict:
                # Reading it again at once would read the same: wait for the write that won.
                if not await self._records.mirror.newer(current.key, current.revision):
                    _log.warning("a hold placed is not listed", extra={"fields": {"pairing": pairing_id}})
                    return current  # the pairing's end (a lapse at the latest) releases every seat

    async def _with_items(self, seat: Seat) -> Seat:
        """T6: the counts the table may offer. Read once the holds are placed (a player is in one
        pairing at a time, so nothing else spends them meanwhile); an unanswered read seats the player
        without items rather than offering ones the wallet could refuse."""
        from dataclasses import replace

        try:
            return replace(seat, items=await self._fleet.wallet.inventory(seat.player_id))
        except Exception as err:
            _log.info("inventory unread", extra={"fields": {"player_id": seat.player_id, "error": str(err)}})
            return seat

    # --- ending a pairing before its table ---------------------------------------------------------
    async def undo(self, pairing: Pairing, *, refused: str, reason: str) -> bool:
        """A hold failed or the pairing lapsed: the refused player (if any) leaves the queue, the others
        wait on at their old places, and every hold placed for the pairing is released. False if it
        moved on or was undone already (someone else acted on it first)."""
        current = self._records.pairings.get(pairing.pairing_id)
        if current is None or current.state != HOLDING:
            return False
        pairing = current
        if not await self._end(pairing, reason, back_to_queue=True, refused=refused):
            return False
        for seat in pairing.seats:
            ticket = self._records.tickets.get(seat.ticket_id)
            if ticket is None or ticket.pairing_id != pairing.pairing_id or ticket.state != PAIRED:
                continue
            if seat.player_id == refused:
                await self._queue.finish(ticket, reason)
            else:
                await unless_changed(self._records.update(ticket, state=WAITING, pairing_id="", seat=0))
        return True

    async def end(self, pairing: Pairing, reason: str, *, declined: bool = False) -> bool:
        """Before a table: the pairing ends, both tickets end with ``reason``, both holds are released.
        False if the pairing changed since it was read (someone else acted on it first)."""
        if not await self._end(pairing, reason, declined=declined):
            return False
        for seat in pairing.seats:
            ticket = self._records.tickets.get(seat.ticket_id)
            if ticket is not None and ticket.pairing_id == pairing.pairing_id and ticket.state == PAIRED:
                await self._queue.finish(ticket, reason)
        return True

    async def _end(
        self,
        pairing: Pairing,
        reason: str,
        *,
        back_to_queue: bool = False,
        refused: str = "",
        declined: bool = False,
    ) -> bool:
        # Every seat's hold may have been placed (a replica that died between the wallet's answer and
        # the record's update did not list it): all are released. A private opener who waits on keeps
        # the hold it placed when it opened, under this same id.
        keeps = {
            s.player_id
            for s in pairing.seats
            if back_to_queue and s.player_id != refused and self._opened(s.ticket_id, pairing.pairing_id)
        }
        release = tuple(s.player_id for s in pairing.seats if s.player_id not in keeps)
        now = self._fleet.clock()
        try:
            ended = await self._records.update(
                pairing,
                state=ENDED,
                reason=reason,
                declined=declined,
                ended_at=now,
                deadline=0.0,
                release=release,
                release_due=now,
            )
        except Conflict:
            return False
        self._fleet.spawn(self.release(ended, "refused" if refused else "ended"))
        return True

    def _opened(self, ticket_id: str, pairing_id: str) -> bool:
        ticket = self._records.tickets.get(ticket_id)
        return ticket is not None and ticket.held_for == pairing_id

    async def release(self, pairing: Pairing, how: str) -> None:
        """Release every hold the ended pairing still lists, then record that it is done."""
        for player_id in pairing.release:
            if not await self._release(player_id, pairing.pairing_id, how):
                return  # retried by the room's owner after RELEASE_RETRY_SECONDS
        current = self._records.pairings.get(pairing.pairing_id)
        if current is not None and current.release:
            await unless_changed(self._records.update(current, release=()))

    async def _release(self, player_id: str, pairing_id: str, how: str) -> bool:
        try:
            await self._fleet.wallet.release_hold(player_id, pairing_id)
        except Exception:
            _log.exception("releasing a hold failed", extra={"fields": {"player_id": player_id}})
            return False
        self._fleet.released(how)
        return True

    # --- the room owner's work ---------------------------------------------------------------------
    async def sweep(self, room: Room, now: float) -> None:
        """Act on the room's pairings that are due: holds to place or lapsed, negotiations timed out."""
        for pairing in self._records.live_pairings(room.room_id):
            if pairing.state == HOLDING:
                if now >= pairing.deadline:
                    if await self.undo(
                        pairing, refused="", reason="the pairing lapsed before both holds were placed"
                    ):
                        self._fleet.count("lapsed", room.room_id)
                elif pairing.pairing_id not in self._holding and self._both_claimed(pairing):
                    self._fleet.spawn(self.hold(room, pairing))
            elif pairing.state == NEGOTIATING and now >= pairing.deadline:
                await self.end(pairing, "the multiplier negotiation timed out (T7)")

    async def housekeep(self, room: Room, now: float) -> None:
        """Release again what ended pairings still list after :data:`RELEASE_RETRY_SECONDS`; forget
        ended pairings after their time."""
        for pairing in self._records.settled_pairings(room.room_id):
            if pairing.release and now - pairing.release_due >= RELEASE_RETRY_SECONDS:
                await self.release(pairing, "lapsed")
            elif not pairing.release and now - pairing.ended_at >= (
                CLOSED_TABLE_KEPT_SECONDS if pairing.address else ENDED_KEPT_SECONDS
            ):
                await unless_changed(self._records.remove(pairing))

    def _both_claimed(self, pairing: Pairing) -> bool:
        """Both tickets point at the pairing (a private join's pairing, made by another replica, or one
        whose placer died): its holds can be placed here."""
        for seat in pairing.seats:
            ticket = self._records.tickets.get(seat.ticket_id)
            if (
                ticket is None
                or ticket.pairing_id != pairing.pairing_id
                or ticket.state not in (PAIRED, DONE)
            ):
                return False
        return True

    def stranded(self, now: float) -> int:
        """Pairings and private openers whose holds should have been released more than
        :data:`STRANDED_SECONDS` ago and are not yet."""
        pairings = sum(
            1 for p in self._records.pairings.values() if p.release and now - p.release_due > STRANDED_SECONDS
        )
        openers = sum(
            1
            for t in self._records.tickets.values()
            if t.release_due and now - t.release_due > STRANDED_SECONDS
        )
        return pairings + openers


def _seat(ticket: Ticket) -> Seat:
    return Seat(ticket.ticket_id, ticket.player_id, ticket.carry, ticket.is_bot, ticket.display_name)
