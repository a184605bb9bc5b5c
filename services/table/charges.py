"""What a hand costs its players as it is played, told to the wallet as it happens: the items used
(T6) and erren's paid exchanges (T4).

Each goes out after the write-ahead of the step that shows it, keyed by that event's sequence, so the
wallet takes it once however often it is delivered. :class:`Charges` runs in the live table's task
only; the deal (:mod:`services.table.dealing`) and each step of the hand
(:mod:`services.table.steps`) hand it what they showed.
"""

from __future__ import annotations

from duelmahjong.engine.events import Event, Exchanged
from duelmahjong.platform import subjects
from duelmahjong.views import items
from services.table import results
from services.table.live_state import LiveState
from services.table.ports import TableEvents


class Charges:
    """The wallet's side of a hand in play: what each shown step spent."""

    def __init__(self, state: LiveState, events: TableEvents) -> None:
        self._state = state
        self._events = events

    async def spend_items(
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

    async def charge_step(self, sent: list[tuple[int, Event]]) -> None:
        """erren T4 paid exchanges go to the wallet as they happen (keyed by their sequence as sent)."""
        await self.spend_items(sent)
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
