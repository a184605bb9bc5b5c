"""``duel bench settle``: a hand's end to its settlement shown at the seats, through the real scoring
(with its replay of the table's log) and the real wallet, at an offered rate of hand ends.

The stack is the one ``make run`` starts (``platform.stack.Stack``: embedded NATS and Postgres, the
wallet, scoring and table-server processes on loopback; matchmaking is not needed and not started).
This process plays both seats of many tables over their ``Play`` streams, as matchmaking would have
set them up: each player a wallet guest (``GuestLogin``), the pair's carry held (``PlaceHold``), the
table opened (``OpenTable``). Every seat plays at once (the project's baseline bot; continue
between hands) except that a seat that can win **holds its win**: its table is *armed*, one action
from the hand's end. The offered load is then exact: in a step's window the bench releases armed
wins at Poisson times of the step's rate (``--hands-per-second``, or ``--steps``), every other seat
waiting, so the hands that end in the window are the released ones and nothing else loads the
machine. Before each window the seats play freely until enough tables are armed for it (the fill).

Per hand (joined on the hand id):

* ``ended``: the ``HandEnded`` event's ``envelope.occurred_at`` (the table stamps it as it publishes
  it, after the hand's last step is written ahead and shown: the seats already have ``hand_revealed``);
* ``settled``: the wall clock here when the second of the two seats receives its ``hand_settled``
  event (the table relays the wallet's ``SettlementApplied`` to both seats; a ``hand_settled``
  without a settlement, the table having waited ``SETTLEMENT_WAIT_SECONDS`` in vain, is *missing*).

The latency is ``settled - ended`` (one machine, one clock). Both stamps of the services' own events
(``HandScored`` stamped by scoring as it publishes, ``SettlementApplied`` by the wallet after its
commit), read by a plain NATS subscription, split it into stages: scoring (HandEnded → HandScored:
delivery, log read, replay, evaluation), wallet (HandScored → SettlementApplied: publish, delivery,
ledger transaction) and table (SettlementApplied → the seat: publish, delivery to the table server,
``hand_settled`` written ahead, gRPC). ``bench settle.cpu`` is each process's CPU per hand in the
window.

The reference (``js_relay``), measured after each step at the same rate for as long: the bus hops
of the same path with no work between them — a JetStream publish, a durable pull consumer in another
process that publishes the next message, a second such hop, and a plain subscription here receiving
the third: what any path of three JetStream events between services costs on this NATS and machine.

At the end every table is played out and left, and the run checks: every hand ended got exactly one
``hand`` transaction in the ledger and one non-empty ``hand_settled`` at each seat, no replay was
rejected, the ledger's total is what it was before, the wallet's audit is clean, no hold is open, no
table is live and no consumer has work left. It stops by itself: every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import math
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import asyncpg
import grpc
import grpc.aio
from nats.aio.msg import Msg
from prometheus_client.parser import text_string_to_metric_families

from bench.common import arrivals, cpu_seconds, open_table_request, tree_cpu_seconds
from bench.stack_probes import BenchViolation, ledger_state, percentile, report_checks, settle
from duelmahjong.cli.demo import ledger_balances
from duelmahjong.client.policy import BaselineBot
from duelmahjong.platform import auth, eventloop, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.db import with_database
from duelmahjong.platform.embedded import EmbeddedNats, EmbeddedPostgres
from duelmahjong.platform.pull import PullFeed
from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import StackState
from duelmahjong.platform.streams import ConsumerSpec, StreamSpec
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import (
    events_pb2,
    play_pb2,
    rules_pb2,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "settle-"  # every bench table's id starts so: the bus events of other tables are ignored
SERVICES = ("wallet", "scoring", "table")
CARRY, FEE = 500, 1
RULES = rules_pb2.RoomRules(
    profile=rules_pb2.PROFILE_DUEL,
    fan_rate=1,
    fee=FEE,
    carry_min=1,
    carry_max=CARRY,
    # An armed seat may hold its win for the whole run: no clock may play it by default meanwhile.
    decision_millis=3_600_000,
    time_bank_millis=0,
)
SETTLEMENT_WAIT_SECONDS = 15.0  # the table server's shipped default, stated so the bench knows it
FILL_SECONDS = 180.0  # longest fill before a step; a step then runs with the tables it has
DRAIN_SECONDS = 60.0  # longest wait for the tables to play out and close at the end
SPARE = 1.3  # tables armed for a window per hand it releases (Poisson arrivals run over)
# The project's baseline bot plays every decision but the win (held) and continue: it plays for a
# win, so hands end by one (a seat that only plays default actions discards what it draws, and its
# hands run to an exhausted wall).
_BOT = BaselineBot()
RELAY_STREAM = StreamSpec("BENCH_SETTLE_RELAY", ("bench.settle.relay.>",))
RELAY_HOPS = ("bench.settle.relay.a", "bench.settle.relay.b", "bench.settle.relay.c")


@dataclass(frozen=True)
class Settings:
    rates: tuple[float, ...] = (50.0, 100.0, 200.0)
    seconds: float = 5.0
    table_servers: int = 1
    seed: int = 20261202

    @property
    def tables(self) -> int:
        return math.ceil(max(self.rates) * self.seconds * SPARE) + 8


QUICK = Settings(rates=(20.0,), seconds=2.0)


@dataclass
class Hand:
    """What the bench saw of one hand (wall-clock Unix seconds; 0 = not seen)."""

    ended: float = 0.0  # HandEnded.envelope.occurred_at
    scored: float = 0.0  # HandScored.envelope.occurred_at
    applied: float = 0.0  # SettlementApplied.envelope.occurred_at (the hand's transaction)
    released: float = 0.0  # the bench released the win (timed hands only)
    step: int = -1  # the step that released it
    revealed: list[float] = field(default_factory=list)  # each seat's hand_revealed
    settled: list[float] = field(default_factory=list)  # each seat's non-empty hand_settled
    empty: int = 0  # hand_settled without a settlement (the table's wait ran out)
    applied_count: int = 0
    rejected: str = ""  # the wallet's or scoring's refusal

    def latency(self) -> float | None:
        if len(self.settled) < 2 or not self.ended:
            return None
        return max(self.settled) - self.ended


@dataclass
class Step:
    rate: float
    seconds: float
    released: int = 0
    short: int = 0  # arrivals with no armed table to release
    latencies: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=dict)
    settled: int = 0
    missing: int = 0
    errors: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds in the window
    work: dict[str, float] = field(default_factory=dict)  # service -> mean seconds of its own part
    reference: list[float] = field(default_factory=list)

    def p(self, fraction: float, samples: Sequence[float] | None = None) -> float:
        return percentile(self.latencies if samples is None else samples, fraction) * 1e3

    def line(self) -> str:
        return (
            f"bench settle hands/s={self.rate:g} p50={self.p(0.5):.1f} p95={self.p(0.95):.1f} "
            f"p99={self.p(0.99):.1f} ms settled={self.settled} missing={self.missing} errors={self.errors}"
        )

    def stages_line(self) -> str:
        parts = " ".join(
            f"{name} p50={self.p(0.5, samples):.1f} p99={self.p(0.99, samples):.1f}"
            for name, samples in self.stages.items()
        )
        achieved = self.released / self.seconds if self.seconds else 0.0
        return (
            f"bench settle.stages hands/s={self.rate:g} {parts} ms "
            f"(released={self.released} short={self.short} achieved={achieved:.1f}/s)"
        )

    def cpu_line(self) -> str:
        count = max(self.released, 1)
        parts = " ".join(f"{name}={seconds / count * 1e3:.2f}" for name, seconds in self.cpu.items())
        work = " ".join(f"{name}={seconds * 1e3:.1f}" for name, seconds in self.work.items())
        return f"bench settle.cpu hands/s={self.rate:g} {parts} ms per hand; in service mean {work} ms"

    def ratio_line(self) -> str:
        ours, ref = self.p(0.99), self.p(0.99, self.reference)
        ratio = ours / ref if ref else float("inf")
        return (
            f"bench settle.p99 ours={ours:.1f}ms ref=js_relay {ref:.1f}ms ratio={ratio:.2f} "
            f"(hands/s={self.rate:g}; ref p50={self.p(0.5, self.reference):.1f}ms)"
        )


class Run:
    """The seats' shared state (one event loop: no locks)."""

    def __init__(self, tls: ClientTls) -> None:
        self.tls = tls  # how the seats dial the table servers
        self.hands: dict[str, Hand] = collections.defaultdict(Hand)
        self.armed: collections.deque[tuple[str, asyncio.Future[None]]] = collections.deque()
        self.play = asyncio.Event()  # set: seats play on; clear: only released wins are sent
        self.closing = False  # the end: wins at once, leave between hands
        self.rejected_actions = 0
        self.stream_errors: list[str] = []
        self.replay_rejected: list[str] = []
        self.step = -1

    def arm(self, hand_id: str) -> asyncio.Future[None]:
        release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.armed.append((hand_id, release))
        return release

    def release(self, step: int) -> bool:
        while self.armed:
            hand_id, release = self.armed.popleft()
            if release.done():
                continue
            hand = self.hands[hand_id]
            hand.released, hand.step = time.time(), step
            release.set_result(None)
            return True
        return False

    def release_all(self) -> None:
        while self.armed:
            _hand_id, release = self.armed.popleft()
            if not release.done():
                release.set_result(None)

    async def on_bus(self, message: Msg) -> None:
        """Stamps of the services' events for the bench's tables."""
        if message.subject == subjects.HAND_ENDED:
            ended = events_pb2.HandEnded.FromString(message.data)
            if ended.table_id.startswith(PREFIX):
                self.hands[ended.hand_id].ended = _seconds(ended.envelope.occurred_at)
        elif message.subject == subjects.HAND_SCORED:
            scored = events_pb2.HandScored.FromString(message.data)
            if scored.table_id.startswith(PREFIX):
                self.hands[scored.hand_id].scored = _seconds(scored.envelope.occurred_at)
        elif message.subject == subjects.SETTLEMENT_APPLIED:
            applied = events_pb2.SettlementApplied.FromString(message.data)
            if applied.table_id.startswith(PREFIX) and applied.hand_transaction:
                hand = self.hands[applied.hand_id]
                hand.applied = hand.applied or _seconds(applied.envelope.occurred_at)
                hand.applied_count += 1
                if applied.rejected_reason:
                    hand.rejected = applied.rejected_reason
        elif message.subject == subjects.REPLAY_REJECTED:
            refused = events_pb2.ReplayRejected.FromString(message.data)
            if refused.table_id.startswith(PREFIX):
                self.replay_rejected.append(f"{refused.hand_id}: {refused.reason}")
                self.hands[refused.hand_id].rejected = refused.reason

    def ended_hands(self) -> dict[str, Hand]:
        return {hand_id: hand for hand_id, hand in self.hands.items() if hand.ended}


