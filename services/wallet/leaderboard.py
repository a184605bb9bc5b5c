"""The prestige leaderboard: players ranked by balance, read from the ledger's accounts.

House bots hold prestige like players but are never ranked: a leaderboard is of people.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from services.wallet.errors import UnknownPlayerError


@dataclass(frozen=True, slots=True)
class RankedPlayer:
    rank: int
    player_id: str
    display_name: str
    prestige: int


class Leaderboard:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def top(self, limit: int) -> list[RankedPlayer]:
        rows = await self._pool.fetch(
            """SELECT rank() OVER (ORDER BY a.balance DESC), p.id, p.display_name, a.balance
               FROM wallet.accounts a JOIN wallet.players p ON p.id = a.player_id
               WHERE a.player_id IS NOT NULL AND NOT p.is_bot ORDER BY a.balance DESC, a.id LIMIT $1""",
            limit,
        )
        return [RankedPlayer(*row.values()) for row in rows]

    async def around(self, player_id: str, span: int) -> list[RankedPlayer]:
        """``span`` players above and below ``player_id`` in the (prestige desc, account id) order;
        house bots are not ranked (a bot asking sees the players around its prestige)."""
        me = await self._pool.fetchrow(
            "SELECT id, balance FROM wallet.accounts WHERE player_id = $1", player_id
        )
        if me is None:
            raise UnknownPlayerError(f"no player {player_id!r}")
        rows = await self._pool.fetch(
            """WITH ranked AS (
                   SELECT a.id, a.balance FROM wallet.accounts a JOIN wallet.players p ON p.id = a.player_id
                   WHERE NOT p.is_bot),
               above AS (
                   SELECT r.id, r.balance FROM ranked r
                   WHERE r.balance > $1 OR (r.balance = $1 AND r.id < $2)
                   ORDER BY r.balance ASC, r.id DESC LIMIT $3),
               below AS (
                   SELECT r.id, r.balance FROM ranked r
                   WHERE r.balance < $1 OR (r.balance = $1 AND r.id >= $2)
                   ORDER BY r.balance DESC, r.id LIMIT $3 + 1),
               window_rows AS (SELECT * FROM above UNION ALL SELECT * FROM below)
               SELECT 1 + (SELECT count(*) FROM ranked x WHERE x.balance > w.balance) AS rank,
                      p.id, p.display_name, w.balance
               FROM window_rows w JOIN wallet.accounts a ON a.id = w.id
               JOIN wallet.players p ON p.id = a.player_id
               ORDER BY w.balance DESC, w.id""",
            me["balance"],
            me["id"],
            span,
        )
        return [RankedPlayer(*row.values()) for row in rows]
