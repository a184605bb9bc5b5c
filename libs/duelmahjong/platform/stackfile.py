"""Where a running local stack is: the state file ``make run`` writes and ``duel`` commands read.

``make run`` (:mod:`duelmahjong.platform.stack`) writes ``.local/stack.json`` once every service is
healthy and removes it when it stops; ``duel status`` and ``duel demo`` read it to find the services.
Each service's address can also be given by an environment variable (``WALLET_ADDRESS``…), which wins.

``services`` names every process (``matchmaking``, ``matchmaking-2``, ``table-2``…) with its own
address; ``targets`` the one gRPC target a client dials for a service whose replicas are
interchangeable (matchmaking): every replica's address in one (:func:`grpc_target`). ``ca_file`` is
the local CA that issued every service's certificate: what a client of the stack trusts
(:func:`client_tls`).

>>> state = StackState(services={"table": ServiceEndpoint("127.0.0.1:7002", "http://127.0.0.1:9002/metrics")})
>>> StackState.from_json(state.to_json()) == state
True
>>> state.target("table")
'127.0.0.1:7002'
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from duelmahjong.platform.tls import ClientTls, plaintext_requested

# Every service of the product, in the order they start and are listed.
SERVICE_NAMES = ("wallet", "matchmaking", "table", "scoring")
DEFAULT_STATE_FILE = Path(".local") / "stack.json"


# The variable each service that keeps data reads its database URL from (its config's
# ``database_url`` setting): the wallet's ledger, scoring's archive.
DATABASE_VARIABLES = {"wallet": "DATABASE_URL", "scoring": "SCORING_DATABASE_URL"}


def database_variable(service: str) -> str:
    """The environment variable holding a service's own database URL."""
    return DATABASE_VARIABLES.get(service, "DATABASE_URL")


def address_variable(service: str) -> str:
    """The environment variable holding a service's gRPC address: ``WALLET_ADDRESS``…"""
    return f"{service.upper()}_ADDRESS"


def grpc_target(addresses: Sequence[str]) -> str:
    """One gRPC target that reaches every one of ``addresses`` (``IPv4:PORT`` each): the address itself
    for one, else gRPC's ``ipv4:`` list, which grpc.aio, grpc-js and grpc-go dial as one channel (with
    the default pick_first policy: the first address that answers, the next should it go away).

    >>> grpc_target(["127.0.0.1:7001"])
    '127.0.0.1:7001'
    >>> grpc_target(["127.0.0.1:7001", "127.0.0.1:7002"])
    'ipv4:127.0.0.1:7001,127.0.0.1:7002'
    """
    if not addresses:
        raise ValueError("a gRPC target needs at least one address")
    if len(addresses) == 1:
        return addresses[0]
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"{address!r}: an ipv4: target lists IPv4:PORT addresses only") from None
        if not port.isdigit():
            raise ValueError(f"{address!r} has no port")
    return "ipv4:" + ",".join(addresses)


@dataclass(frozen=True)
class ServiceEndpoint:
    grpc: str  # host:port
    metrics: str  # URL of /metrics
    pid: int = 0


@dataclass(frozen=True)
class StackState:
    services: dict[str, ServiceEndpoint]
    nats_url: str = ""
    database_url: str = ""
    stack_pid: int = 0
    logs_dir: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)  # service -> one target for all its replicas
    plaintext: bool = False  # the stack serves gRPC without TLS (GRPC_PLAINTEXT=true)
    ca_file: str = ""  # the local CA's certificate: what verifies the stack's servers
    nats_seeds: dict[str, str] = field(default_factory=dict)  # NATS identity -> its nkey seed file

    def nats_options(self, identity: str = "tools") -> dict[str, Any]:
        """nats-py ``connect`` options to reach the stack's NATS as ``identity`` (``tools`` reads every
        stream; a service's identity may do what that service does) over TLS."""
        from duelmahjong.platform.bus import connection_options
        from duelmahjong.platform.nats_permissions import inbox_prefix

        seed = self.nats_seeds.get(identity, "")
        return connection_options(
            self.nats_url, seed_file=seed, ca_file=self.ca_file, inbox=inbox_prefix(identity) if seed else ""
        )

    def target(self, service: str) -> str:
        """What a client dials for ``service``: the target of all its replicas, else its one process."""
        return self.targets.get(service) or self.services[service].grpc

    def client_tls(self) -> ClientTls:
        """How a client of this stack secures its channels: its CA, or plaintext if it serves so."""
        if self.plaintext:
            return ClientTls(plaintext=True)
        return ClientTls(ca_file=Path(self.ca_file) if self.ca_file else None)

    def instances(self, service: str) -> list[str]:
        """The processes of ``service`` this state names: ``matchmaking``, ``matchmaking-2``…"""
        return [
            name
            for name in self.services
            if name == service or (name.startswith(f"{service}-") and name[len(service) + 1 :].isdigit())
        ]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StackState:
        raw = json.loads(text)
        services = {name: ServiceEndpoint(**value) for name, value in raw.pop("services").items()}
        return cls(services=services, **raw)

    def write(self, path: Path) -> None:
        """Write atomically, so a reader never sees half a file, and readable by this user only: the
        database URL carries the Postgres superuser's password."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(self.to_json())
        partial.replace(path)

    @classmethod
    def read(cls, path: Path) -> StackState | None:
        """The state of the running stack, or None if no stack wrote one."""
        try:
            return cls.from_json(path.read_text())
        except FileNotFoundError:
            return None


def service_addresses(
    state_file: Path = DEFAULT_STATE_FILE,
    *,
    overrides: Mapping[str, str | None] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str | None]:
    """Each service's gRPC address: an explicit override, else the environment, else the state file
    (the target of all the service's replicas, :meth:`StackState.target`)."""
    env = os.environ if environ is None else environ
    state = StackState.read(state_file)
    addresses: dict[str, str | None] = {}
    for name in SERVICE_NAMES:
        chosen = (overrides or {}).get(name) or env.get(address_variable(name))
        if not chosen and state is not None and name in state.services:
            chosen = state.target(name)
        addresses[name] = chosen or None
    return addresses


def client_tls(
    state_file: Path = DEFAULT_STATE_FILE,
    *,
    ca_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ClientTls:
    """How a client of the stack secures its channels: plaintext when ``GRPC_PLAINTEXT`` is true (or
    the running stack serves plaintext); else verified TLS with ``ca_file``, else ``TLS_CA_FILE``,
    else the state file's CA (``make run``'s local CA), else the system trust store (a real
    deployment's publicly trusted certificates)."""
    env = os.environ if environ is None else environ
    if plaintext_requested(env):
        return ClientTls(plaintext=True)
    chosen = ca_file or (Path(env["TLS_CA_FILE"]) if env.get("TLS_CA_FILE") else None)
    if chosen is None:
        state = StackState.read(state_file)
        if state is not None:
            return state.client_tls()
    return ClientTls(ca_file=chosen)
