"""What an agent may read: the table state as its seat sees it.

:func:`seat_state` copies the live state with every field the seat may not know (docs/engine.md's
view: the opponent's concealed tiles, the wall order, the unused pool, the seed, the opponent's items,
an undisclosed 开始加倍, the tile of an opponent's concealed kong) replaced by blanks of the same
size, so code that only counts them (wall remaining, hand sizes) still reads true values. Agents in
the evaluation get this copy, never the live state: what they cannot see they cannot use.
"""

from __future__ import annotations

import copy
from typing import TypeVar

from duelmahjong.engine.result import meld_tiles
from duelmahjong.engine.state import DOUBLING, OVER, TableState

T = TypeVar("T")
HIDDEN = 0  # what a blanked wall or pool slot holds: a real kind, so nothing indexes out of range


def seat_state(state: TableState, seat: int) -> TableState:
    """A shallow copy of ``state`` holding only what ``seat`` may know (own lists are shared, not
    copied: agents restore what they change while thinking, as the engine's bot does)."""
    other = 1 - seat
    out = copy.copy(state)
    out.seed = 0
    out.wall = [HIDDEN] * len(state.wall)
    out.pool = [HIDDEN] * len(state.pool)
    out.hands = _pair(seat, state.hands[seat], [0] * 34)
    out.keys = _pair(seat, state.keys[seat], [0, 0, 0, 0])
    out.items = _pair(seat, state.items[seat], {})
    # Whether the opponent waits without having declared 报听 is theirs to know (T9 reads it at the end).
    out.tenpai_since = _pair(seat, state.tenpai_since[seat], -1)
    if state.phase == DOUBLING:
        out.doubling = _pair(seat, state.doubling[seat], None)
    if state.phase != OVER and any(kind == "concealed_kong" for kind, _ in state.melds[other]):
        # The opponent's concealed kongs show as kongs without their tile: none of their tiles is known.
        shown = [(kind, tile) for kind, tile in state.melds[other] if kind != "concealed_kong"]
        hidden = len(state.melds[other]) - len(shown)
        out.melds = _pair(seat, state.melds[seat], shown + [("concealed_kong", -1)] * hidden)
        melded = [t for kind, tile in shown for t in meld_tiles(kind, tile)]
        out._melded = _pair(seat, state.melded_tiles(seat), melded)
    if state.current != seat:
        out.last_draw = -1  # the opponent's draw is a count, not a tile
        out.offer, out.offer_tile = "", -1
    return out


def _pair(seat: int, own: T, blank: T) -> list[T]:
    return [own, blank] if seat == 0 else [blank, own]
