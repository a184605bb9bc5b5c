"""More rules with stacked walls: 补花 wins (E14), erren kongs while ready (T3: with the drawn tile or
the opponent's discard), who draws extra when
both are ready (T9), revealed bonus tiles in the description (D1), task completion (T8)."""

from __future__ import annotations

from typing import Any

from duelmahjong.rules.tiles import parse_tiles

READY_DEALER = "234567m23456p33z7z"  # declares with 7z, then waits on 1p 4p 7p
READY_OTHER = "111s222s333s456s1z"  # ready on 1z from the deal


def pass_until_over(script: Any) -> None:
    """Decline every win and play the default (T11) until the hand is over."""
    table = script.table
    while table.phase not in ("over", "closed"):
        seat = table.to_move
        table.apply(table.default_action(seat))


def test_E14_win_on_a_flower_replacement_is_a_self_draw(script_of) -> None:  # type: ignore[no-untyped-def]
    erren = script_of("erren", minimum_fan=0)
    erren.deal(dealer_hand="7z1234567m223346z", other_hand="123456789m11z55z", draws="1f", replacements="5z")
    events = erren.do("0 discard 7z")
    assert [e.kind for e in events] == ["discarded", "drew", "drew"]
    assert events[1].for_seat(0) == {"kind": "drew", "seat": 1, "source": "wall", "tile": "1f"}  # shown
    assert erren.legal(1)[0] == "1 self_draw_win 5z"
    erren.do("1 self_draw_win 5z")
    context = erren.context()
    assert context["after_flower_replacement"] is True and context["flowers"] == ["1f"]
    assert erren.win.self_drawn is True and "after_kong" not in context


def test_T3_erren_ready_hand_may_still_kong(script_of) -> None:  # type: ignore[no-untyped-def]
    erren = script_of("erren", minimum_fan=0)
    erren.deal(dealer_hand="111m234m567m99m55z7z", other_hand="2468m112233446z", draws="8m1m")
    erren.do("0 ready 7z")
    erren.do("1 discard 8m")
    assert set(erren.legal(0)) == {"0 concealed_kong 1m", "0 discard 1m"}
    events = erren.do("0 concealed_kong 1m")
    assert [e.kind for e in events][:2] == ["konged", "drew"]


# T3 (erren): seat 1 declares 天听 on its first draw, waiting on 5z alone; its 111z stays a kong chance.
KONG_DEALER = "2m3m4m6m7m8m1z2z2z3z3z4z6z7z"
KONG_OTHER = "123m456m789m111z5z"


def _ready_and_offered_1z(erren, **stacked: Any) -> None:  # type: ignore[no-untyped-def]
    erren.deal(dealer_hand=KONG_DEALER, other_hand=KONG_OTHER, draws="7z6z9m", **stacked)
    erren.do("0 discard 6z")
    erren.do("1 ready 7z")
    erren.do("0 discard 1z")


def test_T3_erren_exposed_kong_offered_after_ready_when_it_keeps_the_waits(erren) -> None:  # type: ignore[no-untyped-def]
    _ready_and_offered_1z(erren, replacements="5z")
    assert erren.state.ready == [False, True] and erren.state.ready_first_turn[1]
    assert erren.table.to_move == 1 and erren.legal(1) == ["1 kong 1z", "1 pass"]
    assert str(erren.table.default_action(1)) == "1 pass"  # T11: a timeout declines the kong
    events = erren.do("1 kong 1z")
    assert [e.kind for e in events] == ["claimed", "drew"]
    assert erren.legal(1) == ["1 self_draw_win 5z", "1 discard 5z"]  # still locked: win or the drawn tile
    erren.do("1 self_draw_win 5z")
    ids = erren.pattern_ids()
    # 天听 beside the exposed kong claimed after it is a valid description (T3, E8).
    assert erren.context()["declared_first_turn"] is True
    assert {"heavenly_ready", "out_with_replacement_tile", "melded_kong", "single_wait"} <= set(ids)


