"""``duel bench capacity``: how many live tables one table-server process holds at human pace.

One table-server process (``python -m services.table`` on an embedded NATS, write-ahead on, duel,
default room rules); both seats of every table played from ``--workers`` load-generator processes
(bench/capacity_seats.py), each seat thinking 1–3 s per decision (≈0.5 actions/s per table) and
winning when it can, so hands end, settle and re-deal inside the measurement (no wallet here:
``SETTLEMENT_WAIT_SECONDS`` is short, the hand end does not wait for one). Steps of N live tables,
each warmed then measured; per step::

    bench capacity N=1000 actions/s=418.7 p50=2.0 p95=7.8 p99=19.8 server_cpu=39.6% server_rss=234MB \
gc=g0:0/0.0ms g1:0/0.0ms g2:59/≤75.0ms(work≤10.0ms) hands=200 timeouts=0 errors=0 cpu/action=0.94ms \
attach=3.2s

``actions/s``: actions the seats sent; ``p50/p95/p99``: action → its event on the same seat, ms;
``server_cpu``: of one core, from ``/proc/<pid>/stat``; ``server_rss`` from ``/proc/<pid>/status``;
``gc``: per generation, collections in the window / the longest (the server's
``duel_table_gc_pause_seconds``; ``≤`` marks a bucket bound where the exact longest is not known) and
``(work≤…)``, the bound of the collector's own CPU time in each (``duel_table_gc_work_seconds``: a
pause longer than its work waited for a core);
``hands``: hands finished on the server; ``errors``: rejected actions plus streams ended in an error
(since the run began);
``cpu/action``: server CPU per action sent; ``attach``: the step's new tables opened → every new seat's
stream attached (seats play only then: bench/capacity_seats.py says why).
At the end, the largest N with p99 < 50 ms and the server CPU per action there. Then the reference,
measured in the same run (bench/capacity_wire.py): ``table.wire`` (bench/table.py: the wire floor, one
write-ahead record acked and one message to each seat per action, nothing of the game) on as many
tables as a step (the largest up to 1,000), its seats thinking as these do::

    bench capacity.wire N=1000 actions/s=420.3 p50=1.0 p99=2.4 server_cpu=21.5% cpu/action=0.512ms ...
    bench capacity.cpu N=1000 ours=1.120ms wire=0.512ms per action ratio(wire/ours)=0.46

the CPU an action costs the server at this pace against what the transports alone cost there.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import multiprocessing
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from bench import capacity_gc, capacity_seats, capacity_wire
from bench.capacity_seats import Samples, SeatTicket
from bench.common import PLAINTEXT, PLAINTEXT_ENV, BenchTls, cpu_seconds, open_table_request
from bench.stack_probes import percentile, proc_sample, scrape_gauge
from bench.table import ROOT, free_port
from duelmahjong.platform import auth, eventloop
from duelmahjong.platform.embedded import EmbeddedNats
from duelmahjong.platform.grpc_server import wait_until_serving
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import rules_pb2, table_pb2_grpc

P99_LIMIT_MS = 50.0
DEFAULT_STEPS = (100, 250, 500, 750, 1000)
OPEN_AT_ONCE = 50  # OpenTable calls in flight while a step's tables are opened
# A table's head start, in decisions of each seat (bench/capacity_seats.py): a duel hand is about 30.
HEAD_START_MAX = 40
HEAD_START_WAIT_SECONDS = 120.0
ATTACH_WAIT_SECONDS = 120.0  # a step's seats still unattached by then play anyway (and show as errors)


@dataclass(frozen=True)
class Settings:
    steps: Sequence[int] = DEFAULT_STEPS
    warm_seconds: float = 15.0
    seconds: float = 30.0
    think: tuple[float, float] = (1.0, 3.0)
    workers: int = 2
    wire: bool = True  # measure table.wire at this pace for the reference (bench/capacity_wire.py)


@dataclass(frozen=True)
class Step:
    tables: int
    seconds: float
    samples: Samples
    server_cpu: float  # seconds in the window
    rss_mb: float
    gc: capacity_gc.Pauses
    hands: float
    timeouts: float
    attach_seconds: float  # the step's new tables opened → every new seat's stream attached
    tls: bool = True  # the server and its seats over TLS (else plaintext: the comparison's other side)

    @property
    def rate(self) -> float:
        return self.samples.sent / self.seconds

    def p(self, fraction: float) -> float:
        return percentile(self.samples.latencies, fraction) * 1e3

    @property
    def errors(self) -> int:
        return self.samples.rejected + self.samples.errors

    @property
    def cpu_per_action_ms(self) -> float:
        return self.server_cpu / self.samples.sent * 1e3 if self.samples.sent else 0.0

    def line(self) -> str:
        return (
            f"bench capacity{'' if self.tls else '.plain'} N={self.tables} actions/s={self.rate:.1f} "
            f"p50={self.p(0.5):.1f} "
            f"p95={self.p(0.95):.1f} p99={self.p(0.99):.1f} server_cpu={self.server_cpu / self.seconds:.1%} "
            f"server_rss={self.rss_mb:.0f}MB gc={self.gc.text()} hands={self.hands:.0f} "
            f"timeouts={self.timeouts:.0f} errors={self.errors} cpu/action={self.cpu_per_action_ms:.2f}ms "
            f"attach={self.attach_seconds:.1f}s"
        )


class Workers:
    """The load-generator processes, spawned (grpc does not survive a fork), driven over pipes."""

    def __init__(self, count: int, address: str, think: tuple[float, float], ca_file: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes: list[Connection] = []
        self.processes = []
        self.seats = 0  # added so far
        for _ in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=capacity_seats.serve, args=(theirs, address, think, ca_file), daemon=True
            )
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    async def ask(self, index: int, command: str, payload: object = None) -> object:
        pipe = self.pipes[index]
        pipe.send((command, payload))
        return await asyncio.to_thread(pipe.recv)

    async def add(self, seats: list[SeatTicket]) -> None:
        """Seats go round the workers: a table's two seats land in different processes."""
        shares: list[list[SeatTicket]] = [[] for _ in self.pipes]
        for number, seat in enumerate(seats):
            shares[number % len(shares)].append(seat)
        await asyncio.gather(*(self.ask(i, "add", share) for i, share in enumerate(shares)))

    async def add_attached(self, seats: list[SeatTicket]) -> float:
        """Add ``seats``, wait until every seat added so far is attached (or its stream ended), then
        let them play; the seconds that took."""
        started = time.perf_counter()
        await self.add(seats)
        self.seats += len(seats)
        while time.perf_counter() - started < ATTACH_WAIT_SECONDS:
            samples = await self.collect()
            if samples.attached + samples.errors >= self.seats:
                break
            await asyncio.sleep(0.2)
        attached = time.perf_counter() - started
        await asyncio.gather(*(self.ask(i, "release") for i in range(len(self.pipes))))
        return attached

    async def collect(self) -> Samples:
        taken = await asyncio.gather(*(self.ask(i, "collect") for i in range(len(self.pipes))))
        total = Samples()
        for samples in taken:
            assert isinstance(samples, Samples)
            total.latencies += samples.latencies
            total.sent += samples.sent
            total.rejected += samples.rejected
            total.errors += samples.errors
            total.hands_started += samples.hands_started
            total.head_start_left += samples.head_start_left
            total.attached += samples.attached
        return total

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(asyncio.gather(*(self.ask(i, "stop") for i in range(len(self.pipes)))), 30)
        finally:
            for process in self.processes:
                process.join(timeout=5)
                if process.is_alive():
                    process.kill()


