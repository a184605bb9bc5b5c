"""The tiles of a hand, drawn from the hand's seed (docs/decisions.md §1, D1, T1, T8).

All randomness of a hand comes from its seed: the wall and the unused pool here, and every later random
outcome (T5 offers, T6 items, erren exchanges, dice) from ``derived_random(seed, counter)`` where the
counter is part of the folded state. The outcomes are written into events, so replay never rolls dice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

from duelmahjong.engine.errors import SettingsError
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.tiles import format_tiles, parse_tiles

# Erren tasks (T8): 碰牌, 番型, 杠牌, 加倍.
TASK_KINDS = ("pong", "pattern", "kong", "double")
# 番型 tasks name a pattern of the erren catalogue that an ordinary hand can reach.
TASK_PATTERNS = ("all_pungs", "half_flush", "pure_straight", "seven_pairs", "all_chows", "pure_double_chow")
_MIX = 0x9E3779B97F4A7C15  # spreads consecutive counters over the generator's seed space


def derived_random(seed: int, counter: int) -> random.Random:
    """A generator for the ``counter``-th random outcome of the hand seeded with ``seed``."""
    return random.Random((seed * _MIX + counter) & ((1 << 128) - 1))


@dataclass(frozen=True, slots=True)
class HandTiles:
    """The shuffled tiles of one hand: the in-play wall, the unused pool, the revealed bonus tiles."""

    wall: tuple[int, ...]
    pool: tuple[int, ...]
    bonus: tuple[int, ...]
    first_dealer: int  # T1: used only for the first hand of a pairing
    task: dict[str, object] | None  # T8 (erren)


@cache
def _full_set(profile_id: str) -> tuple[int, ...]:
    """Every tile of the profile's set in kind order: four of each kind, one of each flower (§1)."""
    kinds = sorted(get_profile(profile_id).tile_kinds)
    return tuple(kind for kind in kinds for _ in range(1 if kind >= 34 else 4))


def shuffle_hand(profile_id: str, seed: int, *, bonus_count: int, task_multiplier: int) -> HandTiles:
    """Shuffle the profile's full set with the seed; duel keeps 71 in play, the rest is the pool (§1)."""
    profile = get_profile(profile_id)
    rng = random.Random(seed)
    tiles = list(_full_set(profile_id))
    rng.shuffle(tiles)
    wall, rest = tiles[: profile.in_play], tiles[profile.in_play :]
    bonus = rest[:bonus_count] if profile.revealed_bonus_tiles else []  # D1: turned face up
    pool = rest[len(bonus) :]
    first_dealer = rng.randrange(2)
    task: dict[str, object] | None = None
    if profile_id == "erren":
        kind = rng.choice(TASK_KINDS)
        task = {"kind": kind, "multiplier": task_multiplier}
        if kind == "pattern":
            task["pattern"] = rng.choice(TASK_PATTERNS)
    return HandTiles(tuple(wall), tuple(pool), tuple(bonus), first_dealer, task)


def stack_tiles(
    profile_id: str,
    *,
    dealer_hand: str,
    other_hand: str,
    draws: str = "",
    replacements: str = "",
    pool: str = "",
    bonus: str = "",
    dealer: int = 0,
    task: dict[str, object] | None = None,
) -> HandTiles:
    """A prearranged hand (scripted tests, fixed-deal tournaments), written in tile notation.

    The wall is ``dealer_hand`` (14 tiles) + ``other_hand`` (13) + ``draws`` in order, then the unused
    tiles, and ends with ``replacements`` (the first kong/flower replacement is its first tile). In duel
    the unused pool starts with ``pool``; ``bonus`` are the revealed bonus tiles (D1).

    >>> tiles = stack_tiles("duel", dealer_hand="11122233344455m", other_hand="1112223334445p")
    >>> len(tiles.wall), len(tiles.pool), tiles.first_dealer
    (71, 65, 0)
    """
    profile = get_profile(profile_id)
    named = [parse_tiles(text) for text in (dealer_hand, other_hand, draws, replacements, pool, bonus)]
    head = named[0] + named[1] + named[2]
    tail = named[3][::-1]
    rest = list(_full_set(profile_id))
    for kind in (*head, *tail, *named[4], *named[5]):
        if kind not in rest:
            raise SettingsError(f"stacked tiles use more copies of {format_tiles([kind])} than exist")
        rest.remove(kind)
    random.Random(0).shuffle(rest)  # filler that looks like a real wall, the same every time
    filler = profile.in_play - len(head) - len(tail)
    wall = head + rest[:filler] + tail
    unused = named[4] + rest[filler:]
    return HandTiles(tuple(wall), tuple(unused), tuple(named[5]), dealer, task)
