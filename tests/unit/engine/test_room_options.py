"""Exchanges (T4), in-game offers (T5), items (T6), doubling and tasks (T8), leaving (T10), timeouts
(T11) and 猜大小 (T12)."""

from __future__ import annotations

import pytest

from duelmahjong.engine.errors import IllegalActionError
from duelmahjong.engine.outcome import Termination
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table
from duelmahjong.engine.wall import stack_tiles
from duelmahjong.rules.analysis import shanten

FAR = "159m159p2468s2346z"  # a dealer hand far from ready
OTHER = "1111s555s9999s1z2z"


def test_T4_duel_exchange_takes_from_and_returns_to_the_pool(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=FAR, other_hand=OTHER, pool="7z7z", exchange=False)
    events = duel.do("0 exchange [1m,9m]")
    assert (events[0].given, events[0].received) == ((0, 8), (33, 33))
    assert events[0].for_seat(1) == {"kind": "exchanged", "seat": 0, "count": 2, "paid": 0}
    assert duel.state.pool[-2:] == [0, 8]  # returned tiles go to the pool
    duel.do("1 exchange")
    assert duel.state.phase == "turn"


def test_T4_erren_exchange_limit_fee_and_wall(script_of) -> None:  # type: ignore[no-untyped-def]
    erren = script_of("erren", exchange_fee=5)
    erren.deal(dealer_hand="1234567m1234567z", other_hand="1234567m123456z", exchange=False)
    with pytest.raises(IllegalActionError, match="at most 5"):
        erren.do("0 exchange [1m,2m,3m,4m,5m,6m]")
    wall_before = sorted(erren.state.live_wall())
    events = erren.do("0 exchange [1m,2m,3m]")
    assert (events[0].count, events[0].paid) == (3, 2)  # the first exchange is free
    received = events[0].received
    after = list(wall_before)
    for tile in received:
        after.remove(tile)
    assert sorted(erren.state.live_wall()) == sorted([*after, 0, 1, 2])  # returned into the wall
    erren.do("1 exchange")
    assert erren.state.exchange_counts == [3, 0] and erren.state.phase == "turn"


def test_T4_exchange_only_tiles_you_hold(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=FAR, other_hand=OTHER, exchange=False)
    with pytest.raises(IllegalActionError, match="tiles you hold"):
        duel.do("0 exchange [7z]")


def test_T5_triplet_offer_and_rub(script_of) -> None:  # type: ignore[no-untyped-def]
    script = script_of("duel", triplet_offer_probability=1.0)
    script.deal(dealer_hand=FAR, other_hand=OTHER, pool="7z7z7z")
    script.do("0 discard 1m")
    offer = script.table.view(1)["offer"]
    assert offer["kind"] == "triplet"
    with pytest.raises(IllegalActionError, match="tiles you hold"):
        script.do("1 take_triplet [7z,7z,7z]")
    events = script.do("1 take_triplet [1s,1z,2z]")  # any three held tiles, listed or not
    triplet = events[0].received
    assert events[0].reason == "triplet" and triplet == (triplet[0],) * 3
    assert offer["tile"] == events[0].for_seat(1)["received"][0]
    assert events[0].for_seat(0) == {"kind": "swapped", "seat": 1, "reason": "triplet"}
    rub = script_of("duel", rub_offer_probability=1.0)
    rub.deal(dealer_hand=FAR, other_hand=OTHER, pool="7z")
    rub.do("0 discard 1m")
    assert rub.table.view(1)["offer"] == {"kind": "rub"}
    drawn = rub.state.last_draw
    events = rub.do("1 rub 7z")
    assert (events[0].given, events[0].received) == ((drawn,), (33,))
    assert rub.state.last_draw == 33 and 33 not in rub.state.pool[:1]


def test_T6_items_swap_and_shuffle(duel) -> None:  # type: ignore[no-untyped-def]
    table = duel.table
    table.start_hand(
        1,
        items=({"swap_item": 1, "shuffle_item": 1}, {}),
        stacked=stack_tiles("duel", dealer_hand=FAR, other_hand=OTHER, pool="7z"),
    )
    duel.do("0 exchange")
    duel.do("1 exchange")
    assert any("swap_item" in text for text in duel.legal(0))  # representatives; any held tile may go
    events = duel.do("0 swap_item 1m >7z")
    assert (events[0].given, events[0].received) == ((0,), (33,)) and duel.state.items[0]["swap_item"] == 0
    assert not [a for a in duel.legal(0) if "swap_item" in a]
    with pytest.raises(IllegalActionError, match="偷天换日"):
        duel.do("0 swap_item 5m >6z")  # spent once (T6)
    events = duel.do("0 shuffle_item [9m,1p,9p]")
    received = events[0].received
    assert len(set(received)) == 1 and len(received) == 3


