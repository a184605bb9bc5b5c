"""The table server's GC-pause metrics: every collection is timed by generation, exposed at scrape time."""

from __future__ import annotations

import gc

from prometheus_client.parser import text_string_to_metric_families

from duelmahjong.cli.bench import load
from duelmahjong.platform.metrics import ServiceMetrics
from services.table.gc_pauses import GcPauses

capacity_gc = load("capacity_gc")  # bench/ is not an installed package


def _samples(metrics: ServiceMetrics) -> dict[tuple[str, str, str], float]:
    text = metrics.exposition().decode()
    return {
        (s.name, s.labels.get("generation", ""), s.labels.get("le", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_each_collection_is_counted_in_its_generation_and_the_longest_is_kept() -> None:
    metrics = ServiceMetrics("table")
    pauses = GcPauses(metrics)
    pauses.install()
    try:
        for generation in (0, 1, 2, 2):
            gc.collect(generation)
    finally:
        pauses.uninstall()
    samples = _samples(metrics)
    assert pauses not in gc.callbacks
    assert samples["duel_table_gc_pause_seconds_count", "2", ""] >= 2  # automatic ones may add more
    assert samples["duel_table_gc_pause_seconds_count", "1", ""] >= 1
    assert (
        samples["duel_table_gc_pause_seconds_bucket", "2", "+Inf"]
        == samples["duel_table_gc_pause_seconds_count", "2", ""]
    )
    longest = samples["duel_table_gc_longest_pause_seconds", "2", ""]
    assert 0 < longest <= samples["duel_table_gc_pause_seconds_sum", "2", ""] < 1.0


def test_nothing_is_timed_once_uninstalled() -> None:
    metrics = ServiceMetrics("table")
    pauses = GcPauses(metrics)
    pauses.install()
    pauses.install()  # once only
    assert gc.callbacks.count(pauses) == 1
    pauses.uninstall()
    gc.collect()
    assert _samples(metrics)["duel_table_gc_pause_seconds_count", "2", ""] == 0


def test_the_capacity_bench_reads_a_windows_pauses_and_the_collectors_work_in_them() -> None:
    metrics = ServiceMetrics("table")
    pauses = GcPauses(metrics)
    before = capacity_gc.parse(metrics.exposition().decode())
    pauses.install()
    try:
        gc.collect(1)
        gc.collect(1)
    finally:
        pauses.uninstall()
    window = capacity_gc.parse(metrics.exposition().decode()).since(before)
    assert window.counts[1] >= 2 and window.counts[0] == window.counts[2] == 0
    assert 0 < window.longest_work(1) <= 1.0  # a bucket bound over the collector's CPU time
    text = window.text()
    assert text.startswith("g0:0/0.0ms g1:") and "(work≤" in text and text.endswith("g2:0/0.0ms")
