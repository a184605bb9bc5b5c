"""Players' consent to share their hands (``wallet.data_sharing``, asyncpg): append-only rows, the
latest per player being the setting, so the table is its own audit trail of every change."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from services.wallet.errors import UnknownPlayerError


@dataclass(frozen=True, slots=True)
class Consent:
    """A player's setting now; ``changed_at`` None when they never chose (then not shared)."""

    player_id: str
    share_hands: bool
    changed_at: datetime | None = None


# A player's latest row: the index data_sharing_latest serves it.
_LATEST = """SELECT DISTINCT ON (player_id) player_id, share_hands, changed_at FROM wallet.data_sharing"""


class SharingStore:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def of(self, player_id: str) -> Consent:
        """The player's setting (not shared if they never chose); UnknownPlayerError for no player."""
        async with self._pool.acquire() as conn:
            if not await conn.fetchval("SELECT true FROM wallet.players WHERE id = $1", player_id):
                raise UnknownPlayerError(f"no player {player_id!r}")
            row = await conn.fetchrow(
                """SELECT share_hands, changed_at FROM wallet.data_sharing WHERE player_id = $1
                   ORDER BY id DESC LIMIT 1""",
                player_id,
            )
        if row is None:
            return Consent(player_id, False)
        return Consent(player_id, row["share_hands"], row["changed_at"])

    async def set(self, player_id: str, share_hands: bool, changed_by: str) -> Consent:
        """Record a change (nothing when it is the setting already: the trail holds changes only).

        Nothing is locked: a row lock on the player would need UPDATE on ``wallet.players``, which the
        role does not have. Two concurrent identical requests of one player may both append; the latest
        row is still the setting, and the trail then shows the same change twice, which is harmless."""
        async with self._pool.acquire() as conn, conn.transaction():
            known = await conn.fetchval("SELECT true FROM wallet.players WHERE id = $1", player_id)
            if not known:
                raise UnknownPlayerError(f"no player {player_id!r}")
            row = await conn.fetchrow(
                """SELECT share_hands, changed_at FROM wallet.data_sharing WHERE player_id = $1
                   ORDER BY id DESC LIMIT 1""",
                player_id,
            )
            if (row["share_hands"] if row else False) == share_hands:
                return Consent(player_id, share_hands, row["changed_at"] if row else None)
            changed_at = await conn.fetchval(
                """INSERT INTO wallet.data_sharing (player_id, share_hands, changed_by)
                   VALUES ($1, $2, $3) RETURNING changed_at""",
                player_id,
                share_hands,
                changed_by,
            )
        return Consent(player_id, share_hands, changed_at)

    async def sharing_among(self, player_ids: list[str]) -> list[Consent]:
        """Those of ``player_ids`` whose latest row shares, by player id."""
        rows = await self._pool.fetch(
            f"""SELECT * FROM ({_LATEST} WHERE player_id = ANY($1::text[])
                              ORDER BY player_id, id DESC) latest
                WHERE share_hands ORDER BY player_id""",
            player_ids,
        )
        return [Consent(r["player_id"], True, r["changed_at"]) for r in rows]

    async def sharing_after(self, after: str, limit: int) -> list[Consent]:
        """Every player who shares, by player id, from the first id past ``after``."""
        rows = await self._pool.fetch(
            f"""SELECT * FROM ({_LATEST} WHERE player_id > $1 ORDER BY player_id, id DESC) latest
                WHERE share_hands ORDER BY player_id LIMIT $2""",
            after,
            limit,
        )
        return [Consent(r["player_id"], True, r["changed_at"]) for r in rows]
