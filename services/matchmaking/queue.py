"""The queue: tickets admitted (carry and balance checked, one per player), cancelled, expired, left
unfollowed, and finished — whichever replica does it, by compare-and-set on the ticket read.

A player's place is the ticket's ``enqueued_at``, stored with it: it survives every restart of every
replica. A player holds the key ``players.<player>`` from admission to the end of the ticket (or of
its table): created only if absent, so a player is never in two tickets or pairings at once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from duelmahjong.platform.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from duelmahjong.platform.logging import get_logger
from services.matchmaking.ports import Wallet
from services.matchmaking.records import (
    DONE,
    ENDED,
    PAIRED,
    TABLE_READY,
    WAITING,
    Records,
    Ticket,
    code_key,
    player_key,
)
from services.matchmaking.rooms import Room
from services.matchmaking.store import Conflict, unless_changed

# A finished ticket is kept this long, so a stream that broke as it finished learns how (FollowQueue).
FINISHED_KEPT_SECONDS = 120.0
# A private opener's hold still to be released is retried after this (its releaser died on the way).
RELEASE_RETRY_SECONDS = 10.0
# A player's claim whose ticket is not stored this long after it was made is left from an admission
# whose replica died (admission takes the claim, asks the wallet three times, then writes the ticket;
# each call is bounded at 10 s): the next admission takes it over.
ADMISSION_SECONDS = 60.0
_log = get_logger("matchmaking")

Spawn = Callable[[Awaitable[None]], None]


@dataclass
class Fleet:
    """What every collaborator shares: the records, the rooms, the wallet, the clock, this replica's
    name, background work, and the outcome counts the metrics read."""

    records: Records
    rooms: dict[str, Room]
    wallet: Wallet
    clock: Callable[[], float]
    replica_id: str
    spawn: Spawn
    count: Callable[[str, str], None]  # an outcome in a room (what, room id), for the metrics
    released: Callable[[str], None]  # a hold released, by how
    waited: Callable[[str, float], None]  # a human paired after queueing this long (room id, seconds)

    def room(self, room_id: str) -> Room:
        room = self.rooms.get(room_id)
        if room is None:
            raise NotFound(f"no room {room_id!r}; ListRooms names the rooms")
        return room


class Queue:
    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self._records = fleet.records

    # --- admission -----------------------------------------------------------------------------------
    async def admit(self, player_id: str, room: Room, carry: int, **fields: Any) -> Ticket:
        """A new waiting ticket of ``player_id`` in ``room``, its carry and balance checked; the player's
        key is taken first (FAILED_PRECONDITION if the player has a ticket or pairing already)."""
        if not room.carry_min <= carry <= room.carry_max:
            raise InvalidArgument(
                f"carry {carry} is outside room {room.room_id}'s range {room.carry_min}..{room.carry_max}"
            )
        ticket_id = f"q-{uuid.uuid4().hex[:16]}"
        busy = FailedPrecondition("you are already in a queue or a pairing; a player queues once at a time")
        # The store decides, not this replica's mirror: a ticket just ended on another replica may
        # still be in it for a moment.
        key, claimed_at = player_key(player_id), f"{self._fleet.clock():.3f}"
        try:
            await self._records.create_claim(key, ticket_id=ticket_id, claimed_at=claimed_at)
        except Conflict:
            if not await self._take_stale_claim(player_id, ticket_id, claimed_at):
                raise busy from None
        try:
            wallet = self._fleet.wallet
            available = await wallet.available(player_id)
            display_name = await wallet.display_name(player_id)
            skill = await wallet.rating(player_id, room.profile)
            needed = room.needed(carry)
            if available < needed:
                raise FailedPrecondition(
                    f"room {room.room_id} needs {needed} prestige available (carry {carry} + fee "
                    f"{room.fee}, minimum {room.minimum_balance}); you have {available}"
                )
            now = self._fleet.clock()
            ticket = Ticket(
                ticket_id=ticket_id,
                player_id=player_id,
                room_id=room.room_id,
                carry=carry,
                rating=skill.rating,
                deviation=skill.deviation,
                enqueued_at=now,
                expires_at=now + room.ticket_seconds,
                display_name=display_name,
                follower=self._fleet.replica_id,
                **fields,
            )
            return await self._records.create(ticket)
        except BaseException:
            await self._unclaim(player_id, ticket_id)
            raise

    async def _take_stale_claim(self, player_id: str, ticket_id: str, claimed_at: str) -> bool:
        """Take the player's claim over if nothing holds it any more: a replica died between the write
        that ended its ticket (or the ticket's table) and the claim's release, or between the claim
        and its ticket's first write. Such a claim kept its player out of every queue for good. False
        if the claim is held (or changed meanwhile)."""
        if not await self._records.mirror.sync():  # the ticket may be newer than this replica's view
            return False
        key = player_key(player_id)
        entry = self._records.entry(key)
        if entry is None or not self._stale(json.loads(entry.value)):
            return False
        value = json.dumps({"ticket_id": ticket_id, "claimed_at": claimed_at}).encode()
        try:
            await self._records.mirror.update(key, value, entry.revision)
        except Conflict:
            return False
        _log.info("a stale claim taken over", extra={"fields": {"player_id": player_id}})
        return True

    def _stale(self, claim: dict[str, str]) -> bool:
        ticket = self._records.tickets.get(claim.get("ticket_id", ""))
        if ticket is None:  # never stored, or forgotten long after it ended
            made = float(claim.get("claimed_at") or 0)  # a claim without its time is never taken
            return bool(made) and self._fleet.clock() - made >= ADMISSION_SECONDS
        if ticket.state != DONE:
            return False
        if ticket.reason != TABLE_READY:
            return True
        pairing = self._records.pairings.get(ticket.pairing_id)  # at a table: until it closes
        return pairing is None or pairing.state == ENDED

    async def _unclaim(self, player_id: str, ticket_id: str) -> None:
        try:
            await self._records.drop_claim(player_key(player_id), ticket_id=ticket_id)
        except Conflict:
            pass

    def own_ticket(self, player_id: str, ticket_id: str) -> Ticket:
        ticket = self._records.tickets.get(ticket_id)
        if ticket is None:
            raise NotFound(f"no queue ticket {ticket_id!r}")
        if ticket.player_id != player_id:
            raise PermissionDenied("this queue ticket is another player's")
        return ticket

    async def cancel(self, player_id: str, ticket_id: str) -> None:
        ticket = self.own_ticket(player_id, ticket_id)
        if ticket.state == DONE:
            raise NotFound(f"no queue ticket {ticket_id!r}: it ended already ({ticket.reason})")
        if ticket.state == PAIRED:
            raise FailedPrecondition("already paired; leave the pairing instead")
        if not await self.finish(ticket, "cancelled by the player"):
            raise FailedPrecondition("the ticket changed as it was cancelled (paired or expired): look again")
        self._fleet.count("cancelled", ticket.room_id)

    # --- the end of a ticket -------------------------------------------------------------------------
    async def finish(self, ticket: Ticket, reason: str, *, keep_player: bool = False) -> bool:
        """The ticket ends with ``reason`` (the player's stream shows it). A private opener never joined
        gets its hold released. False if the ticket changed since it was read (someone else acted)."""
        release_due = self._fleet.clock() if ticket.held_for and ticket.state == WAITING else 0.0
        try:
            done = await self._records.update(
                ticket, state=DONE, reason=reason, release_due=release_due, ended_at=self._fleet.clock()
            )
        except Conflict:
            return False
        if not keep_player:
            await self._unclaim(ticket.player_id, ticket.ticket_id)
        if ticket.held_for:  # a private opener's code dies with it
            try:
                await self._records.drop_claim(code_key(ticket.private_code), pairing_id=ticket.held_for)
            except Conflict:
                pass
        if release_due:
            self._fleet.spawn(self.release_opener(done, "expired"))
        return True

    async def release_opener(self, ticket: Ticket, how: str) -> None:
        """A private opener's hold, placed when it opened, released (idempotent at the wallet: a retry
        after its releaser died releases nothing twice), then the ticket's release marked done."""
        try:
            await self._fleet.wallet.release_hold(ticket.player_id, ticket.held_for)
        except Exception:
            _log.exception("releasing a hold failed", extra={"fields": {"player_id": ticket.player_id}})
            return
        self._fleet.released(how)
        current = self._records.tickets.get(ticket.ticket_id, ticket)
        try:
            await self._records.update(current, release_due=0.0)
        except Conflict:
            pass  # another replica released it too (a retry): the wallet counted it once

    # --- the room owner's work ---------------------------------------------------------------------
    async def sweep(self, room: Room, now: float, followed: Callable[[Ticket], bool], grace: float) -> None:
        """Expire the room's tickets that are due and cancel those nobody follows."""
        for ticket in self._records.live_tickets(room.room_id):
            if ticket.state != WAITING:
                continue
            if now >= ticket.expires_at:
                if await self.finish(ticket, _expiry(ticket)):
                    self._fleet.count("expired", room.room_id)
            elif not followed(ticket):
                if not ticket.unfollowed_at:
                    await unless_changed(self._records.update(ticket, unfollowed_at=now))
                elif now - ticket.unfollowed_at >= grace:
                    if await self.finish(ticket, "the queue stream closed and was not followed again"):
                        self._fleet.count("unfollowed", room.room_id)

    async def housekeep(self, room: Room, now: float) -> None:
        """Retry the room's overdue releases of private openers' holds; forget finished tickets."""
        for ticket in self._records.settled_tickets(room.room_id):
            if ticket.release_due and now - ticket.release_due >= RELEASE_RETRY_SECONDS:
                await self.release_opener(ticket, "lapsed")
            elif not ticket.release_due and now - ticket.ended_at >= FINISHED_KEPT_SECONDS:
                await unless_changed(self._records.remove(ticket))


def _expiry(ticket: Ticket) -> str:
    if ticket.private_code and ticket.held_for:
        return f"nobody joined with code {ticket.private_code} before it expired; the hold is released"
    return "the queue ticket expired before a match was found"
