"""The evaluation framework and the duel catalogue: descriptions, arrangements, E1/D9 mechanics, properties.

Exact breakdowns of whole hands live in data/duel_hands.jsonl (test_evaluate_duel_data.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.rules.arrangement import arrangements
from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.description import Context, HandDescription
from duelmahjong.rules.errors import InvalidHandError, NotationError, UnknownProfileError
from duelmahjong.rules.evaluate import evaluate, evaluate_with_arrangement
from duelmahjong.rules.facts import FACT_NAMES
from duelmahjong.rules.patterns import Catalogue, CatalogueError, Pattern
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.tiles import EAST, NORTH, format_tiles

# docs/decisions.md §2, duel, in order.
DUEL_IDS = """basic_win concealed_hand concealed_ready heavenly_ready all_chows all_simples
concealed_self_draw
bonus_tiles pure_double_chow twice_pure_double_chow seven_pairs dragon_seven_pairs all_pungs mixed_triple_chow
three_concealed_pungs pure_shifted_pungs triple_pung outside_hand pure_outside_hand all_terminals_and_honors
half_flush full_flush little_three_dragons pure_straight out_on_replacement_tile win_on_last_wall_tile
win_on_last_discard win_on_extra_draw little_four_winds earthly_hand human_hand four_concealed_pungs
heavenly_hand big_wheels million_stones four_shifted_pungs all_honors big_three_dragons all_terminals
four_kongs all_green red_peacock big_four_winds nine_gates thirteen_orphans northeast_express""".split()


def hand(
    concealed: str, win: str, *, melds: tuple[tuple[str, str], ...] = (), **extra: Any
) -> HandDescription:
    data: dict[str, Any] = {"profile": extra.pop("profile", "duel"), "concealed": concealed, "win_tile": win}
    data["melds"] = [{"kind": kind, "tiles": tiles} for kind, tiles in melds]
    data["self_drawn"] = extra.pop("self_drawn", False)
    if extra:
        data["context"] = extra
    return HandDescription.from_json(data)


def breakdown(desc: HandDescription) -> dict[str, int]:
    return {p.id: p.fan for p in evaluate(desc).patterns}


# --- the catalogue -------------------------------------------------------------------------------------
def test_duel_catalogue_has_exactly_the_rules_ids_in_order() -> None:
    assert list(DUEL.ids) == DUEL_IDS


def test_duel_values_are_seed_002s() -> None:
    values = {p.id: p.value for p in DUEL}
    assert values["twice_pure_double_chow"] == 4 and values["dragon_seven_pairs"] == 6
    assert values["full_flush"] == 5 and values["little_three_dragons"] == 4 and values["heavenly_ready"] == 2
    tiers = {tier: sorted(p.id for p in DUEL if p.limit_tier == tier) for tier in (13, 32, 64)}
    assert tiers[13] == ["earthly_hand", "four_concealed_pungs", "human_hand", "little_four_winds"]
    assert len(tiers[32]) == 7 and len(tiers[64]) == 7
    assert DUEL.highest_fan == 64 and get_profile("duel").escape_fan == 64


def test_d3_replacements_are_the_only_duel_exclusions() -> None:
    exclusions = {p.id: set(p.excludes) for p in DUEL if p.excludes}
    assert exclusions == {
        "heavenly_ready": {"concealed_ready"},
        "twice_pure_double_chow": {"pure_double_chow"},
        "dragon_seven_pairs": {"seven_pairs"},
        "pure_outside_hand": {"outside_hand"},
        "full_flush": {"half_flush"},
    }


def test_catalogue_rejects_contradictions() -> None:
    row = Pattern(id="a", name_zh="甲", fan=1, detect=lambda a: 1)
    with pytest.raises(CatalogueError, match="appears twice"):
        Catalogue("toy", [row, row])
    with pytest.raises(CatalogueError, match="unknown ids"):
        Catalogue(
            "toy", [Pattern(id="a", name_zh="甲", fan=1, detect=lambda a: 1, excludes=frozenset({"b"}))]
        )
    with pytest.raises(CatalogueError, match="unknown facts"):
        Catalogue(
            "toy", [Pattern(id="a", name_zh="甲", fan=1, detect=lambda a: 1, requires=frozenset({"x"}))]
        )


# --- generic evaluation mechanics (what the erren catalogue relies on) -----------------------------------
def _toy(*rows: Pattern, **options: Any) -> Catalogue:
    return Catalogue("duel", rows, **options)


def test_e1_excluded_pattern_excludes_nothing() -> None:
    # big (8) excludes mid (4); mid would exclude small (2) but is itself excluded, so small scores.
    big = Pattern(id="big", name_zh="大", fan=8, detect=lambda a: 1, excludes=frozenset({"mid"}))
    mid = Pattern(id="mid", name_zh="中", fan=4, detect=lambda a: 1, excludes=frozenset({"small"}))
    small = Pattern(id="small", name_zh="小", fan=2, detect=lambda a: 1)
    result = evaluate(hand("234567m234p678s5z", "5z"), _toy(small, mid, big))
    assert [(p.id, p.fan) for p in result.patterns] == [("small", 2), ("big", 8)]  # catalogue order
    assert result.total_fan == 10


def test_repeated_pattern_is_one_row_with_summed_fan_and_minimum_excludes_flagged_rows() -> None:
    twice = Pattern(id="twice", name_zh="二", fan=3, detect=lambda a: 2)
    flower = Pattern(id="flower", name_zh="花", fan=1, detect=lambda a: 3, counts_toward_minimum=False)
    catalogue = _toy(twice, flower, minimum=8)
    result = evaluate(hand("234567m234p678s5z", "5z"), catalogue)
    assert [(p.id, p.fan) for p in result.patterns] == [("twice", 6), ("flower", 3)]
    assert result.total_fan == 9 and not result.meets_minimum  # 6 toward the minimum of 8 (E16)


def test_best_arrangement_is_chosen_by_total() -> None:
    # 111222333m: three pungs (三暗刻 2 + 三连刻 3) beats three identical chows (一杯口 2).
    result, arrangement = evaluate_with_arrangement(hand("111222333m456p7z", "7z"))
    assert arrangement.pungs_and_kongs == (0, 1, 2)
    assert result == evaluate(hand("111222333m456p7z", "7z"))


def test_d9_limit_hides_non_limit_patterns_and_total_is_highest_tier() -> None:
    result = evaluate(hand("111222333444z5z", "5z", self_drawn=True, revealed_bonus_tiles=["5z"]))
    assert result.limit and not result.capped
    assert {p.id for p in result.patterns} == {"big_four_winds", "all_honors", "four_concealed_pungs"}
    assert result.total_fan == 64
    assert result.to_json()["total_fan"] == 64


def test_d9_cap_is_13() -> None:
    result = evaluate(
        hand("12345678923m55m", "4m", self_drawn=True, declared_ready=True, revealed_bonus_tiles=["5m", "9m"])
    )
    assert (result.total_fan, result.capped, result.limit) == (13, True, False)
    assert sum(p.fan for p in result.patterns) == 15


def test_d1_bonus_tiles_count_the_winning_tile_and_every_revealed_copy() -> None:
    fans = breakdown(
        hand("234567m234p5z", "5z", melds=(("pong", "777s"),), revealed_bonus_tiles=["5z", "5z"])
    )
    assert fans == {"basic_win": 1, "bonus_tiles": 4}


def test_d13_robbing_a_kong_is_scored_as_a_self_draw() -> None:
    # The robbed 5m is the fourth copy (the opponent's pong holds the other three): a closed wait.
    robbed = breakdown(hand("46m567p234s678s55z", "5m", robbing_kong=True))
    assert robbed == {"concealed_hand": 1, "concealed_self_draw": 1}


def test_d8_last_tile_patterns_need_the_right_kind_of_win() -> None:
    open_hand = {"melds": (("pong", "777s"),)}
    assert breakdown(hand("234567m234p5z", "5z", last_wall_tile=True, **open_hand)) == {"basic_win": 1}
    assert breakdown(hand("234567m234p5z", "5z", self_drawn=True, last_discard=True, **open_hand)) == {
        "basic_win": 1
    }
    assert breakdown(hand("234567m234p5z", "5z", after_kong=True, **open_hand)) == {"basic_win": 1}


def test_d10_first_turn_events_name_the_event_not_the_pattern() -> None:
    # (event, self-drawn, dealer) -> pattern: 天和 the dealer's deal, 人和 the non-dealer's first
    # draw, 地和 the dealer's first discard.
    events = {
        ("dealer_initial_hand", True, True): "heavenly_hand",
        ("nondealer_first_draw", True, False): "human_hand",
        ("dealer_first_discard", False, False): "earthly_hand",
    }
    for (event, self_drawn, dealer), pattern in events.items():
        desc = hand("234567m234p678s5z", "5z", first_turn_win=event, self_drawn=self_drawn, dealer=dealer)
        assert set(breakdown(desc)) == {pattern}


@pytest.mark.parametrize(
    ("event", "self_drawn", "dealer", "message"),
    [
        ("nondealer_first_draw", False, False, "is a self-drawn win; self_drawn must be true"),
        ("dealer_initial_hand", True, False, "is the dealer's win; context.dealer must be true"),
        ("dealer_first_discard", True, False, "is a win on a discard; self_drawn must be false"),
        ("dealer_first_discard", False, True, "is the non-dealer's win; context.dealer must be false"),
        ("dealer_first_discard", False, False, "cannot be a robbed kong"),
    ],
)
def test_d10_a_first_turn_event_the_hand_contradicts_is_an_error(
    event: str, self_drawn: bool, dealer: bool, message: str
) -> None:
    robbing = {"robbing_kong": True} if "robbed" in message else {}
    with pytest.raises(InvalidHandError, match=message):
        hand(
            "46m567p234s678s55z", "5m", first_turn_win=event, self_drawn=self_drawn, dealer=dealer, **robbing
        )


def test_d12_northeast_express_is_east_with_north_or_north_with_east_only() -> None:
    straight = "456p789p"
    assert "northeast_express" in breakdown(
        hand(straight + "4z", "4z", melds=(("chi", "123p"), ("pong", "111z")))
    )
    assert "northeast_express" not in breakdown(
        hand(straight + "4z", "4z", melds=(("chi", "123p"), ("pong", "222z")))
    )


# --- descriptions -------------------------------------------------------------------------------------
def test_description_round_trips_and_is_canonical() -> None:
    desc = hand(
        "5z 234p 765m 432m",
        "5z",
        melds=(("exposed_kong", "9999p"),),
        self_drawn=True,
        seat_wind="north",
        round_wind="east",
        revealed_bonus_tiles="9p1z",
        after_kong=True,
    )
    data = desc.to_json()
    assert data["concealed"] == "234567m234p5z"
    assert data["context"] == {
        "seat_wind": "north",
        "round_wind": "east",
        "revealed_bonus_tiles": ["9p", "1z"],
        "after_kong": True,
    }
    assert HandDescription.from_json(data) == desc
    assert desc.context.seat_wind_tile == NORTH and desc.context.round_wind_tile == EAST


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        ({"concealed": "234567m234p678s"}, InvalidHandError, "must make 13 tiles, got 12"),
        ({"concealed": "234567m234p678s5q"}, NotationError, "unexpected character 'q'"),
        (
            {"melds": [{"kind": "pong", "tiles": "123m"}], "concealed": "234567m234p5z"},
            InvalidHandError,
            "pong",
        ),
        (
            {"melds": [{"kind": "kong", "tiles": "1111m"}], "concealed": "234567m234p5z"},
            InvalidHandError,
            "kind",
        ),
        ({"context": {"seat_wind": "up"}}, InvalidHandError, "seat_wind must be one of east"),
        ({"context": {"declared_ready": "yes"}}, InvalidHandError, "declared_ready must be true or false"),
        ({"context": {"first_turn_win": "tenhou"}}, InvalidHandError, "first_turn_win must be one of"),
        ({"context": {"revealed_bonus_tiles": ["1f"]}}, InvalidHandError, "must not be a flower"),
        ({"context": {"revealed_bonus_tiles": "12345m"}}, InvalidHandError, "at most 4"),
        ({"win_tile": "1f"}, InvalidHandError, "flower 1f cannot be part of a hand"),
        ({"profile": "riichi"}, UnknownProfileError, "unknown profile"),
        ({"profile": "erren"}, InvalidHandError, "not in the erren tile set"),
        ({"extra": 1}, InvalidHandError, "unknown key"),
        (
            {"melds": [{"kind": "pong", "tiles": ["7s"]}], "concealed": "234567m234p5z"},
            InvalidHandError,
            r"^melds\[0\]\.tiles must be tile notation",  # said once, not "melds[0]: melds[0].tiles"
        ),
        ({"context": {"first_turn_win": "dealer_initial_hand"}}, InvalidHandError, "self-drawn win"),
        ({"context": {"robbing_kong": True}}, InvalidHandError, "holds no other copy of 5z"),
    ],
)
def test_description_errors_say_what_is_wrong(
    data: dict[str, Any], error: type[Exception], message: str
) -> None:
    base = {"profile": "duel", "concealed": "234567m234p678s5z", "win_tile": "5z"}
    with pytest.raises(error, match=message):
        HandDescription.from_json({**base, **data})


def test_erren_descriptions_take_flowers_but_not_bonus_tiles() -> None:
    erren = {"profile": "erren", "concealed": "2345678m111222z", "win_tile": "5z"}
    desc = HandDescription.from_json({**erren, "context": {"flowers": ["2f", "1f"]}})
    assert desc.context.flowers == (34, 35)
    with pytest.raises(InvalidHandError, match="no revealed bonus tiles"):
        HandDescription.from_json({**erren, "context": {"revealed_bonus_tiles": ["1m"]}})
    with pytest.raises(InvalidHandError, match="a flower twice"):
        HandDescription.from_json({**erren, "context": {"flowers": "11f"}})


def test_context_defaults_are_false_and_none() -> None:
    assert Context() == Context.from_json({}) == Context.from_json(None)
    assert Context().to_json() == {}


# --- arrangements ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("concealed", "win", "waits"),
    [
        ("12m567m234p678s55p", "3m", {"edge"}),
        ("89m345m234p678s55p", "7m", {"edge"}),
        ("89m567m234p678s55p", "7m", {"edge", "two_sided"}),  # 789m or 567m
        ("24m567m234p678s55p", "3m", {"closed"}),
        ("23m567m234p678s55p", "1m", {"two_sided"}),
        ("23m567m234p678s55p", "4m", {"two_sided"}),
        ("234567m234p678s5z", "5z", {"single"}),
        ("234567m234p55s11z", "1z", {"pung"}),
        ("11123m456p789s55z", "1m", {"pung", "two_sided"}),
    ],
)
def test_waits_are_what_the_winning_tile_completed(concealed: str, win: str, waits: set[str]) -> None:
    assert {arr.wait for arr in arrangements(hand(concealed, win))} == waits


def test_d13_discard_completed_pung_is_not_concealed_but_a_self_drawn_one_is() -> None:
    on_discard = arrangements(hand("234567m234p55s11z", "1z"))
    assert [arr.concealed_pung_count for arr in on_discard] == [0]
    drawn = arrangements(hand("234567m234p55s11z", "1z", self_drawn=True))
    assert [arr.concealed_pung_count for arr in drawn] == [1]


def test_seven_pairs_reading_lists_four_identical_tiles_as_two_pairs() -> None:
    (arr,) = [a for a in arrangements(hand("111m33p5599s1122z", "1m")) if a.form == "seven_pairs"]
    assert format_tiles(arr.pairs) == "11m3p59s12z"


def test_free_form_is_only_for_all_green_duel_hands() -> None:
    (arr,) = arrangements(hand("22234466888s66z", "6z"))
    assert arr.form == "free" and arr.has("free") and not arr.has("standard")
    with pytest.raises(InvalidHandError, match="not a winning hand"):
        evaluate(hand("22234466888s77z", "7z"))  # 中 is not green


def test_facts_cover_what_patterns_require() -> None:
    required = {fact for pattern in DUEL for fact in pattern.requires}
    assert required <= set(FACT_NAMES)


def test_the_duel_table_in_docs_is_the_catalogue() -> None:
    docs = Path(__file__).resolve().parents[3] / "docs" / "rules.md"
    rows = re.findall(
        r"^\| `([a-z_]+)` \| (\S+) \| (limit )?(\d+) \| (.*) \|$", docs.read_text("utf-8"), re.M
    )
    documented = {
        pattern_id: (name, int(value), bool(limit), sorted(re.findall(r"`([a-z_]+)`", excludes)))
        for pattern_id, name, limit, value, excludes in rows
    }
    assert documented == {
        p.id: (p.name_zh, p.value, p.limit_tier is not None, sorted(p.excludes)) for p in DUEL
    }


def test_d9_between_limit_readings_the_one_listing_more_limit_hands_is_shown() -> None:
    # 111222333444m reads as four pungs (first) or with chows; "b" only holds in the chow readings.
    a = Pattern(id="a", name_zh="甲", fan=32, limit_tier=32, detect=lambda arr: 1)
    b = Pattern(id="b", name_zh="乙", fan=13, limit_tier=13, detect=lambda arr: 1 if arr.chows else 0)
    result = evaluate(hand("111222333444m5z", "5z", self_drawn=True), _toy(a, b, limit_rule=True))
    assert [(p.id, p.fan) for p in result.patterns] == [("a", 32), ("b", 13)]
    assert result.total_fan == 32 and result.limit


def test_pattern_occurrences_apply_the_required_facts() -> None:
    (concealed,) = arrangements(hand("234567m234p678s5z", "5z"))
    (open_hand,) = arrangements(hand("234567m234p5z", "5z", melds=(("pong", "777s"),)))
    assert DUEL["concealed_hand"].occurrences(concealed) == 1
    assert DUEL["concealed_hand"].occurrences(open_hand) == 0
    assert DUEL["bonus_tiles"].occurrences(concealed) == 0


def test_context_built_in_code_is_checked_too() -> None:
    with pytest.raises(InvalidHandError, match="round_wind must be one of"):
        Context(round_wind="up")
    with pytest.raises(InvalidHandError, match="first_turn_win must be one of"):
        Context(first_turn_win="heavenly_hand")
