"""``make run``: the whole backend on this machine, from nothing, stopped cleanly on Ctrl-C or SIGTERM.

``python -m duelmahjong.platform.stack`` starts embedded NATS (TLS only, each service connecting as its
own identity: :mod:`duelmahjong.platform.nats_permissions`) and Postgres (unless ``NATS_URL`` /
``DATABASE_URL`` name servers of your own; ``DATABASE_URL`` is then an admin URL under which each
service gets its own database), gives each service that keeps data its own Postgres role and database
and applies its migrations as the migration role (``duelmahjong.platform.pgroles``; the embedded
Postgres serves TLS with a certificate of the local CA in ``.local/tls``), starts the four services as
processes (``python -m services.<name>``) on free ports, waits until each is SERVING, prints their
endpoints and writes them to ``.local/stack.json`` for ``duel status``. Service logs (JSON lines) go
to ``.local/logs/<service>.log``.

Every gRPC server serves TLS: the stack keeps a local CA in ``.local/tls/`` (made once, reused, so a
client that trusts it keeps trusting it) and issues each process a certificate for ``localhost`` and
``127.0.0.1`` at every start. The state file names the CA (``ca_file``), where ``duel`` commands and
the Node.js client find it. ``GRPC_PLAINTEXT=true`` runs the stack without TLS (development only).

``TABLE_SERVERS=N`` starts N table servers (``table``, ``table-2``…, each its own ``SERVER_ID``);
``MATCHMAKING_REPLICAS=N`` N matchmaking processes (``matchmaking``, ``matchmaking-2``…, each its own
``MATCHMAKING_REPLICA_ID``), which clients and the other services reach as one gRPC target listing
them all (``ipv4:127.0.0.1:P1,127.0.0.1:P2``, ``targets`` in the state file). Each process has its
own gRPC and metrics ports and log.

Stopping (Ctrl-C, SIGTERM, or a service dying on its own): SIGTERM to every service (each drains:
health NOT_SERVING, grace period), SIGKILL to any still alive after the grace, then Postgres and
NATS stop and the state file is removed. Services also get SIGTERM if this process dies abruptly
(Linux parent-death signal), so no service outlives the stack.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import importlib.util
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from duelmahjong.platform import pgroles
from duelmahjong.platform.db import MigrationError, without_password
from duelmahjong.platform.embedded import EmbeddedNats, EmbeddedPostgres, EmbeddedServerError, free_port
from duelmahjong.platform.grpc_server import wait_until_serving
from duelmahjong.platform.nats_permissions import LocalAccess
from duelmahjong.platform.pki import LocalAuthority
from duelmahjong.platform.stackfile import (
    DATABASE_VARIABLES,
    SERVICE_NAMES,
    ServiceEndpoint,
    StackState,
    address_variable,
    database_variable,
    grpc_target,
)
from duelmahjong.platform.tls import ClientTls, plaintext_requested

HOST = "127.0.0.1"
# Settings the local stack gives its services unless the environment sets them: it serves one machine,
# where `duel demo`, `duel bench soak` and the e2e tests log in every bot and player as a guest from
# 127.0.0.1 (a soak of 200 pairs logs in 400 at once, and more as bots drift), far beyond what a
# public wallet allows one address (WALLET_GUEST_LOGINS_PER_MINUTE, docs/operations.md).
LOCAL_DEFAULTS = {"WALLET_GUEST_LOGINS_PER_MINUTE": "6000", "WALLET_GUEST_LOGIN_BURST": "1000"}
# How many matchmaking processes the stack runs unless MATCHMAKING_REPLICAS says: two, so a laptop runs
# matchmaking as a fleet, as Kubernetes does (docs/architecture.md "Matchmaking as a fleet").
DEFAULT_MATCHMAKING_REPLICAS = 2
MAX_PROCESSES_PER_SERVICE = 16
# The names every local certificate carries: what clients dial on this machine.
LOCAL_NAMES = ("localhost", HOST)
# Services any of whose processes serves any client: one gRPC target lists them all. Not table
# servers: each hosts its own tables, which matchmaking points clients at.
INTERCHANGEABLE = frozenset({"matchmaking"})
READY_WITHIN_SECONDS = 60.0
STOP_GRACE_SECONDS = 10.0
_PR_SET_PDEATHSIG = 1


class StackError(RuntimeError):
    """The stack could not be brought up."""


def _say(line: str) -> None:
    print(f"[stack] {line}", flush=True)


@dataclass
class ServiceProcess:
    """One service process of the stack; ``service`` is its package (several table servers share one)."""

    name: str
    grpc_port: int
    metrics_port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    service: str = ""
    env: dict[str, str] | None = None

    @property
    def address(self) -> str:
        return f"{HOST}:{self.grpc_port}"

    @property
    def endpoint(self) -> ServiceEndpoint:
        return ServiceEndpoint(self.address, f"http://{HOST}:{self.metrics_port}/metrics", self.process.pid)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


async def _wait_serving(service: ServiceProcess, tls: ClientTls) -> None:
    waiting = asyncio.create_task(
        wait_until_serving(service.address, tls, within_seconds=READY_WITHIN_SECONDS)
    )
    while not waiting.done():
        if service.process.poll() is not None:
            waiting.cancel()
            raise StackError(
                f"{service.name} exited with code {service.process.returncode} while starting; "
                f"its log ({service.log_path}) ends:\n{service.log_tail()}"
            )
        await asyncio.wait({waiting}, timeout=0.2)
    try:
        waiting.result()
    except TimeoutError:
        raise StackError(
            f"{service.name} was not SERVING within {READY_WITHIN_SECONDS:.0f}s; "
            f"its log ends:\n{service.log_tail()}"
        ) from None


def available_services(wanted: Sequence[str]) -> list[str]:
    """The services of ``wanted`` that exist as runnable packages (``services/<name>/__main__.py``)."""
    found = []
    for name in wanted:
        if importlib.util.find_spec(f"services.{name}.__main__") is None:
            _say(f"WARNING: services/{name}/__main__.py does not exist yet; {name} is not started")
        else:
            found.append(name)
    return found


def _process_count(environ: dict[str, str], variable: str, default: int) -> int:
    """How many processes of one service ``variable`` (``TABLE_SERVERS``…) asks for: 1..16."""
    text = environ.get(variable, str(default))
    try:
        count = int(text)
    except ValueError:
        raise StackError(f"{variable}={text!r} is not a whole number") from None
    if not 1 <= count <= MAX_PROCESSES_PER_SERVICE:
        raise StackError(f"{variable}={count} must be 1..{MAX_PROCESSES_PER_SERVICE}")
    return count


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask Linux to SIGTERM it when the stack dies.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the stack's own shutdown still stops its services


class Stack:
    """The running local stack; use :meth:`up`, then :meth:`down` (always)."""

    def __init__(
        self,
        data_dir: Path,
        services: Sequence[str],
        environ: dict[str, str],
        *,
        nats_access: LocalAccess | None = None,
    ) -> None:
        self.data_dir = data_dir
        # The identities the services connect to NATS as: made here for the embedded server; given
        # with a NATS_URL whose servers this process started with them (a test's cluster).
        self.nats_access = nats_access
        self.services = list(services)
        self.environ = environ
        self.processes: list[ServiceProcess] = []
        self._servers = ExitStack()
        self._logs: list[IO[bytes]] = []
        self.state_file = data_dir / "stack.json"
        self.counts = {
            "table": _process_count(environ, "TABLE_SERVERS", 1),
            "matchmaking": _process_count(environ, "MATCHMAKING_REPLICAS", DEFAULT_MATCHMAKING_REPLICAS),
        }
        self.nats_url = ""
        self.admin_url = ""
        self.targets: dict[str, str] = {}
        self.plaintext = plaintext_requested(environ)
        self.tls_dir = data_dir / "tls"
        self._authority: LocalAuthority | None = None

    @property
    def client_tls(self) -> ClientTls:
        """How a client of this stack secures its channels: trusting the stack's local CA."""
        if self.plaintext:
            return ClientTls(plaintext=True)
        return ClientTls(ca_file=self.authority.ca_cert)

    @property
    def authority(self) -> LocalAuthority:
        """The local CA in ``.local/tls/`` (created on first use, reused after)."""
        if self._authority is None:
            self._authority = LocalAuthority.open(self.tls_dir)
        return self._authority

    @property
    def trust_file(self) -> Path:
        """The CA bundle every process of the stack verifies servers with: the local CA, and the CA of
        a NATS this stack was given (its own issued by another CA, as a test's cluster is) after it."""
        local = self.authority.ca_cert
        if self.nats_access is None or self.nats_access.ca_file.read_bytes() == local.read_bytes():
            return local
        bundle = self.tls_dir / "trust.pem"
        bundle.write_bytes(local.read_bytes() + self.nats_access.ca_file.read_bytes())
        return bundle

    def tls_settings(self, name: str) -> dict[str, str]:
        """The TLS settings of process ``name``: a certificate of its own, issued now, and the CAs."""
        if self.plaintext:
            return {"GRPC_PLAINTEXT": "true"}
        leaf = self.authority.issue(name, LOCAL_NAMES)
        return {
            "TLS_CERT_FILE": str(leaf.cert),
            "TLS_KEY_FILE": str(leaf.key),
            "TLS_CA_FILE": str(self.trust_file),
        }

    async def up(self) -> StackState:
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.nats_url = self.environ.get("NATS_URL") or ""
        if not self.nats_url:
            # The local CA under tls/ (the one every local server's certificate comes from), the
            # identities' seeds with the server's data: both kept, so a restart changes nothing.
            self.nats_access = LocalAccess.create(self.tls_dir, self.data_dir / "nats" / "nkeys")
            server = EmbeddedNats(self.data_dir / "nats", access=self.nats_access)
            self.nats_url = self._servers.enter_context(server).url
            _say(f"nats      {self.nats_url}  (embedded, data in {self.data_dir / 'nats'})")
        self.admin_url = self.environ.get("DATABASE_URL") or ""
        if not self.admin_url:
            postgres = EmbeddedPostgres(self.data_dir / "postgres", authority=self.authority)
            self.admin_url = self._servers.enter_context(postgres).url
            shown = without_password(self.admin_url)
            _say(f"postgres  {shown}  (embedded, TLS only, data in {self.data_dir / 'postgres'})")
        database_urls = await self._migrate()
        ports = {
            name: (free_port(HOST), free_port(HOST))
            for service in self.services
            for name in self._instances(service)
        }
        secret = self.environ.get("TOKEN_SECRET") or secrets.token_urlsafe(48)
        self.targets = {
            service: grpc_target([f"{HOST}:{ports[name][0]}" for name in self._instances(service)])
            for service in self.services
            if service in INTERCHANGEABLE
        }
        common = {
            **LOCAL_DEFAULTS,
            **self.environ,
            "NATS_URL": self.nats_url,
            "TOKEN_SECRET": secret,
            "GRPC_HOST": HOST,
            **{address_variable(name): self._target(name, ports) for name in self.services},
        }
        for variable in {"DATABASE_URL", *DATABASE_VARIABLES.values()}:
            common.pop(variable, None)  # each service gets its own database, or none
        for variable in ("TLS_CERT_FILE", "TLS_KEY_FILE", "TLS_CA_FILE", "GRPC_PLAINTEXT"):
            common.pop(variable, None)  # each process gets its own certificate (tls_settings)
        logs_dir = self.data_dir / "logs"
        logs_dir.mkdir(exist_ok=True)
        for service in self.services:
            for name in self._instances(service):
                grpc_port, metrics_port = ports[name]
                env = {
                    **common,
                    **self.tls_settings(name),
                    "GRPC_PORT": str(grpc_port),
                    "METRICS_PORT": str(metrics_port),
                }
                if service in database_urls:
                    env[database_variable(service)] = database_urls[service]
                if self.nats_access is not None:
                    env.update(self.nats_access.service_env(service))
                    if not self.plaintext:  # one bundle verifies gRPC's servers and NATS
                        env["TLS_CA_FILE"] = str(self.trust_file)
                if service == "table" and name != "table":  # several servers: each its own id
                    env["SERVER_ID"] = name
                if service == "matchmaking":
                    env["MATCHMAKING_REPLICA_ID"] = name
                log = logs_dir / f"{name}.log"
                self.processes.append(self._spawn(service, name, env, grpc_port, metrics_port, log))
        await self._wait_until_serving()
        state = self.write_state()
        _say(f"all {len(self.processes)} services SERVING in {time.monotonic() - started:.1f}s")
        return state

    def write_state(self) -> StackState:
        """The state file: every process this stack runs now (its pid changes when it is restarted)."""
        state = StackState(
            services={p.name: p.endpoint for p in self.processes},
            nats_url=self.nats_url,
            database_url=self.admin_url,
            stack_pid=os.getpid(),
            logs_dir=str(self.data_dir / "logs"),
            targets=dict(self.targets),
            # one bundle verifies every server of the stack: gRPC's, NATS', Postgres'
            ca_file=str(self.trust_file),
            plaintext=self.plaintext,
            nats_seeds={
                identity.name: str(self.nats_access.seed_file(identity.name))
                for identity in self.nats_access.access.identities
            }
            if self.nats_access
            else {},
        )
        state.write(self.state_file)
        return state

    async def _migrate(self) -> dict[str, str]:
        """One database and one role per service that has migrations, migrated before it starts; returns
        each service's URL as its own role. Passwords are new on every start (provisioning sets them)."""
        directories = {name: pgroles.migrations_dir(name) for name in self.services}
        keeping = {name: directory for name, directory in directories.items() if directory is not None}
        if not keeping:
            return {}
        passwords = {name: secrets.token_urlsafe(24) for name in keeping}
        migrator_password = secrets.token_urlsafe(24)
        urls = await pgroles.provision(self.admin_url, passwords, migrator_password=migrator_password)
        for name, directory in keeping.items():
            migrator_url = pgroles.role_url(self.admin_url, pgroles.MIGRATOR, migrator_password, name)
            applied = await pgroles.migrate(migrator_url, name, directory)
            _say(f"migrated  {name}: {len(applied)} new migration(s); it connects as role {name}")
        return urls

    def _instances(self, service: str) -> list[str]:
        """The process names of ``service``: ``table``, ``table-2``… for ``TABLE_SERVERS`` table servers,
        ``matchmaking``, ``matchmaking-2``… for ``MATCHMAKING_REPLICAS``."""
        count = self.counts.get(service, 1)
        return [service] + [f"{service}-{number}" for number in range(2, count + 1)]

    def _target(self, service: str, ports: dict[str, tuple[int, int]]) -> str:
        """The address the other services are given for ``service`` (the first table server's, say)."""
        return self.targets.get(service) or f"{HOST}:{ports[service][0]}"

    def _spawn(
        self, service: str, name: str, env: dict[str, str], grpc: int, metrics: int, log: Path
    ) -> ServiceProcess:
        log_file = log.open("ab")
        self._logs.append(log_file)
        process = subprocess.Popen(
            [sys.executable, "-m", f"services.{service}"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the stack only; it stops services in order
            preexec_fn=_die_with_parent,
        )
        return ServiceProcess(name, grpc, metrics, process, log, service, env)

    def process(self, name: str) -> ServiceProcess:
        return next(p for p in self.processes if p.name == name)

    def signal(self, name: str, signum: int) -> None:
        """Send ``signum`` to one service process (SIGKILL, SIGSTOP, SIGTERM… for fault tests)."""
        self.process(name).process.send_signal(signum)

    async def respawn(self, name: str) -> ServiceProcess:
        """Start a process that ended again, with the same settings and ports, and wait until it serves."""
        old = self.process(name)
        if old.process.poll() is None:
            raise StackError(f"{name} is still running")
        new = self._spawn(old.service, name, old.env or {}, old.grpc_port, old.metrics_port, old.log_path)
        self.processes[self.processes.index(old)] = new
        await _wait_serving(new, self.client_tls)
        return new

    async def _wait_until_serving(self) -> None:
        tls = self.client_tls
        await asyncio.gather(*(_wait_serving(service, tls) for service in self.processes))

    def print_endpoints(self) -> None:
        width = max(len(p.name) for p in self.processes) if self.processes else 0
        for service in self.processes:
            _say(f"{service.name:<{width}}  grpc {service.address:<16} metrics {service.endpoint.metrics}")
        for name, target in self.targets.items():
            if len(self._instances(name)) > 1:
                _say(f"clients reach every {name} replica at {target}")
        if self.plaintext:
            _say("WARNING: GRPC_PLAINTEXT=true: every service serves gRPC without TLS")
        else:
            _say(f"TLS: every service's certificate is issued by the CA {self.authority.ca_cert}")
        _say(f"logs in {self.data_dir / 'logs'}; state in {self.state_file}")
        _say("check with `.venv/bin/duel status`; stop with Ctrl-C")

    def down(self) -> None:
        """Stop everything this stack started; safe to call more than once and after a failed ``up``."""
        self.state_file.unlink(missing_ok=True)
        for service in self.processes:
            if service.process.poll() is None:
                service.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for service in self.processes:
            try:
                service.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _say(f"{service.name} did not stop within {STOP_GRACE_SECONDS:.0f}s; killing it")
                service.process.kill()
                service.process.wait(5)
        self.processes.clear()
        for log_file in self._logs:
            log_file.close()
        self._logs.clear()
        self._servers.close()


class Supervisor:
    """Restarts a service process that exits, as Kubernetes restarts a container: after a backoff that
    doubles with each restart in a row (1 s up to 30 s), back to 1 s once the process has served for a
    minute. One death never stops the stack; each restart is said on the console."""

    FIRST_DELAY = 1.0
    MAX_DELAY = 30.0
    STEADY_SECONDS = 60.0  # a process up this long starts its backoff again from FIRST_DELAY

    def __init__(self, stack: Stack) -> None:
        self._stack = stack
        self._restarts: dict[str, int] = {}
        self._started: dict[str, float] = {p.name: time.monotonic() for p in stack.processes}
        self._restarting: dict[str, asyncio.Task[None]] = {}

    def check(self) -> None:
        """Schedule the restart of every process that exited and is not being restarted already."""
        for service in list(self._stack.processes):
            name = service.name
            if service.process.poll() is None or name in self._restarting:
                continue
            if time.monotonic() - self._started.get(name, 0.0) >= self.STEADY_SECONDS:
                self._restarts[name] = 0
            count = self._restarts.get(name, 0)
            delay = min(self.MAX_DELAY, self.FIRST_DELAY * 2**count)
            self._restarts[name] = count + 1
            _say(
                f"{name} exited with code {service.process.returncode}; "
                f"restarting it in {delay:.0f}s (restart {count + 1})"
            )
            self._restarting[name] = asyncio.create_task(self._restart(name, delay), name=f"restart-{name}")

    async def _restart(self, name: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            restarted = await self._stack.respawn(name)
            self._started[name] = time.monotonic()
            self._stack.write_state()
            _say(f"{name} restarted (pid {restarted.process.pid}) and SERVING")
        except StackError as err:  # it died again while starting: the next check backs off further
            _say(f"{name} did not come back: {err}")
        finally:
            del self._restarting[name]

    async def stop(self) -> None:
        tasks = list(self._restarting.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def run_stack(data_dir: Path, services: Sequence[str]) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    running = StackState.read(data_dir / "stack.json")
    if running is not None and running.stack_pid != os.getpid() and _process_exists(running.stack_pid):
        _say(f"ERROR: a stack is already running from {data_dir} (pid {running.stack_pid}); stop it first")
        return 1
    stack = Stack(data_dir, available_services(services), dict(os.environ))
    code = 0
    supervisor: Supervisor | None = None
    try:
        await stack.up()
        stack.print_endpoints()
        supervisor = Supervisor(stack)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=0.5)
            except TimeoutError:
                supervisor.check()
        _say("stopping")
    except (StackError, EmbeddedServerError, MigrationError, pgroles.ProvisioningError, OSError) as err:
        _say(f"ERROR: {err}")
        code = 1
    finally:
        if supervisor is not None:
            await supervisor.stop()
        stack.down()
        _say("stopped; nothing left running")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m duelmahjong.platform.stack", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".local"), help="data, logs and state (default .local)"
    )
    parser.add_argument(
        "--services",
        default=",".join(SERVICE_NAMES),
        help="comma-separated services to run (default: all four)",
    )
    args = parser.parse_args(argv)
    services = [name.strip() for name in args.services.split(",") if name.strip()]
    unknown = sorted(set(services) - set(SERVICE_NAMES))
    if unknown:
        parser.error(f"unknown service(s): {', '.join(unknown)}; known: {', '.join(SERVICE_NAMES)}")
    return asyncio.run(run_stack(args.data_dir.resolve(), services))


if __name__ == "__main__":
    sys.exit(main())
