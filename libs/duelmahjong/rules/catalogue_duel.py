"""The duel (决斗麻将) fan catalogue: seeds 001/002 with the decisions D1–D13 of docs/decisions.md §4.

Values are seed 002's (it wins over 001 where they differ, docs/decisions.md §1). Patterns are additive
("以下牌型可重复计算…按照加法算番"); the only exclusions are the replacements of D2/D3 (``decided``).
Limit hands (役满) score their tier, 13/32/64, and hide every non-limit pattern (D9). Rows have the
shape of :func:`~duelmahjong.rules.patterns.row`; predicates are in ``duel_predicates`` (``p``) and,
those erren shares, in ``predicates`` (``shared``).

>>> len(DUEL), DUEL.cap, DUEL.highest_fan
(46, 13, 64)
"""

from __future__ import annotations

from duelmahjong.rules import duel_predicates as p
from duelmahjong.rules import predicates as shared
from duelmahjong.rules.patterns import Catalogue, row

# One row per pattern, in the order of docs/decisions.md §2.
# fmt: off
DUEL = Catalogue(
    "duel",
    [
        # Non-limit patterns, additive (002 "以下牌型可重复计算").
        row("basic_win", "推倒胡", fan=1),  # the catalogue's fallback: scored only when nothing else is
        row("concealed_hand", "门清", fan=1, requires=["concealed"]),  # a concealed kong keeps it concealed
        # D7: 报听 on an open hand is allowed but scores nothing; 天听 replaces 门清报听 (D3).
        row("concealed_ready", "门清报听", fan=1, requires=["concealed", "declared_ready"]),
        row("heavenly_ready", "天听", fan=2, detect=shared.heavenly_ready, requires=["declared_ready"],
            decided=["concealed_ready"]),
        row("all_chows", "平和", fan=1, detect=p.all_chows, requires=["standard", "concealed", "four_chows"]),
        row("all_simples", "断幺九", fan=1, requires=["simples"]),  # D6: may be open
        row("concealed_self_draw", "门清自摸", fan=1, requires=["concealed", "self_drawn"]),
        row("bonus_tiles", "花牌", fan=1, detect=p.bonus_tiles, requires=["bonus_tiles"]),
        row("pure_double_chow", "一杯口", fan=2, detect=p.pure_double_chow,
            requires=["standard", "concealed", "two_chows"]),
        row("twice_pure_double_chow", "两杯口", fan=4, detect=p.twice_pure_double_chow,
            requires=["standard", "concealed", "four_chows"], decided=["pure_double_chow"]),
        row("seven_pairs", "七对子", fan=3, requires=["seven_pairs"]),
        # D2: the winning tile must complete the four identical tiles; 龙七对 replaces 七对子.
        row("dragon_seven_pairs", "龙七对", fan=6, detect=p.dragon_seven_pairs, requires=["seven_pairs"],
            decided=["seven_pairs"]),
        row("all_pungs", "碰碰胡", fan=2, requires=["standard", "four_pungs"]),
        row("mixed_triple_chow", "三色同顺", fan=2, detect=p.mixed_triple_chow, requires=["three_chows"]),
        # D13: a pung completed by a discard is not concealed.
        row("three_concealed_pungs", "三暗刻", fan=2, detect=p.three_concealed_pungs,
            requires=["three_pungs"]),
        row("pure_shifted_pungs", "三连刻", fan=3, detect=shared.pure_shifted_pungs,
            requires=["three_pungs"]),
        row("triple_pung", "三色同刻", fan=3, detect=p.triple_pung, requires=["three_pungs"]),
        # D4: both need at least one chow; D3: 纯全带幺 replaces 混全带幺.
        row("outside_hand", "混全带幺", fan=3, detect=shared.outside_hand,
            requires=["standard", "honors", "chow"]),
        row("pure_outside_hand", "纯全带幺", fan=4, detect=shared.outside_hand,
            requires=["standard", "no_honors", "chow"], decided=["outside_hand"]),
        # 碰碰胡 form of terminals and honours, both present.
        row("all_terminals_and_honors", "混老头", fan=2, detect=shared.any_suited,
            requires=["standard", "four_pungs", "terminals_or_honors", "honors"]),
        row("half_flush", "混一色", fan=3, detect=shared.any_suited, requires=["one_suit", "honors"]),
        row("full_flush", "清一色", fan=5, requires=["one_suit", "no_honors"], decided=["half_flush"]),  # D3
        row("little_three_dragons", "小三元", fan=4, detect=shared.little_three_dragons,
            requires=["standard", "dragons", "two_pungs"]),
        row("pure_straight", "一气通贯", fan=2, detect=p.pure_straight, requires=["three_chows"]),
        row("out_on_replacement_tile", "杠上开花", fan=2, detect=p.drew_the_tile,
            requires=["after_kong", "self_drawn"]),
        # D8: 河底捞月 = self-draw of the last of the 71 tiles; 河底捞鱼 = the opponent's last discard;
        # 海底捞月 = a win in the extra-draw phase (T9).
        row("win_on_last_wall_tile", "河底捞月", fan=1, detect=p.drew_the_tile,
            requires=["last_wall_tile", "self_drawn"]),
        row("win_on_last_discard", "河底捞鱼", fan=1, detect=p.claimed_the_discard,
            requires=["last_discard", "discard"]),
        row("win_on_extra_draw", "海底捞月", fan=1, requires=["extra_draw_after_exhaustion"]),
        # Limit hands (役满), 002's tiers. 13:
        row("little_four_winds", "小四喜", limit=13, detect=shared.little_four_winds,
            requires=["standard", "winds", "three_pungs"]),
        # D10: 地和 = the non-dealer wins on the dealer's first discard; 人和 = the non-dealer
        # self-draws on the first draw.
        row("earthly_hand", "地和", limit=13, detect=shared.dealer_first_discard,
            requires=["first_turn_win"]),
        row("human_hand", "人和", limit=13, detect=shared.nondealer_first_draw, requires=["first_turn_win"]),
        row("four_concealed_pungs", "四暗刻", limit=13, detect=shared.four_concealed_pungs,
            requires=["four_pungs"]),
        # 32:
        row("heavenly_hand", "天和", limit=32, detect=shared.dealer_initial_hand,
            requires=["first_turn_win"]),
        row("big_wheels", "大车轮", limit=32, requires=["seven_pairs", "one_suit", "simples"]),  # D12
        row("million_stones", "百万石", limit=32, detect=p.million_stones,
            requires=["one_suit", "no_honors"]),
        row("four_shifted_pungs", "四连刻", limit=32, detect=shared.four_pure_shifted_pungs,
            requires=["four_pungs"]),
        # D12: 字一色 and 清老头 need the 碰碰胡 form.
        row("all_honors", "字一色", limit=32, detect=shared.all_honors,
            requires=["standard", "four_pungs", "honors"]),
        row("big_three_dragons", "大三元", limit=32, detect=shared.big_three_dragons,
            requires=["three_pungs", "dragons"]),
        row("all_terminals", "清老头", limit=32,
            requires=["standard", "four_pungs", "terminals_or_honors", "no_honors"]),
        # 64:
        row("four_kongs", "四杠子", limit=64, detect=shared.four_kongs, requires=["kong", "four_pungs"]),
        row("all_green", "绿一色", limit=64, detect=p.all_green, requires=["one_suit"]),  # any shape
        row("red_peacock", "红孔雀", limit=64, detect=p.red_peacock,
            requires=["standard", "four_pungs", "one_suit"]),
        row("big_four_winds", "大四喜", limit=64, detect=shared.big_four_winds,
            requires=["four_pungs", "winds"]),
        row("nine_gates", "九莲宝灯", limit=64, detect=shared.nine_gates,
            requires=["concealed", "one_suit", "no_honors"]),
        row("thirteen_orphans", "国士无双", limit=64, requires=["thirteen_orphans"]),
        row("northeast_express", "东北新干线", limit=64, detect=p.northeast_express,
            requires=["standard", "three_chows", "winds"]),
    ],
    cap=13,  # D9: non-limit totals are capped at 13
    minimum=1,  # no 起和 in the duel seeds: every win scores at least 推倒胡
    limit_rule=True,  # D9
    fallback="basic_win",
    fallback_ignores=("bonus_tiles",),  # D1: a hand whose only pattern is 花牌 still scores 推倒胡
)
# fmt: on
