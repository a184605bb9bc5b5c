"""``duel bench evaluation --quick`` keeps working: the strong bot's gain on both profiles, short."""

from __future__ import annotations

import pytest

from duelmahjong.cli import main


def test_the_quick_evaluation_bench_shows_a_gain_on_both_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "evaluation", "--quick"]) == 0
    out = capsys.readouterr().out
    for profile in ("duel", "erren"):
        assert f"bench evaluation.strong_vs_house_{profile} mean=+" in out
    assert out.count("strong vs house: +") == 2
