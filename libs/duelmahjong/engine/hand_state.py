"""What one hand holds, reset at every ``hand_started``: the seats' tiles, melds and rivers, the wall.

Hand state is kept as per-seat count vectors (34 kinds) updated incrementally, with the rules library's
four suit keys and the number of concealed tiles kept in step (every legal-action question starts from
them), plus the live wall as a list with a head (next draw) and a tail (kong and flower replacements
come from the end, T2). :class:`~duelmahjong.engine.state.TableState` adds the pairing and the fold,
the only code that changes these fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from duelmahjong.rules.keys import HONOR_PLACE, SUIT_PLACE
from duelmahjong.rules.tiles import GREEN_TILES

if TYPE_CHECKING:
    from duelmahjong.engine.events import Won

# Where a tile kind sits in the rules library's suit keys (duelmahjong.rules.keys): its suit (m p s z)
# and what one copy adds to that suit's key.
SUIT_OF = tuple(kind // 9 if kind < 27 else 3 for kind in range(34))
PLACE_OF = tuple(SUIT_PLACE[kind % 9] if kind < 27 else HONOR_PLACE[kind - 27] for kind in range(34))


class HandState:
    """The fields of the hand in play and the questions asked of them (a base of ``TableState``)."""

    def __init__(self) -> None:
        self._reset_hand()

    def _reset_hand(self) -> None:
        self.seed = 0
        self.wall: list[int] = []
        self.head = 0
        self.tail = 0
        self.pool: list[int] = []
        self.bonus: tuple[int, ...] = ()
        self.hands: list[list[int]] = [[0] * 34, [0] * 34]
        # In step with ``hands`` (only ``_move`` changes either): suit keys (m, p, s, z) and tile counts.
        self.keys: list[list[int]] = [[0, 0, 0, 0], [0, 0, 0, 0]]
        self.sizes = [0, 0]
        self.flowers: list[list[int]] = [[], []]
        self.melds: list[list[tuple[str, int]]] = [[], []]  # (meld kind, tile: lowest tile of a chow)
        self._melded: list[list[int]] = [[], []]
        self.green_melds = [0, 0]
        self.rivers: list[list[int]] = [[], []]
        # Every discard of the hand in order, claimed ones too: [tile, DISCARD_* flags] (views show it).
        self.river_marks: list[list[list[int]]] = [[], []]
        # Per meld of ``melds``: the discard it took (chi, pong, exposed kong; an added kong keeps its
        # pong's), -1 for a concealed kong.
        self.meld_claims: list[list[int]] = [[], []]
        self.thrown: list[int] = []  # duel T9 extra draws thrown away
        self.visible = [0] * 34  # discards + exposed meld tiles (和绝张, E13)
        self.current = -1
        self.last_draw = -1  # the tile drawn this turn, -1 if the turn did not start with a draw
        self.draw_source = ""
        self.last_discard = -1
        self.draws = [0, 0]  # wall draws per seat (first-draw wins and 天听, D10/T3)
        self.discards = [0, 0]
        self.calls = 0  # claims and kongs so far (they spoil first-turn wins)
        self.dealer_konged = False
        self.ready = [False, False]  # 报听 declared (T3)
        self.ready_first_turn = [False, False]  # 天听
        # The opponent's discards when 报听 was declared: 一发 is a win on the opponent's next discard (E8,
        # seed 000 "对家打出的第一张牌"; a claim or kong before that discard does not cancel it).
        self.ready_mark = [-1, -1]
        self.tenpai_since = [-1, -1]  # event index since which the hand waits (T9 "ready first")
        self.doubling: list[bool | None] = [None, None]  # 开始加倍 (T8)
        self.win_doublings = [0, 0]  # 胡加倍 k (T8)
        self.task: dict[str, Any] | None = None
        self.exchanged = [False, False]
        self.exchange_counts = [0, 0]
        self.items: list[dict[str, int]] = [{}, {}]
        self.offer = ""  # pending T5 offer: "", "triplet" or "rub"
        self.offer_tile = -1  # the offered triplet's kind
        self.kong_tile = -1  # the added kong that may be robbed
        self.extra_draws_left = 0
        self.winner = -1
        self.win: Won | None = None
        self.rng_counter = 0

    # --- helpers used by the engine and views --------------------------------------------------------
    @property
    def wall_remaining(self) -> int:
        return self.tail - self.head

    def live_wall(self) -> list[int]:
        return self.wall[self.head : self.tail]

    def hand_size(self, seat: int) -> int:
        return self.sizes[seat]

    def _move(self, seat: int, tile: int, copies: int) -> None:
        """Add ``copies`` (negative: remove) of ``tile`` to ``seat``'s concealed hand."""
        self.hands[seat][tile] += copies
        self.keys[seat][SUIT_OF[tile]] += PLACE_OF[tile] * copies
        self.sizes[seat] += copies

    def melded_tiles(self, seat: int) -> list[int]:
        """The tiles in ``seat``'s declared melds (kongs 4), kept up to date by the fold; do not mutate."""
        return self._melded[seat]

    def _melds_changed(self, seat: int) -> None:
        tiles: list[int] = []
        for kind, tile in self.melds[seat]:
            if kind == "chi":
                tiles.extend((tile, tile + 1, tile + 2))
            else:
                tiles.extend([tile] * (3 if kind == "pong" else 4))
        self._melded[seat] = tiles
        # The rules library's ``green_melds``: the melded tiles if all are 绿一色 tiles (D12), else -1.
        self.green_melds[seat] = len(tiles) if all(tile in GREEN_TILES for tile in tiles) else -1

    def first_discard_since_ready(self, seat: int) -> bool:
        """Whether the opponent's last discard is its first since ``seat`` declared (E8)."""
        return self.ready[seat] and self.discards[1 - seat] == self.ready_mark[seat] + 1

    def is_concealed(self, seat: int) -> bool:
        return all(kind == "concealed_kong" for kind, _ in self.melds[seat])
