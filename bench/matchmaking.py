"""``duel bench matchmaking``: players queued → matched → at their table, through matchmaking as a fleet
of replicas sharing the JetStream key-value store, against the in-memory matchmaker of one process
measured in the same run (issue 28).

Per configuration, fresh (a new bucket, new processes): an embedded NATS with JetStream (one for the
whole run), matchmaking as real processes (``python -m services.matchmaking``) on free ports —

* ``memory``: one process with ``MATCHMAKING_STORE=memory`` (no fleet: the reference);
* ``replicas1``: one process on the shared store;
* ``replicas3_lease`` / ``replicas3_claims``: three processes on one bucket, rooms shared by lease
  (each room paired by its owner) or by claims (every replica pairs every room, compare-and-set
  decides) — ``MATCHMAKING_ROOM_SHARING``.

The wallet and the table server are fast fakes in a process of their own, served over real gRPC
(:mod:`bench.matchmaking_fakes`: balances, ratings, holds and ``OpenTable`` from memory, and
``TableServerAnnounced`` heartbeats on NATS), so what is measured is matchmaking. The rooms are
``ROOMS`` erren rooms (no T7 negotiation: a pairing goes from its holds to its table) with a rating
window wide enough that any two players pair, so each of three replicas owns two under leases.

The load (:mod:`bench.matchmaking_load`, ``--workers`` processes of its own) offers pairs of players
at stepped rates (``--rates`` pairings a second, ``--seconds`` each, arrivals drawn uniformly at
random to the step's count): both players of a pair enqueue at the same instant in the same room,
each on the next replica (round robin by channel), with a session token minted with the stack's
``TOKEN_SECRET``. Per player: ``Enqueue`` sent → ``Matched`` and → ``TableReady``. A warm-up at a low
rate precedes each configuration's steps. Per step, each process's CPU (from /proc) per pairing, and
the load generator's own share of a core and how late it sent (if it saturates, the step says so:
its figures are then the load generator's, not matchmaking's).

Configurations alternate within a run (memory, replicas1, lease, claims), ``--runs`` runs; each line
is the median over the runs, ``ratio_p99_to_memory`` the median of each run's ratio to its own
reference (the machine is noisy; the ratio is what holds). Goals (issue 28, 3 replicas at 200
pairings/s): p99 enqueue→matched ≤ 50 ms and ≤ 1.5× the reference's.

A player with no table after ``PLAYER_SECONDS`` gives up (``unseated``; its latencies count as that
long, so an overloaded step's percentiles are lower bounds). A step whose players gave up, or that
paired under ``OVERLOADED`` of its offered rate, is overloaded: the configuration's higher rates are
not run in that run (they would take longer to say the same). Between steps the bench waits for the
queues to empty. Exits 1 if a player's stream ended any other way (expired, an error): a defect.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.common import BenchTls, cpu_seconds
from bench.matchmaking_load import PLAYER_SECONDS, StepResult
from bench.stack_probes import BenchViolation, percentile, scrape_gauge
from duelmahjong.platform import eventloop
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.embedded import EmbeddedNats, free_port
from duelmahjong.platform.grpc_server import wait_until_serving
from duelmahjong.platform.stack import _die_with_parent

IN_ALL = True
ROOT = Path(__file__).resolve().parents[1]
ROOMS = [
    {
        "room_id": f"erren-bench-{number}",
        "profile": "erren",
        "fan_rate": 1,
        "fee": 5,
        "minimum_balance": 100,
        "carry_min": 100,
        "carry_max": 1000,
        "rating_window": 100_000.0,  # any two players pair
    }
    for number in range(6)
]
REPLICA_NAMES = ("mm-a", "mm-b", "mm-c")
GOAL_RATE = 200.0
GOAL_P99_MS = 50.0
GOAL_RATIO = 1.5
WARMUP_RATE, WARMUP_SECONDS = 20.0, 1.0
LOAD_SATURATED = 0.85  # a load worker busier than this share of a core bounds the figures
OVERLOADED = 0.8  # a step pairing less than this share of its offered rate is overloaded
QUIET_SECONDS = 30.0  # between steps, at most this long for the last step's queue to empty
OWNED = "duel_matchmaking_rooms_owned"
WAITING = "duel_matchmaking_queue_waiting_players"
CONFLICTS = "duel_matchmaking_cas_conflicts_total"


@dataclass(frozen=True)
class Config:
    name: str
    replicas: int
    store: str = "jetstream"
    sharing: str = "lease"


CONFIGS = {
    config.name: config
    for config in (
        Config("memory", 1, store="memory"),
        Config("replicas1", 1),
        Config("replicas3_lease", 3),
        Config("replicas3_claims", 3, sharing="claims"),
    )
}


@dataclass(frozen=True)
class Settings:
    rates: tuple[float, ...] = (25.0, 50.0, 100.0, 200.0)
    seconds: float = 10.0
    runs: int = 3
    configs: tuple[str, ...] = tuple(CONFIGS)
    workers: int = 2
    seed: int = 20261228


QUICK = Settings(rates=(10.0,), seconds=2.0, runs=1, workers=1)


@dataclass
class Step:
    """One configuration at one rate in one run."""

    config: str
    rate: float
    seconds: float
    result: StepResult
    wall: float  # the go → the last player seated
    cpu: dict[str, float] = field(default_factory=dict)  # process → CPU seconds in the window
    load_shares: list[float] = field(default_factory=list)  # each load worker's CPU / wall
    busy: float = 0.0  # CPU seconds the whole machine used in the window (/proc/stat), others' too
    conflicts: float | None = 0.0  # compare-and-set writes lost, over the replicas (None: unread)
    reference_p99: float = 0.0  # ms, the same run's memory step at this rate (0: none)

    @property
    def pairings(self) -> float:
        return self.result.seated / 2

    @property
    def pairings_per_second(self) -> float:
        return self.pairings / max(self.seconds, self.result.span)

    @property
    def matched_p99(self) -> float:
        return _ms(self.result.matched, 0.99)

    @property
    def saturated(self) -> bool:
        return max(self.load_shares, default=0.0) > LOAD_SATURATED

    @property
    def overloaded(self) -> bool:
        """Players gave up, or the pairings fell well behind the offered rate."""
        return bool(self.result.unseated) or self.pairings_per_second < OVERLOADED * self.rate

    def figures(self) -> dict[str, float]:
        """The numbers the lines print, by name (medians over runs are taken figure by figure)."""
        result = self.result
        pairings = max(self.pairings, 1.0)
        ours = sum(self.cpu.values())
        figures = {
            "matched_p50": _ms(result.matched, 0.5),
            "matched_p99": self.matched_p99,
            "ready_p50": _ms(result.ready, 0.5),
            "ready_p99": _ms(result.ready, 0.99),
            "pairings": self.pairings_per_second,
            **{f"cpu.{name}": seconds / pairings * 1e3 for name, seconds in self.cpu.items()},
            "updates": sum(result.updates.values()) / max(result.sent, 1),
            "rematched": result.rematched / max(result.sent, 1) * 100,
            "unseated": result.unseated,
            "load": max(self.load_shares, default=0.0) * 100,
            "late_p99": _ms(result.late, 0.99),
            "ours": ours / self.wall * 100 if self.wall else 0.0,
            "others": max(0.0, self.busy - ours) / self.wall * 100 if self.wall else 0.0,
        }
        if self.conflicts is not None:
            figures["conflicts"] = self.conflicts / pairings
        if self.reference_p99:
            figures["ratio"] = self.matched_p99 / self.reference_p99
        return figures

    def progress(self, run: int) -> str:
        """The step's own line (the lines at the end are medians over the runs)."""
        figures = self.figures()
        result = self.result
        conflicts = "?" if self.conflicts is None else f"{self.conflicts:.0f}"
        return (
            f"[matchmaking] run {run + 1} {self.config} rate={self.rate:g}/s "
            f"matched p50={figures['matched_p50']:.1f} p99={figures['matched_p99']:.1f} "
            f"ready p99={figures['ready_p99']:.1f} ms pairings={figures['pairings']:.1f}/s "
            f"players={result.sent} seated={result.seated} unseated={result.unseated} "
            f"failed={result.failed} conflicts={conflicts} rematched={result.rematched} "
            f"updates={figures['updates']:.1f}/player load={figures['load']:.0f}% "
            f"late_p99={figures['late_p99']:.1f}ms cpu ours={figures['ours']:.0f}% "
            f"others={figures['others']:.0f}%"
            + (f" first error: {result.first_error}" if result.first_error else "")
        )


