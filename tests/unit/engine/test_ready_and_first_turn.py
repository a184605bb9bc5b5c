"""报听 and auto-play (T3), first-turn wins (D10), 一发 (E8), last tiles (D8) and exhaustion (T9)."""

from __future__ import annotations

from typing import Any

from duelmahjong.engine.events import Exhausted, ThrownAway
from duelmahjong.engine.outcome import Termination

# The dealer declares ready on its first discard (7z) and then waits on 1p 4p 7p (33z pair).
READY_DEALER = "234567m23456p33z7z"
# Seat 1 keeps a hand that is far from ready and never claims.
IDLE_OTHER = "1111s555s9999s1z2z"


def play_out(script: Any, *, win_when_wall_empty: bool) -> None:
    """Both seats play their default (T11) — decline wins — until the end of the hand; with
    ``win_when_wall_empty`` a win offered once the wall is empty is taken."""
    table = script.table
    while table.phase not in ("over", "closed"):
        seat = table.to_move
        legal = table.legal_actions(seat)
        wins = [a for a in legal if a.kind in ("self_draw_win", "win")]
        if wins and win_when_wall_empty and table.state.wall_remaining == 0:
            table.apply(wins[0])
        else:
            table.apply(table.default_action(seat))


def test_D10_dealer_initial_hand_is_heavenly(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="123m456p789m11122z", other_hand=IDLE_OTHER)
    assert "0 self_draw_win 2z" in duel.legal(0)
    duel.do("0 self_draw_win 2z")
    assert duel.context()["first_turn_win"] == "dealer_initial_hand"
    assert duel.pattern_ids() == ["heavenly_hand"]


def test_D10_win_on_the_dealers_first_discard_is_earthly(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="5z159m159p159s2346z", other_hand="123m456p789s11z55z")
    duel.do("0 discard 5z")
    assert duel.legal(1)[0] == "1 win 5z"
    duel.do("1 win 5z")
    assert duel.context()["first_turn_win"] == "dealer_first_discard"
    assert "earthly_hand" in duel.pattern_ids()


def test_D10_self_draw_on_the_first_draw_is_human(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="7z159m159p159s2346z", other_hand="123m456p789s11z55z", draws="5z")
    duel.do("0 discard 7z")
    duel.do("1 self_draw_win 5z")
    assert duel.context()["first_turn_win"] == "nondealer_first_draw"
    assert "human_hand" in duel.pattern_ids()


def test_T3_heavenly_ready_then_auto_play(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=READY_DEALER, other_hand=IDLE_OTHER, draws="6z8m2z9m")
    assert "0 ready 7z" in duel.legal(0)
    events = duel.do("0 ready 7z")
    assert events[0].for_seat(-1) == {
        "kind": "discarded",
        "seat": events[0].seat,
        "tile": "7z",
        "ready": True,
        "first_turn": True,
    }  # 天听
    # Seat 1 drew 6z; its discard gives the dealer nothing, so the dealer's draw (8m) is discarded
    # by the table itself, and seat 1 draws again (2z).
    events = duel.do("1 discard 6z")
    assert [e.kind for e in events] == ["discarded", "drew", "discarded", "drew"]
    assert events[2].seat == 0 and events[2].tile == 7
    assert duel.legal(0) == []  # a locked hand (T3): nothing to decide


def test_T3_ready_hand_is_asked_at_every_win_chance_and_declining_keeps_it(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=READY_DEALER, other_hand=IDLE_OTHER, draws="4p1p")
    duel.do("0 ready 7z")
    duel.do("1 discard 4p")  # the dealer's winning tile
    assert duel.legal(0) == ["0 win 4p", "0 pass"]
    duel.do("0 pass")
    assert duel.legal(0) == ["0 self_draw_win 1p", "0 discard 1p"]  # its own draw completes the hand too
    duel.do("0 self_draw_win 1p")
    context = duel.context()
    assert context["declared_ready"] and context["declared_first_turn"]
    assert "heavenly_ready" in duel.pattern_ids()


def test_E8_win_on_the_first_discard_after_declaring(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=READY_DEALER, other_hand=IDLE_OTHER, draws="4p")
    duel.do("0 ready 7z")
    duel.do("1 discard 4p")
    duel.do("0 win 4p")
    assert duel.context()["first_turn_after_declare"] is True


def test_T3_ready_needs_a_ready_hand(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="159m159p2468s2346z", other_hand=IDLE_OTHER)
    assert not [text for text in duel.legal(0) if " ready " in text]


def test_D8_self_draw_of_the_last_wall_tile(duel) -> None:  # type: ignore[no-untyped-def]
    # The dealer draws the 44th and last tile of the wall: the end of the wall is 7p.
    duel.deal(dealer_hand=READY_DEALER, other_hand=IDLE_OTHER, replacements="7p")
    duel.do("0 ready 7z")
    play_out(duel, win_when_wall_empty=True)
    assert duel.outcome.winner == 0
    assert duel.context()["last_wall_tile"] is True
    assert "win_on_last_wall_tile" in duel.pattern_ids()


def test_T9_extra_draw_after_exhaustion_wins_with_haitei(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=READY_DEALER, other_hand=IDLE_OTHER, replacements="1z", pool="7p")
    duel.do("0 ready 7z")
    play_out(duel, win_when_wall_empty=True)
    exhausted = next(e for e in duel.table.events if e.kind == "exhausted")
    assert exhausted == Exhausted(ready=(True, False), extra_seat=0, extra_draws=3)
    assert duel.context()["extra_draw_after_exhaustion"] is True
    assert "win_on_extra_draw" in duel.pattern_ids()


def test_T9_three_extra_draws_without_a_win_is_a_drawn_hand(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand=READY_DEALER, other_hand=IDLE_OTHER, replacements="1z", pool="1z2z6z")
    duel.do("0 ready 7z")
    play_out(duel, win_when_wall_empty=False)
    thrown = [e.tile for e in duel.table.events if isinstance(e, ThrownAway)]
    assert thrown == [27, 28, 32]
    assert duel.outcome.termination is Termination.DRAWN


def test_T9_nobody_ready_is_a_drawn_hand_without_extra_draws(duel) -> None:  # type: ignore[no-untyped-def]
    duel.deal(dealer_hand="159m159p2468s2346z", other_hand=IDLE_OTHER)
    play_out(duel, win_when_wall_empty=False)
    exhausted = next(e for e in duel.table.events if e.kind == "exhausted")
    assert exhausted == Exhausted(ready=(False, False))
    assert duel.outcome.termination is Termination.DRAWN
    assert not any(e.kind == "thrown_away" for e in duel.table.events)
