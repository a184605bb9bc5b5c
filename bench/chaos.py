"""``duel bench chaos`` (``make chaos``): bots play while table servers and matchmaking replicas are
killed and drained.

Always starts a stack of its own (embedded NATS and Postgres) with three table servers
(``TABLE_SERVERS=3``) and two matchmaking replicas (``MATCHMAKING_REPLICAS=2``), so it may kill them;
it stops it at the end. ``--pairs`` bot pairs play matches through matchmaking in one duel and one
erren room, as ``duel bench soak``'s pairs do, every seat recording what it was shown and what it chose
(:mod:`bench.table_logs`). Every ``--every`` seconds (random in 30..60 by default) one process of the
``--targets`` (``table,matchmaking``: the targets take turns) gets a fault of ``--kinds`` (each
target's faults take them in turn, ``kill`` first): SIGKILL, then started again after ``--pause``
seconds, or SIGTERM (a table server hands its tables to the others, a replica its rooms), then started
again. One fault at a time, never the last running process of its kind. The table server is picked at
random; the matchmaking replica is the one following the most open queue tickets (ties at random),
picked once bots are queued (waiting up to 10 s), so its fault breaks queue streams.

At the end, once the stack has settled: hands played, faults by kind, tables adopted (the servers'
``table adopted`` log lines) and the orphans' adoption latency p50/p99, reconnects and relocations
(the bots'), the bots' queue entries by how they ended, the queue streams each matchmaking fault broke
and the time to the state shown again p50/p99, then one ``chaos check`` line per goal: no hand voided,
no acknowledged action lost, no duplicate application (all checked against the write-ahead logs read
back from JetStream), no ticket lost, no player in two pairings at once (matchmaking's records and the
wallet's holds), queue streams back within 5 s (p99) of a replica's kill, no player left claimed, the
ledger total unchanged and the wallet's audit clean, no hold open, no live table. Any violation exits
1. Loopback only; bounded in time (``--minutes``, per-step timeouts) and in count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from bench.chaos_matchmaking import (
    Failover,
    StoreWatch,
    hold_overlaps,
    locked_out,
    pairing_overlaps,
    read_holds,
)
from bench.chaos_matchmaking import Findings as QueueFindings
from bench.soak import Pair, Tally
from bench.stack_probes import (
    consumer_lags,
    ledger_state,
    live_tables,
    percentile,
    report_checks,
    run_bench,
    settle,
    stack_state,
    table_servers,
)
from bench.table_logs import Findings, RecordingPolicy, SeatRecord, examine, read_table_logs
from duelmahjong.client.play import PlayOutcome
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import matchmaking_pb2 as mm

IN_ALL = False  # minutes long: `duel bench all` skips it
# Three table servers; they announce often and matchmaking drops a silent one soon, so new tables
# go to the live servers while one is down (leases and adoption keep their defaults). Two matchmaking
# replicas (leases, stream grace and the clients' follow keep their defaults).
SETTINGS = {
    "TABLE_SERVERS": "3",
    "MATCHMAKING_REPLICAS": "2",
    "ANNOUNCE_SECONDS": "0.5",
    "MATCHMAKING_SERVER_TTL_SECONDS": "3",
}
EXIT_SECONDS = 60.0  # a SIGTERMed server hands its tables off and exits within this, or it is a fault
MAX_FAULTS = 1000  # a count bound besides the time bound
KINDS = ("kill", "term")
TARGETS = ("table", "matchmaking")
QUEUED_WAIT_SECONDS = 10.0  # a matchmaking fault waits this long at most for bots in a queue
CLAIMS_SETTLE_SECONDS = 20.0  # after the run: the stream grace (10 s) ends the tickets left behind


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="duel bench chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long bots play (default 10)")
    parser.add_argument("--pairs", type=int, default=8, help="concurrent bot pairs (default 8)")
    parser.add_argument("--every", default="30..60", help="seconds between faults: N or LOW..HIGH")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds a killed server stays down")
    parser.add_argument("--kinds", default="kill,term", help="faults to take in turn (default kill,term)")
    parser.add_argument(
        "--targets",
        default="table,matchmaking",
        help="processes to fault, taking turns in this order (default table,matchmaking)",
    )
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between lines (default 30)")
    parser.add_argument("--hands", type=int, default=4, help="most hands a bot stays for (default 4)")
    parser.add_argument("--escape-rate", type=float, default=0.05, help="matches a seat escapes (H3)")
    parser.add_argument("--seed", type=int, default=0, help="faults' and bots' random choices")
    args = parser.parse_args(list(argv))
    try:
        low, _, high = args.every.partition("..")
        args.every_range = (float(low), float(high or low))
    except ValueError:
        parser.error(f"--every {args.every!r}: seconds, N or LOW..HIGH")
    args.kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    if not args.kinds or set(args.kinds) - set(KINDS):
        parser.error(f"--kinds: some of {', '.join(KINDS)}")
    args.targets = [target.strip() for target in args.targets.split(",") if target.strip()]
    if not args.targets or set(args.targets) - set(TARGETS) or len(set(args.targets)) < len(args.targets):
        parser.error(f"--targets: some of {', '.join(TARGETS)}, each once")
    low, high = args.every_range
    if args.minutes <= 0 or args.pairs < 1 or args.interval <= 0 or args.hands < 1 or args.pause < 0:
        parser.error("--minutes and --interval must be positive, --pairs and --hands at least 1")
    if not 0 < low <= high or not 0.0 <= args.escape_rate <= 1.0:
        parser.error("--every must be positive, LOW <= HIGH; --escape-rate a fraction")
    args.drop_rate = args.decline_rate = 0.0  # the faults break the streams; no deliberate drops
    return args


class ChaosPair(Pair):
    """A soak pair whose seats record what they were shown and chose."""

    label = "chaos"

    def __init__(
        self,
        number: int,
        state: StackState,
        rooms: list[mm.Room],
        args: argparse.Namespace,
        seats: list[SeatRecord],
    ) -> None:
        super().__init__(number, state, rooms, args)
        self.seats = seats

    async def play(self, client: DuelClient, ready: mm.TableReady) -> PlayOutcome:
        record = SeatRecord(ready.table_id, ready.seat)
        self.seats.append(record)
        return await client.play(
            ready, RecordingPolicy(BaselineBot(), record), self.plan(), watch=record.watch
        )


class Faults:
    """One fault at a time until the deadline: the targets take turns, each target's faults take the
    kinds in turn; never on the last running process of its kind."""

    def __init__(
        self,
        stack: Stack,
        state: StackState,
        args: argparse.Namespace,
        tally: Tally,
        watch: StoreWatch,
        failover: Failover,
    ) -> None:
        self.stack, self.state, self.args = stack, state, args
        self.tally, self.watch, self.failover = tally, watch, failover
        self.random = random.Random(args.seed)
        self.done: Counter[str] = Counter()  # "<kind> <target>" → faults injected
        self.at: list[float] = []  # when each table fault was injected (wall clock: the logs' clock)
        self.problems: list[str] = []
        self.turns = 0
        self.turns_of: Counter[str] = Counter()

    async def run(self, started: float, deadline: float) -> None:
        for _ in range(MAX_FAULTS):
            wait = self.random.uniform(*self.args.every_range)
            if time.monotonic() + wait >= deadline:
                return
            await asyncio.sleep(wait)
            await self.inject(started, deadline)

    def running(self, target: str) -> list[str]:
        names = self.state.instances(target)
        return [name for name in names if self.stack.process(name).process.poll() is None]

    async def inject(self, started: float, deadline: float) -> None:
        target = self.args.targets[self.turns % len(self.args.targets)]
        self.turns += 1
        kind = self.args.kinds[self.turns_of[target] % len(self.args.kinds)]
        self.turns_of[target] += 1
        if len(self.running(target)) < 2:  # never the last one: its work would have nowhere to go
            self.problems.append(f"only {self.running(target)} running: no fault injected")
            return
        queued = ""
        if target == "matchmaking":
            # Once bots are queued, on the replica that follows most of their tickets: the fault breaks
            # queue streams, whose failover is measured.
            for _ in range(int(QUEUED_WAIT_SECONDS * 100)):
                if sum(self.watch.followers().values()) >= 2 or time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0.01)
            following = self.watch.followers()
            running = self.running(target)
            most = max(following.get(name, 0) for name in running)
            name = self.random.choice([n for n in running if following.get(n, 0) == most])
            queued = f", {self.tally.queued} bots queued, {following.get(name, 0)} tickets followed there"
            self.failover.mark(kind)
        else:
            name = self.random.choice(self.running(target))
            self.at.append(time.time())
        process = self.stack.process(name).process
        down = time.monotonic()
        self.stack.signal(name, signal.SIGKILL if kind == "kill" else signal.SIGTERM)
        for _ in range(int(EXIT_SECONDS * 10)):
            if process.poll() is not None:
                break
            await asyncio.sleep(0.1)
        else:
            self.problems.append(f"{name} did not exit within {EXIT_SECONDS:.0f}s of SIG{kind.upper()}")
            process.kill()
            await asyncio.to_thread(process.wait, 10)
        exited = time.monotonic() - down
        if kind == "kill":
            await asyncio.sleep(self.args.pause)
        respawned = await self.stack.respawn(name)
        self.state.services[name] = respawned.endpoint  # a new pid; the same ports
        self.done[f"{kind} {target}"] += 1
        print(
            f"chaos fault t={down - started:.0f}s {kind} {name}: exited in {exited:.1f}s "
            f"(code {process.returncode}), serving again after {time.monotonic() - down:.1f}s{queued}",
            flush=True,
        )


def adoptions(logs_dir: Path) -> list[dict[str, object]]:
    """The table servers' ``table adopted`` log lines (every incarnation writes to its file)."""
    found = []
    for path in sorted(logs_dir.glob("table*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if '"table adopted"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "table adopted":
                found.append(entry)
    return found


async def settled_hands(admin_url: str) -> set[str]:
    """Hands the wallet settled: an applied ``hand:<hand_id>`` or ``escape:<hand_id>`` transaction."""
    pool = await asyncpg.create_pool(with_database(admin_url, "wallet"), min_size=1, max_size=1)
    try:
        rows = await pool.fetch(
            "SELECT idempotency_key FROM wallet.transactions WHERE status = 'applied'"
            " AND (idempotency_key LIKE 'hand:%' OR idempotency_key LIKE 'escape:%')"
        )
    finally:
        await pool.close()
    return {str(row["idempotency_key"]).split(":", 1)[1] for row in rows}


def adoption_latencies(adopted: list[dict[str, object]], faults: list[float]) -> list[float]:
    """Seconds from the fault that orphaned each table to its ``table adopted`` line (orphans only):
    the servers' own measure starts at the owner's last renewal *they* saw, which a server adopting
    its predecessor's tables never saw.

    >>> adoption_latencies([{"how": "orphan", "ts": "2026-01-01T00:00:07.500Z"}], [1767225600.0])
    [7.5]
    """
    latencies = []
    for entry in adopted:
        if entry.get("how") != "orphan":
            continue
        stamp = datetime.strptime(str(entry["ts"]), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        before = [at for at in faults if at <= stamp]
        if before:
            latencies.append(round(stamp - max(before), 3))
    return latencies


def summary(tally: Tally, faults: Faults, adopted: list[dict[str, object]], settled: set[str]) -> list[str]:
    latencies = adoption_latencies(adopted, faults.at)
    how = Counter(str(entry.get("how")) for entry in adopted)
    kinds = ", ".join(f"{what}={n}" for what, n in sorted(faults.done.items())) or "none"
    return [
        f"chaos hands played {len(settled)} (settled by the wallet), matches {len(tally.tables)}, "
        f"faults {sum(faults.done.values())} ({kinds})",
        f"chaos tables adopted {len(adopted)} ("
        + ", ".join(f"{k}={n}" for k, n in sorted(how.items()))
        + f") adoption latency p50={percentile(latencies, 0.5):.2f}s p99={percentile(latencies, 0.99):.2f}s"
        f" (fault to served again, {len(latencies)} orphans)",
        f"chaos reconnects {tally.reconnects} relocations {tally.relocations} "
        f"resent actions {tally.resent_actions}",
    ]


def verdicts(
    tally: Tally,
    faults: Faults,
    findings: Findings,
    settled: set[str],
    ledger: tuple[int, tuple[int, int, list[str]]],
    end: tuple[int, float | None, int | None],
    queues: QueueFindings,
    end_lags: dict[str, tuple[int, bool]] | None = None,
) -> list[str]:
    total_before, (total_after, holds, audit) = ledger
    _, live, lag = end
    left = {name: n for name, (n, durable) in (end_lags or {}).items() if n and not durable}
    print(
        f"chaos ephemeral consumers with messages pending {len(left)} ({sum(left.values())} messages)"
        " — watchers of stopped processes the server has not removed",
        flush=True,
    )
    voided = findings.voided(settled)
    checks = [
        (not voided, f"hands voided {len(voided)} of {len(findings.hands_begun)} begun {voided[:5] or ''}"),
        (
            not findings.lost,
            f"acknowledged actions lost {len(findings.lost)} ({findings.acknowledged} acknowledged "
            f"actions and {findings.events_checked} shown events checked against the logs) "
            + "; ".join(findings.lost[:5]),
        ),
        (
            not findings.duplicates,
            f"duplicate applications {len(findings.duplicates)} " + "; ".join(findings.duplicates[:5]),
        ),
        (not findings.gaps, f"log gaps {len(findings.gaps)} " + "; ".join(findings.gaps[:5])),
        *queues.checks(),
        (total_after == total_before, f"ledger total before {total_before} after {total_after}"),
        (not audit, "wallet audit " + ("clean" if not audit else "; ".join(audit[:5]))),
        (holds == 0, f"open holds {holds}"),
        (live == 0, f"live tables {'unknown' if live is None else f'{live:.0f}'}"),
        (lag == 0, f"consumer lag at the end {lag}"),
        (len(settled) > 0, f"hands finished {len(settled)}"),
        (
            sum(faults.done.values()) > 0 and not faults.problems,
            f"faults injected {sum(faults.done.values())} "
            + ("; ".join(faults.problems[:3]) if faults.problems else "as planned"),
        ),
        (not tally.defects(), f"defect errors {tally.defects() or 'none'}"),
    ]
    for kind, example in sorted(tally.examples.items()):
        print(f"chaos error {kind} x{tally.errors[kind]}, first: {example}", flush=True)
    return report_checks("chaos", checks)


async def chaos(args: argparse.Namespace) -> int:
    async with stack_state(None, settings=SETTINGS, label="chaos") as (state, stack):
        assert stack is not None  # always a stack of its own: it kills its servers
        lobby = DuelClient(
            wallet=state.services["wallet"].grpc,
            matchmaking=state.target("matchmaking"),
            tls=state.client_tls(),
        )
        async with lobby:
            await lobby.login("chaos lobby")
            rooms = await lobby.rooms()
        by_profile = {}
        for room in sorted(rooms, key=lambda r: r.rules.fee):
            by_profile.setdefault(room.rules.profile, room)
        rooms = list(by_profile.values())
        total_before, _, _ = await ledger_state(state.database_url)
        tally, seats = Tally(), []
        deadline = tally.started + args.minutes * 60
        pairs = [ChaosPair(n, state, rooms, args, seats) for n in range(args.pairs)]
        print(
            f"[chaos] {args.pairs} pairs for {args.minutes:g} min in rooms "
            f"{', '.join(r.room_id for r in rooms)}; {len(table_servers(state))} table servers, "
            f"{len(state.instances('matchmaking'))} matchmaking replicas, a fault every {args.every}s "
            f"on {', '.join(args.targets)} in turn",
            flush=True,
        )
        watch = StoreWatch()
        await watch.start(state)
        failover = Failover(lambda: [stats for pair in pairs for stats in pair.queue_stats])
        faults = Faults(stack, state, args, tally, watch, failover)
        tasks = [asyncio.create_task(pair.run(deadline, tally)) for pair in pairs]
        fault_task = asyncio.create_task(faults.run(tally.started, deadline))
        try:
            while not all(task.done() for task in tasks):
                await asyncio.wait(tasks, timeout=args.interval)
                live = await asyncio.to_thread(live_tables, state)
                print(
                    f"chaos t={time.monotonic() - tally.started:.0f}s matches={len(tally.tables)} "
                    f"hands={tally.hands} faults={sum(faults.done.values())} reconnects={tally.reconnects} "
                    f"relocations={tally.relocations} queue_breaks={sum(s.breaks for s in failover.stats())} "
                    f"live_tables={'?' if live is None else f'{live:.0f}'}",
                    flush=True,
                )
            await asyncio.gather(*tasks)
            await fault_task
            end = await settle(state)
            locked, claims_left = await players_locked_out(state, watch, pairs, rooms[0])
        finally:
            await watch.stop()
        ledger = await ledger_state(state.database_url)
        findings = examine(await read_table_logs(state), seats)
        settled = await settled_hands(state.database_url)
        holds = await read_holds(state.database_url)
        queues = QueueFindings(
            queues=tally.queues,
            lost=tally.lost(),
            pairings_made=len(watch.made),
            pairing_overlaps=pairing_overlaps(watch),
            holds=len(holds),
            hold_overlaps=hold_overlaps(holds),
            locked_out=locked,
            claims_left=claims_left,
            kills=faults.done["kill matchmaking"],
            killed=failover.of("kill"),
            drained=failover.of("term"),
        )
        for line in [*summary(tally, faults, adoptions(Path(state.logs_dir)), settled), *queues.lines()]:
            print(line, flush=True)
        lags = await consumer_lags(state)
        violations = verdicts(tally, faults, findings, settled, (total_before, ledger), end, queues, lags)
    return 1 if violations else 0


async def players_locked_out(
    state: StackState, watch: StoreWatch, pairs: list[ChaosPair], room: mm.Room
) -> tuple[list[str], int]:
    """Once every bot stopped: the tickets still open end (the stream grace; waited for, bounded),
    then every player still claimed is queued again (:func:`locked_out`)."""
    for _ in range(int(CLAIMS_SETTLE_SECONDS * 2)):
        if all(watch.ticket_end(ticket) != "open" for ticket, _ in watch.claims.values()):
            break
        await asyncio.sleep(0.5)
    sessions = {player: token for pair in pairs for player, token in pair.sessions.items()}
    wallet, matchmaking = state.services["wallet"].grpc, state.target("matchmaking")
    return await locked_out(watch, sessions, wallet, matchmaking, room, state.client_tls())


def main(argv: Sequence[str]) -> int:
    return run_bench("chaos", chaos(parse_args(argv)))
