"""Discrepancies found by reading the seeds and the decisions against the engine, one scripted test each, and
probes that malformed actions are refused with a reason and change nothing."""

from __future__ import annotations

import copy

import pytest

from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.events import Passed
from duelmahjong.engine.wall import stack_tiles

READY_DEALER = "234567m23456p33z7z"  # declares with 7z, then waits on 1p 4p 7p
FAR = "159m159p2468s2346z"
OTHER = "1111s555s9999s1z2z"


def pass_until_over(script) -> None:  # type: ignore[no-untyped-def]
    table = script.table
    while table.phase not in ("over", "closed"):
        table.apply(table.default_action(table.to_move))


def test_E8_a_claim_before_the_opponents_first_discard_keeps_the_ippatsu(duel) -> None:  # type: ignore[no-untyped-def]
    """E8 / seed 000 报听一发: '报听后，对家打出的第一张牌点炮' — the opponent's first discard after the
    declaration, even when the opponent first pongs the declaring discard."""
    duel.deal(dealer_hand=READY_DEALER, other_hand="4p77z1111s555s999s")
    duel.do("0 ready 7z")
    duel.do("1 pong 7z")
    duel.do("1 discard 4p")
    duel.do("0 win 4p")
    assert duel.context()["first_turn_after_declare"] is True


def test_E8_the_second_discard_is_no_ippatsu(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=READY_DEALER, other_hand="4p1z1111s555s999s6z", draws="2z8m")
    duel.do("0 ready 7z")
    duel.do("1 discard 2z")  # the opponent's first discard after the declaration: no win
    duel.do("1 discard 4p")  # the dealer's 8m was discarded by the table (T3); this is the second
    duel.do("0 win 4p")
    assert "first_turn_after_declare" not in duel.context()


def test_D13_robbing_an_added_kong_in_erren_is_a_win_on_the_opponents_tile(script_of) -> None:  # type: ignore[no-untyped-def]
    """D13's 'scored as a self-draw' is duel's (seed 001/002 记分按自摸计); erren's 抢杠胡 (seed 000) wins
    the opponent's tile, so the result and the description say self_drawn false."""
    erren = script_of("erren", minimum_fan=0)
    erren.deal(dealer_hand="3m12m456m789m11z555z", other_hand="33m9m22z33z44z66z77z", draws="1z3m")
    erren.do("0 discard 3m")
    erren.do("1 pong 3m")
    erren.do("1 discard 9m")
    erren.do("0 pass")  # the dealer could chow 9m
    erren.do("0 discard 1z")
    erren.do("1 added_kong 3m")
    erren.do("0 win 3m")
    win = erren.win
    assert erren.context()["robbing_kong"] is True
    assert win.self_drawn is False and win.description["self_drawn"] is False
    assert "robbing_the_kong" in erren.pattern_ids() and "self_drawn" not in erren.pattern_ids()


def test_D13_robbing_in_duel_is_still_scored_as_a_self_draw(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m12m456p789s11z77p5z", other_hand="33m1246789p1s2s3s5s", draws="7p3m")
    for text in ("0 discard 3m", "1 pong 3m", "1 discard 5s", "0 discard 5z", "1 added_kong 3m", "0 win 3m"):
        duel.do(text)
    assert duel.win.self_drawn is True


def test_T8_a_kong_instead_of_a_self_drawn_win_declines_it(script_of) -> None:  # type: ignore[no-untyped-def]
    """胡加倍 (T8): '放弃本次胡牌机会' — konging instead of winning passes the win up like a discard does."""
    erren = script_of("erren", minimum_fan=0)
    erren.deal(dealer_hand="1111m223344m5566z", other_hand="5678m1234567z", replacements="9m")
    assert {"0 self_draw_win 6z", "0 concealed_kong 1m"} <= set(erren.legal(0))
    events = erren.do("0 concealed_kong 1m")
    assert [e.kind for e in events][:2] == ["passed", "konged"]
    assert events[0] == Passed(seat=events[0].seat, declined_win=True)
    assert erren.state.win_doublings == [1, 0]


def test_T9_a_hand_ready_from_the_deal_was_ready_first(duel) -> None:  # type: ignore[no-untyped-def]
    """T9: both ready at exhaustion → the one who became ready first draws. The non-dealer's dealt hand
    (111s222s333s456s1z waits on 1z) is ready before the dealer's first discard makes the dealer ready."""
    duel.deal(dealer_hand=READY_DEALER, other_hand="111s222s333s456s1z", draws="8m")
    duel.do("0 ready 7z")
    duel.do("1 ready 8m")
    pass_until_over(duel)
    exhausted = next(e for e in duel.table.events if e.kind == "exhausted")
    assert exhausted.ready == (True, True) and exhausted.extra_seat == 1


# --- malformed actions: refused with a reason, nothing changes ------------------------------------------
def _refused(table, action: Action, match: str) -> None:  # type: ignore[no-untyped-def]
    snapshot = copy.deepcopy(vars(table.state))
    count = len(table.events)
    with pytest.raises(IllegalActionError, match=match):
        table.apply(action)
    assert vars(table.state) == snapshot and len(table.events) == count


@pytest.mark.parametrize(
    "action",
    [
        Action.parse("0 exchange [1f]"),  # a flower is never in a hand (it is set aside, 补花)
        Action(0, "exchange", tiles=(-1,)),
        Action(0, "exchange", tiles=(34,)),
        Action(0, "exchange", tile=0),  # a single tile where the choice is a list
        Action(0, "exchange", tiles=(0,), target=5),
    ],
)
def test_T4_malformed_exchanges_are_refused(duel, action: Action) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=FAR, other_hand=OTHER, exchange=False)
    _refused(duel.table, action, "exchang|tile")


