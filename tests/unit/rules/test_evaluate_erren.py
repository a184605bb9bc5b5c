"""The erren hands of data/erren_hands.jsonl with their exact breakdowns (seed 000, docs/decisions.md E1–E17).

Each line: ``name``, the decision ids (docs/decisions.md) it exercises (``rules``), the ``hand``
(docs/decisions.md §7) and the exact expected output of §7 (patterns in catalogue order with
``name_zh`` and summed fan, total, capped, limit, meets_minimum) — or ``{"error": <message
substring>}``. The expectations were written by hand from the seed's table, not produced by the evaluator.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.rules.catalogue_erren import ERREN, EXCLUSION_SOURCES
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.erren_chows import chow_patterns
from duelmahjong.rules.errors import RulesError
from duelmahjong.rules.evaluate import evaluate
from duelmahjong.rules.tiles import parse_tiles

DATA = Path(__file__).parent / "data" / "erren_hands.jsonl"
CASES: list[dict[str, Any]] = [
    json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line
]

# Seed 000's table as printed (name, fan), in its order; 三杠's lost value is 32 (E3) and the unnamed
# 8-fan last-wall-tile entry is 妙手回春 (E2).
SEED_000_TABLE = """
天胡48 地胡32 人胡24 天听32 大四喜88 大三元88 九莲宝灯88 四杠88 连七对88 大七星88 小四喜64 小三元64
字一色64 四暗刻64 双龙会64 四同顺48 四节高48 四喜七对子48 三元七对子48 四步高32 三杠32 混幺九32 七对子24
清一色24 三同顺24 三节高24 大三风24 清龙16 三步高16 三暗刻16 大于五12 小于五12 妙手回春8 海底捞月8
杠上开花8 抢杠胡8 小三风6 碰碰胡6 混一色6 全求人6 双暗杠6 双箭刻6 全带幺4 不求人4 双明杠4 和绝张4
报听一发4 无花牌4 报听4 梅兰菊竹4 春夏秋冬4 箭刻2 圈风刻2 门风刻2 门前清2 平和2 四归一2 双暗刻2 暗杠2
断幺2 一般高1 连六1 老少副1 幺九刻1 明杠1 边张1 坎张1 单钓1 花牌1 自摸1 无字1
"""
FLOWER_FANS = {"flower_tiles", "four_seasons", "four_plants", "no_flowers"}


def _case_id(case: dict[str, Any]) -> str:
    return " ".join([*case["rules"], case["name"]])


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_erren_hand(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(RulesError, match=re.escape(expect["error"])):
            evaluate(HandDescription.from_json(case["hand"]))
        return
    assert evaluate(HandDescription.from_json(case["hand"])).to_json() == expect


def test_the_catalogue_is_seed_000_table() -> None:
    seed = [(name, int(fan)) for name, fan in re.findall(r"(\D+?)(\d+)", SEED_000_TABLE.replace("\n", " "))]
    assert [(p.name_zh, p.fan) for p in ERREN] == [(name.strip(), fan) for name, fan in seed]
    assert ERREN.minimum == 8 and ERREN.cap is None and ERREN.highest_fan == 88


def test_every_erren_pattern_appears_in_the_data() -> None:
    scored = {p["id"] for case in CASES for p in case["expect"].get("patterns", [])}
    assert set(ERREN.ids) - scored == set()


def test_every_erren_decision_has_a_case() -> None:
    named = {rule for case in CASES for rule in case["rules"]}
    assert {f"E{n}" for n in range(1, 18)} <= named


def test_e1_exclusions_include_the_seed_lists() -> None:
    # A few seed 不记番 lists spelled out: "三风刻" is 大三风 (E11), "门清" is 门前清.
    big_four_winds = {"big_three_winds", "all_pungs", "terminal_honor_pung"}
    assert EXCLUSION_SOURCES["big_four_winds"]["seed"] == big_four_winds
    kongs = {"three_kongs", "two_concealed_kongs", "two_melded_kongs", "melded_kong", "concealed_kong"}
    assert EXCLUSION_SOURCES["four_kongs"]["seed"] == kongs | {"single_wait"}
    assert ERREN["seven_shifted_pairs"].excludes >= {"full_flush", "concealed_hand", "seven_pairs"}
    for pattern in ERREN:
        sources = EXCLUSION_SOURCES[pattern.id]
        assert pattern.excludes == sources["seed"] | sources["gb"] | sources["implied"] | sources["decided"]


def test_e3_three_kongs_is_32() -> None:
    assert ERREN["three_kongs"].fan == 32


def test_e4_little_three_dragons_excludes_its_illustration() -> None:
    assert ERREN["little_three_dragons"].excludes == {"dragon_pung", "two_dragon_pungs"}


def test_e5_no_honors_is_never_excluded() -> None:
    assert not [p.id for p in ERREN if "no_honors" in p.excludes]


def test_e6_seven_pairs_variants_exclude_what_seven_pairs_does() -> None:
    for variant in ("four_winds_seven_pairs", "three_dragons_seven_pairs"):
        assert ERREN[variant].excludes >= ERREN["seven_pairs"].excludes | {"seven_pairs"}


def test_e11_three_wind_pungs_in_exclusion_lists_mean_big_three_winds() -> None:
    assert "big_three_winds" in ERREN["big_four_winds"].excludes
    assert {"big_three_winds", "little_three_winds"} <= ERREN["little_four_winds"].excludes


def test_e16_flower_fans_do_not_count_toward_the_minimum() -> None:
    assert {p.id for p in ERREN if not p.counts_toward_minimum} == FLOWER_FANS


WAIT_FANS = {"edge_wait", "closed_wait", "single_wait"}


@pytest.mark.parametrize(
    ("concealed", "pongs", "win", "expected"),
    [
        # Both winning kinds count though the hand holds every 8m (pung and chow) or every 2m.
        ("5566778m555z", "888m", "5m", set()),
        ("1222233445556m", "", "5m", set()),
        ("2222344556m444z", "", "5m", set()),
        # One winning kind by shape: the wait fans stay, even on the last copy of the kind (和绝张).
        ("12346789m11z", "555m", "5m", {"closed_wait"}),
        ("567m2z555z", "999m 111z", "2z", {"single_wait"}),
    ],
)
def test_E15_wait_fans_judge_the_winning_kinds_by_shape(
    concealed: str, pongs: str, win: str, expected: set[str]
) -> None:
    melds = [{"kind": "pong", "tiles": pong} for pong in pongs.split()]
    hand = {"profile": "erren", "concealed": concealed, "melds": melds, "win_tile": win, "self_drawn": False}
    result = evaluate(HandDescription.from_json(hand))
    assert {p.id for p in result.patterns} & WAIT_FANS == expected


@pytest.mark.parametrize(
    ("chows", "expected"),
    [
        ("123m 456m 789m", {"pure_straight": 1}),  # E9: its own chows pair no more
        ("123m 456m 789m 789m", {"pure_straight": 1, "pure_double_chow": 1}),
        ("123m 123m 123m 456m", {"pure_triple_chow": 1, "short_straight": 1}),
        ("123m 123m 456m 456m", {"pure_double_chow": 2, "short_straight": 1}),  # at most n - 1 pairs
        ("234m 234m 567m 678m", {"pure_double_chow": 1, "short_straight": 1}),  # 678 links nothing
        ("123m 345m 567m 789m", {"four_pure_shifted_chows": 1}),
        ("123m 123m 789m 789m", {"pure_double_chow": 2, "two_terminal_chows": 1}),
        ("123m 567m", {}),
    ],
)
def test_e1_chow_groups_count_once(chows: str, expected: dict[str, int]) -> None:
    lows = tuple(sorted(parse_tiles(chow)[0] for chow in chows.split()))
    assert chow_patterns(lows) == expected


def test_the_erren_table_in_docs_is_the_catalogue() -> None:
    docs = Path(__file__).resolve().parents[3] / "docs" / "rules.md"
    rows = re.findall(
        r"^\| (\S+) \| `([a-z_]+)` \| (\d+)( \(flower\))? \| (.*) \|$", docs.read_text("utf-8"), re.M
    )
    documented = {
        pattern_id: (name, int(fan), not flower, sorted(re.findall(r"`([a-z_]+)`", excludes)))
        for name, pattern_id, fan, flower, excludes in rows
    }
    assert documented == {
        p.id: (p.name_zh, p.fan, p.counts_toward_minimum, sorted(p.excludes)) for p in ERREN
    }
