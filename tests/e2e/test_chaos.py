"""A 36-second ``duel bench chaos`` (the ten-minute one is ``make chaos``): three table servers, bots
playing through matchmaking, a table server killed or drained every 10 s and started again; every
goal holds (no hand voided, no acknowledged action lost, no duplicate application, the ledger whole,
no hold open, no live table) and the run exits 0."""

from __future__ import annotations

import re

import pytest

from duelmahjong.cli.bench import load

pytestmark = pytest.mark.e2e

chaos = load("chaos")


def test_a_minute_of_chaos_loses_no_hand_and_no_acknowledged_action(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = chaos.main(["--minutes", "0.6", "--every", "10", "--pairs", "4", "--interval", "12"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert len(re.findall(r"^chaos fault t=\d+s (kill|term) table", out, re.MULTILINE)) >= 2, out
    assert re.search(r"^chaos hands played [1-9]\d* ", out, re.MULTILINE), out
    assert re.search(r"^chaos tables adopted \d+ .* adoption latency p50=\S+s p99=\S+s", out, re.MULTILINE), (
        out
    )
    for goal in (
        "hands voided 0 ",
        "acknowledged actions lost 0 ",
        "duplicate applications 0",
        "open holds 0",
        "live tables 0",
        "wallet audit clean",
    ):
        assert f"chaos check ok   {goal}" in out, goal
    # a check fails as ``chaos check FAIL``; the expected errors it tallies may name FAILED_PRECONDITION
    assert not re.search(r"^chaos check FAIL", out, re.MULTILINE) and out.rstrip().endswith("chaos OK"), out
