"""Postgres roles: a login role per service, confined to its own database, and a migration role.

The wallet and scoring each keep their data in a database of their own. Each service connects as a
role named after it (``wallet``, ``scoring``) that may connect to its database only and do there only
what its queries do: the statements its ``migrations/privileges.toml`` lists, table by table (the
wallet's ledger rows are inserted and read, never updated or deleted, so its role cannot rewrite
them). The schema belongs to the migration role (``migrator``), which owns every service database,
runs the migrations and grants the service roles their privileges afterwards; a service role cannot
create, alter or drop anything (docs/architecture.md "A Postgres role per service").

:func:`provision` creates (or brings up to date) the roles, the databases and their ownership under an
administrator's URL; :func:`migrate` applies a service's migrations as the migration role and sets its
role's privileges to exactly what ``privileges.toml`` lists. Both are idempotent: ``make run``, the
tests and compose run them on every start. The SQL an operator runs on a managed Postgres instead is
in docs/operations.md "Postgres roles".

``python -m duelmahjong.platform.pgroles provision`` reads ``DATABASE_ADMIN_URL``,
``MIGRATOR_PASSWORD`` and ``<SERVICE>_DATABASE_PASSWORD``; ``... migrate <service>`` reads
``MIGRATION_DATABASE_URL`` (the migration role's URL of that database: what a Kubernetes init container
runs before the service starts); ``... setup`` does both, for every service (compose).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import asyncpg

from duelmahjong.platform import db
from duelmahjong.platform.logging import get_logger

MIGRATOR = "migrator"
# The services that keep data, each in its own database under a role of its own name.
SERVICES = ("wallet", "scoring")
PRIVILEGES_FILE = "privileges.toml"
# What privileges.toml may grant: the DML of a service's queries. Never TRUNCATE, REFERENCES or
# TRIGGER, which no service query needs.
TABLE_PRIVILEGES = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE"})
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
_QUALIFIED = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")
_ROLE_ATTRIBUTES = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS"

_log = get_logger("pgroles")


class ProvisioningError(RuntimeError):
    """The roles or privileges cannot be set up as asked."""


@dataclass(frozen=True)
class Privileges:
    """What one service's role may do in its database (``migrations/privileges.toml``)."""

    tables: Mapping[str, frozenset[str]]
    sequences: frozenset[str]

    @property
    def schemas(self) -> frozenset[str]:
        return frozenset(name.split(".")[0] for name in [*self.tables, *self.sequences])

    @classmethod
    def load(cls, migrations: Path) -> Privileges:
        path = migrations / PRIVILEGES_FILE
        if not path.exists():
            raise ProvisioningError(f"no {PRIVILEGES_FILE} beside the migrations in {migrations}")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        tables: dict[str, frozenset[str]] = {}
        for table, granted in data.get("tables", {}).items():
            wanted = frozenset(str(word).upper() for word in granted)
            if not _QUALIFIED.match(table) or not wanted or not wanted <= TABLE_PRIVILEGES:
                raise ProvisioningError(
                    f"{path}: {table} = {granted!r}: a table is schema.name and gets some of "
                    f"{', '.join(sorted(TABLE_PRIVILEGES))}"
                )
            tables[table] = wanted
        sequences = frozenset(str(name) for name in data.get("sequences", []))
        for sequence in sequences:
            if not _QUALIFIED.match(sequence):
                raise ProvisioningError(f"{path}: sequence {sequence!r} is not schema.name")
        if not tables:
            raise ProvisioningError(f"{path} grants no table")
        return cls(tables, sequences)


def _role(name: str) -> str:
    if not _IDENTIFIER.match(name):
        raise ProvisioningError(f"role or database name {name!r} must be lower case letters, digits and _")
    return f'"{name}"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def role_url(server_url: str, role: str, password: str, database: str) -> str:
    """``server_url`` (any role's URL on that server) as ``role`` with ``password`` on ``database``;
    the host, port and query (``sslmode``, ``sslrootcert``) are kept.

    >>> role_url("postgresql://postgres:x@db:5432/postgres?sslmode=verify-full", "wallet", "p/w", "wallet")
    'postgresql://wallet:p%2Fw@db:5432/wallet?sslmode=verify-full'
    """
    parts = urlsplit(server_url)
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, "/" + database, parts.query, parts.fragment))


