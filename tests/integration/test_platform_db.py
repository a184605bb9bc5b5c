"""Numbered migrations on a real Postgres: applied once, under a lock, all or nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from duelmahjong.platform.db import (
    MigrationError,
    apply_migrations,
    create_pool,
    load_migrations,
    register_pool_metrics,
)
from duelmahjong.platform.metrics import ServiceMetrics

pytestmark = [pytest.mark.integration]


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(exist_ok=True)
    for name, sql in files.items():
        (directory / name).write_text(sql)
    return directory


LEDGER = {
    "001_accounts.sql": "CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL);",
    "002_seed.sql": "INSERT INTO accounts VALUES ('house', 0);",
}


@pytest.mark.asyncio
async def test_migrations_run_twice_are_a_no_op(database_url: str, tmp_path: Path) -> None:
    migrations = _write(tmp_path / "migrations", LEDGER)
    conn = await asyncpg.connect(database_url)
    try:
        first = await apply_migrations(conn, migrations, service="wallet")
        second = await apply_migrations(conn, migrations, service="wallet")
        assert [m.version for m in first] == [1, 2]
        assert second == []
        assert await conn.fetchval("SELECT count(*) FROM accounts") == 1
        recorded = await conn.fetch("SELECT version, name FROM schema_migrations ORDER BY version")
        assert [(r["version"], r["name"]) for r in recorded] == [(1, "accounts"), (2, "seed")]
    finally:
        await conn.close()


@pytest.mark.asyncio
async def test_a_new_migration_is_applied_after_the_old_ones(database_url: str, tmp_path: Path) -> None:
    migrations = _write(tmp_path / "migrations", LEDGER)
    pool = await create_pool(database_url, max_size=2)
    try:
        await apply_migrations(pool, migrations, service="wallet")
        _write(
            migrations, {"003_holds.sql": "ALTER TABLE accounts ADD COLUMN held bigint NOT NULL DEFAULT 0;"}
        )
        applied = await apply_migrations(pool, migrations, service="wallet")
        assert [m.name for m in applied] == ["holds"]
    finally:
        await pool.close()


@pytest.mark.asyncio
async def test_replicas_starting_together_migrate_once(database_url: str, tmp_path: Path) -> None:
    migrations = _write(tmp_path / "migrations", LEDGER)
    conns = [await asyncpg.connect(database_url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(apply_migrations(c, migrations, service="wallet") for c in conns))
        assert sorted(len(applied) for applied in results) == [0, 0, 0, 2]
        assert await conns[0].fetchval("SELECT count(*) FROM accounts") == 1
    finally:
        for conn in conns:
            await conn.close()


@pytest.mark.asyncio
async def test_a_failing_migration_leaves_nothing_applied(database_url: str, tmp_path: Path) -> None:
    broken = {**LEDGER, "003_broken.sql": "ALTER TABLE no_such_table ADD COLUMN x int;"}
    migrations = _write(tmp_path / "migrations", broken)
    conn = await asyncpg.connect(database_url)
    try:
        with pytest.raises(asyncpg.UndefinedTableError):
            await apply_migrations(conn, migrations, service="wallet")
        assert await conn.fetchval("SELECT to_regclass('accounts')") is None
    finally:
        await conn.close()


@pytest.mark.asyncio
async def test_an_applied_migration_edited_later_is_refused(database_url: str, tmp_path: Path) -> None:
    migrations = _write(tmp_path / "migrations", LEDGER)
    conn = await asyncpg.connect(database_url)
    try:
        await apply_migrations(conn, migrations, service="wallet")
        _write(migrations, {"002_seed.sql": "INSERT INTO accounts VALUES ('house', 100);"})
        with pytest.raises(MigrationError, match="edited after it was applied"):
            await apply_migrations(conn, migrations, service="wallet")
    finally:
        await conn.close()


def test_badly_named_or_repeated_versions_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="NNN_snake_case"):
        load_migrations(_write(tmp_path / "a", {"1_accounts.sql": "SELECT 1;"}))
    with pytest.raises(MigrationError, match="version 001"):
        load_migrations(_write(tmp_path / "b", {"001_a.sql": "SELECT 1;", "001_b.sql": "SELECT 1;"}))


@pytest.mark.asyncio
async def test_the_pool_gauges_count_connections_lent_out(database_url: str) -> None:
    metrics = ServiceMetrics("wallet")
    pool = await create_pool(database_url, min_size=1, max_size=3)
    register_pool_metrics(metrics, pool)

    def gauge(what: str) -> float | None:
        return metrics.registry.get_sample_value(f"duel_wallet_db_pool_{what}_connections")

    try:
        assert (gauge("open"), gauge("in_use"), gauge("max")) == (1, 0, 3)
        async with pool.acquire(), pool.acquire():
            assert (gauge("open"), gauge("in_use")) == (2, 2)
        assert gauge("in_use") == 0
    finally:
        await pool.close()
