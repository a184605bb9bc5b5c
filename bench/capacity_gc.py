"""What ``duel bench capacity`` reads of the table server besides its seats: its garbage-collector
pauses (``duel_table_gc_pause_seconds``, services/table/gc_pauses.py)."""

from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

GENERATIONS = 3


Buckets = tuple[tuple[float, float], ...]  # (bound, cumulative count), ascending


def _bound(buckets: Buckets, count: float) -> float:
    """The bound of the first bucket holding all ``count`` (0 when there are none)."""
    return next((b for b, n in buckets if n >= count), math.inf) if count else 0.0


@dataclass(frozen=True)
class Pauses:
    """Per generation: collections, the cumulative histograms (bound, count) of the pauses and of the
    collector's CPU time in them, the longest pause and whether it is exact (the server's all-time
    longest rose in the window) or a bucket bound."""

    counts: tuple[float, ...]
    buckets: tuple[Buckets, ...]
    longest: tuple[float, ...]
    exact: tuple[bool, ...] = (True, True, True)
    work: tuple[Buckets, ...] = ((), (), ())

    def since(self, before: Pauses) -> Pauses:
        counts, buckets, longest, exact, work = [], [], [], [], []
        for g in range(GENERATIONS):
            count = self.counts[g] - before.counts[g]
            delta = _delta(self.buckets[g], before.buckets[g])
            counts.append(count)
            buckets.append(delta)
            work.append(_delta(self.work[g], before.work[g]))
            if self.longest[g] > before.longest[g]:
                longest.append(self.longest[g])
                exact.append(True)
            else:  # the window's longest is under the bound of the first bucket holding every pause
                longest.append(_bound(delta, count))
                exact.append(not count)
        return Pauses(tuple(counts), tuple(buckets), tuple(longest), tuple(exact), tuple(work))

    def longest_work(self, generation: int) -> float:
        """The bucket bound under which the collector's CPU time in each of the window's pauses was."""
        return _bound(self.work[generation], self.counts[generation]) if self.work[generation] else 0.0

    def text(self) -> str:
        """Per generation ``gN:count/longest pause`` and, where there were pauses, ``(work≤…)``: the
        collector's own CPU time in the longest (a pause longer than that waited for a core)."""
        return " ".join(
            f"g{g}:{self.counts[g]:.0f}/{'' if self.exact[g] else '≤'}{self.longest[g] * 1e3:.1f}ms"
            + (f"(work≤{self.longest_work(g) * 1e3:.1f}ms)" if self.counts[g] and self.work[g] else "")
            for g in range(GENERATIONS)
        )


def _delta(now: Buckets, then: Buckets) -> Buckets:
    if not then:
        return now
    return tuple((bound, count - old) for (bound, count), (_, old) in zip(now, then, strict=True))


def read(metrics_url: str) -> Pauses:
    """The server's pauses so far (zeros where the metric is not served)."""
    with urllib.request.urlopen(metrics_url, timeout=5) as reply:
        return parse(reply.read().decode())


def parse(text: str) -> Pauses:
    """The pauses in a Prometheus exposition of the server's metrics."""
    counts = [0.0] * GENERATIONS
    buckets: list[list[tuple[float, float]]] = [[] for _ in range(GENERATIONS)]
    work: list[list[tuple[float, float]]] = [[] for _ in range(GENERATIONS)]
    longest = [0.0] * GENERATIONS
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            generation = sample.labels.get("generation")
            if generation is None:
                continue
            g = int(generation)
            if sample.name == "duel_table_gc_pause_seconds_count":
                counts[g] = sample.value
            elif sample.name == "duel_table_gc_pause_seconds_bucket":
                buckets[g].append((float(sample.labels["le"]), sample.value))
            elif sample.name == "duel_table_gc_work_seconds_bucket":
                work[g].append((float(sample.labels["le"]), sample.value))
            elif sample.name == "duel_table_gc_longest_pause_seconds":
                longest[g] = sample.value
    return Pauses(
        tuple(counts),
        tuple(tuple(sorted(b)) for b in buckets),
        tuple(longest),
        work=tuple(tuple(sorted(w)) for w in work),
    )
