"""The shared benchmark harness: timed runs, medians, and the one print format of every figure.

``compare`` times our callable and the reference's alternately (ours, ref, ours, ref, …) so both see
the same machine load, each run long enough to dwarf timer noise, and reports the medians::

    bench rules.win ours=3301245/s ref=mahjong 190712/s ratio=17.31
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

MIN_RUNS = 5


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured comparison: operations per second, medians over ``runs`` runs."""

    name: str  # e.g. "rules.win"
    ours: float
    reference: str  # library name
    theirs: float
    runs: int

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs if self.theirs else float("inf")

    def line(self) -> str:
        return (
            f"bench {self.name} ours={self.ours:.0f}/s ref={self.reference} {self.theirs:.0f}/s "
            f"ratio={self.ratio:.2f}"
        )


def rate(batch: Callable[[], int], min_seconds: float) -> float:
    """Operations per second of ``batch`` (one call = one pass over a corpus, returning how many
    operations it did), repeating it until ``min_seconds`` have passed."""
    operations = 0
    start = time.perf_counter()
    while True:
        operations += batch()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return operations / elapsed


def compare(
    name: str,
    ours: Callable[[], int],
    reference: str,
    theirs: Callable[[], int],
    *,
    runs: int = MIN_RUNS,
    min_seconds: float = 0.2,
) -> Figure:
    """Median rates of ``ours`` and ``theirs``, measured alternately in the same process."""
    runs = max(runs, MIN_RUNS)
    ours(), theirs()  # warm-up: imports, caches, first-use tables
    our_rates, their_rates = [], []
    for _ in range(runs):
        our_rates.append(rate(ours, min_seconds))
        their_rates.append(rate(theirs, min_seconds))
    return Figure(name, statistics.median(our_rates), reference, statistics.median(their_rates), runs)


def timed(action: Callable[[], object]) -> float:
    """Seconds one call of ``action`` takes."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start
