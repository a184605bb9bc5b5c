"""What the stack benches read of a running stack: its processes in ``/proc``, its metrics, its
JetStream backlog and its ledger — and the stack itself, the running one or one started for the run.
``duel bench soak`` and ``duel bench chaos`` share these."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import sys
import tempfile
import urllib.request
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import grpc.aio
import nats
from prometheus_client.parser import text_string_to_metric_families

from duelmahjong.cli.demo import ledger_balances
from duelmahjong.cli.status import check_health
from duelmahjong.platform import eventloop
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stack import Stack, StackError, available_services
from duelmahjong.platform.stackfile import SERVICE_NAMES, StackState


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (0 for no values).

    >>> percentile([3.0, 1.0, 2.0], 0.5), percentile([1.0] * 99 + [9.0], 0.99), percentile([], 0.5)
    (2.0, 1.0, 0)
    """
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(fraction * len(ordered) + 0.5) - 1))]


SETTLE_SECONDS = 60.0  # after the last match: holds released, tables closed, consumers caught up
LIVE_TABLES = "duel_table_live_tables_count"  # a table server's gauge of the tables it hosts


class BenchViolation(Exception):
    """The run broke an invariant (or cannot check one): the bench exits 1."""


def report_checks(label: str, checks: Sequence[tuple[bool, str]]) -> list[str]:
    """Print each end-of-run check as ``<label> check ok|FAIL <line>``, then the verdict line; the
    lines that failed."""
    for ok, line in checks:
        print(f"{label} check {'ok  ' if ok else 'FAIL'} {line}", flush=True)
    violations = [line for ok, line in checks if not ok]
    print(
        f"{label} {'FAILED: ' + str(len(violations)) + ' violation(s)' if violations else 'OK'}", flush=True
    )
    return violations


def run_bench(label: str, bench: Coroutine[Any, Any, int]) -> int:
    """Run a stack bench to its exit code: 1 on a violation, or when the stack cannot be reached."""
    try:
        return eventloop.run(bench)
    except BenchViolation as err:
        print(f"{label} FAILED: {err}", file=sys.stderr)
        return 1
    except (OSError, StackError, asyncpg.PostgresError, grpc.aio.AioRpcError) as err:  # a service gone
        print(f"{label} FAILED: the stack could not be reached or checked: {err!r}", file=sys.stderr)
        return 1


@dataclass(frozen=True)
class ProcSample:
    rss_mb: float
    fds: int
    started_at: int  # clock ticks since boot (/proc/<pid>/stat field 22): changes if the pid is reused


def proc_sample(pid: int) -> ProcSample | None:
    """RSS, open fds and start time of a live process from /proc; None if it is gone (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    if stat[0] == "Z":
        return None
    rss_kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except PermissionError:
        fds = -1  # another user's process
    return ProcSample(rss_kb / 1024, fds, int(stat[19]))


def scrape_gauge(metrics_url: str, name: str) -> float | None:
    """The sum of a metric's samples at a service's /metrics (None if unreachable or absent)."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    values = [s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]
    return sum(values) if values else None


async def consumer_lag(state: StackState) -> int | None:
    """Messages pending or awaiting an ack over every durable consumer of every stream: the services'
    work not done yet (ephemeral consumers are watchers, see :func:`consumer_lags`)."""
    lags = await consumer_lags(state)
    return None if lags is None else sum(lag for lag, durable in lags.values() if durable)


async def consumer_lags(state: StackState) -> dict[str, tuple[int, bool]] | None:
    """Each consumer's messages pending or awaiting an ack, and whether it is durable, by
    ``<stream>/<consumer>`` (read as the ``tools`` identity)."""
    try:
        client = await nats.connect(
            state.nats_url.split(","), connect_timeout=5, max_reconnect_attempts=0, **state.nats_options()
        )
    except Exception:  # lag is informative: the soak goes on without it
        return None
    try:
        jsm = client.jsm()
        lags = {}
        for stream in await jsm.streams_info():
            for consumer in await jsm.consumers_info(stream.config.name):
                lag = (consumer.num_pending or 0) + (consumer.num_ack_pending or 0)
                lags[f"{stream.config.name}/{consumer.name}"] = (lag, bool(consumer.config.durable_name))
        return lags
    finally:
        await client.close()


