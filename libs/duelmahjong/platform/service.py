"""The life of a service process, shared by all four: start, serve, stop on SIGTERM.

A service's ``main.py`` is its composition root. It declares a :class:`ServiceSpec` — a ``wire``
coroutine that builds the service's objects, registers its servicer, starts its consumers and says
what to close at the end — and calls :func:`run`::

    async def wire(runtime: ServiceRuntime[MatchmakingConfig]) -> None:
        matchmaker = Matchmaker(...)
        runtime.server.add_service(
            SERVICE_NAME, add_MatchmakingServiceServicer_to_server, MatchmakingApi(matchmaker)
        )
        runtime.spawn(matchmaker.run(runtime.config.matchmaking_tick_seconds), name="matchmaker")
        runtime.on_close(matchmaker.close)

    SPEC = ServiceSpec(wire=wire)  # migrations=..., public_methods=..., drain=... where a service has them

    def main() -> int:
        return run(MatchmakingConfig, SPEC)

:func:`run` reads the config (exit 2 with a readable message when it is wrong), sets up JSON logs,
serves ``/metrics``, connects to NATS (when ``NATS_URL`` is set) and Postgres (when its database URL
is set: ``DATABASE_URL``, or the variable its config names; migrations applied under the advisory
lock), calls ``wire``, starts gRPC (health SERVING) and waits for SIGTERM/SIGINT. Stopping: health
NOT_SERVING, in-flight RPCs get the grace period, background tasks are cancelled, the ``on_close``
callbacks awaited, NATS is drained, the pool closed. A background task that crashes stops the service
(exit 1) rather than leaving it half alive.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable, Collection, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import asyncpg

from duelmahjong.platform import eventloop, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.config import ConfigError, ServiceConfig
from duelmahjong.platform.db import apply_migrations, create_pool, register_pool_metrics
from duelmahjong.platform.grpc_server import ServiceServer
from duelmahjong.platform.logging import configure_logging, get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.nats_permissions import inbox_prefix
from duelmahjong.platform.streams import StoragePolicy
from duelmahjong.platform.tasks import cancel_and_wait

_log = get_logger("service")


ConfigT = TypeVar("ConfigT", bound=ServiceConfig)


@dataclass
class ServiceRuntime(Generic[ConfigT]):
    """What ``wire`` gets to build a service with; owned and torn down by :func:`serve`."""

    config: ConfigT
    metrics: ServiceMetrics
    server: ServiceServer
    metrics_port: int
    bus: Bus | None = None
    db: asyncpg.Pool | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    failed: bool = False
    _tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run ``work`` in the background until the service stops; if it crashes, the service stops."""
        task = asyncio.create_task(work, name=name)
        task.add_done_callback(self._on_task_done)
        self._tasks.append(task)
        return task

    def _on_task_done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        _log.error(
            "background task crashed; stopping the service",
            exc_info=task.exception(),
            extra={"fields": {"task": task.get_name()}},
        )
        self.failed = True
        self.stopping.set()

    def on_close(self, close: Callable[[], Awaitable[None]]) -> None:
        """Await ``close`` when the service stops: after its background tasks are cancelled (nothing
        uses what it closes any more), before NATS and the database pool close. The last registered
        runs first, so what ``wire`` opened later is closed before what it depends on."""
        self._closers.append(close)

    async def run_closers(self, *, within: float = 10.0) -> None:
        """Every ``on_close`` callback, each given at most ``within`` seconds; one that fails or takes
        longer is logged and the next one still runs."""
        while self._closers:
            close = self._closers.pop()
            try:
                await asyncio.wait_for(close(), timeout=within)
            except Exception:
                _log.exception("closing a part of the service failed")

    def require_bus(self) -> Bus:
        if self.bus is None:
            raise ConfigError([f"NATS_URL is required: {self.config.service_name} uses the event bus"])
        return self.bus

    def require_db(self) -> asyncpg.Pool:
        if self.db is None:
            variable = self.config.database_variable()
            raise ConfigError([f"{variable} is required: {self.config.service_name} keeps data in Postgres"])
        return self.db

    async def cancel_background(self, *, within: float = 10.0) -> None:
        """Cancel every background task and wait for them; one that loses its cancel is cancelled
        again after half of ``within`` (its cleanup's time), one still running after ``within``
        seconds is logged and left behind rather than holding the shutdown forever."""
        for task in await cancel_and_wait(self._tasks, within=within, first_wait=within / 2):
            fields = {"task": task.get_name()} if isinstance(task, asyncio.Task) else {}
            _log.error("background task ignored its cancellation", extra={"fields": fields})


