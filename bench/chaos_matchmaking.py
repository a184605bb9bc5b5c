"""What ``duel bench chaos`` reads of matchmaking while its replicas die: the shared store watched
through the run (which replica follows each open queue ticket, every pairing's players and times, the
players' claims), the wallet's holds, and the bots' queue streams broken and followed again.

Two ways to see a player in two pairings at once, one per side of the money: the pairings in
matchmaking's store (:func:`pairing_overlaps`), and the holds in the wallet (:func:`hold_overlaps`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
import grpc
import grpc.aio
import nats
from nats.js.kv import KeyValue

from bench.stack_probes import percentile
from duelmahjong.client.session import DuelClient, QueueStats
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stackfile import StackState
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from services.matchmaking.queue import ADMISSION_SECONDS
from services.matchmaking.records import DONE, ENDED, HOLDING, PAIRINGS, PLAYERS, TICKETS
from services.matchmaking.store import BUCKET

Interval = tuple[float, float, str]  # from, to (inf: not ended), what (a pairing id)
FAILOVER_P99_SECONDS = 5.0  # a replica's kill to its queue streams' state shown again, p99


@dataclass
class StoreWatch:
    """The ``DUEL_MATCHMAKING`` bucket as a watcher of every change saw it through the run: the open
    tickets and who follows them, every pairing's last record (kept after the bucket forgets it), and
    the players' claims (``players.<player>``) there now."""

    open_tickets: dict[str, str] = field(default_factory=dict)  # ticket key → its follower process
    pairings: dict[str, dict[str, Any]] = field(default_factory=dict)  # pairing id → its last record
    made: set[str] = field(default_factory=set)  # pairings that got past HOLDING: both holds placed
    claims: dict[str, tuple[str, float]] = field(default_factory=dict)  # player → ticket id, made at
    ended: dict[str, str] = field(default_factory=dict)  # ticket id → why it ended (DONE)
    changes: int = 0
    _client: Any = None
    _watcher: Any = None
    _task: asyncio.Task[None] | None = None

    def apply(self, key: str, value: bytes | None) -> None:
        """One change of the bucket (``value`` None or empty: the key was deleted)."""
        self.changes += 1
        kind, _, rest = key.partition(".")
        record = json.loads(value) if value else None
        if kind == TICKETS:
            if record is not None and record.get("state") == DONE:
                self.ended[record["ticket_id"]] = str(record.get("reason", ""))
            if record is None or record.get("state") == DONE:
                self.open_tickets.pop(key, None)
            else:
                followed = not record.get("unfollowed_at")
                self.open_tickets[key] = str(record.get("follower", "")) if followed else ""
        elif kind == PAIRINGS and record is not None:
            pairing_id = rest.partition(".")[2]
            self.pairings[pairing_id] = record
            players = {seat["player_id"] for seat in record["seats"]}
            if record.get("state") not in (HOLDING, ENDED) or players <= set(record.get("held", ())):
                self.made.add(pairing_id)
        elif kind == PLAYERS:
            if record is None:
                self.claims.pop(rest, None)
            else:
                made = float(record.get("claimed_at") or 0)
                self.claims[rest] = (str(record.get("ticket_id", "")), made)

    def ticket_end(self, ticket_id: str) -> str:
        """How a ticket ended as the watcher saw it, for a report."""
        if ticket_id in self.ended:
            return f"ended: {self.ended[ticket_id]}"
        if any(key.endswith("." + ticket_id) for key in self.open_tickets):
            return "open"
        return "never stored"

    def followers(self) -> Counter[str]:
        """Open queue tickets by the replica whose process follows them (``matchmaking-2``…)."""
        return Counter(f.partition(":")[0] for f in self.open_tickets.values() if f)

    def intervals(self) -> dict[str, list[Interval]]:
        """Per player, the time of each pairing made (created to ended, on the replicas' clocks)."""
        by_player: dict[str, list[Interval]] = {}
        for pairing_id in self.made:
            record = self.pairings[pairing_id]
            end = float(record["ended_at"]) if record.get("state") == ENDED else math.inf
            for seat in record["seats"]:
                interval = (float(record["created_at"]), end, pairing_id)
                by_player.setdefault(seat["player_id"], []).append(interval)
        return by_player

    async def start(self, state: StackState) -> None:
        """Watch the store as the ``tools`` identity (it reads matchmaking's bucket, writes nothing)."""
        self._client = await nats.connect(
            state.nats_url.split(","), connect_timeout=5, **state.nats_options()
        )
        kv: KeyValue = await self._client.jetstream().key_value(BUCKET)
        self._watcher = await kv.watchall()
        self._task = asyncio.create_task(self._follow(), name="chaos-store-watch")

    async def _follow(self) -> None:
        async for entry in self._watcher:
            if entry is not None:
                deleted = entry.operation in ("DEL", "PURGE")
                self.apply(entry.key, None if deleted else entry.value)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._watcher is not None:
            await self._watcher.stop()
        if self._client is not None:
            await self._client.close()


