"""The erren (二人麻将) fan catalogue: seed 000's table, one :class:`Pattern` row per fan.

Values are seed 000's (三杠 = 32 where the text lost it: E3). Exclusions follow docs/decisions.md E1: a
pattern's ``excludes`` = its seed 不记番 list ∪ the Chinese Official (国标, MCR) list for the same fan ∪
what the pattern necessarily implies ∪ what a decision of docs/decisions.md §3 adds. Every row keeps these
sources apart (:func:`~duelmahjong.rules.patterns.row`, :data:`EXCLUSION_SOURCES`) so a reader can
tell where each exclusion comes from:

* ``seed`` — the row's 不记番 list in seed 000 ("三风刻" = 大三风, "门清" = 门前清: E11);
* ``gb`` — the 国标 list of the same fan, as in the 1998 rules and the usual modern reading of them
  (e.g. 大四喜 不计圈风刻、门风刻; 一色四步高 不计连六、老少副); 国标's "… 不计无字" is dropped
  because 无字 is never excluded (E5);
* ``implied`` — patterns the row cannot occur without (四杠 ⇒ 碰碰胡, 大七星 ⇒ 混幺九, …);
* ``decided`` — docs/decisions.md §3 (E6, E7, E8, E11).

Flower fans (花牌, 春夏秋冬, 梅兰菊竹, 无花牌) do not count toward the 8-fan 起和 (E16). Detect
predicates live in ``erren_predicates`` (``p``; chow groups in ``erren_chows``) and, those duel
shares, in ``predicates`` (``shared``); a pattern its required
arrangement facts define completely uses :func:`~duelmahjong.rules.patterns.always` (e.g. 无字 =
``no_honors``; 报听 = ``declared_ready``, which a 天听 declaration sets too and 天听 then excludes).

>>> ERREN["pure_straight"].fan, sorted(ERREN["pure_straight"].excludes)
(16, ['short_straight', 'two_terminal_chows'])
>>> ERREN.minimum, ERREN.cap, ERREN.highest_fan
(8, None, 88)
"""

from __future__ import annotations

from duelmahjong.rules import erren_predicates as p
from duelmahjong.rules import predicates as shared
from duelmahjong.rules.patterns import Catalogue, row

_SEVEN_PAIRS_EXCLUDES = ("concealed_hand", "fully_concealed_hand", "single_wait")  # E6

