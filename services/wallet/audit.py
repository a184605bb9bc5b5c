"""The ledger's invariants (docs/wallet.md), checked against the database as it stands.

One read-only REPEATABLE READ transaction: every check sees the same snapshot, and none takes a lock
a settlement waits on. The tests run it after every ledger test, the service every
``WALLET_AUDIT_INTERVAL_SECONDS`` (``monitor.py``), the soak at its end.
"""

from __future__ import annotations

import asyncpg

from services.wallet import sql


async def audit_ledger(pool: asyncpg.Pool) -> list[str]:
    """Every ledger invariant that does not hold right now (empty = all hold)."""
    problems: list[str] = []
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        total = await conn.fetchval("SELECT coalesce(sum(balance), 0) FROM wallet.accounts")
        if total != 0:
            problems.append(f"the balances sum to {total}, not 0")
        for row in await conn.fetch(sql.AUDIT_REPLAY):
            problems.append(
                f"account {row['id']} has {row['balance']}, its entries replay to {row['replayed']}"
            )
        for row in await conn.fetch(sql.AUDIT_UNBALANCED):
            problems.append(f"transaction {row['transaction_id']}'s entries sum to {row['total']}")
        for row in await conn.fetch(sql.AUDIT_RUNNING):
            problems.append(
                f"entry {row['id']} of account {row['account_id']} says {row['balance_after']} after it, "
                f"its account's entries up to it sum to {row['running']}"
            )
        for row in await conn.fetch(sql.AUDIT_HELD):
            problems.append(
                f"account {row['id']} holds {row['held']}, its open holds sum to {row['in_holds']}"
            )
        negative = await conn.fetchval(
            "SELECT count(*) FROM wallet.accounts WHERE NOT overdraft_allowed AND balance < held"
        )
        if negative:
            problems.append(f"{negative} accounts have less prestige than they hold")
    return problems
