"""Between the holds and the table: the multiplier negotiation (T7), and the pairing RPCs that cover
the time before the table (continue, leave) and at the table say where to go instead. Any replica
answers them: each is a compare-and-set on the pairing as read, so two answers never both count.
"""

from __future__ import annotations

from duelmahjong.platform.errors import FailedPrecondition, InvalidArgument
from services.matchmaking.pairings import Pairings
from services.matchmaking.queue import Fleet
from services.matchmaking.records import ALLOCATING, NEGOTIATING, PLAYING, Pairing
from services.matchmaking.store import Conflict

NEGOTIABLE = (1, 2, 5, 10)  # T7
_RACED = "the pairing changed as you answered (the other player acted, or time ran out): look again"


class Negotiation:
    def __init__(self, fleet: Fleet, pairings: Pairings) -> None:
        self._fleet = fleet
        self._pairings = pairings

    async def propose(self, player_id: str, pairing_id: str, multiplier: int) -> tuple[Pairing, int]:
        pairing, seat = self._pairings.of(player_id, pairing_id)
        if multiplier not in NEGOTIABLE:
            raise InvalidArgument(f"the multiplier must be 1, 2, 5 or 10 (T7), not {multiplier}")
        if seat != 0:
            raise FailedPrecondition("the first seated player proposes the multiplier (T7)")
        if pairing.state != NEGOTIATING or pairing.multiplier:
            raise FailedPrecondition("the multiplier is not open for a proposal now")
        room = self._fleet.room(pairing.room_id)
        deadline = self._fleet.clock() + room.negotiation_seconds
        try:
            return await self._fleet.records.update(pairing, multiplier=multiplier, deadline=deadline), seat
        except Conflict:
            raise FailedPrecondition(_RACED) from None

    async def respond(self, player_id: str, pairing_id: str, accept: bool) -> tuple[Pairing, int]:
        pairing, seat = self._pairings.of(player_id, pairing_id)
        if seat != 1:
            raise FailedPrecondition("the second seated player answers the proposal (T7)")
        if pairing.state != NEGOTIATING or not pairing.multiplier:
            raise FailedPrecondition("there is no proposal to answer now")
        if not accept:
            if not await self._pairings.end(
                pairing, "the multiplier was declined; the pairing ends (T7)", declined=True
            ):
                raise FailedPrecondition(_RACED)
            self._fleet.count("declined", pairing.room_id)
            return self._fleet.records.pairings.get(pairing_id, pairing), seat
        try:
            return await self._fleet.records.update(pairing, state=ALLOCATING, deadline=0.0), seat
        except Conflict:
            raise FailedPrecondition(_RACED) from None

    # Once the pair sits at a table, the table owns the pairing's live state: the continue-or-leave
    # decision travels on its Play stream (ContinueAction / LeaveAction) where it is ordered with
    # the hand's events. These RPCs cover the time before the table; at the table they say where to go.
    def continue_pairing(self, player_id: str, pairing_id: str) -> tuple[int, bool]:
        pairing, _seat = self._pairings.of(player_id, pairing_id)
        raise FailedPrecondition(_at_table(pairing) or "no hand has been played in this pairing yet")

    async def leave(self, player_id: str, pairing_id: str) -> None:
        pairing, _seat = self._pairings.of(player_id, pairing_id)
        at_table = _at_table(pairing)
        if at_table:
            raise FailedPrecondition(at_table)
        if not await self._pairings.end(pairing, f"player {player_id} left the pairing before the table"):
            raise FailedPrecondition(_RACED)


def _at_table(pairing: Pairing) -> str:
    if pairing.state != PLAYING:
        return ""
    return (
        f"the pairing plays at table {pairing.table_id}: continue or leave on its Play stream "
        "(ContinueAction / LeaveAction)"
    )
