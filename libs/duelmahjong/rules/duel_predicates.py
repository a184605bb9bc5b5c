"""Detect predicates of the duel (决斗麻将) catalogue that only duel reads this way (seeds 001/002,
docs/decisions.md D1–D13); those erren shares are in :mod:`duelmahjong.rules.predicates`.

Each takes one :class:`~duelmahjong.rules.arrangement.Arrangement` and returns how many times its
pattern occurs (0 = absent; a ``bool`` for a pattern that occurs at most once); the row's required
facts hold whenever it is called.
"""

from __future__ import annotations

from duelmahjong.rules.arrangement import Arrangement
from duelmahjong.rules.tiles import (
    EAST,
    GREEN_TILES,
    M1,
    M9,
    NORTH,
    NUM_KINDS,
    P1,
    RED_TILES,
    S1,
    SUIT_FIRSTS,
    SUITED_KINDS,
)

_MILLION_STONES = 100  # D12 百万石: the pips of an all-万 hand


def _identical_chow_pairs(a: Arrangement) -> int:
    """How many pairs of identical chows (一杯口 units); chows are sorted, so pair greedily."""
    chows = a.chows
    pairs = 0
    index = 0
    while index < len(chows) - 1:
        if chows[index] == chows[index + 1]:
            pairs += 1
            index += 2
        else:
            index += 1
    return pairs


def _same_rank_in_three_suits(tiles: tuple[int, ...]) -> bool:
    """A 万 tile among ``tiles`` whose 筒 and 条 of the same rank are there too."""
    return any(tile + P1 in tiles and tile + S1 in tiles for tile in tiles if tile < P1)


def _has_straight(a: Arrangement) -> bool:
    """123 456 789 of one suit among the chows (一气通贯)."""
    chows = a.chows
    return any(first in chows and first + 3 in chows and first + 6 in chows for first in SUIT_FIRSTS)


def _only_kinds(a: Arrangement, kinds: frozenset[int]) -> int:
    counts = a.counts
    return all(counts[kind] == 0 for kind in range(NUM_KINDS) if kind not in kinds)


def all_chows(a: Arrangement) -> int:
    """平和 (D5): concealed, four chows, a pair that is not an honour, won on a two-sided wait."""
    return a.pair is not None and a.pair < SUITED_KINDS and a.wait == "two_sided"


def bonus_tiles(a: Arrangement) -> int:
    """花牌 (D1): every tile of the hand (kongs 4, the winning tile too) of a revealed kind, once per
    revealed copy."""
    counts = a.counts
    return sum(counts[kind] for kind in a.desc.context.revealed_bonus_tiles)


def pure_double_chow(a: Arrangement) -> int:
    """一杯口: one pair of identical chows."""
    return _identical_chow_pairs(a) == 1


def twice_pure_double_chow(a: Arrangement) -> int:
    """两杯口: two pairs of identical chows."""
    return _identical_chow_pairs(a) == 2


def dragon_seven_pairs(a: Arrangement) -> int:
    """龙七对 (D2): the winning tile completes the four identical tiles."""
    return a.counts[a.win_tile] == 4


def mixed_triple_chow(a: Arrangement) -> int:
    """三色同顺: the same chow in the three suits."""
    return _same_rank_in_three_suits(a.chows)


def triple_pung(a: Arrangement) -> int:
    """三色同刻: pungs of the same rank in the three suits."""
    return _same_rank_in_three_suits(a.pungs_and_kongs)


def three_concealed_pungs(a: Arrangement) -> int:
    """三暗刻: exactly three (D13: a pung completed by a discard is not concealed)."""
    return a.concealed_pung_count == 3


def pure_straight(a: Arrangement) -> int:
    """一气通贯: 123 456 789 of one suit."""
    return _has_straight(a)


def drew_the_tile(a: Arrangement) -> int:
    """The winner drew the winning tile (杠上开花, 河底捞月)."""
    return a.desc.self_drawn


def claimed_the_discard(a: Arrangement) -> int:
    """The winner took the opponent's discard (河底捞鱼)."""
    return not a.desc.self_drawn


def million_stones(a: Arrangement) -> int:
    """百万石 (D12): all 万 (the row's facts), pip sum (kongs counting 4 tiles) at least 100."""
    counts = a.counts
    if any(counts[P1:]):
        return 0
    return sum((kind - M1 + 1) * counts[kind] for kind in range(M1, M9 + 1)) >= _MILLION_STONES


def all_green(a: Arrangement) -> int:
    """绿一色 (D12): every tile 2s 3s 4s 6s 8s or 发, in any shape."""
    return _only_kinds(a, GREEN_TILES)


def red_peacock(a: Arrangement) -> int:
    """红孔雀 (D12): every tile 1s 5s 7s 9s or 中."""
    return _only_kinds(a, RED_TILES)


def northeast_express(a: Arrangement) -> int:
    """东北新干线 (D12): 一气通贯 + East pung/kong + North pair, or North pung/kong + East pair."""
    pungs = a.pungs_and_kongs
    ends = (EAST in pungs and a.pair == NORTH) or (NORTH in pungs and a.pair == EAST)
    return ends and _has_straight(a)
