"""``duel bench table``: actions per second and action→event latency through a real table server,
against a bare grpc.aio bidirectional ping-pong on as many streams, measured in the same run.

* ours (``table.actions``): one table-server process (``python -m services.table`` on an embedded
  NATS, write-ahead on: every record acked by JetStream before a seat sees it) hosting 64 tables; this
  process plays both seats of each over loopback (128 Play streams, ``accept_batches`` set: a step's
  events and view arrive as one PlayBatch). A seat answers each decision at
  once with the win when it has one, else the decision's default action, and continues between hands.
  Latency: the action sent → the first event it caused received (continues between hands, which
  wait for the other seat by design, are neither timed nor counted).
* ref (``grpc_bidi``): a bare grpc.aio server in another process echoing bytes on 64 bidirectional
  streams, each stream one ping in flight.
* wire (``table.wire``): the floor of any table server of this protocol in Python here — a grpc.aio
  server in another process that does only the wire work of an action and nothing of the game: read
  the action, append one write-ahead record to JetStream through the platform's bus and wait for its
  ack, then send one message of a typical size to each of the table's two seats. 64 tables, 128
  streams, the seats taking turns like players. What it reaches is the most ``table.actions`` could
  reach with every game cost (engine, views, legal actions, timers) at zero.

* plain (``table.tls``): a second table server, the same in every way but serving plaintext
  (``GRPC_PLAINTEXT=true``), its 64 tables played the same way: what TLS costs, measured beside it.
  ours, ref and wire all run over TLS, as every connection of the product does.

Runs alternate (ref, ours, plain, wire, ref, ours, plain, wire…), each ``--seconds`` long; rates are
medians over the runs, latency percentiles are over every sample of each side. ``bench table.cpu`` says
how much CPU each side's server process and this process used per round trip in that side's windows
(from /proc); ``bench table.tls`` sets TLS on (ours) against TLS off (plain).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import grpc
import grpc.aio

from bench.common import (
    MIN_RUNS,
    PLAINTEXT,
    PLAINTEXT_ENV,
    BenchTls,
    Figure,
    add_port,
    cpu_seconds,
    open_table_request,
)
from duelmahjong.platform import auth, eventloop
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.embedded import EmbeddedNats
from duelmahjong.platform.grpc_server import PENDING_CALL_OPTIONS, wait_until_serving
from duelmahjong.platform.streams import StreamSpec
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import play_pb2, rules_pb2, table_pb2, table_pb2_grpc

TABLES = 64
ROOT = Path(__file__).resolve().parents[1]
ECHO_METHOD = "/bench.Echo/PingPong"
WIRE_METHOD = "/bench.Wire/Play"
WIRE_STREAM = StreamSpec("BENCH_WIRE", ("bench.wire.>",))
# Sizes of the real thing (measured on table.actions): ~300 bytes per PlayResponse a seat receives,
# a write-ahead record of about 200 bytes.
WIRE_MESSAGE = b"m" * 300
WIRE_RECORD = b"r" * 200
SIDES = ("ours", "plain", "ref", "wire")


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Window:
    """Which side is being measured now; samples count only while their side's window is open.
    Also adds up the CPU time each side's server process (``server_pids``) and this one use in that
    side's windows, so a report can tell which side of the wire a figure is bound by."""

    def __init__(self, server_pids: dict[str, int] | None = None) -> None:
        self.side = ""
        self.open = {side: asyncio.Event() for side in SIDES}
        self.latencies: dict[str, list[float]] = {side: [] for side in SIDES}
        self.count = 0
        self.server_pids = server_pids or {}
        self.cpu = {side: [0.0, 0.0, 0] for side in SIDES}  # server s, client s, round trips

    def record(self, side: str, seconds: float) -> None:
        if self.side == side:
            self.latencies[side].append(seconds)
            self.count += 1

    async def measure(self, side: str, seconds: float) -> float:
        self.side, self.count = side, 0
        self.open[side].set()
        started = time.perf_counter()
        server = self.server_pids.get(side, 0)
        server_before, client_before = cpu_seconds(server), time.process_time()
        await asyncio.sleep(seconds)
        done = self.count
        elapsed = time.perf_counter() - started
        used = self.cpu[side]
        used[0] += cpu_seconds(server) - server_before
        used[1] += time.process_time() - client_before
        used[2] += done
        self.open[side].clear()
        self.side = ""
        await asyncio.sleep(0.1)  # let the in-flight round trips settle before the other side runs
        return done / elapsed


