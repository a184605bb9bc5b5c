"""``duel bench wallet``: settlements per second through the wallet's whole path against the raw
ceiling of the same database.

* ours (``wallet.settle``): ``HandScored`` events already in JetStream, consumed by the wallet's
  ``SettlementConsumer`` with 8 workers: decode → one ledger transaction (planned on a snapshot read,
  written by one statement that locks the accounts in id order, checks their versions and writes
  the idempotency row, balances, entries and both players' skill ratings; the locked path if the
  check fails) → ``SettlementApplied`` published → ack. Timed from the first event fetched to the last
  ``SettlementApplied``; latency per event from fetch to publish.
* ref (``raw_tx``): a bare asyncpg transaction on 8 connections that locks the two accounts, updates
  both, inserts two ledger rows and one idempotency row — measured right before ours, on the same
  embedded Postgres, over the same pairs of players.
* floor (``wallet.floor``): the wallet's consumer exactly as ours — the same 8 workers, fetch, decode,
  ``SettlementApplied`` published, input acked after the output's PubAck — but each event's ledger
  transaction replaced by the reference's bare transaction. The most any wallet that consumes its
  events from JetStream and publishes its results can reach here; ``ours/floor`` is what our ledger
  (holds, caps, recorded outcomes) costs beyond the bare transaction.

Runs alternate (ref, ours, floor, ref, ours, floor…) after one untimed round of each; figures are
medians over the runs. Embedded NATS and Postgres (durable: fsync on, as in production) start in a
temporary directory and stop at the end.
``bench wallet.cpu`` says what each side costs per settlement in CPU — this process (the wallet's
consumer, or the raw client), Postgres (its backends) and NATS — over the timed part of every run:
on a machine whose cores are all busy, the ratio follows the ratio of these sums.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import asyncpg

from bench.common import MIN_RUNS, Figure, cpu_seconds, tree_cpu_seconds
from duelmahjong.platform import db, eventloop, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.embedded import EmbeddedNats, EmbeddedPostgres
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import events_pb2, rules_pb2
from services.wallet.audit import audit_ledger
from services.wallet.commands import Command, Grant, HandSettlement
from services.wallet.events import SettlementConsumer
from services.wallet.ledger import Status
from services.wallet.ledger_store import LedgerStore, Outcome
from services.wallet.main import MIGRATIONS
from services.wallet.players import PlayerStore
from services.wallet.sources import SOURCES

WORKERS = 8
PLAYERS = 50
RUNS = 7  # alternating pairs: the medians of 5 still moved by ±0.1 between invocations here

_RAW_LOCK = "SELECT id, balance FROM wallet.accounts WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE"
_RAW_UPDATE = "UPDATE wallet.accounts SET balance = balance + $2 WHERE id = $1"
_RAW_IDEMPOTENCY = (
    "INSERT INTO wallet.transactions (idempotency_key, kind, status) "
    "VALUES ($1, 'bench', 'applied') RETURNING id"
)
_RAW_ENTRY = (
    "INSERT INTO wallet.entries (transaction_id, account_id, amount, purpose, balance_after) "
    "VALUES ($1, $2, $3, 'hand', $4)"
)


async def raw_transaction(
    conn: asyncpg.Connection, payer: int, payee: int, amount: int, key: str
) -> tuple[int, int, int]:
    """The reference's transaction: its id and the two balances after it."""
    async with conn.transaction():
        rows = await conn.fetch(_RAW_LOCK, [payer, payee])
        balance = {row["id"]: row["balance"] for row in rows}
        await conn.execute(_RAW_UPDATE, payer, -amount)
        await conn.execute(_RAW_UPDATE, payee, amount)
        transaction_id = await conn.fetchval(_RAW_IDEMPOTENCY, key)
        await conn.execute(_RAW_ENTRY, transaction_id, payer, -amount, balance[payer] - amount)
        await conn.execute(_RAW_ENTRY, transaction_id, payee, amount, balance[payee] + amount)
    return transaction_id, balance[payer] - amount, balance[payee] + amount


class RawTransactionStore(LedgerStore):
    """The floor's store: a settlement worker's command runs as the reference's bare transaction."""

    def __init__(self, pool: asyncpg.Pool, account_of: dict[str, int]) -> None:
        super().__init__(pool)
        self.account_of = account_of

    async def execute(
        self, command: Command, *, record_rejection: bool, conn: asyncpg.Connection | None = None
    ) -> Outcome:
        assert isinstance(command, HandSettlement) and conn is not None
        transaction_id, payer, payee = await raw_transaction(
            conn, self.account_of[command.payer], self.account_of[command.payee], command.stake, command.key
        )
        balances = {command.payer: (payer, 0), command.payee: (payee, 0)}
        return Outcome(
            command.key,
            command.kind,
            Status.APPLIED,
            "",
            transaction_id,
            command.table,
            command.hand,
            balances,
        )


