"""The ledger audit as metrics, on a real Postgres: the gauges follow what audit_ledger finds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from duelmahjong.platform import db
from duelmahjong.platform.metrics import ServiceMetrics
from services.wallet.commands import Charge, Grant
from services.wallet.ledger_store import LedgerStore
from services.wallet.main import MIGRATIONS
from services.wallet.monitor import LedgerAudit
from services.wallet.players import PlayerStore

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


@pytest_asyncio.fixture
async def ledger(database_url: str) -> AsyncIterator[LedgerStore]:
    pool = await db.create_pool(database_url, max_size=3)
    await db.apply_migrations(pool, MIGRATIONS, service="wallet")
    yield LedgerStore(pool)
    await pool.close()


async def test_the_ledger_gauges_hold_the_totals_and_turn_to_0_when_an_invariant_breaks(
    ledger: LedgerStore,
) -> None:
    metrics = ServiceMetrics("wallet")
    audit = LedgerAudit(ledger.pool, metrics)
    await PlayerStore(ledger.pool, ledger).create_player("ana", "ana")
    await ledger.execute(
        Grant("start:ana", player="ana", amount=1_000, grant_reason="test"), record_rejection=False
    )
    await ledger.execute(
        Charge("fee:h1:ana", table_id="t1", hand_id="h1", player="ana", amount=30), record_rejection=False
    )

    def gauge(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(f"duel_wallet_{name}", labels)

    assert await audit.check() == []
    assert (gauge("ledger_invariant_ok_bool"), gauge("ledger_violations_count")) == (1, 0)
    assert gauge("ledger_balance_prestige", holder="players") == 970
    assert gauge("ledger_balance_prestige", holder="fees") == 30
    assert gauge("ledger_balance_prestige", holder="grants") == -1_000

    # A balance changed behind the ledger's back: no entry explains it, and the total is no longer 0.
    await ledger.pool.execute("UPDATE wallet.accounts SET balance = balance + 5 WHERE player_id = 'ana'")
    problems = await audit.check()
    assert len(problems) == 2
    assert (gauge("ledger_invariant_ok_bool"), gauge("ledger_violations_count")) == (0, 2)


async def test_the_audit_loop_survives_a_database_that_went_away(ledger: LedgerStore) -> None:
    metrics = ServiceMetrics("wallet")
    audit = LedgerAudit(ledger.pool, metrics)
    await ledger.pool.close()  # every audit now fails (as with connections lost)
    task = asyncio.create_task(audit.run(0.01))
    await asyncio.sleep(0.05)
    assert not task.done()  # logged, retried at the next tick; the service is not stopped
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert metrics.registry.get_sample_value("duel_wallet_ledger_invariant_ok_bool") == 1
