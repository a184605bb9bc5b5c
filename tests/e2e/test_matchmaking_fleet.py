"""Matchmaking's fleet on the whole stack (two matchmaking processes, embedded NATS and Postgres), with
every replica SIGKILLed at once: mid-negotiation, with a private table waiting for its friend and a
player alone in a queue. The clients follow their tickets again by themselves once the replicas are
back; the negotiation goes on to its table, the private table's code still works, the lonely player
keeps their place, and a negotiation whose deadline passed while no replica ran is ended with its
holds released. At the end every open hold belongs to a live table and the wallet's audit is clean.

Then the owner of a room is paused (SIGSTOP) while a deadline of the room falls due: the other replica
takes the room over and acts on it; the paused one, resumed, acts on nothing its successor took."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import nats
import pytest

from duelmahjong.client.session import DuelClient
from duelmahjong.platform.db import with_database
from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import SERVICE_NAMES, StackState
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2
from services.wallet.audit import audit_ledger

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

_ROOM = {"fan_rate": 1, "fee": 2, "carry_min": 100, "carry_max": 400}
ROOMS = [
    {"room_id": "fleet-duel", "profile": "duel", "negotiation_seconds": 60, **_ROOM},
    # Its negotiation's deadline passes while every replica is down.
    {"room_id": "fleet-lapse", "profile": "duel", "negotiation_seconds": 3, **_ROOM},
    {"room_id": "fleet-private", "profile": "erren", **_ROOM},
    {"room_id": "fleet-queue", "profile": "erren", **_ROOM},
]
SETTINGS = {
    "MATCHMAKING_REPLICAS": "2",
    "MATCHMAKING_ROOMS": json.dumps(ROOMS),
    "MATCHMAKING_LEASE_SECONDS": "2",
}
REPLICAS = ("matchmaking", "matchmaking-2")
CARRY = 200
BACK_WITHIN = 30.0  # from the replicas' restart to every client's state shown again


@pytest.fixture(scope="module")
def fleet_stack() -> Iterator[tuple[Stack, StackState]]:
    """The stack ``make run`` runs, with its Stack at hand: the test kills and restarts processes."""
    data_dir = Path(tempfile.mkdtemp(prefix="duel-e2e-mmfleet-"))
    environ = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL", "TOKEN_SECRET")}
    environ = {k: v for k, v in environ.items() if not k.endswith("_ADDRESS")}
    stack = Stack(data_dir, list(SERVICE_NAMES), {**environ, **SETTINGS})
    loop = asyncio.new_event_loop()
    try:
        yield stack, loop.run_until_complete(stack.up())
    finally:
        stack.down()
        loop.close()
        shutil.rmtree(data_dir, ignore_errors=True)


class Stream:
    """A queue stream (the client library's, which follows its ticket after a break), read in the
    background."""

    def __init__(self, updates: AsyncIterator[mm.QueueUpdate]) -> None:
        self.seen: list[mm.QueueUpdate] = []
        self._new = asyncio.Event()
        self.task = asyncio.create_task(self._read(updates))

    async def _read(self, updates: AsyncIterator[mm.QueueUpdate]) -> None:
        async for update in updates:
            self.seen.append(update)
            self._new.set()

    async def next(self, kind: str, *, after: int = 0, within: float = BACK_WITHIN) -> mm.QueueUpdate:
        """The first update of ``kind`` from the ``after``-th on."""
        async with asyncio.timeout(within):
            while True:
                for update in self.seen[after:]:
                    if update.WhichOneof("kind") == kind:
                        return update
                if self.task.done():
                    self.task.result()
                    raise AssertionError(f"the stream ended without {kind}: {self.kinds()}")
                self._new.clear()
                await self._new.wait()

    def kinds(self) -> list[str]:
        return [str(update.WhichOneof("kind")) for update in self.seen]

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def _clients(state: StackState, *names: str, matchmaking: str = "") -> list[DuelClient]:
    clients = []
    for name in names:
        client = DuelClient(
            tls=state.client_tls(),
            wallet=state.services["wallet"].grpc,
            matchmaking=matchmaking or state.target("matchmaking"),
        )
        await client.login(name)
        clients.append(client)
    return clients


async def _kill_and_restart(stack: Stack, down_for: float) -> None:
    for name in REPLICAS:
        stack.signal(name, signal.SIGKILL)
    for name in REPLICAS:
        await asyncio.to_thread(stack.process(name).process.wait, 10)
    await asyncio.sleep(down_for)
    await asyncio.gather(*(stack.respawn(name) for name in REPLICAS))


async def _open_holds(state: StackState) -> dict[str, set[str]]:
    """The wallet's open holds: pairing id → players."""
    pool = await asyncpg.create_pool(with_database(state.database_url, "wallet"), min_size=1, max_size=1)
    try:
        rows = await pool.fetch("SELECT pairing_id, player_id FROM wallet.holds WHERE open")
        problems = await audit_ledger(pool)
    finally:
        await pool.close()
    assert not problems, problems
    holds: dict[str, set[str]] = {}
    for row in rows:
        holds.setdefault(str(row["pairing_id"]), set()).add(str(row["player_id"]))
    return holds


async def test_every_replica_killed_at_once_loses_no_place_no_pairing_and_strands_no_hold(
    fleet_stack: tuple[Stack, StackState],
) -> None:
    stack, state = fleet_stack
    clients = await _clients(state, "alice", "bob", "cara", "dan", "erin", "gus", "fay")
    alice, bob, cara, dan, erin, gus, fay = clients
    streams: list[Stream] = []
    try:
        duel = [Stream(c.queue("fleet-duel", CARRY)) for c in (alice, bob)]
        lapse = [Stream(c.queue("fleet-lapse", CARRY)) for c in (cara, dan)]
        private = Stream(erin.open_private("fleet-private", CARRY))
        alone = Stream(fay.queue("fleet-queue", CARRY))
        streams = [*duel, *lapse, private, alone]
        for stream in (*duel, *lapse):
            await stream.next("negotiation", within=20)  # held, awaiting the proposal
        code = (await private.next("private_code", within=20)).private_code.code
        await alone.next("position", within=20)
        pairing = (await duel[0].next("matched")).matched.pairing_id
        lapsed = (await lapse[0].next("matched")).matched.pairing_id
        seen_before = [len(stream.seen) for stream in streams]
        holds = await _open_holds(state)
        assert holds[pairing] == {alice.player_id, bob.player_id}
        assert holds[lapsed] == {cara.player_id, dan.player_id} and erin.player_id in set().union(
            *holds.values()
        )

        await _kill_and_restart(stack, down_for=4.0)  # past the lapse room's negotiation deadline

        # The negotiation goes on where it was: its state shown again to both, then to its table.
        for stream, before in zip(duel, seen_before, strict=False):
            resumed = await stream.next("negotiation", after=before)
            assert resumed.negotiation.pairing_id == pairing
            assert resumed.negotiation.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL
        first_seat = (await duel[0].next("matched")).matched.seat == rules_pb2.SEAT_FIRST
        proposer, answerer = (alice, bob) if first_seat else (bob, alice)
        await proposer.propose_multiplier(pairing, 2)
        await answerer.respond_multiplier(pairing, True)
        for stream in duel:
            assert (await stream.next("table_ready")).table_ready.pairing_id == pairing
        # The negotiation whose deadline passed while nobody ran: ended, both holds released.
        for stream in lapse:
            assert "timed out" in (await stream.next("expired")).expired.reason
        # The private table still waits for its friend, with the same code.
        assert (await private.next("private_code", after=seen_before[4])).private_code.code == code
        friend = Stream(gus.join_private(code.lower(), CARRY))
        streams.append(friend)
        for stream in (private, friend):
            await stream.next("table_ready")
        # The lonely player kept their place (first of one) and may leave the queue.
        position = (await alone.next("position", after=seen_before[5])).position
        assert (position.position, position.waiting) == (1, 1)
        ticket = (await alone.next("queued")).queued.queue_ticket_id
        await fay.matchmaking.CancelQueue(
            mm.CancelQueueRequest(queue_ticket_id=ticket), metadata=fay.metadata
        )
        await alone.next("expired")

        # Every open hold belongs to a table in play; the others were released, and those players
        # may queue again at once.
        async with asyncio.timeout(20):
            while lapsed in (holds := await _open_holds(state)):  # noqa: ASYNC110 — the ledger polled
                await asyncio.sleep(0.2)
        tables = {pairing: {alice.player_id, bob.player_id}}
        ready = (await private.next("table_ready")).table_ready
        tables[ready.pairing_id] = {erin.player_id, gus.player_id}
        assert holds == tables
        for client, room in ((cara, "fleet-lapse"), (dan, "fleet-lapse"), (fay, "fleet-queue")):
            again = Stream(client.queue(room, CARRY))
            streams.append(again)
            await again.next("queued", within=10)
        resumes = [s for c in clients for s in c.queue_stats.resume_seconds]
        print(f"state shown again after the kill in {sorted(round(s, 2) for s in resumes)} s")
    finally:
        for stream in streams:
            await stream.close()
        for client in clients:
            await client.close()


async def _owner(state: StackState, room_id: str) -> str:
    """The replica that owns ``room_id``, as the shared store says."""
    client = await nats.connect(state.nats_url, **state.nats_options())
    try:
        kv = await client.jetstream().key_value("DUEL_MATCHMAKING")
        entry = await kv.get(f"rooms.{room_id}")
        return str(json.loads(entry.value or b"{}")["replica"])
    finally:
        await client.close()


async def _released(state: StackState, pairing_id: str) -> list[str]:
    """The wallet's release transactions of a pairing's holds (one per player, or the hold leaks)."""
    pool = await asyncpg.create_pool(with_database(state.database_url, "wallet"), min_size=1, max_size=1)
    try:
        rows = await pool.fetch(
            "SELECT idempotency_key FROM wallet.transactions WHERE idempotency_key LIKE $1",
            f"release:{pairing_id}:%",
        )
    finally:
        await pool.close()
    return sorted(str(row["idempotency_key"]) for row in rows)


async def test_a_paused_owner_resumes_and_acts_on_nothing_its_successor_took(
    fleet_stack: tuple[Stack, StackState],
) -> None:
    """The owner of a room is paused (SIGSTOP) with a negotiation due during the pause: the other
    replica takes the room over and ends the negotiation; the owner, resumed, ends nothing again."""
    stack, state = fleet_stack
    owner = await _owner(state, "fleet-lapse")
    # The players reach the other replica: the paused one serves them nothing (a stream it served would
    # break at the client's keepalive and be followed there: the kill test covers following).
    other = next(name for name in REPLICAS if name != owner)
    clients = await _clients(state, "hana", "ivan", matchmaking=stack.process(other).endpoint.grpc)
    streams = [Stream(c.queue("fleet-lapse", CARRY)) for c in clients]
    try:
        pairing = ""
        for stream in streams:
            await stream.next("negotiation", within=20)
            pairing = (await stream.next("matched")).matched.pairing_id
        paused = stack.process(owner).process.pid
        os.kill(paused, signal.SIGSTOP)  # the deadline (3 s) falls due while it cannot act
        try:
            for stream in streams:
                assert "timed out" in (await stream.next("expired", within=20)).expired.reason
            assert await _owner(state, "fleet-lapse") != owner
        finally:
            os.kill(paused, signal.SIGCONT)
        await asyncio.sleep(4.0)  # the resumed replica's steps run; its stale view must not act
        for stream in streams:
            assert stream.kinds().count("expired") == 1, stream.kinds()
        assert await _released(state, pairing) == sorted(f"release:{pairing}:{c.player_id}" for c in clients)
        log = await asyncio.to_thread(Path(stack.process(owner).log_path).read_text, errors="replace")
        assert '"level": "ERROR"' not in log, log[-2000:]
    finally:
        for stream in streams:
            await stream.close()
        for client in clients:
            await client.close()
