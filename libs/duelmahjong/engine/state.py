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
from typing import Any

from duelmahjong.engine.errors import ReplayError
from duelmahjong.engine.events import Event
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
        handler = _HANDLERS.get(event.kind)
        if handler is None:
            raise ReplayError(f"unknown event kind {event.kind!r}")
        handler(self, event)
        self.events_folded += 1

    def _table_opened(self, event: Event) -> None:
        self.settings = RoomSettings.from_json(dict((event.public or {})["settings"]))
        settings = self.settings
        self.duel = settings.is_duel
        self.minimum_fan = settings.effective_minimum_fan
        self.offers = self.duel and settings.triplet_offer_probability + settings.rub_offer_probability > 0

    def _hand_started(self, event: Event) -> None:
        public, server = event.public or {}, event.server or {}
        self._reset_hand()
        self.hand_number = public["hand_number"]
        self.dealer = public["dealer"]
        self.dealer_passes = public["dealer_passes"]
        self.round_wind = public["round_wind"]
        self.progressive = public["progressive"]
        self.bonus = tuple(public.get("bonus", ()))
        self.task = public.get("task")
        self.items = [dict(x) for x in server.get("items", ({}, {}))]
        self.seed = server["seed"]
        self.wall = list(server["wall"])
        self.head, self.tail = 0, len(self.wall)
        self.pool = list(server.get("pool", ()))
        self.phase = DOUBLING if self.settings.profile == "erren" else EXCHANGE

    def _doubling_chosen(self, event: Event) -> None:
        self.doubling[event.seat] = bool((event.private or {})["double"])

    def _doubling_revealed(self, event: Event) -> None:
        self.doubling = list((event.public or {})["choices"])
        self.phase = EXCHANGE

    def _dealt(self, event: Event) -> None:
        tiles = (event.private or {})["tiles"]
        flowers = (event.public or {}).get("flowers", ())
        for tile in tiles:
            self._move(event.seat, tile, 1)
        self.flowers[event.seat].extend(flowers)
        self.head += len(tiles) + len(flowers)

    def _drew(self, event: Event) -> None:
        seat = event.seat
        public = event.public or {}
        source = public["source"]
        tile = public["tile"] if "tile" in public else (event.private or {})["tile"]
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

    def _exchanged(self, event: Event) -> None:
        seat = event.seat
        private, server = event.private or {}, event.server or {}
        for tile in private.get("given", ()):
            self._move(seat, tile, -1)
        for tile in private.get("received", ()):
            self._move(seat, tile, 1)
        self.exchanged[seat] = True
        self.exchange_counts[seat] = len(private.get("given", ()))
        self._set_unseen(server)

    def _set_unseen(self, server: dict[str, Any]) -> None:
        if "wall" in server:
            self.wall = list(server["wall"])
            self.head, self.tail = 0, len(self.wall)
        if "pool" in server:
            self.pool = list(server["pool"])

    def _play_started(self, event: Event) -> None:
        self.phase = TURN
        self.current = self.dealer
        for seat, ready in enumerate((event.server or {}).get("tenpai", ())):
            if ready:  # duel T9: ready since the deal
                self.tenpai_since[seat] = self.events_folded

    def _discarded(self, event: Event) -> None:
        seat, public = event.seat, event.public or {}
        tile = public["tile"]
        self._move(seat, tile, -1)
        self.rivers[seat].append(tile)
        flags = (DISCARD_READY if public.get("ready") else 0) | (
            DISCARD_DRAWN if tile == self.last_draw else 0
        )
        self.river_marks[seat].append([tile, flags])
        self.visible[tile] += 1
        self.discards[seat] += 1
        self.last_discard = tile
        self.last_draw = -1
        self.offer = ""
        other = 1 - seat
        if public.get("ready"):
            self.ready[seat] = True
            self.ready_first_turn[seat] = bool(public.get("first_turn"))
            self.ready_mark[seat] = self.discards[other]
        server = event.server or {}
        if "tenpai" in server:
            if not server["tenpai"]:
                self.tenpai_since[seat] = -1
            elif self.tenpai_since[seat] < 0:
                self.tenpai_since[seat] = self.events_folded
        self.phase = CLAIM
        self.current = other

    def _passed(self, event: Event) -> None:
        if (event.public or {}).get("declined_win"):
            self.win_doublings[event.seat] += 1

    def _claimed(self, event: Event) -> None:
        seat, public = event.seat, event.public or {}
        kind, tile = public["meld"], public["tile"]
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

    def _konged(self, event: Event) -> None:
        seat, public = event.seat, event.public or {}
        kind = public["meld"]
        tile = public["tile"] if "tile" in public else (event.private or {})["tile"]
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

    def _offered(self, event: Event) -> None:
        public, private = event.public or {}, event.private or {}
        self.offer = public["offer"]
        self.offer_tile = private.get("tile", -1)
        self.rng_counter += 1

    def _swapped(self, event: Event) -> None:
        """Tiles of a hand traded with unseen tiles (T5 offers, T6 items): the unseen ones move."""
        seat, public, private = event.seat, event.public or {}, event.private or {}
        hand = self.hands[seat]
        for tile in private["given"]:
            self._move(seat, tile, -1)
        for tile in private["received"]:
            self._move(seat, tile, 1)
        reason = public["reason"]
        if reason == "rub" or (self.last_draw >= 0 and not hand[self.last_draw]):
            # 搓牌 replaces this draw; a drawn tile given away makes a received one "the drawn tile".
            self.last_draw = private["received"][0]
        if reason in ("swap_item", "shuffle_item"):
            self.items[seat][reason] = self.items[seat].get(reason, 0) - 1
        if reason in ("triplet", "shuffle_item"):
            self.rng_counter += 1
        self.offer = ""
        self._set_unseen(event.server or {})

    def _thrown_away(self, event: Event) -> None:
        tile = (event.public or {})["tile"]
        self._move(event.seat, tile, -1)
        self.thrown.append(tile)
        self.last_draw = -1

    def _exhausted(self, event: Event) -> None:
        public = event.public or {}
        extra = public.get("extra_seat", -1)
        self.last_draw = -1
        if extra >= 0:
            self.extra_draws_left = public["extra_draws"]
            self.current = extra
            self.phase = EXTRA_DRAW

    def _won(self, event: Event) -> None:
        if self.phase == CLAIM and self.river_marks[1 - event.seat]:  # won on the opponent's discard
            self.river_marks[1 - event.seat][-1][1] |= DISCARD_CLAIMED
        self.winner = event.seat
        self.win = dict(event.public or {})
        self.current = event.seat
        self.phase = GUESS

    def _guessed(self, event: Event) -> None:
        self.rng_counter += 1

    def _escaped(self, event: Event) -> None:
        self.current = -1

    def _hand_ended(self, event: Event) -> None:
        self.results.append(event.outcome)
        self.phase = OVER
        self.current = -1

    def _pairing_ended(self, event: Event) -> None:
        self.phase = CLOSED
        self.current = -1


_HANDLERS: dict[str, Callable[[TableState, Event], None]] = {
    "table_opened": TableState._table_opened,
    "hand_started": TableState._hand_started,
    "doubling_chosen": TableState._doubling_chosen,
    "doubling_revealed": TableState._doubling_revealed,
    "dealt": TableState._dealt,
    "drew": TableState._drew,
    "exchanged": TableState._exchanged,
    "play_started": TableState._play_started,
    "discarded": TableState._discarded,
    "passed": TableState._passed,
    "claimed": TableState._claimed,
    "konged": TableState._konged,
    "offered": TableState._offered,
    "swapped": TableState._swapped,
    "thrown_away": TableState._thrown_away,
    "exhausted": TableState._exhausted,
    "won": TableState._won,
    "guessed": TableState._guessed,
    "escaped": TableState._escaped,
    "hand_ended": TableState._hand_ended,
    "pairing_ended": TableState._pairing_ended,
}
