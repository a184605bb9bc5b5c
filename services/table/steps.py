"""A hand in play at a live table (``TABLE_STATUS_PLAYING``): each action applied, its records written
ahead, its events shown, and what follows — the next decisions, those of seats in 托管, or the hand's
end, handed to :class:`~services.table.settling.Settling`.

:class:`Steps` runs in the live table's task only, on the
:class:`~services.table.live_state.LiveState` it is given. A step whose events a claim window holds
(:mod:`services.table.claim_window`) goes on when the window ends (:meth:`Steps.release`): until then
nobody decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Escaped, HandEnded
from duelmahjong.engine.state import CLOSED
from services.table import claim_window, records
from services.table.broadcast import Broadcast
from services.table.charges import Charges
from services.table.live_state import LiveState
from services.table.ports import TableOwner
from services.table.settling import Settling

# T10 托管: the action the bot plays now for a seat away past a deadline, or None when no seat in 托管
# decides (services.table.timers.autoplay_action).
Autoplayed = Callable[[], Action | None]


class Steps:
    """Applies the actions of the hand in play, checked, and moves the hand on after each one."""

    def __init__(
        self,
        state: LiveState,
        out: Broadcast,
        host: TableOwner,
        charges: Charges,
        settling: Settling,
        autoplayed: Autoplayed,
    ) -> None:
        self._state = state
        self._out = out
        self._host = host
        self._charges = charges
        self._settling = settling
        # 托管 is the clock's concept (services/table/timers.py), and the clock applies actions through
        # this object: it comes as a callable over the state and the host alone, so the references go
        # one way and a finished table leaves no cycle to collect (services/table/gc_policy.py).
        self._autoplayed = autoplayed
        # A step whose events a claim window holds goes on (next decisions, the hand's end) once they
        # are shown: (the hand_ended event, if the step ended the hand).
        self._held_step: tuple[HandEnded | None] | None = None

    async def apply(self, action: Action, origin: str, *, out_of_time: bool = False) -> None:
        """Apply one legal action: write its records ahead, then show its events, then what follows.
        ``out_of_time``: the seat's deadline passed, its time bank is spent (T11)."""
        seat = self._state.seats[action.seat]
        bank = seat.bank
        if out_of_time:
            seat.bank = 0.0
        seat.spend(self._host.now(), self._state.settings.decision_seconds)
        events = self._state.engine.apply(action)
        leading = [records.action_applied(action, origin)]
        if seat.bank != bank:
            leading.insert(0, records.time_bank(action.seat, seat.bank))
        sent = await self._out.publish(leading, events)
        if self._state.windows is not None and self._state.windows.open:
            # The seats' streams take the opener before this task builds what follows it (the
            # opponent's decision view when it has an option): else the discard itself would reach
            # the discarder later when the opponent can claim it.
            await asyncio.sleep(0)
        await self._charges.charge_step(sent)
        if self._host.metrics is not None:
            self._host.metrics.action_applied(action.kind, origin)
            if action.kind == A.LEAVE and any(isinstance(e, Escaped) for e in events):
                self._host.metrics.escapes.inc()
        ended = next((e for e in events if isinstance(e, HandEnded)), None)
        if self._state.holding():
            if ended is not None or self._held_step is None:
                self._held_step = (ended,)
            return
        await self._go_on(ended)

    async def _go_on(self, ended: HandEnded | None) -> None:
        """After a step once its events are shown: the hand's end, or the decisions that follow."""
        if ended is not None:
            await self._settling.hand_over(ended.outcome)
        elif self._state.engine.phase != CLOSED:
            self.offer_decisions()
            await self.autoplay()

    async def autoplay(self) -> None:
        """T10 托管: the decisions of a seat in 托管 are played by the baseline bot at once, one after
        the other, until none is left to it."""
        while (action := self._autoplayed()) is not None:
            await self.apply(action, "autoplay")

    def offer_decisions(self) -> None:
        now, sequence = self._host.now(), self._state.last_event_sequence()
        windows = self._state.windows
        window_end = windows.deciding_until() if windows is not None else None
        fresh = []
        for seat, state in enumerate(self._state.seats):
            if self._state.deciding(seat):
                # A decision is new when the seat had none (it just acted, or the turn came to it); a
                # seat still deciding keeps its clock and its sequence while the other acts (T4 both).
                if state.offer(now, sequence):
                    fresh.append(seat)
                    if window_end is not None and windows is not None:
                        state.window_until = window_end - claim_window.answer_margin(windows.seconds)
            else:
                state.no_decision()
        # Only a seat with a new decision gets a view (with its legal actions): the events already told
        # both seats what changed, and a view per seat per action would double the table's work.
        self._out.send_views(fresh)

    async def release(self, now: float) -> None:
        """Show what the claim windows that ended by ``now`` held; once nothing is held, the step they
        held goes on."""
        if self._out.release(now) and self._held_step is not None and not self._state.holding():
            (ended,), self._held_step = self._held_step, None
            await self._go_on(ended)

    def hold(self) -> None:
        """The table's log stopped inside a claim window (its rebuild reopened it): the step goes on
        when the window ends."""
        self._held_step = (None,)
