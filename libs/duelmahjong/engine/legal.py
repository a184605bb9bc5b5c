"""What each seat may do now: legal actions derived from the state, asking the rules library about shapes.

Every answer about winning, waiting or scoring comes from ``duelmahjong.rules``; this module only knows
the table rules (§5: who may act, which claims exist, what a declared-ready hand may still do).
Combinatorial choices (which tiles to give back in an exchange or for a triplet offer) are checked by
:func:`is_legal`; :func:`legal_actions` lists the representative ones (see docs/engine.md).
"""

from __future__ import annotations

from itertools import compress

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action, act
from duelmahjong.engine.hand_state import PLACE_OF, SUIT_OF
from duelmahjong.engine.result import describe_win, evaluate_json, meets_minimum
from duelmahjong.engine.state import (
    CLAIM,
    DOUBLING,
    EXCHANGE,
    EXTRA_DRAW,
    GUESS,
    HAND_PHASES,
    OVER,
    ROB_KONG,
    TURN,
    TableState,
)
from duelmahjong.engine.swaps import unseen_triplet_kinds
from duelmahjong.rules.analysis import shanten_keys, waits, waits_keys, win_keys
from duelmahjong.rules.keys import suit_keys

_KINDS = range(34)
# The discard actions of each seat, by kind: the most listed actions, built once.
_DISCARDS = [[act(seat, A.DISCARD, kind) for kind in range(34)] for seat in (0, 1)]
_LEAVE = [act(seat, A.LEAVE) for seat in (0, 1)]
# Phases of play in which only ``state.current`` decides and the other seat may leave (escape, T10).
_ONE_SEAT_PHASES = frozenset({TURN, CLAIM, ROB_KONG, EXTRA_DRAW})


def kinds_held(counts: list[int]) -> list[int]:
    return list(compress(_KINDS, counts))


def hand_waits(state: TableState, seat: int, counts: list[int] | None = None) -> list[int]:
    """The tiles that would complete ``seat``'s 3k+1 hand (T9: 'ready means the hand waits on a tile')."""
    if counts is None:
        counts, (m, p, s, z), size = state.hands[seat], state.keys[seat], state.sizes[seat]
    else:
        (m, p, s, z), size = suit_keys(counts), sum(counts)
    return _waits(state, seat, counts, m, p, s, z, size)


def _waits(
    state: TableState, seat: int, counts: list[int], m: int, p: int, s: int, z: int, size: int
) -> list[int]:
    """The rules library's hot path (suit keys, no validation); a kind whose four copies are all in
    this hand and its melds is no wait."""
    found = waits_keys(counts, m, p, s, z, size, state.duel, state.green_melds[seat])
    melded = state.melded_tiles(seat)
    if melded and found:
        found = [kind for kind in found if counts[kind] + melded.count(kind) < 4]
    return found


def is_ready(state: TableState, seat: int) -> bool:
    """Whether the 3k+1 hand waits on a tile; the cheap shanten test first, the waits only if needed."""
    m, p, s, z = state.keys[seat]
    if shanten_keys(m, p, s, z, state.sizes[seat], state.duel, state.green_melds[seat]) > 0:
        return False
    return bool(hand_waits(state, seat))


def win_allowed(state: TableState, seat: int, tile: int, *, self_drawn: bool, robbing: bool = False) -> bool:
    """A win needs a winning shape and the room's minimum fan (E16); duel wins always score 推倒胡."""
    # The rules library's hot path on the suit keys the state keeps (valid by construction).
    m, p, s, z = state.keys[seat]
    size = state.sizes[seat]
    if not self_drawn:
        suit, place = SUIT_OF[tile], PLACE_OF[tile]
        if suit == 0:
            m += place
        elif suit == 1:
            p += place
        elif suit == 2:
            s += place
        else:
            z += place
        size += 1
    if not win_keys(m, p, s, z, size, state.duel, state.green_melds[seat]):
        return False
    minimum = state.minimum_fan
    if state.duel and minimum <= 1:
        return True
    evaluation = evaluate_json(describe_win(state, seat, tile, self_drawn=self_drawn, robbing=robbing))
    return meets_minimum(evaluation, state.settings.profile, minimum)


