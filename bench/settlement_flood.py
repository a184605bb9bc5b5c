"""``duel bench settlement_flood``: what a table server keeps of the fleet's settlements.

Every table server hears every hand's ``SettlementApplied`` (one subject for the fleet). This publishes
``--count`` settlements of hands no server of the stack hosts, as another pod's wallet answers would
arrive, and reads the table server's RSS before and after (once its ``settlements_foreign`` counter
shows it heard them all). A server that keeps nothing it was not asked for grows by allocator noise
only: the goal is < 8 MB for 40,000 settlements, 200 bytes a message.

    bench settlement_flood N=40000 rss_before=… rss_after=… growth=…MB per_message=…B heard=40000 …
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import nats

from bench.stack_probes import proc_sample, run_bench, scrape_gauge, stack_state, table_servers
from duelmahjong.platform import subjects
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import events_pb2, rules_pb2

IN_ALL = True
BYTES_PER_MESSAGE_GOAL = 200
FOREIGN = "duel_table_settlements_foreign_total"


def foreign_settlement(index: int, tag: str) -> events_pb2.SettlementApplied:
    """A hand's settlement as the wallet answers it, for a table no server of this stack hosts: both
    balances, the settlement with its transfer and postings, both ratings (≈ what a real one weighs)."""
    table_id, hand_id = f"flood-{tag}-{index}", f"flood-{tag}-{index}-h1"
    players = (f"{table_id}-a", f"{table_id}-b")
    reason = rules_pb2.PostingReason
    postings = [
        rules_pb2.Posting(account=f"player:{players[0]}", amount=-5, reason=reason.POSTING_REASON_FEE),
        rules_pb2.Posting(account=f"player:{players[1]}", amount=-5, reason=reason.POSTING_REASON_FEE),
        rules_pb2.Posting(account="house:fees", amount=10, reason=reason.POSTING_REASON_FEE),
        rules_pb2.Posting(
            account=f"player:{players[0]}", amount=-150, reason=reason.POSTING_REASON_HAND_TRANSFER
        ),
        rules_pb2.Posting(
            account=f"player:{players[1]}", amount=150, reason=reason.POSTING_REASON_HAND_TRANSFER
        ),
    ]
    return events_pb2.SettlementApplied(
        source_event_id=f"hand:{hand_id}",
        transaction_id=f"tx-{tag}-{index:08d}",
        table_id=table_id,
        hand_id=hand_id,
        balances=[
            rules_pb2.AccountBalance(account=f"player:{p}", balance=balance, player_id=p)
            for p, balance in zip(players, (845, 1145), strict=True)
        ],
        settlement=rules_pb2.Settlement(
            hand_id=hand_id,
            total_fan=3,
            multipliers=rules_pb2.Multipliers(negotiated=5, progressive=1, fan_rate=10),
            fan_amount=150,
            transfer=rules_pb2.Transfer(from_player_id=players[0], to_player_id=players[1], amount=150),
            fee=5,
            postings=postings,
        ),
        hand_transaction=True,
        postings=postings,
    )


@dataclass(frozen=True)
class FloodResult:
    count: int
    rss_before_mb: float
    rss_after_mb: float
    heard: int
    seconds: float

    @property
    def growth_mb(self) -> float:
        return self.rss_after_mb - self.rss_before_mb

    @property
    def bytes_per_message(self) -> float:
        return self.growth_mb * 1024 * 1024 / self.count if self.count else 0.0

    def line(self) -> str:
        return (
            f"bench settlement_flood N={self.count} rss_before={self.rss_before_mb:.1f}MB "
            f"rss_after={self.rss_after_mb:.1f}MB growth={self.growth_mb:.2f}MB "
            f"per_message={self.bytes_per_message:.0f}B heard={self.heard} "
            f"rate={self.count / self.seconds:.0f}/s (goal < {BYTES_PER_MESSAGE_GOAL} B a message)"
        )


def _heard(metrics_url: str) -> int:
    return int(scrape_gauge(metrics_url, FOREIGN) or 0)


async def _publish(state: StackState, count: int, tag: str, batch: int = 500) -> None:
    # As the wallet: the one identity that may publish settlements.
    client = await nats.connect(state.nats_url.split(","), **state.nats_options("wallet"))
    try:
        for start in range(0, count, batch):
            for index in range(start, min(count, start + batch)):
                await client.publish(
                    subjects.SETTLEMENT_APPLIED, foreign_settlement(index, tag).SerializeToString()
                )
            await client.flush()
            await asyncio.sleep(0)  # a steady stream, as a fleet's wallets answer, not one burst
    finally:
        await client.drain()


async def _rss_settled(pid: int, within: float = 3.0) -> float:
    """The process's RSS once it stops moving (sampled until two readings a quarter second apart agree
    to 64 KiB, or ``within``)."""
    last = -1.0
    deadline = time.monotonic() + within
    while True:
        sample = proc_sample(pid)
        if sample is None:
            raise RuntimeError(f"the table server (pid {pid}) is gone")
        if abs(sample.rss_mb - last) < 1 / 16 or time.monotonic() > deadline:
            return sample.rss_mb
        last = sample.rss_mb
        await asyncio.sleep(0.25)


async def flood(state: StackState, count: int, *, warm: int = 2000, within: float = 120.0) -> FloodResult:
    """Warm the table server up with ``warm`` settlements (its buffers and allocator reach their size),
    then publish ``count`` more and measure what it kept."""
    (name, *_) = table_servers(state)
    endpoint = state.services[name]
    tag = f"{time.time_ns():x}"
    start_heard = await asyncio.to_thread(_heard, endpoint.metrics)
    await _publish(state, warm, f"{tag}w")
    await _until_heard(endpoint.metrics, start_heard + warm, within)
    gc.collect()
    before = await _rss_settled(endpoint.pid)
    started = time.monotonic()
    await _publish(state, count, tag)
    heard = await _until_heard(endpoint.metrics, start_heard + warm + count, within)
    seconds = time.monotonic() - started
    after = await _rss_settled(endpoint.pid)
    return FloodResult(count, before, after, heard - start_heard - warm, seconds)


async def _until_heard(metrics_url: str, target: int, within: float) -> int:
    deadline = time.monotonic() + within
    heard = 0
    while time.monotonic() < deadline:
        heard = await asyncio.to_thread(_heard, metrics_url)
        if heard >= target:
            return heard
        await asyncio.sleep(0.2)
    return heard


async def _main(args: argparse.Namespace) -> int:
    async with stack_state(args.state_file, label="settlement_flood") as (state, _):
        result = await flood(state, args.count)
    print(result.line(), flush=True)
    ok = result.heard == args.count and result.bytes_per_message < BYTES_PER_MESSAGE_GOAL
    print(f"settlement_flood {'OK' if ok else 'FAIL'}", flush=True)
    return 0 if ok else 1


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="duel bench settlement_flood", description=__doc__)
    parser.add_argument("--count", type=int, default=40_000)
    parser.add_argument(
        "--state-file",
        type=Path,
        default=Path(".local/stack.json"),
        help="a running stack (else one is started)",
    )
    return run_bench("settlement_flood", _main(parser.parse_args(argv)))
