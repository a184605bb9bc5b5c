"""The matchmaking service as its process runs it, with the real wallet behind it (gRPC, NATS, Postgres):
rooms, queues, one queue per player, holds before readiness, T7 negotiation, bot fill, and pairings
that wait — not lost — while no table server has room."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import grpc
import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.client.session import DuelClient
from duelmahjong.platform.service import ServiceRuntime
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2, wallet_pb2
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.main import SPEC as MATCHMAKING
from services.wallet.audit import audit_ledger
from services.wallet.config import WalletConfig
from services.wallet.main import SPEC as WALLET

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ROOMS = [
    {"room_id": "duel-test", "profile": "duel", "fan_rate": 10, "fee": 5, "carry_min": 100, "carry_max": 800},
    {
        "room_id": "erren-test",
        "profile": "erren",
        "fan_rate": 1,
        "fee": 5,
        "carry_min": 100,
        "carry_max": 800,
    },
    {
        "room_id": "duel-bots",
        "profile": "duel",
        "fan_rate": 10,
        "carry_min": 100,
        "bot_fill_seconds": 0.3,
        "bot_policy": "strong",  # the novice rooms' fill bot
    },
    {
        "room_id": "duel-short",
        "profile": "duel",
        "fan_rate": 10,
        "ticket_seconds": 0.5,
        "negotiation_seconds": 7.5,
        "decision_millis": 9000,
        "time_bank_millis": 12000,
        "reconnect_grace_millis": 20000,
    },
]
SEE_WITHIN = 10.0


@pytest_asyncio.fixture
async def stack(
    start_service: Any,
    service_env: dict[str, str],
    database_url: str,
    wallet_database_url: str,
    unique_name: Callable[[str], str],
) -> dict[str, str]:
    wallet_env = {
        **service_env,
        "DATABASE_URL": wallet_database_url,
        "WALLET_EVENT_NAMESPACE": unique_name("w").lower(),
    }
    wallet: ServiceRuntime[Any] = await start_service(WALLET, WalletConfig.from_env(wallet_env))
    mm_env = {
        **service_env,
        "WALLET_ADDRESS": wallet.server.address,
        "MATCHMAKING_ROOMS": json.dumps(ROOMS),
        "MATCHMAKING_TICK_SECONDS": "0.05",
        "MATCHMAKING_BOT_POOL": "1",  # one house bot: every fill plays it, in turn
    }
    matchmaking: ServiceRuntime[Any] = await start_service(MATCHMAKING, MatchmakingConfig.from_env(mm_env))
    return {
        "wallet": wallet.server.address,
        "matchmaking": matchmaking.server.address,
        "metrics": f"http://127.0.0.1:{matchmaking.metrics_port}/metrics",
        "database": database_url,
    }


@pytest_asyncio.fixture
async def players(stack: dict[str, str], client_tls: ClientTls) -> AsyncIterator[list[DuelClient]]:
    clients = [
        DuelClient(tls=client_tls, wallet=stack["wallet"], matchmaking=stack["matchmaking"]) for _ in range(2)
    ]
    for client, name in zip(clients, ("alice", "bob"), strict=True):
        await client.login(name)
    yield clients
    for client in clients:
        await client.close()


class Stream:
    """One player's Enqueue stream, read in the background."""

    def __init__(self, client: DuelClient, room: str, carry: int) -> None:
        self.updates: asyncio.Queue[mm.QueueUpdate] = asyncio.Queue()
        self.task = asyncio.create_task(self._read(client, room, carry))

    async def _read(self, client: DuelClient, room: str, carry: int) -> None:
        async for update in client.queue(room, carry):
            self.updates.put_nowait(update)

    async def next(self, kind: str) -> mm.QueueUpdate:
        """The next update of ``kind`` (others skipped)."""
        async with asyncio.timeout(SEE_WITHIN):
            while True:
                update = await self.updates.get()
                if update.WhichOneof("kind") == kind:
                    return update

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def test_list_rooms_from_configuration(players: list[DuelClient]) -> None:
    rooms = {room.room_id: room for room in await players[0].rooms()}
    assert set(rooms) == {"duel-test", "erren-test", "duel-bots", "duel-short"}
    assert rooms["duel-test"].rules.fan_rate == 10 and rooms["duel-test"].rules.fee == 5
    assert rooms["duel-test"].rules.profile == rules_pb2.PROFILE_DUEL
    erren = await players[0].rooms(rules_pb2.PROFILE_ERREN)
    assert [room.room_id for room in erren] == ["erren-test"]


