"""Fixtures of the offline deploy checks: the helpers in kit.py (tools, manifests, image) and
monitoring.py (alerts, dashboards, PromQL), and the rendered overlays.

Test modules import nothing from each other under --import-mode=importlib, so the helpers come
to them as fixtures.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from duelmahjong.platform.nats_permissions import LocalAccess
from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import StackState


def _load(file: str) -> ModuleType:
    name = f"duel_deploy_{Path(file).stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, (Path(__file__).parent / file).resolve())
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file} next to {__file__}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def kit() -> ModuleType:
    return _load("kit.py")


@pytest.fixture(scope="session")
def monitoring() -> ModuleType:
    return _load("monitoring.py")


@pytest.fixture(scope="session")
def edge() -> ModuleType:
    """deploy/k8s/edge.py: the generator of the overlays' edge objects."""
    return _load("../../deploy/k8s/edge.py")


@pytest.fixture(scope="session")
def rendered(kit: ModuleType) -> dict[str, list[dict[str, Any]]]:
    """overlay name -> the manifests kustomize renders for it (rendered once per session)."""
    return kit.render_overlays()


@pytest.fixture(scope="module")
def make_run_stack(
    kit: ModuleType,
    nats_server_url: str,
    nats_access: LocalAccess | None,
    postgres_admin_url: str,
    token_secret: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[tuple[Stack, StackState]]:
    """What `make run` runs (duelmahjong.platform.stack), on the session's NATS and Postgres.

    `up()` returns once every service answers gRPC health SERVING, i.e. is wired with all its
    metrics registered. One stack per test module: a module may stop its services, and may set
    more of the services' environment in a module-level `STACK_ENVIRONMENT` dict.
    """
    environ = {
        **os.environ,
        "NATS_URL": nats_server_url,
        "DATABASE_URL": postgres_admin_url,
        "TOKEN_SECRET": token_secret,
        "LOG_LEVEL": "WARNING",
        "SHUTDOWN_GRACE_SECONDS": "1",
        **getattr(request.module, "STACK_ENVIRONMENT", {}),
    }
    # Each service as its own identity on the session's NATS (the platform's stream and bucket names).
    stack = Stack(tmp_path_factory.mktemp("stack"), list(kit.SERVICES), environ, nats_access=nats_access)
    try:
        state = asyncio.run(stack.up())
        yield stack, state
    finally:
        stack.down()