def shanten_after_discards(state: TableState, seat: int) -> dict[int, int]:
    """Shanten of the hand after each possible discard, through the rules library's hot path (suit keys
    adjusted per discard, no per-call validation). The bot and 报听 use it on every turn."""
    counts = state.hands[seat]
    green = state.green_melds[seat]
    duel = state.duel
    keys = list(state.keys[seat])
    size = state.sizes[seat] - 1
    out: dict[int, int] = {}
    for kind in kinds_held(counts):
        suit = SUIT_OF[kind]
        keys[suit] -= PLACE_OF[kind]
        out[kind] = shanten_keys(keys[0], keys[1], keys[2], keys[3], size, duel, green)
        keys[suit] += PLACE_OF[kind]
    return out


def ready_discards(state: TableState, seat: int) -> list[int]:
    """Discards that leave the hand waiting on at least one tile (T3: 报听 needs a ready hand)."""
    counts = state.hands[seat]
    m, p, s, z = state.keys[seat]
    if shanten_keys(m, p, s, z, state.sizes[seat], state.duel, state.green_melds[seat]) > 0:
        return []  # no discard can leave a hand ready that is two or more tiles away from winning
    found = []
    keys = list(state.keys[seat])
    size = state.sizes[seat] - 1
    for kind, after in shanten_after_discards(state, seat).items():
        if after > 0:
            continue
        suit = SUIT_OF[kind]
        keys[suit] -= PLACE_OF[kind]
        counts[kind] -= 1
        try:  # shanten 0 may still wait only on tiles all held
            if _waits(state, seat, counts, keys[0], keys[1], keys[2], keys[3], size):
                found.append(kind)
        finally:
            counts[kind] += 1
            keys[suit] += PLACE_OF[kind]
    return found


def unseen_kinds(state: TableState) -> list[int]:
    """Kinds still in the live wall or the unused pool (T5/T6: neither discarded nor in a hand)."""
    present = set(state.wall[state.head : state.tail])
    present.update(state.pool)
    return sorted(kind for kind in present if kind < 34)


def _turn_actions(state: TableState, seat: int) -> list[Action]:
    counts = state.hands[seat]
    held = kinds_held(counts)
    drawn = state.last_draw
    out: list[Action] = []
    initial = seat == state.dealer and state.discards[seat] == 0 and drawn < 0 and state.calls == 0
    win_tile = drawn if drawn >= 0 else (held[-1] if initial else -1)
    if win_tile >= 0 and win_allowed(state, seat, win_tile, self_drawn=True):
        out.append(act(seat, A.SELF_DRAW_WIN, win_tile))
    can_kong = state.wall_remaining > 0
    if state.ready[seat]:
        # T3: the hand is locked; erren still chooses whether to kong with the drawn tile.
        if can_kong and not state.duel and drawn >= 0:
            if counts[drawn] == 4 and _kong_keeps_waits(state, seat, drawn, drawn=True):
                out.append(act(seat, A.CONCEALED_KONG, drawn))
            if ("pong", drawn) in state.melds[seat]:
                out.append(act(seat, A.ADDED_KONG, drawn))
        out.append(act(seat, A.DISCARD, drawn))
        return out
    discards = _DISCARDS[seat]
    out.extend([discards[kind] for kind in held])
    ready = ready_discards(state, seat)
    if ready:
        out.extend(act(seat, A.DECLARE_READY, kind) for kind in ready)
    if can_kong:
        if 4 in counts:
            out.extend(act(seat, A.CONCEALED_KONG, kind) for kind in held if counts[kind] == 4)
        if state.melds[seat]:
            out.extend(
                act(seat, A.ADDED_KONG, tile)
                for kind, tile in state.melds[seat]
                if kind == "pong" and counts[tile]
            )
    # Choices of several tiles are combinatorial: any three held tiles (or any held tile and any unseen
    # kind) are legal (``combinatorial_reason``); the list carries representatives: windows of three
    # consecutive tiles of the sorted hand, and for 偷天换日 every unseen kind for the drawn tile.
    if state.offer == "triplet":
        out.extend(Action(seat, A.TAKE_TRIPLET, tiles=give) for give in _windows(counts))
    elif state.offer == "rub":
        out.extend(act(seat, A.RUB, kind) for kind in unseen_kinds(state))
    items = state.items[seat]
    if items and state.duel and state.settings.items_enabled:
        if items.get("swap_item", 0) > 0:
            own = drawn if drawn >= 0 else held[-1]
            out.extend(
                Action(seat, A.SWAP_ITEM, own, target=target)
                for target in unseen_kinds(state)
                if target != own
            )
        if items.get("shuffle_item", 0) > 0 and unseen_triplet_kinds(state):
            out.extend(Action(seat, A.SHUFFLE_ITEM, tiles=give) for give in _windows(counts))
    return out


