"""What moves a live table's hands on, put together: one collaborator per phase of the table
(``LiveState.status``), built here once per table, and the few entry points
:class:`~services.table.live.LiveTable` calls.

- WAITING → PLAYING, and BETWEEN_HANDS → PLAYING: :class:`~services.table.dealing.Dealing` deals;
- PLAYING: :class:`~services.table.steps.Steps` applies each action and offers the next decisions;
  :class:`~services.table.charges.Charges` tells the wallet what a step or the deal spent;
- PLAYING → SETTLING: :class:`~services.table.settling.Settling`, until the wallet's answer is shown;
- BETWEEN_HANDS: :class:`~services.table.between.BetweenHands`, each seat's continue or leave (T7);
- any phase, when nobody acts: :class:`~services.table.timers.Timers`, the deadlines (T11), 托管
  (T10), claim windows, the waits for the seats to join and for the hand's settlement;
- CLOSED: :meth:`LiveState.ending <services.table.live_state.LiveState.ending>`, from any of them.

They run in the live table's task only, on its :class:`~services.table.live_state.LiveState`; what
they show the seats goes through the table's :class:`~services.table.broadcast.Broadcast`, what the
other services learn through its :class:`~services.table.ports.TableEvents`. Each is given what it
uses, and the references go one way — the timers hold the phases they move on, between hands holds the
deal, the deal holds the steps, the steps hold settling — so a finished table is freed by reference
counting (services/table/gc_policy.py).
"""

from __future__ import annotations

import functools

from duelmahjong.v1 import table_pb2
from duelmahjong.views import seat_events
from services.table.between import BetweenHands
from services.table.broadcast import Broadcast
from services.table.charges import Charges
from services.table.dealing import Dealing
from services.table.live_state import LiveState
from services.table.ports import Settlements, TableEvents, TableOwner
from services.table.settling import PostSettlement, Settling
from services.table.steps import Steps
from services.table.timers import Timers, autoplay_action


class HandCycle:
    """A live table's hands: its phases' collaborators, and what the table's task calls of them."""

    def __init__(
        self,
        state: LiveState,
        out: Broadcast,
        host: TableOwner,
        events: TableEvents,
        settlements: Settlements,
        post_settlement: PostSettlement,
    ) -> None:
        self._state = state
        self._out = out
        charges = Charges(state, events)
        settling = Settling(state, out, host, events, settlements, post_settlement)
        # 托管 is the timers' rule, and the timers hold the steps: the steps get the rule alone, over the
        # state and the host, so no reference leads back up (services/table/steps.py).
        autoplayed = functools.partial(autoplay_action, state, host)
        steps = Steps(state, out, host, charges, settling, autoplayed)
        dealing = Dealing(state, out, host, charges, steps)
        between = BetweenHands(state, out, host, steps, dealing, settling)
        timers = Timers(state, out, host, steps, between, settling)
        self._steps, self._settling = steps, settling
        # What the table's task calls, bound once: each is the collaborator's own method.
        self.apply = steps.apply  # a seat's action, checked
        self.deal = dealing.deal  # both seats are here
        self.between_hands = between.answer  # a seat's answer between hands
        self.settled = between.settled  # the wallet's answer, from the inbox
        self.abandon = settling.abandon  # the table stops here
        self.next_deadline = timers.next_deadline
        self.on_clock = timers.on_clock

    async def resume(self) -> None:
        """A table rebuilt from its log (:mod:`services.table.rebuild`) goes on where the log stops: a
        hand that ended without its settlement shown is claimed again (the claim's id is the hand's, so
        scoring and the wallet take it once) and settled; 托管 seats are played.

        First of all it writes that neither seat is connected here (true: no stream has come yet).
        Being this server's first record on the log, it fences the log at once: a former owner that
        was only paused, and resumes with a timer due, finds its next append refused instead of
        playing on a table it no longer owns."""
        if self._state.holding():  # the log stopped inside a claim window (rebuild reopened it)
            self._steps.hold()
        if not self._state.ended():
            for seat in (0, 1):
                auto_play = self._state.seats[seat].auto_play
                await self._out.announce(
                    functools.partial(seat_events.seat_connection, seat, False, auto_play)
                )
        if self._state.status == table_pb2.TABLE_STATUS_SETTLING:
            await self._settling.begin()
        elif self._state.status == table_pb2.TABLE_STATUS_PLAYING:
            await self._steps.autoplay()
