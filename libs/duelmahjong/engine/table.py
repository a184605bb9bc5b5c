"""The table: push actions, get events; the state is the fold of those events.

>>> table = Table(RoomSettings(profile="duel"))
>>> events = table.start_hand(seed=7)
>>> table.state.phase, sum(table.state.hands[table.state.dealer])
('exchange', 14)
>>> for seat in (0, 1):
...     _ = table.apply(Action(seat, "exchange"))
>>> table.state.phase, table.to_move == table.state.dealer
('turn', True)
>>> table.legal_actions(1 - table.state.dealer)  # the non-dealer may only leave (escape, T10)
[Action.parse('0 leave')]
>>> Table.replay(table.events).state.hands == table.state.hands
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from duelmahjong.engine import actions as A
from duelmahjong.engine import dealing, flow
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError, ReplayError
from duelmahjong.engine.events import Event, TableOpened
from duelmahjong.engine.legal import combinatorial_reason, legal_actions
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.state import CLOSED, EXCHANGE, HAND_PHASES, IDLE, OVER, TableState
from duelmahjong.engine.view import seat_view
from duelmahjong.engine.wall import HandTiles

TILE_KINDS = 42  # 34 kinds and 8 flowers
# Actions whose tile choices are combinatorial: checked by a predicate, not by membership (legal.py).
_PREDICATE_CHECKED = frozenset({A.EXCHANGE, A.TAKE_TRIPLET, A.SHUFFLE_ITEM, A.SWAP_ITEM})


def _malformed(action: Action) -> str | None:
    """Why an action cannot be read at all (an unknown kind, a tile kind out of range), or None."""
    if action.kind not in A.KIND_SET:
        return f"unknown action {action.kind!r}; actions are {', '.join(A.KINDS)}"
    single = (action.tile, action.target)
    if any(type(t) is not int or not A.NO_TILE <= t < TILE_KINDS for t in single) or any(
        type(t) is not int or not 0 <= t < TILE_KINDS for t in action.tiles
    ):
        return (
            f"an action names tile kinds 0–{TILE_KINDS - 1}, got tile {action.tile}, target "
            f"{action.target}, tiles {list(action.tiles)}"
        )
    return None


class Table:
    """One two-player table: a pairing of hands under one room's settings."""

    def __init__(self, settings: RoomSettings | None = None) -> None:
        self.state = TableState()
        self.events: list[Event] = []
        self._legal_cache: list[list[Action] | None] = [None, None]  # per seat, for state ``_legal_at``
        self._legal_at = -1
        if settings is not None:
            self.emit(TableOpened(settings=settings.to_json()))

    # --- reading -----------------------------------------------------------------------------------------
    @property
    def settings(self) -> RoomSettings:
        return self.state.settings

    @property
    def phase(self) -> str:
        return self.state.phase

    @property
    def to_move(self) -> int:
        """The seat whose decision the table waits for (-1 before the deal, between hands, or when both
        seats decide at once: 开始加倍 and 换牌)."""
        state = self.state
        return state.current if state.phase in HAND_PHASES and state.phase != EXCHANGE else -1

    def legal_actions(self, seat: int) -> list[Action]:
        """Every legal action of ``seat``, cached per state. Leaving (T10) is always among them in a hand."""
        state = self.state
        if self._legal_at != state.events_folded:
            self._legal_cache = [None, None]
            self._legal_at = state.events_folded
        if seat != 0 and seat != 1:
            return []
        cached = self._legal_cache[seat]
        if cached is None:
            cached = self._legal_cache[seat] = legal_actions(state, seat)
        return cached

    def view(self, seat: int) -> dict[str, Any]:
        """What ``seat`` may know: never the opponent's concealed tiles, the wall, the pool or the seed."""
        return seat_view(self.state, seat, self.legal_actions(seat))

    @property
    def outcome(self) -> Outcome | None:
        """The result of the hand just finished (None while a hand is in play or before the first)."""
        if self.state.phase in (OVER, CLOSED) and self.state.results:
            return self.state.results[-1]
        return None

    def default_action(self, seat: int) -> Action | None:
        """T11: what the server plays when ``seat`` times out: keep the hand at exchange, decline doubling,
        discard the drawn tile (or the last tile), pass on claims, decline offers, collect at 猜大小."""
        legal = [a for a in self.legal_actions(seat) if a.kind != A.LEAVE]
        if not legal:
            return None
        kinds = {a.kind: a for a in legal}
        for kind in (A.EXCHANGE, A.DECLINE_DOUBLING, A.PASS, A.COLLECT):
            if kind in kinds:
                return Action(seat, kind) if kind == A.EXCHANGE else kinds[kind]
        drawn = self.state.last_draw
        discards = [a for a in legal if a.kind == A.DISCARD]
        for action in discards:
            if action.tile == drawn:
                return action
        return discards[-1] if discards else legal[0]

    # --- changing ------------------------------------------------------------------------------------------
    def start_hand(
        self,
        seed: int,
        *,
        salt: bytes = b"",
        items: Sequence[Mapping[str, int]] | None = None,
        qiankun: Iterable[int] = (),
        stacked: HandTiles | None = None,
    ) -> list[Event]:
        """Deal the next hand of the pairing from ``seed`` (the service draws it from the OS).

        With a ``salt`` (drawn with the seed), ``hand_started`` shows both seats the commitment to the
        seed (:func:`duelmahjong.engine.fairness.commitment`) and keeps the salt in its server part.

        ``items`` are each seat's item counts from the wallet (T6); ``qiankun`` the seats using
        乾坤大挪移 for this hand. ``stacked`` replaces the shuffled tiles with given ones (scripted tests
        and fixed-deal tournaments); later randomness still comes from the seed.
        """
        if self.state.phase not in (IDLE, OVER):
            raise IllegalActionError(
                f"cannot deal a new hand while the table is in phase {self.state.phase!r}"
            )
        if not self.events:
            raise IllegalActionError("the table has not been opened: create it with its room settings")
        counts = items or ({}, {})
        dealing.check_qiankun(self.settings, counts, frozenset(qiankun))
        start = len(self.events)
        dealing.start_hand(self, seed, salt, counts, frozenset(qiankun), stacked)
        return self.events[start:]

    def apply(self, action: Action) -> list[Event]:
        """Validate ``action``, then produce and fold its events. Illegal actions change nothing."""
        self.check(action)
        start = len(self.events)
        flow.perform(self, action)
        return self.events[start:]

    def check(self, action: Action) -> None:
        """Raise :class:`IllegalActionError` with a reason unless ``action`` is legal now."""
        if action.seat not in (0, 1):
            raise IllegalActionError(f"there is no seat {action.seat}; seats are 0 and 1")
        predicate = action.kind in _PREDICATE_CHECKED
        if not predicate:
            legal = self.legal_actions(action.seat)
            for candidate in legal:  # identity first: clients usually send back a listed (interned) action
                if candidate is action:
                    return
        reason = _malformed(action)
        if reason:
            raise IllegalActionError(reason)
        if predicate:
            reason = combinatorial_reason(self.state, action)
            if reason:
                raise IllegalActionError(reason)
            return
        if action in legal:
            return
        raise IllegalActionError(self._why_illegal(action))

    def _why_illegal(self, action: Action) -> str:
        state = self.state
        if state.phase in (IDLE, CLOSED):
            return f"no hand is in play (phase {state.phase!r})"
        own = self.legal_actions(action.seat)
        if not [a for a in own if a.kind != A.LEAVE]:
            return f"it is not seat {action.seat}'s decision now (phase {state.phase!r})"
        if not any(a.kind == action.kind for a in own):
            kinds = sorted({a.kind for a in own})
            return f"{action.kind!r} is not possible now; seat {action.seat} may: {', '.join(kinds)}"
        return f"{action} is not legal now (wrong tile or tiles for {action.kind!r})"

    def emit(self, event: Event) -> None:
        """Fold one event into the state and append it to the log (the :class:`~duelmahjong.engine.sink.Sink`
        the flow writes to)."""
        self.state.fold(event)
        self.events.append(event)

    # --- replay --------------------------------------------------------------------------------------------
    @classmethod
    def replay(cls, events: Iterable[Event | dict[str, Any]]) -> Table:
        """Rebuild a table from its log (events or their JSON); the first event opens the table."""
        table = cls()
        for position, raw in enumerate(events):
            event = raw if isinstance(raw, Event) else Event.from_json(raw)
            if position == 0 and not isinstance(event, TableOpened):
                raise ReplayError(f"a table log starts with table_opened, not {event.kind!r}")
            table.emit(event)
        if not table.events:
            raise ReplayError("an empty log is not a table")
        return table
