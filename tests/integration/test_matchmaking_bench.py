"""``duel bench matchmaking --quick`` keeps working: a short step at 10 pairings/s through the in-memory
matchmaker and through three replicas sharing a JetStream bucket (rooms shared by lease), every player
seated, the figures sane and printed in the bench's format."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from duelmahjong.cli.bench import load
from duelmahjong.platform import eventloop

pytestmark = pytest.mark.integration


@pytest.mark.timeout(120)
def test_a_quick_matchmaking_step_seats_everyone_and_reports_sane_figures(tmp_path: Path) -> None:
    bench = load("matchmaking")
    settings = dataclasses.replace(bench.QUICK, configs=("memory", "replicas3_lease"))
    outcome = eventloop.run(bench.measure(tmp_path, settings))
    assert [(step.config, step.rate) for _run, step in outcome.steps] == [
        ("memory", 10.0),
        ("replicas3_lease", 10.0),
    ]
    for _run, step in outcome.steps:
        result = step.result
        assert result.sent == 40 and result.seated == 40  # 20 pairs offered in 2 s, every player seated
        assert result.unseated == 0 and result.failed == 0 and not result.first_error
        assert len(result.matched) == len(result.ready) == 40
        assert 0 < step.figures()["matched_p50"] <= step.matched_p99 <= step.figures()["ready_p99"] < 30_000
        assert step.pairings_per_second > 5
        assert step.cpu["load"] > 0 and all(
            step.cpu[name] > 0 for name in ("mm", "mm-a", "mm-b", "mm-c") if name in step.cpu
        )
    lines = outcome.lines(settings)
    assert re.fullmatch(
        r"bench matchmaking\.memory rate=10/s matched_p50=[\d.]+ms matched_p99=[\d.]+ms ready_p50=[\d.]+ms "
        r"ready_p99=[\d.]+ms pairings=[\d.]+/s cpu_per_pairing mm=[\d.]+ nats=[\d.]+ fakes=[\d.]+ "
        r"load=[\d.]+ ms updates=[\d.]+/player others_cpu=\d+%",
        lines[0],
    ), lines[0]
    assert re.fullmatch(
        r"bench matchmaking\.replicas3_lease rate=10/s .* cpu_per_pairing mm-a=[\d.]+ mm-b=[\d.]+ "
        r"mm-c=[\d.]+ nats=[\d.]+ fakes=[\d.]+ load=[\d.]+ ms updates=[\d.]+/player "
        r"cas_conflicts=[\d.]+/pairing ratio_p99_to_memory=[\d.]+ others_cpu=\d+%",
        lines[1],
    ), lines[1]
    assert lines[2].startswith("bench matchmaking.load rate=10/s workers=1 busiest_worker=")
    assert not outcome.failures()
