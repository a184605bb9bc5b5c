"""Detect predicates of the erren (二人麻将) catalogue (seed 000) that only erren reads this way;
those duel shares are in :mod:`duelmahjong.rules.predicates`.

Each predicate takes one :class:`~duelmahjong.rules.arrangement.Arrangement` (one reading of the
whole winning hand) and returns how many times its pattern occurs there (0 = absent). They only
detect; exclusions (不记番, docs/decisions.md E1) are data in ``catalogue_erren`` and applied by ``evaluate``.

Erren tiles are 万 and honours only (docs/decisions.md §1), so "one suit" always means 万, and a hand with no
honour is always 清一色 as well.
"""

from __future__ import annotations

from duelmahjong.rules.arrangement import Arrangement
from duelmahjong.rules.erren_chows import chow_patterns, same_suit
from duelmahjong.rules.facts import FACTS
from duelmahjong.rules.predicates import Detect, any_suited, dragon_pungs, wind_pungs
from duelmahjong.rules.tiles import (
    DRAGONS,
    FLOWERS,
    HONORS,
    NUM_KINDS,
    PLANTS,
    SEASONS,
    SUIT_FIRSTS,
    TERMINALS,
    WINDS,
    is_honor,
    is_suited,
    rank_of,
)

_OPEN_MELDS = frozenset({"chi", "pong", "exposed_kong", "added_kong"})  # 吃、碰、明杠: not 门前清


# --- small readings of one arrangement ---------------------------------------------------------------
def _kongs(a: Arrangement, *, concealed: bool) -> int:
    return sum(1 for s in a.sets if s.kind == "kong" and (s.declared == "concealed_kong") == concealed)


def _self_drawn(a: Arrangement) -> bool:
    """Whether the winner drew the winning tile. E14: a flower-replacement draw is a self-draw. Robbing
    a kong never is (000 抢杠胡 "和别人自抓开明杠的牌": the opponent's tile, as in 国标's 抢杠和),
    whatever ``self_drawn`` says: scoring it as a self-draw is duel's D13, and the engine sends it so."""
    ctx = a.desc.context
    return (a.desc.self_drawn and not ctx.robbing_kong) or ctx.after_flower_replacement


def _on_discard(a: Arrangement) -> bool:
    """Won on the tile the opponent discarded (打出): neither drawn nor robbed from a kong."""
    return not a.desc.self_drawn and not a.desc.context.robbing_kong


# --- ready declarations (E8); first-turn wins and 天听 are in predicates -------------------------------
def ready_first_discard(a: Arrangement) -> int:
    """报听一发 (E8): won on the opponent's first discard after declaring."""
    ctx = a.desc.context
    declared = ctx.declared_ready or ctx.declared_first_turn
    return int(declared and ctx.first_turn_after_declare and _on_discard(a))


# --- winds and dragons (E11) -------------------------------------------------------------------------
def big_three_winds(a: Arrangement) -> int:
    """大三风: three wind pungs (four is 大四喜, which excludes it)."""
    return int(wind_pungs(a) >= 3)


def little_three_winds(a: Arrangement) -> int:
    """小三风: two wind pungs and a wind pair (three is 小四喜, which excludes it — E11)."""
    return int(wind_pungs(a) >= 2 and a.pair in WINDS)


def two_dragon_pungs(a: Arrangement) -> int:
    return int(dragon_pungs(a) >= 2)


def dragon_pung(a: Arrangement) -> int:
    """箭刻, once per dragon pung or kong."""
    return dragon_pungs(a)


def _seat_wind(a: Arrangement) -> int | None:
    ctx = a.desc.context
    if ctx.seat_wind_tile is not None:
        return ctx.seat_wind_tile
    # E17: the dealer sits East, the non-dealer West (对家).
    return min(WINDS) if ctx.dealer else min(WINDS) + 2


def prevalent_wind(a: Arrangement) -> int:
    wind = a.desc.context.round_wind_tile
    return int(wind is not None and wind in a.pungs_and_kongs)


def seat_wind(a: Arrangement) -> int:
    return int(_seat_wind(a) in a.pungs_and_kongs)


