"""Postgres for services: an asyncpg pool and numbered SQL migrations applied at start.

A service keeps its schema in ``services/<name>/migrations/NNN_what.sql`` (``001_ledger.sql``,
``002_holds.sql``…). :func:`apply_migrations` runs the pending ones in version order inside ONE
transaction holding a Postgres advisory lock, so replicas starting together migrate once and a
failing migration leaves nothing half applied. Each applied file is recorded in ``schema_migrations``
with its checksum; running again is a no-op, and an applied file that was edited since is refused
(write a new migration instead).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import asyncpg
from asyncpg.pool import PoolConnectionProxy
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_FILE_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
# pg_advisory_xact_lock key: a fixed 63-bit number derived from a name, the same in every process.
MIGRATION_LOCK_KEY = int.from_bytes(hashlib.sha256(b"duelmahjong.migrations").digest()[:8], "big") >> 1

_log = get_logger("db")

# A connection of its own or one lent by a pool (``async with pool.acquire()``): both run queries.
Connection = asyncpg.Connection | PoolConnectionProxy


class MigrationError(RuntimeError):
    """The migrations directory or the recorded history is inconsistent."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path) -> list[Migration]:
    """The migrations in ``directory`` in version order; refuses badly named files and repeated versions."""
    if not directory.is_dir():
        raise MigrationError(f"no migrations directory at {directory}")
    found: dict[int, Migration] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        match = _FILE_NAME.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNN_snake_case.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"{path.name}: version {version:03d} is used by {found[version].name} too")
        found[version] = Migration(version, match.group(2), path.read_text(encoding="utf-8"))
    return [found[version] for version in sorted(found)]


def verifies_server(url: str) -> bool:
    """Whether a client of ``url`` checks the server's certificate and name (``sslmode=verify-full``).

    >>> verifies_server("postgresql://wallet:pw@db/wallet?sslmode=verify-full&sslrootcert=/ca.pem")
    True
    >>> verifies_server("postgresql://wallet:pw@db/wallet")
    False
    """
    return parse_qs(urlsplit(url).query).get("sslmode", [""])[-1] == "verify-full"


async def create_pool(database_url: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    """A connection pool; the URL is ``postgresql://user[:password]@host:port/db?sslmode=verify-full&
    sslrootcert=<CA file>``. Without ``verify-full`` it still connects (an in-cluster development
    database has no certificate), with a warning: the server is not verified."""
    if not verifies_server(database_url):
        _log.warning(
            "the database URL does not verify the server (sslmode is not verify-full): whoever sits "
            "between this process and Postgres can read and change what they exchange",
            extra={"fields": {"database": without_password(database_url)}},
        )
    pool = await asyncpg.create_pool(database_url, min_size=min_size, max_size=max_size)
    if pool is None:  # pragma: no cover - only in asyncpg's "return None on cancel" corner
        raise ConnectionError(f"cannot open a pool to {database_url}")
    return pool


class PoolCollector(Collector):
    """The pool's size, read when Prometheus scrapes (nothing on the query path):
    ``duel_<service>_db_pool_open_connections``, ``..._in_use_connections``, ``..._max_connections``.
    asyncpg does not expose the tasks waiting for a connection; in use == max is the saturation sign."""

    def __init__(self, metrics: ServiceMetrics, pool: asyncpg.Pool) -> None:
        self._metrics, self._pool = metrics, pool

    def collect(self) -> Iterator[Metric]:
        name, pool = self._metrics.name, self._pool
        opened = pool.get_size()
        yield GaugeMetricFamily(
            name("db_pool_open", "connections"), "connections the pool holds open", opened
        )
        yield GaugeMetricFamily(
            name("db_pool_in_use", "connections"),
            "connections lent out right now",
            opened - pool.get_idle_size(),
        )
        yield GaugeMetricFamily(
            name("db_pool_max", "connections"), "the pool's size limit", pool.get_max_size()
        )


# What asyncpg raises while the database cannot be reached (down, restarting, the connection cut):
# transient, so the work is retried later. TimeoutError and ConnectionRefusedError are OSErrors.
_UNAVAILABLE = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
)


def database_unavailable(err: BaseException) -> bool:
    """True when ``err`` says the database is out of reach right now, not that the work was wrong."""
    return isinstance(err, _UNAVAILABLE)


