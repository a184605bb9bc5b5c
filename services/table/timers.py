"""What moves a live table on when nobody acts: its deadlines, and what each does once passed — a
decision's (T11, the seat's time bank spent), a claim window's (passed), a seat away past its deadline
(T10 托管: the bot plays for it), a seat gone past its grace (it escapes), both seats' join, the hand's
settlement, and a seat's answer between hands (T7: silence is leaving).

:class:`Timers` runs in the live table's task only: :meth:`Timers.next_deadline` bounds the task's
wait for its inbox, and :meth:`Timers.on_clock` runs after every wake, in time or late.
"""

from __future__ import annotations

import functools

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.state import CLOSED
from duelmahjong.v1 import table_pb2
from duelmahjong.views import seat_events
from services.table import records
from services.table.between import BetweenHands
from services.table.broadcast import Broadcast
from services.table.live_state import LiveState
from services.table.ports import TableOwner
from services.table.settling import Settling
from services.table.steps import Steps


def autoplay_action(state: LiveState, host: TableOwner) -> Action | None:
    """T10 托管: the baseline bot's action for a seat that is away and missed a deadline, while the
    hand is in play; None when no such seat decides now (it reconnected, or it is the other's turn)."""
    if state.status != table_pb2.TABLE_STATUS_PLAYING or state.between:
        return None
    seat = next(
        (
            s
            for s in (0, 1)
            if state.seats[s].auto_play and not state.seats[s].connected and state.deciding(s)
        ),
        None,
    )
    if seat is None:
        return None
    legal = state.engine.legal_actions(seat)
    if host.metrics is not None:
        host.metrics.autoplays.inc()
    return bot.choose(state.engine.state, seat, legal)


class Timers:
    """The live table's clock: the next deadline of its phase, and what passing it does."""

    def __init__(
        self,
        state: LiveState,
        out: Broadcast,
        host: TableOwner,
        steps: Steps,
        between: BetweenHands,
        settling: Settling,
    ) -> None:
        self._state = state
        self._out = out
        self._host = host
        self._steps = steps
        self._between = between
        self._settling = settling

    def next_deadline(self) -> float | None:
        if self._state.status == table_pb2.TABLE_STATUS_WAITING:
            return self._state.opened_at + self._host.join_seconds
        if self._state.status == table_pb2.TABLE_STATUS_SETTLING:
            return self._settling.deadline()  # no decision runs while the hand is settled
        times = [t for t in (self._state.deadline(0), self._state.deadline(1)) if t is not None]
        if self._state.windows is not None and self._state.windows.open:
            times.append(self._state.windows.open[0].ends_at)
        times += [
            s.left_at + self._state.grace
            for s in self._state.seats
            if s.left_at is not None and not self._state.between
        ]
        return min(times) if times else None

    async def on_clock(self) -> None:
        now = self._host.now()
        # A window's decision past its time is passed before the windows are released: a loop that gets
        # here late, past the window's end as well, then shows what follows as it would have in time
        # (held to the window's end, stamped so), not at once, a step later, at the time of the release.
        for seat in (0, 1):
            deadline = self._state.deadline(seat)
            if self._state.seats[seat].window_until is not None and deadline is not None and now >= deadline:
                await self._window_passed(seat)
        await self._steps.release(now)
        if self._state.status == table_pb2.TABLE_STATUS_WAITING:
            if now >= self._state.opened_at + self._host.join_seconds:
                self._state.ending("a seat never joined the table")  # nobody played
            return
        if self._state.status == table_pb2.TABLE_STATUS_SETTLING:
            if self._settling.gave_up(now):
                await self._between.settled(None)
            return
        for seat in (0, 1):
            if self._state.status == table_pb2.TABLE_STATUS_CLOSED or self._state.engine.phase == CLOSED:
                return
            state = self._state.seats[seat]
            if (
                not self._state.between
                and state.left_at is not None
                and now >= state.left_at + self._state.grace
            ):
                await self._steps.apply(Action(seat, A.LEAVE), "timeout")  # T10: gone past the grace = escape
                continue
            deadline = self._state.deadline(seat)
            if deadline is None or now < deadline:
                continue
            if state.window_until is not None:
                await self._window_passed(seat)
                continue
            if self._host.metrics is not None:
                self._host.metrics.timeouts.inc()
            if self._state.between:
                await self._between.answer(seat, "leave", origin="timeout")
            elif not state.connected:
                # T10: a seat away past its decision's deadline goes to 托管; the bot plays this decision
                # and every later one at once until the seat comes back.
                spent = [records.time_bank(seat, 0.0)] if state.bank else []
                state.bank, state.auto_play = 0.0, True
                await self._out.announce(
                    functools.partial(seat_events.seat_connection, seat, False, True), spent
                )
                await self._steps.autoplay()
            else:
                default = self._state.engine.default_action(seat)
                if default is not None:
                    await self._steps.apply(default, "timeout", out_of_time=True)

    async def _window_passed(self, seat: int) -> None:
        """A claim window not answered in time is passed, connected or not: no 托管 and no bank spent,
        which both seats would be shown (the window's length is the room's, not T11's)."""
        if self._host.metrics is not None:
            self._host.metrics.timeouts.inc()
        default = self._state.engine.default_action(seat)
        if default is not None:
            await self._steps.apply(default, "timeout")
        else:  # the decision went with the hand (the other seat left inside the window)
            self._state.seats[seat].no_decision()