def terminal_honor_pung(a: Arrangement) -> int:
    """幺九刻: pungs and kongs of 1m, 9m and winds — but never a pung that scores otherwise (E11):
    dragon pungs are 箭刻; the round and seat wind pungs are 圈风刻/门风刻; wind pungs forming
    大三风/小三风/小四喜/大四喜 are counted by those patterns."""
    winds_scored_as_group = wind_pungs(a) >= 3 or (wind_pungs(a) == 2 and a.pair in WINDS)
    special = {a.desc.context.round_wind_tile, _seat_wind(a)}
    count = 0
    for tile in a.pungs_and_kongs:
        if tile in WINDS:
            count += not winds_scored_as_group and tile not in special
        elif not is_honor(tile):
            count += tile in TERMINALS
    return count


# --- pung shapes ---------------------------------------------------------------------------------------
def all_pungs(a: Arrangement) -> int:
    return int(a.form == "standard" and len(a.pungs_and_kongs) == 4)


def _concealed_pung_count_is(minimum: int) -> Detect:
    # 暗刻 counts concealed kongs (四暗刻 "4个暗刻（暗杠）"); a pung completed by the winning
    # discard is not concealed (the arrangement marks it so).
    def detect(a: Arrangement) -> int:
        return int(a.concealed_pung_count >= minimum)

    detect.__name__ = f"concealed_pungs_at_least_{minimum}"
    return detect


three_concealed_pungs = _concealed_pung_count_is(3)
two_concealed_pungs = _concealed_pung_count_is(2)


# --- kongs (E12) -------------------------------------------------------------------------------------
def three_kongs(a: Arrangement) -> int:
    return int(a.kong_count >= 3)


def two_concealed_kongs(a: Arrangement) -> int:
    return int(_kongs(a, concealed=True) >= 2)


def two_melded_kongs(a: Arrangement) -> int:
    return int(_kongs(a, concealed=False) >= 2)


def concealed_kong(a: Arrangement) -> int:
    """暗杠 2 per concealed kong; one exposed and one concealed kong score 明杠 + 暗杠 (E12)."""
    return _kongs(a, concealed=True)


def melded_kong(a: Arrangement) -> int:
    return _kongs(a, concealed=False)


# --- chow shapes (counted in erren_chows) ------------------------------------------------------------
def _chow_pattern(name: str) -> Detect:
    def detect(a: Arrangement) -> int:
        return chow_patterns(a.chows).get(name, 0)

    detect.__name__ = name
    return detect


quadruple_chow = _chow_pattern("quadruple_chow")
four_pure_shifted_chows = _chow_pattern("four_pure_shifted_chows")
pure_triple_chow = _chow_pattern("pure_triple_chow")
pure_straight = _chow_pattern("pure_straight")  # E9: only the three chows; 清一色 still scores
pure_shifted_chows = _chow_pattern("pure_shifted_chows")
pure_double_chow = _chow_pattern("pure_double_chow")
short_straight = _chow_pattern("short_straight")
two_terminal_chows = _chow_pattern("two_terminal_chows")


def twin_edge_sequences(a: Arrangement) -> int:
    """双龙会: 123 123 789 789 of one suit with a pair of its 5."""
    chows = a.chows
    if len(chows) != 4 or a.pair is None or not same_suit(*chows, a.pair):
        return 0
    low = chows[0]
    return int(rank_of(low) == 1 and chows == (low, low, low + 6, low + 6) and a.pair == low + 4)


def all_chows(a: Arrangement) -> int:
    """平和: four chows and a suited pair; the wait does not matter in erren (seed 000)."""
    return int(len(a.chows) == 4 and a.pair is not None and is_suited(a.pair))


# --- the tiles of the whole hand ---------------------------------------------------------------------
# These read the arrangement's facts (computed once per hand by the arrangement) rather than the tiles.
_ONE_SUIT_HONORS = FACTS["one_suit"] | FACTS["honors"]


def half_flush(a: Arrangement) -> int:
    """混一色: one suit and honours (an all-honour hand has no suit: it is 字一色)."""
    return int(a.facts & _ONE_SUIT_HONORS == _ONE_SUIT_HONORS and any_suited(a))


def _ranks_within(a: Arrangement, low: int, high: int) -> bool:
    """Every tile a suited tile of rank ``low``..``high``."""
    counts = a.counts
    inside = sum(counts[first + rank - 1] for first in SUIT_FIRSTS for rank in range(low, high + 1))
    return inside == sum(counts)


def upper_four(a: Arrangement) -> int:
    """大于五: every tile a suited 6–9."""
    return int(_ranks_within(a, 6, 9))


def lower_four(a: Arrangement) -> int:
    """小于五: every tile a suited 1–4."""
    return int(_ranks_within(a, 1, 4))