class CpuMeter:
    """CPU seconds used so far by this process, Postgres (postmaster and backends) and NATS."""

    def __init__(self, postgres_pid: int, nats_pid: int) -> None:
        self.postgres_pid = postgres_pid
        self.nats_pid = nats_pid
        self.used = {side: [0.0, 0.0, 0.0, 0] for side in ("ours", "ref", "floor")}  # python, pg, nats s; n

    def snapshot(self) -> tuple[float, float, float]:
        return time.process_time(), tree_cpu_seconds(self.postgres_pid), cpu_seconds(self.nats_pid)

    def add(self, side: str, before: tuple[float, float, float], settlements: int) -> None:
        used = self.used[side]
        for n, (start, end) in enumerate(zip(before, self.snapshot(), strict=True)):
            used[n] += end - start
        used[3] += settlements

    def line(self, side: str) -> str:
        python, postgres, nats, count = self.used[side]
        count = max(int(count), 1)
        label = {"ours": "ours", "ref": "ref=raw_tx", "floor": "floor"}[side]
        per = {"python": python, "postgres": postgres, "nats": nats}
        figures = " ".join(f"{name}={seconds / count * 1e3:.3f}ms" for name, seconds in per.items())
        return f"bench wallet.cpu {label} {figures} per settlement"


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def raw_run(
    pool: asyncpg.Pool, pairs: list[tuple[int, int, int]], tag: str, meter: CpuMeter
) -> tuple[float, list[float]]:
    """The ceiling: one bare transaction per settlement, ``WORKERS`` connections in parallel."""
    latencies: list[float] = []
    queue = iter(enumerate(pairs))

    async def worker() -> None:
        async with pool.acquire() as conn:
            for n, (payer, payee, amount) in queue:
                started = time.perf_counter()
                await raw_transaction(conn, payer, payee, amount, f"raw:{tag}:{n}")
                latencies.append(time.perf_counter() - started)

    before = meter.snapshot()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(WORKERS)))
    elapsed = time.perf_counter() - started
    meter.add("ref", before, len(pairs))
    return len(pairs) / elapsed, latencies


async def our_run(
    nats_url: str,
    store: LedgerStore,
    publisher: Bus,
    players: list[str],
    pairs: list[tuple[int, int, int]],
    tag: str,
    meter: CpuMeter,
    side: str = "ours",
) -> tuple[float, list[float]]:
    """The wallet's path: events waiting in JetStream, consumed by 8 workers until all are applied."""
    for chunk in range(0, len(pairs), 500):
        events = []
        for n, (payer, payee, amount) in enumerate(pairs[chunk : chunk + 500], start=chunk):
            transfer = rules_pb2.Transfer(
                from_player_id=players[payer], to_player_id=players[payee], amount=amount
            )
            events.append(
                events_pb2.HandScored(
                    envelope=events_pb2.EventEnvelope(event_id=f"scored-{tag}-{n}", producer="bench"),
                    table_id="bench",
                    hand_id=f"{tag}-{n}",
                    settlement=rules_pb2.Settlement(
                        hand_id=f"{tag}-{n}", fan_amount=amount, transfer=transfer
                    ),
                    # Rated, as every hand of a table is: both seats' ratings move in the transaction.
                    player_ids=[players[payer], players[payee]],
                    profile=rules_pb2.PROFILE_DUEL,
                )
            )
        await asyncio.gather(
            *(
                publisher.publish(subjects.HAND_SCORED, e.SerializeToString(), msg_id=e.envelope.event_id)
                for e in events
            )
        )
    received: dict[str, float] = {}
    latencies: list[float] = []
    all_applied = asyncio.Event()

    first: list[float] = []

    async def clock(point: str, event_id: str) -> None:
        if point == "received":
            received[event_id] = time.perf_counter()
            if not first:
                first.append(received[event_id])
        elif point == "published":
            latencies.append(time.perf_counter() - received.pop(event_id))
            if len(latencies) == len(pairs):
                all_applied.set()

    before = meter.snapshot()  # the events are in the stream: from here on it is the wallet's work
    bus = await Bus.connect(nats_url, name="wallet-bench")
    consumer = SettlementConsumer(
        bus,
        store,
        ServiceMetrics("wallet"),
        workers=WORKERS,
        ack_wait_seconds=30.0,
        checkpoint=clock,
        sources=SOURCES[:1],
    )
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    await asyncio.wait([task, asyncio.create_task(all_applied.wait())], return_when=asyncio.FIRST_COMPLETED)
    # From the first event fetched: the consumer's start-up (binding its subscriptions) is not a
    # settlement, just as the reference's connections are open before it is timed.
    elapsed = time.perf_counter() - first[0]
    meter.add(side, before, len(pairs))
    stop.set()
    await task
    await bus.close()
    return len(pairs) / elapsed, latencies


