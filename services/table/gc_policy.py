"""How the table server runs Python's garbage collector: what lives long is frozen out of it.

A full collection walks every tracked object of the process and stops every table while it does. What
a live table keeps is long-lived and grows with its hands (its engine events and the events shown, a
few hundred tracked objects a hand), so with the collector as Python runs it a full collection walks
millions of objects at a couple of thousand tables, and pauses the process for hundreds of
milliseconds (``duel bench capacity``, docs/benchmarks.md).

So :class:`GcPolicy` periodically collects (a full collection, which walks only what is not frozen
yet: what was made since the last freeze) and then moves every object that survived into the
permanent generation (``gc.freeze()``), which no collection walks (``gc.freeze`` itself moves lists,
whatever their length). Collections, automatic or these, then cost what the last period left alive,
whatever the number of tables kept: where an unfrozen full collection walked 600,000 objects for
hundreds of ms at 1,000 tables, a freeze's collection walks the events just shown and the seats'
reads re-armed since the last one.

That grows with the period and the rate of actions: measured at 2,000 tables (≈1,000 actions/s), a
period of 0.5 s made pauses of 10–30 ms, 0.25 s under 10 ms, at the same CPU. So the period is not
fixed: after each freeze it moves toward the one whose collection would have taken
``pause_target_seconds``, between ``MIN_PERIOD_SECONDS`` and ``freeze_seconds`` (an idle server
freezes rarely, a busy one often, and the pause stays about the target; a ``freeze_seconds`` under
the floor is a fixed period).

What this costs: a frozen object is still freed when its last reference goes (reference counting), but
a *cycle* of frozen objects that becomes garbage is never collected. The table's own structures are
freed by reference counting when a table closes (``tests/unit/test_gc_policy.py`` checks that a
played and closed table leaves no cyclic garbage), and a cycle made and dropped between two freezes is
collected before the next one. ``close`` unfreezes, so a process that runs on after its table server
(tests) collects the frozen objects again.

The thresholds apply to the automatic collections (``gc.set_threshold``): the first is set high enough
that at these rates the freezes' collections are the only ones (one pause a period, not a young
collection every few hundred allocations as well).
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from dataclasses import dataclass

# The shortest period. Shortening it is free while what a collection walks is what lives long (each
# such object is walked once, then frozen), but an overloaded server's queued actions live for
# hundreds of ms, and a short period walks them where a longer one would have seen them freed: one
# step of 3,000 tables opened at once, saturated, ran 11 collections a second at a floor of 0.05 s.
MIN_PERIOD_SECONDS = 0.25


@dataclass(frozen=True, slots=True)
class GcSettings:
    freeze_seconds: float  # the longest period between freezes; 0: never freeze (Python's collector)
    thresholds: tuple[int, int, int]
    pause_target_seconds: float  # what a freeze's collection should take


class GcPolicy:
    """Sets the collector's thresholds and freezes what survives, periodically, while running."""

    __slots__ = ("_previous", "freezes", "last_pause", "period", "settings")

    def __init__(self, settings: GcSettings) -> None:
        self.settings = settings
        self.freezes = 0
        self.period = settings.freeze_seconds  # seconds until the next freeze
        self.last_pause = 0.0  # the last freeze's collection, seconds
        self._previous: tuple[int, int, int] | None = None

    def install(self) -> None:
        """Set the thresholds (the previous ones come back at :meth:`close`) and freeze what exists."""
        if self._previous is None:
            self._previous = gc.get_threshold()
        gc.set_threshold(*self.settings.thresholds)
        if self.settings.freeze_seconds > 0:
            self.freeze()

    def freeze(self) -> None:
        """Collect what is not frozen, then freeze what survived."""
        started = time.perf_counter()
        gc.collect()
        self.last_pause = time.perf_counter() - started
        gc.freeze()
        self.freezes += 1

    def adapt(self) -> None:
        """Move the period toward the one whose collection would have taken the target. The pause is
        about proportional to the period; the step is the square root of the ratio, so a collection
        slowed once (the process waiting for a core) does not halve the period on its own."""
        ratio = self.settings.pause_target_seconds / max(self.last_pause, 1e-6)
        period = self.period * math.sqrt(ratio)
        self.period = min(self.settings.freeze_seconds, max(MIN_PERIOD_SECONDS, period))

    async def run_forever(self) -> None:
        if self.settings.freeze_seconds <= 0:
            return
        while True:
            await asyncio.sleep(self.period)
            self.freeze()
            self.adapt()

    async def close(self) -> None:
        """Unfreeze and put the thresholds back, as a service closer."""
        if self.settings.freeze_seconds > 0:
            gc.unfreeze()
        if self._previous is not None:
            gc.set_threshold(*self._previous)
            self._previous = None
