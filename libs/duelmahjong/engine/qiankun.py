"""乾坤大挪移 (T6, duel): before the deal, arrange one seat's hand at most one tile from ready toward a
limit hand. The tiles come from the rest of the shuffled set (wall outside the deal, unused pool), swapped
with what the seat would have been dealt, so every tile stays in exactly one place.
"""

from __future__ import annotations

import random
from dataclasses import replace

from duelmahjong.engine.wall import HandTiles
from duelmahjong.rules.tiles import DRAGONS, HONORS

# Limit hands (D9 tiers) a dealt hand can be steered toward: the pung kinds each may use.
_TARGETS: dict[str, tuple[int, ...]] = {
    "four_concealed_pungs": tuple(range(34)),  # 四暗刻
    "all_honors": tuple(sorted(HONORS)),  # 字一色
    "big_three_dragons": tuple(sorted(DRAGONS)),  # 大三元 (plus any other pung)
}


def _free_copies(tiles: HandTiles, protected: range) -> list[int]:
    counts = [0] * 34
    for position, kind in enumerate(tiles.wall):
        if position not in protected:
            counts[kind] += 1
    for kind in tiles.pool:
        counts[kind] += 1
    return counts


def _wanted(target: str, rng: random.Random, free: list[int], size: int) -> list[int] | None:
    """Three pungs and two pairs (ready on either pair), plus one more tile for the dealer."""
    kinds = list(_TARGETS[target])
    rng.shuffle(kinds)
    if target == "big_three_dragons":
        others = [k for k in range(34) if k not in DRAGONS]
        rng.shuffle(others)
        kinds = kinds + others
    shape = [3, 3, 3, 2, 2] + ([1] if size == 14 else [])
    chosen: list[int] = []
    for need in shape:
        kind = next((k for k in kinds if k not in chosen and free[k] >= need), None)
        if kind is None:
            return None
        chosen.append(kind)
    return [kind for kind, need in zip(chosen, shape, strict=True) for _ in range(need)]


def arrange(tiles: HandTiles, *, seat_slot: range, other_slot: range, rng: random.Random) -> HandTiles:
    """Steer the hand dealt from ``seat_slot`` of the wall toward a limit hand (shanten ≤ 1)."""
    protected = range(min(seat_slot.start, other_slot.start), max(seat_slot.stop, other_slot.stop))
    free = _free_copies(tiles, protected)
    targets = list(_TARGETS)
    rng.shuffle(targets)
    for target in targets:
        wanted = _wanted(target, rng, free, len(seat_slot))
        if wanted is not None:
            break
    else:  # pragma: no cover - 136 tiles always leave three free pungs and two pairs somewhere
        raise RuntimeError("no free tiles for 乾坤大挪移")
    wall, pool = list(tiles.wall), list(tiles.pool)
    for position, kind in zip(seat_slot, wanted, strict=True):
        if wall[position] == kind:
            continue
        given = wall[position]
        if kind in pool:
            pool[pool.index(kind)] = given
        else:
            source = next(
                p for p in range(len(wall)) if p not in protected and wall[p] == kind and p not in seat_slot
            )
            wall[source] = given
        wall[position] = kind
    return replace(tiles, wall=tuple(wall), pool=tuple(pool))