Wire = Callable[[ServiceRuntime[Any]], Awaitable[None]]


@dataclass(frozen=True)
class ServiceSpec:
    """How to build one service: its wiring, its migrations, which RPCs need no token."""

    wire: Wire
    migrations: Path | None = None
    public_methods: Collection[str] = ()
    # Called once the stop signal arrives and before gRPC stops (still serving): a service that must
    # finish work first (the table server's live hands) waits here. Skipped after a crash.
    drain: Callable[[ServiceRuntime[Any]], Awaitable[None]] | None = None


def storage_policy(config: ServiceConfig) -> StoragePolicy:
    """The deployment's stream storage: its replicas, and the table logs' retention."""
    retention = {subjects.TABLE_LOG_STREAM.name: config.table_log_retention_days * 86400}
    return StoragePolicy(replicas=config.jetstream_replicas, max_age_seconds=retention)


async def serve(
    config: ServiceConfig,
    spec: ServiceSpec,
    *,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[ServiceRuntime[Any]], None] | None = None,
) -> bool:
    """Run the service until ``stop`` is set (or a background task crashes). True if it ended cleanly."""
    metrics = ServiceMetrics(config.service_name)
    runtime: ServiceRuntime[ServiceConfig] = ServiceRuntime(
        config=config,
        metrics=metrics,
        server=ServiceServer(config, metrics, public_methods=spec.public_methods),
        metrics_port=metrics.serve_http(config.grpc_host, config.metrics_port),
    )
    if stop is not None:
        runtime.stopping = stop
    started = False
    try:
        if config.nats_url:
            runtime.bus = await Bus.connect(
                config.nats_url,
                name=config.service_name,
                metrics=metrics,
                storage=storage_policy(config),
                seed_file=config.nats_nkey_seed_file,
                ca_file=config.tls_ca_file,
                inbox=inbox_prefix(config.service_name),
            )
        if config.database_url:
            runtime.db = await create_pool(config.database_url)
            register_pool_metrics(metrics, runtime.db)
            if spec.migrations is not None:
                await apply_migrations(runtime.db, spec.migrations, service=config.service_name)
        await spec.wire(runtime)
        if runtime.bus is not None:  # the backlog of the durable consumers wire declared
            runtime.spawn(runtime.bus.watch_consumer_lag(), name="consumer-lag")
        await runtime.server.start()
        started = True
        _log.info(
            "service ready",
            extra={"fields": {"grpc": runtime.server.address, "metrics_port": runtime.metrics_port}},
        )
        if on_ready is not None:
            on_ready(runtime)
        await runtime.stopping.wait()
        if spec.drain is not None and not runtime.failed:
            await spec.drain(runtime)
    finally:
        if started:
            await runtime.server.stop()
        await runtime.cancel_background(within=max(1.0, config.shutdown_grace_seconds))
        await runtime.run_closers(within=max(1.0, config.shutdown_grace_seconds))
        if runtime.bus is not None:
            await runtime.bus.close()
        if runtime.db is not None:
            try:  # close() waits for every connection back; on timeout it terminates them instead
                await asyncio.wait_for(runtime.db.close(), timeout=max(1.0, config.shutdown_grace_seconds))
            except TimeoutError:
                _log.warning("the database pool did not close in time; its connections were terminated")
        metrics.close()
        _log.info("service stopped", extra={"fields": {"clean": not runtime.failed}})
    return not runtime.failed


def run(config_class: type[ServiceConfig], spec: ServiceSpec) -> int:
    """The body of a service's ``main()``: exit 0 after a clean stop, 1 after a crash, 2 on bad config."""
    try:
        config = config_class.from_env()
    except ConfigError as err:
        print(f"{config_class.__name__}: {err}", file=sys.stderr)
        return 2
    configure_logging(config.service_name, config.log_level)

    async def main() -> bool:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        return await serve(config, spec, stop=stop)

    try:
        clean = eventloop.run(main())
    except ConfigError as err:  # e.g. wiring found a dependency the settings do not provide
        print(f"{config_class.__name__}: {err}", file=sys.stderr)
        return 2
    except Exception:
        _log.exception("service failed to start or stop")
        return 1
    return 0 if clean else 1
