"""The life of a hand at a live table: applying actions, timers (T11), 托管 (T10), dealing, the hand's
end, settlement and between hands.

:class:`HandCycle` runs in the live table's task only, on the
:class:`~services.table.live_state.LiveState` it is given; what it shows the seats goes through the
table's :class:`~services.table.broadcast.Broadcast`, what the other services learn through the
table's :class:`~services.table.ports.TableEvents`.
"""

from __future__ import annotations

import asyncio
import functools

from duelmahjong.engine import actions as A
from duelmahjong.engine import bot
from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Escaped, Event, Exchanged, HandEnded
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.state import CLOSED
from duelmahjong.platform import subjects
from duelmahjong.v1 import events_pb2, table_pb2
from duelmahjong.views import items, seat_events
from services.table import claim_window, records, results
from services.table.broadcast import Broadcast
from services.table.live_state import LiveState
from services.table.ports import Settlements, TableEvents, TableOwner


class HandCycle:
    """What moves a live table's hands on: seats' actions once checked, the clock, the hand's end."""

    def __init__(
        self,
        state: LiveState,
        out: Broadcast,
        host: TableOwner,
        events: TableEvents,
        settlements: Settlements,
    ) -> None:
        self._state = state
        self._out = out
        self._host = host
        self._events = events
        self._settlements = settlements
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
        await self._charges(sent)
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
            await self.hand_over(ended.outcome)
        elif self._state.engine.phase != CLOSED:
            self.offer_decisions()
            await self.autoplay()

    async def autoplay(self) -> None:
        """T10 托管: a seat that is away and missed a deadline has its decisions played by the baseline
        bot at once, until it reconnects."""
        while self._state.status == table_pb2.TABLE_STATUS_PLAYING and not self._state.between:
            seat = next(
                (
                    s
                    for s in (0, 1)
                    if self._state.seats[s].auto_play
                    and not self._state.seats[s].connected
                    and self._state.deciding(s)
                ),
                None,
            )
            if seat is None:
                return
            legal = self._state.engine.legal_actions(seat)
            if self._host.metrics is not None:
                self._host.metrics.autoplays.inc()
            await self.apply(bot.choose(self._state.engine.state, seat, legal), "autoplay")

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

    def next_deadline(self) -> float | None:
        if self._state.status == table_pb2.TABLE_STATUS_WAITING:
            return self._state.opened_at + self._host.join_seconds
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
        if self._out.release(now) and self._held_step is not None and not self._state.holding():
            (ended,), self._held_step = self._held_step, None
            await self._go_on(ended)
        if self._state.status == table_pb2.TABLE_STATUS_WAITING:
            if now >= self._state.opened_at + self._host.join_seconds:
                self._state.ending("a seat never joined the table")  # nobody played
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
                await self.apply(Action(seat, A.LEAVE), "timeout")  # T10: gone past the grace = escape
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
                await self.between_hands(seat, "leave", origin="timeout")
            elif not state.connected:
                # T10: a seat away past its decision's deadline goes to 托管; the bot plays this decision
                # and every later one at once until the seat comes back.
                spent = [records.time_bank(seat, 0.0)] if state.bank else []
                state.bank, state.auto_play = 0.0, True
                await self._out.announce(
                    functools.partial(seat_events.seat_connection, seat, False, True), spent
                )
                await self.autoplay()
            else:
                default = self._state.engine.default_action(seat)
                if default is not None:
                    await self.apply(default, "timeout", out_of_time=True)

    async def _window_passed(self, seat: int) -> None:
        """A claim window not answered in time is passed, connected or not: no 托管 and no bank spent,
        which both seats would be shown (the window's length is the room's, not T11's)."""
        if self._host.metrics is not None:
            self._host.metrics.timeouts.inc()
        default = self._state.engine.default_action(seat)
        if default is not None:
            await self.apply(default, "timeout")
        else:  # the decision went with the hand (the other seat left inside the window)
            self._state.seats[seat].no_decision()

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
        await self._spend_items(sent, grand_shift)
        self.offer_decisions()
        await self.autoplay()

    async def hand_over(self, result: Outcome) -> None:
        self._state.hands_played += 1
        if self._host.metrics is not None:
            self._host.metrics.hands.labels(outcome=result.termination).inc()
        await self._settle(result)

    async def resume(self) -> None:
        """A table rebuilt from its log (:mod:`services.table.rebuild`) goes on where the log stops: a
        hand that ended without its settlement shown is claimed again (the claim's id is the hand's, so
        scoring and the wallet take it once) and settled; 托管 seats are played.

        First of all it writes that neither seat is connected here (true: no stream has come yet).
        Being this server's first record on the log, it fences the log at once: a former owner that
        was only paused, and resumes with a timer due, finds its next append refused instead of
        playing on a table it no longer owns."""
        if self._state.holding():  # the log stopped inside a claim window (rebuild reopened it)
            self._held_step = (None,)
        if not self._state.ended():
            for seat in (0, 1):
                auto_play = self._state.seats[seat].auto_play
                await self._out.announce(
                    functools.partial(seat_events.seat_connection, seat, False, auto_play)
                )
        if self._state.status == table_pb2.TABLE_STATUS_BETWEEN_HANDS and not self._state.between:
            ended = next(e for e in reversed(self._state.engine.events) if isinstance(e, HandEnded))
            await self._settle(ended.outcome)
        elif self._state.status == table_pb2.TABLE_STATUS_PLAYING:
            await self.autoplay()

    async def _settle(self, result: Outcome) -> None:
        """The hand's result goes to scoring; the wallet's settlement is shown; then between hands."""
        hand_result = results.hand_result(
            result,
            table_id=self._state.table_id,
            hand_id=self._state.hand_id,
            room_id=self._state.request.room_id,
            rules=self._state.request.rules,
            players=self._state.request.players,
            last_sequence=self._state.log.sequence,
        )
        # The room fees travel in the HandResult (rules.fee): the wallet charges them with the hand.
        await self._events.hand_ended(hand_result)
        self._state.status = table_pb2.TABLE_STATUS_BETWEEN_HANDS
        self._out.send_views()
        applied = await self._settlements.settlement(self._state.hand_id, self._host.settlement_wait)
        await self._show_settlement(applied)
        winner = result.winner
        if winner >= 0:
            guessed = results.guess_resolved(
                result,
                applied,
                table_id=self._state.table_id,
                hand_id=self._state.hand_id,
                player_id=self._state.request.players[winner].player_id,
            )
            if guessed is not None:
                await self._events.publish(subjects.GUESS_RESOLVED, guessed, f"guess:{self._state.hand_id}")
        if self._state.engine.phase == CLOSED or self._host.draining:
            self._state.ending(
                "a player left during the hand"
                if self._state.engine.phase == CLOSED
                else "the table server is draining"
            )
            return
        self._state.between, self._state.between_since = True, self._host.now()
        for state in self._state.seats:
            state.continuing = False
        self._out.send_views()

    async def _spend_items(
        self, sent: list[tuple[int, Event]], grand_shift: frozenset[int] = frozenset()
    ) -> None:
        """T6: each item used goes to the wallet once, after the write-ahead, keyed by the sequence of
        the event that shows it (table/hand/sequence); the seat's count here drops at once."""
        for sequence, seat, name in items.used_items(sent, grand_shift):
            counts = self._state.item_counts[seat]
            counts[name] = counts.get(name, 0) - 1
            used = items.item_used(
                table_id=self._state.table_id,
                hand_id=self._state.hand_id,
                sequence=sequence,
                player_id=self._state.request.players[seat].player_id,
                name=name,
            )
            await self._events.publish(subjects.ITEM_USED, used, f"item:{self._state.table_id}:{sequence}")

    async def _charges(self, sent: list[tuple[int, Event]]) -> None:
        """erren T4 paid exchanges go to the wallet as they happen (keyed by their sequence as sent)."""
        await self._spend_items(sent)
        for sequence, event in sent:
            if not isinstance(event, Exchanged) or event.seat < 0:
                continue
            charge = results.exchange_charged(
                event,
                table_id=self._state.table_id,
                hand_id=self._state.hand_id,
                sequence=sequence,
                player_id=self._state.request.players[event.seat].player_id,
                fee=self._state.request.rules.exchange_fee,
            )
            if charge is not None:
                await self._events.publish(
                    subjects.EXCHANGE_CHARGED, charge, f"exchange:{self._state.table_id}:{sequence}"
                )

    async def _show_settlement(self, applied: events_pb2.SettlementApplied | None) -> None:
        """Both seats are shown what the hand moved: the next numbered event, written ahead like the rest,
        so a seat that resumes later is sent it too."""
        players = self._state.request.players
        await self._out.announce(lambda sequence: seat_events.hand_settled(applied, players, sequence))

    async def between_hands(
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
                    await self.deal()
            return
        if which != "leave":
            session = self._state.seats[seat].session
            if session is not None:
                refused = request or table_pb2.PlayRequest()
                why = "between hands: continue or leave"
                self._out.reject(session, refused, table_pb2.REJECTION_CODE_ILLEGAL, why)
            return
        self._state.between = False
        await self.apply(Action(seat, A.LEAVE), origin)
        self._state.ending("a player left between hands")
