"""One seat's decisions in the fixed action space: the legal mask, and indices turned into engine actions.

Most indices are an action at once. A choice of several tiles is built across steps in a seat's
:class:`Choice` (begun by a begin index, or by the 换牌 phase itself), and the mask offers exactly the
tiles that may still be selected and CONFIRM only when the selection is a legal action: the engine's
own ``combinatorial_reason`` is the judge for 换牌, whose limits (T4 count, duel's pool) are the
subtle ones. The confirmed action goes through ``Table.apply``'s checks like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.legal import combinatorial_reason, unseen_kinds
from duelmahjong.engine.state import EXCHANGE
from duelmahjong.engine.table import Table
from duelmahjong.env import layout as L

Mask = npt.NDArray[np.int8]


class Choice:
    """A seat's choice of several tiles in progress: its kind ("" = none), the tiles selected so far,
    and a swap's tile (``source``) once selected."""

    __slots__ = ("kind", "source", "tiles")

    def __init__(self) -> None:
        self.kind = ""
        self.tiles: list[int] = []
        self.source = -1

    def clear(self) -> None:
        self.kind = ""
        self.tiles = []
        self.source = -1


def has_decision(legal: Sequence[Action]) -> bool:
    """Whether a seat must decide: anything beyond leaving, which is open to both seats all hand."""
    return len(legal) > 1 or (bool(legal) and legal[0].kind != A.LEAVE)


def pending_kind(table: Table, seat: int, choice: Choice) -> str:
    """The kind being chosen: the choice's, or 换牌 for a seat that has not exchanged in its phase."""
    if choice.kind:
        return choice.kind
    state = table.state
    if state.phase == EXCHANGE and not state.exchanged[seat]:
        return A.EXCHANGE
    return ""


def fill_mask(table: Table, seat: int, choice: Choice, out: Mask, *, allow_leave: bool = True) -> Mask:
    """Write ``seat``'s legal indices into ``out`` (zeroed first); a seat without a decision: NOOP."""
    state = table.state
    kind = pending_kind(table, seat, choice)
    unseen = unseen_kinds(state) if kind == A.SWAP_ITEM else []

    def exchange_ok(tiles: tuple[int, ...]) -> bool:
        return combinatorial_reason(state, Action(seat, A.EXCHANGE, tiles=tiles)) is None

    return fill_legal(
        table.legal_actions(seat),
        state.hands[seat],
        choice,
        kind,
        out,
        unseen=unseen,
        exchange_ok=exchange_ok,
        allow_leave=allow_leave,
    )


def fill_legal(
    legal: Sequence[Action],
    hand: Sequence[int],
    choice: Choice,
    kind: str,
    out: Mask,
    *,
    unseen: Sequence[int],
    exchange_ok: Callable[[tuple[int, ...]], bool],
    allow_leave: bool = True,
) -> Mask:
    """:func:`fill_mask` from what a seat knows rather than a table: its ``legal`` actions, its ``hand``
    (concealed tile counts), the ``kind`` being chosen (:func:`pending_kind`), the ``unseen`` kinds a
    偷天换日 may name (needed only while one is chosen), and whether 换牌 may give back some tiles (the
    engine's judgement: T4's count, duel's pool). The client library builds the same mask from its
    stream (``duelmahjong.client.env_observation``)."""
    out.fill(0)
    if not has_decision(legal):
        out[L.NOOP] = 1
        return out
    if kind == A.SWAP_ITEM:
        _fill_swap(hand, choice, unseen, out)
    elif kind:
        _fill_tiles(hand, choice, kind, exchange_ok, out)
    else:
        for action in legal:
            out[L.first_index(action)] = 1
    if not allow_leave:
        out[L.LEAVE] = 0
    elif any(action.kind == A.LEAVE for action in legal):
        out[L.LEAVE] = 1
    return out


def _fill_swap(hand: Sequence[int], choice: Choice, unseen: Sequence[int], out: Mask) -> None:
    """偷天换日: a held tile some other unseen kind may replace, then the unseen kinds but that tile."""
    if choice.source < 0:
        for tile, held in enumerate(hand[: L.TILE_KINDS]):
            if held and any(target != tile for target in unseen):
                out[L.SELECT + tile] = 1
        return
    for target in unseen:
        if target != choice.source:
            out[L.SWAP_TARGET + target] = 1