@pytest.mark.parametrize(
    "action",
    [
        Action(0, "shuffle_item", tiles=(-1, 0, 4)),
        Action(0, "shuffle_item", tiles=(0, 4, 40)),
        Action(0, "swap_item", -1, target=33),
        Action(0, "swap_item", 0, target=-1),
        Action(0, "swap_item", 0, target=34),
        Action(0, "swap_item", 0, tiles=(0,), target=33),
    ],
)
def test_T6_malformed_item_uses_are_refused(duel, action: Action) -> None:  # type: ignore[no-untyped-def]
    duel.table.start_hand(
        1,
        items=({"swap_item": 1, "shuffle_item": 1}, {}),
        stacked=stack_tiles("duel", dealer_hand=FAR, other_hand=OTHER, pool="7z"),
    )
    duel.do("0 exchange")
    duel.do("1 exchange")
    _refused(duel.table, action, "偷天换日|移花接木|tile")


def test_T5_malformed_triplet_answers_are_refused(script_of) -> None:  # type: ignore[no-untyped-def]
    script = script_of("duel", triplet_offer_probability=1.0)
    script.deal(dealer_hand=FAR, other_hand=OTHER, pool="7z7z7z")
    script.do("0 discard 1m")
    for tiles in ((-1, 27, 28), (27, 28, 41)):
        _refused(script.table, Action(1, "take_triplet", tiles=tiles), "tile")


@pytest.mark.parametrize(
    "action",
    [
        Action(0, "discard", 43),  # no such tile kind: refused, not a crash while writing the reason
        Action(0, "discard", -2),
        Action(0, "discard", 0, tiles=(-1,)),
        Action(1, "pass", target=99),
        Action(0, "dance"),
        Action(2, "discard", 0),
    ],
)
def test_unreadable_actions_are_refused_with_a_reason(duel, action: Action) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=FAR, other_hand=OTHER)
    _refused(duel.table, action, "tile kinds|unknown action|no seat")


# --- rules the review confirmed, kept as scripted tests -------------------------------------------------
def test_E17_T7_round_wind_and_progressive_multiplier_over_a_pairing(duel) -> None:  # type: ignore[no-untyped-def]
    """The non-dealer wins twice: the deal passes 0 → 1 → 0, through both players, so the third hand is
    played in the South round (E17); the progressive multiplier doubles every hand (T7)."""
    started = []
    for number in range(3):
        events = duel.deal(number + 1, dealer_hand="5z159m159p159s2346z", other_hand="123m456p789s11z55z")
        started.append(events[0].for_seat(-1))
        dealer = duel.state.dealer
        duel.do(f"{dealer} discard 5z")
        duel.do(f"{1 - dealer} win 5z")  # 地和 (D10): the non-dealer wins and deals next (T1)
    assert [(s["dealer"], s["dealer_passes"], s["round_wind"]) for s in started] == [
        (0, 0, 0),
        (1, 1, 0),
        (0, 2, 1),
    ]
    assert [s["progressive"] for s in started] == [1, 2, 4]
    assert duel.table.view(1)["round_wind"] == "south"


def test_E14_a_kong_replacement_that_is_a_flower_wins_after_the_flower(script_of) -> None:  # type: ignore[no-untyped-def]
    """The kong's replacement is a flower; the win is on the flower's replacement: 补花, not 杠上开花."""
    erren = script_of("erren", minimum_fan=0)
    erren.deal(dealer_hand="1111m234m567m99m55z", other_hand="5678m1234567z", replacements="1f5z")
    events = erren.do("0 concealed_kong 1m")
    assert [(e.kind, e.for_seat(-1).get("source")) for e in events] == [
        ("konged", None),
        ("drew", "kong"),
        ("drew", "flower"),
    ]
    erren.do("0 self_draw_win 5z")
    context = erren.context()
    assert context["after_flower_replacement"] is True and "after_kong" not in context
    assert "out_with_replacement_tile" not in erren.pattern_ids()


def test_T5_an_offer_is_seen_only_by_its_seat_and_lists_kinds_not_wall_order(script_of) -> None:  # type: ignore[no-untyped-def]
    script = script_of("duel", rub_offer_probability=1.0)
    script.deal(dealer_hand=FAR, other_hand=OTHER, pool="7z")
    events = script.do("0 discard 1m")
    offered = next(e for e in events if e.kind == "offered")
    assert offered.for_seat(0) == {"kind": "offered", "seat": 1, "offer": "rub"}
    mine, theirs = script.table.view(1), script.table.view(0)
    rubs = [a.split()[2] for a in mine["legal_actions"] if " rub " in a]
    kinds = [Action.parse(f"1 rub {tile}").tile for tile in rubs]
    assert kinds == sorted(set(kinds))  # each unseen kind once, in tile order: no wall order
    assert "offer" not in theirs and not any("rub" in a for a in theirs["legal_actions"])


def test_T3_ready_hand_claims_only_the_win(duel) -> None:  # type: ignore[no-untyped-def]
    """A locked duel hand claims no kong from a discard (only erren keeps the choice to kong, T3; the
    rules library rejects a duel open meld beside 天听, which such a claim could produce)."""
    duel.deal(dealer_hand="111m234m567m99m55z7z", other_hand="1m468m112233446z", draws="2m")
    duel.do("0 ready 7z")
    events = duel.do("1 discard 1m")
    assert [e.kind for e in events][:2] == ["discarded", "drew"]  # no kong offered: the dealer drew
