"""Claim windows keep the opponent's options hidden (docs/engine.md "Claim windows", T2, D13).

After a discard the table waits in ``claim`` only when the opponent may win, kong, pong or chi; after an
added kong it waits in ``rob_kong`` only when the opponent may rob it. What the discarder (or the
konger) observes — the events routed to it, their order (its per-seat sequence), its view and its legal
actions after each of them — must be the same whether or not the opponent had that choice; only an
actual claim or win shows. Each check compares the observer's trace in the world where the opponent
could act (and passed) with the world where it could not.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.engine import actions as A
from duelmahjong.engine.events import Discarded, Drew, Event, Passed, events_for_seat
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table

Trace = list[tuple[dict[str, Any], dict[str, Any]]]


def observed(events: list[Event], seat: int) -> Trace:
    """What ``seat`` observes, one entry per event routed to it: the event as it reads it and the
    seat's view (with its legal actions) right after it. The list's index is the seat's sequence."""
    table = Table()
    trace: Trace = []
    for event in events:
        table.emit(event)
        if event.visible_to(seat):
            trace.append((event.for_seat(seat), table.view(seat)))
    return trace


def _until_next_public_fact(script: Any, kind: str) -> list[Event]:
    """The log up to and including the last event of ``kind`` (the public fact that ends the window)."""
    events = script.table.events
    last = max(i for i, e in enumerate(events) if e.kind == kind)
    return events[: last + 1]


# --- scripted worlds: the same wall for the observer, an opponent with and without the option ----------
DEALER_CLAIMABLE = "3m" + "456p789s1z2z3z4z5z6z7z"


def test_T2_the_discarder_cannot_tell_a_passed_claim_from_no_claim(script_of) -> None:  # type: ignore[no-untyped-def]
    could = script_of("duel")
    could.deal(dealer_hand=DEALER_CLAIMABLE, other_hand="33m1246789p1s2s3s5s", draws="9m")
    could.do("0 discard 3m")
    assert could.state.phase == "claim" and "1 pong 3m" in could.legal(1)
    could.do("1 pass")

    could_not = script_of("duel")
    could_not.deal(dealer_hand=DEALER_CLAIMABLE, other_hand="99m1246789p1s2s3s5s", draws="9m")
    could_not.do("0 discard 3m")  # nothing to claim: the draw follows at once
    assert could_not.state.phase == "turn" and could_not.table.to_move == 1

    with_option = _until_next_public_fact(could, "drew")
    without = _until_next_public_fact(could_not, "drew")
    assert observed(with_option, 0) == observed(without, 0)
    assert events_for_seat(with_option, 0) == events_for_seat(without, 0)
    # The deciding seat does see its own pass.
    assert [e["kind"] for e in events_for_seat(with_option, 1)][-2:] == ["passed", "drew"]


def test_T2_while_the_opponent_decides_the_discarder_sees_its_turn() -> None:
    """During the window the discarder's view reads as the opponent's turn, as right after any discard."""
    table = _claim_window()
    decider = table.state.current
    watcher = 1 - decider
    view = table.view(watcher)
    assert view["phase"] == "turn" and view["to_move"] == decider
    assert view["legal_actions"] == [f"{watcher} leave"]
    assert table.view(decider)["phase"] == "claim"


def _claim_window() -> Table:
    """A seeded random hand stopped in its first claim window."""
    rng = random.Random(5)
    for seed in range(200):
        table = Table(RoomSettings())
        table.start_hand(seed)
        while table.phase not in ("over", "closed"):
            if table.phase == "claim":
                return table
            options = [a for s in (0, 1) for a in table.legal_actions(s) if a.kind != A.LEAVE]
            table.apply(rng.choice(options))
    raise AssertionError("no claim window in 200 seeded hands")


ROB_DEALER = "3m12m456p789s11z77p5z"  # later waits on 3m (12m edge): may rob the added kong
SAFE_DEALER = "3m19m456p789s11z77p5z"  # the same play, never waiting on 3m
ROB_PLAY = ("0 discard 3m", "1 pong 3m", "1 discard 5s", "0 discard 5z", "1 added_kong 3m")


