"""``duel bench soak`` (``make soak``): a bounded long run of the whole stack with invariant and leak checks.

Uses the running stack (``make run``'s state file) when all four services are SERVING, else starts
one (embedded NATS and Postgres) and stops it at the end. ``--pairs`` bot pairs then play through
matchmaking and table exactly like game clients, in every room (both profiles): queue, negotiate
(T7), play a few hands, leave, re-queue; some escape mid-hand (H3) and some drop their stream and
reconnect (T10). Every ``--interval`` seconds one ``soak`` line: matches and hands finished, hands/s,
errors by kind, each service's RSS and open fds (``/proc``), JetStream consumer lag, live tables and
time-to-table p50/p99. At the end, once the stack has settled: the ledger total unchanged and the
wallet's audit clean, no hold open, no live table, no service restarted or dead, RSS growth since
the first interval below ``--max-rss-growth-mb``; any violation exits 1. Everything is loopback,
and every loop is bounded in time (``--minutes``, per-step timeouts) and in count.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import grpc.aio

from bench.stack_probes import (
    LIVE_TABLES,
    BenchViolation,
    ProcSample,
    consumer_lag,
    ledger_state,
    percentile,
    report_checks,
    run_bench,
    sample_services,
    scrape_gauge,
    settle,
    stack_state,
)
from duelmahjong.client.play import MatchPlan, PlayOutcome
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import ENDED_EARLY, DuelClient, QueueEnded, QueueLost, QueueStats
from duelmahjong.platform.stackfile import DEFAULT_STATE_FILE, StackState
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2, table_pb2

IN_ALL = False  # minutes long: `duel bench all` skips it
FIND_TABLE_SECONDS = 60.0  # a queue longer than this is an error (bot fill comes after 30 s)
DRIFT = 300  # prestige a bot may win or lose before a fresh guest takes its seat
PLAY_SECONDS = 300.0  # one match of a few hands; a table that takes longer is stuck
MATCHES_PER_PAIR = 10_000  # a count bound besides the time bound
# Kinds of error that are defects, not the churn a soak causes on purpose (expired queues, stale acts).
DEFECTS = ("grpc.INTERNAL", "grpc.UNKNOWN", "grpc.DATA_LOSS", "unexpected.")
# How a bot's queue entry ended (``Tally.queues``): paired (its table_ready), left (the bot stopped
# waiting: the run's deadline), ``expired.<rule>`` by a rule of the room, ``not_queued.<why>`` (no
# ticket was made: Enqueue refused or unanswered), or ``lost.<how>`` — the entry ended for none of
# these: ``duel bench chaos`` checks that none is.
PAIRED, LEFT, EXPIRED, NOT_QUEUED, LOST = "paired", "left", "expired.", "not_queued.", "lost."
# Expired reasons (matchmaking's, as players are shown them) that a room's rule gives, by rule.
ROOM_RULES = (
    ("the queue ticket expired", "ticket_time"),
    ("the multiplier negotiation timed out", "t7_timeout"),
    ("the multiplier was declined", "t7_declined"),
    ("left the pairing before the table", "opponent_left"),
)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="duel bench soak", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long bots play (default 10)")
    parser.add_argument("--pairs", type=int, default=16, help="concurrent bot pairs (default 16)")
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between lines (default 30)")
    parser.add_argument("--hands", type=int, default=4, help="most hands a bot stays for (default 4)")
    parser.add_argument("--escape-rate", type=float, default=0.1, help="matches a seat escapes (H3)")
    parser.add_argument("--drop-rate", type=float, default=0.1, help="matches a seat drops and resumes")
    parser.add_argument("--decline-rate", type=float, default=0.05, help="T7 proposals declined")
    parser.add_argument("--max-rss-growth-mb", type=float, default=64.0, help="per service (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="bots' random choices (default 0)")
    parser.add_argument(
        "--rooms",
        type=lambda text: [room for room in text.split(",") if room],
        default=[],
        help="comma-separated room ids the bots play in (default: every room matchmaking lists)",
    )
    parser.add_argument("--state-file", type=Path, default=DEFAULT_STATE_FILE, help="a running stack")
    args = parser.parse_args(list(argv))
    if args.minutes <= 0 or args.pairs < 1 or args.interval <= 0 or args.hands < 1:
        parser.error("--minutes and --interval must be positive, --pairs and --hands at least 1")
    if not all(0.0 <= rate <= 1.0 for rate in (args.escape_rate, args.drop_rate, args.decline_rate)):
        parser.error("rates are fractions between 0 and 1")
    return args


@dataclass
class Tally:
    """What the bots did, shared by every pair (one event loop: no locks)."""

    started: float = field(default_factory=time.monotonic)
    tables: set[str] = field(default_factory=set)
    hands: int = 0
    escapes: int = 0
    reconnects: int = 0
    relocations: int = 0  # reconnects that followed the table to another server
    resent_actions: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # the first message of each kind of error
    time_to_table: list[float] = field(default_factory=list)
    queues: Counter[str] = field(default_factory=Counter)  # queue entries by how they ended
    queued: int = 0  # bots whose queue entry is open now
    last_line: tuple[float, int] = (0.0, 0)  # seconds and hands at the previous interval line

    def count(self, error: BaseException) -> None:
        kind = error_kind(error)
        self.errors[kind] += 1
        detail = error.details() if isinstance(error, grpc.aio.AioRpcError) else str(error)
        self.examples.setdefault(kind, (detail or "")[:200])

    def defects(self) -> dict[str, int]:
        return {kind: n for kind, n in self.errors.items() if kind.startswith(DEFECTS)}

    def lost(self) -> dict[str, int]:
        """Queue entries that ended neither paired, nor left, nor by a room's rule."""
        return {how: n for how, n in self.queues.items() if how.startswith(LOST)}


