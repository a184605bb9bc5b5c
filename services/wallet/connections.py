"""The settlement workers' database connections: one kept per worker between events."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from services.wallet import sql
from services.wallet.errors import WalletError


class ConnectionLender:
    """A few pool connections the settlement workers keep between events.

    Borrowing one costs no round trip, where every return to the pool costs one (asyncpg resets the
    session). A connection in an unknown state — its task cancelled mid-query, the server gone — goes
    back to the pool for good and a fresh one is taken on the next borrow.
    """

    def __init__(self, pool: asyncpg.Pool, size: int) -> None:
        self._pool = pool
        self._idle: asyncio.Queue[PoolConnectionProxy | None] = asyncio.Queue()
        for _ in range(size):
            self._idle.put_nowait(None)  # taken from the pool on first use

    @contextlib.asynccontextmanager
    async def borrow(self) -> AsyncIterator[PoolConnectionProxy]:
        conn = await self._idle.get()
        try:
            if conn is None or not _usable(conn):
                conn = await self._pool.acquire()
                await conn.execute(sql.SETTLEMENT_SESSION)  # undone by the pool's reset on return
            yield conn
        except WalletError:
            raise  # an expected refusal: the transaction was rolled back, the connection is fine
        except BaseException:
            if conn is not None:
                if _usable(conn):
                    conn.terminate()
                await self._pool.release(conn)  # a no-op for one the pool took back already
                conn = None
            raise
        finally:
            self._idle.put_nowait(conn)

    async def close(self) -> None:
        while not self._idle.empty():
            conn = self._idle.get_nowait()
            if conn is not None:
                await self._pool.release(conn)


def _usable(conn: PoolConnectionProxy) -> bool:
    """False once the connection is closed. When the server goes away asyncpg closes the connection
    and takes it back into the pool itself, detaching the proxy we hold: every call on it then raises
    InterfaceError, so the proxy is dropped and a fresh connection acquired."""
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:
        return False
