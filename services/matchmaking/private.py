"""Private tables (docs/protocol.md "Private tables"): a ticket in no queue, waiting for the friend
who brings its code. The code is a key ``codes.<code>`` created only if absent, so two live tables
never share one; the opener's carry and fee are held at once (the friend who joins finds them
secured), under the id the pairing will have.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable

from duelmahjong.platform.errors import FailedPrecondition, InvalidArgument, NotFound, RateLimited
from duelmahjong.platform.ratelimit import RateLimiter
from services.matchmaking import codes
from services.matchmaking.pairings import Pairings
from services.matchmaking.queue import Fleet, Queue
from services.matchmaking.records import JOINS, WAITING, Ticket, code_key, join_key
from services.matchmaking.store import Conflict


class PrivateTables:
    def __init__(
        self,
        fleet: Fleet,
        queue: Queue,
        pairings: Pairings,
        joins: RateLimiter,
        draw: Callable[[], str] = codes.draw,
    ) -> None:
        self._draw = draw
        self._fleet = fleet
        self._records = fleet.records
        self._queue = queue
        self._pairings = pairings
        # The buckets are records of the store (``joins.<player>``), shared by the fleet: a guesser
        # spread over N replicas gets the rate once, not N times.
        self._joins = joins

    async def open(self, player_id: str, room_id: str, carry: int) -> Ticket:
        room = self._fleet.room(room_id)
        held_for = f"p-{uuid.uuid4().hex[:16]}"
        code = await self._issue(held_for)
        try:
            ticket = await self._queue.admit(player_id, room, carry, private_code=code, held_for=held_for)
        except BaseException:
            await self._forget(code, held_for)
            raise
        try:
            await self._fleet.wallet.place_hold(player_id, held_for, carry + room.fee, room.fee)
        except BaseException:
            # A hold placed as the call was cancelled is not kept: finishing the opener releases it.
            await self._queue.finish(ticket, "the wallet refused the hold")
            raise
        try:
            ticket = await self._records.update(ticket, hold_placed=True)
        except Conflict:
            pass  # expired or cancelled already: its finish releases the hold
        self._fleet.count("private_opened", room.room_id)
        return ticket

    async def _issue(self, held_for: str) -> str:
        """A code no live private table has, claimed for the opener's pairing id."""
        while True:
            code = self._draw()
            try:
                await self._records.create_claim(code_key(code), ticket_id="", pairing_id=held_for)
                return code
            except Conflict:
                continue

    async def _forget(self, code: str, held_for: str) -> None:
        try:
            await self._records.drop_claim(code_key(code), pairing_id=held_for)
        except Conflict:
            pass

    async def _take_join(self, player_id: str) -> float:
        """One try from the player's bucket, by compare-and-set: 0.0, or the seconds until the next."""
        key = join_key(player_id)
        while True:
            entry = self._records.entry(key)
            now = self._fleet.clock()
            held = json.loads(entry.value) if entry is not None else {"tokens": self._joins.burst, "at": now}
            left, wait = self._joins.spend(float(held["tokens"]), float(held["at"]), now)
            value = json.dumps({"tokens": left, "at": now}).encode()
            try:
                if entry is None:
                    await self._records.mirror.create(key, value)
                else:
                    await self._records.mirror.update(key, value, entry.revision)
                return wait
            except Conflict:  # another try of the same player, on another replica: read it again
                await self._records.mirror.newer(key, entry.revision if entry is not None else 0)

    async def forget_idle_joins(self) -> None:
        """Drop the buckets that have filled up again: a full bucket is what a player without one gets."""
        now = self._fleet.clock()
        for entry in self._records.mirror.under(JOINS):
            if now - float(json.loads(entry.value)["at"]) >= self._joins.idle_after():
                try:
                    await self._records.mirror.delete(entry.key, entry.revision)
                except Conflict:
                    pass

    def _opener(self, code: str) -> Ticket | None:
        claim = self._records.claim(code_key(code))
        ticket = self._records.tickets.get(self._records.openers.get(code, ""))
        if claim is None or ticket is None or ticket.held_for != claim["pairing_id"]:
            return None
        return ticket

    async def join(self, player_id: str, code: str, carry: int) -> Ticket:
        """Join the private table of ``code`` (case and white space ignored) as its second seat."""
        wait = await self._take_join(player_id)
        if wait > 0:
            raise RateLimited(
                f"too many private codes tried ({self._joins.burst} at once, then "
                f"{self._joins.per_minute:g} a minute); retry in {math.ceil(wait)} s",
                retry_after=wait,
            )
        wanted = codes.normalise(code)
        if not wanted:
            raise InvalidArgument("code is required: the code your friend's OpenPrivateTable gave")
        opener = self._opener(wanted) if codes.well_formed(wanted) else None
        if opener is None or opener.state != WAITING or not opener.hold_placed:
            raise NotFound(_unknown_code(wanted))
        if opener.player_id == player_id:
            raise FailedPrecondition(
                f"{wanted} is the code of your own private table: give it to the friend you want to play"
            )
        room = self._fleet.room(opener.room_id)
        ticket = await self._queue.admit(player_id, room, carry, private_code=wanted)
        opener = self._records.tickets.get(opener.ticket_id, opener)
        pairing = await self._pairings.pair(room, opener, ticket, pairing_id=opener.held_for, private=True)
        if pairing is None:  # joined, cancelled or expired as the wallet answered
            await self._queue.finish(ticket, "the private table was no longer waiting")
            raise NotFound(_unknown_code(wanted))
        return self._records.tickets.get(ticket.ticket_id, ticket)


def _unknown_code(code: str) -> str:
    # Only a code that could have been issued is repeated back: what else was typed may be anything.
    named = f"the code {code!r}" if codes.well_formed(code) else "that code"
    return (
        f"no private table has {named}: it is mistyped, or it expired or was used already (a code is "
        f"{codes.LENGTH} of {codes.ALPHABET} and lives as long as its room's queue ticket); ask your "
        "friend for the code of a new private table"
    )
