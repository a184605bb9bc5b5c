"""Where a running local stack is: the state file ``make run`` writes and ``duel`` commands read.

``make run`` (:mod:`duelmahjong.platform.stack`) writes ``.local/stack.json`` once every service is
healthy and removes it when it stops; ``duel status`` and ``duel demo`` read it to find the services.
Each service's address can also be given by an environment variable (``WALLET_ADDRESS``…), which wins.

>>> state = StackState(services={"table": ServiceEndpoint("127.0.0.1:7002", "http://127.0.0.1:9002/metrics")})
>>> StackState.from_json(state.to_json()) == state
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

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

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> StackState:
        raw = json.loads(text)
        services = {name: ServiceEndpoint(**value) for name, value in raw.pop("services").items()}
        return cls(services=services, **raw)

    def write(self, path: Path) -> None:
        """Write atomically, so a reader never sees half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(self.to_json())
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
    """Each service's gRPC address: an explicit override, else the environment, else the state file."""
    env = os.environ if environ is None else environ
    state = StackState.read(state_file)
    addresses: dict[str, str | None] = {}
    for name in SERVICE_NAMES:
        chosen = (overrides or {}).get(name) or env.get(address_variable(name))
        if not chosen and state is not None and name in state.services:
            chosen = state.services[name].grpc
        addresses[name] = chosen or None
    return addresses