async def open_tables(address: str, secret: str, first: int, count: int, tls: ClientTls) -> list[SeatTicket]:
    """Open tables ``first``…``first + count - 1`` as matchmaking would; each seat's token and ticket."""
    service = auth.bearer_metadata(auth.issue_token(secret, player_id="bench-mm", role=auth.Role.SERVICE))
    rules = rules_pb2.RoomRules(profile=rules_pb2.PROFILE_DUEL, fan_rate=1)  # default timing (T11)
    seats: list[SeatTicket] = []
    async with tls.channel(address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)

        async def one(number: int) -> None:
            players = (f"cap-{number}-{rules_pb2.SEAT_FIRST}", f"cap-{number}-{rules_pb2.SEAT_SECOND}")
            request = open_table_request(f"cap-{number}", f"p{number}", "bench", rules, players, 10**9)
            opened = await stub.OpenTable(request, metadata=service)
            head_start = random.randint(0, HEAD_START_MAX)
            for index, ticket in enumerate(opened.tickets):
                token = auth.issue_token(secret, player_id=ticket.player_id)
                seats.append((token, ticket.table_ticket, index == 0, head_start))

        for start in range(first, first + count, OPEN_AT_ONCE):
            await asyncio.gather(*(one(n) for n in range(start, min(first + count, start + OPEN_AT_ONCE))))
    return seats