def overlaps(by_player: dict[str, list[Interval]]) -> list[str]:
    """Each player's intervals that overlap another of theirs: ``player: a [from, to] and b [from …]``.

    >>> overlaps({"p": [(0.0, 5.0, "a"), (5.5, 9.0, "b")], "q": [(0.0, 5.0, "a"), (4.0, math.inf, "c")]})
    ['q: a until 5.0 and c from 4.0']
    """
    found = []
    for player, intervals in sorted(by_player.items()):
        ordered = sorted(intervals)
        for (_, end, first), (start, _, second) in itertools.pairwise(ordered):
            if start < end:
                found.append(f"{player}: {first} until {end:.1f} and {second} from {start:.1f}")
    return found


def pairing_overlaps(watch: StoreWatch) -> list[str]:
    """Players in two pairings at once by matchmaking's own records (pairings made: both holds)."""
    return overlaps(watch.intervals())


async def read_holds(admin_url: str) -> list[tuple[str, str, datetime, datetime | None]]:
    """Every hold the wallet ever placed: pairing, player, placed at, released at (None: open)."""
    pool = await asyncpg.create_pool(with_database(admin_url, "wallet"), min_size=1, max_size=1)
    try:
        rows = await pool.fetch("SELECT pairing_id, player_id, created_at, released_at FROM wallet.holds")
    finally:
        await pool.close()
    return [(r["pairing_id"], r["player_id"], r["created_at"], r["released_at"]) for r in rows]


def hold_overlaps(holds: Iterable[tuple[str, str, datetime, datetime | None]]) -> list[str]:
    """Players whose holds of two pairings were open at once (the wallet's side of a double pairing)."""
    by_player: dict[str, list[Interval]] = {}
    for pairing_id, player_id, created, released in holds:
        end = released.timestamp() if released is not None else math.inf
        by_player.setdefault(player_id, []).append((created.timestamp(), end, pairing_id))
    return overlaps(by_player)


async def locked_out(
    watch: StoreWatch,
    sessions: dict[str, str],
    wallet: str,
    matchmaking: str,
    room: mm.Room,
    tls: ClientTls,
) -> tuple[list[str], int]:
    """The players matchmaking still claims at the end of a run, once every bot stopped: each bot
    among them queues again (and leaves) — a claim nothing holds any more (its replica died) is taken
    over by the player's next admission, at once or, for an admission its replica died in, once
    :data:`ADMISSION_SECONDS` passed since the claim (waited for). The players still refused, with
    how their claim's ticket ended, and how many claims were left."""
    claims = dict(watch.claims)
    refused = []
    for player, (ticket, made) in sorted(claims.items()):
        token = sessions.get(player)
        why = f"{player} ({ticket}: {watch.ticket_end(ticket)})"
        if token is None:  # a house bot or the lobby: nobody to queue as
            refused.append(why + " not a bot of the run")
            continue
        client = DuelClient(wallet=wallet, matchmaking=matchmaking, tls=tls)
        client.use_session(player, token)
        try:
            until = max(time.time() + 1, made + ADMISSION_SECONDS + 5)
            if not await _queue_again(client, room, until):
                refused.append(why)
        finally:
            await client.close()
    return refused, len(claims)


async def _queue_again(client: DuelClient, room: mm.Room, until: float) -> bool:
    """Queue once (and cancel at once): True once admitted, False if refused until ``until``."""
    while True:
        updates = client.queue(room.room_id, room.rules.carry_min)
        try:
            async for update in updates:
                if update.HasField("queued"):
                    cancel = mm.CancelQueueRequest(queue_ticket_id=updates.ticket_id)
                    await client.matchmaking.CancelQueue(cancel, metadata=client.metadata)
                    return True
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.FAILED_PRECONDITION or time.time() >= until:
                return False
        finally:
            await updates.aclose()
        await asyncio.sleep(1.0)


@dataclass
class FailoverMark:
    """The bots' queue stream counts when a matchmaking fault was injected."""

    kind: str
    resumed: dict[int, int]  # id(QueueStats) → resumes recorded before the fault
    broken: dict[int, int]  # id(QueueStats) → breaks before the fault


