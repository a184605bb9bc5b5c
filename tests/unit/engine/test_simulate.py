"""Bot-vs-bot simulation: complete hands of both profiles, with every invariant checked after every
event, and every hand result scores through the rules library."""

from __future__ import annotations

from itertools import pairwise

import pytest

from duelmahjong.cli import main
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.simulate import bot_turn, simulate
from duelmahjong.engine.table import Table
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.evaluate import evaluate


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_simulated_hands_keep_invariants(profile: str) -> None:
    report = simulate(RoomSettings(profile=profile), hands=24, seed=7, check=True)
    assert report.hands == 24 and sum(report.wins) + report.drawn == 24
    assert sum(report.wins) > 0


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_every_hand_result_scores_through_the_rules_library(profile: str) -> None:
    table = Table(RoomSettings(profile=profile))
    for seed in range(16):
        table.start_hand(seed)
        while bot_turn(table):
            pass
        outcome = table.outcome
        assert outcome is not None
        if outcome.win is not None:
            evaluation = evaluate(HandDescription.from_json(outcome.win.description))
            assert evaluation.to_json() == outcome.win.evaluation


def test_T7_progressive_multiplier_doubles_every_hand_and_T1_winner_deals() -> None:
    table = Table(RoomSettings(profile="duel"))
    for seed in range(5):
        table.start_hand(seed)
        assert table.state.progressive == 2**seed  # T7: 1, 2, 4, 8…
        previous = table.state.results[-1] if table.state.results else None
        if previous is not None:
            expected = previous.winner if previous.winner >= 0 else previous.dealer
            assert table.state.dealer == expected  # T1
        while bot_turn(table):
            pass


def test_cli_simulate_prints_statistics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--profile", "erren", "--hands", "5", "--seed", "3", "--check"]) == 0
    out = capsys.readouterr().out
    assert "hands/s" in out and "win rate" in out and "top patterns" in out


def test_E17_round_wind_advances_each_time_the_deal_passed_through_both() -> None:
    table = Table(RoomSettings(profile="duel"))
    dealers: list[int] = []
    winds = []
    for seed in range(16):
        table.start_hand(seed)
        dealers.append(table.state.dealer)
        changes = sum(1 for a, b in pairwise(dealers) if a != b)
        assert table.state.round_wind == (changes // 2) % 4
        winds.append(table.view(0)["round_wind"])
        while bot_turn(table):
            pass
    assert "south" in winds  # the seeds above pass the deal around at least once
