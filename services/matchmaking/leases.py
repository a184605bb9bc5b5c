"""Which replica owns which room, and which replicas are alive.

Pairing is a decision over everyone waiting in a room, so each room has one owner at a time: the
replica named by ``rooms.<room>``. The owner pairs the room's queue and acts on the room's deadlines;
any replica serves any RPC. Every replica puts its heartbeat ``replicas.<replica>`` every
``lease_seconds / 5``; a replica is alive while this one has seen its heartbeat change within
``lease_seconds`` on its own monotonic clock (no two machines' clocks are compared). A room whose
owner is not alive is taken by compare-and-set on the room key; a replica owning more than its share
(rooms ÷ live replicas, rounded up) gives one back each round, so rooms spread over the fleet.

The owner's claim is a hint, not the guard: every step it takes is a compare-and-set on the record
it read, so a replica that was paused (SIGSTOP) and resumes believing it still owns a room loses
each write its successor already made. It also stops acting at all while its own heartbeat is not
acknowledged within the lease (:meth:`Leases.current`), so it resumes acting only with a fresh view.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import Callable

from duelmahjong.platform.logging import get_logger
from services.matchmaking.records import REPLICAS, ROOMS
from services.matchmaking.store import Conflict, Mirror, token, unless_changed

LEASE_SECONDS = 5.0
FORGET_AFTER_LEASES = 12  # a replica silent this many leases is forgotten (its heartbeat key deleted)
# How replicas share a room: one owner through a lease (LEASE), or every replica acting on every room
# and the compare-and-set claims deciding (CLAIMS) — measured against each other in docs/benchmarks.md.
LEASE, CLAIMS = "lease", "claims"
SHARING = (LEASE, CLAIMS)
_log = get_logger("matchmaking.leases")


class Leases:
    def __init__(
        self,
        mirror: Mirror,
        replica_id: str,
        rooms: list[str],
        *,
        lease_seconds: float = LEASE_SECONDS,
        sharing: str = LEASE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if sharing not in SHARING:
            raise ValueError(f"room sharing is one of {', '.join(SHARING)}, not {sharing!r}")
        self.sharing = sharing
        self._mirror = mirror
        self.replica_id = token(replica_id)
        self._rooms = rooms
        self.lease_seconds = lease_seconds
        self.renew_seconds = lease_seconds / 5
        self._clock = clock
        self._seen: dict[str, float] = {}  # replica → when its heartbeat last changed, on our clock
        # This process, among the processes that have had the replica's name (a restarted pod, a
        # `make run` process started again): what a stream's follower is named by (:attr:`process`).
        self.incarnation = uuid.uuid4().hex[:8]
        self._incarnations: dict[str, str] = {}  # replica → the incarnation of its last heartbeat
        self._acked_at = -math.inf  # our last heartbeat the store acknowledged
        self._beat = 0
        self._task: asyncio.Task[None] | None = None
        self.on_owned: Callable[[str], None] = lambda _room: None  # a room became ours

    @property
    def process(self) -> str:
        """This process's name, ``<replica>:<incarnation>``: a stream it serves dies with it, even if
        a process of the same replica name runs again at once."""
        return f"{self.replica_id}:{self.incarnation}"

    def observe(self, key: str, value: bytes | None) -> None:
        """The mirror changed ``key``: a heartbeat counts as a sign of life of its process, its deletion
        as the end of it (a replica that stopped with ``release``)."""
        if key.startswith(REPLICAS + "."):
            replica = key.removeprefix(REPLICAS + ".")
            if not value:
                self._seen.pop(replica, None)
                self._incarnations.pop(replica, None)
                return
            self._seen[replica] = self._clock()
            self._incarnations[replica] = str(json.loads(value).get("incarnation", ""))

    async def start(self) -> None:
        # The heartbeats already in the mirror count as seen now: they may have been applied before
        # these leases observed it, and a replica seen by nobody yet is not known to be dead.
        for entry in self._mirror.under(REPLICAS):
            self.observe(entry.key, entry.value)
        await self.renew()
        self._task = asyncio.create_task(self._forever(), name="matchmaking-leases")

    async def stop(self, *, release: bool) -> None:
        """Stop renewing; with ``release`` give the rooms back and delete the heartbeat, so the other
        replicas take the rooms at once instead of after the lease."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if not release:
            return
        for room_id in self.owned():
            entry = self._mirror.get(_room_key(room_id))
            if entry is not None:
                try:
                    await self._mirror.delete(entry.key, entry.revision)
                except Exception:
                    pass
        entry = self._mirror.get(_replica_key(self.replica_id))
        if entry is not None:
            try:
                await self._mirror.delete(entry.key, entry.revision)
            except Exception:
                pass

    async def _forever(self) -> None:
        while True:
            await asyncio.sleep(self.renew_seconds)
            try:
                await self.renew()
            except Exception as err:
                _log.warning("heartbeat not stored", extra={"fields": {"error": repr(err)}})

    async def renew(self) -> None:
        """Put our heartbeat, then take the rooms without a live owner and give back any beyond our
        share."""
        self._beat += 1
        key = _replica_key(self.replica_id)
        value = json.dumps({"replica": self.replica_id, "incarnation": self.incarnation, "beat": self._beat})
        entry = self._mirror.get(key)
        try:
            if entry is None:
                await self._mirror.create(key, value.encode())
            else:
                await self._mirror.update(key, value.encode(), entry.revision)
        except Conflict:
            return  # our own previous heartbeat is still on its way through the watch: next round
        self._acked_at = self._clock()
        self._seen[self.replica_id] = self._acked_at
        if self.sharing == LEASE:
            await self._balance()

    async def forget_dead(self) -> None:
        """Delete the heartbeats of replicas silent for :data:`FORGET_AFTER_LEASES` leases: a crashed
        process never deletes its own, and each process of a Deployment has a fresh name."""
        for entry in self._mirror.under(REPLICAS):
            replica = entry.key.removeprefix(REPLICAS + ".")
            seen = self._seen.get(replica)
            if replica == self.replica_id or seen is None:
                continue
            if self._clock() - seen > FORGET_AFTER_LEASES * self.lease_seconds:
                await unless_changed(self._mirror.delete(entry.key, entry.revision))

    def current(self) -> bool:
        """Our heartbeat was acknowledged within the lease: a replica that was paused or cut off has not,
        and acts on nothing until it is again."""
        return self._clock() - self._acked_at <= self.lease_seconds

    def alive(self, name: str) -> bool:
        """A replica (``<replica>``) or a process of it (``<replica>:<incarnation>``) heartbeats."""
        replica, _, incarnation = name.partition(":")
        seen = self._seen.get(replica)
        if seen is None or self._clock() - seen > self.lease_seconds:
            return False
        return not incarnation or self._incarnations.get(replica) == incarnation

    def live_replicas(self) -> list[str]:
        return sorted(r for r in self._seen if self.alive(r))

    def owner(self, room_id: str) -> str:
        entry = self._mirror.get(_room_key(room_id))
        return str(json.loads(entry.value)["replica"]) if entry is not None else ""

    def owns(self, room_id: str) -> bool:
        return self.current() and (self.sharing == CLAIMS or self.owner(room_id) == self.replica_id)

    def owned(self) -> list[str]:
        if self.sharing == CLAIMS:
            return list(self._rooms)
        return [room_id for room_id in self._rooms if self.owner(room_id) == self.replica_id]

    async def _balance(self) -> None:
        share = math.ceil(len(self._rooms) / max(1, len(self.live_replicas())))
        mine = self.owned()
        value = json.dumps({"replica": self.replica_id}).encode()
        for room_id in self._rooms:
            if len(mine) >= share:
                break
            owner = self.owner(room_id)
            if owner == self.replica_id or (owner and self.alive(owner)):
                continue
            entry = self._mirror.get(_room_key(room_id))
            try:
                if entry is None:
                    await self._mirror.create(_room_key(room_id), value)
                else:
                    await self._mirror.update(entry.key, value, entry.revision)
            except Conflict:
                continue
            mine.append(room_id)
            _log.info("room taken", extra={"fields": {"room": room_id, "from": owner or "nobody"}})
            self.on_owned(room_id)
        if len(mine) > share and any(
            sum(1 for r in self._rooms if self.owner(r) == other) < share
            for other in self.live_replicas()
            if other != self.replica_id
        ):
            # Another replica has room for one more: give one back (it takes it on its next round).
            entry = self._mirror.get(_room_key(mine[-1]))
            if entry is not None:
                try:
                    await self._mirror.delete(entry.key, entry.revision)
                except Conflict:
                    pass


def _room_key(room_id: str) -> str:
    return f"{ROOMS}.{token(room_id)}"


def _replica_key(replica_id: str) -> str:
    return f"{REPLICAS}.{token(replica_id)}"
