"""Every metric an alert rule, a dashboard query or the HPA's adapter rules read is exported: the
four services run as their containers run them (`python -m services.<name>`, configured only by
the environment) on real NATS and Postgres, and their /metrics pages are scraped. Each must also
stop cleanly (exit 0) on SIGTERM, the signal Kubernetes and compose stop them with."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from types import ModuleType

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duelmahjong.platform import db

pytestmark = pytest.mark.integration

STARTUP_SECONDS = 45.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def exported_names(exposition: str) -> set[str]:
    """Every series name a /metrics page can carry, including families with no sample yet.

    >>> sorted(exported_names("# TYPE a_seconds histogram\\n# TYPE b_total counter\\nb_total 1.0\\n"))
    ['a_seconds', 'a_seconds_bucket', 'a_seconds_count', 'a_seconds_created', 'a_seconds_sum', 'b_total']
    """
    names: set[str] = set()
    for line in exposition.splitlines():
        typed = re.match(r"# TYPE (\S+) (\w+)", line)
        if typed:
            family, kind = typed.groups()
            names.add(family)
            if kind in ("histogram", "summary"):
                names |= {f"{family}_sum", f"{family}_count", f"{family}_created"}
            if kind == "histogram":
                names.add(f"{family}_bucket")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def _serving(grpc_port: int) -> bool:
    """gRPC health SERVING: the service is wired (all its metrics registered) and serving."""
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            return str(reply.read().decode())
    except OSError:
        return None


@pytest.fixture(scope="module")
def running_services(
    kit: ModuleType,
    nats_server_url: str,
    postgres_admin_url: str,
    token_secret: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, tuple[subprocess.Popen[bytes], int, int]]]:
    """service -> (its process, gRPC port, metrics port): the four services, each its own process."""
    database = asyncio.run(db.ensure_database(postgres_admin_url, f"deploy_{os.getpid()}"))
    logs = tmp_path_factory.mktemp("service-logs")
    running: dict[str, tuple[subprocess.Popen[bytes], int, int]] = {}
    try:
        for name in kit.SERVICES:
            grpc_port, metrics_port = _free_port(), _free_port()
            env = {
                **os.environ,
                "NATS_URL": nats_server_url,
                "DATABASE_URL": database,
                "TOKEN_SECRET": token_secret,
                "GRPC_HOST": "127.0.0.1",
                "GRPC_PORT": str(grpc_port),
                "METRICS_PORT": str(metrics_port),
                "LOG_LEVEL": "WARNING",
                "SHUTDOWN_GRACE_SECONDS": "1",
            }
            # This interpreter (the project's venv) stands in for the image's `python`.
            _python, *argv = kit.make_run_command(name)
            with open(logs / f"{name}.log", "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, *argv], cwd=kit.REPO, env=env, stdout=log, stderr=subprocess.STDOUT
                )
            running[name] = (process, grpc_port, metrics_port)
        yield running
    finally:
        for process, _grpc, _metrics in running.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)


def _wait_for_metrics(name: str, process: subprocess.Popen[bytes], grpc_port: int, metrics_port: int) -> str:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{name} exited {process.returncode} before it served")
        if _serving(grpc_port):
            page = _scrape(metrics_port)
            if page is not None:
                return page
        time.sleep(0.2)
    pytest.fail(f"{name} was not serving gRPC and /metrics within {STARTUP_SECONDS}s")


def test_every_metric_monitoring_reads_is_exported_by_a_service(
    kit: ModuleType, running_services: dict[str, tuple[subprocess.Popen[bytes], int, int]]
) -> None:
    exported: set[str] = set()
    for name, (process, grpc_port, metrics_port) in running_services.items():
        exported |= exported_names(_wait_for_metrics(name, process, grpc_port, metrics_port))
    used = kit.metrics_read_by_monitoring()
    assert used, "no alert or dashboard reads any metric"
    missing = []
    for metric, readers in sorted(used.items()):
        if metric in kit.PROMETHEUS_SYNTHETIC:
            continue
        if metric.startswith("~"):
            found = any(re.fullmatch(metric[1:], e) for e in exported)
        else:
            found = metric in exported
        if not found:
            missing.append(f"{metric} (read by {', '.join(sorted(readers))})")
    assert not missing, "not exported by any service:\n" + "\n".join(missing)


def test_every_service_stops_cleanly_on_sigterm(
    running_services: dict[str, tuple[subprocess.Popen[bytes], int, int]],
) -> None:
    for name, (process, grpc_port, metrics_port) in running_services.items():
        _wait_for_metrics(name, process, grpc_port, metrics_port)
        process.send_signal(signal.SIGTERM)
    codes = {name: process.wait(30) for name, (process, _grpc, _metrics) in running_services.items()}
    assert codes == dict.fromkeys(running_services, 0)
