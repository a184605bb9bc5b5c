"""Dealing a hand at a live table: from WAITING (both seats here) or BETWEEN_HANDS (both play on) to
PLAYING — the hand's seed and commitment salt drawn, the items chosen for the deal (T6 乾坤大挪移) spent
at it, the seats' clocks and banks set for the hand, then its first decisions offered.

:class:`Dealing` runs in the live table's task only, on the
:class:`~services.table.live_state.LiveState` it is given.
"""

from __future__ import annotations

from duelmahjong.v1 import table_pb2
from services.table import records
from services.table.broadcast import Broadcast
from services.table.charges import Charges
from services.table.live_state import LiveState
from services.table.ports import TableOwner
from services.table.steps import Steps


class Dealing:
    """Deals the table's next hand and starts its play."""

    def __init__(
        self, state: LiveState, out: Broadcast, host: TableOwner, charges: Charges, steps: Steps
    ) -> None:
        self._state = state
        self._out = out
        self._host = host
        self._charges = charges
        self._steps = steps

    async def deal(self) -> None:
        number = self._state.engine.state.hand_number + 1
        self._state.hand_id = f"{self._state.table_id}-h{number}"
        # The hand's only randomness, and the salt of its commitment: neither reaches a seat before the
        # hand ended (the commitment to them does, in hand_started, before the deal).
        seed = self._host.seed(self._state.table_id, number)
        salt = self._host.salt(self._state.table_id, number)
        # T6 乾坤大挪移 is chosen before the deal (first request or ContinueAction) and spent at it.
        grand_shift = frozenset(seat for seat, state in enumerate(self._state.seats) if state.grand_shift)
        events = self._state.engine.start_hand(
            seed, salt=salt, items=self._state.item_counts, qiankun=grand_shift
        )
        self._state.status, self._state.between = table_pb2.TABLE_STATUS_PLAYING, False
        for state in self._state.seats:
            state.new_hand(self._state.settings.time_bank_seconds)
            state.grand_shift = False
        begun = records.hand_begun(
            self._state.engine,
            events[0],
            table_id=self._state.table_id,
            hand_id=self._state.hand_id,
            seed=seed,
            rules=self._state.request.rules,
            players=self._state.request.players,
        )
        sent = await self._out.publish([begun], events)
        await self._charges.spend_items(sent, grand_shift)
        self._steps.offer_decisions()
        await self._steps.autoplay()