def _fill_tiles(
    hand: Sequence[int], choice: Choice, kind: str, exchange_ok: Callable[[tuple[int, ...]], bool], out: Mask
) -> None:
    """换牌 (any tiles the engine accepts, confirmed at any point) or three tiles (then CONFIRM)."""
    counts = list(hand)  # the concealed tiles less those already selected
    for tile in choice.tiles:
        counts[tile] -= 1
    if kind == A.EXCHANGE:
        out[L.CONFIRM] = 1  # every selection offered so far is a legal exchange
        for tile in range(L.TILE_KINDS):
            if counts[tile] > 0 and exchange_ok(tuple(sorted([*choice.tiles, tile]))):
                out[L.SELECT + tile] = 1
        return
    if len(choice.tiles) == 3:
        out[L.CONFIRM] = 1
        return
    for tile in range(L.TILE_KINDS):
        if counts[tile] > 0:
            out[L.SELECT + tile] = 1


def choose(table: Table, seat: int, choice: Choice, index: int, mask: Mask) -> Action | None:
    """The engine action ``index`` completes, or None when it only advances ``choice``. ``mask`` is the
    seat's current mask (:func:`fill_mask`): an index outside it raises IllegalActionError."""
    check_index(mask, seat, index)
    if index == L.NOOP:
        return None
    return resolve(table.legal_actions(seat), seat, choice, pending_kind(table, seat, choice), index)


def resolve(legal: Sequence[Action], seat: int, choice: Choice, kind: str, index: int) -> Action | None:
    """:func:`choose` once the index is known legal, from the seat's ``legal`` actions and the ``kind``
    being chosen (:func:`pending_kind`): the env and the client library's env policies share it."""
    if index == L.LEAVE:
        choice.clear()
        return _listed(legal, seat, A.LEAVE, -1)
    if kind:
        return _advance(seat, choice, kind, index)
    if index in L.KIND_OF_BEGIN:
        choice.kind = L.KIND_OF_BEGIN[index]
        return None
    single = L.KIND_OF_SINGLE.get(index)
    if single is not None:
        return _listed(legal, seat, single, None)
    tile = index % L.TILE_KINDS
    return _listed(legal, seat, L.KIND_OF_BLOCK[index - tile], tile)


def check_index(mask: Mask, seat: int, index: int) -> None:
    """Raise IllegalActionError unless ``index`` is in ``seat``'s ``mask``."""
    if not 0 <= index < L.ACTION_COUNT or not mask[index]:
        raise IllegalActionError(f"index {index} ({L.describe(index)}) is not legal for seat {seat} now")


def _listed(legal: Sequence[Action], seat: int, kind: str, tile: int | None) -> Action:
    """The legal action of ``kind`` (and ``tile`` unless None) as the table lists it."""
    for action in legal:
        if action.kind == kind and (tile is None or action.tile == tile):
            return action
    raise IllegalActionError(f"seat {seat} has no legal {kind!r} now")


def _advance(seat: int, choice: Choice, kind: str, index: int) -> Action | None:
    choice.kind = kind
    if index == L.CONFIRM:
        action = Action(seat, kind, tiles=tuple(sorted(choice.tiles)))
        choice.clear()
        return action
    if L.SWAP_TARGET <= index < L.SWAP_TARGET + L.TILE_KINDS:
        action = Action(seat, A.SWAP_ITEM, choice.source, target=index - L.SWAP_TARGET)
        choice.clear()
        return action
    tile = index - L.SELECT
    if kind == A.SWAP_ITEM:
        choice.source = tile
    else:
        choice.tiles.append(tile)
    return None


def decode(table: Table, seat: int, indices: list[int]) -> Action:
    """The engine action an index sequence plays from the current state (the inverse of
    :func:`~duelmahjong.env.layout.index_of`); the table is not changed."""
    choice = Choice()
    mask = np.zeros(L.ACTION_COUNT, np.int8)
    for position, index in enumerate(indices):
        fill_mask(table, seat, choice, mask)
        action = choose(table, seat, choice, index, mask)
        if action is not None:
            if position != len(indices) - 1:
                raise IllegalActionError(f"indices {indices} go on after completing {action}")
            return action
    raise IllegalActionError(f"indices {indices} do not complete an action")
