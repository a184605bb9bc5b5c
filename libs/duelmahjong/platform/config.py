"""Service settings read from the environment, once, into a frozen and validated dataclass.

Every service has one config class, a subclass of :class:`ServiceConfig` declared with
``@dataclass(frozen=True, kw_only=True)``. Each field is a setting; its environment variable is the
field name in upper case unless :func:`setting` names another. ``from_env()`` reads them all, converts
them by their annotated type (``str``, ``int``, ``float``, ``bool``, ``Path``, ``tuple[str, ...]``),
and fails fast with one :class:`ConfigError` listing every problem, so a service never starts half
configured and no other module reads ``os.environ``.

>>> env = {"TOKEN_SECRET": "x" * 32, "NATS_URL": "nats://127.0.0.1:1", "GRPC_PORT": "7001",
...        "TLS_CERT_FILE": "wallet.pem", "TLS_KEY_FILE": "wallet-key.pem"}
>>> config = ServiceConfig.from_env(env)
>>> (config.grpc_port, config.log_level)
(7001, 'INFO')
>>> ServiceConfig.from_env({"GRPC_PORT": "seven"})
Traceback (most recent call last):
...
duelmahjong.platform.config.ConfigError: invalid service configuration:
  - GRPC_PORT='seven' is not an integer
  - TOKEN_SECRET is required: HMAC key (>= 32 bytes) that signs session tokens; same in every service
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from duelmahjong.platform.auth import TokenKeys
from duelmahjong.platform.tls import ClientTls

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_SERVICE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
# PyJWT warns (and our tests turn warnings into errors) below 32 bytes for HS256 (RFC 7518 §3.2).
MIN_TOKEN_SECRET_BYTES = 32
MAX_JETSTREAM_REPLICAS = 5  # JetStream's own limit on a stream's replicas


class ConfigError(ValueError):
    """The environment does not describe a valid configuration; the message lists every problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid service configuration:\n" + "\n".join(f"  - {p}" for p in problems))


def setting(
    default: Any = dataclasses.MISSING, *, help: str, env: str | None = None, secret: bool = False
) -> Any:
    """Declare one setting: its default (none = required), a one-line help and its variable name."""
    metadata = {"help": help, "env": env}
    return field(default=default, metadata=metadata, repr=not secret)


@dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    """Settings every service shares. Subclasses add their own and may override ``service_name``."""

    # Whether this service cannot run without a message bus / a database (checked in validate()).
    REQUIRES_NATS: ClassVar[bool] = True
    REQUIRES_DATABASE: ClassVar[bool] = False

    service_name: str = setting("service", help="service name, used in logs and metric names")
    grpc_host: str = setting("127.0.0.1", help="address the gRPC server binds")
    grpc_port: int = setting(0, help="gRPC port; 0 picks a free one")
    metrics_port: int = setting(0, help="port of the Prometheus /metrics endpoint; 0 picks a free one")
    grpc_health_port: int = setting(
        0,
        help="a second gRPC port serving only the health service, in plaintext, for probes that cannot "
        "speak TLS (Kubernetes' gRPC probe); 0 = none",
    )
    nats_url: str = setting("", help="NATS server URL(s), comma separated (JetStream enabled)")
    database_url: str = setting(
        "",
        help="Postgres URL of this service's database as its own role, TLS verified "
        "(postgresql://wallet:<password>@host:port/wallet?sslmode=verify-full&sslrootcert=<CA file>)",
        secret=True,
    )
    token_secret: str = setting(
        help=f"HMAC key (>= {MIN_TOKEN_SECRET_BYTES} bytes) that signs session tokens; same in every service",
        secret=True,
    )
    token_secret_accepted: str = setting(
        "",
        help="a second token key, accepted but never signed with: the next key before a rotation's "
        "switch, the previous one after it; '' outside a rotation (docs/operations.md, \"Rotating the "
        'token key")',
        secret=True,
    )
    tls_cert_file: str = setting(
        "",
        help="PEM certificate chain the gRPC server serves (its leaf first); read again when the file "
        "changes. Required unless GRPC_PLAINTEXT=true",
    )
    tls_key_file: str = setting(
        "",
        help="PEM private key of TLS_CERT_FILE; read again when it changes. Required unless "
        "GRPC_PLAINTEXT=true",
    )
    tls_ca_file: str = setting(
        "",
        help="PEM bundle of the CAs this process verifies the servers it dials with (gRPC peers, NATS, "
        "Postgres); empty: the system trust store",
    )
    grpc_plaintext: bool = setting(
        False,
        help="development only: serve and dial gRPC without TLS (a warning is logged at start); tokens "
        "then cross the network in clear",
    )
    nats_nkey_seed_file: str = setting(
        "", help="file holding this service's NATS user nkey seed: its identity on the bus"
    )
    log_level: str = setting("INFO", help="DEBUG, INFO, WARNING or ERROR")
    shutdown_grace_seconds: float = setting(5.0, help="seconds in-flight RPCs get to finish after SIGTERM")
    jetstream_replicas: int = setting(
        1,
        help="copies of every JetStream stream and durable consumer: 1 on one NATS server, 3 on a "
        "three-node cluster (survives the loss of one node); the same in every service",
    )
    table_log_retention_days: float = setting(
        30.0,
        help="days a table's write-ahead log is kept (replays, disputes) before JetStream expires it; "
        "the same in every service",
    )

    def __post_init__(self) -> None:
        problems = self.validate()
        if problems:
            raise ConfigError(problems)

    def validate(self) -> list[str]:
        """Problems with the values (empty when valid). Subclasses extend the list via ``super()``."""
        problems: list[str] = []
        if not _SERVICE_NAME.match(self.service_name):
            problems.append(f"SERVICE_NAME={self.service_name!r} must be lower case letters, digits and _")
        ports = (
            ("GRPC_PORT", self.grpc_port),
            ("METRICS_PORT", self.metrics_port),
            ("GRPC_HEALTH_PORT", self.grpc_health_port),
        )
        for name, port in ports:
            if not 0 <= port <= 65535:
                problems.append(f"{name}={port} is outside 0..65535")
        if len(self.token_secret.encode()) < MIN_TOKEN_SECRET_BYTES:
            problems.append(f"TOKEN_SECRET must be at least {MIN_TOKEN_SECRET_BYTES} bytes long")
        accepted = self.token_secret_accepted
        if accepted and len(accepted.encode()) < MIN_TOKEN_SECRET_BYTES:
            problems.append(f"TOKEN_SECRET_ACCEPTED must be at least {MIN_TOKEN_SECRET_BYTES} bytes long")
        if accepted and accepted == self.token_secret:
            problems.append(
                "TOKEN_SECRET_ACCEPTED equals TOKEN_SECRET: it is the other key of a rotation (the next "
                "or the previous one), or empty"
            )
        problems.extend(self._tls_problems())
        if self.log_level not in _LOG_LEVELS:
            problems.append(f"LOG_LEVEL={self.log_level!r} must be one of {', '.join(_LOG_LEVELS)}")
        if self.shutdown_grace_seconds < 0:
            problems.append("SHUTDOWN_GRACE_SECONDS must not be negative")
        if not 1 <= self.jetstream_replicas <= MAX_JETSTREAM_REPLICAS:
            problems.append(
                f"JETSTREAM_REPLICAS={self.jetstream_replicas} must be 1..{MAX_JETSTREAM_REPLICAS} "
                "(and at most the number of NATS servers in the cluster)"
            )
        if not self.table_log_retention_days > 0:
            problems.append(f"TABLE_LOG_RETENTION_DAYS={self.table_log_retention_days} must be > 0")
        if self.REQUIRES_NATS and not self.nats_url:
            problems.append(
                f"NATS_URL is required: the {self.service_name} service publishes or consumes events"
            )
        if self.REQUIRES_DATABASE and not self.database_url:
            problems.append(
                f"{self.database_variable()} is required: the {self.service_name} service keeps data "
                "in Postgres"
            )
        return problems

    def token_keys(self) -> TokenKeys:
        """The key this service signs tokens and table tickets with, and the keys it accepts."""
        return TokenKeys(self.token_secret, accepted=self.token_secret_accepted)

    def _tls_problems(self) -> list[str]:
        if self.grpc_plaintext:
            if self.tls_cert_file or self.tls_key_file:
                return ["GRPC_PLAINTEXT=true and TLS_CERT_FILE/TLS_KEY_FILE are both set: choose one"]
            return []
        if not self.tls_cert_file or not self.tls_key_file:
            return [
                "TLS_CERT_FILE and TLS_KEY_FILE are required: the certificate and key the gRPC server "
                "serves (GRPC_PLAINTEXT=true turns TLS off, in development only)"
            ]
        return []

    def client_tls(self) -> ClientTls:
        """How this service dials other services' gRPC servers (TLS_CA_FILE, GRPC_PLAINTEXT)."""
        return ClientTls.from_settings(self.tls_ca_file, self.grpc_plaintext)

    def at_least_one(self, *names: str) -> list[str]:
        """A problem for each of the named settings (field names) below 1: ``NAME=0 must be at least 1``."""
        return [
            f"{self._env(name)}={getattr(self, name)} must be at least 1"
            for name in names
            if getattr(self, name) < 1
        ]

    def positive(self, *names: str) -> list[str]:
        """A problem for each of the named settings (field names) not above 0: ``NAME=0 must be positive``."""
        return [
            f"{self._env(name)}={getattr(self, name)} must be positive"
            for name in names
            if getattr(self, name) <= 0
        ]

    @classmethod
    def database_variable(cls) -> str:
        """The variable of this service's database URL (``DATABASE_URL`` unless it names its own)."""
        return cls._env("database_url")

    @classmethod
    def _env(cls, name: str) -> str:
        return next(env_name(spec) for spec in dataclasses.fields(cls) if spec.name == name)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Build and validate the config from ``environ`` (default: the process environment)."""
        source = os.environ if environ is None else environ
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        problems: list[str] = []
        for spec in dataclasses.fields(cls):
            name = env_name(spec)
            if name not in source:
                if spec.default is dataclasses.MISSING:
                    problems.append(f"{name} is required: {spec.metadata.get('help', spec.name)}")
                continue
            try:
                values[spec.name] = _convert(source[name], hints[spec.name])
            except ValueError as err:
                problems.append(f"{name}={source[name]!r} {err}")
        if problems:
            raise ConfigError(problems)
        try:
            return cls(**values)
        except ConfigError as err:
            raise ConfigError(problems + err.problems) from None

    @classmethod
    def settings_table(cls) -> list[tuple[str, str, str]]:
        """(variable, default, help) for every setting: the source of the docs' configuration table."""
        rows = []
        for spec in dataclasses.fields(cls):
            default = "(required)" if spec.default is dataclasses.MISSING else repr(spec.default)
            rows.append((env_name(spec), default, spec.metadata.get("help", "")))
        return rows


def env_name(spec: dataclasses.Field[Any]) -> str:
    """The environment variable of one setting."""
    return spec.metadata.get("env") or spec.name.upper()


def _convert(raw: str, kind: Any) -> Any:
    if kind is str:
        return raw.strip()
    if kind is int:
        try:
            return int(raw.strip())
        except ValueError:
            raise ValueError("is not an integer") from None
    if kind is float:
        try:
            return float(raw.strip())
        except ValueError:
            raise ValueError("is not a number") from None
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError("is not a boolean (use true/false)")
    if kind is Path:
        return Path(raw.strip())
    if typing.get_origin(kind) is tuple:
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    raise ValueError(f"has a type the config loader cannot read: {kind!r}")
