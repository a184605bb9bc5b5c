"""Who serves which live table: server leases and table owners in a JetStream key-value bucket.

The bucket (``DUEL_TABLE_OWNERS``, one revision per key, the deployment's replicas) holds two kinds
of key:

- ``servers.<server_id>`` — a table server's lease: its incarnation (fresh at every process start)
  and address, put again every ``renew_seconds`` by that server alone. A lease is alive while a
  watcher has seen it renewed within ``lease_seconds``, on the watcher's own monotonic clock, so no
  two machines' clocks are ever compared.
- ``tables.<table_id>`` — the table's owner (server id and incarnation): created by the server that
  opens the table, replaced by compare-and-set on the revision read (an adoption, a hand-off) and
  deleted when the table closes. The store's compare-and-set makes one writer win every race.

A table is **orphaned** when its owner no longer holds a live lease: the server stopped renewing
(killed, paused, cut off), deleted its lease on the way out, or came back as another incarnation.
Every server watches the whole bucket (a few hundred bytes a table), so it sees orphans without
asking, and sees at once when a table it serves has been taken by another server.

Why a key-value bucket: it is JetStream, already the bus of every service and replicated with it;
compare-and-set on a key's revision is exactly the ownership question, and a watch delivers every
change to every server. One lease per server, not per table, keeps renewals at a few per second
however many tables there are.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import nats.errors
import nats.js.errors
from nats.js import api
from nats.js.kv import KeyValue

from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.tasks import cancel_and_wait

BUCKET = "DUEL_TABLE_OWNERS"
LEASE_SECONDS = 5.0
_ECHO_MARGIN = 0.5  # seconds a renewal may take to come back through the watch on a busy server
_SERVERS, _TABLES = "servers.", "tables."

_log = get_logger("table.ownership")


@dataclass(frozen=True)
class Lease:
    """A table server as its lease names it, with its room as of its last renewal."""

    server_id: str
    incarnation: str
    address: str
    capacity: int = 0
    load: int = 0
    draining: bool = False

    @property
    def room(self) -> int:
        return 0 if self.draining else max(0, self.capacity - self.load)


@dataclass(frozen=True)
class Owner:
    """The owner recorded for a table, and the key's revision it was read at (for compare-and-set)."""

    server_id: str
    incarnation: str
    revision: int


@dataclass
class _Seen:
    lease: Lease
    at: float  # the watcher's monotonic clock when this lease was last renewed


class TableTaken(Exception):
    """Another server owns the table now (the compare-and-set lost)."""


