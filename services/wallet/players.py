"""Players (their display names), their refresh sessions and their items (asyncpg).

A player is created with their ledger account and starting grant in one database transaction, so
no player exists without them; the grant itself is a ledger command like any other prestige.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from duelmahjong.platform.db import Connection
from duelmahjong.platform.errors import FailedPrecondition
from services.wallet.commands import Command
from services.wallet.errors import UnknownPlayerError
from services.wallet.ledger_store import LedgerStore


class PlayerStore:
    def __init__(self, pool: asyncpg.Pool, ledger: LedgerStore) -> None:
        self._pool = pool
        self._ledger = ledger

    async def create_player(
        self, player_id: str, display_name: str, starting_grant: Command | None = None
    ) -> None:
        """A player and their account, with the starting grant's ledger transaction in the same
        database transaction: a player never exists without it."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO wallet.players (id, display_name) VALUES ($1, $2)", player_id, display_name
            )
            await self._open_account(conn, player_id, starting_grant)

    async def ensure_bot(self, player_id: str, display_name: str, starting_grant: Command | None) -> bool:
        """The house bot ``player_id``, created with its account and starting grant on first use
        (True then). Concurrent first uses create it once: the second insert waits for the first."""
        async with self._pool.acquire() as conn, conn.transaction():
            created = await conn.fetchval(
                """INSERT INTO wallet.players (id, display_name, is_bot) VALUES ($1, $2, true)
                   ON CONFLICT (id) DO NOTHING RETURNING true""",
                player_id,
                display_name,
            )
            if not created:
                if not await conn.fetchval("SELECT is_bot FROM wallet.players WHERE id = $1", player_id):
                    raise FailedPrecondition(f"player {player_id!r} exists and is not a house bot")
                return False
            await self._open_account(conn, player_id, starting_grant)
            return True

    async def _open_account(self, conn: Connection, player_id: str, starting_grant: Command | None) -> None:
        """A new player's account and, in the caller's database transaction, their starting grant."""
        await conn.execute("INSERT INTO wallet.accounts (player_id) VALUES ($1)", player_id)
        if starting_grant is not None:  # nested in the caller's transaction: a savepoint
            await self._ledger.execute(starting_grant, record_rejection=False, conn=conn)

    async def create_session(
        self, session_id: str, player_id: str, refresh_hash: bytes, refresh_expires_at: datetime
    ) -> None:
        await self._pool.execute(
            """INSERT INTO wallet.sessions (id, player_id, refresh_hash, refresh_expires_at)
               VALUES ($1, $2, $3, $4)""",
            session_id,
            player_id,
            refresh_hash,
            refresh_expires_at,
        )

    async def rotate_session(
        self, old_hash: bytes, new_hash: bytes, now: datetime, refresh_expires_at: datetime
    ) -> tuple[str, str] | None:
        """Swap a live refresh token for a new one: (session id, player id), or None if unusable."""
        row = await self._pool.fetchrow(
            """UPDATE wallet.sessions SET refresh_hash = $2, refresh_expires_at = $4, refreshed_at = $3
               WHERE refresh_hash = $1 AND refresh_expires_at > $3 RETURNING id, player_id""",
            old_hash,
            new_hash,
            now,
            refresh_expires_at,
        )
        return None if row is None else (row["id"], row["player_id"])

    async def display_name(self, player_id: str) -> str:
        name = await self._pool.fetchval("SELECT display_name FROM wallet.players WHERE id = $1", player_id)
        if name is None:
            raise UnknownPlayerError(f"no player {player_id!r}")
        return str(name)

    async def inventory(self, player_id: str) -> dict[str, int]:
        """The items a player has (none left: not listed); NOT_FOUND for an unknown player."""
        await self._ledger.balance(player_id)
        rows = await self._pool.fetch(
            "SELECT item, quantity FROM wallet.inventory WHERE player_id = $1 AND quantity > 0 ORDER BY item",
            player_id,
        )
        return {row["item"]: row["quantity"] for row in rows}
