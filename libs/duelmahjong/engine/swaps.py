"""Trading tiles of a hand with unseen tiles: T5 offers (triplet, 搓牌) and T6 items (偷天换日, 移花接木).

"Unseen" tiles are those neither discarded nor in a hand: the live wall and, in duel, the unused pool
(the revealed bonus tiles are face up, so not unseen). Each received tile is taken from its place —
the pool first, so the wall's order changes as little as possible — and a given tile takes that place.
"""

from __future__ import annotations

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.events import Swapped
from duelmahjong.engine.sink import Sink
from duelmahjong.engine.state import TableState
from duelmahjong.engine.wall import derived_random

_REASONS = {A.TAKE_TRIPLET: "triplet", A.RUB: "rub", A.SWAP_ITEM: "swap_item", A.SHUFFLE_ITEM: "shuffle_item"}


def unseen_triplet_kinds(state: TableState) -> list[int]:
    """Kinds with at least three unseen copies (a triplet the table could hand out)."""
    counts = [0] * 34
    for tile in state.wall[state.head : state.tail]:
        if tile < 34:
            counts[tile] += 1
    for tile in state.pool:
        counts[tile] += 1
    return [kind for kind in range(34) if counts[kind] >= 3]


def give_for_unseen(table: Sink, action: Action) -> None:
    state = table.state
    kind = action.kind
    given: tuple[int, ...]
    received: tuple[int, ...]
    if kind == A.TAKE_TRIPLET:
        given, received = action.tiles, (state.offer_tile,) * 3
    elif kind == A.RUB:
        given, received = (state.last_draw,), (action.tile,)
    elif kind == A.SWAP_ITEM:
        given, received = (action.tile,), (action.target,)
    else:  # 移花接木: a random triplet of unseen tiles
        rng = derived_random(state.seed, state.rng_counter)
        triplet = rng.choice(unseen_triplet_kinds(state))
        given, received = action.tiles, (triplet,) * 3
    wall = state.wall[state.head : state.tail]
    pool = list(state.pool)
    for take, put in zip(received, given, strict=True):
        if take in pool:
            pool[pool.index(take)] = put
        else:
            wall[len(wall) - 1 - wall[::-1].index(take)] = put
    table.emit(
        Swapped(
            seat=action.seat,
            reason=_REASONS[kind],
            given=tuple(given),
            received=tuple(received),
            wall=tuple(wall),
            pool=tuple(pool),
        )
    )
