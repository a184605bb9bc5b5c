"""Matchmaking as a fleet on real NATS, with the real wallet behind it: two replicas share one store,
players queued on either pair with each other, rooms are split between the replicas and taken over
when one stops, and a stream that broke is followed again (FollowQueue) on the other replica, from
the entry's state as it is now. (Replicas killed with SIGKILL: tests/e2e/test_matchmaking_fleet.py.)"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio
import nats
import pytest
import pytest_asyncio

from duelmahjong.client.session import DuelClient
from duelmahjong.platform.bus import connection_options
from duelmahjong.platform.service import ServiceRuntime, serve
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.main import SPEC as MATCHMAKING
from services.wallet.config import WalletConfig
from services.wallet.main import SPEC as WALLET

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ROOMS = [
    {"room_id": f"duel-{n}", "profile": "duel", "fan_rate": 10, "fee": 5, "carry_min": 100, "carry_max": 800}
    for n in range(4)
]
FAST = {
    "MATCHMAKING_LEASE_SECONDS": "2.0",
    "MATCHMAKING_STREAM_GRACE_SECONDS": "5",
    "MATCHMAKING_TICK_SECONDS": "0.05",
}


async def _next(updates: AsyncIterator[mm.QueueUpdate], kind: str, within: float = 10.0) -> mm.QueueUpdate:
    async with asyncio.timeout(within):
        async for update in updates:
            if update.WhichOneof("kind") == kind:
                return update
    raise AssertionError(f"the stream ended before a {kind} update")


def _gauge(replica: Replica, name: str) -> float:
    url = f"http://127.0.0.1:{replica.runtime.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} is not exported")


async def _until(check: Callable[[], bool], within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not check():  # noqa: ASYNC110 — a metrics page polled, nothing to wait on
            await asyncio.sleep(0.05)


class Replica:
    """One matchmaking replica of the test's fleet, stopped by the test or at its end."""

    def __init__(self, runtime: ServiceRuntime[Any], stop: asyncio.Event, task: asyncio.Task[bool]) -> None:
        self.runtime, self._stop, self._task = runtime, stop, task

    @property
    def address(self) -> str:
        return self.runtime.server.address

    async def stop(self) -> None:
        self._stop.set()
        await self._task


@pytest_asyncio.fixture
async def fleet(
    start_service: Any,
    service_env: dict[str, str],
    wallet_database_url: str,
    unique_name: Callable[[str], str],
) -> AsyncIterator[tuple[str, Replica, Replica]]:
    """The wallet's address and two matchmaking replicas sharing the test's store."""
    wallet_env = {
        **service_env,
        "DATABASE_URL": wallet_database_url,
        "WALLET_EVENT_NAMESPACE": unique_name("w").lower(),
    }
    wallet = await start_service(WALLET, WalletConfig.from_env(wallet_env))
    replicas = []
    for name in ("mm-a", "mm-b"):
        env = {
            **service_env,
            **FAST,
            "WALLET_ADDRESS": wallet.server.address,
            "MATCHMAKING_ROOMS": json.dumps(ROOMS),
            "MATCHMAKING_REPLICA_ID": name,
        }
        stop = asyncio.Event()
        ready: asyncio.Future[ServiceRuntime[Any]] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(
            serve(MatchmakingConfig.from_env(env), MATCHMAKING, stop=stop, on_ready=ready.set_result)
        )
        replicas.append(Replica(await asyncio.wait_for(ready, 30), stop, task))
    yield wallet.server.address, replicas[0], replicas[1]
    for replica in replicas:
        await replica.stop()


def _reading(updates: AsyncIterator[mm.QueueUpdate]) -> AsyncIterator[mm.QueueUpdate]:
    """The stream read from now on, in the background (a gRPC stream starts when first read)."""
    queue: asyncio.Queue[mm.QueueUpdate | None] = asyncio.Queue()

    async def read() -> None:
        try:
            async for update in updates:
                queue.put_nowait(update)
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(read())

    async def replay() -> AsyncIterator[mm.QueueUpdate]:
        while (update := await queue.get()) is not None:
            yield update
        if task.done() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    _READERS.add(task)
    return replay()


_READERS: set[asyncio.Task[None]] = set()


async def _players(
    wallet: str, matchmaking: list[str], names: list[str], client_tls: ClientTls
) -> list[DuelClient]:
    clients = []
    for name, address in zip(names, matchmaking, strict=True):
        client = DuelClient(tls=client_tls, wallet=wallet, matchmaking=address)
        await client.login(name)
        clients.append(client)
    return clients


