"""Matchmaking's shared state: one JetStream key-value bucket (``DUEL_MATCHMAKING``) that every
replica reads through its own mirror and writes by compare-and-set.

Why a key-value bucket (docs/architecture.md "Matchmaking as a fleet"): it is JetStream, the bus every
service already runs, replicated with it (3 in the prod overlay); compare-and-set on a key's revision
is exactly the question every matchmaking step asks ("is this ticket still waiting as I read it?"),
and a watch delivers every change to every replica, so reads are local and cost no round trip.

A :class:`Mirror` keeps the bucket's keys as this replica last saw them. Its own successful writes
are applied at once with the revision the server gave them; the watch brings everyone else's (and
echoes ours, which the revision check drops). Code waiting for a change (a player's stream, a room's
owner) waits on a *topic*: a key, or a key's parent (``tickets.<room>`` for every ticket of a room).

Two backends: :class:`JetStreamBackend` for the service, :class:`MemoryBackend` for unit tests and
the in-process reference of the benchmark — the same create / update / delete semantics, shared by
every mirror attached to it, so races between replicas can be played in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import nats.errors
import nats.js.errors
from nats.js import api
from nats.js.kv import KeyValue

from duelmahjong.platform.bus import Bus
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.tasks import cancel_and_wait

BUCKET = "DUEL_MATCHMAKING"
OPEN_SECONDS = 30.0  # a replica starting gives the bucket this long to be found or created
CATCH_UP_SECONDS = 5.0  # a write that beat ours reaches this replica's mirror within this
_DELETED_KEPT = 100_000
_KEY_TOKEN = re.compile(r"^[A-Za-z0-9_=-]+$")
_log = get_logger("matchmaking.store")


class Conflict(Exception):
    """A compare-and-set lost: the key changed since it was read, or exists where it was to be created."""


@dataclass(frozen=True)
class Entry:
    key: str
    value: bytes
    revision: int


async def unless_changed(write: Awaitable[object]) -> None:
    """A compare-and-set ``write`` that may lose: the record changed meanwhile, and whoever changed it
    acted (or the next step reads it again)."""
    try:
        await write
    except Conflict:
        pass


def token(text: str) -> str:
    """``text`` as one token of a key: ids are checked, never escaped, so a key reads as its ids."""
    if not _KEY_TOKEN.match(text):
        raise ValueError(f"{text!r} cannot name a key: ids are letters, digits, '-', '_' and '='")
    return text


def parent(key: str) -> str:
    return key.rpartition(".")[0]


Apply = Callable[[str, bytes | None, int], None]
CaughtUp = Callable[[set[str]], None]


class Backend(Protocol):
    async def create(self, key: str, value: bytes) -> int: ...
    async def update(self, key: str, value: bytes, revision: int) -> int: ...
    async def delete(self, key: str, revision: int) -> None: ...
    async def last_revision(self) -> int:
        """The revision of the store's latest write, of any key."""
        ...

    async def follow(self, apply: Apply, caught_up: CaughtUp) -> None:
        """Apply every key's current value, call ``caught_up`` with the keys that exist, then apply
        every change, forever; a watch that is lost and made again starts over the same way."""
        ...


