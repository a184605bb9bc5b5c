"""``duel bench settle --quick`` keeps working: a short step of hand ends released at 20 hands/s through
the real table server, scoring and wallet, its figures sane and every end-of-run check passing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from duelmahjong.cli.bench import load
from duelmahjong.platform import eventloop

pytestmark = pytest.mark.integration


@pytest.mark.timeout(60)
def test_a_quick_settle_step_reports_sane_figures(tmp_path: Path) -> None:
    settle = load("settle")
    outcome = eventloop.run(settle.measure(tmp_path, settle.QUICK))
    (step,) = outcome.steps
    assert step.rate == 20 and step.released == 40 and step.short == 0  # the offered count, all armed
    assert step.settled == step.released and step.missing == 0 and step.errors == 0
    assert 0 < step.p(0.5) <= step.p(0.95) <= step.p(0.99) < settle.SETTLEMENT_WAIT_SECONDS * 1e3
    assert re.fullmatch(
        r"bench settle hands/s=20 p50=[\d.]+ p95=[\d.]+ p99=[\d.]+ ms settled=40 missing=0 errors=0",
        step.line(),
    )
    assert re.fullmatch(
        r"bench settle\.p99 ours=[\d.]+ms ref=js_relay [\d.]+ms ratio=[\d.]+ .*", step.ratio_line()
    )
    assert len(step.reference) == 40 and 0 < step.p(0.5, step.reference)  # every relayed message came back
    assert all(step.stages[name] for name in ("end", "scoring", "wallet", "table"))
    assert step.cpu["scoring"] > 0 and step.cpu["wallet"] > 0 and step.cpu["table"] > 0
    failed = [line for ok, line in outcome.checks if not ok]
    assert not failed, failed
