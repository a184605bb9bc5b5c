"""In-process locks per player: this process's ledger commands on the same players, one at a time.

Commands planned on a snapshot read of the same players would otherwise go stale under each other (a
quarter of them with 8 workers on 50 players) and fall back to the locked path. Other replicas are
not serialised here: the snapshot write's version check catches them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class _SharedLock(asyncio.Lock):
    """A lock that knows how many commands want it, so an idle one can be dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.users = 0


class PlayerLocks:
    def __init__(self) -> None:
        self._locks: dict[str, _SharedLock] = {}

    @contextlib.asynccontextmanager
    async def held(self, players: tuple[str, ...]) -> AsyncIterator[None]:
        """Hold the lock of every player in ``players``, taken in id order (a fixed order: two
        commands never wait on each other's locks); a lock nobody wants any more is dropped."""
        locks = []
        for player_id in sorted(set(players)):
            lock = self._locks.get(player_id)
            if lock is None:
                lock = self._locks[player_id] = _SharedLock()
            lock.users += 1
            locks.append((player_id, lock))
        taken = 0
        try:
            for _player_id, lock in locks:
                await lock.acquire()
                taken += 1
            yield
        finally:
            for n, (player_id, lock) in enumerate(locks):
                if n < taken:
                    lock.release()
                lock.users -= 1
                if not lock.users:
                    del self._locks[player_id]
