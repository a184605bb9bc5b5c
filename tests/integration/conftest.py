"""Per-test fixtures on the session's real NATS and Postgres (see ``tests/conftest.py``).

- ``database_url`` — a fresh, empty database for this test (dropped afterwards).
- ``wallet_database_url`` / ``scoring_database_url`` — that database migrated by the migration role
  and set up for the service's own role, as ``make run`` and prod do: the URL is the role's
  (``wallet`` / ``scoring``), which may do only what the service's ``privileges.toml`` lists.
- ``bus`` — a :class:`~duelmahjong.platform.bus.Bus` connected to the session's NATS (as the harness).
- ``service_env`` — the environment a service needs here (NATS, token secret, loopback, free ports);
  add ``DATABASE_URL`` yourself when the service keeps data.
- ``start_service`` — ``await start_service(SPEC, config)`` runs a service in this test's event loop
  exactly as its process would (gRPC, health, metrics, bus, migrations) and returns its
  :class:`~duelmahjong.platform.service.ServiceRuntime` once it serves; stopped after the test, or
  before by ``await start_service.stop(runtime)`` (as SIGTERM would: a rolling restart).
- ``issue`` — ``issue(player_id, role)`` → bearer metadata for calls that need a session token.
- ``wallet_service`` — the wallet as its process runs it, on a fresh database (its own role) with a
  private event namespace; its :class:`~duelmahjong.platform.service.ServiceRuntime`.
- ``wallet_ledger`` — the wallet's :class:`~services.wallet.ledger_store.LedgerStore` on a fresh, migrated
  database; the ledger's audit must find nothing wrong when the test ends.
- ``start_matchmaking`` — ``await start_matchmaking(rooms)`` runs a wallet (fresh database, private event
  namespace) and matchmaking with those rooms in front of it; returns both runtimes. A second argument
  adds settings to matchmaking's environment.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest
import pytest_asyncio

from duelmahjong.platform import auth, db, pgroles
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, serve
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.main import SPEC as MATCHMAKING
from services.scoring.main import MIGRATIONS as SCORING_MIGRATIONS
from services.wallet.audit import audit_ledger
from services.wallet.config import WalletConfig
from services.wallet.ledger_store import LedgerStore
from services.wallet.main import MIGRATIONS as WALLET_MIGRATIONS
from services.wallet.main import SPEC as WALLET

StartService = Callable[[ServiceSpec, ServiceConfig], Awaitable[ServiceRuntime[Any]]]


class ServiceStarter:
    """Runs services in the test's event loop as their processes would; see ``start_service``."""

    def __init__(self) -> None:
        self._running: dict[int, tuple[asyncio.Event, asyncio.Task[bool]]] = {}

    async def __call__(self, spec: ServiceSpec, config: ServiceConfig) -> ServiceRuntime[Any]:
        stop = asyncio.Event()
        ready: asyncio.Future[ServiceRuntime[Any]] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(config, spec, stop=stop, on_ready=ready.set_result))
        key = id(task)
        self._running[key] = (stop, task)
        done, _ = await asyncio.wait({ready, task}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        if ready in done:
            runtime = ready.result()
            self._running[id(runtime)] = self._running.pop(key)
            return runtime
        if task in done:
            task.result()  # raises what made the service fail to start
        raise TimeoutError(f"{config.service_name} did not start within 30s")

    async def stop(self, runtime: ServiceRuntime[Any]) -> None:
        """Stop one service (its in-flight RPCs get SHUTDOWN_GRACE_SECONDS) and wait until it has."""
        stop, task = self._running.pop(id(runtime))
        stop.set()
        await task

    async def stop_all(self) -> None:
        running = list(self._running.values())
        self._running.clear()
        for stop, _task in running:
            stop.set()
        results = await asyncio.gather(*(task for _, task in running), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result


@pytest_asyncio.fixture
async def database_url(postgres_admin_url: str, unique_name: Callable[[str], str]) -> AsyncIterator[str]:
    name = unique_name("test").lower()
    url = await db.ensure_database(postgres_admin_url, name)
    yield url
    conn = await asyncpg.connect(postgres_admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def role_passwords() -> dict[str, str]:
    """The service roles' and the migration role's passwords: roles are the server's, shared by every
    test's database, so they keep one password for the session."""
    return {name: uuid.uuid4().hex for name in (*pgroles.SERVICES, pgroles.MIGRATOR)}


async def _as_service_role(
    admin_url: str, database_url: str, service: str, passwords: dict[str, str], migrations: Path
) -> str:
    database = urlsplit(database_url).path.lstrip("/")
    urls = await pgroles.provision(
        admin_url,
        {service: passwords[service]},
        migrator_password=passwords[pgroles.MIGRATOR],
        databases={service: database},
    )
    migrator = pgroles.role_url(admin_url, pgroles.MIGRATOR, passwords[pgroles.MIGRATOR], database)
    await pgroles.migrate(migrator, service, migrations)
    return urls[service]


@pytest_asyncio.fixture
async def wallet_database_url(
    postgres_admin_url: str, database_url: str, role_passwords: dict[str, str]
) -> str:
    return await _as_service_role(
        postgres_admin_url, database_url, "wallet", role_passwords, WALLET_MIGRATIONS
    )


@pytest_asyncio.fixture
async def scoring_database_url(
    postgres_admin_url: str, database_url: str, role_passwords: dict[str, str]
) -> str:
    return await _as_service_role(
        postgres_admin_url, database_url, "scoring", role_passwords, SCORING_MIGRATIONS
    )


@pytest_asyncio.fixture
async def wallet_ledger(wallet_database_url: str) -> AsyncIterator[LedgerStore]:
    pool = await db.create_pool(wallet_database_url, max_size=6)
    ledger = LedgerStore(pool)
    yield ledger
    assert await audit_ledger(pool) == []
    await pool.close()


@pytest_asyncio.fixture
async def wallet_service(
    start_service: StartService,
    service_env: dict[str, str],
    wallet_database_url: str,
    unique_name: Callable[[str], str],
) -> ServiceRuntime[WalletConfig]:
    env = {
        **service_env,
        "DATABASE_URL": wallet_database_url,
        "WALLET_EVENT_NAMESPACE": unique_name("w").lower(),
        "WALLET_CONSUMER_WORKERS": "2",
    }
    runtime: ServiceRuntime[WalletConfig] = await start_service(WALLET, WalletConfig.from_env(env))
    return runtime


@pytest_asyncio.fixture
async def bus(nats_server_url: str, harness_nats: dict[str, str]) -> AsyncIterator[Bus]:
    connected = await Bus.connect(nats_server_url, name="test", **harness_nats)
    yield connected
    await connected.close()


@pytest.fixture
def service_env(
    nats_server_url: str, harness_nats: dict[str, str], token_secret: str, tls_env: dict[str, str]
) -> dict[str, str]:
    return {
        **tls_env,
        "NATS_URL": nats_server_url,
        # The harness's identity: these services run on a server every test shares, each test with
        # buckets and streams of its own, which no service's permissions name. Each service's own
        # identity is tested in tests/integration/test_nats_permissions.py and the e2e stacks.
        **({"NATS_NKEY_SEED_FILE": harness_nats["seed_file"]} if harness_nats else {}),
        "TOKEN_SECRET": token_secret,
        "GRPC_HOST": "127.0.0.1",
        "GRPC_PORT": "0",
        "METRICS_PORT": "0",
        "SHUTDOWN_GRACE_SECONDS": "1",
        "LOG_LEVEL": "WARNING",
        # A table server started here shares pytest's process: its collector policy would freeze
        # every object of the test run, not only its own (tests/unit/test_gc_policy.py tests it).
        "GC_FREEZE_SECONDS": "0",
        # Tests share one NATS: each test's table servers adopt each other's tables, no one else's.
        "TABLE_OWNERS_BUCKET": f"OWNERS_{uuid.uuid4().hex[:12]}",
        # ... and each test's matchmaking replicas share their own store.
        "MATCHMAKING_BUCKET": f"MM_{uuid.uuid4().hex[:12]}",
    }


@pytest.fixture
def issue(token_secret: str) -> Callable[..., tuple[tuple[str, str]]]:
    def bearer(player_id: str = "p-test", role: auth.Role = auth.Role.PLAYER) -> tuple[tuple[str, str]]:
        return auth.bearer_metadata(auth.issue_token(token_secret, player_id=player_id, role=role))

    return bearer


@pytest_asyncio.fixture
async def start_matchmaking(
    start_service: StartService,
    service_env: dict[str, str],
    wallet_database_url: str,
    unique_name: Callable[[str], str],
) -> Callable[..., Awaitable[tuple[ServiceRuntime[Any], ServiceRuntime[Any]]]]:
    async def start(
        rooms: list[dict[str, Any]], settings: dict[str, str] | None = None
    ) -> tuple[ServiceRuntime[Any], ServiceRuntime[Any]]:
        wallet_env = {
            **service_env,
            "DATABASE_URL": wallet_database_url,
            "WALLET_EVENT_NAMESPACE": unique_name("w").lower(),
        }
        wallet = await start_service(WALLET, WalletConfig.from_env(wallet_env))
        mm_env = {
            **service_env,
            "WALLET_ADDRESS": wallet.server.address,
            "MATCHMAKING_ROOMS": json.dumps(rooms),
            "MATCHMAKING_TICK_SECONDS": "0.05",
            **(settings or {}),
        }
        return wallet, await start_service(MATCHMAKING, MatchmakingConfig.from_env(mm_env))

    return start


@pytest.fixture
def _database_before_services(request: pytest.FixtureRequest) -> None:
    """Set a test's database up before its services so it is dropped after them: a service must stop
    before the database it holds connections to disappears under it. (A sync fixture, because an
    async one cannot ask for another async fixture while the loop runs.)"""
    if "database_url" in request.fixturenames:
        request.getfixturevalue("database_url")


@pytest_asyncio.fixture
async def start_service(_database_before_services: None) -> AsyncIterator[ServiceStarter]:
    starter = ServiceStarter()
    yield starter
    await starter.stop_all()
