"""The table's state and the fold that is its single source of truth.

``TableState.fold(event)`` is the only code that changes a state. ``Table.apply`` validates an action,
decides which events follow (drawing on the seed where the rules are random) and folds them one by one;
``replay`` folds a stored log the same way, so a live table and a replayed one cannot drift apart.
The fold does no rules reasoning and no randomness: every random outcome is written into an event.

A state is the pairing (hand number, dealer, results, phase) and the hand in play, whose fields and
helpers are :class:`~duelmahjong.engine.hand_state.HandState`'s. The phases, draw sources and discard
flags below are the values those fields take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from duelmahjong.engine.errors import ReplayError
from duelmahjong.engine.events import (
    Claimed,
    Dealt,
    Discarded,
    DoublingChosen,
    DoublingRevealed,
    Drew,
    Escaped,
    Event,
    Exchanged,
    Exhausted,
    Guessed,
    HandEnded,
    HandStarted,
    Konged,
    Offered,
    PairingEnded,
    Passed,
    PlayStarted,
    Swapped,
    TableOpened,
    ThrownAway,
    Won,
)
from duelmahjong.engine.hand_state import HandState
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.settings import RoomSettings

# Phases of a table (docs/engine.md has the diagram).
IDLE = "idle"  # no hand yet, or between hands
DOUBLING = "doubling"  # erren 开始加倍 choices (T8)
EXCHANGE = "exchange"  # 换牌 at start (T4)
TURN = "turn"  # `current` holds 3k+2 tiles and must discard (or win, kong, declare ready…)
CLAIM = "claim"  # `current` may claim the opponent's discard (T2)
ROB_KONG = "rob_kong"  # `current` may rob the opponent's added kong (D13)
EXTRA_DRAW = "extra_draw"  # duel T9: `current` drew from the unused pool after exhaustion
GUESS = "guess"  # duel T12: the winner may guess big or small
OVER = "over"  # the hand has ended; the next one may be dealt
CLOSED = "closed"  # the pairing has ended (a player left between hands, T10)

HAND_PHASES = frozenset({DOUBLING, EXCHANGE, TURN, CLAIM, ROB_KONG, EXTRA_DRAW, GUESS})

# Draw sources
FROM_WALL = "wall"
FROM_KONG = "kong"  # replacement after a kong, from the end of the wall
FROM_FLOWER = "flower"  # 补花 replacement, from the end of the wall
FROM_POOL = "extra"  # duel T9 extra draws, from the unused pool

# Flags of one discard in ``river_marks`` (what a river shows of each tile it ever held).
DISCARD_READY = 1  # discarded with 报听 (T3)
DISCARD_DRAWN = 2  # the tile just drawn, discarded straight away
DISCARD_CLAIMED = 4  # taken by the opponent's chi, pong, kong or win


class TableState(HandState):
    """Everything a table knows: the pairing, and the hand of :class:`HandState`. Mutated only by
    :meth:`fold`."""

    def __init__(self) -> None:
        self.settings = RoomSettings()
        # Read on every step: settings.is_duel, effective_minimum_fan, whether T5 offers are ever made.
        self.duel = True
        self.minimum_fan = self.settings.effective_minimum_fan
        self.offers = False
        self.events_folded = 0
        # Pairing (T1, T7, E17)
        self.hand_number = 0
        self.dealer = -1
        self.dealer_passes = 0  # times the deal has passed to the other seat (E17)
        self.round_wind = 0  # 0 east … 3 north
        self.progressive = 1
        self.results: list[Outcome] = []
        self.phase = IDLE
        super().__init__()

    # --- the fold ----------------------------------------------------------------------------------------
    def fold(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise ReplayError(f"unknown event {event!r}")
        handler(self, event)
        self.events_folded += 1

    def _table_opened(self, event: TableOpened) -> None:
        self.settings = RoomSettings.from_json(dict(event.settings))
        settings = self.settings
        self.duel = settings.is_duel
        self.minimum_fan = settings.effective_minimum_fan
        self.offers = self.duel and settings.triplet_offer_probability + settings.rub_offer_probability > 0

    def _hand_started(self, event: HandStarted) -> None:
        self._reset_hand()
        self.hand_number = event.hand_number
        self.dealer = event.dealer
        self.dealer_passes = event.dealer_passes
        self.round_wind = event.round_wind
        self.progressive = event.progressive
        self.bonus = event.bonus
        self.task = event.task
        self.items = [dict(x) for x in event.items or ({}, {})]
        self.seed = event.seed
        self.wall = list(event.wall)
        self.head, self.tail = 0, len(self.wall)
        self.pool = list(event.pool)
        self.phase = DOUBLING if self.settings.profile == "erren" else EXCHANGE

    def _doubling_chosen(self, event: DoublingChosen) -> None:
        self.doubling[event.seat] = event.double

    def _doubling_revealed(self, event: DoublingRevealed) -> None:
        self.doubling = list(event.choices)
        self.phase = EXCHANGE

    def _dealt(self, event: Dealt) -> None:
        for tile in event.tiles:
            self._move(event.seat, tile, 1)
        self.flowers[event.seat].extend(event.flowers)
        self.head += len(event.tiles) + len(event.flowers)

    def _drew(self, event: Drew) -> None:
        seat, source, tile = event.seat, event.source, event.tile
        if source == FROM_WALL:
            self.head += 1
            self.draws[seat] += 1
        elif source == FROM_POOL:
            self.pool.pop(0)
            self.extra_draws_left -= 1
        else:
            self.tail -= 1
        if tile >= 34:  # a flower: set aside at once, its replacement follows (补花)
            self.flowers[seat].append(tile)
            return
        self._move(seat, tile, 1)
        if self.phase in (DOUBLING, EXCHANGE):  # 补花 during the deal is not a turn's draw
            return
        self.last_draw = tile
        self.draw_source = source
        self.phase = EXTRA_DRAW if source == FROM_POOL else TURN
        self.current = seat
        self.offer = ""

    def _exchanged(self, event: Exchanged) -> None:
        seat = event.seat
        for tile in event.given:
            self._move(seat, tile, -1)
        for tile in event.received:
            self._move(seat, tile, 1)
        self.exchanged[seat] = True
        self.exchange_counts[seat] = len(event.given)
        self._set_unseen(event.wall, event.pool)

    def _set_unseen(self, wall: tuple[int, ...] | None, pool: tuple[int, ...] | None) -> None:
        if wall is not None:
            self.wall = list(wall)
            self.head, self.tail = 0, len(self.wall)
        if pool is not None:
            self.pool = list(pool)

    def _play_started(self, event: PlayStarted) -> None:
        self.phase = TURN
        self.current = self.dealer
        for seat, ready in enumerate(event.tenpai or ()):
            if ready:  # duel T9: ready since the deal
                self.tenpai_since[seat] = self.events_folded

    def _discarded(self, event: Discarded) -> None:
        seat, tile = event.seat, event.tile
        self._move(seat, tile, -1)
        self.rivers[seat].append(tile)
        flags = (DISCARD_READY if event.ready else 0) | (DISCARD_DRAWN if tile == self.last_draw else 0)
        self.river_marks[seat].append([tile, flags])
        self.visible[tile] += 1
        self.discards[seat] += 1
        self.last_discard = tile
        self.last_draw = -1
        self.offer = ""
        other = 1 - seat
        if event.ready:
            self.ready[seat] = True
            self.ready_first_turn[seat] = event.first_turn
            self.ready_mark[seat] = self.discards[other]
        if event.tenpai is not None:
            if not event.tenpai:
                self.tenpai_since[seat] = -1
            elif self.tenpai_since[seat] < 0:
                self.tenpai_since[seat] = self.events_folded
        self.phase = CLAIM
        self.current = other

    def _passed(self, event: Passed) -> None:
        if event.declined_win:
            self.win_doublings[event.seat] += 1

    def _claimed(self, event: Claimed) -> None:
        seat, kind, tile = event.seat, event.meld, event.tile
        discard = self.last_discard
        if kind == "chi":
            for t in (tile, tile + 1, tile + 2):
                if t != discard:
                    self._move(seat, t, -1)
                    self.visible[t] += 1
        else:
            used = 2 if kind == "pong" else 3
            self._move(seat, tile, -used)
            self.visible[tile] += used
        self.melds[seat].append((kind, tile))
        self.meld_claims[seat].append(discard)
        self._melds_changed(seat)
        self.rivers[1 - seat].pop()  # the claimed discard now lies in the meld
        self.river_marks[1 - seat][-1][1] |= DISCARD_CLAIMED
        self.calls += 1
        self.phase = TURN
        self.current = seat
        self.last_draw = -1

    def _konged(self, event: Konged) -> None:
        seat, kind, tile = event.seat, event.meld, event.tile
        if kind == "concealed_kong":
            self._move(seat, tile, -4)
            self.melds[seat].append((kind, tile))
            self.meld_claims[seat].append(-1)
            self._melds_changed(seat)
        else:  # added kong: the pong becomes a kong
            self._move(seat, tile, -1)
            self.visible[tile] += 1
            melds = self.melds[seat]
            melds[melds.index(("pong", tile))] = ("added_kong", tile)
            self._melds_changed(seat)
            self.kong_tile = tile
            self.phase = ROB_KONG
            self.current = 1 - seat
        self.calls += 1
        if seat == self.dealer:
            self.dealer_konged = True
        self.last_draw = -1

    def _offered(self, event: Offered) -> None:
        self.offer = event.offer
        self.offer_tile = -1 if event.tile is None else event.tile
        self.rng_counter += 1

    def _swapped(self, event: Swapped) -> None:
        """Tiles of a hand traded with unseen tiles (T5 offers, T6 items): the unseen ones move."""
        seat = event.seat
        hand = self.hands[seat]
        for tile in event.given:
            self._move(seat, tile, -1)
        for tile in event.received:
            self._move(seat, tile, 1)
        reason = event.reason
        if reason == "rub" or (self.last_draw >= 0 and not hand[self.last_draw]):
            # 搓牌 replaces this draw; a drawn tile given away makes a received one "the drawn tile".
            self.last_draw = event.received[0]
        if reason in ("swap_item", "shuffle_item"):
            self.items[seat][reason] = self.items[seat].get(reason, 0) - 1
        if reason in ("triplet", "shuffle_item"):
            self.rng_counter += 1
        self.offer = ""
        self._set_unseen(event.wall, event.pool)

    def _thrown_away(self, event: ThrownAway) -> None:
        self._move(event.seat, event.tile, -1)
        self.thrown.append(event.tile)
        self.last_draw = -1

    def _exhausted(self, event: Exhausted) -> None:
        self.last_draw = -1
        if event.extra_seat is not None and event.extra_seat >= 0:
            self.extra_draws_left = event.extra_draws or 0
            self.current = event.extra_seat
            self.phase = EXTRA_DRAW

    def _won(self, event: Won) -> None:
        if self.phase == CLAIM and self.river_marks[1 - event.seat]:  # won on the opponent's discard
            self.river_marks[1 - event.seat][-1][1] |= DISCARD_CLAIMED
        self.winner = event.seat
        self.win = event
        self.current = event.seat
        self.phase = GUESS

    def _guessed(self, event: Guessed) -> None:
        self.rng_counter += 1

    def _escaped(self, event: Escaped) -> None:
        self.current = -1

    def _hand_ended(self, event: HandEnded) -> None:
        self.results.append(event.outcome)
        self.phase = OVER
        self.current = -1

    def _pairing_ended(self, event: PairingEnded) -> None:
        self.phase = CLOSED
        self.current = -1


E = TypeVar("E", bound=Event)
_HANDLERS: dict[type[Event], Callable[[TableState, Any], None]] = {}


def _on(kind: type[E], handler: Callable[[TableState, E], None]) -> None:
    _HANDLERS[kind] = handler


_on(TableOpened, TableState._table_opened)
_on(HandStarted, TableState._hand_started)
_on(DoublingChosen, TableState._doubling_chosen)
_on(DoublingRevealed, TableState._doubling_revealed)
_on(Dealt, TableState._dealt)
_on(Drew, TableState._drew)
_on(Exchanged, TableState._exchanged)
_on(PlayStarted, TableState._play_started)
_on(Discarded, TableState._discarded)
_on(Passed, TableState._passed)
_on(Claimed, TableState._claimed)
_on(Konged, TableState._konged)
_on(Offered, TableState._offered)
_on(Swapped, TableState._swapped)
_on(ThrownAway, TableState._thrown_away)
_on(Exhausted, TableState._exhausted)
_on(Won, TableState._won)
_on(Guessed, TableState._guessed)
_on(Escaped, TableState._escaped)
_on(HandEnded, TableState._hand_ended)
_on(PairingEnded, TableState._pairing_ended)