class Mirror:
    """The bucket as this replica last saw it, kept current by the backend's watch."""

    def __init__(
        self, backend: Backend, *, on_change: Callable[[str, bytes | None], None] | None = None
    ) -> None:
        self._backend = backend
        self._entries: dict[str, Entry] = {}
        # Deleted keys and the last revision they had: a watch's late echo of an older write must not
        # bring a deleted key back.
        self._deleted: dict[str, int] = {}
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._on_change = on_change
        self._caught_up = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Conflicts lost, by what was written (the key's first token), read by the metrics.
        self.conflicts: dict[str, int] = {}
        # The highest revision the watch delivered (the watch delivers in order: every write up to it
        # is here), and an event set at each delivery, for :meth:`sync`.
        self.watched = 0
        self._delivery = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._backend.follow(self._delivered, self._current), name="mirror")
        await self._caught_up.wait()

    def _delivered(self, key: str, value: bytes | None, revision: int) -> None:
        self.watched = max(self.watched, revision)
        self._delivery.set()
        self._apply(key, value, revision)

    async def sync(self) -> bool:
        """Wait until this mirror holds every write the store had when called (a read barrier: one
        round trip, then the watch). For an answer that would refuse a player on what may be a stale
        view: asked again after it. False if the watch did not get there within
        :data:`CATCH_UP_SECONDS`."""
        target = await self._backend.last_revision()
        try:
            async with asyncio.timeout(CATCH_UP_SECONDS):
                while self.watched < target:
                    self._delivery.clear()
                    await self._delivery.wait()
        except TimeoutError:
            return False
        return True

    def _current(self, existing: set[str]) -> None:
        """The watch has delivered every key that exists: a key we hold that is not among them was
        deleted while a lost watch was being made again."""
        for key in [key for key in self._entries if key not in existing]:
            self._apply(key, None, self._entries[key].revision)
        self._caught_up.set()

    async def stop(self) -> None:
        if self._task is not None:
            # Cancelled again until it ends: a cancel that lands as the watch delivers a change is
            # lost in Python 3.11's wait_for, and a replica's stop deletes its leases just before,
            # which the watch delivers then: it went on watching until the close timed out (5 s).
            # The watch's own cleanup is shielded from a second cancel.
            await cancel_and_wait([self._task], first_wait=0.2)

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def under(self, prefix: str) -> list[Entry]:
        """The entries whose key starts with ``prefix`` + ".", in no particular order."""
        start = prefix + "."
        return [entry for key, entry in self._entries.items() if key.startswith(start)]

    # --- writes: compare-and-set, applied here at once ------------------------------------------
    async def create(self, key: str, value: bytes) -> int:
        try:
            revision = await self._backend.create(key, value)
        except Conflict:
            self._lost(key)
            raise
        self._apply(key, value, revision)
        return revision

    async def update(self, key: str, value: bytes, revision: int) -> int:
        try:
            new = await self._backend.update(key, value, revision)
        except Conflict:
            self._lost(key)
            raise
        self._apply(key, value, new)
        return new

    async def delete(self, key: str, revision: int) -> None:
        try:
            await self._backend.delete(key, revision)
        except Conflict:
            self._lost(key)
            raise
        self._apply(key, None, revision)

    def _remember_deleted(self, key: str, revision: int) -> None:
        self._deleted[key] = revision
        if len(self._deleted) > _DELETED_KEPT:  # the oldest half: their echoes came long ago
            for old in list(self._deleted)[: _DELETED_KEPT // 2]:
                del self._deleted[old]

    def _lost(self, key: str) -> None:
        what = key.partition(".")[0]
        self.conflicts[what] = self.conflicts.get(what, 0) + 1

    # --- reads: waiting for a change ------------------------------------------------------------
    def changed(self, *topics: str) -> asyncio.Event:
        """An event set at the next change of any of ``topics`` (a key, or a key's parent)."""
        event = asyncio.Event()
        for topic in topics:
            self._waiters.setdefault(topic, set()).add(event)
        return event

    def forget(self, event: asyncio.Event, *topics: str) -> None:
        for topic in topics:
            waiters = self._waiters.get(topic)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[topic]

    async def newer(self, key: str, revision: int) -> bool:
        """Wait until this mirror holds ``key`` at another revision than ``revision`` (0: absent): after
        a compare-and-set lost, the write that won is on its way through the watch, and reading the
        key again before it arrives reads the same. False if it did not arrive within
        :data:`CATCH_UP_SECONDS`."""
        changed = self.changed(key)
        try:
            entry = self._entries.get(key)
            if (entry.revision if entry is not None else 0) != revision:
                return True
            await asyncio.wait_for(changed.wait(), CATCH_UP_SECONDS)
            return True
        except TimeoutError:
            return False
        finally:
            self.forget(changed, key)

    def _apply(self, key: str, value: bytes | None, revision: int) -> None:
        known = self._entries.get(key)
        if value:
            # Not older than what we hold or deleted: a watch echoes our own writes after we applied them.
            if (known is not None and revision <= known.revision) or revision <= self._deleted.get(key, 0):
                return
            self._entries[key] = Entry(key, value, revision)
            self._deleted.pop(key, None)
        else:
            if known is None or revision < known.revision:
                return
            del self._entries[key]
            self._remember_deleted(key, revision)
        if self._on_change is not None:
            self._on_change(key, value or None)
        for topic in (key, parent(key)):
            for event in self._waiters.pop(topic, ()):
                event.set()


class MemoryBackend:
    """The bucket in this process: what unit tests and the benchmark's reference run on. Every
    mirror following it sees every write, in order, one loop turn later (as a watch would)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._sequence = 0
        self._followers: list[Apply] = []

    async def create(self, key: str, value: bytes) -> int:
        if key in self._entries:
            raise Conflict(f"{key} exists")
        return self._put(key, value)

    async def update(self, key: str, value: bytes, revision: int) -> int:
        known = self._entries.get(key)
        if known is None or known.revision != revision:
            raise Conflict(f"{key} is not at revision {revision}")
        return self._put(key, value)

    async def delete(self, key: str, revision: int) -> None:
        known = self._entries.get(key)
        if known is None or known.revision != revision:
            raise Conflict(f"{key} is not at revision {revision}")
        del self._entries[key]
        self._sequence += 1
        self._tell(key, None, self._sequence)

    async def last_revision(self) -> int:
        return self._sequence

    def keys(self) -> list[str]:
        return list(self._entries)

    async def follow(self, apply: Apply, caught_up: CaughtUp) -> None:
        for entry in list(self._entries.values()):
            apply(entry.key, entry.value, entry.revision)
        self._followers.append(apply)
        caught_up(set(self._entries))
        try:
            await asyncio.Event().wait()
        finally:
            self._followers.remove(apply)

    def _put(self, key: str, value: bytes) -> int:
        self._sequence += 1
        self._entries[key] = Entry(key, value, self._sequence)
        self._tell(key, value, self._sequence)
        return self._sequence

    def _tell(self, key: str, value: bytes | None, revision: int) -> None:
        loop = asyncio.get_running_loop()
        for apply in list(self._followers):
            loop.call_soon(apply, key, value, revision)


_TRANSIENT = (
    nats.errors.TimeoutError,
    nats.errors.ConnectionClosedError,
    nats.js.errors.ServiceUnavailableError,
)


class JetStreamBackend:
    """The bucket on JetStream, created on first use with the deployment's replicas."""

    def __init__(self, bus: Bus, bucket: str = BUCKET) -> None:
        self._bus = bus
        self._bucket = bucket
        self._kv: KeyValue | None = None

    async def open(self) -> None:
        """The bucket, created if it does not exist. Replicas start together: another may create it
        between our lookup and our create (which then fails), and a replicated bucket just created may
        still be electing its leader; so look, create, and look again, for up to OPEN_SECONDS."""
        config = api.KeyValueConfig(
            bucket=self._bucket,
            history=1,
            replicas=self._bus.storage.replicas,
            storage=api.StorageType.FILE,
        )
        deadline = asyncio.get_running_loop().time() + OPEN_SECONDS
        while True:
            try:
                self._kv = await self._bus.js.key_value(self._bucket)
                return
            except nats.js.errors.BucketNotFoundError:
                pass
            except (*_TRANSIENT, nats.errors.Error) as err:
                if asyncio.get_running_loop().time() >= deadline:
                    raise
                _log.warning("bucket not reachable yet", extra={"fields": {"error": repr(err)}})
            try:
                self._kv = await self._bus.js.create_key_value(config=config)
                return
            except (*_TRANSIENT, nats.errors.Error) as err:
                if asyncio.get_running_loop().time() >= deadline:
                    raise
                _log.info("bucket not created here; looking again", extra={"fields": {"error": repr(err)}})
            await asyncio.sleep(0.5)

    @property
    def kv(self) -> KeyValue:
        if self._kv is None:
            raise RuntimeError("JetStreamBackend.open() first")
        return self._kv

    async def create(self, key: str, value: bytes) -> int:
        try:
            return int(await self.kv.create(key, value))
        except nats.js.errors.KeyWrongLastSequenceError as err:
            raise Conflict(f"{key} exists") from err

    async def update(self, key: str, value: bytes, revision: int) -> int:
        try:
            return int(await self.kv.update(key, value, last=revision))
        except nats.js.errors.KeyWrongLastSequenceError as err:
            raise Conflict(f"{key} is not at revision {revision}") from err

    async def delete(self, key: str, revision: int) -> None:
        try:
            await self.kv.delete(key, last=revision)
        except nats.js.errors.KeyWrongLastSequenceError as err:
            raise Conflict(f"{key} is not at revision {revision}") from err

    async def last_revision(self) -> int:
        info = await self._bus.js.stream_info(f"KV_{self._bucket}")
        return int(info.state.last_seq)

    async def follow(self, apply: Apply, caught_up: CaughtUp) -> None:
        while True:
            try:
                await self._follow_once(apply, caught_up)
            except asyncio.CancelledError:
                raise
            except (*_TRANSIENT, nats.errors.Error) as err:
                _log.warning("watch lost; watching again", extra={"fields": {"error": repr(err)}})
                await asyncio.sleep(0.5)

    async def _follow_once(self, apply: Apply, caught_up: CaughtUp) -> None:
        watcher = await self.kv.watchall()
        existing: set[str] | None = set()  # the keys delivered before the end of the current values
        try:
            while True:
                try:
                    entry = await watcher.updates(timeout=5.0)  # type: ignore[no-untyped-call]
                except nats.errors.TimeoutError:
                    continue
                if entry is None:  # the end of the keys' current values
                    if existing is not None:
                        caught_up(existing)
                        existing = None
                    continue
                deleted = entry.operation in ("DEL", "PURGE")
                if existing is not None and not deleted:
                    existing.add(entry.key)
                apply(entry.key, None if deleted else entry.value, int(entry.revision or 0))
        finally:
            # Not awaited without bound: on the way out the connection may be draining already.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(watcher.stop()), timeout=1.0)  # type: ignore[no-untyped-call]
