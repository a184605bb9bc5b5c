"""The duel (决斗麻将) fan catalogue: seeds 001/002 with the decisions D1–D13 of docs/decisions.md §4.

Values are seed 002's (it wins over 001 where they differ, docs/decisions.md §1). Patterns are additive
("以下牌型可重复计算…按照加法算番"); the only exclusions are the replacements of D2/D3. Limit hands
(役满) score their tier, 13/32/64, and hide every non-limit pattern (D9).

>>> len(DUEL), DUEL.cap, DUEL.highest_fan
(46, 13, 64)
"""

from __future__ import annotations

from itertools import pairwise

from duelmahjong.rules.arrangement import Arrangement
from duelmahjong.rules.patterns import Catalogue, Pattern, always
from duelmahjong.rules.tiles import EAST, GREEN_TILES, NORTH, RED_TILES

_WIND_KINDS = (27, 28, 29, 30)
_DRAGON_KINDS = (31, 32, 33)
_OUTSIDE_CHOW_RANKS = (0, 6)  # lowest-tile rank (0-based) of 123 and 789


# --- shared shape helpers ------------------------------------------------------------------------------
def _identical_chow_pairs(arr: Arrangement) -> int:
    """How many pairs of identical chows (一杯口 units); chows are sorted, so pair greedily."""
    chows = arr.chows
    pairs = 0
    index = 0
    while index < len(chows) - 1:
        if chows[index] == chows[index + 1]:
            pairs += 1
            index += 2
        else:
            index += 1
    return pairs


def _every_set_outside(arr: Arrangement) -> bool:
    """Every set and the pair hold a terminal or an honour (全带幺)."""
    if arr.pair is None or (arr.pair < 27 and arr.pair % 9 not in (0, 8)):
        return False
    for low in arr.chows:
        if low % 9 not in _OUTSIDE_CHOW_RANKS:
            return False
    return all(tile >= 27 or tile % 9 in (0, 8) for tile in arr.pungs_and_kongs)


def _has_straight(arr: Arrangement) -> bool:
    """123 456 789 of one suit among the chows (一气通贯)."""
    chows = arr.chows
    return any(base in chows and base + 3 in chows and base + 6 in chows for base in (0, 9, 18))


def _shifted_pungs(arr: Arrangement, length: int) -> bool:
    """``length`` pungs/kongs of one suit with consecutive ranks (三连刻 / 四连刻)."""
    tiles = sorted(set(arr.pungs_and_kongs))
    run = 1
    for previous, tile in pairwise(tiles):
        run = run + 1 if tile == previous + 1 and tile < 27 and tile // 9 == previous // 9 else 1
        if run >= length:
            return True
    return False


def _same_rank_in_three_suits(tiles: tuple[int, ...]) -> bool:
    return any(tile + 9 in tiles and tile + 18 in tiles for tile in tiles if tile < 9)


def _only_kinds(arr: Arrangement, kinds: frozenset[int]) -> bool:
    counts = arr.counts
    return all(counts[kind] == 0 for kind in range(34) if kind not in kinds)


def _wind_pungs(arr: Arrangement) -> int:
    return sum(1 for tile in arr.pungs_and_kongs if 27 <= tile <= 30)


def _dragon_pungs(arr: Arrangement) -> int:
    return sum(1 for tile in arr.pungs_and_kongs if tile >= 31)


# --- predicates ----------------------------------------------------------------------------------------
def _all_chows(arr: Arrangement) -> int:
    # D5: concealed, four chows, a non-honour pair, won on a two-sided wait.
    return arr.concealed_hand and len(arr.chows) == 4 and arr.pair < 27 and arr.wait == "two_sided"  # type: ignore[operator]


def _bonus_tiles(arr: Arrangement) -> int:
    # D1: every tile of the hand (kongs 4, the winning tile too) of a revealed kind, once per revealed copy.
    counts = arr.counts
    return sum(counts[kind] for kind in arr.desc.context.revealed_bonus_tiles)


def _nine_gates(arr: Arrangement) -> int:
    # D12: only the pure nine-sided wait: the 13 concealed tiles are exactly 1112345678999 of one suit.
    desc = arr.desc
    if desc.melds:
        return 0
    base = desc.concealed[0]
    if base >= 27 or base % 9:
        return 0
    expected = (0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8)
    return all(tile == base + offset for tile, offset in zip(desc.concealed, expected, strict=True))


