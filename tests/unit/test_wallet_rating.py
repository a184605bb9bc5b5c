"""The skill rating update (services/wallet/rating.py) and the pairing window it feeds
(services/matchmaking/rooms.py): what a win, a loss and a draw do, on the Glicko scale."""

from __future__ import annotations

import math

import pytest

from services.matchmaking.rooms import Room
from services.wallet.rating import BETA, DRAW, LOSS, START, VOLATILITY, WIN, RatingMove, Skill, rate


def test_a_win_raises_the_winner_as_much_as_it_lowers_the_loser_and_both_grow_surer() -> None:
    winner, loser = rate(START, START, WIN)
    assert winner.rating > START.rating > loser.rating
    assert math.isclose(winner.rating - START.rating, START.rating - loser.rating)
    assert winner.deviation < START.deviation and loser.deviation < START.deviation
    assert winner.hands_rated == loser.hands_rated == 1
    # A first hand between two new players moves them by about a Glicko-2 first game (±160).
    assert 100 < winner.rating - START.rating < 200
    assert rate(START, START, LOSS) == (loser, winner)


def test_a_draw_between_equals_moves_no_rating_and_pulls_unequal_ratings_together() -> None:
    one, two = rate(START, START, DRAW)
    assert one.rating == two.rating == START.rating and one.deviation < START.deviation
    strong, weak = Skill(1800, 80, 30), Skill(1500, 80, 30)
    strong_after, weak_after = rate(strong, weak, DRAW)
    assert strong_after.rating < strong.rating and weak_after.rating > weak.rating


def test_an_upset_moves_more_than_the_expected_result_and_uncertain_ratings_move_more() -> None:
    favourite, underdog = Skill(1900, 60, 50), Skill(1500, 60, 50)
    expected_gain = rate(favourite, underdog, WIN)[0].rating - favourite.rating
    upset_gain = rate(underdog, favourite, WIN)[0].rating - underdog.rating
    assert 0 < expected_gain < upset_gain
    # 400 points are about 10:1 for settled players (the Glicko/Elo reading): the favourite's gain is
    # about a tenth of the underdog's.
    assert 0.05 < expected_gain / upset_gain < 0.15
    unsure = Skill(1500, 300, 2)
    assert rate(unsure, underdog, WIN)[0].rating - 1500 > rate(underdog, underdog, WIN)[0].rating - 1500


def test_a_long_run_settles_the_deviation_without_freezing_it() -> None:
    me, them = START, START
    for _ in range(200):
        me, them = rate(me, them, DRAW)
    assert 30 < me.deviation < 100  # the drift per hand (tau) keeps it from reaching 0
    assert me.hands_rated == 200 and me.volatility == VOLATILITY == pytest.approx(0.06)
    assert me.conservative == me.rating - 2 * me.deviation
    assert BETA == pytest.approx(400 / math.log(10) / math.sqrt(2))


def test_a_result_is_a_win_a_draw_or_a_loss() -> None:
    with pytest.raises(ValueError, match=r"1, 0\.5 or 0"):
        rate(START, START, 0.7)


def test_a_rating_move_survives_its_json_exactly() -> None:
    before, after = START, rate(START, Skill(1612.25, 87.5, 9), WIN)[0]
    move = RatingMove("p1", "duel", 1, before, after)
    assert RatingMove.from_json(move.as_json()) == move


def test_the_pairing_window_is_the_uncertainty_of_the_difference_plus_the_wait() -> None:
    room = Room(
        room_id="r",
        profile="duel",
        fan_rate=1,
        rating_window=20,
        rating_window_deviations=2,
        rating_window_per_second=10,
    )
    assert room.rating_window_for((60, 80), 0) == pytest.approx(20 + 2 * 100)
    assert room.rating_window_for((60, 80), 3.5) == pytest.approx(20 + 2 * 100 + 35)
    assert room.rating_window_for((60, 80), -1) == pytest.approx(220)  # a clock step back widens nothing
    default = Room(room_id="d", profile="duel", fan_rate=1)
    assert default.rating_window_for((350, 350), 0) == pytest.approx(math.hypot(350, 350))