async def _ensure_role(conn: asyncpg.Connection, name: str, password: str) -> None:
    if not password:
        raise ProvisioningError(f"role {name} needs a password")
    exists = await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", name)
    verb = "ALTER" if exists else "CREATE"
    try:
        # The password is sent as a literal (utility statements take no parameters); with
        # password_encryption = scram-sha-256, the server stores only its SCRAM verifier.
        await conn.execute(f"{verb} ROLE {_role(name)} {_ROLE_ATTRIBUTES} PASSWORD {_literal(password)}")
    except asyncpg.DuplicateObjectError:
        await conn.execute(f"ALTER ROLE {_role(name)} {_ROLE_ATTRIBUTES} PASSWORD {_literal(password)}")


async def _ensure_database(conn: asyncpg.Connection, name: str) -> None:
    owner = await conn.fetchval("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", name)
    if owner is None:
        try:
            await conn.execute(f"CREATE DATABASE {_role(name)} OWNER {_role(MIGRATOR)}")
        except asyncpg.DuplicateDatabaseError:
            owner = ""  # created by a concurrent starter in between
    if owner is not None and owner != MIGRATOR:
        await conn.execute(f"ALTER DATABASE {_role(name)} OWNER TO {_role(MIGRATOR)}")


async def _hand_over_objects(conn: asyncpg.Connection) -> None:
    """Make the migration role the owner of every schema, relation and function of this database: a
    database created before the roles existed holds objects its creator (the administrator) owns."""
    schemas = await conn.fetch(
        """SELECT nspname FROM pg_namespace n WHERE nspname NOT LIKE 'pg\\_%'
           AND nspname <> 'information_schema' AND pg_get_userbyid(n.nspowner) <> $1""",
        MIGRATOR,
    )
    for row in schemas:
        await conn.execute(f"ALTER SCHEMA {_role(row['nspname'])} OWNER TO {_role(MIGRATOR)}")
    relations = await conn.fetch(
        """SELECT n.nspname, c.relname, c.relkind
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT LIKE 'pg\\_%'
           AND n.nspname <> 'information_schema' AND pg_get_userbyid(c.relowner) <> $1""",
        MIGRATOR,
    )
    for row in relations:
        # A table's owned sequences follow their table.
        kind = {"v": "VIEW", "m": "MATERIALIZED VIEW", "f": "FOREIGN TABLE"}.get(row["relkind"], "TABLE")
        name = f'"{row["nspname"]}"."{row["relname"]}"'
        await conn.execute(f"ALTER {kind} {name} OWNER TO {_role(MIGRATOR)}")
    functions = await conn.fetch(
        """SELECT p.oid::regprocedure::text AS signature
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
           AND pg_get_userbyid(p.proowner) <> $1""",
        MIGRATOR,
    )
    for row in functions:
        await conn.execute(f"ALTER ROUTINE {row['signature']} OWNER TO {_role(MIGRATOR)}")


