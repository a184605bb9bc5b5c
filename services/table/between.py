"""Between hands at a live table (``TABLE_STATUS_BETWEEN_HANDS``, T7 / T10): once the hand's
settlement is shown, each seat continues (with 乾坤大挪移 for the next deal, T6) or leaves; both
continuing deals the next hand, one leaving ends the table. A seat that asked to leave while the hand
was settled leaves as soon as it is.

:class:`BetweenHands` runs in the live table's task only, on the
:class:`~services.table.live_state.LiveState` it is given.
"""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.v1 import events_pb2, table_pb2
from duelmahjong.views import items
from services.table import records
from services.table.broadcast import Broadcast
from services.table.dealing import Dealing
from services.table.live_state import LiveState
from services.table.ports import TableOwner
from services.table.settling import Settling
from services.table.steps import Steps


class BetweenHands:
    """From a hand's settlement shown to the next deal, or to the table's end."""

    def __init__(
        self,
        state: LiveState,
        out: Broadcast,
        host: TableOwner,
        steps: Steps,
        dealing: Dealing,
        settling: Settling,
    ) -> None:
        self._state = state
        self._out = out
        self._host = host
        self._steps = steps
        self._dealing = dealing
        self._settling = settling

    async def settled(self, applied: events_pb2.SettlementApplied | None) -> None:
        """The hand's settlement came (None: the wait for it passed): shown, then between hands, where
        a seat that asked to leave while it was on its way leaves now."""
        await self._settling.settled(applied)
        leaving, self._state.leaving = sorted(self._state.leaving), set()
        for seat in leaving:
            if self._state.between:
                await self.answer(seat, "leave")

    async def answer(
        self,
        seat: int,
        which: str | None,
        origin: str = "player",
        request: table_pb2.PlayRequest | None = None,
    ) -> None:
        """T7 / T10: between hands each seat continues or leaves; both continuing deals the next hand."""
        if which == "continue_playing":
            use_grand_shift = request is not None and request.action.continue_playing.use_grand_shift
            if use_grand_shift and self._state.item_counts[seat].get(items.GRAND_SHIFT, 0) < 1:
                session = self._state.seats[seat].session
                if session is not None and request is not None:
                    why = (
                        "you have no 乾坤大挪移 left (T6)"
                        if items.items_allowed(self._state.request.rules)
                        else "items are not played in this room (T6)"
                    )
                    self._out.reject(session, request, table_pb2.REJECTION_CODE_ILLEGAL, why)
                return
            # Written before it counts: a table rebuilt from its log knows who plays on.
            await self._out.write([records.seat_continued(seat, use_grand_shift)])
            if use_grand_shift:
                self._state.seats[seat].grand_shift = True
            self._state.seats[seat].continuing = True
            if all(s.continuing for s in self._state.seats):
                if self._host.draining:
                    self._state.ending("the table server is draining")
                else:
                    await self._dealing.deal()
            return
        if which != "leave":
            session = self._state.seats[seat].session
            if session is not None:
                refused = request or table_pb2.PlayRequest()
                why = "between hands: continue or leave"
                self._out.reject(session, refused, table_pb2.REJECTION_CODE_ILLEGAL, why)
            return
        self._state.between = False
        await self._steps.apply(Action(seat, A.LEAVE), origin)
        self._state.ending("a player left between hands")