def _counter(metrics_url: str, name: str) -> float:
    return scrape_gauge(metrics_url, name) or 0.0


async def _measure_step(
    tables: int, workers: Workers, pid: int, metrics_url: str, settings: Settings, attach_seconds: float
) -> Step:
    await asyncio.sleep(settings.warm_seconds)
    waited = 0.0  # the warm-up's samples are dropped; the head starts' burst is over before measuring
    while (await workers.collect()).head_start_left > 0 and waited < HEAD_START_WAIT_SECONDS:
        await asyncio.sleep(1.0)
        waited += 1.0
    gc_before = await asyncio.to_thread(capacity_gc.read, metrics_url)
    hands = await asyncio.to_thread(_counter, metrics_url, "duel_table_hands_total")
    timeouts = await asyncio.to_thread(_counter, metrics_url, "duel_table_timeouts_total")
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    await asyncio.sleep(settings.seconds)
    samples = await workers.collect()
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(pid) - cpu_before
    gc_after = await asyncio.to_thread(capacity_gc.read, metrics_url)
    sample = proc_sample(pid)
    return Step(
        tables,
        elapsed,
        samples,
        cpu,
        sample.rss_mb if sample else 0.0,
        gc_after.since(gc_before),
        await asyncio.to_thread(_counter, metrics_url, "duel_table_hands_total") - hands,
        await asyncio.to_thread(_counter, metrics_url, "duel_table_timeouts_total") - timeouts,
        attach_seconds,
    )


def _server_env(
    nats_url: str, secret: str, grpc_port: int, metrics_port: int, capacity: int
) -> dict[str, str]:
    return {
        **os.environ,
        "NATS_URL": nats_url,
        "TOKEN_SECRET": secret,
        "GRPC_HOST": "127.0.0.1",
        "GRPC_PORT": str(grpc_port),
        "METRICS_PORT": str(metrics_port),
        "TABLE_CAPACITY": str(capacity),
        "SETTLEMENT_WAIT_SECONDS": "0.01",  # no scoring/wallet here: the hand end does not wait
        "DRAIN_SECONDS": "1",
        "LOG_LEVEL": "ERROR",
    }


async def measure(
    data_dir: Path, settings: Settings, *, tls: bool = True
) -> tuple[list[Step], capacity_wire.WireFloor | None]:
    """Every step's figures, and table.wire's at the same pace (None if not measured); the table
    server and its seats over TLS, or plaintext (``tls=False``: what TLS costs, beside it)."""
    secret = secrets.token_hex(32)
    grpc_port, metrics_port = free_port(), free_port()
    steps = sorted(set(settings.steps))
    results: list[Step] = []
    bench_tls = BenchTls.issue(data_dir / "tls")
    client = bench_tls.client if tls else PLAINTEXT
    with EmbeddedNats(data_dir / "nats") as nats_server:
        env = _server_env(nats_server.url, secret, grpc_port, metrics_port, steps[-1])
        env.update(bench_tls.server_env() if tls else PLAINTEXT_ENV)
        server = subprocess.Popen([sys.executable, "-m", "services.table"], cwd=ROOT, env=env)  # noqa: ASYNC220
        address, metrics_url = f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{metrics_port}/metrics"
        workers: Workers | None = None
        try:
            await wait_until_serving(address, client, within_seconds=60)
            workers = Workers(settings.workers, address, settings.think, str(client.ca_file or ""))
            opened = 0
            for tables in steps:
                seats = await open_tables(address, secret, opened, tables - opened, client)
                opened = tables
                attach_seconds = await workers.add_attached(seats)
                step = await _measure_step(tables, workers, server.pid, metrics_url, settings, attach_seconds)
                step = dataclasses.replace(step, tls=tls)
                print(step.line(), flush=True)
                results.append(step)
        finally:
            if workers is not None:
                await workers.stop()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
        wire = None
        if settings.wire:
            tables = capacity_wire.reference_tables(steps)
            wire = await capacity_wire.measure(
                nats_server.url, tables, settings.think, settings.warm_seconds, settings.seconds, bench_tls
            )
            print(wire.line(), flush=True)
    return results, wire