def _seconds(stamp: object) -> float:
    return float(stamp.seconds + stamp.nanos / 1e9)  # type: ignore[attr-defined]


# --- the seats -------------------------------------------------------------------------------------------
async def _decide(run: Run, view: play_pb2.SeatView, hand_id: str) -> play_pb2.Action:
    legal = view.legal_actions
    kinds = {action.kind for action in legal.actions}
    if play_pb2.ACTION_KIND_CONTINUE in kinds:
        if not run.closing:
            await run.play.wait()
        if run.closing:
            return play_pb2.Action(leave=play_pb2.LeaveAction())
        return play_pb2.Action(continue_playing=play_pb2.ContinueAction())
    if play_pb2.ACTION_KIND_WIN in kinds:
        if not run.closing:
            await run.arm(hand_id)  # one action from the hand's end, until the pacer releases it
        return play_pb2.Action(win=play_pb2.WinAction())
    if not run.closing:
        await run.play.wait()
    return _BOT.decide(view, legal)


async def _seat(run: Run, address: str, token: str, ticket: str) -> None:
    writing = False
    try:
        async with run.tls.channel(address) as channel:
            call = table_pb2_grpc.TableServiceStub(channel).Play(metadata=auth.bearer_metadata(token))
            await call.write(table_pb2.PlayRequest(table_ticket=ticket, accept_batches=True))
            hand_id, last_seen, sent_after = "", 0, -1
            while True:
                read = await call.read()
                if read is grpc.aio.EOF:
                    return
                received = cast(table_pb2.PlayResponse, read)
                decision: play_pb2.SeatView | None = None
                batch = received.batch.responses if received.HasField("batch") else (received,)
                for response in batch:
                    if response.HasField("event"):
                        event = response.event
                        last_seen = max(last_seen, event.sequence)
                        if sent_after >= 0 and event.sequence > sent_after:
                            sent_after = -1
                        kind = event.WhichOneof("kind")
                        if kind == "hand_started":
                            hand_id = event.hand_started.hand_id
                        elif kind == "hand_revealed":
                            run.hands[hand_id].revealed.append(time.time())
                        elif kind == "hand_settled":
                            if event.hand_settled.HasField("settlement"):
                                run.hands[hand_id].settled.append(time.time())
                            else:
                                run.hands[hand_id].empty += 1
                    elif response.HasField("rejected"):
                        run.rejected_actions += 1
                        sent_after = -1
                    elif response.view.legal_actions.actions:
                        decision = response.view
                if decision is not None and sent_after < 0:
                    action = await _decide(run, decision, hand_id)
                    sent_after = last_seen
                    writing = True
                    await call.write(table_pb2.PlayRequest(action=action, last_seen_sequence=last_seen))
                    writing = False
    except grpc.aio.AioRpcError as err:
        # While the run closes, a table ends its seats' streams as its other seat leaves; a write
        # this seat was making then fails as INTERNAL "Internal error from Core" (grpc.aio reports a
        # write the server's end of the stream cut off so, grpc/grpc#36066), or the run cancels it.
        code = err.code()
        ended = code == grpc.StatusCode.CANCELLED or (writing and code == grpc.StatusCode.INTERNAL)
        if not (run.closing and ended):
            run.stream_errors.append(f"{code.name}: {err.details()}")


