"""A short ``duel bench soak`` on a stack of its own, so the soak code cannot rot: bots play through
matchmaking and table, interval lines print, and every end-of-run check passes (exit 0)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from duelmahjong.cli.bench import load

pytestmark = pytest.mark.e2e

soak = load("soak")


def test_a_short_soak_plays_hands_and_every_end_check_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Rooms without a claim window: a hand there takes seconds, not the minutes of human pace.
    rooms = "duel-novice,duel-offers,erren-novice"
    argv = ["--minutes", "0.2", "--pairs", "2", "--interval", "4", "--hands", "2", "--rooms", rooms]
    # a state file that does not exist: the soak starts (and stops) a stack of its own
    code = soak.main([*argv, "--state-file", str(tmp_path / "no-stack.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("soak t=")]
    assert len(lines) >= 2, out
    assert re.search(r"hands/s=\d+\.\d\d .* rss=wallet:\d+MB.* fds=wallet:\d+", lines[-1]), lines[-1]
    assert re.search(r"time_to_table p50=\d+\.\d\ds p99=\d+\.\d\ds$", lines[-1]), lines[-1]
    checks = [line for line in out.splitlines() if line.startswith("soak check")]
    assert checks and not [line for line in checks if "FAIL" in line], out
    assert "soak check ok   ledger total before" in out and out.rstrip().endswith("soak OK")