class Pair:
    """Two bots that queue together in one room, play, leave and queue again until the deadline
    (``duel bench chaos`` plays its own way: :meth:`play`)."""

    label = "soak"

    def __init__(
        self, number: int, state: StackState, rooms: list[mm.Room], args: argparse.Namespace
    ) -> None:
        self.number, self.state, self.rooms, self.args = number, state, rooms, args
        self.random = random.Random(args.seed * 1_000_003 + number)
        self.clients: list[DuelClient] = []
        self.queue_stats: list[QueueStats] = []  # of every client this pair made (replaced ones too)
        self.sessions: dict[str, str] = {}  # player id → session token, of every client it logged in
        self.granted: list[int] = []
        self.logins = 0

    async def _client(self, seat: int) -> DuelClient:
        """The seat's client; a fresh guest replaces one that drifted more than ``DRIFT`` from its
        starting grant or cannot pay the dearest room (matchmaking pairs by prestige within a window
        that widens with waiting: far-apart bots would wait for bot fill instead of each other)."""
        need = max(room.rules.minimum_balance + room.rules.fee for room in self.rooms)
        if seat < len(self.clients):
            available = (await self.clients[seat].balance()).available
            if available >= need and abs(available - self.granted[seat]) <= DRIFT:
                return self.clients[seat]
        client = DuelClient(
            wallet=self.state.services["wallet"].grpc,
            matchmaking=self.state.target("matchmaking"),
            tls=self.state.client_tls(),
        )
        self.logins += 1
        self.queue_stats.append(client.queue_stats)
        await client.login(f"{self.label} bot {self.number}.{self.logins}")
        self.sessions[client.player_id] = client.token
        granted = (await client.balance()).available
        if seat < len(self.clients):
            await self.clients[seat].close()
            self.clients[seat], self.granted[seat] = client, granted
        else:
            self.clients.append(client)
            self.granted.append(granted)
        return client

    def plan(self) -> MatchPlan:
        rng, hands = self.random, self.random.randint(1, self.args.hands)
        escape = rng.randint(1, hands) if rng.random() < self.args.escape_rate else 0
        drop = rng.randint(3, 25) if rng.random() < self.args.drop_rate else 0
        return MatchPlan(hands=hands, escape_in_hand=escape, drop_after_actions=drop)

    async def seat(self, client: DuelClient, room: mm.Room, tally: Tally, deadline: float) -> None:
        rules = room.rules
        available = (await client.balance()).available
        carry = max(rules.carry_min, min(rules.carry_max, available - rules.fee))
        multiplier = self.random.choice((1, 2, 5, 10))
        accept = self.random.random() >= self.args.decline_rate
        queued = time.monotonic()
        updates = client.queue(room.room_id, carry)
        tally.queued += 1
        try:  # at the deadline a bot still queued leaves the queue (its stream is cancelled)
            async with asyncio.timeout(min(FIND_TABLE_SECONDS, max(1.0, deadline - queued))):
                ready = await client.follow(updates, multiplier, accept)
        except Exception as err:
            if isinstance(err, TimeoutError):  # the bot stops waiting: it leaves the queue
                await cancel_queue(client, updates.ticket_id)
            if isinstance(err, TimeoutError) and time.monotonic() >= deadline:
                tally.queues[LEFT] += 1
                return
            tally.queues[queue_outcome(err, updates.ticket_id)] += 1
            raise
        finally:
            tally.queued -= 1
        tally.queues[PAIRED] += 1
        tally.time_to_table.append(time.monotonic() - queued)
        async with asyncio.timeout(PLAY_SECONDS):
            outcome = await self.play(client, ready)
        tally.tables.add(outcome.table_id)
        if ready.seat == rules_pb2.SEAT_FIRST:  # each hand once, by the first seat's count
            tally.hands += outcome.hands_settled
        tally.escapes += outcome.escaped
        tally.reconnects += outcome.reconnects
        tally.relocations += outcome.relocations
        tally.resent_actions += outcome.resent_actions
        for rejected in outcome.rejections:
            tally.errors[
                "rejected." + table_pb2.RejectionCode.Name(rejected.code).removeprefix("REJECTION_CODE_")
            ] += 1

    async def play(self, client: DuelClient, ready: mm.TableReady) -> PlayOutcome:
        return await client.play(ready, BaselineBot(), self.plan())

    async def run(self, deadline: float, tally: Tally) -> None:
        try:
            for _ in range(MATCHES_PER_PAIR):
                if time.monotonic() >= deadline:
                    return
                room = self.random.choice(self.rooms)
                try:
                    clients = [await self._client(seat) for seat in (0, 1)]
                    results = await asyncio.gather(
                        *(self.seat(c, room, tally, deadline) for c in clients), return_exceptions=True
                    )
                except Exception as err:  # counted by kind; the pair carries on
                    results = [err]
                for result in results:
                    if isinstance(result, BaseException):
                        tally.count(result)
                if any(isinstance(r, BaseException) for r in results):
                    await asyncio.sleep(0.5)  # do not spin on a failing service
        finally:
            for client in self.clients:
                await client.close()