async def measure(data_dir: Path, runs: int, settlements: int) -> list[str]:
    with EmbeddedNats(data_dir / "nats") as nats_server, EmbeddedPostgres(data_dir / "pg") as postgres:
        url = await db.ensure_database(postgres.url, "wallet_bench")
        pool = await db.create_pool(url, max_size=WORKERS + 2)
        await db.apply_migrations(pool, MIGRATIONS, service="wallet")
        store = LedgerStore(pool)
        players = [f"bench-{n:02d}" for n in range(PLAYERS)]
        for player_id in players:
            await PlayerStore(pool, store).create_player(player_id, player_id)
            await store.execute(
                Grant(f"start:{player_id}", player=player_id, amount=10**12, grant_reason="bench"),
                record_rejection=False,
            )
        account_of = dict(
            await pool.fetch("SELECT player_id, id FROM wallet.accounts WHERE player_id IS NOT NULL")
        )
        publisher = await Bus.connect(nats_server.url, name="wallet-bench-publisher")
        consumer = SettlementConsumer(
            publisher, store, ServiceMetrics("wallet"), workers=1, ack_wait_seconds=30.0
        )
        await consumer.declare()

        postmaster = int((postgres.pgdata / "postmaster.pid").read_text().split()[0])
        meter = CpuMeter(postmaster, nats_server.pid or 0)
        rng = random.Random(20261130)
        floor_store = RawTransactionStore(pool, account_of)
        # One untimed round of each side first: plans cached, streams and durables warm, the embedded
        # servers' first-touch costs paid (the first timed runs were 15-20% slower on every side).
        warm_up = CpuMeter(postmaster, nats_server.pid or 0)
        pairs = [(*rng.sample(range(PLAYERS), 2), rng.randint(1, 2000)) for _ in range(settlements // 4)]
        raw_pairs = [(account_of[players[a]], account_of[players[b]], amount) for a, b, amount in pairs]
        await raw_run(pool, raw_pairs, "warm", warm_up)
        await our_run(nats_server.url, store, publisher, players, pairs, "warm", warm_up)
        await our_run(nats_server.url, floor_store, publisher, players, pairs, "fwarm", warm_up, side="floor")
        store.paths.clear()
        ours, theirs, floor, our_latency, their_latency = [], [], [], [], []
        for run in range(runs):
            pairs = [(*rng.sample(range(PLAYERS), 2), rng.randint(1, 2000)) for _ in range(settlements)]
            raw_pairs = [(account_of[players[a]], account_of[players[b]], amount) for a, b, amount in pairs]
            rate, latencies = await raw_run(pool, raw_pairs, f"r{run}", meter)
            theirs.append(rate)
            their_latency.extend(latencies)
            rate, latencies = await our_run(
                nats_server.url, store, publisher, players, pairs, f"r{run}", meter
            )
            ours.append(rate)
            our_latency.extend(latencies)
            rate, _latencies = await our_run(
                nats_server.url, floor_store, publisher, players, pairs, f"f{run}", meter, side="floor"
            )
            floor.append(rate)
        problems = await audit_ledger(pool)
        await publisher.close()
        await pool.close()
    if problems:
        raise SystemExit(f"wallet bench: the ledger does not add up after the runs: {problems[:3]}")
    paths = " ".join(f"{path}={count}" for path, count in sorted(store.paths.items()))
    paired = " ".join(f"{o / t:.2f}" for o, t in zip(ours, theirs, strict=True))
    figure = Figure("wallet.settle", statistics.median(ours), "raw_tx", statistics.median(theirs), runs)
    bare = Figure("wallet.floor", statistics.median(floor), "raw_tx", statistics.median(theirs), runs)
    return [
        figure.line(),
        bare.line(),
        f"bench wallet.settle ours/floor={figure.ours / bare.ours if bare.ours else 0.0:.2f} "
        "(what the ledger costs beyond the bare transaction on the same consumer)",
        f"bench wallet.settle runs ours/ref={paired} (each run's pair, back to back)",
        f"bench wallet.settle paths {paths} (ledger commands by path in the timed runs)",
        f"bench wallet.settle.latency ours p50={percentile(our_latency, 0.5) * 1e3:.2f}ms "
        f"p99={percentile(our_latency, 0.99) * 1e3:.2f}ms",
        f"bench wallet.settle.latency ref=raw_tx p50={percentile(their_latency, 0.5) * 1e3:.2f}ms "
        f"p99={percentile(their_latency, 0.99) * 1e3:.2f}ms",
        meter.line("ours"),
        meter.line("ref"),
        meter.line("floor"),
    ]


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="duel bench wallet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs of each side (>= {MIN_RUNS})")
    parser.add_argument("--settlements", type=int, default=2000, help="settlements per run")
    args = parser.parse_args(list(argv))
    with tempfile.TemporaryDirectory(prefix="wallet-bench-") as tmp:
        for line in eventloop.run(measure(Path(tmp), max(args.runs, MIN_RUNS), args.settlements)):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(__import__("sys").argv[1:]))
