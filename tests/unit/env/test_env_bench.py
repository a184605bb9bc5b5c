"""``duel bench env --quick`` keeps working: every figure of both profiles is printed, with a rate
(riichienv, the reference, is the bench extra's: without it the bench says so and prints ours alone)."""

from __future__ import annotations

import re

import pytest

from duelmahjong.cli.bench import load


def test_the_quick_env_bench_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("env").main(["--quick"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("bench env.")]
    names = [line.split()[1] for line in lines]
    for profile in ("duel", "erren"):
        assert {f"env.steps_{profile}", f"env.batch4_{profile}", f"env.observations_{profile}"} <= set(names)
    for line in lines:
        assert float(re.search(r"ours=(\d+)/s", line).group(1)) > 0  # type: ignore[union-attr]