async def test_players_on_two_replicas_pair_with_each_other_and_the_rooms_are_split(
    fleet: tuple[str, Replica, Replica],
    client_tls: ClientTls,
) -> None:
    wallet, first, second = fleet
    await _until(lambda: _gauge(first, "duel_matchmaking_rooms_owned") == 2)
    await _until(lambda: _gauge(second, "duel_matchmaking_rooms_owned") == 2)
    players = await _players(
        wallet, [first.address, second.address] * 4, [f"p{n}" for n in range(8)], client_tls
    )
    try:
        streams = [_reading(player.queue(f"duel-{n // 2}", 200)) for n, player in enumerate(players)]
        matched = [(await _next(stream, "matched")).matched for stream in streams]
        for n in range(0, 8, 2):  # each room's two players, one per replica, paired together
            assert matched[n].pairing_id == matched[n + 1].pairing_id
            assert {matched[n].opponent_player_id, matched[n + 1].opponent_player_id} == {
                players[n].player_id,
                players[n + 1].player_id,
            }
        for stream in streams:
            assert (await _next(stream, "negotiation")).negotiation.state == (
                mm.NEGOTIATION_STATE_AWAITING_PROPOSAL
            )
    finally:
        for player in players:
            await player.close()


async def test_a_stopped_replica_s_rooms_are_taken_over_and_its_streams_followed_on_the_other(
    fleet: tuple[str, Replica, Replica],
    client_tls: ClientTls,
) -> None:
    wallet, first, second = fleet
    await _until(lambda: _gauge(first, "duel_matchmaking_rooms_owned") == 2)
    await _until(lambda: _gauge(second, "duel_matchmaking_rooms_owned") == 2)
    both = f"ipv4:{first.address},{second.address}"
    alice, bob, carol = await _players(wallet, [both] * 3, ["alice", "bob", "carol"], client_tls)
    try:
        waiting = _reading(alice.queue("duel-0", 200))
        ticket = (await _next(waiting, "queued")).queued.queue_ticket_id
        await _next(waiting, "position")
        # The replica serving alice's stream stops: the stream breaks, its rooms are given back at once,
        # and alice's client follows her ticket on the other replica by itself.
        serving, other = (first, second) if await _follower(first, ticket) == "mm-a" else (second, first)
        await serving.stop()
        await _until(lambda: _gauge(other, "duel_matchmaking_rooms_owned") == 4)
        again = (await _next(waiting, "queued")).queued
        assert again.queue_ticket_id == ticket  # the state now: her ticket, then her place
        position = (await _next(waiting, "position")).position
        assert (position.position, position.waiting) == (1, 1)
        assert (alice.queue_stats.breaks, alice.queue_stats.resumes) == (1, 1)
        joined = _reading(carol.queue("duel-0", 200))
        matched = (await _next(waiting, "matched")).matched
        assert matched.opponent_player_id == carol.player_id and matched.seat == rules_pb2.SEAT_FIRST
        assert (await _next(joined, "matched")).matched.pairing_id == matched.pairing_id

        # Following another player's ticket, or one never issued, is refused.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await anext(_follow(bob, ticket))
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await anext(_follow(carol, "q-never"))
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        for player in (alice, bob, carol):
            await player.close()


async def _follower(replica: Replica, ticket_id: str) -> str:
    """The replica whose process follows the ticket's stream, as the shared store says."""
    config = replica.runtime.config
    client = await nats.connect(
        config.nats_url,
        **connection_options(
            config.nats_url, seed_file=config.nats_nkey_seed_file, ca_file=config.tls_ca_file
        ),
    )
    try:
        kv = await client.jetstream().key_value(config.matchmaking_bucket)
        for key in await kv.keys():
            if key.endswith("." + ticket_id):
                entry = await kv.get(key)
                return str(json.loads(entry.value or b"{}")["follower"]).partition(":")[0]
    finally:
        await client.close()
    raise AssertionError(f"no ticket {ticket_id} in the store")


def _follow(client: DuelClient, ticket: str) -> AsyncIterator[mm.QueueUpdate]:
    """The raw FollowQueue stream (the client library's queue follows by itself)."""

    async def updates() -> AsyncIterator[mm.QueueUpdate]:
        call = client.matchmaking.FollowQueue(
            mm.FollowQueueRequest(queue_ticket_id=ticket), metadata=client.metadata
        )
        async for reply in call:
            yield reply.update

    return updates()


async def test_a_queue_closed_by_its_client_is_cancelled_at_once(
    fleet: tuple[str, Replica, Replica], client_tls: ClientTls
) -> None:
    """Not after the stream grace: the client library cancels the ticket it stops reading."""
    wallet, first, second = fleet
    (alice,) = await _players(wallet, [f"ipv4:{first.address},{second.address}"], ["alice"], client_tls)
    try:
        waiting = alice.queue("duel-1", 200)
        await anext(waiting)
        await waiting.aclose()
        again = alice.queue("duel-1", 200)  # a player queues once at a time: the first one is gone
        assert (await anext(again)).HasField("queued")
        await again.aclose()
    finally:
        await alice.close()