def _ms(samples: Sequence[float], fraction: float) -> float:
    return percentile(samples, fraction) * 1e3


def _counter(metrics_url: str, name: str) -> float | None:
    """A counter's total over its labels at a service's /metrics: 0 while it has none (nothing
    counted yet), None if the page cannot be read (a replica that busy answers late: it gets time)."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=30) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)


def machine_busy() -> float:
    """CPU seconds every process of the machine has used since boot (/proc/stat; 0 without it): the
    bench's own and whatever else runs here."""
    try:
        fields = [int(field) for field in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def line(config: str, rate: float, figures: dict[str, float]) -> str:
    """``bench matchmaking.<config> rate=…`` from the (median) figures of one configuration and rate."""
    cpu = " ".join(
        f"{name.removeprefix('cpu.')}={value:.2f}"
        for name, value in figures.items()
        if name.startswith("cpu.")
    )
    text = (
        f"bench matchmaking.{config} rate={rate:g}/s matched_p50={figures['matched_p50']:.1f}ms "
        f"matched_p99={figures['matched_p99']:.1f}ms ready_p50={figures['ready_p50']:.1f}ms "
        f"ready_p99={figures['ready_p99']:.1f}ms pairings={figures['pairings']:.1f}/s "
        f"cpu_per_pairing {cpu} ms updates={figures['updates']:.1f}/player"
    )
    if config != "memory" and "conflicts" in figures:
        text += f" cas_conflicts={figures['conflicts']:.2f}/pairing"
    if figures["rematched"]:
        text += f" rematched={figures['rematched']:.1f}%"
    if figures["unseated"]:
        text += f" unseated={figures['unseated']:.0f}"
    if "ratio" in figures:
        text += f" ratio_p99_to_memory={figures['ratio']:.2f}"
    return text + f" others_cpu={figures['others']:.0f}%"


def medians(steps: Sequence[Step]) -> dict[str, float]:
    """Each figure's median over ``steps`` (the runs of one configuration and rate)."""
    figures = [step.figures() for step in steps]
    names = dict.fromkeys(name for one in figures for name in one)  # in the order they are printed
    return {name: statistics.median(one[name] for one in figures if name in one) for name in names}


# --- processes -------------------------------------------------------------------------------------------
def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


def _stop(processes: Sequence[subprocess.Popen[bytes]], within: float = 15.0) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + within
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@dataclass
class Replica:
    name: str
    address: str
    metrics: str
    process: subprocess.Popen[bytes]
    log: Path


class LoadWorkers:
    """The load generator's processes, driven over their stdin and stdout (one JSON object a line)."""

    def __init__(self, processes: list[asyncio.subprocess.Process]) -> None:
        self.processes = processes

    @classmethod
    async def start(cls, count: int, log: Path, ca_file: str) -> LoadWorkers:
        processes = []
        with log.open("ab") as errors:
            for _ in range(count):
                processes.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "bench.matchmaking_load",
                        cwd=ROOT,
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                        stderr=errors,
                        limit=64 * 1024 * 1024,  # a step's samples come back as one line
                        start_new_session=True,
                        env={**os.environ, "BENCH_CA_FILE": ca_file},
                    )
                )
        return cls(processes)

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    async def ask(self, commands: Sequence[dict[str, Any]], within: float) -> list[dict[str, Any]]:
        """Send each worker its command, then read every answer (bounded)."""
        for process, command in zip(self.processes, commands, strict=True):
            assert process.stdin is not None
            process.stdin.write(json.dumps(command).encode() + b"\n")
            await process.stdin.drain()

        async def answer(process: asyncio.subprocess.Process) -> dict[str, Any]:
            assert process.stdout is not None
            text = await process.stdout.readline()
            if not text:
                raise BenchViolation(f"a load worker (pid {process.pid}) exited; see load.log")
            return dict(json.loads(text))

        return list(await asyncio.wait_for(asyncio.gather(*map(answer, self.processes)), timeout=within))

    async def everyone(self, command: dict[str, Any], within: float = 60.0) -> list[dict[str, Any]]:
        return await self.ask([command] * len(self.processes), within)

    async def close(self) -> None:
        for process in self.processes:
            if process.returncode is None and process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.write(b'{"cmd": "quit"}\n')
                    process.stdin.close()
        for process in self.processes:
            try:
                await asyncio.wait_for(process.wait(), timeout=10)
            except TimeoutError:
                process.kill()
                await process.wait()


