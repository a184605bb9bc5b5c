"""Detect predicates both catalogues use: the wind, dragon, pung and whole-hand shapes that duel and
erren read the same way, and the readings (wind pungs, dragon pungs, shifted-pung runs) their own
predicates build on.

A predicate takes one :class:`~duelmahjong.rules.arrangement.Arrangement` and returns how many times
its pattern occurs (0 = absent; a pattern that occurs at most once answers a ``bool``, which counts as
0 or 1); the catalogue calls it only when the row's required facts hold, so it may take them for
granted (the row says which).
"""

from __future__ import annotations

from collections.abc import Callable

from duelmahjong.rules.arrangement import Arrangement
from duelmahjong.rules.tiles import (
    DRAGONS,
    SUIT_FIRSTS,
    SUITED_KINDS,
    TERMINALS_AND_HONORS,
    WINDS,
    suit_of,
)

Detect = Callable[[Arrangement], int]

# 1112345678999 as offsets from the suit's 1 (九莲宝灯, D12 / E10).
_NINE_GATES_OFFSETS = (0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8)
# The lowest tiles of the chows that hold a terminal: 123 and 789 of each suit.
_OUTSIDE_CHOWS = frozenset(first + offset for first in SUIT_FIRSTS for offset in (0, 6))


# --- readings of one arrangement ---------------------------------------------------------------------
def wind_pungs(a: Arrangement) -> int:
    """How many pungs and kongs of a wind."""
    return sum(1 for tile in a.pungs_and_kongs if tile in WINDS)


def dragon_pungs(a: Arrangement) -> int:
    """How many pungs and kongs of a dragon."""
    return sum(1 for tile in a.pungs_and_kongs if tile in DRAGONS)


def shifted_pung_run(a: Arrangement) -> int:
    """The longest run of pungs/kongs of one suit whose ranks rise by one (三连刻, 四节高, …)."""
    best = run = 0
    previous = -2
    for tile in sorted({tile for tile in a.pungs_and_kongs if tile < SUITED_KINDS}):
        run = run + 1 if tile == previous + 1 and suit_of(tile) == suit_of(previous) else 1
        best = max(best, run)
        previous = tile
    return best


def any_suited(a: Arrangement) -> int:
    """Some number tile in the hand: with the ``one_suit`` and ``honors`` facts, 混一色 rather than
    an all-honour hand; with ``terminals_or_honors``, 混老头."""
    return any(a.counts[:SUITED_KINDS])


# --- patterns both profiles read the same way --------------------------------------------------------
def big_four_winds(a: Arrangement) -> int:
    """大四喜: four wind pungs."""
    return wind_pungs(a) == 4


def little_four_winds(a: Arrangement) -> int:
    """小四喜: three wind pungs and a wind pair."""
    return wind_pungs(a) == 3 and a.pair in WINDS


def big_three_dragons(a: Arrangement) -> int:
    """大三元: three dragon pungs."""
    return dragon_pungs(a) == 3


def little_three_dragons(a: Arrangement) -> int:
    """小三元: two dragon pungs and a dragon pair."""
    return dragon_pungs(a) == 2 and a.pair in DRAGONS


def all_honors(a: Arrangement) -> int:
    """字一色: no number tile."""
    return not any_suited(a)


def pure_shifted_pungs(a: Arrangement) -> int:
    """三连刻 (duel) / 三节高 (erren): three shifted pungs of one suit."""
    return shifted_pung_run(a) >= 3


def four_pure_shifted_pungs(a: Arrangement) -> int:
    """四连刻 (duel) / 四节高 (erren): four shifted pungs of one suit."""
    return shifted_pung_run(a) >= 4


def four_concealed_pungs(a: Arrangement) -> int:
    """四暗刻: concealed kongs count, a pung completed by a discard does not (D13)."""
    return a.concealed_pung_count == 4


def four_kongs(a: Arrangement) -> int:
    return a.kong_count == 4


def outside_hand(a: Arrangement) -> int:
    """全带幺: every set and the pair hold a terminal or an honour (the facts tell 混 from 纯)."""
    if a.pair not in TERMINALS_AND_HONORS:
        return 0
    for low in a.chows:
        if low not in _OUTSIDE_CHOWS:
            return 0
    for tile in a.pungs_and_kongs:
        if tile not in TERMINALS_AND_HONORS:
            return 0
    return 1


def nine_gates(a: Arrangement) -> int:
    """九莲宝灯, only the pure nine-sided wait (D12, E10): no melds, the 13 concealed tiles are exactly
    1112345678999 of one suit, and the winning tile is of that suit."""
    desc = a.desc
    if desc.melds:
        return 0
    first = desc.concealed[0]
    if first not in SUIT_FIRSTS or suit_of(desc.win_tile) != suit_of(first):
        return 0
    return desc.concealed == tuple(first + offset for offset in _NINE_GATES_OFFSETS)


def heavenly_ready(a: Arrangement) -> int:
    """天听: ready declared on the first turn (T3)."""
    return a.desc.context.declared_first_turn


# First-turn wins (D10, E7): the profiles give the same events different names, so the rows say which.
def dealer_initial_hand(a: Arrangement) -> int:
    """The dealer wins on the dealt hand (duel 天和, erren 天胡)."""
    return a.desc.context.first_turn_win == "dealer_initial_hand"


def nondealer_first_draw(a: Arrangement) -> int:
    """The non-dealer wins on the first draw (duel 人和, erren 地胡)."""
    return a.desc.context.first_turn_win == "nondealer_first_draw"


def dealer_first_discard(a: Arrangement) -> int:
    """The non-dealer wins on the dealer's first discard (duel 地和, erren 人胡)."""
    return a.desc.context.first_turn_win == "dealer_first_discard"