async def test_list_rooms_shows_each_rooms_clocks(players: list[DuelClient]) -> None:
    """What a client would otherwise learn by being timed out: bot fill, ticket lifetime, the T7
    negotiation deadline, T11 decision time and bank, T10 grace (RoomTimes, in milliseconds)."""
    rooms = {room.room_id: room for room in await players[0].rooms()}
    times = {
        room_id: (
            t.bot_fill_millis,
            t.ticket_millis,
            t.negotiation_millis,
            t.decision_millis,
            t.time_bank_millis,
        )
        for room_id, t in ((room_id, room.times) for room_id, room in rooms.items())
    }
    assert times == {
        "duel-test": (0, 300_000, 30_000, 15_000, 30_000),  # the defaults; no bot fill
        "erren-test": (0, 300_000, 0, 15_000, 30_000),  # erren does not negotiate (1×)
        "duel-bots": (300, 300_000, 30_000, 15_000, 30_000),
        "duel-short": (0, 500, 7_500, 9_000, 12_000),
    }
    short = rooms["duel-short"]
    assert short.times.reconnect_grace_millis == 20_000 == short.rules.reconnect_grace_millis
    assert (short.times.decision_millis, short.times.time_bank_millis) == (
        short.rules.decision_millis,
        short.rules.time_bank_millis,
    )
    assert rooms["duel-test"].times.reconnect_grace_millis == 60_000


async def test_pairing_holds_carry_and_fee_then_negotiates_t7_and_waits_for_a_table_server(
    players: list[DuelClient],
) -> None:
    alice, bob = players
    first = Stream(alice, "duel-test", 300)
    assert (await first.next("queued")).queued.queue_ticket_id
    assert (await first.next("position")).position.position == 1
    second = Stream(bob, "duel-test", 400)
    try:
        matched = (await first.next("matched")).matched
        assert matched.seat == rules_pb2.SEAT_FIRST and matched.opponent_player_id == bob.player_id
        assert not matched.opponent_is_bot
        assert (await second.next("matched")).matched.seat == rules_pb2.SEAT_SECOND

        # The holds are placed before either counts as ready: carry + fee (issue 6).
        turn = (await first.next("negotiation")).negotiation
        assert turn.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL and turn.your_turn
        assert (await alice.balance()).held == 305
        assert (await bob.balance()).held == 405

        # T7: only the first seated proposes, only 1/2/5/10.
        with pytest.raises(grpc.aio.AioRpcError) as wrong_seat:
            await bob.matchmaking.ProposeMultiplier(
                mm.ProposeMultiplierRequest(pairing_id=matched.pairing_id, multiplier=2),
                metadata=bob.metadata,
            )
        assert wrong_seat.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.aio.AioRpcError) as odd:
            await alice.matchmaking.ProposeMultiplier(
                mm.ProposeMultiplierRequest(pairing_id=matched.pairing_id, multiplier=3),
                metadata=alice.metadata,
            )
        assert odd.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        await alice.matchmaking.ProposeMultiplier(
            mm.ProposeMultiplierRequest(pairing_id=matched.pairing_id, multiplier=5), metadata=alice.metadata
        )
        proposed = (await second.next("negotiation")).negotiation
        while proposed.state != mm.NEGOTIATION_STATE_PROPOSED:
            proposed = (await second.next("negotiation")).negotiation
        assert proposed.multiplier == 5 and proposed.your_turn
        await bob.matchmaking.RespondMultiplier(
            mm.RespondMultiplierRequest(pairing_id=matched.pairing_id, accept=True), metadata=bob.metadata
        )
        accepted = (await first.next("negotiation")).negotiation
        while accepted.state != mm.NEGOTIATION_STATE_ACCEPTED:
            accepted = (await first.next("negotiation")).negotiation
        assert accepted.multiplier == 5

        # No table server has announced itself: the pairing waits, its streams stay open.
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await first.next("table_ready")
        assert not first.task.done() and not second.task.done()
    finally:
        await first.close()
        await second.close()


async def _metrics(url: str) -> str:
    return (await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())).decode()


async def test_a_declined_multiplier_ends_the_pairing_and_releases_both_holds(
    players: list[DuelClient], stack: dict[str, str]
) -> None:
    alice, bob = players
    first, second = Stream(alice, "duel-test", 200), None
    try:
        await first.next("queued")
        second = Stream(bob, "duel-test", 200)
        pairing = (await first.next("matched")).matched.pairing_id
        await first.next("negotiation")
        await alice.matchmaking.ProposeMultiplier(
            mm.ProposeMultiplierRequest(pairing_id=pairing, multiplier=10), metadata=alice.metadata
        )
        await second.next("negotiation")
        await bob.matchmaking.RespondMultiplier(
            mm.RespondMultiplierRequest(pairing_id=pairing, accept=False), metadata=bob.metadata
        )
        assert "declined" in (await first.next("expired")).expired.reason
        assert "declined" in (await second.next("expired")).expired.reason
        for _ in range(200):  # the releases run in the background after the streams end
            if not (await alice.balance()).held and not (await bob.balance()).held:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the holds were not released after the decline")
        # Both may queue again.
        again = Stream(alice, "duel-test", 200)
        assert (await again.next("queued")).queued.queue_ticket_id
        exposed = await _metrics(stack["metrics"])
        assert 'duel_matchmaking_paired_total{room="duel-test"} 1.0' in exposed
        assert 'duel_matchmaking_declined_total{room="duel-test"} 1.0' in exposed
        assert 'duel_matchmaking_queue_waiting_players{room="duel-test"} 1.0' in exposed
        await again.close()
    finally:
        await first.close()
        if second is not None:
            await second.close()


