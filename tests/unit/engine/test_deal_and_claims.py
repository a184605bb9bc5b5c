"""The deal, the wall, claims and kongs (docs/decisions.md §1, T1, T2, D1, D13, E17)."""

from __future__ import annotations

import pytest

from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table

DEALER = "123m456p789s1z2z3z4z5z"  # 14 tiles, far from anything


def test_duel_wall_71_in_play_and_pool(duel) -> None:  # type: ignore[no-untyped-def]
    """§1 duel: 71 tiles in play (44 left after the deal), the other 65 in the pool, 2 face up (D1)."""
    table = Table(RoomSettings(profile="duel"))
    events = table.start_hand(seed=11)
    state = table.state
    assert state.wall_remaining == 71 - 27
    assert len(state.pool) + len(state.bonus) == 65 and len(state.bonus) == 2
    assert [e.kind for e in events] == ["hand_started", "dealt", "dealt"]
    assert events[0].bonus == state.bonus and "bonus" in events[0].for_seat(
        0
    )  # D1: the revealed tiles are public
    assert sum(state.hands[state.dealer]) == 14 and sum(state.hands[1 - state.dealer]) == 13


def test_D1_bonus_tile_count_follows_the_room() -> None:
    table = Table(RoomSettings(profile="duel", bonus_tile_count=4))
    table.start_hand(seed=3)
    assert len(table.state.bonus) == 4


def test_erren_deal_replaces_flowers(erren) -> None:  # type: ignore[no-untyped-def]
    """§1 erren: all 72 tiles, flowers set aside at the deal and replaced from the end of the wall."""
    events = erren.deal(dealer_hand="1f123456789m1z2z3z4z", other_hand="1112223334445m", replacements="5z")
    dealt = [e for e in events if e.kind == "dealt"]
    assert dealt[0].flowers == (34,) and dealt[0].for_seat(1)["flowers"] == ["1f"]
    replacement = next(e for e in events if e.kind == "drew")
    assert replacement.source == "flower" and replacement.tile == 31
    assert erren.state.flowers[0] == [34] and sum(erren.state.hands[0]) == 14
    assert erren.state.wall_remaining == 72 - 28


def test_T1_first_dealer_is_random() -> None:
    dealers = set()
    for seed in range(12):
        table = Table(RoomSettings())
        table.start_hand(seed)
        dealers.add(table.state.dealer)
    assert dealers == {0, 1}


def test_T2_discard_offers_win_kong_pong_chi_or_pass(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="333m245m6789p111z")
    events = duel.do("0 discard 3m")
    assert duel.state.phase == "claim" and duel.table.to_move == 1
    assert duel.legal(1) == ["1 kong 3m", "1 pong 3m", "1 chi 2m", "1 chi 3m", "1 pass"]
    assert [e.kind for e in events] == ["discarded"]


def test_T2_pong_takes_the_discard_and_the_turn_without_a_draw(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="33m1246789p1s2s3s5s")
    duel.do("0 discard 3m")
    events = duel.do("1 pong 3m")
    assert [e.kind for e in events] == ["claimed"]
    assert duel.state.melds[1] == [("pong", 2)] and duel.state.rivers[0] == []
    assert duel.state.phase == "turn" and duel.table.to_move == 1 and duel.state.last_draw == -1


def test_T2_chi_and_pass_then_draw(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="24m1246789p1s2s3s5s", draws="9m")
    duel.do("0 discard 3m")
    assert "1 chi 2m" in duel.legal(1)
    events = duel.do("1 pass")
    assert [e.kind for e in events] == ["passed", "drew"]
    assert (
        events[1].tile == 8
        and "tile" not in events[1].for_seat(1 - events[1].seat)
        and duel.state.phase == "turn"
    )


def test_T2_kong_replacement_comes_from_the_end_of_the_wall(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="333m1246789p1s2s3s", replacements="9s")
    duel.do("0 discard 3m")
    events = duel.do("1 kong 3m")
    assert [e.kind for e in events] == ["claimed", "drew"]
    assert events[1].source == "kong" and events[1].tile == 26
    assert duel.state.melds[1] == [("exposed_kong", 2)]


def test_T2_concealed_kong_hides_its_tile_from_the_opponent(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="1111m456p789s1z2z3z4z", other_hand="1246789p1s2s3s5s6s7s")
    events = duel.do("0 concealed_kong 1m")
    assert events[0].for_seat(1) == {"kind": "konged", "seat": 0, "meld": "concealed_kong"}
    assert duel.table.view(1)["seats"][0]["melds"] == [{"kind": "concealed_kong", "tiles": ""}]
    assert duel.table.view(0)["seats"][0]["melds"] == [{"kind": "concealed_kong", "tiles": "1111m"}]


def test_D13_added_kong_can_be_robbed_and_scores_as_self_draw(duel) -> None:  # type: ignore[no-untyped-def]
    # Seat 1 pongs 3m, later draws the fourth 3m and adds it; the dealer then waits on 3m (12m edge).
    duel.deal(dealer_hand="3m12m456p789s11z77p5z", other_hand="33m1246789p1s2s3s5s", draws="7p3m")
    duel.do("0 discard 3m")
    duel.do("1 pong 3m")
    duel.do("1 discard 5s")  # the dealer cannot claim it and draws 7p
    duel.do("0 discard 5z")  # seat 1 cannot claim it and draws the fourth 3m
    events = duel.do("1 added_kong 3m")
    assert [e.kind for e in events] == ["konged"] and duel.state.phase == "rob_kong"
    assert duel.legal(0) == ["0 win 3m", "0 pass"]
    duel.do("0 win 3m")
    assert duel.context()["robbing_kong"] is True
    assert duel.win.self_drawn is True  # D13: scored as a self-draw


def test_D13_robbing_declined_gives_the_replacement(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(
        dealer_hand="3m12m456p789s11z77p5z", other_hand="33m1246789p1s2s3s5s", draws="7p3m", replacements="9s"
    )
    for text in ("0 discard 3m", "1 pong 3m", "1 discard 5s", "0 discard 5z", "1 added_kong 3m"):
        duel.do(text)
    events = duel.do("0 pass")
    assert [e.kind for e in events] == ["passed", "drew"] and events[1].source == "kong"


def test_D13_concealed_kong_cannot_be_robbed(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="12m456p789s11z777p5z", other_hand="333m246789p1s2s3s5s", draws="3m")
    duel.do("0 discard 5z")
    events = duel.do("1 concealed_kong 3m")
    assert duel.state.phase == "turn" and [e.kind for e in events] == ["konged", "drew"]


def test_E17_dealer_is_east_and_the_round_wind_advances() -> None:
    table = Table(RoomSettings())
    table.start_hand(seed=5)
    view = table.view(0)
    assert view["round_wind"] == "east"
    assert view["seats"][table.state.dealer]["wind"] == "east"
    assert view["seats"][1 - table.state.dealer]["wind"] == "west"


def test_no_hand_no_actions() -> None:
    table = Table(RoomSettings())
    with pytest.raises(IllegalActionError, match="no hand is in play"):
        table.check(__import__("duelmahjong.engine.actions", fromlist=["Action"]).Action(0, "discard", 1))