def test_T3_erren_declining_the_exposed_kong_keeps_the_auto_play(erren) -> None:  # type: ignore[no-untyped-def]
    _ready_and_offered_1z(erren)
    events = erren.do("1 pass")
    # The ready seat draws its turn and the table discards the drawn tile for it (T3 auto-play).
    assert [(e.kind, e.seat) for e in events][:3] == [("passed", 1), ("drew", 1), ("discarded", 1)]
    assert events[2].tile == parse_tiles("9m")[0]  # the drawn tile, discarded for the seat
    assert erren.state.ready[1] and erren.state.melds[1] == []


def test_T3_erren_no_exposed_kong_after_ready_when_it_changes_the_waits(erren) -> None:  # type: ignore[no-untyped-def]
    # 1112m waits on 2m and 3m; konging 1m would leave 2m alone, so only the draw follows.
    erren.deal(dealer_hand="1m3m4m6m7m8m1z2z2z3z3z4z6z7z", other_hand="1112m456m789m555z", draws="7z6z")
    erren.do("0 discard 6z")
    erren.do("1 ready 7z")
    events = erren.do("0 discard 1m")
    assert [e.kind for e in events][:2] == ["discarded", "drew"] and events[1].seat == 1


def test_T9_both_ready_the_first_ready_draws_extra(duel) -> None:  # type: ignore[no-untyped-def]
    # Seat 1 is not ready from the deal (a hand ready from the deal was ready first: test_rule_review).
    duel.deal(dealer_hand=READY_DEALER, other_hand="111s222s333s4s6s1z2z", draws="1z")
    duel.do("0 ready 7z")
    duel.do("1 ready 2z")
    pass_until_over(duel)
    exhausted = next(e for e in duel.table.events if e.kind == "exhausted")
    assert exhausted.ready == (True, True) and exhausted.extra_seat == 0


def test_T9_both_ready_order_is_who_became_ready_first(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="234567m2356p9s33z7z", other_hand=READY_OTHER, draws="8m4p")
    duel.do("0 discard 7z")  # not ready yet
    duel.do("1 ready 8m")  # seat 1 is ready first
    duel.do("0 pass")  # the dealer could chow 8m
    duel.do("0 ready 9s")  # the dealer drew 4p and is ready now
    pass_until_over(duel)
    exhausted = next(e for e in duel.table.events if e.kind == "exhausted")
    assert exhausted.extra_seat == 1


def test_D1_revealed_bonus_tiles_reach_the_description(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="123m456p789m11122z", other_hand="1111s555s9999s3z4z", bonus="2z6z")
    duel.do("0 self_draw_win 2z")
    assert duel.context()["revealed_bonus_tiles"] == ["2z", "6z"]


def test_T8_task_completed_by_the_winner(script_of) -> None:  # type: ignore[no-untyped-def]
    erren = script_of("erren", minimum_fan=0)
    erren.deal(
        dealer_hand="5z1z2233446677z11m",
        other_hand="55z123456789m1z2z",
        draws="8m",
        task={"kind": "pong", "multiplier": 2},
    )
    erren.do("0 discard 5z")
    erren.do("1 pong 5z")
    erren.do("1 discard 2z")
    erren.do("0 pass")  # the dealer could pong 2z
    erren.do("0 discard 1z")
    erren.do("1 win 1z")
    terms = erren.outcome.erren
    assert terms is not None
    assert terms.task == {"kind": "pong", "multiplier": 2} and terms.task_completed is True
    assert terms.doubling == (False, False) and terms.win_doublings == 0


def test_E13_fourth_tile_visible_on_the_table(duel) -> None:  # type: ignore[no-untyped-def]
    # 3m discarded and ponged: three copies in sight; the dealer then self-draws the last 3m (12m edge).
    duel.deal(dealer_hand="3m12m456p789s111z55z", other_hand="33m9m2468p2468s6z7z", draws="3m")
    duel.do("0 discard 3m")
    duel.do("1 pong 3m")
    duel.do("1 discard 9m")
    duel.do("0 self_draw_win 3m")
    assert duel.context()["fourth_tile_visible"] is True
