"""The ledger audit as metrics: ``audit_ledger`` (``audit.py``) run every ``WALLET_AUDIT_INTERVAL_SECONDS``.

Exports ``duel_wallet_ledger_invariant_ok_bool`` (1 while every invariant of docs/wallet.md holds),
``duel_wallet_ledger_violations_count`` (how many do not), ``duel_wallet_ledger_balance_prestige``
by holder (``players`` and the house accounts ``fees``, ``guess``, ``grants``: their sum is 0 while
the ledger balances) and ``duel_wallet_ledger_audit_duration_seconds``.

Cost: the audit replays every ledger entry (a sequential scan of ``wallet.entries``, grouped by
account and by transaction) in one read-only REPEATABLE READ transaction on one pooled connection. It
takes no locks that settlements wait on; its time grows with the ledger (see the duration gauge) —
raise the interval if it becomes a noticeable share of it.
"""

from __future__ import annotations

import asyncio
import time

import asyncpg

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from services.wallet import sql
from services.wallet.audit import audit_ledger

_log = get_logger("wallet.monitor")


class LedgerAudit:
    """Runs the audit and keeps the ledger gauges; one per wallet process (replicas audit the same
    ledger, so alerts take the min/max over pods, never the sum)."""

    def __init__(self, pool: asyncpg.Pool, metrics: ServiceMetrics) -> None:
        self.pool = pool
        self._ok = metrics.gauge("ledger_invariant_ok", "bool", "1 while every ledger invariant holds")
        self._violations = metrics.gauge("ledger_violations", "count", "ledger invariants that do not hold")
        self._balance = metrics.gauge(
            "ledger_balance", "prestige", "sum of balances by holder (players, house accounts)", ["holder"]
        )
        self._duration = metrics.gauge("ledger_audit_duration", "seconds", "how long the last audit took")
        self._ok.set(1)  # nothing found wrong yet; the first audit runs at start

    async def check(self) -> list[str]:
        """Audit once, update the gauges; returns the invariants that do not hold (empty = all hold)."""
        started = time.perf_counter()
        problems = await audit_ledger(self.pool)
        totals = await self.pool.fetch(sql.LEDGER_TOTALS)
        self._duration.set(time.perf_counter() - started)
        self._ok.set(0 if problems else 1)
        self._violations.set(len(problems))
        for row in totals:
            self._balance.labels(holder=row["holder"]).set(row["balance"])
        if problems:
            _log.error("ledger invariant violated", extra={"fields": {"problems": problems[:20]}})
        return problems

    async def run(self, interval_seconds: float) -> None:
        """Audit every ``interval_seconds`` until cancelled; a failed audit (database away) is logged
        and retried at the next tick: the gauges keep their last value, the service keeps serving."""
        while True:
            try:
                await self.check()
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as err:
                _log.warning("ledger audit failed", extra={"fields": {"error": repr(err)}})
            await asyncio.sleep(interval_seconds)
