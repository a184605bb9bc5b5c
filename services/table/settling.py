"""A hand's end at a live table: where it ends in the table's log goes to scoring, the table is
SETTLING while the wallet's answer is on its way, and that answer comes back as an ordinary message of
the table's inbox.

The table's task never awaits another service. :meth:`Settling.begin` asks the server's settlement
board (:class:`~services.table.ports.Settlements`) to post the hand's answer to the table's inbox,
publishes the pointer (``HandEnded``: table, hand, log position) and returns; the task goes on serving
attaches, detaches, status and spectators.
:meth:`Settling.settled` runs when the answer is taken from the inbox — or, with none, once
``settlement_wait`` has passed (:meth:`Settling.gave_up`): both seats are shown ``hand_settled``
(without a settlement if none came), and the table goes between hands or closes.
"""

from __future__ import annotations

from collections.abc import Callable

from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.state import CLOSED
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2, table_pb2
from duelmahjong.views import seat_events
from services.table.broadcast import Broadcast
from services.table.live_state import LiveState
from services.table.ports import Settlements, TableEvents, TableOwner

_log = get_logger("table.settling")

PostSettlement = Callable[[events_pb2.SettlementApplied], None]


class Settling:
    """From a hand's result to its settlement shown, in the table's task, without waiting in it."""

    def __init__(
        self,
        state: LiveState,
        out: Broadcast,
        host: TableOwner,
        events: TableEvents,
        settlements: Settlements,
        post: PostSettlement,
    ) -> None:
        self._state = state
        self._out = out
        self._host = host
        self._events = events
        self._settlements = settlements
        self._post = post  # puts the wallet's answer into the table's inbox

    async def hand_over(self, outcome: Outcome) -> None:
        """The engine ended the hand in play with ``outcome``: counted among the table's hands, then
        settled (:meth:`begin`)."""
        self._state.hands_played += 1
        if self._host.metrics is not None:
            self._host.metrics.hands.labels(outcome=outcome.termination).inc()
        await self.begin()

    async def begin(self) -> None:
        """The hand has ended: SETTLING, the answer expected, and where the hand ends in the log
        published for scoring, which alone turns the log into the hand's result.
        A table rebuilt in SETTLING begins again: the pointer names the hand, so scoring and the wallet
        take it once and answer it again."""
        state = self._state
        state.status, state.settling_since = table_pb2.TABLE_STATUS_SETTLING, self._host.now()
        # Expected before it is asked for, so no answer can come first.
        self._settlements.expect(state.hand_id, self._post)
        # The hand's end is the last record written: the log up to here is the whole hand.
        await self._events.hand_ended(state.table_id, state.hand_id, state.log.sequence)
        self._out.send_views()  # both seats see SETTLING

    def deadline(self) -> float | None:
        """When the table stops waiting for the hand's settlement (None: not settling)."""
        if self._state.status != table_pb2.TABLE_STATUS_SETTLING:
            return None
        return self._state.settling_since + self._host.settlement_wait

    def gave_up(self, now: float) -> bool:
        """Whether the wait for the hand's settlement has passed at ``now``: then the table stops
        expecting it (a later answer is dropped, and counted) and goes on without it."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return False
        self._settlements.forget(self._state.hand_id)
        _log.warning(
            "no settlement for the hand in time; carrying on",
            extra={"fields": {"table_id": self._state.table_id, "hand_id": self._state.hand_id}},
        )
        return True

    def abandon(self) -> None:
        """The table stops here (closed, let go, stopped): its hand's answer is expected no more."""
        if self._state.status == table_pb2.TABLE_STATUS_SETTLING:
            self._settlements.forget(self._state.hand_id)

    async def settled(self, applied: events_pb2.SettlementApplied | None) -> None:
        """The wallet's answer taken from the inbox (None: it did not come in time): shown to both seats,
        written ahead like every event; then between hands, or the table's end."""
        state = self._state
        if state.status != table_pb2.TABLE_STATUS_SETTLING:
            return
        if applied is not None and applied.hand_id != state.hand_id:
            return  # an answer for another hand of this table: never expected now
        if self._host.metrics is not None:
            self._host.metrics.settlement_latency.observe(self._host.now() - state.settling_since)
        players = state.request.players
        await self._out.announce(lambda sequence: seat_events.hand_settled(applied, players, sequence))
        if state.engine.phase == CLOSED or self._host.draining:
            state.ending(
                "a player left during the hand"
                if state.engine.phase == CLOSED
                else "the table server is draining"
            )
            return
        state.status = table_pb2.TABLE_STATUS_BETWEEN_HANDS
        state.between, state.between_since = True, self._host.now()
        for seat in state.seats:
            seat.continuing = False
        self._out.send_views()