# One row per pattern, laid out like the seed's table.
# fmt: off
ERREN = Catalogue(
    "erren",
    [
        # first-turn wins and 天听 (seed order; evaluation order is by value: E1)
        row("heavenly_hand", "天胡", fan=48, detect=shared.dealer_initial_hand, requires=["first_turn_win"],
            seed=["single_wait", "edge_wait", "closed_wait"],
            decided=["fully_concealed_hand", "self_drawn"]),  # E7
        row("earthly_hand", "地胡", fan=32, detect=shared.nondealer_first_draw, requires=["first_turn_win"],
            decided=["fully_concealed_hand", "self_drawn"]),  # E7
        row("human_hand", "人胡", fan=24, detect=shared.dealer_first_discard, requires=["first_turn_win"],
            decided=["concealed_hand"]),  # E7
        row("heavenly_ready", "天听", fan=32, detect=shared.heavenly_ready, requires=["declared_ready"],
            decided=["ready_declared"]),  # E8: 天听 replaces 报听
        # 88
        row("big_four_winds", "大四喜", fan=88, detect=shared.big_four_winds,
            requires=["four_pungs", "winds"],
            seed=["big_three_winds", "all_pungs", "terminal_honor_pung"],
            gb=["prevalent_wind", "seat_wind", "big_three_winds", "all_pungs", "terminal_honor_pung"],
            implied=["little_four_winds", "little_three_winds"]),
        row("big_three_dragons", "大三元", fan=88, detect=shared.big_three_dragons,
            requires=["three_pungs", "dragons"],
            seed=["dragon_pung", "two_dragon_pungs"], gb=["dragon_pung", "two_dragon_pungs"]),
        row("nine_gates", "九莲宝灯", fan=88, detect=shared.nine_gates,
            requires=["concealed", "no_honors"],  # E10
            seed=["full_flush", "fully_concealed_hand", "concealed_hand", "terminal_honor_pung"],
            gb=["full_flush", "concealed_hand", "terminal_honor_pung"]),
        row("four_kongs", "四杠", fan=88, detect=shared.four_kongs, requires=["four_pungs", "kong"],
            seed=["three_kongs", "two_concealed_kongs", "two_melded_kongs", "melded_kong",
                  "concealed_kong", "single_wait"],
            gb=["single_wait"], implied=["all_pungs"]),
        row("seven_shifted_pairs", "连七对", fan=88, detect=p.seven_shifted_pairs, requires=["seven_pairs"],
            seed=["full_flush", "fully_concealed_hand", "single_wait", "concealed_hand", "seven_pairs"],
            gb=["full_flush", "fully_concealed_hand", "single_wait", "concealed_hand", "seven_pairs"]),
        row("great_seven_stars", "大七星", fan=88, detect=p.great_seven_stars, requires=["seven_pairs"],
            seed=["all_honors", "fully_concealed_hand", "single_wait", "concealed_hand", "seven_pairs",
                  "four_winds_seven_pairs", "three_dragons_seven_pairs"],
            implied=["all_terminals_and_honors"]),  # E6: 字一色 may score on seven pairs
        # 64
        row("little_four_winds", "小四喜", fan=64, detect=shared.little_four_winds,
            requires=["three_pungs", "winds"],
            seed=["big_three_winds", "terminal_honor_pung"], gb=["big_three_winds", "terminal_honor_pung"],
            decided=["little_three_winds"]),  # E11
        row("little_three_dragons", "小三元", fan=64, detect=shared.little_three_dragons,
            requires=["two_pungs", "dragons"],
            seed=["dragon_pung", "two_dragon_pungs"],  # E4: its "示意图" line is the exclusion list
            gb=["dragon_pung", "two_dragon_pungs"]),
        row("all_honors", "字一色", fan=64, detect=shared.all_honors, requires=["honors"],
            seed=["all_pungs", "all_terminals_and_honors", "outside_hand", "terminal_honor_pung"],
            gb=["all_pungs", "all_terminals_and_honors", "outside_hand", "terminal_honor_pung"]),
        row("four_concealed_pungs", "四暗刻", fan=64, detect=shared.four_concealed_pungs,
            requires=["four_pungs"],
            seed=["concealed_hand", "all_pungs", "three_concealed_pungs", "two_concealed_pungs",
                  "fully_concealed_hand"],
            gb=["concealed_hand", "all_pungs", "three_concealed_pungs", "two_concealed_pungs",
                "fully_concealed_hand"]),
        row("twin_edge_sequences", "双龙会", fan=64, detect=p.twin_edge_sequences, requires=["four_chows"],
            seed=["all_chows", "seven_pairs", "full_flush", "pure_double_chow", "two_terminal_chows"],
            gb=["all_chows", "seven_pairs", "full_flush", "pure_double_chow", "two_terminal_chows"]),
        # 48
        row("quadruple_chow", "四同顺", fan=48, detect=p.quadruple_chow, requires=["four_chows"],
            seed=["pure_shifted_pungs", "pure_double_chow", "tile_hog", "pure_triple_chow", "seven_pairs"],
            gb=["pure_shifted_pungs", "pure_double_chow", "tile_hog", "pure_triple_chow", "seven_pairs"]),
        row("four_pure_shifted_pungs", "四节高", fan=48, detect=shared.four_pure_shifted_pungs,
            requires=["four_pungs"],
            seed=["pure_triple_chow", "pure_shifted_pungs", "all_pungs"],
            gb=["pure_triple_chow", "all_pungs", "pure_shifted_pungs"]),
        # 000 heads these rows 四喜七对子 / 三元七对子 (大七星's list shortens them as it does 七对子)
        row("four_winds_seven_pairs", "四喜七对子", fan=48, detect=p.four_winds_seven_pairs,
            requires=["seven_pairs"],
            decided=["seven_pairs"], implied=_SEVEN_PAIRS_EXCLUDES),  # E6
        row("three_dragons_seven_pairs", "三元七对子", fan=48, detect=p.three_dragons_seven_pairs,
            requires=["seven_pairs"], decided=["seven_pairs"], implied=_SEVEN_PAIRS_EXCLUDES),  # E6
        # 32
        row("four_pure_shifted_chows", "四步高", fan=32, detect=p.four_pure_shifted_chows,
            requires=["four_chows"],
            seed=["pure_shifted_chows"], gb=["pure_shifted_chows", "short_straight", "two_terminal_chows"]),
        row("three_kongs", "三杠", fan=32, detect=p.three_kongs, requires=["three_pungs", "kong"],  # E3
            seed=["two_melded_kongs", "two_concealed_kongs", "melded_kong", "concealed_kong"],
            gb=["two_melded_kongs", "two_concealed_kongs", "melded_kong", "concealed_kong"]),
        row("all_terminals_and_honors", "混幺九", fan=32, requires=["terminals_or_honors"],
            seed=["all_pungs", "terminal_honor_pung", "outside_hand"],
            gb=["all_pungs", "terminal_honor_pung", "outside_hand"]),
        # 24
        row("seven_pairs", "七对子", fan=24, requires=["seven_pairs"],
            gb=_SEVEN_PAIRS_EXCLUDES, decided=_SEVEN_PAIRS_EXCLUDES),  # E6
        row("full_flush", "清一色", fan=24, requires=["one_suit", "no_honors"]),  # 国标 "不计无字": E5
        row("pure_triple_chow", "三同顺", fan=24, detect=p.pure_triple_chow, requires=["three_chows"],
            seed=["pure_shifted_pungs", "pure_double_chow"],
            gb=["pure_shifted_pungs", "pure_double_chow"]),
        row("pure_shifted_pungs", "三节高", fan=24, detect=shared.pure_shifted_pungs,
            requires=["three_pungs"],
            seed=["pure_triple_chow"], gb=["pure_triple_chow"]),
        row("big_three_winds", "大三风", fan=24, detect=p.big_three_winds, requires=["three_pungs", "winds"]),
        # 16
        row("pure_straight", "清龙", fan=16, detect=p.pure_straight, requires=["three_chows"],  # E9
            seed=["short_straight", "two_terminal_chows"], gb=["short_straight", "two_terminal_chows"]),
        row("pure_shifted_chows", "三步高", fan=16, detect=p.pure_shifted_chows, requires=["three_chows"]),
        row("three_concealed_pungs", "三暗刻", fan=16, detect=p.three_concealed_pungs,
            requires=["three_pungs"],
            seed=["two_concealed_pungs"], gb=["two_concealed_pungs"]),
        # 12 — 国标 "不计无字" dropped (E5)
        row("upper_four", "大于五", fan=12, detect=p.upper_four, requires=["no_honors"]),
        row("lower_four", "小于五", fan=12, detect=p.lower_four, requires=["no_honors"]),
        # 8
        row("last_tile_draw", "妙手回春", fan=8, detect=p.last_tile_draw, requires=["last_wall_tile"],  # E2
            seed=["self_drawn"], gb=["self_drawn"]),
        row("last_tile_claim", "海底捞月", fan=8, detect=p.last_tile_claim, requires=["last_discard"]),  # E2
        row("out_with_replacement_tile", "杠上开花", fan=8, detect=p.out_with_replacement_tile,
            requires=["after_kong"], seed=["self_drawn"], gb=["self_drawn"]),
        row("robbing_the_kong", "抢杠胡", fan=8, requires=["robbing_kong"],
            seed=["last_tile"], gb=["last_tile"]),  # E13
        # 6
        row("little_three_winds", "小三风", fan=6, detect=p.little_three_winds,
            requires=["two_pungs", "winds"]),
        row("all_pungs", "碰碰胡", fan=6, detect=p.all_pungs, requires=["four_pungs"]),
        row("half_flush", "混一色", fan=6, detect=p.half_flush, requires=["honors"]),
        row("melded_hand", "全求人", fan=6, detect=p.melded_hand, requires=["open"],
            seed=["single_wait"], gb=["single_wait"]),
        row("two_concealed_kongs", "双暗杠", fan=6, detect=p.two_concealed_kongs,
            requires=["two_pungs", "kong"],
            seed=["two_concealed_pungs"], gb=["two_concealed_pungs", "concealed_kong"],
            implied=["concealed_kong"]),  # E12: no 暗杠 ×2 on top
        row("two_dragon_pungs", "双箭刻", fan=6, detect=p.two_dragon_pungs, requires=["two_pungs", "dragons"],
            seed=["dragon_pung"], gb=["dragon_pung"]),
        # 4
        row("outside_hand", "全带幺", fan=4, detect=shared.outside_hand, requires=["standard"]),
        row("fully_concealed_hand", "不求人", fan=4, detect=p.fully_concealed_hand, requires=["concealed"],
            seed=["concealed_hand", "self_drawn"], gb=["concealed_hand", "self_drawn"]),
        row("two_melded_kongs", "双明杠", fan=4, detect=p.two_melded_kongs, requires=["two_pungs", "kong"],
            seed=["melded_kong"], gb=["melded_kong"]),
        row("last_tile", "和绝张", fan=4, detect=p.last_tile),  # E13
        row("ready_first_discard", "报听一发", fan=4, detect=p.ready_first_discard,
            requires=["declared_ready", "first_turn_after_declare"]),  # E8: adds to 报听 / 天听
        row("no_flowers", "无花牌", fan=4, detect=p.no_flowers, toward_minimum=False),  # E14
        row("ready_declared", "报听", fan=4, requires=["declared_ready"]),  # E8
        row("four_plants", "梅兰菊竹", fan=4, detect=p.four_plants, requires=["flowers"],
            toward_minimum=False),  # E14
        row("four_seasons", "春夏秋冬", fan=4, detect=p.four_seasons, requires=["flowers"],
            toward_minimum=False),  # E14
        # 2 — 箭刻/圈风刻/门风刻 never also score 幺九刻: the 幺九刻 predicate leaves them out (E11)
        row("dragon_pung", "箭刻", fan=2, detect=p.dragon_pung, requires=["dragons"]),
        row("prevalent_wind", "圈风刻", fan=2, detect=p.prevalent_wind, requires=["winds"]),
        row("seat_wind", "门风刻", fan=2, detect=p.seat_wind,
            requires=["winds"]),  # E17: dealer East, other West
        row("concealed_hand", "门前清", fan=2, detect=p.concealed_hand, requires=["concealed"]),
        row("all_chows", "平和", fan=2, detect=p.all_chows, requires=["four_chows"]),  # 国标 "不计无字": E5
        row("tile_hog", "四归一", fan=2, detect=p.tile_hog),
        row("two_concealed_pungs", "双暗刻", fan=2, detect=p.two_concealed_pungs, requires=["two_pungs"]),
        row("concealed_kong", "暗杠", fan=2, detect=p.concealed_kong, requires=["kong"]),  # E12
        row("all_simples", "断幺", fan=2, requires=["simples"]),  # 国标 "不计无字": E5
        # 1
        row("pure_double_chow", "一般高", fan=1, detect=p.pure_double_chow, requires=["two_chows"]),
        row("short_straight", "连六", fan=1, detect=p.short_straight, requires=["two_chows"]),
        row("two_terminal_chows", "老少副", fan=1, detect=p.two_terminal_chows, requires=["two_chows"]),
        row("terminal_honor_pung", "幺九刻", fan=1, detect=p.terminal_honor_pung),  # E11
        row("melded_kong", "明杠", fan=1, detect=p.melded_kong, requires=["kong"]),  # E12
        # E15: only with exactly one winning kind; an arrangement has one wait, so at most one of them
        row("edge_wait", "边张", fan=1, detect=p.edge_wait, requires=["chow"]),
        row("closed_wait", "坎张", fan=1, detect=p.closed_wait, requires=["chow"]),
        row("single_wait", "单钓", fan=1, detect=p.single_wait),
        row("flower_tiles", "花牌", fan=1, detect=p.flower_tiles, requires=["flowers"],
            toward_minimum=False),  # E14
        row("self_drawn", "自摸", fan=1, detect=p.self_drawn),
        row("no_honors", "无字", fan=1, requires=["no_honors"]),  # E5: never excluded
    ],
    minimum=8,  # E16: 起和 8 fan, flowers not counted
)
# fmt: on

# Each row's exclusions by source, for a reader (and the tests) to tell where each comes from.
EXCLUSION_SOURCES: dict[str, dict[str, frozenset[str]]] = {
    pattern.id: dict(pattern.exclusion_sources) for pattern in ERREN
}