def _tiles(counts: list[int]) -> list[int]:
    return [kind for kind in range(34) for _ in range(counts[kind])]


def _windows(counts: list[int]) -> list[tuple[int, ...]]:
    tiles = _tiles(counts)
    return sorted({tuple(tiles[i : i + 3]) for i in range(len(tiles) - 2)})


def combinatorial_reason(state: TableState, action: Action) -> str | None:
    """Why a choice of several tiles is illegal, or None (T4 exchange, T5 triplet, T6 items)."""
    seat, kind = action.seat, action.kind
    if any(not 0 <= tile < 34 for tile in action.tiles):
        return "the tiles given back must be tiles of a hand (1m–7z; flowers are set aside, 补花)"
    if kind == A.EXCHANGE:
        if state.phase != EXCHANGE or state.exchanged[seat]:
            return "exchanging (换牌, T4) is only possible once, right after the deal"
        if action.tile != -1 or action.target != -1:
            return "an exchange (T4) names only the list of tiles given back, e.g. '0 exchange [1m,9m]'"
        return exchange_reason(state, action)
    if state.phase != TURN or state.current != seat or state.ready[seat]:
        return f"{kind!r} is only possible on your own turn, before declaring ready"
    if kind == A.SWAP_ITEM:
        if action.tiles or not _item_usable(state, seat, "swap_item"):
            return "偷天换日 needs the item, one tile of your hand and a named kind (T6)"
        if not 0 <= action.tile < 34 or not state.hands[seat][action.tile]:
            return "偷天换日 changes a tile you hold"
        if not 0 <= action.target < 34:
            return "偷天换日 names the tile kind to turn into (1m–7z)"
        if action.target == action.tile or action.target not in unseen_kinds(state):
            return "偷天换日 needs a different kind of which an unseen copy exists (T6)"
        return None
    if kind == A.TAKE_TRIPLET and state.offer != "triplet":
        return "no triplet is on offer (T5)"
    if kind == A.SHUFFLE_ITEM and not (
        _item_usable(state, seat, "shuffle_item") and unseen_triplet_kinds(state)
    ):
        return "移花接木 needs the item and an unseen triplet (T6)"
    if len(action.tiles) != 3 or action.tile != -1 or action.target != -1:
        return f"{kind!r} gives back exactly three tiles of your hand"
    counts = list(state.hands[seat])
    for tile in action.tiles:
        counts[tile] -= 1
        if counts[tile] < 0:
            return "you can only give back tiles you hold"
    return None


def _item_usable(state: TableState, seat: int, item: str) -> bool:
    settings = state.settings
    return settings.is_duel and settings.items_enabled and state.items[seat].get(item, 0) > 0


def _kong_keeps_waits(state: TableState, seat: int, tile: int, *, drawn: bool) -> bool:
    """T3 (erren): whether a kong of ``tile`` leaves a declared-ready hand waiting on the same tiles.

    ``drawn``: the fourth copy is the drawn tile (a concealed kong), else the opponent's discard (an
    exposed kong). The waits compared are those the hand can still win on (kinds whose four copies it
    holds are none, docs/rules.md "Waits by shape, waits by the tiles left")."""
    counts = list(state.hands[seat])
    if drawn:
        counts[tile] -= 1
    before = hand_waits(state, seat, counts)
    counts[tile] -= 3
    after = waits(
        counts,
        profile=state.settings.profile,
        melded_tiles=[*state.melded_tiles(seat), tile, tile, tile, tile],
    )
    return before == after


