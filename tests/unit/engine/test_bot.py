"""The baseline bot: wins when allowed, declares ready, discards by shanten, claims only to improve,
doubles as dealer, guesses big at 猜大小."""

from __future__ import annotations

from duelmahjong.engine.bot import choose

OTHER = "1111s555s9999s1z2z"


def _choice(script, seat: int) -> str:  # type: ignore[no-untyped-def]
    return str(choose(script.state, seat, script.table.legal_actions(seat)))


def test_bot_wins_when_allowed(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="123m456p789m11122z", other_hand=OTHER)
    assert _choice(duel, 0) == "0 self_draw_win 2z"


def test_bot_declares_ready_with_the_most_live_waits(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="234567m23456p33z7z", other_hand=OTHER)
    assert _choice(duel, 0) == "0 ready 7z"


def test_bot_discards_the_least_useful_tile(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="123m456p78s1122z5z7z", other_hand=OTHER)
    assert _choice(duel, 0) in {"0 discard 5z", "0 discard 7z"}


def test_bot_claims_only_to_improve(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="33m123p456p789p5z6z")
    duel.do("0 discard 3m")
    assert _choice(duel, 1) == "1 pong 3m"  # the pair becomes the fourth set: ready after the discard
    duel2 = type(duel)("duel")
    duel2.deal(dealer_hand="3m" + "456p789s1z2z3z4z5z6z7z", other_hand="33m123p456p789p1s2s")
    duel2.do("0 discard 3m")
    assert _choice(duel2, 1) == "1 pass"  # already ready; the pong leaves it only ready


def test_bot_doubles_as_dealer_and_guesses_big(script_of) -> None:  # type: ignore[no-untyped-def]
    erren = script_of("erren")
    erren.table.start_hand(4)
    dealer = erren.state.dealer
    assert _choice(erren, dealer) == f"{dealer} double"
    assert _choice(erren, 1 - dealer) == f"{1 - dealer} no_double"
    duel = script_of("duel", guess_enabled=True)
    duel.deal(dealer_hand="123m456p789m11122z", other_hand=OTHER)
    duel.do("0 self_draw_win 2z")
    assert _choice(duel, 0) == "0 big"