async def test_one_queue_per_player_carry_range_and_balance_are_checked(players: list[DuelClient]) -> None:
    alice, _bob = players
    first = Stream(alice, "duel-test", 200)
    try:
        await first.next("queued")
        twice = Stream(alice, "erren-test", 200)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await twice.task
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "already in a queue" in (err.value.details() or "")
    finally:
        await first.close()

    for room, carry, code in (
        ("duel-test", 5000, grpc.StatusCode.INVALID_ARGUMENT),  # outside the carry range
        ("no-such-room", 200, grpc.StatusCode.NOT_FOUND),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await Stream(alice, room, carry).task
        assert refused.value.code() == code


async def test_tickets_expire_and_can_be_cancelled(players: list[DuelClient]) -> None:
    alice, bob = players
    short = Stream(alice, "duel-short", 100)
    assert "expired" in (await short.next("expired")).expired.reason
    await short.task  # the stream ends after expired

    waiting = Stream(bob, "duel-test", 100)
    ticket = (await waiting.next("queued")).queued.queue_ticket_id
    await bob.matchmaking.CancelQueue(mm.CancelQueueRequest(queue_ticket_id=ticket), metadata=bob.metadata)
    assert "cancel" in (await waiting.next("expired")).expired.reason
    await waiting.task


async def test_bot_fill_pairs_a_lonely_player_with_a_bot_client(players: list[DuelClient]) -> None:
    alice, _bob = players
    lonely = Stream(alice, "duel-bots", 200)
    try:
        matched = (await lonely.next("matched")).matched
        assert matched.opponent_is_bot and matched.seat == rules_pb2.SEAT_FIRST
        assert matched.opponent_player_id == "bot-1"  # a house bot, not a new guest
        await lonely.next("negotiation")
        await alice.matchmaking.ProposeMultiplier(
            mm.ProposeMultiplierRequest(pairing_id=matched.pairing_id, multiplier=2), metadata=alice.metadata
        )
        # The bot answers through the same API any client uses.
        accepted = (await lonely.next("negotiation")).negotiation
        while accepted.state != mm.NEGOTIATION_STATE_ACCEPTED:
            accepted = (await lonely.next("negotiation")).negotiation
        assert accepted.multiplier == 2
    finally:
        await lonely.close()


async def test_successive_bot_fills_reuse_the_house_bot_without_minting_per_fill(
    players: list[DuelClient], stack: dict[str, str]
) -> None:
    alice, bob = players
    pool = await asyncpg.create_pool(stack["database"], min_size=1, max_size=2)
    try:

        async def count(query: str) -> int:
            return int(await pool.fetchval(query))

        minted = "SELECT -balance FROM wallet.accounts WHERE house = 'grants'"
        players_before, minted_before = (
            await count("SELECT count(*) FROM wallet.players"),
            await count(minted),
        )
        for player in (alice, bob):  # one after the other: the second fill waits for the bot to be free
            stream = Stream(player, "duel-bots", 200)
            try:
                matched = (await stream.next("matched")).matched
                assert matched.opponent_is_bot and matched.opponent_player_id == "bot-1"
                await stream.next("negotiation")
                # Leaving before a table ends the pairing: the bot's queue ends and it goes back to the pool.
                await player.matchmaking.LeavePairing(
                    mm.LeavePairingRequest(pairing_id=matched.pairing_id), metadata=player.metadata
                )
                await stream.next("expired")
            finally:
                await stream.close()
        # One bot player, created by the first fill with one starting grant; nothing minted since.
        assert await count("SELECT count(*) FROM wallet.players") == players_before + 1
        assert await count("SELECT count(*) FROM wallet.players WHERE is_bot") == 1
        assert await count(minted) == minted_before + 1000
        assert (
            await count("SELECT count(*) FROM wallet.transactions WHERE idempotency_key LIKE 'grant:%bot-1%'")
            == 1
        )
        board = await alice.wallet.GetLeaderboard(
            wallet_pb2.GetLeaderboardRequest(scope=wallet_pb2.LEADERBOARD_SCOPE_TOP), metadata=alice.metadata
        )
        assert {entry.player_id for entry in board.entries} == {alice.player_id, bob.player_id}
        for _ in range(200):  # the holds are released in the background after the pairings end
            if await audit_ledger(pool) == [] and not await count(
                "SELECT count(*) FROM wallet.holds WHERE open"
            ):
                break
            await asyncio.sleep(0.05)
        assert await audit_ledger(pool) == []
        assert not await count("SELECT count(*) FROM wallet.holds WHERE open")
    finally:
        await pool.close()