def claim_actions(state: TableState, seat: int) -> list[Action]:
    """T2: the opponent's discard may be won, konged, ponged or chowed. A declared-ready hand only wins,
    except that in erren it may kong the discard when the kong keeps its waits (T3)."""
    tile = state.last_discard
    out: list[Action] = []
    if win_allowed(state, seat, tile, self_drawn=False):
        out.append(act(seat, A.WIN, tile))
    if state.ready[seat]:
        if (
            not state.duel
            and state.wall_remaining > 0
            and state.hands[seat][tile] == 3
            and _kong_keeps_waits(state, seat, tile, drawn=False)
        ):
            out.append(act(seat, A.KONG, tile))
        if out:
            out.append(act(seat, A.PASS))
        return out
    if state.wall_remaining > 0:  # no claim but a win on the last discard: nothing would follow it
        counts = state.hands[seat]
        if counts[tile] == 3:
            out.append(act(seat, A.KONG, tile))
        if counts[tile] >= 2:
            out.append(act(seat, A.PONG, tile))
        if tile < 27:  # a chow of the discard with two held tiles of its suit, lowest tile first
            rank = tile % 9
            if rank >= 2 and counts[tile - 2] and counts[tile - 1]:
                out.append(act(seat, A.CHI, tile - 2))
            if 1 <= rank <= 7 and counts[tile - 1] and counts[tile + 1]:
                out.append(act(seat, A.CHI, tile - 1))
            if rank <= 6 and counts[tile + 1] and counts[tile + 2]:
                out.append(act(seat, A.CHI, tile))
    if out:
        out.append(act(seat, A.PASS))
    return out


def legal_actions(state: TableState, seat: int) -> list[Action]:
    """Every legal action of ``seat`` now (for exchanges: keeping the hand and single-tile exchanges)."""
    phase = state.phase
    if phase == OVER:
        return [_LEAVE[seat]]
    if phase not in HAND_PHASES:
        return []
    if seat != state.current and phase in _ONE_SEAT_PHASES:
        return [_LEAVE[seat]]  # the seat not to move may only leave (escape, T10)
    out: list[Action] = []
    if phase == DOUBLING:
        if state.doubling[seat] is None:
            out = [act(seat, A.CHOOSE_DOUBLING), act(seat, A.DECLINE_DOUBLING)]
    elif phase == EXCHANGE:
        if not state.exchanged[seat]:
            out = [act(seat, A.EXCHANGE)]
            limit = state.settings.effective_exchange_limit
            if limit is None or limit > 0:
                out.extend(Action(seat, A.EXCHANGE, tiles=(k,)) for k in kinds_held(state.hands[seat]))
    elif seat == state.current:
        if phase == TURN:
            out = _turn_actions(state, seat)
        elif phase == CLAIM:
            out = claim_actions(state, seat)
        elif phase == ROB_KONG:
            if win_allowed(state, seat, state.kong_tile, self_drawn=False, robbing=True):
                out = [act(seat, A.WIN, state.kong_tile), act(seat, A.PASS)]
        elif phase == EXTRA_DRAW:
            if state.last_draw >= 0 and win_allowed(state, seat, state.last_draw, self_drawn=True):
                out = [act(seat, A.SELF_DRAW_WIN, state.last_draw), act(seat, A.PASS)]
        elif phase == GUESS:
            out = [act(seat, A.GUESS_BIG), act(seat, A.GUESS_SMALL), act(seat, A.COLLECT)]
    if phase != GUESS:
        out.append(act(seat, A.LEAVE))
    return out


def exchange_reason(state: TableState, action: Action) -> str | None:
    """Why an exchange (T4) is illegal, or None. Any sub-multiset of the hand within the limit is legal."""
    limit = state.settings.effective_exchange_limit
    if limit is not None and len(action.tiles) > limit:
        return f"at most {limit} tiles may be exchanged in this room (T4)"
    counts = list(state.hands[action.seat])
    for tile in action.tiles:
        counts[tile] -= 1
        if counts[tile] < 0:
            return "you can only give back tiles you hold"
    if state.duel and len(action.tiles) > len(state.pool):
        return "the unused pool has too few tiles for that exchange"
    return None