def test_T6_qiankun_deals_a_hand_near_a_limit_hand() -> None:
    for seed in range(10):
        table = Table(RoomSettings())
        table.start_hand(seed, items=({}, {"qiankun": 1}), qiankun=[1])
        assert shanten(table.state.hands[1]) <= 1
        assert table.state.items[1]["qiankun"] == 0


def test_T6_qiankun_needs_the_item() -> None:
    table = Table(RoomSettings())
    with pytest.raises(IllegalActionError, match="no 乾坤大挪移"):
        table.start_hand(1, qiankun=[0])
    assert table.phase == "idle" and len(table.events) == 1


def test_T8_doubling_is_secret_until_both_chose(erren) -> None:  # type: ignore[no-untyped-def]
    table = erren.table
    table.start_hand(3)
    assert erren.legal(0) == ["0 double", "0 no_double"]
    events = erren.do("0 double")
    assert events[0].for_seat(1) == {"kind": "doubling_chosen", "seat": 0}
    assert "doubling" not in table.view(1)["seats"][0]  # the opponent's choice stays hidden
    events = erren.do("1 no_double")
    assert [e.kind for e in events][:2] == ["doubling_chosen", "doubling_revealed"]
    assert table.view(1)["seats"][0]["doubling"] is True


def test_T8_task_is_drawn_at_hand_start(erren) -> None:  # type: ignore[no-untyped-def]
    tasks = set()
    for seed in range(30):
        table = Table(RoomSettings(profile="erren", task_multiplier=3))
        table.start_hand(seed)
        tasks.add(table.state.task["kind"])
        assert table.state.task["multiplier"] == 3
    assert tasks == {"pong", "pattern", "kong", "double"}


def test_T8_declining_a_win_doubles(script_of) -> None:  # type: ignore[no-untyped-def]
    erren = script_of("erren", minimum_fan=0)
    erren.deal(dealer_hand="5m1122334455667z", other_hand="1112345678999m")
    erren.do("0 discard 5m")  # nine gates (九莲宝灯) waits on every 万
    assert erren.legal(1)[0] == "1 win 5m"
    events = erren.do("1 pass")
    assert events[0].for_seat(0) == {"kind": "passed", "seat": events[0].seat, "declined_win": True}  # 胡加倍
    assert erren.state.win_doublings == [0, 1]


def test_T10_escape_ends_the_hand_and_the_pairing(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=FAR, other_hand=OTHER)
    events = duel.do("1 leave")  # not seat 1's turn: leaving is always possible
    assert [e.kind for e in events] == ["escaped", "hand_ended", "pairing_ended"]
    assert duel.outcome.termination is Termination.ESCAPE and duel.outcome.escaper == 1
    with pytest.raises(IllegalActionError):
        duel.table.start_hand(2)


def test_T10_leaving_between_hands_is_no_escape(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="123m456p789m11122z", other_hand=OTHER)
    duel.do("0 self_draw_win 2z")
    events = duel.do("1 leave")
    assert [e.kind for e in events] == ["pairing_ended"] and duel.table.phase == "closed"


def test_T11_default_actions(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=FAR, other_hand="333m1246789p1s2s3s5s", draws="8s", exchange=False)
    assert str(duel.table.default_action(0)) == "0 exchange []"  # keep the hand
    duel.do("0 exchange")
    duel.do("1 exchange")
    assert duel.table.default_action(1) is None  # not seat 1's decision
    duel.do("0 discard 2z")
    assert duel.table.to_move == 1 and duel.table.default_action(0) is None
    assert str(duel.table.default_action(1)).startswith("1 discard")  # discard the drawn tile
    assert duel.table.default_action(1).tile == duel.state.last_draw


def test_T11_default_passes_on_claims(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="33m1246789p1s2s3s5s")
    duel.do("0 discard 3m")
    assert str(duel.table.default_action(1)) == "1 pass"


def test_T12_guess_big_or_small(script_of) -> None:  # type: ignore[no-untyped-def]
    for seed in range(6):
        script = script_of("duel", guess_enabled=True)
        script.deal(seed, dealer_hand="123m456p789m11122z", other_hand=OTHER)
        script.do("0 self_draw_win 2z")
        assert script.table.phase == "guess" and script.legal(0) == ["0 big", "0 small", "0 collect"]
        assert script.table.default_action(0).kind == "collect"
        events = script.do("0 big")
        guess = events[0].guess
        assert guess.dice is not None and guess.factor is not None
        total, triple = sum(guess.dice), len(set(guess.dice)) == 1
        assert guess.right == (total >= 11 and not triple)
        assert (2 <= guess.factor <= 5) if guess.right else guess.factor == 0
        assert script.outcome.guess == guess
        replayed = Table.replay([event.to_json() for event in script.table.events])
        assert vars(replayed.state) == vars(script.state)


def test_T12_off_by_default(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="123m456p789m11122z", other_hand=OTHER)
    duel.do("0 self_draw_win 2z")
    assert duel.table.phase == "over" and duel.outcome.guess is None