def _million_stones(arr: Arrangement) -> int:
    # D12: all 万, pip sum (kongs counting 4 tiles) at least 100.
    counts = arr.counts
    if any(counts[9:]):
        return 0
    return sum((rank + 1) * counts[rank] for rank in range(9)) >= 100


def _northeast_express(arr: Arrangement) -> int:
    # D12: 一气通贯 + East pung/kong + North pair, or North pung/kong + East pair.
    pungs = arr.pungs_and_kongs
    ends = (EAST in pungs and arr.pair == NORTH) or (NORTH in pungs and arr.pair == EAST)
    return ends and _has_straight(arr)


def _first_turn(event: str):  # type: ignore[no-untyped-def]
    def detect(arr: Arrangement) -> int:
        return arr.desc.context.first_turn_win == event

    return detect


def _p(
    pattern_id: str,
    name_zh: str,
    fan: int,
    detect,  # type: ignore[no-untyped-def]
    requires: str = "",
    excludes: str = "",
    tier: int | None = None,
) -> Pattern:
    return Pattern(
        id=pattern_id,
        name_zh=name_zh,
        fan=tier if tier is not None else fan,
        detect=detect,
        excludes=frozenset(excludes.split()),
        limit_tier=tier,
        requires=frozenset(requires.split()),
    )