@dataclass
class Failover:
    """Queue streams broken by each matchmaking fault and the time to the state shown again
    (``QueueStats.resume_seconds``: from the break the client saw to the first update of the stream
    that followed it). Table faults break no queue stream, so what follows a matchmaking fault, up to
    the next one, is its doing."""

    stats: Callable[[], Sequence[QueueStats]]
    marks: list[FailoverMark] = field(default_factory=list)

    def mark(self, kind: str) -> None:
        every = self.stats()
        resumed = {id(stats): len(stats.resume_seconds) for stats in every}
        self.marks.append(FailoverMark(kind, resumed, {id(stats): stats.breaks for stats in every}))

    def of(self, kind: str) -> tuple[int, list[float]]:
        """Streams broken by the faults of ``kind``, and the seconds each took to show its state again."""
        broken, seconds = 0, []
        every = self.stats()
        for number, mark in enumerate(self.marks):
            following = self.marks[number + 1] if number + 1 < len(self.marks) else None
            if mark.kind != kind:
                continue
            for stats in every:
                key = id(stats)
                resumed_to = following.resumed.get(key, 0) if following else len(stats.resume_seconds)
                broken_to = following.broken.get(key, 0) if following else stats.breaks
                seconds += stats.resume_seconds[mark.resumed.get(key, 0) : resumed_to]
                broken += broken_to - mark.broken.get(key, 0)
        return broken, seconds


@dataclass(frozen=True)
class Findings:
    """What the run did to matchmaking's players, read at its end."""

    queues: Counter[str]  # the bots' queue entries by how they ended (bench.soak.queue_outcome)
    lost: dict[str, int]  # of those, the lost ones
    pairings_made: int
    pairing_overlaps: list[str]
    holds: int
    hold_overlaps: list[str]
    locked_out: list[str]  # bots still refused a queue at the end (bench.chaos_matchmaking.locked_out)
    claims_left: int  # players still claimed once every bot stopped
    kills: int  # matchmaking replicas killed
    killed: tuple[int, list[float]]  # queue streams their kills broke, seconds to each shown again
    drained: tuple[int, list[float]]  # the same for SIGTERM

    def lines(self) -> list[str]:
        entries = sum(self.queues.values())
        ends = ", ".join(f"{how}={n}" for how, n in self.queues.most_common())
        return [
            f"chaos queue entries {entries}: {ends or 'none'}",
            failover_line("kill", *self.killed),
            failover_line("term", *self.drained),
        ]

    def checks(self) -> list[tuple[bool, str]]:
        entries = sum(self.queues.values())
        lost = ", ".join(f"{how}={n}" for how, n in sorted(self.lost.items()))
        broken, seconds = self.killed
        p99 = percentile(seconds, 0.99)
        return [
            (not self.lost, f"tickets lost {sum(self.lost.values())} of {entries} queue entries {lost}"),
            (
                not self.pairing_overlaps,
                f"players in two pairings at once {len(self.pairing_overlaps)} by matchmaking's records "
                f"({self.pairings_made} pairings made) " + "; ".join(self.pairing_overlaps[:3]),
            ),
            (
                not self.hold_overlaps,
                f"players holding for two pairings at once {len(self.hold_overlaps)} by the wallet's holds "
                f"({self.holds} holds) " + "; ".join(self.hold_overlaps[:3]),
            ),
            (
                p99 <= FAILOVER_P99_SECONDS,
                f"queue streams shown again after a matchmaking kill p99={p99:.2f}s "
                f"(limit {FAILOVER_P99_SECONDS:g}s; {len(seconds)} of {broken} broken by {self.kills} kills)",
            ),
            (
                not self.locked_out,
                f"players locked out of the queues {len(self.locked_out)} ({self.claims_left} still claimed "
                "at the end, each queued again) " + ", ".join(self.locked_out[:5]),
            ),
        ]


def failover_line(kind: str, broken: int, seconds: list[float]) -> str:
    """``chaos queue failover after <kind>``: streams broken, shown again, and how soon.

    >>> failover_line("kill", 3, [0.2, 0.4, 1.5])
    'chaos queue failover after kill: 3 streams broken, 3 shown again p50=0.40s p99=1.50s max=1.50s'
    """
    return (
        f"chaos queue failover after {kind}: {broken} streams broken, {len(seconds)} shown again "
        f"p50={percentile(seconds, 0.5):.2f}s p99={percentile(seconds, 0.99):.2f}s "
        f"max={max(seconds, default=0):.2f}s"
    )