async def _players(wallet: str, secret: str, count: int, tls: ClientTls) -> list[str]:
    """``count`` wallet guests, each with the carry plus the fee held for the pairing of its table."""
    service = auth.bearer_metadata(auth.issue_token(secret, player_id="bench-settle", role=auth.Role.SERVICE))
    players: list[str] = [""] * count
    numbers = iter(range(count))
    async with tls.channel(wallet) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)

        async def worker() -> None:
            for number in numbers:
                login = await stub.GuestLogin(wallet_pb2.GuestLoginRequest(display_name=f"settle {number}"))
                await stub.PlaceHold(
                    wallet_pb2.PlaceHoldRequest(
                        player_id=login.player_id,
                        pairing_id=f"{PREFIX}p{number // 2}",
                        amount=CARRY + FEE,
                        fee=FEE,
                    ),
                    metadata=service,
                )
                players[number] = login.player_id

        await asyncio.gather(*(worker() for _ in range(8)))
    return players


async def _open_tables(
    addresses: Sequence[str], secret: str, players: Sequence[str], tls: ClientTls
) -> list[tuple[str, str, str]]:
    """Open a table per pair of players, round robin over the table servers: (address, token, ticket)."""
    service = auth.bearer_metadata(auth.issue_token(secret, player_id="bench-settle", role=auth.Role.SERVICE))
    seats: list[tuple[str, str, str]] = []
    channels = [tls.channel(address) for address in addresses]
    try:
        for number in range(len(players) // 2):
            server = number % len(addresses)
            seated = (players[2 * number], players[2 * number + 1])
            opened = await table_pb2_grpc.TableServiceStub(channels[server]).OpenTable(
                open_table_request(
                    f"{PREFIX}{number}", f"{PREFIX}p{number}", "bench-settle", RULES, seated, CARRY
                ),
                metadata=service,
            )
            for ticket in opened.tickets:
                token = auth.issue_token(secret, player_id=ticket.player_id)
                seats.append((addresses[server], token, ticket.table_ticket))
    finally:
        for channel in channels:
            await channel.close()
    return seats


# --- the reference: three JetStream hops with no work between them ----------------------------------------
async def _relay(nats_url: str) -> None:
    """The reference's other process: each message of hop a is published on hop b, each of b on c,
    both through durable pull consumers (``PullFeed``) and acked publishes, as the services do."""
    bus = await Bus.connect(nats_url, name="bench-settle-relay")
    await bus.declare_stream(RELAY_STREAM)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    async def hop(source: str, target: str) -> None:
        durable = "relay-" + source.rsplit(".", 1)[1]
        await bus.declare_consumer(ConsumerSpec(RELAY_STREAM.name, durable, source))
        feed = PullFeed(bus.client, RELAY_STREAM.name, durable, batch=16)
        await feed.start()
        try:
            while not stop.is_set():
                message = await feed.next(0.5)
                if message is not None:
                    await bus.publish(target, message.data, msg_id=f"{target}:{message.data.decode()}")
                    await message.ack()
        finally:
            await feed.close()

    await asyncio.gather(hop(RELAY_HOPS[0], RELAY_HOPS[1]), hop(RELAY_HOPS[1], RELAY_HOPS[2]))
    await bus.close()


async def _reference(bus: Bus, rate: float, seconds: float, rng: random.Random, tag: str) -> list[float]:
    """Messages into hop a at Poisson times of ``rate`` for ``seconds``: each one's publish → its
    third hop received here (a plain subscription)."""
    sent: dict[str, float] = {}
    latencies: list[float] = []

    async def arrived(message: Msg) -> None:
        started = sent.pop(message.data.decode(), None)
        if started is not None:
            latencies.append(time.perf_counter() - started)

    subscription = await bus.client.subscribe(RELAY_HOPS[2], cb=arrived)
    publishes: list[asyncio.Task[object]] = []
    try:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for number, at in enumerate(arrivals(rate, seconds, rng)):
            await asyncio.sleep(max(0.0, start + at - loop.time()))
            key = f"{tag}-{number}"
            sent[key] = time.perf_counter()
            publishes.append(
                asyncio.create_task(bus.publish(RELAY_HOPS[0], key.encode(), msg_id=f"{RELAY_HOPS[0]}:{key}"))
            )
        await asyncio.gather(*publishes)
        for _ in range(100):  # bounded: the last ones arrive within a second unless the relay is gone
            if not sent:
                break
            await asyncio.sleep(0.05)
    finally:
        await subscription.unsubscribe()
    return latencies


# --- the run ---------------------------------------------------------------------------------------------
# The services' own timing of their part (histograms' sum and count): scoring from a HandEnded
# received to its HandScored published (log read and replay), the wallet from a HandScored fetched
# to its SettlementApplied stored. Against the stamps' stages, what is left is waiting for a worker.
WORK_METRICS = {
    "scoring": "duel_scoring_hand_scoring_seconds",
    "wallet": "duel_wallet_settlement_duration_seconds",
}


def _histogram(metrics_url: str, name: str) -> tuple[float, float]:
    """(sum, count) of a histogram at a service's /metrics, over its labels; zeros if unreadable."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return 0.0, 0.0
    total = count = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{name}_sum" and sample.labels.get("kind", "hand-scored") == "hand-scored":
                total += sample.value
            elif sample.name == f"{name}_count" and sample.labels.get("kind", "hand-scored") == "hand-scored":
                count += sample.value
    return total, count


class Meter:
    """CPU seconds of the stack's processes and this one, by name; the services' work histograms."""

    def __init__(self, pids: dict[str, int], postgres: int, metrics: dict[str, str]) -> None:
        self.pids, self.postgres, self.metrics = pids, postgres, metrics

    def snapshot(self) -> dict[str, float]:
        used = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        used["postgres"] = tree_cpu_seconds(self.postgres)
        used["bench"] = time.process_time()
        return used

    def work(self) -> dict[str, tuple[float, float]]:
        return {name: _histogram(self.metrics[name], metric) for name, metric in WORK_METRICS.items()}


async def _wait(condition: object, within: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(every)
    return True


def _quiet(run: Run) -> bool:
    """Every hand that ended has been shown its settlement (or its empty one) at both seats."""
    return all(len(h.settled) + h.empty >= 2 for h in run.ended_hands().values())


async def _step(
    run: Run, number: int, rate: float, settings: Settings, meter: Meter, rng: random.Random, bus: Bus
) -> Step:
    step = Step(rate, settings.seconds)
    errors_before = run.rejected_actions + len(run.stream_errors)
    need = math.ceil(rate * settings.seconds * SPARE) + 4
    run.play.set()  # the fill: everyone plays until enough tables are one win from their hand's end
    filled = await _wait(lambda: len(run.armed) >= need, FILL_SECONDS, 0.1)
    run.play.clear()
    if not filled:
        print(f"[settle] only {len(run.armed)} of {need} tables armed after {FILL_SECONDS:.0f}s", flush=True)
    # Before the window: what the fill left in flight has ended and been settled.
    await asyncio.sleep(0.3)
    await _wait(lambda: _quiet(run), SETTLEMENT_WAIT_SECONDS + 5)
    loop = asyncio.get_running_loop()
    before, work_before = meter.snapshot(), meter.work()
    start = loop.time()
    for at in arrivals(rate, settings.seconds, rng):
        await asyncio.sleep(max(0.0, start + at - loop.time()))
        if run.release(number):
            step.released += 1
        else:
            step.short += 1
    timed = [h for h in run.hands.values() if h.step == number]
    await _wait(lambda: all(len(h.settled) + h.empty >= 2 for h in timed), SETTLEMENT_WAIT_SECONDS + 5)
    after, work_after = meter.snapshot(), meter.work()
    step.cpu = {name: after[name] - before[name] for name in before}
    for name, (total, count) in work_after.items():
        done = count - work_before[name][1]
        step.work[name] = (total - work_before[name][0]) / done if done else 0.0
    stages: dict[str, list[float]] = {"scoring": [], "wallet": [], "table": []}
    for hand in timed:
        latency = hand.latency()
        if latency is None or hand.rejected:
            step.missing += 1
            step.errors += bool(hand.rejected)
            continue
        step.settled += 1
        step.latencies.append(latency)
        if hand.scored and hand.applied:
            stages["scoring"].append(hand.scored - hand.ended)
            stages["wallet"].append(hand.applied - hand.scored)
            stages["table"].append(max(hand.settled) - hand.applied)
    step.stages = {"end": [h.ended - h.released for h in timed if h.ended], **stages}
    step.errors += run.rejected_actions + len(run.stream_errors) - errors_before
    step.reference = await _reference(bus, rate, settings.seconds, rng, f"s{number}")
    return step


async def _drain(run: Run) -> bool:
    """Play every table out: armed wins go, the other seats play on, both leave between hands."""
    run.closing = True
    run.release_all()
    run.play.set()
    return True


async def _ledger_hands(admin_url: str) -> dict[str, int]:
    """Applied ``hand`` transactions of the bench's tables, by hand id."""
    conn = await asyncpg.connect(with_database(admin_url, "wallet"))
    try:
        rows = await conn.fetch(
            "SELECT hand_id, count(*) AS n FROM wallet.transactions "
            "WHERE kind = 'hand' AND status = 'applied' AND table_id LIKE $1 GROUP BY hand_id",
            PREFIX + "%",
        )
    finally:
        await conn.close()
    return {row["hand_id"]: int(row["n"]) for row in rows}


@dataclass
class Outcome:
    steps: list[Step]
    checks: list[tuple[bool, str]]


async def measure(data_dir: Path, settings: Settings) -> Outcome:
    secret = secrets.token_hex(32)
    with EmbeddedNats(data_dir / "nats") as nats_server, EmbeddedPostgres(data_dir / "pg") as postgres:
        environ = {
            **{k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")},
            "NATS_URL": nats_server.url,
            "DATABASE_URL": postgres.url,
            "TOKEN_SECRET": secret,
            "TABLE_SERVERS": str(settings.table_servers),
            "TABLE_CAPACITY": str(settings.tables + 16),
            "SETTLEMENT_WAIT_SECONDS": str(SETTLEMENT_WAIT_SECONDS),
            "WALLET_GUEST_LOGINS_PER_MINUTE": "1000000",
            "WALLET_GUEST_LOGIN_BURST": "100000",
            "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING"),
        }
        stack = Stack(data_dir / "stack", SERVICES, environ)
        relay: subprocess.Popen[bytes] | None = None
        bus: Bus | None = None
        tasks: list[asyncio.Task[None]] = []
        try:
            state = await stack.up()
            relay = subprocess.Popen(  # noqa: ASYNC220 - started once, before anything is timed
                [sys.executable, "-m", "bench.settle", "--relay", nats_server.url], cwd=ROOT
            )
            run = Run(state.client_tls())
            bus = await Bus.connect(nats_server.url, name="bench-settle")
            for subject in (
                subjects.HAND_ENDED,
                subjects.HAND_SCORED,
                subjects.SETTLEMENT_APPLIED,
                subjects.REPLAY_REJECTED,
            ):
                await bus.client.subscribe(subject, cb=run.on_bus)
            total_before = sum((await ledger_balances(postgres.url) or {}).values())
            tables = [name for name in state.services if name.startswith("table")]
            players = await _players(state.services["wallet"].grpc, secret, 2 * settings.tables, run.tls)
            seats = await _open_tables([state.services[t].grpc for t in tables], secret, players, run.tls)
            tasks = [asyncio.create_task(_seat(run, *seat)) for seat in seats]
            postmaster = int((postgres.pgdata / "postmaster.pid").read_text().split()[0])
            pids = {p.name: p.process.pid for p in stack.processes}
            metrics = {name: state.services[name].metrics for name in WORK_METRICS}
            meter = Meter({**pids, "nats": nats_server.pid or 0, "relay": relay.pid}, postmaster, metrics)
            rng = random.Random(settings.seed)
            steps = []
            for number, rate in enumerate(settings.rates):
                step = await _step(run, number, rate, settings, meter, rng, bus)
                steps.append(step)
                for line in (step.line(), step.stages_line(), step.cpu_line(), step.ratio_line()):
                    print(line, flush=True)
            await _drain(run)
            _done, pending = await asyncio.wait(tasks, timeout=DRAIN_SECONDS)
            checks = await _checks(run, state, postgres.url, total_before, len(pending))
            return Outcome(steps, checks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if bus is not None:
                await bus.close()
            if relay is not None:
                relay.send_signal(signal.SIGTERM)
                try:
                    relay.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    relay.kill()
            stack.down()


async def _checks(
    run: Run, state: StackState, admin_url: str, total_before: int, open_streams: int
) -> list[tuple[bool, str]]:
    holds, live, lag = await settle(state)
    total_after, _holds, problems = await ledger_state(admin_url)
    ended = run.ended_hands()
    in_ledger = await _ledger_hands(admin_url)
    once = [hand_id for hand_id in ended if in_ledger.get(hand_id) == 1]
    strangers = sorted(set(in_ledger) - set(ended))
    shown = [hand_id for hand_id, hand in ended.items() if len(hand.settled) == 2 and not hand.empty]
    empty = sum(hand.empty for hand in ended.values())
    published = [hand_id for hand_id, hand in ended.items() if hand.applied_count >= 1]
    return [
        (len(once) == len(ended) and not strangers,
         f"hands ended {len(ended)}, with exactly one hand transaction in the ledger {len(once)}"
         + (f", transactions of hands never ended {len(strangers)}" if strangers else "")),
        (len(published) == len(ended), f"hands with their SettlementApplied on the bus {len(published)}"),
        (len(shown) == len(ended), f"hands shown settled at both seats, once each {len(shown)}"
         + (f" (hand_settled without a settlement {empty})" if empty else "")),
        (not run.replay_rejected, f"replays rejected {len(run.replay_rejected)}"
         + (f", first: {run.replay_rejected[0]}" if run.replay_rejected else "")),
        (total_after == total_before, f"ledger total before {total_before} after {total_after}"),
        (not problems, "wallet audit " + ("clean" if not problems else "; ".join(problems[:3]))),
        (holds == 0, f"open holds {holds}"),
        (live == 0 and open_streams == 0, f"live tables {live}, seat streams still open {open_streams}"),
        (lag == 0, f"consumer lag at the end {lag}"),
        (not run.stream_errors and not run.rejected_actions,
         f"seat stream errors {len(run.stream_errors)}, rejected actions {run.rejected_actions}"
         + (f", first: {run.stream_errors[0]}" if run.stream_errors else "")),
    ]  # fmt: skip


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="duel bench settle", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hands-per-second", type=float, default=200.0, help="the offered rate (default 200)"
    )
    parser.add_argument(
        "--steps",
        type=lambda text: tuple(float(rate) for rate in text.split(",") if rate),
        default=None,
        help="offered rates, one step each, e.g. 50,100,200 (default: 50,100 and --hands-per-second)",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each step's window (default 5)")
    parser.add_argument("--table-servers", type=int, default=1, help="table server processes (default 1)")
    parser.add_argument("--quick", action="store_true", help="one short step at 20 hands/s (a wiring check)")
    parser.add_argument("--relay", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    if args.relay:
        eventloop.run(_relay(args.relay))
        return 0
    rates = args.steps or tuple(sorted({50.0, 100.0, args.hands_per_second} - {0.0}))
    settings = Settings(rates=rates, seconds=args.seconds, table_servers=args.table_servers)
    if args.quick:
        settings = dataclasses.replace(QUICK, table_servers=args.table_servers)
    if min(settings.rates) <= 0 or settings.seconds <= 0 or not 1 <= settings.table_servers <= 16:
        parser.error("rates and --seconds must be positive, --table-servers 1..16")
    with tempfile.TemporaryDirectory(prefix="settle-bench-") as tmp:
        try:
            outcome = eventloop.run(measure(Path(tmp), settings))
        except BenchViolation as err:
            print(f"settle FAILED: {err}", file=sys.stderr)
            return 1
    violations = report_checks("settle", outcome.checks)
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