# --- ours -----------------------------------------------------------------------------------------------
def choose(legal: play_pb2.LegalActions) -> play_pb2.Action:
    kinds = {a.kind for a in legal.actions}
    if play_pb2.ACTION_KIND_CONTINUE in kinds:
        return play_pb2.Action(continue_playing=play_pb2.ContinueAction())
    if play_pb2.ACTION_KIND_WIN in kinds:
        return play_pb2.Action(win=play_pb2.WinAction())
    return legal.default_action


def _unpacked(response: table_pb2.PlayResponse) -> Sequence[table_pb2.PlayResponse]:
    return response.batch.responses if response.HasField("batch") else (response,)


async def _seat(address: str, token: str, ticket: str, window: Window, tls: ClientTls, side: str) -> None:
    async with tls.channel(address) as channel:
        call = table_pb2_grpc.TableServiceStub(channel).Play(metadata=auth.bearer_metadata(token))
        await call.write(table_pb2.PlayRequest(table_ticket=ticket, accept_batches=True))
        last_seen, sent_at, sent_after = 0, 0.0, -1
        while True:
            received = await call.read()
            if received is grpc.aio.EOF:
                return
            for response in _unpacked(received):
                if response.HasField("event"):
                    last_seen = max(last_seen, response.event.sequence)
                    if sent_after >= 0 and response.event.sequence > sent_after:
                        window.record(side, time.perf_counter() - sent_at)
                        sent_after = -1
                elif response.HasField("rejected"):
                    sent_after = -1
                elif response.view.legal_actions.actions and sent_after < 0:
                    await window.open[side].wait()
                    action = choose(response.view.legal_actions)
                    # A continue waits for the other seat's by design (the next hand needs both): it is
                    # no action→event latency of the server, so it is sent but not timed.
                    timed = action.WhichOneof("kind") != "continue_playing"
                    sent_at, sent_after = time.perf_counter(), last_seen if timed else -1
                    await call.write(table_pb2.PlayRequest(action=action, last_seen_sequence=last_seen))