def test_D13_the_konger_cannot_tell_a_declined_rob_from_no_rob(script_of) -> None:  # type: ignore[no-untyped-def]
    worlds = []
    for dealer_hand in (ROB_DEALER, SAFE_DEALER):
        script = script_of("duel")
        script.deal(
            dealer_hand=dealer_hand, other_hand="33m1246789p1s2s3s5s", draws="7p3m", replacements="9s"
        )
        for text in ROB_PLAY:
            script.do(text)
        if script.state.phase == "rob_kong":
            assert script.legal(0) == ["0 win 3m", "0 pass"]
            script.do("0 pass")
        worlds.append(_until_next_public_fact(script, "drew"))
    could, could_not = worlds
    assert any(e.kind == "passed" for e in could) and not any(e.kind == "passed" for e in could_not)
    assert observed(could, 1) == observed(could_not, 1)


def test_D13_an_open_robbing_window_reads_as_the_kongers_turn(script_of) -> None:  # type: ignore[no-untyped-def]
    script = script_of("duel")
    script.deal(dealer_hand=ROB_DEALER, other_hand="33m1246789p1s2s3s5s", draws="7p3m", replacements="9s")
    for text in ROB_PLAY:
        script.do(text)
    assert script.state.phase == "rob_kong"
    for watcher in (1, -1):  # the konger and a spectator (the table's public status)
        view = script.table.view(watcher)
        assert (view["phase"], view["to_move"]) == ("turn", 1)


def test_T8_an_erren_declined_win_is_announced() -> None:
    """胡加倍 is a public decision (the win_declines counter both seats see): that pass stays public."""
    announced = Passed(seat=1, declined_win=True)
    assert announced.visible_to(0) and announced.visible_to(1)
    silent = Passed(seat=1)
    assert silent.visible_to(1) and not silent.visible_to(0) and not silent.visible_to(-1)


# --- random hands: every silent pass is invisible to the other seat ---------------------------------------
ROOMS = [
    RoomSettings(profile="duel"),
    RoomSettings(profile="duel", triplet_offer_probability=0.3, rub_offer_probability=0.3),
    RoomSettings(profile="erren"),
]


def _play(room: RoomSettings, seed: int, rng: random.Random) -> Table:
    """A random hand that passes often, so claim and rob windows are declined as well as taken."""
    table = Table(room)
    table.start_hand(seed)
    while table.phase not in ("over", "closed"):
        options = [a for s in (0, 1) for a in table.legal_actions(s) if a.kind != A.LEAVE]
        passes = [a for a in options if a.kind == A.PASS]
        table.apply(passes[0] if passes and rng.random() < 0.7 else rng.choice(options))
    return table


def _silent_pass(event: Event, seat: int) -> bool:
    return isinstance(event, Passed) and not event.declined_win and event.seat == seat


def _without_silent_passes(events: list[Event], seat: int) -> list[Event]:
    """The counterfactual log: the same hand had ``seat`` had no option where it passed silently (the
    engine then moves straight on, producing exactly the events that followed the pass)."""
    return [e for e in events if not _silent_pass(e, seat)]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), room=st.sampled_from(ROOMS), choices=st.randoms(use_true_random=False))
def test_T2_D13_observers_see_the_same_hand_with_or_without_options(
    seed: int, room: RoomSettings, choices: random.Random
) -> None:
    table = _play(room, seed, choices)
    for observer in (0, 1):
        decider = 1 - observer
        if not any(_silent_pass(e, decider) for e in table.events):
            continue
        counterfactual = _without_silent_passes(table.events, decider)
        # The counterfactual is a real hand: it replays to the same outcome.
        assert Table.replay(counterfactual).outcome == table.outcome
        assert observed(table.events, observer) == observed(counterfactual, observer)


def test_seat_streams_route_silent_passes_only_to_their_seat() -> None:
    events = [Discarded(seat=0, tile=2), Passed(seat=1), Drew(seat=1, source="wall", tile=5)]
    assert [e["kind"] for e in events_for_seat(events, 0)] == ["discarded", "drew"]
    assert [e["kind"] for e in events_for_seat(events, 1)] == ["discarded", "passed", "drew"]
