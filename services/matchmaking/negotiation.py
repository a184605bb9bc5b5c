"""Between the holds and the table: the multiplier negotiation (T7), and the pairing RPCs that cover
the time before the table (continue, leave) and at the table say where to go instead.
"""

from __future__ import annotations

from duelmahjong.platform.errors import FailedPrecondition, InvalidArgument
from services.matchmaking import updates
from services.matchmaking.allocation import TableAllocation
from services.matchmaking.pairing import ALLOCATING, NEGOTIATING, PLAYING, Pairing

NEGOTIABLE = (1, 2, 5, 10)  # T7


class MultiplierNegotiation(TableAllocation):
    """T7 on a held pairing, then the pairing RPCs before and at the table."""

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