def chosen_rooms(listed: list[mm.Room], wanted: list[str]) -> list[mm.Room]:
    """The rooms ``--rooms`` names (every listed room when it names none)."""
    if not wanted:
        return listed
    by_id = {room.room_id: room for room in listed}
    unknown = [room_id for room_id in wanted if room_id not in by_id]
    if unknown:
        raise BenchViolation(f"matchmaking lists no room {', '.join(unknown)} (it lists {', '.join(by_id)})")
    return [by_id[room_id] for room_id in wanted]


async def cancel_queue(client: DuelClient, ticket_id: str) -> None:
    """Leave the queue (``CancelQueue``): closing the stream alone leaves the ticket waiting out the
    stream grace, open to a pairing its player never answers. Refusals (paired meanwhile, ended) and
    an unreachable matchmaking are the ticket's business, not the bot's."""
    if not ticket_id:
        return
    request = mm.CancelQueueRequest(queue_ticket_id=ticket_id)
    try:
        await client.matchmaking.CancelQueue(request, metadata=client.metadata, timeout=5.0)
    except grpc.aio.AioRpcError:
        pass


def queue_outcome(error: BaseException, ticket_id: str) -> str:
    """How a queue entry that raised ``error`` ended (``ticket_id``: its ticket, "" if none was made).

    >>> queue_outcome(QueueEnded("the queue ticket expired before a match was found"), "q-1")
    'expired.ticket_time'
    >>> queue_outcome(QueueEnded("the queue stream closed and was not followed again"), "q-1")
    'lost.stream_grace'
    >>> queue_outcome(QueueLost("could not be followed again"), "q-1"), queue_outcome(TimeoutError(), "q-1")
    ('lost.follow_gave_up', 'lost.no_table_in_time')
    """
    if isinstance(error, QueueLost):
        return LOST + "follow_gave_up"
    if isinstance(error, QueueEnded):
        reason = str(error)
        if reason == ENDED_EARLY and not ticket_id:
            return NOT_QUEUED + "ended_early"
        rule = next((rule for text, rule in ROOM_RULES if text in reason), "")
        if rule:
            return EXPIRED + rule
        if reason.startswith("the wallet refused the hold"):  # too poor is a rule; any other refusal not
            return EXPIRED + "prestige" if "prestige free" in reason else LOST + "hold_refused"
        if "was not followed again" in reason:  # the stream grace: nobody followed the ticket
            return LOST + "stream_grace"
        return LOST + "ended_otherwise"
    if not ticket_id:  # Enqueue refused (already queued, too poor) or unanswered: no entry was made
        kind = error_kind(error)
        return NOT_QUEUED + ("timeout" if kind == "timeout" else kind.removeprefix("grpc."))
    if isinstance(error, TimeoutError):  # FIND_TABLE_SECONDS: bot fill comes well before
        return LOST + "no_table_in_time"
    return LOST + error_kind(error)


def error_kind(error: BaseException) -> str:
    if isinstance(error, QueueEnded):
        return "queue_ended"
    if isinstance(error, grpc.aio.AioRpcError):
        return f"grpc.{error.code().name}"
    if isinstance(error, TimeoutError):
        return "timeout"
    return f"unexpected.{type(error).__name__}"