_PATTERNS = (
    # Non-limit patterns, additive (002 "以下牌型可重复计算").
    _p("basic_win", "推倒胡", 1, always),  # the catalogue's fallback: scored only when nothing else is
    _p("concealed_hand", "门清", 1, always, "concealed"),  # a concealed kong keeps the hand concealed
    # D7: 报听 on an open hand is allowed but scores nothing; 天听 replaces 门清报听 (D3).
    _p("concealed_ready", "门清报听", 1, always, "concealed declared_ready"),
    _p(
        "heavenly_ready",
        "天听",
        2,
        lambda a: a.desc.context.declared_first_turn,
        "declared_ready",
        "concealed_ready",
    ),
    _p("all_chows", "平和", 1, _all_chows, "standard concealed four_chows"),
    _p("all_simples", "断幺九", 1, always, "simples"),  # D6: may be open
    _p("concealed_self_draw", "门清自摸", 1, always, "concealed self_drawn"),
    _p("bonus_tiles", "花牌", 1, _bonus_tiles, "bonus_tiles"),
    _p(
        "pure_double_chow",
        "一杯口",
        2,
        lambda a: _identical_chow_pairs(a) == 1,
        "standard concealed two_chows",
    ),
    _p(
        "twice_pure_double_chow",
        "两杯口",
        4,
        lambda a: _identical_chow_pairs(a) == 2,
        "standard concealed four_chows",
        "pure_double_chow",
    ),
    _p("seven_pairs", "七对子", 3, always, "seven_pairs"),
    # D2: the winning tile must complete the four identical tiles.
    _p(
        "dragon_seven_pairs",
        "龙七对",
        6,
        lambda a: a.counts[a.win_tile] == 4,
        "seven_pairs",
        "seven_pairs",
    ),
    _p("all_pungs", "碰碰胡", 2, always, "standard four_pungs"),
    _p("mixed_triple_chow", "三色同顺", 2, lambda a: _same_rank_in_three_suits(a.chows), "three_chows"),
    # D13: a pung completed by a discard is not concealed.
    _p("three_concealed_pungs", "三暗刻", 2, lambda a: a.concealed_pung_count == 3, "three_pungs"),
    _p("pure_shifted_pungs", "三连刻", 3, lambda a: _shifted_pungs(a, 3), "three_pungs"),
    _p(
        "triple_pung",
        "三色同刻",
        3,
        lambda a: _same_rank_in_three_suits(a.pungs_and_kongs),
        "three_pungs",
    ),
    # D4: both need at least one chow; D3: 纯全带幺 replaces 混全带幺.
    _p("outside_hand", "混全带幺", 3, lambda a: _every_set_outside(a), "standard honors chow"),
    _p(
        "pure_outside_hand",
        "纯全带幺",
        4,
        lambda a: _every_set_outside(a),
        "standard no_honors chow",
        "outside_hand",
    ),
    # 碰碰胡 form of terminals and honours, both present.
    _p(
        "all_terminals_and_honors",
        "混老头",
        2,
        lambda a: any(a.counts[:27]),
        "standard four_pungs terminals_or_honors honors",
    ),
    _p("half_flush", "混一色", 3, lambda a: any(a.counts[:27]), "one_suit honors"),
    _p("full_flush", "清一色", 5, always, "one_suit no_honors", "half_flush"),  # D3
    _p(
        "little_three_dragons",
        "小三元",
        4,
        lambda a: _dragon_pungs(a) == 2 and a.pair is not None and a.pair >= 31,
        "standard dragons two_pungs",
    ),
    _p("pure_straight", "一气通贯", 2, lambda a: _has_straight(a), "three_chows"),
    _p("out_on_replacement_tile", "杠上开花", 2, lambda a: a.desc.self_drawn, "after_kong self_drawn"),
    # D8: 河底捞月 = self-draw of the last of the 71 tiles; 河底捞鱼 = the opponent's last discard;
    # 海底捞月 = a win in the extra-draw phase (T9).
    _p(
        "win_on_last_wall_tile",
        "河底捞月",
        1,
        lambda a: a.desc.self_drawn,
        "last_wall_tile self_drawn",
    ),
    _p("win_on_last_discard", "河底捞鱼", 1, lambda a: not a.desc.self_drawn, "last_discard discard"),
    _p("win_on_extra_draw", "海底捞月", 1, always, "extra_draw_after_exhaustion"),
    # Limit hands (役满), 002's tiers. 13:
    _p(
        "little_four_winds",
        "小四喜",
        0,
        lambda a: _wind_pungs(a) == 3 and a.pair in _WIND_KINDS,
        "standard winds three_pungs",
        tier=13,
    ),
    # D10: 地和 = the non-dealer wins on the dealer's first discard; 人和 = the non-dealer self-draws
    # on the first draw.
    _p("earthly_hand", "地和", 0, _first_turn("dealer_first_discard"), "first_turn_win", tier=13),
    _p("human_hand", "人和", 0, _first_turn("nondealer_first_draw"), "first_turn_win", tier=13),
    _p(
        "four_concealed_pungs",
        "四暗刻",
        0,
        lambda a: a.concealed_pung_count == 4,
        "four_pungs",
        tier=13,
    ),
    # 32:
    _p("heavenly_hand", "天和", 0, _first_turn("dealer_initial_hand"), "first_turn_win", tier=32),
    _p("big_wheels", "大车轮", 0, always, "seven_pairs one_suit simples", tier=32),  # D12
    _p("million_stones", "百万石", 0, _million_stones, "one_suit no_honors", tier=32),
    _p("four_shifted_pungs", "四连刻", 0, lambda a: _shifted_pungs(a, 4), "four_pungs", tier=32),
    # D12: 字一色 and 清老头 need the 碰碰胡 form.
    _p(
        "all_honors",
        "字一色",
        0,
        lambda a: not any(a.counts[:27]),
        "standard four_pungs honors",
        tier=32,
    ),
    _p(
        "big_three_dragons",
        "大三元",
        0,
        lambda a: _dragon_pungs(a) == 3,
        "three_pungs dragons",
        tier=32,
    ),
    _p(
        "all_terminals",
        "清老头",
        0,
        always,
        "standard four_pungs terminals_or_honors no_honors",
        tier=32,
    ),
    # 64:
    _p("four_kongs", "四杠子", 0, lambda a: a.kong_count == 4, "kong four_pungs", tier=64),
    _p("all_green", "绿一色", 0, lambda a: _only_kinds(a, GREEN_TILES), "one_suit", tier=64),  # any shape
    _p(
        "red_peacock",
        "红孔雀",
        0,
        lambda a: _only_kinds(a, RED_TILES),
        "standard four_pungs one_suit",
        tier=64,
    ),
    _p("big_four_winds", "大四喜", 0, lambda a: _wind_pungs(a) == 4, "four_pungs winds", tier=64),
    _p("nine_gates", "九莲宝灯", 0, _nine_gates, "concealed one_suit no_honors", tier=64),
    _p("thirteen_orphans", "国士无双", 0, always, "thirteen_orphans", tier=64),
    _p("northeast_express", "东北新干线", 0, _northeast_express, "standard three_chows winds", tier=64),
)

DUEL = Catalogue(
    "duel",
    _PATTERNS,
    cap=13,  # D9: non-limit totals are capped at 13
    minimum=1,  # no 起和 in the duel seeds: every win scores at least 推倒胡
    limit_rule=True,  # D9
    fallback="basic_win",
    fallback_ignores=("bonus_tiles",),  # D1: a hand whose only pattern is 花牌 still scores 推倒胡
)