async def _open_tables(address: str, secret: str, tls: ClientTls, prefix: str) -> list[tuple[str, str]]:
    service = auth.issue_token(secret, player_id="bench-matchmaking", role=auth.Role.SERVICE)
    rules = rules_pb2.RoomRules(
        profile=rules_pb2.PROFILE_DUEL, fan_rate=1, decision_millis=600_000, time_bank_millis=0
    )
    seats: list[tuple[str, str]] = []
    async with tls.channel(address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        for number in range(TABLES):
            name = f"{prefix}-{number}"
            players = (f"{name}-{rules_pb2.SEAT_FIRST}", f"{name}-{rules_pb2.SEAT_SECOND}")
            opened = await stub.OpenTable(
                open_table_request(name, f"p-{name}", "bench", rules, players, 10**9),
                metadata=auth.bearer_metadata(service),
            )
            for ticket in opened.tickets:
                token = auth.issue_token(secret, player_id=ticket.player_id)
                seats.append((token, ticket.table_ticket))
    return seats


# --- ref: bare bidi ping-pong ---------------------------------------------------------------------------
async def _echo_server(port: int) -> None:
    async def ping_pong(
        requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        async for payload in requests:
            yield payload

    await _serve_bare(port, "bench.Echo", "PingPong", ping_pong)


async def _serve_bare(
    port: int, service: str, method: str, handler: Callable[..., AsyncIterator[bytes]]
) -> None:
    """A grpc.aio server of one bytes-in, bytes-out bidirectional method: no interceptors, no health;
    a burst of new calls queued as the services' servers queue it."""
    server = grpc.aio.server(options=PENDING_CALL_OPTIONS)
    handlers = {method: grpc.stream_stream_rpc_method_handler(handler)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    add_port(server, f"127.0.0.1:{port}", os.environ)  # over TLS, as the table servers it is compared with
    await server.start()
    await server.wait_for_termination()


async def _timed_round_trip(
    call: grpc.aio.StreamStreamCall, payload: bytes, window: Window, side: str
) -> bool:
    """Once ``side``'s window is open: write, read the answer, record the time; False at the stream's end."""
    await window.open[side].wait()
    started = time.perf_counter()
    await call.write(payload)
    if await call.read() is grpc.aio.EOF:
        return False
    window.record(side, time.perf_counter() - started)
    return True


async def _pinger(address: str, window: Window, tls: ClientTls) -> None:
    async with tls.channel(address) as channel:
        call = channel.stream_stream(ECHO_METHOD)()
        while await _timed_round_trip(call, b"x" * 64, window, "ref"):
            pass


# --- wire: the floor of a table server in Python -----------------------------------------------------------
async def _wire_server(port: int, nats_url: str) -> None:
    """Per action: one write-ahead record acked by JetStream, then one message to each seat."""
    bus = await Bus.connect(nats_url, name="bench-wire")
    await bus.declare_stream(WIRE_STREAM)
    outboxes: dict[tuple[bytes, int], asyncio.Queue[bytes | None]] = {}
    appended = itertools.count()

    async def play(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        outbox: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def read() -> None:
            hello = await anext(aiter(requests))
            table, seat = hello[:-1], hello[-1]
            outboxes[table, seat] = outbox
            try:
                async for _action in requests:
                    number = next(appended)
                    await bus.publish(f"bench.wire.{table.decode()}", WIRE_RECORD, msg_id=f"w{number}")
                    outbox.put_nowait(WIRE_MESSAGE)
                    opponent = outboxes.get((table, 1 - seat))
                    if opponent is not None:
                        opponent.put_nowait(WIRE_MESSAGE)
            finally:
                outbox.put_nowait(None)

        reader = asyncio.create_task(read())
        try:
            while (message := await outbox.get()) is not None:
                yield message
        finally:
            reader.cancel()

    await _serve_bare(port, "bench.Wire", "Play", play)


async def wire_seat(address: str, table: int, seat: int, window: Window, tls: ClientTls) -> None:
    """A seat of the wire floor: the first seat acts, waits for its own answer; the other acts once
    the opponent's action has reached it — players taking turns."""
    async with tls.channel(address) as channel:
        call = channel.stream_stream(WIRE_METHOD)()
        await call.write(b"%d" % table + bytes([seat]))
        action = b"a" * 64
        my_turn = seat == 0
        while True:
            if my_turn:
                if not await _timed_round_trip(call, action, window, "wire"):
                    return
                my_turn = False
            else:
                if await call.read() is grpc.aio.EOF:
                    return
                my_turn = True


# --- the run --------------------------------------------------------------------------------------------
async def measure(data_dir: Path, runs: int, seconds: float) -> list[str]:
    secret = secrets.token_hex(32)
    table_port, plain_port, echo_port, wire_port = free_port(), free_port(), free_port(), free_port()
    tls = BenchTls.issue(data_dir / "tls")
    with EmbeddedNats(data_dir / "nats") as nats_server:
        env = {
            **os.environ,
            "NATS_URL": nats_server.url,
            "TOKEN_SECRET": secret,
            "GRPC_HOST": "127.0.0.1",
            "GRPC_PORT": str(table_port),
            "TABLE_CAPACITY": str(TABLES),
            "SETTLEMENT_WAIT_SECONDS": "0.01",  # no scoring/wallet here: the hand end does not wait
            "DRAIN_SECONDS": "1",
            "LOG_LEVEL": "ERROR",
        }
        plain_env = {
            **env,
            **PLAINTEXT_ENV,
            "GRPC_PORT": str(plain_port),
            "SERVER_ID": "bench-plain",
            "TABLE_OWNERS_BUCKET": "BENCH_PLAIN_OWNERS",  # its own: neither server adopts the other's
        }
        env.update(tls.server_env())
        # Started once, before anything is timed: a blocking spawn is harmless here.
        table = subprocess.Popen([sys.executable, "-m", "services.table"], cwd=ROOT, env=env)  # noqa: ASYNC220
        plain = subprocess.Popen([sys.executable, "-m", "services.table"], cwd=ROOT, env=plain_env)  # noqa: ASYNC220
        bare_env = {**os.environ, **tls.server_env()}
        echo_server = [sys.executable, "-m", "bench.table", "--echo-server", str(echo_port)]
        echo = subprocess.Popen(echo_server, cwd=ROOT, env=bare_env)  # noqa: ASYNC220
        wire_server = [sys.executable, "-m", "bench.table", "--wire-server", str(wire_port), nats_server.url]
        wire = subprocess.Popen(wire_server, cwd=ROOT, env=bare_env)  # noqa: ASYNC220
        tasks: list[asyncio.Task[None]] = []
        try:
            address, plain_address = f"127.0.0.1:{table_port}", f"127.0.0.1:{plain_port}"
            await wait_until_serving(address, tls.client, within_seconds=60)
            await wait_until_serving(plain_address, PLAINTEXT, within_seconds=60)
            for port in (echo_port, wire_port):  # bare servers: no health service, just a listening port
                async with tls.client.channel(f"127.0.0.1:{port}") as channel:
                    await asyncio.wait_for(channel.channel_ready(), timeout=60)
            window = Window({"ours": table.pid, "plain": plain.pid, "ref": echo.pid, "wire": wire.pid})
            for side, at, client in (("ours", address, tls.client), ("plain", plain_address, PLAINTEXT)):
                seats = await _open_tables(at, secret, client, f"bench-{side}")
                tasks += [
                    asyncio.create_task(_seat(at, token, ticket, window, client, side))
                    for token, ticket in seats
                ]
            tasks += [
                asyncio.create_task(_pinger(f"127.0.0.1:{echo_port}", window, tls.client))
                for _ in range(TABLES)
            ]
            tasks += [
                asyncio.create_task(wire_seat(f"127.0.0.1:{wire_port}", number, seat, window, tls.client))
                for number in range(TABLES)
                for seat in (0, 1)
            ]
            for side in SIDES:  # warm-up of every side
                await window.measure(side, 0.5)
            window.latencies = {side: [] for side in SIDES}
            window.cpu = {side: [0.0, 0.0, 0] for side in SIDES}
            ours, theirs, floor, plaintext = [], [], [], []
            for _ in range(runs):
                theirs.append(await window.measure("ref", seconds))
                ours.append(await window.measure("ours", seconds))
                plaintext.append(await window.measure("plain", seconds))
                floor.append(await window.measure("wire", seconds))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for process in (table, plain, echo, wire):
                process.send_signal(signal.SIGTERM)
            for process in (table, plain, echo, wire):
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
    figure = Figure("table.actions", statistics.median(ours), "grpc_bidi", statistics.median(theirs), runs)
    wire = Figure("table.wire", statistics.median(floor), "grpc_bidi", statistics.median(theirs), runs)
    ours_p99, ref_p99 = percentile(window.latencies["ours"], 0.99), percentile(window.latencies["ref"], 0.99)
    return [
        figure.line(),
        wire.line(),
        f"bench table.wire ours/wire={figure.ours / wire.ours if wire.ours else 0.0:.2f} "
        f"(the game's share: what the table costs beyond the wire floor)",
        f"bench table.latency ours p50={percentile(window.latencies['ours'], 0.5) * 1e3:.2f}ms "
        f"p99={ours_p99 * 1e3:.2f}ms",
        f"bench table.latency ref=grpc_bidi p50={percentile(window.latencies['ref'], 0.5) * 1e3:.2f}ms "
        f"p99={ref_p99 * 1e3:.2f}ms",
        f"bench table.latency p99_ratio={ours_p99 / ref_p99 if ref_p99 else float('inf'):.2f}",
        f"bench table.cpu ours {_per_round_trip(window.cpu['ours'])}",
        f"bench table.cpu ref=grpc_bidi {_per_round_trip(window.cpu['ref'])}",
        f"bench table.latency wire p50={percentile(window.latencies['wire'], 0.5) * 1e3:.2f}ms "
        f"p99={percentile(window.latencies['wire'], 0.99) * 1e3:.2f}ms",
        f"bench table.cpu wire {_per_round_trip(window.cpu['wire'])}",
        *_tls_lines(window, statistics.median(ours), statistics.median(plaintext)),
    ]


def _tls_lines(window: Window, tls_rate: float, plain_rate: float) -> list[str]:
    """TLS on (ours) against TLS off (plain), the same table server in the same run."""
    tls_cpu, plain_cpu = _server_ms(window.cpu["ours"]), _server_ms(window.cpu["plain"])
    tls_p99, plain_p99 = (
        percentile(window.latencies["ours"], 0.99),
        percentile(window.latencies["plain"], 0.99),
    )
    return [
        f"bench table.tls actions tls={tls_rate:.0f}/s plain={plain_rate:.0f}/s "
        f"ratio={tls_rate / plain_rate if plain_rate else 0.0:.2f}",
        f"bench table.tls cpu per action (server) tls={tls_cpu:.3f}ms plain={plain_cpu:.3f}ms "
        f"ratio={tls_cpu / plain_cpu if plain_cpu else 0.0:.2f}",
        f"bench table.tls p99 tls={tls_p99 * 1e3:.2f}ms plain={plain_p99 * 1e3:.2f}ms "
        f"ratio={tls_p99 / plain_p99 if plain_p99 else 0.0:.2f}",
    ]


def _server_ms(used: list[float]) -> float:
    server, _client, count = used
    return server / max(int(count), 1) * 1e3


def _per_round_trip(used: list[float]) -> str:
    server, client, count = used
    count = max(int(count), 1)
    return f"server={server / count * 1e3:.3f}ms client={client / count * 1e3:.3f}ms per round trip"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="duel bench table", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help=f"runs of each side (>= {MIN_RUNS})")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each run")
    parser.add_argument("--echo-server", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--wire-server", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    if args.echo_server:
        eventloop.run(_echo_server(args.echo_server))
        return 0
    if args.wire_server:
        eventloop.run(_wire_server(int(args.wire_server[0]), args.wire_server[1]))
        return 0
    with tempfile.TemporaryDirectory(prefix="table-bench-") as tmp:
        for line in eventloop.run(measure(Path(tmp), max(args.runs, MIN_RUNS), args.seconds)):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
