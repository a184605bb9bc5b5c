"""A table server's part in keeping tables alive past the process that hosts them.

- **Opening**: a new table is recorded as this server's (:meth:`Ownership.claim`) before it is served.
- **Adoption**: the :class:`~services.table.adoption.Adopter` hands this module the tables to serve —
  orphans it won and tables handed to it. Each is read back from its write-ahead log, rebuilt
  (:func:`services.table.rebuild.rebuild`), served from where its log ends (appends fenced on that
  end) and announced as ``TableAdopted`` so matchmaking and the seats' clients find it here.
- **Losing a table**: when the ownership watch shows another server took a table this one serves (it
  was paused, or cut off from NATS, long enough to lose its lease), the table is let go at once:
  nothing more is written or sent, the seats' streams end.
- **Closing**: a table that closes for good gives up its ownership record.
- **Drain** (:meth:`hand_off`): each live table stops after the step in hand and is handed, by
  compare-and-set, to the live server with the most room; the seats' clients follow it there.
  Tables no server can take are left to the old drain (finish the hand, then close).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from duelmahjong.platform.bus import Bus
from duelmahjong.platform.errors import FailedPrecondition, Unavailable
from duelmahjong.platform.logging import get_logger
from duelmahjong.v1 import events_pb2
from services.table.adoption import Adopter, AdoptionMetrics
from services.table.core import TableHost
from services.table.ownership import Lease, Ownership, TableTaken
from services.table.ports import OpenRequest, TableEvents
from services.table.rebuild import rebuild
from services.table.wal import read_table_log

_log = get_logger("table.failover")
STARTING_SECONDS = 10.0
HOW = {
    "orphan": events_pb2.ADOPTION_KIND_ORPHAN,
    "handed_over": events_pb2.ADOPTION_KIND_HANDED_OVER,
}


class Failover:
    """Ownership, adoption and hand-off for one table server's host."""

    def __init__(
        self,
        bus: Bus,
        host: TableHost,
        events: TableEvents,
        *,
        lease_seconds: float,
        bucket: str,
        metrics: AdoptionMetrics | None = None,
    ) -> None:
        self.bus = bus
        self.host = host
        self.events = events
        self.lease_seconds = lease_seconds
        self.bucket = bucket
        self.metrics = metrics
        self.ownership: Ownership | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = asyncio.Event()

    async def start(self, server_id: str) -> Adopter:
        """Put this server's lease and read the owners; the adopter to run (the caller spawns it)."""
        host = self.host
        self.ownership = Ownership(
            self.bus,
            Lease(server_id, host.incarnation, host.address, host.capacity),
            lease_seconds=self.lease_seconds,
            bucket=self.bucket,
            on_taken=self._taken,
            room=lambda: (host.capacity, len(host.live_tables), host.draining),
            on_renew_failed=None if self.metrics is None else self.metrics.lease_renew_failures.inc,
        )
        await self.ownership.start()
        self._started.set()
        host.on_closed = self._closed
        return Adopter(
            self.ownership,
            serving=lambda table_id: table_id in host.live_tables,
            room=lambda: 0 if host.draining else host.free_capacity,
            serve=self.serve,
            metrics=self.metrics,
        )

    async def stop(self, *, release: bool) -> None:
        for task in list(self._tasks):
            await asyncio.gather(task, return_exceptions=True)
        if self.ownership is not None:
            await self.ownership.stop(release=release)

    async def open(self, request: OpenRequest) -> None:
        """Open a table here, recorded as this server's first (a repeated OpenTable of a table served
        here is the host's idempotent answer). Refused if the server's lease is not put within
        STARTING_SECONDS (it starts), and if another server holds the table; a table the host then
        refuses (full, draining) gives its record up again."""
        table_id = request.table_id
        if table_id in self.host.live_tables:
            self.host.open(request)
            return
        self.host.check_capacity()
        try:  # the lease is put right after the gRPC port is bound: a fresh server waits a moment
            await asyncio.wait_for(self._started.wait(), STARTING_SECONDS)
        except TimeoutError:
            raise Unavailable("this table server is starting: it cannot own a table yet") from None
        ownership = self.ownership
        assert ownership is not None
        try:
            await ownership.claim(table_id)
        except TableTaken:
            raise FailedPrecondition(f"table {table_id} is already served by another table server") from None
        try:
            self.host.open(request)
        except BaseException:
            await ownership.release(table_id)
            raise

    async def serve(self, table_id: str, how: str) -> bool:
        """Serve a table this server now owns: rebuilt from its log, announced where it is. False
        if there was nothing to serve."""
        log, log_end = await read_table_log(self.bus, table_id)
        if not log:  # claimed, then its server died before it wrote a record: nothing to serve
            assert self.ownership is not None
            await self.ownership.release(table_id)
            _log.warning("owned table with no log given up", extra={"fields": {"table_id": table_id}})
            return False
        table = self.host.adopt(rebuild(log, now=self.host.now()), log_end)
        assert self.ownership is not None
        await self.events.table_adopted(
            table.state.request,
            HOW[how],
            server_id=self.ownership.lease.server_id,
            address=self.host.address,
            incarnation=self.host.incarnation,
        )
        return True

    def _taken(self, table_id: str) -> None:
        table = self.host.live_tables.get(table_id)
        if table is not None:
            self._spawn(table.taken())

    def _closed(self, table_id: str) -> None:
        if self.ownership is not None:
            self._spawn(self.ownership.release(table_id))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def hand_off(self) -> list[str]:
        """Drain: hand every live table to a live server with room; the tables kept (none had room,
        or a compare-and-set was lost), which the old drain then finishes."""
        ownership = self.ownership
        if ownership is None:
            return list(self.host.live_tables)
        me = ownership.lease.server_id
        room = {lease.server_id: lease for lease in ownership.live() if lease.server_id != me}
        free = {server_id: lease.room for server_id, lease in room.items()}
        kept = []
        for table_id, table in list(self.host.live_tables.items()):
            target = max(free, key=lambda server_id: free[server_id], default=None)
            if target is None or free[target] <= 0:
                kept.append(table_id)
                continue
            await table.hand_off()
            if await ownership.take(table_id, to=room[target]):
                free[target] -= 1
                _log.info("table handed over", extra={"fields": {"table_id": table_id, "to": target}})
            else:  # someone changed the record meanwhile: nobody serves it here any more either way
                _log.warning("hand-off lost its compare-and-set", extra={"fields": {"table_id": table_id}})
        return kept