def _is_loopback_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def require_loopback(state: StackState) -> None:
    """The soak loads whatever it talks to: refuse a state file naming anything but this machine."""
    hosts = [endpoint.grpc.rsplit(":", 1)[0] for endpoint in state.services.values()]
    hosts += [urlsplit(url).hostname or "" for url in (state.nats_url, state.database_url) if url]
    for host in (h.strip("[]") for h in hosts):
        if host != "localhost" and not _is_loopback_ip(host):
            raise BenchViolation(f"{host} is not a loopback address: the bench runs on this machine only")


@contextlib.asynccontextmanager
async def stack_state(
    state_file: Path | None, *, settings: dict[str, str] | None = None, label: str = "soak"
) -> AsyncIterator[tuple[StackState, Stack | None]]:
    """The running stack's state if all of it is SERVING (``state_file``; None: never), else a stack
    started for the bench with ``settings`` over the environment, stopped at the end."""
    running = None if state_file is None else StackState.read(state_file)
    if running is not None and set(running.services) == set(SERVICE_NAMES):
        if all(check_health(e.grpc, 3.0) == "SERVING" for e in running.services.values()):
            require_loopback(running)
            print(f"[{label}] using the running stack of {state_file}", flush=True)
            yield running, None
            return
    data_dir = Path(tempfile.mkdtemp(prefix=f"duel-{label}-"))
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}
    stack = Stack(data_dir, available_services(SERVICE_NAMES), {**environ, **(settings or {})})
    try:
        print(f"[{label}] {'no running stack: ' if state_file else ''}starting one", flush=True)
        yield await stack.up(), stack
    finally:
        stack.down()
        shutil.rmtree(data_dir, ignore_errors=True)


def sample_services(state: StackState) -> dict[str, ProcSample | None]:
    return {name: proc_sample(endpoint.pid) for name, endpoint in state.services.items()}


async def ledger_state(admin_url: str) -> tuple[int, int, list[str]]:
    """The ledger total, the open holds and the wallet's own audit findings (docs/wallet.md)."""
    from services.wallet.audit import audit_ledger  # the audit the wallet's tests run, not a copy

    balances = await ledger_balances(admin_url)
    pool = await asyncpg.create_pool(with_database(admin_url, "wallet"), min_size=1, max_size=1)
    try:
        holds = await pool.fetchval("SELECT count(*) FROM wallet.holds WHERE open")
        problems = await audit_ledger(pool)
    finally:
        await pool.close()
    return sum((balances or {}).values()), int(holds), problems


def table_servers(state: StackState) -> list[str]:
    """The stack's table server processes: ``table``, and ``table-2``… with ``TABLE_SERVERS``."""
    return state.instances("table")


def live_tables(state: StackState) -> float | None:
    """Tables live on all the stack's table servers (None if one cannot be read)."""
    counts = [scrape_gauge(state.services[name].metrics, LIVE_TABLES) for name in table_servers(state)]
    return None if any(count is None for count in counts) else sum(c for c in counts if c is not None)


async def settle(state: StackState) -> tuple[int, float | None, int | None]:
    """Wait (bounded) for holds released, tables closed and consumers caught up; the last readings."""
    holds, live, lag = -1, None, None
    for _ in range(int(SETTLE_SECONDS)):
        _, holds, _ = await ledger_state(state.database_url)
        live = await asyncio.to_thread(live_tables, state)
        lag = await consumer_lag(state)
        if holds == 0 and live == 0 and lag == 0:
            break
        await asyncio.sleep(1.0)
    return holds, live, lag
