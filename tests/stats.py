"""Small statistics for the timing tests (tests/unit/test_claim_window.py, tests/e2e/test_claim_timing.py):
whether two samples of waits could come from one distribution, and a one-line summary of a sample."""

from __future__ import annotations

import math
import statistics


def ks_statistic(first: list[float], second: list[float]) -> float:
    """The two-sample Kolmogorov–Smirnov statistic: the largest gap between the empirical CDFs."""
    points = sorted(first + second)
    n, m = len(first), len(second)
    return max(abs(sum(x <= p for x in first) / n - sum(x <= p for x in second) / m) for p in points)


def ks_critical(n: int, m: int, alpha: float = 0.001) -> float:
    """The statistic above which two samples of sizes ``n`` and ``m`` differ at level ``alpha``."""
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def describe(name: str, sample: list[float]) -> str:
    q = statistics.quantiles(sample, n=20)
    return (
        f"{name}: n={len(sample)} min={min(sample):.1f} p5={q[0]:.1f} median={statistics.median(sample):.1f} "
        f"p95={q[-1]:.1f} max={max(sample):.1f} ms"
    )
