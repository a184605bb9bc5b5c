"""``duel bench capacity`` keeps working: four tables of fast seats for a few seconds through a real
table server, its figures sane and hands ended and re-dealt inside the window."""

from __future__ import annotations

from pathlib import Path

import pytest

from duelmahjong.cli.bench import load
from duelmahjong.platform import eventloop
from duelmahjong.platform.embedded import EmbeddedNats

pytestmark = pytest.mark.integration


percentile = load("stack_probes").percentile
NO_PAUSES = load("capacity_gc").Pauses((0.0, 0.0, 0.0), ((), (), ()), (0.0, 0.0, 0.0))


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
    # the server reports its collections: at least once a second it collects before it freezes
    # (generation 2), as often as its pauses allow (services/table/gc_policy.py)
    assert step.gc.counts[2] >= 2 and step.gc.longest[2] > 0 and step.gc.longest_work(2) > 0
    assert "(work≤" in step.gc.text()
    assert step.line().startswith("bench capacity N=4 actions/s=")
    assert 0 < step.attach_seconds < 30 and step.line().endswith(f"attach={step.attach_seconds:.1f}s")
    assert step.samples.attached == 8  # every seat attached before any played
    assert capacity.summary(steps, None).startswith("bench capacity.max_tables ours=")


@pytest.mark.timeout(60)
def test_the_wire_floor_at_the_seats_pace_is_measured_and_compared(tmp_path: Path) -> None:
    capacity, capacity_wire = load("capacity"), load("capacity_wire")
    with EmbeddedNats(tmp_path / "nats") as nats_server:
        tls = load("common").BenchTls.issue(tmp_path / "tls")
        wire = eventloop.run(capacity_wire.measure(nats_server.url, 4, (0.01, 0.05), 0.5, 3.0, tls))
    # the window is the loop's own 3 s sleep, which may wake a clock tick early by perf_counter
    assert wire.tables == 4 and 2.9 <= wire.seconds < 4.0
    assert wire.sent / wire.seconds > 20  # 4 tables, one action in flight each, thinking ≤ 50 ms
    assert 0 < percentile(wire.latencies, 0.5) <= percentile(wire.latencies, 0.99) < 1.0
    assert 0 < wire.cpu_per_action_ms < 50
    assert wire.line().startswith("bench capacity.wire N=4 actions/s=")
    assert capacity_wire.reference_tables([100, 1000, 2000]) == 1000
    assert capacity_wire.reference_tables([1500, 2000]) == 1500

    samples = load("capacity_seats").Samples(latencies=[0.002] * 100, sent=100)
    step = capacity.Step(4, 10.0, samples, 0.1, 50.0, NO_PAUSES, 1, 0, 0.5)
    lines = capacity.summary([step], wire).splitlines()
    assert lines[0] == "bench capacity.max_tables ours=4 p99<50ms server_cpu_per_action=1.000ms"
    ratio = wire.cpu_per_action_ms / 1.0
    assert lines[1] == (
        f"bench capacity.cpu N=4 ours=1.000ms wire={wire.cpu_per_action_ms:.3f}ms per action "
        f"ratio(wire/ours)={ratio:.2f}"
    )
    assert len(capacity.summary([step], None).splitlines()) == 1  # no reference, no comparison

    # TLS on against TLS off, step by step: the CPU per action and the p99 of each, and their ratios.
    plain_samples = load("capacity_seats").Samples(latencies=[0.001] * 100, sent=100)
    plain = capacity.Step(4, 10.0, plain_samples, 0.08, 50.0, NO_PAUSES, 1, 0, 0.5, tls=False)
    assert plain.line().startswith("bench capacity.plain N=4 actions/s=")
    compared = capacity.summary([step], None, [plain]).splitlines()
    assert compared[-1] == (
        "bench capacity.tls N=4 cpu/action tls=1.000ms plain=0.800ms ratio=1.25 "
        "p99 tls=2.0ms plain=1.0ms ratio=2.00"
    )
