"""``duel bench capacity`` keeps working: four tables of fast seats for a few seconds through a real
table server, its figures sane and hands ended and re-dealt inside the window."""

from __future__ import annotations

from pathlib import Path

import pytest

from duelmahjong.cli.bench import load
from duelmahjong.platform import eventloop

pytestmark = pytest.mark.integration


@pytest.mark.timeout(60)
def test_a_quick_capacity_step_reports_sane_figures(tmp_path: Path) -> None:
    capacity = load("capacity")
    settings = capacity.Settings(steps=(4,), warm_seconds=1.0, seconds=4.0, think=(0.01, 0.05), wire=False)
    steps, wire = eventloop.run(capacity.measure(tmp_path, settings))
    assert wire is None
    (step,) = steps
    assert step.tables == 4 and step.seconds >= 4.0
    assert step.errors == 0 and step.timeouts == 0
    assert step.rate > 10  # 8 seats answering within 50 ms
    assert 0 < step.p(0.5) <= step.p(0.95) <= step.p(0.99) < 1000
    assert step.hands >= 1 and step.samples.hands_started >= 1  # hands end and re-deal in the window
    assert 0 < step.server_cpu / step.seconds <= 1.05 and step.rss_mb > 20
    # the server reports its collections: every half second it collects before it freezes (generation 2)
    assert step.gc.counts[2] >= 4 and step.gc.longest[2] > 0 and step.gc.longest_work(2) > 0
    assert "(work≤" in step.gc.text()
    assert step.line().startswith("bench capacity N=4 actions/s=")
    assert capacity.summary(steps, None).startswith("bench capacity.max_tables ours=")
