"""A table server picks up the tables nobody serves: orphans it wins, and tables handed to it.

Every ``poll_seconds`` the adopter looks at what the ownership watch shows (no request to NATS):

- a table recorded as this server's (this incarnation) that it does not serve was handed to it by a
  draining server: it serves it;
- an orphan (its owner's lease is dead) is taken by compare-and-set, then served — if this server
  has room. A server waits a little longer the fuller it is, so the emptiest servers try first and
  the load spreads; a lost compare-and-set just means another server won it.

Serving a table (``serve``) is the host's: rebuild it from its write-ahead log and open it to its
seats. A table that cannot be served (its log unreadable) stays recorded as this server's and is
tried again at the next poll; matchmaking's "lost table → close" remains the last resort.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import nats.errors
from prometheus_client import Counter, Gauge, Histogram

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from services.table.ownership import Ownership

POLL_SECONDS = 0.25
# An orphan nobody had room for this long is given up (its owner record deleted), before matchmaking's
# last-resort close (MATCHMAKING_ADOPTION_GRACE_SECONDS, 20 s, after it declares the server lost), so
# no server can adopt a table matchmaking has closed.
GIVE_UP_SECONDS = 15.0
_log = get_logger("table.adoption")


@dataclass
class AdoptionMetrics:
    adopted: Counter
    latency: Histogram
    failures: Counter
    orphans: Gauge
    lease_renew_failures: Counter

    @classmethod
    def create(cls, metrics: ServiceMetrics) -> AdoptionMetrics:
        return cls(
            adopted=metrics.counter(
                "tables_adopted", "total", "tables this server took over, by how", ["how"]
            ),
            latency=metrics.histogram(
                "adoption_latency",
                "seconds",
                "the owner's last lease renewal seen → the table served here again",
                buckets=(1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 60),
            ),
            failures=metrics.counter("adoption_failures", "total", "tables taken but not served"),
            orphans=metrics.gauge("orphan_tables", "count", "tables whose owner holds no live lease"),
            lease_renew_failures=metrics.counter(
                "lease_renew_failures",
                "total",
                "renewals of this server's lease that failed (its tables are adopted elsewhere once "
                "none succeeds for TABLE_LEASE_SECONDS)",
            ),
        )


class Adopter:
    """The loop that serves orphans and hand-offs on one server."""

    def __init__(
        self,
        ownership: Ownership,
        *,
        serving: Callable[[str], bool],
        room: Callable[[], int],
        serve: Callable[[str, str], Awaitable[bool]],
        metrics: AdoptionMetrics | None = None,
        poll_seconds: float = POLL_SECONDS,
        give_up_seconds: float = GIVE_UP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ownership = ownership
        self._serving = serving  # is this table live on this server?
        self._room = room  # tables this server may still take
        self._serve = serve  # (table id, how: 'orphan' or 'handed_over')
        self.metrics = metrics
        self.poll_seconds = poll_seconds
        self.give_up_seconds = give_up_seconds
        self._orphaned_at: dict[str, float] = {}  # when this server first saw each orphan
        self._clock = clock

    async def run_forever(self) -> None:
        while True:
            try:
                await self.poll()
            except (nats.errors.Error, TimeoutError, OSError) as err:  # NATS away or electing
                _log.warning(
                    "adoption poll failed; the next one tries again", extra={"fields": {"error": repr(err)}}
                )
            except Exception:  # a bad record: the next poll tries again
                _log.exception("adoption poll failed")
            await asyncio.sleep(self.poll_seconds)

    async def poll(self) -> None:
        for table_id in self.ownership.owned():
            if not self._serving(table_id) and self._room() > 0:
                await self._take_over(table_id, "handed_over", since=None)
        orphans = self.ownership.orphans()
        if self.metrics is not None:
            self.metrics.orphans.set(len(orphans))
        now = self._clock()
        for table_id in list(self._orphaned_at):
            if table_id not in orphans:
                del self._orphaned_at[table_id]
        for table_id in orphans:
            first = self._orphaned_at.setdefault(table_id, now)
            if now - first > self.give_up_seconds:  # matchmaking will close it: nobody may adopt it
                if await self.ownership.abandon(table_id):
                    _log.warning(
                        "orphan given up: no server took it", extra={"fields": {"table_id": table_id}}
                    )
                del self._orphaned_at[table_id]
        if not orphans or self._room() <= 0:
            return
        await asyncio.sleep(self.poll_seconds * self._fullness())  # the emptiest servers go first
        for table_id in self.ownership.orphans():
            if self._room() <= 0:
                return
            owner = self.ownership.owner(table_id)
            since = None if owner is None else self.ownership.last_renewed(owner.server_id, owner.incarnation)
            if await self.ownership.take(table_id):
                await self._take_over(table_id, "orphan", since=since)

    def _fullness(self) -> float:
        lease = self.ownership.lease
        return 0.0 if lease.capacity <= 0 else min(1.0, lease.load / lease.capacity)

    async def _take_over(self, table_id: str, how: str, since: float | None) -> None:
        try:
            served = await self._serve(table_id, how)
        except Exception:
            _log.exception(
                "table taken but not served; tried again", extra={"fields": {"table_id": table_id}}
            )
            if self.metrics is not None:
                self.metrics.failures.inc()
            return
        if not served:
            return
        latency = None if since is None else self._clock() - since
        _log.info(
            "table adopted",
            extra={"fields": {"table_id": table_id, "how": how, "latency_seconds": latency}},
        )
        if self.metrics is not None:
            self.metrics.adopted.labels(how=how).inc()
            if latency is not None:
                self.metrics.latency.observe(latency)
