"""What operators read about failover is on a running table server's /metrics: tables adopted (by
how), adoption latency, adoption failures, orphan tables, fencing refusals and lease renew failures —
the names the alerts (deploy/prometheus/rules/duel-tables.yml) and the Table servers dashboard read.
A renewal that fails is counted there, not only logged."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Callable
from typing import Any

import nats.errors
import pytest

from services.table import main as table_main
from services.table.config import TableConfig

pytestmark = pytest.mark.asyncio

FAILOVER_METRICS = (
    "duel_table_tables_adopted_total",
    "duel_table_adoption_latency_seconds",
    "duel_table_adoption_failures_total",
    "duel_table_orphan_tables_count",
    "duel_table_fencing_refusals_total",
    "duel_table_lease_renew_failures_total",
)


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return str(reply.read().decode())


async def _until(condition: Callable[[], bool], within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


def _sample(exposition: str, name: str) -> float:
    (line,) = [line for line in exposition.splitlines() if line.startswith(name + " ")]
    return float(line.split()[1])


async def test_a_table_server_exports_its_failover_metrics_and_counts_failed_renewals(
    start_service: Any, service_env: dict[str, str]
) -> None:
    server = table_main.TableServer()
    env = {**service_env, "SERVER_ID": "t-metrics", "TABLE_LEASE_SECONDS": "0.5"}
    runtime = await start_service(server.spec, TableConfig.from_env(env))
    # The lease is put once the gRPC port is known.
    await _until(lambda: server.failover.ownership is not None and bool(server.failover.ownership.live()))
    ownership = server.failover.ownership
    assert ownership is not None
    page = await asyncio.to_thread(_scrape, runtime.metrics_port)
    for name in FAILOVER_METRICS:
        assert f"# TYPE {name} " in page, name
    assert _sample(page, "duel_table_lease_renew_failures_total") == 0.0

    async def unreachable(*_args: object, **_kwargs: object) -> int:
        raise nats.errors.TimeoutError

    ownership.kv.put = unreachable  # type: ignore[method-assign]
    await _until(lambda: _sample(_scrape(runtime.metrics_port), "duel_table_lease_renew_failures_total") >= 2)
