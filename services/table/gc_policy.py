"""How the table server runs Python's garbage collector: what lives long is frozen out of it.

A full collection walks every tracked object of the process and stops every table while it does. What
a live table keeps is long-lived and grows with its hands (its engine events and the events shown, a
few hundred tracked objects a hand), so with the collector as Python runs it a full collection walks
millions of objects at a couple of thousand tables, and pauses the process for hundreds of
milliseconds (``duel bench capacity``, docs/benchmarks.md).

So every ``freeze_seconds`` :class:`GcPolicy` collects (a full collection, which walks only what is not
frozen yet: what was made since the last freeze) and then moves every object that survived into the
permanent generation (``gc.freeze()``), which no collection walks (``gc.freeze`` itself moves lists,
whatever their length). Collections, automatic or these, then cost what the last period left alive,
whatever the number of tables: at 1,000 tables half a second leaves about 12,000 objects (the
events just shown, the seats' pending reads re-armed), a collection of about 3 ms, where an unfrozen
full collection walked 600,000 for hundreds of ms. The pause grows with the period.

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
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GcSettings:
    freeze_seconds: float  # 0: never freeze (the collector as Python runs it)
    thresholds: tuple[int, int, int]


class GcPolicy:
    """Sets the collector's thresholds and freezes what survives, periodically, while running."""

    __slots__ = ("_previous", "freezes", "settings")

    def __init__(self, settings: GcSettings) -> None:
        self.settings = settings
        self.freezes = 0
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
        gc.collect()
        gc.freeze()
        self.freezes += 1

    async def run_forever(self) -> None:
        if self.settings.freeze_seconds <= 0:
            return
        while True:
            await asyncio.sleep(self.settings.freeze_seconds)
            self.freeze()

    async def close(self) -> None:
        """Unfreeze and put the thresholds back, as a service closer."""
        if self.settings.freeze_seconds > 0:
            gc.unfreeze()
        if self._previous is not None:
            gc.set_threshold(*self._previous)
            self._previous = None