def register_pool_metrics(metrics: ServiceMetrics, pool: asyncpg.Pool) -> None:
    metrics.registry.register(PoolCollector(metrics, pool))


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database on the same server.

    >>> with_database("postgresql://postgres@127.0.0.1:5999/postgres", "wallet")
    'postgresql://postgres@127.0.0.1:5999/wallet'
    """
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def without_password(url: str) -> str:
    """``url`` fit for a log line or a console: the password left out.

    >>> without_password("postgresql://wallet:s3cret@db:5432/wallet?sslmode=verify-full")
    'postgresql://wallet@db:5432/wallet?sslmode=verify-full'
    """
    parts = urlsplit(url)
    credentials, at, host = parts.netloc.rpartition("@")
    netloc = f"{credentials.split(':', 1)[0]}@{host}" if at else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


async def ensure_database(admin_url: str, database: str) -> str:
    """Create ``database`` on the server of ``admin_url`` unless it exists; returns its URL."""
    if not _IDENTIFIER.match(database):
        raise ValueError(f"database name {database!r} must be lower case letters, digits and _")
    conn = await asyncpg.connect(admin_url)
    try:
        exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database)
        if not exists:
            try:
                await conn.execute(f'CREATE DATABASE "{database}"')
            except asyncpg.DuplicateDatabaseError:
                pass  # created by a concurrent starter in between: fine
    finally:
        await conn.close()
    return with_database(admin_url, database)


_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS public.schema_migrations (
    service    text        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (service, version)
)
"""


async def apply_migrations(
    conn: asyncpg.Connection | asyncpg.Pool, directory: Path, *, service: str
) -> list[Migration]:
    """Apply ``directory``'s pending migrations for ``service``; returns those applied now."""
    migrations = load_migrations(directory)
    if isinstance(conn, asyncpg.Pool):
        async with conn.acquire() as acquired:
            return await _apply(acquired, migrations, service)
    return await _apply(conn, migrations, service)


async def _pending(conn: Connection, migrations: list[Migration], service: str) -> list[Migration]:
    """The migrations not recorded in ``schema_migrations`` (all of them when it does not exist)."""
    if await conn.fetchval("SELECT to_regclass('public.schema_migrations')") is None:
        return list(migrations)
    rows = await conn.fetch(
        "SELECT version, name, checksum FROM public.schema_migrations WHERE service = $1", service
    )
    recorded = {row["version"]: row for row in rows}
    pending = []
    for migration in migrations:
        row = recorded.get(migration.version)
        if row is None:
            pending.append(migration)
        elif row["checksum"] != migration.checksum:
            raise MigrationError(
                f"{service} migration {migration.version:03d}_{row['name']} was edited after it was "
                "applied; add a new migration instead"
            )
    return pending


async def _apply(conn: Connection, migrations: list[Migration], service: str) -> list[Migration]:
    # Read first, without the lock or any DDL: a service whose role may not change the schema
    # (docs/architecture.md "A Postgres role per service") starts on a database already migrated.
    if not await _pending(conn, migrations, service):
        return []
    try:
        return await _apply_locked(conn, migrations, service)
    except asyncpg.InsufficientPrivilegeError as err:
        role = await conn.fetchval("SELECT current_user")
        raise MigrationError(
            f"{service} has pending migrations and role {role!r} may not apply them ({err}); run "
            f"`python -m duelmahjong.platform.pgroles migrate {service}` as the migration role first"
        ) from err


async def _apply_locked(conn: Connection, migrations: list[Migration], service: str) -> list[Migration]:
    async with conn.transaction():
        # Taken before touching schema_migrations, so even its creation is never raced.
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_KEY)
        await conn.execute(_SCHEMA_MIGRATIONS)
        pending = await _pending(conn, migrations, service)
        for migration in pending:
            await conn.execute(migration.sql)
            await conn.execute(
                "INSERT INTO public.schema_migrations (service, version, name, checksum)"
                " VALUES ($1, $2, $3, $4)",
                service,
                migration.version,
                migration.name,
                migration.checksum,
            )
            _log.info(
                "migration applied",
                extra={"fields": {"service": service, "version": migration.version, "name": migration.name}},
            )
        return pending
