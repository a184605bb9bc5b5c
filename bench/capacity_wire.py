"""The reference of ``duel bench capacity``: table.wire (bench/table.py, the wire floor of any table
server of this protocol in Python here) at the same human pace as the real server's seats.

Per action the wire server reads the action, appends one write-ahead record to JetStream through the
platform's bus and waits for its ack, then sends one message of a typical size to each of the table's
two seats; nothing of the game. Its seats take turns like players and think as the real seats do, so
each action is alone in its loop turn, as it is on the real server at this pace: what the floor costs
there, not what a saturated server amortises. Its seats run in the bench's own process (each with its
own channel, as a player's own connection); at most ``MAX_TABLES`` tables, which that process plays at
full pace.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import grpc.aio

from bench.common import BenchTls, cpu_seconds
from bench.stack_probes import percentile
from bench.table import ROOT, WIRE_METHOD, free_port
from duelmahjong.platform.tls import ClientTls

MAX_TABLES = 1000
ACTION = b"a" * 64


@dataclass
class _Tally:
    measuring: bool = False
    sent: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, action sent -> its answer


@dataclass(frozen=True)
class WireFloor:
    tables: int
    seconds: float
    sent: int
    server_cpu: float  # seconds in the window
    latencies: list[float]

    @property
    def cpu_per_action_ms(self) -> float:
        return self.server_cpu / self.sent * 1e3 if self.sent else 0.0

    def line(self) -> str:
        return (
            f"bench capacity.wire N={self.tables} actions/s={self.sent / self.seconds:.1f} "
            f"p50={percentile(self.latencies, 0.5) * 1e3:.1f} "
            f"p99={percentile(self.latencies, 0.99) * 1e3:.1f} "
            f"server_cpu={self.server_cpu / self.seconds:.1%} cpu/action={self.cpu_per_action_ms:.3f}ms "
            f"(the floor at this pace: one record acked, one message to each seat)"
        )


def reference_tables(steps: list[int]) -> int:
    """The step the floor is measured at: the largest within ``MAX_TABLES``, else the smallest."""
    within = [tables for tables in steps if tables <= MAX_TABLES]
    return max(within) if within else min(steps)


async def _seat(
    address: str, table: int, seat: int, think: tuple[float, float], tally: _Tally, tls: ClientTls
) -> None:
    """Seat 0 acts first; each seat acts once the opponent's action has reached it, after thinking."""
    async with tls.channel(address) as channel:
        call = channel.stream_stream(WIRE_METHOD)()
        await call.write(b"%d" % table + bytes([seat]))
        my_turn = seat == 0
        while True:
            if my_turn:
                await asyncio.sleep(random.uniform(*think))
                started = time.perf_counter()
                await call.write(ACTION)
                if await call.read() is grpc.aio.EOF:
                    return
                if tally.measuring:
                    tally.sent += 1
                    tally.latencies.append(time.perf_counter() - started)
                my_turn = False
            else:
                if await call.read() is grpc.aio.EOF:
                    return
                my_turn = True


def _all_seats_playing(seats: list[asyncio.Task[None]]) -> None:
    """A floor measured on fewer tables than it names would be no floor: a seat that ended is an error."""
    ended = [seat for seat in seats if seat.done()]
    if ended:
        first = ended[0].exception() if not ended[0].cancelled() else "cancelled"
        raise RuntimeError(
            f"{len(ended)} of {len(seats)} wire seats ended before the window closed, first: {first}"
        )


async def measure(
    nats_url: str,
    tables: int,
    think: tuple[float, float],
    warm_seconds: float,
    seconds: float,
    tls: BenchTls,
) -> WireFloor:
    """The wire server's CPU per action and its latency on ``tables`` tables of thinking seats, over
    TLS as the table server's."""
    tables = min(tables, MAX_TABLES)
    port = free_port()
    command = [sys.executable, "-m", "bench.table", "--wire-server", str(port), nats_url]
    server = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **tls.server_env()})  # noqa: ASYNC220
    tally = _Tally()
    tasks: list[asyncio.Task[None]] = []
    try:
        address = f"127.0.0.1:{port}"
        async with tls.client.channel(address) as channel:
            await asyncio.wait_for(channel.channel_ready(), timeout=60)
        tasks = [
            asyncio.create_task(_seat(address, number, seat, think, tally, tls.client))
            for number in range(tables)
            for seat in (0, 1)
        ]
        await asyncio.sleep(warm_seconds + think[1])  # every seat connected and into its rhythm
        _all_seats_playing(tasks)
        cpu_before, started = cpu_seconds(server.pid), time.perf_counter()
        tally.measuring = True
        await asyncio.sleep(seconds)
        tally.measuring = False
        elapsed, cpu = time.perf_counter() - started, cpu_seconds(server.pid) - cpu_before
        if server.poll() is not None:
            raise RuntimeError(f"the wire server exited with {server.returncode} during the measurement")
        _all_seats_playing(tasks)
        return WireFloor(tables, elapsed, tally.sent, cpu, tally.latencies)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