class Bench:
    """One run's shared parts: NATS, the fakes, the load workers; a fleet of replicas per configuration."""

    def __init__(self, data_dir: Path, settings: Settings, nats_server: EmbeddedNats) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.nats = nats_server
        self.secret = secrets.token_hex(32)
        self.tls = BenchTls.issue(data_dir / "tls")  # every server here serves it, every client trusts it
        self.fakes_address = ""
        self.fakes: subprocess.Popen[bytes] | None = None
        self.workers: LoadWorkers | None = None
        self.logs = data_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.steps_run = 0

    async def start(self) -> None:
        port = free_port()
        self.fakes_address = f"127.0.0.1:{port}"
        self.fakes = _spawn(
            ["-m", "bench.matchmaking_fakes", str(port), self.nats.url],
            {**os.environ, **self.tls.server_env()},
            self.logs / "fakes.log",
        )
        self.workers = await LoadWorkers.start(
            self.settings.workers, self.logs / "load.log", str(self.tls.client.ca_file)
        )

    def stop(self) -> None:
        if self.fakes is not None:
            _stop([self.fakes])

    def _env(
        self, config: Config, replica: str, bucket: str, grpc_port: int, metrics_port: int
    ) -> dict[str, str]:
        environ = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}
        return {
            **environ,
            "NATS_URL": self.nats.url,
            "TOKEN_SECRET": self.secret,
            "GRPC_HOST": "127.0.0.1",
            "GRPC_PORT": str(grpc_port),
            "METRICS_PORT": str(metrics_port),
            "WALLET_ADDRESS": self.fakes_address,
            "MATCHMAKING_ROOMS": json.dumps(ROOMS),
            "MATCHMAKING_STORE": config.store,
            "MATCHMAKING_BUCKET": bucket,
            "MATCHMAKING_REPLICA_ID": replica,
            "MATCHMAKING_ROOM_SHARING": config.sharing,
            "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING"),
            **self.tls.server_env(),
        }

    @contextlib.asynccontextmanager
    async def fleet(self, config: Config, run: int) -> AsyncIterator[list[Replica]]:
        """The configuration's replicas, serving, their rooms shared out, warmed up; stopped after,
        their bucket deleted."""
        bucket = f"BENCH_MM_{config.name.upper()}_{run}_{secrets.token_hex(3)}"
        names = ("mm",) if config.store == "memory" else REPLICA_NAMES[: config.replicas]
        replicas = []
        try:
            for name in names:
                grpc_port, metrics_port = free_port(), free_port()
                log = self.logs / f"{config.name}-{run}-{name}.log"
                env = self._env(config, name, bucket, grpc_port, metrics_port)
                process = _spawn(["-m", "services.matchmaking"], env, log)
                address = f"127.0.0.1:{grpc_port}"
                replicas.append(
                    Replica(name, address, f"http://127.0.0.1:{metrics_port}/metrics", process, log)
                )
            for replica in replicas:
                try:
                    await wait_until_serving(replica.address, self.tls.client, within_seconds=60)
                except TimeoutError:
                    tail = replica.log.read_text(errors="replace")[-2000:]
                    raise BenchViolation(f"{replica.name} did not serve; its log ends:\n{tail}") from None
            await self._shared_out(config, replicas)
            assert self.workers is not None
            await self.workers.everyone({"cmd": "connect", "addresses": [r.address for r in replicas]})
            warm = await self._step(config, replicas, WARMUP_RATE, WARMUP_SECONDS, f"w{run}{config.name[:2]}")
            if warm.result.seated != warm.result.sent:
                raise BenchViolation(
                    f"{config.name}: the warm-up seated {warm.result.seated} of {warm.result.sent} "
                    f"players ({warm.result.first_error or 'no error said'})"
                )
            yield replicas
        finally:
            _stop([replica.process for replica in replicas])
            if config.store != "memory":
                await self._delete_bucket(bucket)

    async def _shared_out(self, config: Config, replicas: list[Replica], within: float = 60.0) -> None:
        """Wait until every replica owns its share of the rooms (all of them under claims)."""
        rooms = len(ROOMS)
        share = rooms if config.sharing == "claims" else -(-rooms // len(replicas))
        deadline = time.monotonic() + within
        while True:
            owned = [await asyncio.to_thread(scrape_gauge, replica.metrics, OWNED) for replica in replicas]
            if all(count == share for count in owned) and (config.sharing == "claims" or sum(owned) == rooms):  # type: ignore[arg-type]
                return
            if time.monotonic() > deadline:
                raise BenchViolation(
                    f"{config.name}: the rooms were not shared out within {within:.0f}s: {owned}"
                )
            await asyncio.sleep(0.25)

    async def _delete_bucket(self, bucket: str) -> None:
        bus = await Bus.connect(self.nats.url, name="bench-matchmaking")
        try:
            with contextlib.suppress(Exception):
                await bus.js.delete_key_value(bucket)
        finally:
            await bus.close()

    async def _step(
        self, config: Config, replicas: list[Replica], rate: float, seconds: float, tag: str
    ) -> Step:
        workers = self.workers
        assert workers is not None and self.fakes is not None
        count = len(workers.processes)
        self.steps_run += 1
        rooms = [str(room["room_id"]) for room in ROOMS]
        await workers.ask(
            [
                {
                    "cmd": "prepare",
                    "tag": tag,
                    "rate": rate / count,
                    "seconds": seconds,
                    "seed": self.settings.seed + 7919 * self.steps_run + number,
                    "rooms": rooms,
                    "worker": number,
                    "workers": count,
                    "secret": self.secret,
                }
                for number in range(count)
            ],
            within=120.0,
        )
        pids = {replica.name: replica.process.pid for replica in replicas}
        pids |= {"nats": self.nats.pid or 0, "fakes": self.fakes.pid}
        pids |= {f"load{number + 1}": pid for number, pid in enumerate(workers.pids)}
        await self._quiet(replicas)
        conflicts_before = await self._conflicts(config, replicas)
        cpu_before, busy_before = {name: cpu_seconds(pid) for name, pid in pids.items()}, machine_busy()
        started = time.perf_counter()
        answers = await workers.everyone({"cmd": "go"}, within=seconds + PLAYER_SECONDS + 30)
        wall = time.perf_counter() - started
        cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        busy = machine_busy() - busy_before
        conflicts_after = await self._conflicts(config, replicas)
        conflicts = (
            None if None in (conflicts_before, conflicts_after) else conflicts_after - conflicts_before
        )  # type: ignore[operator]
        results = [StepResult.of(answer) for answer in answers]
        load = sum(cpu.pop(f"load{number + 1}") for number in range(count))
        return Step(
            config.name,
            rate,
            seconds,
            StepResult.merged(results),
            wall,
            cpu={**cpu, "load": load},
            load_shares=[result.cpu / wall for result in results],
            busy=busy,
            conflicts=conflicts,
        )

    async def _quiet(self, replicas: list[Replica]) -> None:
        """Wait (bounded) until no player of an earlier step waits in a queue: those who gave up are
        cancelled after the stream grace, and must not pair with this step's players."""
        deadline = time.monotonic() + QUIET_SECONDS
        while time.monotonic() < deadline:
            waiting = await asyncio.to_thread(scrape_gauge, replicas[0].metrics, WAITING)
            if not waiting:
                return
            await asyncio.sleep(0.25)

    async def _conflicts(self, config: Config, replicas: list[Replica]) -> float | None:
        """Compare-and-set writes lost so far, over the replicas (None: a replica's metrics unread)."""
        if config.store == "memory":
            return 0.0
        counts = [await asyncio.to_thread(_counter, replica.metrics, CONFLICTS) for replica in replicas]
        return None if None in counts else sum(count or 0.0 for count in counts)

    async def configuration(self, config: Config, run: int) -> list[Step]:
        steps = []
        async with self.fleet(config, run) as replicas:
            for number, rate in enumerate(self.settings.rates):
                step = await self._step(
                    config, replicas, rate, self.settings.seconds, f"{run}{config.name[:2]}{number}"
                )
                steps.append(step)
                print(step.progress(run), flush=True)
                if step.overloaded:  # a higher rate would only take longer to say the same
                    print(
                        f"[matchmaking] run {run + 1} {config.name} overloaded at {rate:g}/s "
                        f"({step.pairings_per_second:.1f} pairings/s): higher rates not run",
                        flush=True,
                    )
                    break
        return steps


@dataclass
class Outcome:
    steps: list[tuple[int, Step]]  # (run, step)

    def of(self, config: str, rate: float | None = None) -> list[Step]:
        return [s for _run, s in self.steps if s.config == config and rate in (None, s.rate)]

    def lines(self, settings: Settings) -> list[str]:
        out = []
        for config in settings.configs:
            for rate in settings.rates:
                steps = self.of(config, rate)
                if steps:
                    out.append(line(config, rate, medians(steps)))
                    if len(steps) < settings.runs:
                        out[-1] += f" (runs={len(steps)}: overloaded below {rate:g}/s in the others)"
                elif self.overloaded_at(config):
                    out.append(
                        f"bench matchmaking.{config} rate={rate:g}/s not run: overloaded at "
                        f"{self.overloaded_at(config)}"
                    )
        for rate in settings.rates:
            steps = [step for _run, step in self.steps if step.rate == rate]
            if not steps:
                continue
            figures = medians(steps)
            saturated = [
                f"{step.config} run {run + 1}"
                for run, step in self.steps
                if step.rate == rate and step.saturated
            ]
            out.append(
                f"bench matchmaking.load rate={rate:g}/s workers={settings.workers} "
                f"busiest_worker={figures['load']:.0f}% of a core late_p99={figures['late_p99']:.1f}ms "
                f"cpu ours={figures['ours']:.0f}% others={figures['others']:.0f}% of {os.cpu_count()} cores"
                + (
                    f" SATURATED in {', '.join(saturated)}: those figures are the load generator's"
                    if saturated
                    else ""
                )
            )
        for config in ("replicas3_lease", "replicas3_claims"):
            if config in settings.configs and GOAL_RATE in settings.rates:
                out.append(self.goal(config))
        return out

    def overloaded_at(self, config: str) -> str:
        """The rates at which ``config`` was overloaded and the pairings/s it made there, over the runs
        ("" if never): ``100/s (63.6, 50.3 pairings/s)``."""
        made: dict[float, list[str]] = {}
        for step in self.of(config):
            if step.overloaded:
                made.setdefault(step.rate, []).append(f"{step.pairings_per_second:.1f}")
        return ", ".join(f"{rate:g}/s ({', '.join(counts)} pairings/s)" for rate, counts in made.items())

    def goal(self, config: str) -> str:
        head = f"bench matchmaking.goal {config} rate={GOAL_RATE:g}/s"
        steps = self.of(config, GOAL_RATE)
        if not steps or any(step.overloaded for step in steps):
            return f"{head}: NOT met, overloaded at {self.overloaded_at(config)}"
        figures = medians(steps)
        ratio = f"{figures['ratio']:.2f}" if "ratio" in figures else "n/a (no memory step at this rate)"
        met = figures["matched_p99"] <= GOAL_P99_MS and figures.get("ratio", math.inf) <= GOAL_RATIO
        return (
            f"{head} matched_p99={figures['matched_p99']:.1f}ms (goal <= {GOAL_P99_MS:g}) "
            f"ratio_p99_to_memory={ratio} (goal <= {GOAL_RATIO:g}): " + ("met" if met else "NOT met")
        )

    def failures(self) -> list[str]:
        """Players whose stream ended without their table (expired, an error): a defect, not a load
        (players who gave up waiting are counted as unseated in the lines)."""
        return [
            f"{step.config} run {run + 1} rate={step.rate:g}/s: {step.result.failed} of {step.result.sent} "
            f"players' streams ended without their table (first: {step.result.first_error})"
            for run, step in self.steps
            if step.result.failed
        ]


async def measure(data_dir: Path, settings: Settings) -> Outcome:
    outcome = Outcome([])
    with EmbeddedNats(data_dir / "nats") as nats_server:
        bench = Bench(data_dir, settings, nats_server)
        try:
            await bench.start()
            load = os.getloadavg()
            print(f"[matchmaking] load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", flush=True)
            for run in range(settings.runs):
                for name in settings.configs:
                    steps = await bench.configuration(CONFIGS[name], run)
                    reference = {
                        s.rate: s.matched_p99
                        for _r, s in outcome.steps
                        if _r == run and s.config == "memory" and not s.overloaded
                    }
                    for step in steps:
                        if step.config != "memory":
                            step.reference_p99 = reference.get(step.rate, 0.0)
                        outcome.steps.append((run, step))
        finally:
            if bench.workers is not None:
                await bench.workers.close()
            bench.stop()
    return outcome


def _rates(text: str) -> tuple[float, ...]:
    return tuple(float(rate) for rate in text.split(",") if rate)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="duel bench matchmaking", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rates", type=_rates, default=Settings.rates, help="pairings/s, one step each (25,50,100,200)"
    )
    parser.add_argument("--seconds", type=float, default=Settings.seconds, help="length of each step (10)")
    parser.add_argument("--runs", type=int, default=Settings.runs, help="runs of every configuration (3)")
    parser.add_argument(
        "--configs",
        type=lambda text: tuple(name for name in text.split(",") if name),
        default=Settings.configs,
        help=f"configurations, in order ({','.join(CONFIGS)})",
    )
    parser.add_argument("--workers", type=int, default=Settings.workers, help="load generator processes (2)")
    parser.add_argument(
        "--quick", action="store_true", help="one 2 s step at 10 pairings/s, one run (a wiring check)"
    )
    args = parser.parse_args(list(argv))
    settings = Settings(args.rates, args.seconds, args.runs, args.configs, args.workers)
    if args.quick:
        settings = dataclasses.replace(QUICK, configs=args.configs)
    unknown = set(settings.configs) - set(CONFIGS)
    if (
        unknown
        or not settings.rates
        or min(settings.rates) <= 0
        or settings.seconds <= 0
        or settings.runs < 1
    ):
        parser.error(f"rates, --seconds and --runs must be positive; configurations are {', '.join(CONFIGS)}")
    with tempfile.TemporaryDirectory(prefix="matchmaking-bench-") as tmp:
        try:
            outcome = eventloop.run(measure(Path(tmp), settings))
        except BenchViolation as err:
            print(f"matchmaking FAILED: {err}", file=sys.stderr)
            return 1
    for text in outcome.lines(settings):
        print(text, flush=True)
    failures = outcome.failures()
    for failure in failures:
        print(f"matchmaking FAIL {failure}", flush=True)
    print(f"matchmaking {'FAILED' if failures else 'OK'}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