def tile_hog(a: Arrangement) -> int:
    """四归一: all four copies of a kind in the hand, not as a kong; once per kind (E6: seven pairs
    with two identical pairs too)."""
    kong_tiles = {s.tile for s in a.sets if s.kind == "kong"}
    return sum(1 for kind in range(NUM_KINDS) if a.counts[kind] == 4 and kind not in kong_tiles)


# --- seven pairs (E6) ----------------------------------------------------------------------------------
def _pair_kinds(a: Arrangement) -> set[int]:
    return set(a.pairs) if a.form == "seven_pairs" else set()


def seven_shifted_pairs(a: Arrangement) -> int:
    """连七对: seven distinct consecutive pairs of one suit."""
    kinds = sorted(_pair_kinds(a))
    consecutive = len(kinds) == 7 and kinds[-1] - kinds[0] == 6
    return int(consecutive and all(is_suited(k) for k in kinds) and same_suit(*kinds))


def great_seven_stars(a: Arrangement) -> int:
    return int(_pair_kinds(a) == set(HONORS))


def four_winds_seven_pairs(a: Arrangement) -> int:
    return int(WINDS <= _pair_kinds(a))


def three_dragons_seven_pairs(a: Arrangement) -> int:
    return int(DRAGONS <= _pair_kinds(a))


# --- how the hand was completed ----------------------------------------------------------------------
def concealed_hand(a: Arrangement) -> int:
    """门前清: no 吃/碰/明杠 and won on the opponent's discard (self-drawn is 不求人)."""
    return int(a.concealed_hand and not _self_drawn(a))


def fully_concealed_hand(a: Arrangement) -> int:
    """不求人: no 吃/碰/明杠 and self-drawn."""
    return int(a.concealed_hand and _self_drawn(a))


def melded_hand(a: Arrangement) -> int:
    """全求人: four sets claimed from the opponent (吃/碰/明杠) and won on a discard."""
    claimed = sum(1 for meld in a.desc.melds if meld.kind in _OPEN_MELDS)
    return int(claimed == 4 and not _self_drawn(a))


def self_drawn(a: Arrangement) -> int:
    return int(_self_drawn(a))


def last_tile_draw(a: Arrangement) -> int:
    """妙手回春 (E2): self-drawn last tile of the wall."""
    return int(a.desc.context.last_wall_tile and _self_drawn(a))


def last_tile_claim(a: Arrangement) -> int:
    """海底捞月 (E2): won on the last discard ("和打出的最后一张牌")."""
    return int(a.desc.context.last_discard and _on_discard(a))


def out_with_replacement_tile(a: Arrangement) -> int:
    """杠上开花: the kong replacement draw wins; a flower replacement never counts (E14), nor a robbed
    kong (the opponent's tile)."""
    ctx = a.desc.context
    return int(ctx.after_kong and _self_drawn(a) and not ctx.after_flower_replacement)


def last_tile(a: Arrangement) -> int:
    """和绝张 (E13): the other three copies are visible — including in the winner's own exposed melds,
    which the hand itself shows, so they are recognised even when the context does not say so."""
    if a.desc.context.fourth_tile_visible:
        return 1
    own = sum(m.tiles.count(a.win_tile) for m in a.desc.melds if m.kind in _OPEN_MELDS)
    return int(own == 3)


def _unique_wait(a: Arrangement) -> bool:
    """E15: the 13 tiles wait on exactly one kind, judged by shape: a kind whose four copies the hand
    already holds still counts (``5566778m`` + ``888m`` waits on 5m and 8m: no 单钓)."""
    return len(a.hand_waits) == 1


def _wait_is(kind: str) -> Detect:
    def detect(a: Arrangement) -> int:
        return int(a.wait == kind and _unique_wait(a))

    detect.__name__ = f"{kind}_wait"
    return detect


edge_wait = _wait_is("edge")  # 边张: 12 waiting 3, 89 waiting 7
closed_wait = _wait_is("closed")  # 坎张: 46 waiting 5
single_wait = _wait_is("single")  # 单钓: the winning tile pairs a single tile


# --- flowers (E14; never toward the 8-fan minimum, E16) -----------------------------------------------
def flower_tiles(a: Arrangement) -> int:
    return sum(1 for kind in a.desc.context.flowers if kind in FLOWERS)


def four_seasons(a: Arrangement) -> int:
    return int(SEASONS <= set(a.desc.context.flowers))


def four_plants(a: Arrangement) -> int:
    return int(PLANTS <= set(a.desc.context.flowers))


def no_flowers(a: Arrangement) -> int:
    return int(not a.desc.context.flowers)
