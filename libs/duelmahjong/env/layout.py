"""The fixed action space: every action kind of both profiles as indices 0 … ACTION_COUNT-1.

Blocks of 34 hold one index per tile kind; the rest are single indices. A choice of several tiles
(换牌's tiles, a taken triplet's or 移花接木's three tiles, 偷天换日's tile and target) is a short sequence
of indices: a begin index (none for 换牌, whose phase begins it), a SELECT per tile, then CONFIRM (a
swap ends with its TARGET instead). ``selection.py`` keeps the sequence; docs/env.md has the table.

>>> DISCARD + 5, CONFIRM, ACTION_COUNT
(5, 282, 288)
>>> from duelmahjong.engine.actions import Action
>>> index_of(Action.parse("0 exchange [1m,9m]")), index_of(Action.parse("1 swap_item 3p >7z"))
([204, 212, 282], [281, 215, 271])
"""

from __future__ import annotations

from typing import Final

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.rules.tiles import tile_name

TILE_KINDS: Final = 34
# Blocks of 34, one index per tile kind.
DISCARD: Final = 0
READY: Final = 34  # 报听 with this discard
CONCEALED_KONG: Final = 68
ADDED_KONG: Final = 102
CHI: Final = 136  # the chow's lowest tile
RUB: Final = 170  # T5 搓牌: the unseen kind taken as this draw
SELECT: Final = 204  # a tile given back (exchange, triplet, shuffle) or the tile a swap changes
SWAP_TARGET: Final = 238  # the kind a swap turns its tile into; completes the swap
# Single indices.
SELF_DRAW_WIN: Final = 272
WIN: Final = 273
KONG: Final = 274
PONG: Final = 275
PASS: Final = 276
DOUBLE: Final = 277
NO_DOUBLE: Final = 278
BEGIN_TRIPLET: Final = 279  # T5: take the offered triplet, then SELECT three tiles, CONFIRM
BEGIN_SHUFFLE: Final = 280  # T6 移花接木: SELECT three tiles, CONFIRM
BEGIN_SWAP: Final = 281  # T6 偷天换日: SELECT the tile, then SWAP_TARGET
CONFIRM: Final = 282  # give back the selected tiles (换牌 with none selected keeps the hand)
GUESS_BIG: Final = 283
GUESS_SMALL: Final = 284
COLLECT: Final = 285
LEAVE: Final = 286
NOOP: Final = 287  # a seat without a decision (the parallel form)
ACTION_COUNT: Final = 288

# Kinds with one index per tile kind, and kinds with one index (their tile, if any, is implied by the
# state: a win's or claim's tile is the discard, a self-draw's the drawn tile).
TILE_BLOCKS: Final = {
    A.DISCARD: DISCARD,
    A.DECLARE_READY: READY,
    A.CONCEALED_KONG: CONCEALED_KONG,
    A.ADDED_KONG: ADDED_KONG,
    A.CHI: CHI,
    A.RUB: RUB,
}
SINGLES: Final = {
    A.SELF_DRAW_WIN: SELF_DRAW_WIN,
    A.WIN: WIN,
    A.KONG: KONG,
    A.PONG: PONG,
    A.PASS: PASS,
    A.CHOOSE_DOUBLING: DOUBLE,
    A.DECLINE_DOUBLING: NO_DOUBLE,
    A.GUESS_BIG: GUESS_BIG,
    A.GUESS_SMALL: GUESS_SMALL,
    A.COLLECT: COLLECT,
    A.LEAVE: LEAVE,
}
# The begin index of each combinatorial kind (换牌 has none: its phase begins it).
BEGINS: Final = {A.TAKE_TRIPLET: BEGIN_TRIPLET, A.SHUFFLE_ITEM: BEGIN_SHUFFLE, A.SWAP_ITEM: BEGIN_SWAP}
KIND_OF_BEGIN: Final = {index: kind for kind, index in BEGINS.items()}
KIND_OF_SINGLE: Final = {index: kind for kind, index in SINGLES.items()}
KIND_OF_BLOCK: Final = {base: kind for kind, base in TILE_BLOCKS.items()}


def first_index(action: Action) -> int:
    """The index an action's sequence starts with (the mask's index for a listed legal action)."""
    kind = action.kind
    base = TILE_BLOCKS.get(kind)
    if base is not None:
        return base + action.tile
    single = SINGLES.get(kind)
    if single is not None:
        return single
    if kind == A.EXCHANGE:
        return SELECT + action.tiles[0] if action.tiles else CONFIRM
    return BEGINS[kind]


def index_of(action: Action) -> list[int]:
    """The index sequence that plays ``action`` (one index unless it chooses several tiles)."""
    kind = action.kind
    if kind == A.SWAP_ITEM:
        return [BEGIN_SWAP, SELECT + action.tile, SWAP_TARGET + action.target]
    if kind in (A.EXCHANGE, A.TAKE_TRIPLET, A.SHUFFLE_ITEM):
        begin = [] if kind == A.EXCHANGE else [BEGINS[kind]]
        return [*begin, *(SELECT + tile for tile in action.tiles), CONFIRM]
    return [first_index(action)]


def describe(index: int) -> str:
    """A readable name of an index (``discard 5m``, ``select 1z``, ``pass``)."""
    if not 0 <= index < ACTION_COUNT:
        return f"out of range ({index})"
    if index < SELF_DRAW_WIN:
        base = index - index % TILE_KINDS
        word = {SELECT: "select", SWAP_TARGET: "swap_target"}.get(base) or KIND_OF_BLOCK[base]
        return f"{word} {tile_name(index - base)}"
    names = {**KIND_OF_SINGLE, **{i: f"begin_{k}" for i, k in KIND_OF_BEGIN.items()}}
    return names.get(index) or {CONFIRM: "confirm", NOOP: "noop"}[index]
