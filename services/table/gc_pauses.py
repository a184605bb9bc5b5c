"""The garbage collector's pauses in this process, as table-server metrics.

A full collection stops every table of the process at once: at a few hundred live tables its pause is
what breaks the action→event p99 (``duel bench capacity``). A ``gc.callbacks`` hook times each
collection. It runs inside the collector, so it only adds to plain lists — no lock, no allocation
beyond a float: an allocation-triggered collection can start while this thread holds a metric's lock,
and taking it again there would deadlock. A collector turns the lists into metrics at scrape time:

* ``duel_table_gc_pause_seconds`` — histogram of pauses by ``generation`` (0, 1, 2);
* ``duel_table_gc_work_seconds`` — histogram of the CPU time the collector spent in each (this
  thread's): on a machine short of cores a pause can be longer than the work, the process waiting
  for a core meanwhile, and only the work is the collector's to answer for;
* ``duel_table_gc_longest_pause_seconds`` — the longest pause of each generation since start.
"""

from __future__ import annotations

import gc
import time
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from duelmahjong.platform.metrics import ServiceMetrics

GENERATIONS = 3
# Young collections take tens of microseconds, full ones up to hundreds of milliseconds: buckets fine
# enough at both ends that a window's longest pause is known within about a third.
PAUSE_BUCKETS = (
    *(0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075),
    *(0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.0),
)


class _Histogram:
    """Per generation: a count per bucket (the last one past the largest bound, +Inf) and the sum."""

    __slots__ = ("counts", "sums")

    def __init__(self) -> None:
        self.counts = [[0] * (len(PAUSE_BUCKETS) + 1) for _ in range(GENERATIONS)]
        self.sums = [0.0] * GENERATIONS

    def add(self, generation: int, seconds: float) -> None:
        self.counts[generation][bisect_left(PAUSE_BUCKETS, seconds)] += 1
        self.sums[generation] += seconds

    def family(self, name: str, documentation: str) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, documentation, labels=["generation"])
        bounds = [*(str(bound) for bound in PAUSE_BUCKETS), "+Inf"]
        for generation in range(GENERATIONS):
            cumulative = accumulate(list(self.counts[generation]))  # a copy: the hook may add meanwhile
            buckets = list(zip(bounds, (float(count) for count in cumulative), strict=True))
            family.add_metric([str(generation)], buckets, self.sums[generation])
        return family


class GcPauses(Collector):
    """Times every collection of this process while installed; a Prometheus collector of the pauses."""

    __slots__ = ("_longest", "_longest_name", "_names", "_pauses", "_started", "_started_work", "_work")

    def __init__(self, metrics: ServiceMetrics) -> None:
        self._started = self._started_work = 0.0
        self._pauses = _Histogram()
        self._work = _Histogram()
        self._longest = [0.0] * GENERATIONS
        self._names = (metrics.name("gc_pause", "seconds"), metrics.name("gc_work", "seconds"))
        self._longest_name = metrics.name("gc_longest_pause", "seconds")
        metrics.registry.register(self)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            self._started_work = time.thread_time()
            return
        paused = time.perf_counter() - self._started
        generation = info["generation"]
        self._pauses.add(generation, paused)
        self._work.add(generation, time.thread_time() - self._started_work)
        if paused > self._longest[generation]:
            self._longest[generation] = paused

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)

    async def close(self) -> None:
        """Uninstall, as a service closer."""
        self.uninstall()

    def collect(self) -> Iterator[HistogramMetricFamily | GaugeMetricFamily]:
        yield self._pauses.family(self._names[0], "garbage-collector pauses, by generation")
        yield self._work.family(self._names[1], "CPU time the collector spent in each pause, by generation")
        longest = GaugeMetricFamily(
            self._longest_name, "the longest garbage-collector pause since start", labels=["generation"]
        )
        for generation in range(GENERATIONS):
            longest.add_metric([str(generation)], self._longest[generation])
        yield longest