async def provision(
    admin_url: str,
    passwords: Mapping[str, str],
    *,
    migrator_password: str,
    databases: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Roles and databases for the services of ``passwords`` (service → its role's password) on the
    server of ``admin_url`` (a superuser, or a role with CREATEROLE and CREATEDB). Each service's
    database is named after it unless ``databases`` names another (the tests' fresh databases).
    Returns each service's database URL as its own role; the migration role's is :func:`role_url` of
    ``MIGRATOR``."""
    names = {service: (databases or {}).get(service, service) for service in passwords}
    conn = await asyncpg.connect(admin_url)
    try:
        await _ensure_role(conn, MIGRATOR, migrator_password)
        for service, password in passwords.items():
            await _ensure_role(conn, service, password)
            database = _role(names[service])
            await _ensure_database(conn, names[service])
            # PUBLIC's defaults (CONNECT, TEMPORARY) go: a database admits the roles granted here only.
            await conn.execute(f"REVOKE ALL ON DATABASE {database} FROM PUBLIC")
            await conn.execute(f"GRANT CONNECT ON DATABASE {database} TO {_role(service)}")
        # The maintenance database and the template too: no service role has business there.
        maintenance = await conn.fetchval("SELECT current_database()")
        for database in sorted({maintenance, "template1"}):
            await conn.execute(f"REVOKE ALL ON DATABASE {_role(database)} FROM PUBLIC")
    finally:
        await conn.close()
    for service in passwords:
        conn = await asyncpg.connect(db.with_database(admin_url, names[service]))
        try:
            async with conn.transaction():
                await _hand_over_objects(conn)
                await conn.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
                await conn.execute(f"GRANT USAGE ON SCHEMA public TO {_role(service)}")
        finally:
            await conn.close()
        _log.info("postgres roles provisioned", extra={"fields": {"service": service}})
    return {
        service: role_url(admin_url, service, password, names[service])
        for service, password in passwords.items()
    }


async def grant(conn: asyncpg.Connection, role: str, privileges: Privileges) -> None:
    """Set ``role``'s privileges in this database to exactly ``privileges``: what was granted before
    and is no longer listed is revoked. Run as the owner of the schema (the migration role)."""
    quoted = _role(role)
    async with conn.transaction():
        for schema in sorted(privileges.schemas):
            await conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {_role(schema)} FROM {quoted}")
            await conn.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {_role(schema)} FROM {quoted}")
            await conn.execute(f"REVOKE ALL ON SCHEMA {_role(schema)} FROM PUBLIC")
            await conn.execute(f"GRANT USAGE ON SCHEMA {_role(schema)} TO {quoted}")
        for table, granted in sorted(privileges.tables.items()):
            await conn.execute(f"GRANT {', '.join(sorted(granted))} ON TABLE {table} TO {quoted}")
        for sequence in sorted(privileges.sequences):
            # USAGE: nextval() for a bigserial default; nothing can set the sequence back.
            await conn.execute(f"GRANT USAGE ON SEQUENCE {sequence} TO {quoted}")
        # The service checks at start that its schema is current (db.apply_migrations reads first).
        await conn.execute(f"REVOKE ALL ON public.schema_migrations FROM {quoted}")
        await conn.execute(f"GRANT SELECT ON public.schema_migrations TO {quoted}")


async def migrate(
    migrator_url: str, service: str, migrations: Path, *, role: str | None = None
) -> list[db.Migration]:
    """Apply ``service``'s pending migrations as the migration role, then set its role's privileges
    (``role``, the service's name by default) to what ``privileges.toml`` lists."""
    privileges = Privileges.load(migrations)
    conn = await asyncpg.connect(migrator_url)
    try:
        applied = await db.apply_migrations(conn, migrations, service=service)
        await grant(conn, role or service, privileges)
    finally:
        await conn.close()
    return applied


def migrations_dir(service: str) -> Path | None:
    """``services/<service>/migrations``, if the service has one (it keeps data)."""
    spec = importlib.util.find_spec(f"services.{service}")
    if spec is None or not spec.submodule_search_locations:
        return None
    candidate = Path(next(iter(spec.submodule_search_locations))) / "migrations"
    return candidate if candidate.is_dir() else None


def _migrations_of(service: str) -> Path:
    found = migrations_dir(service)
    if found is None:
        raise ProvisioningError(f"services.{service} has no migrations directory")
    return found


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "")
    if not value:
        raise ProvisioningError(f"{name} is required")
    return value


def password_variable(service: str) -> str:
    """The variable of a service role's password for ``provision``: ``WALLET_DATABASE_PASSWORD``."""
    return f"{service.upper()}_DATABASE_PASSWORD"


async def setup(environ: Mapping[str, str], services: Sequence[str]) -> None:
    """:func:`provision`, then :func:`migrate` each service: everything a fresh server needs (compose,
    the dev overlay); the administrator's URL serves both, as the migration role's is derived."""
    admin_url = _required(environ, "DATABASE_ADMIN_URL")
    migrator_password = _required(environ, "MIGRATOR_PASSWORD")
    passwords = {service: _required(environ, password_variable(service)) for service in services}
    await provision(admin_url, passwords, migrator_password=migrator_password)
    for service in services:
        migrator_url = role_url(admin_url, MIGRATOR, migrator_password, service)
        applied = await migrate(migrator_url, service, _migrations_of(service))
        print(f"{service}: {len(applied)} new migration(s); privileges of role {service} set")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m duelmahjong.platform.pgroles", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, what in (
        ("provision", "create or update the roles and databases"),
        ("setup", "provision, then migrate every service"),
    ):
        command = commands.add_parser(name, help=what)
        command.add_argument("services", nargs="*", default=list(SERVICES))
    migrate_command = commands.add_parser("migrate", help="apply a service's migrations and grants")
    migrate_command.add_argument("service", choices=SERVICES)
    args = parser.parse_args(argv)
    source = os.environ if environ is None else environ
    try:
        if args.command == "provision":
            passwords = {service: _required(source, password_variable(service)) for service in args.services}
            asyncio.run(
                provision(
                    _required(source, "DATABASE_ADMIN_URL"),
                    passwords,
                    migrator_password=_required(source, "MIGRATOR_PASSWORD"),
                )
            )
        elif args.command == "setup":
            asyncio.run(setup(source, args.services))
        else:
            migrator_url = _required(source, "MIGRATION_DATABASE_URL")
            applied = asyncio.run(migrate(migrator_url, args.service, _migrations_of(args.service)))
            print(f"{args.service}: {len(applied)} new migration(s); privileges of role {args.service} set")
    except (ProvisioningError, db.MigrationError, OSError, asyncpg.PostgresError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
