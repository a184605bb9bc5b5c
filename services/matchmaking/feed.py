"""A player's queue stream, derived from the records: what changed in the ticket, its room's queue
and its pairing since the last update sent becomes the next updates.

Because the updates are a function of the stored state, any replica can serve any stream, and a
stream that broke is followed again (FollowQueue) by starting from nothing sent: the first updates
are the entry's state now (queued with its place, matched, the negotiation as it stands, the table
or the end), then the rest follow as they happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from services.matchmaking import updates
from services.matchmaking.records import (
    ALLOCATING,
    DONE,
    ENDED,
    NEGOTIATING,
    PLAYING,
    TABLE_READY,
    WAITING,
    Pairing,
    Records,
    Ticket,
    pairing_key,
    room_topic,
)
from services.matchmaking.rooms import Room

# A waiting player's place is shown at most this often: every arrival and pairing in the room changes
# every waiting player's place (or the count behind it), so a long queue would otherwise cost an update
# per waiting player per change — a quadratic cost exactly when the room is busiest.
POSITION_EVERY_SECONDS = 1.0


@dataclass
class _Sent:
    queued: bool = False
    position: tuple[int, int] | None = None
    position_at: float = -math.inf  # when the last Position was sent (the loop's clock)
    position_held: bool = False  # a newer place is waiting for POSITION_EVERY_SECONDS to pass
    matched: str = ""  # the pairing id of the last Matched
    negotiation: tuple[str, str, int, float] | None = None


class Feed:
    def __init__(self, records: Records, rooms: dict[str, Room], clock: Callable[[], float]) -> None:
        self._records = records
        self._rooms = rooms
        self._clock = clock

    async def follow(self, ticket_id: str) -> AsyncIterator[updates.Update]:
        """The ticket's updates from its state now until its end (TableReady or Expired)."""
        sent = _Sent()
        mirror = self._records.mirror
        while True:
            ticket = self._records.tickets.get(ticket_id)
            if ticket is None:
                yield updates.Expired("the queue ticket is no longer known (it ended long ago)")
                return
            pairing = self._records.pairings.get(ticket.pairing_id) if ticket.pairing_id else None
            # Listened for from the read on: a change made while the updates below are being sent (a
            # yield lets everything else run) wakes the next round instead of being missed.
            topics = [ticket.key]
            if ticket.pairing_id:
                topics.append(pairing_key(ticket.room_id, ticket.pairing_id))
            if ticket.state == WAITING and not ticket.private_code:
                topics.append(room_topic(ticket.room_id))
            changed = mirror.changed(*topics)
            try:
                for update in self._next(ticket, pairing, sent):
                    yield update
                    if isinstance(update, updates.TableReady | updates.Expired):
                        return
                if sent.position_held:  # woken for the held place too, when its time comes
                    wait = sent.position_at + POSITION_EVERY_SECONDS - asyncio.get_running_loop().time()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), max(0.0, wait))
                else:
                    await changed.wait()
            finally:
                mirror.forget(changed, *topics)

    def _next(self, ticket: Ticket, pairing: Pairing | None, sent: _Sent) -> list[updates.Update]:
        room = self._rooms[ticket.room_id]
        now = self._clock()
        out: list[updates.Update] = []
        if not sent.queued:
            sent.queued = True
            if ticket.held_for:
                out.append(updates.PrivateCode(ticket.private_code, room.room_id, ticket.expires_at - now))
            out.append(updates.Queued(ticket.ticket_id, ticket.expires_at - now))
        sent.position_held = False
        if ticket.state == WAITING and not ticket.private_code:
            queue = self._records.waiting(ticket.room_id)
            place = next((i for i, t in enumerate(queue) if t.ticket_id == ticket.ticket_id), None)
            if place is not None and sent.position != (place + 1, len(queue)):
                at = asyncio.get_running_loop().time()
                sent.position_held = at - sent.position_at < POSITION_EVERY_SECONDS
                if not sent.position_held:
                    sent.position, sent.position_at = (place + 1, len(queue)), at
                    out.append(updates.Position(place + 1, len(queue)))
        if pairing is not None and pairing.state != ENDED and sent.matched != pairing.pairing_id:
            sent.matched, sent.negotiation = pairing.pairing_id, None
            other = pairing.seats[1 - ticket.seat]
            out.append(
                updates.Matched(
                    pairing.pairing_id,
                    ticket.seat,
                    other.player_id,
                    other.is_bot,
                    other.display_name,
                    private_table=pairing.private_table,
                )
            )
        if pairing is not None and room.negotiates:
            negotiation = negotiation_of(pairing, ticket.seat)
            key = (pairing.pairing_id, negotiation.state, negotiation.multiplier, negotiation.deadline)
            if negotiation.state and key != sent.negotiation:
                sent.negotiation = key
                out.append(negotiation)
        if pairing is not None and pairing.table_tickets and ticket.reason in ("", TABLE_READY):
            out.append(
                updates.TableReady(
                    pairing.pairing_id,
                    pairing.table_id,
                    pairing.address,
                    pairing.table_tickets[ticket.seat],
                    ticket.seat,
                )
            )
        elif ticket.state == DONE:
            out.append(updates.Expired(ticket.reason))
        return out


def negotiation_of(pairing: Pairing, seat: int) -> updates.Negotiation:
    """T7 as it stands for ``seat``: whose turn, and the deadline to act by (none once agreed or
    declined). Its state is "" before the holds are placed (and for a pairing that ended otherwise)."""
    state = _negotiation_state(pairing)
    deadline = pairing.deadline if state in (updates.AWAITING_PROPOSAL, updates.PROPOSED) else 0.0
    your_turn = (state == updates.AWAITING_PROPOSAL and seat == 0) or (
        state == updates.PROPOSED and seat == 1
    )
    return updates.Negotiation(pairing.pairing_id, state, pairing.multiplier, your_turn, deadline)


def _negotiation_state(pairing: Pairing) -> str:
    if pairing.state == NEGOTIATING:
        return updates.PROPOSED if pairing.multiplier else updates.AWAITING_PROPOSAL
    if pairing.state in (ALLOCATING, PLAYING) and pairing.multiplier:
        return updates.ACCEPTED
    if pairing.state == ENDED and pairing.declined:
        return updates.DECLINED
    return ""
