"""The numbers of an evaluation: per-agent tallies that merge across worker processes, and the mean
with its 95 % confidence interval.

The interval is over wall pairs: each pair's sum (A's settlement with A in seat 0 plus with A in seat
1) is one independent sample, since walls are drawn independently; the two games of a pair share the
wall and are not independent of each other. Per hand = per pair / 2.

>>> mean_ci([2.0, 4.0, 6.0, 8.0])
(5.0, 2.53)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

Z95 = 1.959964  # the normal quantile: a pair count in the thousands makes Student's t the same


def mean_ci(samples: Sequence[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95 % interval (normal approximation, sample variance);
    the half-width is rounded to 2 places, inf with fewer than two samples."""
    n = len(samples)
    if n == 0:
        return 0.0, math.inf
    mean = math.fsum(samples) / n
    if n < 2:
        return mean, math.inf
    variance = math.fsum((x - mean) ** 2 for x in samples) / (n - 1)
    return mean, round(Z95 * math.sqrt(variance / n), 2)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class SeatTally:
    """One agent's hands: wins, deal-ins, drawn hands, the fan of its wins, decision times."""

    hands: int = 0
    wins: int = 0
    deal_ins: int = 0
    drawn: int = 0
    win_fan: int = 0
    times: list[float] = field(default_factory=list)

    def merge(self, other: SeatTally) -> None:
        self.hands += other.hands
        self.wins += other.wins
        self.deal_ins += other.deal_ins
        self.drawn += other.drawn
        self.win_fan += other.win_fan
        self.times.extend(other.times)

    def rate(self, count: int) -> float:
        return count / self.hands if self.hands else 0.0

    @property
    def mean_win_fan(self) -> float:
        return self.win_fan / self.wins if self.wins else 0.0


@dataclass
class Tally:
    """An evaluation's raw results: A's duplicate sample per wall pair, and each agent's tally."""

    pair_totals: list[int] = field(default_factory=list)
    a: SeatTally = field(default_factory=SeatTally)
    b: SeatTally = field(default_factory=SeatTally)
    seconds: float = 0.0

    def merge(self, other: Tally) -> None:
        self.pair_totals.extend(other.pair_totals)
        self.a.merge(other.a)
        self.b.merge(other.b)

    @property
    def hands(self) -> int:
        return 2 * len(self.pair_totals)

    def per_hand(self) -> tuple[float, float]:
        """A's mean settlement per hand against B (1番 units) and its 95 % half-width."""
        mean, half = mean_ci(self.pair_totals)
        return mean / 2, half / 2