def summary(steps: Sequence[Step], wire: capacity_wire.WireFloor | None, plain: Sequence[Step] = ()) -> str:
    """The largest N with p99 under the limit and the server CPU per action there; with the reference,
    the CPU per action of the step it was measured at against the wire floor's at that step; with the
    plaintext steps, what TLS costs at each step (CPU per action and p99, TLS against plaintext)."""
    held = [step for step in steps if step.p(0.99) < P99_LIMIT_MS and step.errors == 0]
    if held:
        best = max(held, key=lambda step: step.tables)
        lines = [
            f"bench capacity.max_tables ours={best.tables} p99<{P99_LIMIT_MS:.0f}ms "
            f"server_cpu_per_action={best.cpu_per_action_ms:.3f}ms"
        ]
    else:
        lines = [f"bench capacity.max_tables ours=0 (no step had p99 < {P99_LIMIT_MS:.0f} ms without errors)"]
    same = [step for step in steps if wire is not None and step.tables == wire.tables]
    if wire is not None and same and same[0].cpu_per_action_ms and wire.cpu_per_action_ms:
        ours = same[0].cpu_per_action_ms
        lines.append(
            f"bench capacity.cpu N={wire.tables} ours={ours:.3f}ms wire={wire.cpu_per_action_ms:.3f}ms "
            f"per action ratio(wire/ours)={wire.cpu_per_action_ms / ours:.2f}"
        )
    plain_at = {step.tables: step for step in plain}
    for step in steps:
        other = plain_at.get(step.tables)
        if other is None:
            continue
        cpu_ratio = step.cpu_per_action_ms / other.cpu_per_action_ms if other.cpu_per_action_ms else 0.0
        p99_ratio = step.p(0.99) / other.p(0.99) if other.p(0.99) else 0.0
        lines.append(
            f"bench capacity.tls N={step.tables} cpu/action tls={step.cpu_per_action_ms:.3f}ms "
            f"plain={other.cpu_per_action_ms:.3f}ms ratio={cpu_ratio:.2f} p99 tls={step.p(0.99):.1f}ms "
            f"plain={other.p(0.99):.1f}ms ratio={p99_ratio:.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="duel bench capacity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default=",".join(map(str, DEFAULT_STEPS)), help="live tables per step")
    parser.add_argument("--warm", type=float, default=15.0, help="seconds of warm-up before each step")
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds measured per step")
    parser.add_argument("--think", default="1,3", help="a seat's thinking time per decision, min,max s")
    parser.add_argument("--workers", type=int, default=2, help="load-generator processes")
    parser.add_argument("--no-wire", action="store_true", help="skip table.wire's reference")
    parser.add_argument(
        "--no-plaintext", action="store_true", help="skip the plaintext run (what TLS costs, beside it)"
    )
    parser.add_argument("--quick", action="store_true", help="4 and 8 tables, fast seats, short steps")
    args = parser.parse_args(list(argv))
    low, high = (float(part) for part in args.think.split(","))
    settings = Settings(
        tuple(int(part) for part in args.steps.split(",")), args.warm, args.seconds, (low, high), args.workers
    )
    if args.quick:
        settings = Settings((4, 8), 1.0, 4.0, (0.01, 0.05), 2, wire=False)
    elif args.no_wire:
        settings = dataclasses.replace(settings, wire=False)
    plain: list[Step] = []
    with tempfile.TemporaryDirectory(prefix="capacity-bench-") as tmp:
        steps, wire = eventloop.run(measure(Path(tmp) / "tls", settings))
        if not args.no_plaintext:
            plain, _ = eventloop.run(
                measure(Path(tmp) / "plain", dataclasses.replace(settings, wire=False), tls=False)
            )
    print(summary(steps, wire, plain), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
