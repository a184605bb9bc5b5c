"""The life of a hand at a live table: timers (T11), dealing, the hand's end, settlement, between hands.

A mixin of :class:`services.table.live.LiveTable`, split out to keep each file readable; it runs only
inside that table's task, like the rest of the table.
"""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Event
from duelmahjong.engine.state import CLOSED
from duelmahjong.platform import subjects
from duelmahjong.v1 import events_pb2, table_pb2
from services.table import items, records, results, views


class HandCycle:
    """Methods of :class:`~services.table.live.LiveTable` about one hand's life; they use its state
    (engine, seats, log, journal, host) and its sending helpers, and run in its task only."""

    # --- timers (T11) ---
    def _offer_decisions(self) -> None:
        now, sequence = self.now(), self._last_event_sequence()
        fresh = []
        for seat, state in enumerate(self.seats):
            if self._deciding(seat):
                # A decision is new when the seat had none (it just acted, or the turn came to it); a
                # seat still deciding keeps its clock and its sequence while the other acts (T4 both).
                if state.offer(now, sequence):
                    fresh.append(seat)
            else:
                state.no_decision()
        # Only a seat with a new decision gets a view (with its legal actions): the events already told
        # both seats what changed, and a view per seat per action would double the table's work.
        self._send_views(fresh)

    def _deadline(self, seat: int) -> float | None:
        state = self.seats[seat]
        if self._between:
            if state.continuing:
                return None
            if not state.connected and state.left_at is not None:
                return max(self._between_since + self.settings.decision_seconds, state.left_at + self.grace)
            return self._between_since + self.settings.decision_seconds
        return state.deadline(self.settings.decision_seconds)

    def _next_deadline(self) -> float | None:
        if self.status == table_pb2.TABLE_STATUS_WAITING:
            return self._opened_at + self.host.join_seconds
        times = [t for t in (self._deadline(0), self._deadline(1)) if t is not None]
        times += [s.left_at + self.grace for s in self.seats if s.left_at is not None and not self._between]
        return min(times) if times else None

    async def _on_clock(self) -> None:
        now = self.now()
        if self.status == table_pb2.TABLE_STATUS_WAITING:
            if now >= self._opened_at + self.host.join_seconds:
                self._ending("a seat never joined the table")  # nobody played
            return
        for seat in (0, 1):
            if self.status == table_pb2.TABLE_STATUS_CLOSED or self.engine.phase == CLOSED:
                return
            state = self.seats[seat]
            if not self._between and state.left_at is not None and now >= state.left_at + self.grace:
                await self._apply(Action(seat, A.LEAVE), "timeout")  # T10: gone past the grace = escape
                continue
            deadline = self._deadline(seat)
            if deadline is None or now < deadline:
                continue
            if self.host.metrics is not None:
                self.host.metrics.timeouts.inc()
            if self._between:
                await self._between_hands(seat, "leave", origin="timeout")
            elif not state.connected:
                # T10: a seat away past its decision's deadline goes to 托管; the bot plays this decision
                # and every later one at once until the seat comes back.
                state.bank, state.auto_play = 0.0, True
                await self._announce(
                    lambda sequence, seat=seat: views.seat_connection(seat, False, True, sequence)
                )
                await self._autoplay()
            else:
                default = self.engine.default_action(seat)
                if default is not None:
                    state.bank = 0.0
                    await self._apply(default, "timeout")

    # --- hands ---
    async def _deal(self) -> None:
        number = self.engine.state.hand_number + 1
        self.hand_id = f"{self.table_id}-h{number}"
        seed = self.host.seed(self.table_id, number)  # the hand's only randomness; never leaves the servers
        # T6 乾坤大挪移 is chosen before the deal (first request or ContinueAction) and spent at it.
        grand_shift = frozenset(seat for seat, state in enumerate(self.seats) if state.grand_shift)
        events = self.engine.start_hand(seed, items=self.item_counts, qiankun=grand_shift)
        self.status, self._between = table_pb2.TABLE_STATUS_PLAYING, False
        for state in self.seats:
            state.new_hand(self.settings.time_bank_seconds)
            state.grand_shift = False
        begun = records.hand_begun(
            self.engine,
            events[0],
            table_id=self.table_id,
            hand_id=self.hand_id,
            seed=seed,
            rules=self.request.rules,
            players=self.request.players,
        )
        sent = await self._publish([begun], events)
        await self._spend_items(sent, grand_shift)
        self._offer_decisions()
        await self._autoplay()

    async def _hand_over(self, result: dict[str, object]) -> None:
        self.hands_played += 1
        outcome = str(result["outcome"])
        if self.host.metrics is not None:
            self.host.metrics.hands.labels(outcome=outcome).inc()
        hand_result = results.hand_result(
            result,
            table_id=self.table_id,
            hand_id=self.hand_id,
            room_id=self.request.room_id,
            rules=self.request.rules,
            players=self.request.players,
            last_sequence=self._log.sequence,
        )
        # The room fees travel in the HandResult (rules.fee): the wallet charges them with the hand.
        await self._ports.events.hand_ended(hand_result)
        self.status = table_pb2.TABLE_STATUS_BETWEEN_HANDS
        self._send_views()
        applied = await self._ports.settlements.settlement(self.hand_id, self.host.settlement_wait)
        await self._show_settlement(applied)
        winner = int(str(result["winner"]))
        if winner >= 0:
            guessed = results.guess_resolved(
                result,
                applied,
                table_id=self.table_id,
                hand_id=self.hand_id,
                player_id=self.request.players[winner].player_id,
            )
            if guessed is not None:
                await self._ports.events.publish(subjects.GUESS_RESOLVED, guessed, f"guess:{self.hand_id}")
        if self.engine.phase == CLOSED or self.host.draining:
            self._ending(
                "a player left during the hand"
                if self.engine.phase == CLOSED
                else "the table server is draining"
            )
            return
        self._between, self._between_since = True, self.now()
        for state in self.seats:
            state.continuing = False
        self._send_views()

    async def _spend_items(
        self, sent: list[tuple[int, Event]], grand_shift: frozenset[int] = frozenset()
    ) -> None:
        """T6: each item used goes to the wallet once, after the write-ahead, keyed by the sequence of
        the event that shows it (table/hand/sequence); the seat's count here drops at once."""
        for sequence, seat, name in items.used_items(sent, grand_shift):
            counts = self.item_counts[seat]
            counts[name] = counts.get(name, 0) - 1
            used = items.item_used(
                table_id=self.table_id,
                hand_id=self.hand_id,
                sequence=sequence,
                player_id=self.request.players[seat].player_id,
                name=name,
            )
            await self._ports.events.publish(subjects.ITEM_USED, used, f"item:{self.table_id}:{sequence}")

    async def _charges(self, sent: list[tuple[int, Event]]) -> None:
        """erren T4 paid exchanges go to the wallet as they happen (keyed by their sequence as sent)."""
        await self._spend_items(sent)
        for sequence, event in sent:
            if event.kind != "exchanged" or event.seat < 0:
                continue
            charge = results.exchange_charged(
                event.public or {},
                table_id=self.table_id,
                hand_id=self.hand_id,
                sequence=sequence,
                player_id=self.request.players[event.seat].player_id,
                fee=self.request.rules.exchange_fee,
            )
            if charge is not None:
                await self._ports.events.publish(
                    subjects.EXCHANGE_CHARGED, charge, f"exchange:{self.table_id}:{sequence}"
                )

    async def _show_settlement(self, applied: events_pb2.SettlementApplied | None) -> None:
        """Both seats are shown what the hand moved: the next numbered event, written ahead like the rest,
        so a seat that resumes later is sent it too."""
        players = self.request.players
        await self._announce(lambda sequence: views.hand_settled(applied, players, sequence))

    async def _between_hands(
        self,
        seat: int,
        which: str | None,
        origin: str = "player",
        request: table_pb2.PlayRequest | None = None,
    ) -> None:
        """T7 / T10: between hands each seat continues or leaves; both continuing deals the next hand."""
        if which == "continue_playing":
            if request is not None and request.action.continue_playing.use_grand_shift:
                if self.item_counts[seat].get(items.GRAND_SHIFT, 0) < 1:
                    session = self.seats[seat].session
                    if session is not None:
                        why = (
                            "you have no 乾坤大挪移 left (T6)"
                            if items.items_allowed(self.request.rules)
                            else "items are not played in this room (T6)"
                        )
                        self._reject(session, request, table_pb2.REJECTION_CODE_ILLEGAL, why)
                    return
                self.seats[seat].grand_shift = True
            self.seats[seat].continuing = True
            if all(s.continuing for s in self.seats):
                if self.host.draining:
                    self._ending("the table server is draining")
                else:
                    await self._deal()
            return
        if which != "leave":
            session = self.seats[seat].session
            if session is not None:
                refused = request or table_pb2.PlayRequest()
                why = "between hands: continue or leave"
                self._reject(session, refused, table_pb2.REJECTION_CODE_ILLEGAL, why)
            return
        self._between = False
        await self._apply(Action(seat, A.LEAVE), origin)
        self._ending("a player left between hands")

    def _ending(self, reason: str) -> None:
        self.status, self._close_reason = table_pb2.TABLE_STATUS_CLOSED, reason
