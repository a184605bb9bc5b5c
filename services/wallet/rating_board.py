"""The skill ratings as read: a player's, and the rating boards per profile (docs/wallet.md "Skill rating").

Ratings are written only by a hand's ledger transaction (``ledger_store.py``); this module only reads.
Boards rank by the conservative estimate (rating − 2 deviations), so a player with few hands does not
top a board on one lucky win. House bots are rated like anyone (their opponents' ratings depend on
theirs) but never ranked: a board is of people.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from services.wallet.errors import UnknownPlayerError
from services.wallet.rating import PROFILES, START, Skill


@dataclass(frozen=True, slots=True)
class RatedPlayer:
    rank: int
    player_id: str
    display_name: str
    prestige: int
    skill: Skill


_COLUMNS = "p.id, p.display_name, a.balance, r.rating, r.deviation, r.hands_rated"


def _rated(row: asyncpg.Record) -> RatedPlayer:
    return RatedPlayer(
        row["rank"],
        row["id"],
        row["display_name"],
        row["balance"],
        Skill(row["rating"], row["deviation"], row["hands_rated"]),
    )


class RatingBoard:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def of(self, player_id: str) -> dict[str, Skill]:
        """The player's rating in every profile (the starting one where they played no rated hand)."""
        rows = await self._pool.fetch(
            """SELECT p.id, r.profile, r.rating, r.deviation, r.hands_rated
               FROM wallet.players p LEFT JOIN wallet.ratings r ON r.player_id = p.id
               WHERE p.id = $1""",
            player_id,
        )
        if not rows:
            raise UnknownPlayerError(f"no player {player_id!r}")
        rated = {
            row["profile"]: Skill(row["rating"], row["deviation"], row["hands_rated"])
            for row in rows
            if row["profile"] is not None
        }
        return {profile: rated.get(profile, START) for profile in PROFILES}

    async def top(self, profile: str, limit: int) -> list[RatedPlayer]:
        rows = await self._pool.fetch(
            f"""SELECT rank() OVER (ORDER BY r.conservative DESC) AS rank, {_COLUMNS}
                FROM wallet.ratings r JOIN wallet.players p ON p.id = r.player_id
                JOIN wallet.accounts a ON a.player_id = p.id
                WHERE r.profile = $1 AND NOT p.is_bot
                ORDER BY r.conservative DESC, r.player_id LIMIT $2""",
            profile,
            limit,
        )
        return [_rated(row) for row in rows]

    async def around(self, player_id: str, profile: str, span: int) -> list[RatedPlayer]:
        """``span`` rated players above and below ``player_id`` in the (conservative desc, player id)
        order of ``profile``. A player without a rated hand there stands at the starting rating's
        conservative estimate (and is not listed); a bot sees the people around its rating."""
        skills = await self.of(player_id)
        mine = skills[profile].conservative
        rows = await self._pool.fetch(
            f"""WITH ranked AS (
                    SELECT r.player_id, r.conservative FROM wallet.ratings r
                    JOIN wallet.players p ON p.id = r.player_id
                    WHERE r.profile = $1 AND NOT p.is_bot),
                above AS (
                    SELECT * FROM ranked
                    WHERE conservative > $2 OR (conservative = $2 AND player_id < $3)
                    ORDER BY conservative ASC, player_id DESC LIMIT $4),
                below AS (
                    SELECT * FROM ranked
                    WHERE conservative < $2 OR (conservative = $2 AND player_id >= $3)
                    ORDER BY conservative DESC, player_id LIMIT $4 + 1),
                window_rows AS (SELECT * FROM above UNION ALL SELECT * FROM below)
                SELECT 1 + (SELECT count(*) FROM ranked x WHERE x.conservative > w.conservative) AS rank,
                       {_COLUMNS}
                FROM window_rows w
                JOIN wallet.ratings r ON r.player_id = w.player_id AND r.profile = $1
                JOIN wallet.players p ON p.id = w.player_id
                JOIN wallet.accounts a ON a.player_id = w.player_id
                ORDER BY w.conservative DESC, w.player_id""",
            profile,
            mine,
            player_id,
            span,
        )
        return [_rated(row) for row in rows]