async def interval_line(state: StackState, tally: Tally, samples: dict[str, ProcSample | None]) -> str:
    elapsed = time.monotonic() - tally.started
    live = await asyncio.to_thread(scrape_gauge, state.services["table"].metrics, LIVE_TABLES)
    lag = await consumer_lag(state)
    rss = ",".join(f"{n}:{s.rss_mb:.0f}MB" if s else f"{n}:DEAD" for n, s in samples.items())
    fds = ",".join(f"{n}:{s.fds}" if s else f"{n}:-" for n, s in samples.items())
    errors = ",".join(f"{kind}={n}" for kind, n in sorted(tally.errors.items())) or "none"
    ttt = tally.time_to_table
    since, hands_then = tally.last_line
    tally.last_line = (elapsed, tally.hands)
    return (
        f"soak t={elapsed:.0f}s matches={len(tally.tables)} hands={tally.hands} "
        f"hands/s={(tally.hands - hands_then) / max(elapsed - since, 1e-9):.2f} "
        f"(avg {tally.hands / elapsed:.2f}) escapes={tally.escapes} reconnects={tally.reconnects} "
        f"errors={errors} rss={rss} fds={fds} lag={'?' if lag is None else lag} "
        f"live_tables={'?' if live is None else f'{live:.0f}'} "
        f"time_to_table p50={percentile(ttt, 0.5):.2f}s p99={percentile(ttt, 0.99):.2f}s"
    )


def verdicts(
    args: argparse.Namespace,
    before: tuple[int, dict[str, ProcSample | None]],
    baseline: dict[str, ProcSample | None],
    after: dict[str, ProcSample | None],
    ledger: tuple[int, int, list[str]],
    settled: tuple[int, float | None, int | None],
    tally: Tally,
) -> list[str]:
    """Every end-of-run check as a printed line; the violations are returned."""
    total_before, started = before
    total_after, holds, audit = ledger
    _, live, lag = settled
    checks = [
        (total_after == total_before, f"ledger total before {total_before} after {total_after}"),
        (not audit, "wallet audit " + ("clean" if not audit else "; ".join(audit[:5]))),
        (holds == 0, f"open holds {holds}"),
        (live == 0, f"live tables {'unknown' if live is None else f'{live:.0f}'}"),
        (tally.hands > 0, f"hands finished {tally.hands}"),
        (not tally.defects(), f"defect errors {tally.defects() or 'none'}"),
        (lag == 0, f"consumer lag at the end {lag}"),
    ]
    for name, first in started.items():
        now = after.get(name)
        same = first is not None and now is not None and now.started_at == first.started_at
        checks.append((same, f"{name} pid {'same process, alive' if same else 'RESTARTED OR DEAD'}"))
        base = baseline.get(name)
        if base is not None and now is not None:
            growth = now.rss_mb - base.rss_mb
            checks.append(
                (
                    growth <= args.max_rss_growth_mb,
                    f"{name} rss {base.rss_mb:.0f}MB -> {now.rss_mb:.0f}MB growth {growth:+.1f}MB"
                    f" (limit {args.max_rss_growth_mb:.0f}MB), fds {base.fds} -> {now.fds}",
                )
            )
    for kind, example in sorted(tally.examples.items()):
        print(f"soak error {kind} x{tally.errors[kind]}, first: {example}", flush=True)
    return report_checks("soak", checks)


async def soak(args: argparse.Namespace) -> int:
    async with stack_state(args.state_file) as (state, _stack):  # pid checks see a dead service
        if not state.database_url:
            raise BenchViolation("the stack's state names no Postgres URL: the ledger cannot be checked")
        lobby = DuelClient(
            wallet=state.services["wallet"].grpc,
            matchmaking=state.target("matchmaking"),
            tls=state.client_tls(),
        )
        async with lobby:
            await lobby.login("soak lobby")
            rooms = chosen_rooms(await lobby.rooms(), args.rooms)
        total_before, _, _ = await ledger_state(state.database_url)
        started = sample_services(state)
        tally = Tally()
        deadline = tally.started + args.minutes * 60
        pairs = [Pair(n, state, rooms, args) for n in range(args.pairs)]
        print(f"[soak] {args.pairs} pairs for {args.minutes:g} min in {len(rooms)} rooms", flush=True)
        tasks = [asyncio.create_task(pair.run(deadline, tally)) for pair in pairs]
        baseline: dict[str, ProcSample | None] = {}
        while not all(task.done() for task in tasks):
            await asyncio.wait(tasks, timeout=args.interval)
            samples = sample_services(state)
            baseline = baseline or samples  # after the first interval: caches and pools warmed up
            print(await interval_line(state, tally, samples), flush=True)
        await asyncio.gather(*tasks)
        settled = await settle(state)
        ledger = await ledger_state(state.database_url)
        violations = verdicts(
            args, (total_before, started), baseline, sample_services(state), ledger, settled, tally
        )
    return 1 if violations else 0


def main(argv: Sequence[str]) -> int:
    return run_bench("soak", soak(parse_args(argv)))