class Ownership:
    """One table server's view of the bucket, and its writes to it."""

    def __init__(
        self,
        bus: Bus,
        lease: Lease,
        *,
        lease_seconds: float = LEASE_SECONDS,
        bucket: str = BUCKET,
        on_taken: Callable[[str], None] | None = None,
        room: Callable[[], tuple[int, int, bool]] | None = None,
        on_renew_failed: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bus = bus
        self.lease = lease
        self.lease_seconds = lease_seconds
        self.renew_seconds = lease_seconds / 5
        self.bucket = bucket
        self._on_taken = on_taken  # a table this server owned has another owner now
        self._room = room  # (capacity, load, draining) now, put in every renewal
        self._on_renew_failed = on_renew_failed  # counted where operators see it (a metric)
        self._clock = clock
        self._kv: KeyValue | None = None
        self._servers: dict[str, _Seen] = {}
        # By (server id, incarnation): kept after a lease is deleted or replaced by the server's next
        # incarnation, so an adoption's latency runs from the renewal of the owner that died.
        self._renewed_at: dict[tuple[str, str], float] = {}
        self._tables: dict[str, Owner] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._caught_up = asyncio.Event()

    @property
    def kv(self) -> KeyValue:
        if self._kv is None:
            raise RuntimeError("Ownership.start() first")
        return self._kv

    async def start(self) -> None:
        """Open the bucket, put this server's lease and read every key once before returning."""
        js = self.bus.js
        try:
            self._kv = await js.key_value(self.bucket)
        except nats.js.errors.BucketNotFoundError:
            config = api.KeyValueConfig(
                bucket=self.bucket,
                history=1,
                replicas=self.bus.storage.replicas,
                storage=api.StorageType.FILE,
            )
            self._kv = await js.create_key_value(config=config)
        # The bucket's stream may still be electing its leader (a replicated bucket just created, a
        # cluster node lost): the first lease is put again until it is stored, as a publish would be.
        await self.bus.until_stored(self._renew, what={"lease": self.lease.server_id})
        self._tasks.append(asyncio.create_task(self._watch(), name="ownership-watch"))
        self._tasks.append(asyncio.create_task(self._renew_forever(), name="ownership-renew"))
        await self._caught_up.wait()

    async def stop(self, *, release: bool) -> None:
        """Stop renewing; with ``release`` also delete the lease, so the tables still recorded as this
        server's are orphaned at once instead of after ``lease_seconds``."""
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        if release and self._kv is not None:
            try:
                await self._kv.delete(_SERVERS + self.lease.server_id)
            except (nats.errors.Error, TimeoutError) as err:
                _log.warning(
                    "lease not deleted; it expires by itself", extra={"fields": {"error": repr(err)}}
                )

    # --- writes -------------------------------------------------------------------------------------

    async def claim(self, table_id: str) -> None:
        """Record this server as the owner of a table it opens; :class:`TableTaken` if one exists."""
        try:
            revision = await self.kv.create(_TABLES + table_id, self._mine())
        except nats.js.errors.KeyWrongLastSequenceError as err:
            raise TableTaken(f"table {table_id} already has an owner") from err
        self._tables[table_id] = Owner(self.lease.server_id, self.lease.incarnation, revision)

    async def take(self, table_id: str, to: Lease | None = None) -> bool:
        """Compare-and-set the table's owner from the one read to ``to`` (default: this server) — an
        adoption of an orphan, or a hand-off to another server. False if someone changed it first."""
        owner = self._tables.get(table_id)
        if owner is None:
            return False
        value = self._mine() if to is None else _encode(to.server_id, to.incarnation)
        try:
            revision = await self.kv.update(_TABLES + table_id, value, last=owner.revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            return False
        target = to or self.lease
        self._tables[table_id] = Owner(target.server_id, target.incarnation, revision)
        return True

    async def abandon(self, table_id: str) -> bool:
        """Delete an orphan's record (compare-and-set on the revision read): nobody serves it any
        more, and nobody will. False if someone changed it first (an adoption won)."""
        owner = self._tables.get(table_id)
        if owner is None:
            return False
        try:
            await self.kv.delete(_TABLES + table_id, last=owner.revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            return False
        self._tables.pop(table_id, None)
        return True

    async def release(self, table_id: str) -> None:
        """The table closed: forget its owner (only if it is still this server)."""
        owner = self._tables.get(table_id)
        if owner is None or not self._is_mine(owner):
            return
        try:
            await self.kv.delete(_TABLES + table_id, last=owner.revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            return  # taken meanwhile: the new owner closes it
        self._tables.pop(table_id, None)

    # --- what the watch shows -----------------------------------------------------------------------

    def owner(self, table_id: str) -> Owner | None:
        return self._tables.get(table_id)

    def live(self) -> list[Lease]:
        """The servers whose lease is alive, this one included."""
        now = self._clock()
        return [seen.lease for seen in self._servers.values() if now - seen.at <= self.lease_seconds]

    def last_renewed(self, server_id: str, incarnation: str) -> float | None:
        """When this server last saw that incarnation of ``server_id`` renew its lease (its monotonic
        clock), even if the lease is gone or a later incarnation holds it since; None if never seen."""
        return self._renewed_at.get((server_id, incarnation))

    def current(self) -> bool:
        """Whether this server's view is up to date: it has seen its own latest renewals come back
        through the watch. A server that was paused (SIGSTOP, a long GC, a stalled VM) has not: the
        others' renewals made meanwhile are still queued for it, and until it has read them it must
        not take their silence for death."""
        seen = self._servers.get(self.lease.server_id)
        return seen is not None and self._clock() - seen.at <= 2 * self.renew_seconds + _ECHO_MARGIN

    def orphans(self) -> list[str]:
        """The tables whose owner holds no live lease (oldest key first); none while this server's
        own view is not :meth:`current`."""
        if not self.current():
            return []
        alive = {(lease.server_id, lease.incarnation) for lease in self.live()}
        return [
            table_id
            for table_id, owner in self._tables.items()
            if (owner.server_id, owner.incarnation) not in alive
        ]

    def owned(self) -> list[str]:
        """The tables recorded as this server's (this incarnation)."""
        return [table_id for table_id, owner in self._tables.items() if self._is_mine(owner)]

    # --- internals ----------------------------------------------------------------------------------

    def _mine(self) -> bytes:
        return _encode(self.lease.server_id, self.lease.incarnation)

    def _is_mine(self, owner: Owner) -> bool:
        return (owner.server_id, owner.incarnation) == (self.lease.server_id, self.lease.incarnation)

    async def _renew(self) -> None:
        if self._room is not None:
            capacity, load, draining = self._room()
            self.lease = replace(self.lease, capacity=capacity, load=load, draining=draining)
        await self.kv.put(_SERVERS + self.lease.server_id, json.dumps(asdict(self.lease)).encode())

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.renew_seconds)
            try:
                await self._renew()
            except (nats.errors.Error, TimeoutError, OSError) as err:
                if self._on_renew_failed is not None:
                    self._on_renew_failed()
                _log.warning("lease not renewed", extra={"fields": {"error": repr(err)}})

    async def _watch(self) -> None:
        watcher = await self.kv.watchall()
        try:
            while True:
                try:
                    entry = await watcher.updates(timeout=self.lease_seconds)  # type: ignore[no-untyped-call]
                except nats.errors.TimeoutError:
                    continue
                if entry is None:  # the end of the keys' current values
                    self._caught_up.set()
                    continue
                self._apply(entry.key, entry.value, int(entry.revision or 0), entry.operation)
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]

    def _apply(self, key: str, value: bytes | None, revision: int, operation: str | None) -> None:
        deleted = operation in ("DEL", "PURGE")
        if key.startswith(_SERVERS):
            server_id = key.removeprefix(_SERVERS)
            if deleted or not value:
                self._servers.pop(server_id, None)
            else:
                seen = self._servers[server_id] = _Seen(Lease(**json.loads(value)), self._clock())
                self._renewed_at[(server_id, seen.lease.incarnation)] = seen.at
        elif key.startswith(_TABLES):
            table_id = key.removeprefix(_TABLES)
            before = self._tables.get(table_id)
            if before is not None and revision <= before.revision:
                return  # this server's own write got here first (claim, take)
            if deleted or not value:
                self._tables.pop(table_id, None)
                return
            decoded = json.loads(value)
            owner = Owner(decoded["server_id"], decoded["incarnation"], revision)
            self._tables[table_id] = owner
            if before is not None and self._is_mine(before) and not self._is_mine(owner):
                _log.warning(
                    "table taken by another server",
                    extra={"fields": {"table_id": table_id, "owner": owner.server_id}},
                )
                if self._on_taken is not None:
                    self._on_taken(table_id)


def _encode(server_id: str, incarnation: str) -> bytes:
    return json.dumps({"server_id": server_id, "incarnation": incarnation}).encode()
