"""Private tables on the whole stack (four service processes, embedded NATS and Postgres): a player
opens a private table in a watchable duel room and gets a code; a friend joins with it as typed by a
person (lower case, a space); they negotiate T7 and play a hand with the client library's bot policy.
The table is never listed for spectators and Watch refuses it; the archive serves its hand to its two
players only (a third player's GetReplay is PERMISSION_DENIED, their ListMatches of either player
leaves it out). A wrong code is NOT_FOUND saying so;
an unused code of a room with a short ticket expires, ending the opener's stream with Expired and
giving the held carry back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import grpc
import grpc.aio
import pytest

from duelmahjong.client.history import MatchHistory
from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient, QueueEnded
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.matchmaking import codes

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

DUEL = {
    "room_id": "private-duel",
    "profile": "duel",
    "fan_rate": 1,
    "fee": 2,
    "carry_min": 100,
    "watchable": True,  # watchable, so only privacy keeps the table unlisted and unwatched
    "spectate_delay_seconds": 1,
    "bot_fill_seconds": 1,  # a bot would fill a queued player after a second: never a private table
}
SHORT = {"room_id": "private-short", "profile": "erren", "fan_rate": 1, "fee": 3, "ticket_seconds": 2}
SETTINGS = {"MATCHMAKING_ROOMS": json.dumps([DUEL, SHORT])}
CARRY = 300


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    with stack_with("private", SETTINGS) as state:
        yield state


def _clients(stack: StackState, *names: str) -> list[DuelClient]:
    services = stack.services
    return [
        DuelClient(
            tls=stack.client_tls(), wallet=services["wallet"].grpc, matchmaking=stack.target("matchmaking")
        )
        for _ in names
    ]


async def test_a_friend_joins_by_code_they_negotiate_and_play_and_nobody_else_sees_the_table(
    stack: StackState,
) -> None:
    host, friend, stranger = clients = _clients(stack, "ana", "bo", "cy")
    for name, client in zip(("ana", "bo", "cy"), clients, strict=True):
        await client.login(name)
    try:
        shown: dict[str, list[mm.QueueUpdate]] = {"host": [], "friend": []}
        coded = asyncio.Event()

        def hosting(update: mm.QueueUpdate) -> None:
            shown["host"].append(update)
            coded.set()

        opening = asyncio.create_task(
            host.open_private_table(DUEL["room_id"], CARRY, multiplier=2, on_update=hosting)
        )
        await asyncio.wait_for(coded.wait(), 20)
        first = shown["host"][0]
        assert first.HasField("private_code"), first
        code = first.private_code.code
        assert codes.well_formed(code) and first.private_code.room_id == DUEL["room_id"]
        assert first.private_code.expires_at.seconds > 0
        await asyncio.sleep(1.5)  # past the room's bot fill: a private table waits for its friend
        assert [u.WhichOneof("kind") for u in shown["host"]] == ["private_code", "queued"]
        held = await host.balance()
        assert held.held == CARRY + DUEL["fee"]  # the carry and fee are held from the opening on

        typed = f"{code[:3].lower()} {code[3:]}"
        joining = friend.join_private_table(typed, CARRY, on_update=shown["friend"].append)
        ready_host, ready_friend = await asyncio.wait_for(asyncio.gather(opening, joining), 30)
        for updates, opponent in ((shown["host"], friend.player_id), (shown["friend"], host.player_id)):
            matched = [u.matched for u in updates if u.HasField("matched")]
            assert [(m.private_table, m.opponent_player_id, m.opponent_is_bot) for m in matched] == [
                (True, opponent, False)
            ]
            agreed = [u.negotiation for u in updates if u.HasField("negotiation")]
            assert (agreed[-1].state, agreed[-1].multiplier) == (mm.NEGOTIATION_STATE_ACCEPTED, 2)  # T7
        assert ready_host.table_id == ready_friend.table_id

        plays = [
            asyncio.create_task(client.play(ready, BaselineBot(), MatchPlan(hands=1)))
            for client, ready in ((host, ready_host), (friend, ready_friend))
        ]
        assert await stranger.live_tables(DUEL["room_id"]) == []
        async with stranger.tls.channel(ready_host.address) as channel:
            watch = table_pb2_grpc.TableServiceStub(channel).Watch(
                table_pb2.WatchRequest(table_id=ready_host.table_id), metadata=stranger.metadata
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await watch.read()
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "private table" in (refused.value.details() or "")
        outcomes = await asyncio.wait_for(asyncio.gather(*plays), 180)
        assert [o.hands_settled for o in outcomes] == [1, 1], [o.ended_reason for o in outcomes]
        assert [s.settlement.multipliers.negotiated for s in outcomes[0].settlements] == [2]
        assert await stranger.live_tables(DUEL["room_id"]) == []
        await _archived_for_its_players_only(
            stack, (host, friend), stranger, ready_host.table_id, outcomes[0]
        )
        print(f"\nprivate table {ready_host.table_id} joined with {typed!r}: 1 hand at 2×, never listed")
    finally:
        for client in clients:
            await client.close()


async def _archived_for_its_players_only(
    stack: StackState,
    players: tuple[DuelClient, DuelClient],
    stranger: DuelClient,
    table_id: str,
    played: Any,
) -> None:
    """The archive serves the private table's hand to its two players and to nobody else."""
    scoring = stack.services["scoring"].grpc
    (hand_id,) = played.hand_ids
    for player in players:
        async with MatchHistory(scoring=scoring, token=player.token, tls=player.tls) as history:
            for _ in range(150):  # scoring archives the hand a moment after it ended
                mine = [m for m in await history.all_matches() if m.table_id == table_id]
                if mine:
                    break
                await asyncio.sleep(0.2)
            assert [m.private_table for m in mine] == [True]
            assert (await history.replay(hand_id)).hand_id == hand_id
    async with MatchHistory(scoring=scoring, token=stranger.token, tls=stranger.tls) as history:
        for player in players:
            theirs = await history.all_matches(player.player_id)
            assert table_id not in [m.table_id for m in theirs]
        with pytest.raises(grpc.aio.AioRpcError) as replay:
            await history.replay(hand_id)
        assert replay.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "private table" in (replay.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as match:
            await history.match(mine[0].pairing_id)
        assert match.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_wrong_code_is_not_found_and_an_unused_one_expires_with_the_hold_released(
    stack: StackState,
) -> None:
    host, friend = clients = _clients(stack, "dee", "eli")
    for name, client in zip(("dee", "eli"), clients, strict=True):
        await client.login(name)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as wrong:
            await friend.join_private_table("zzz zzz", CARRY)
        assert wrong.value.code() == grpc.StatusCode.NOT_FOUND
        assert "no private table has the code 'ZZZZZZ'" in (wrong.value.details() or "")
        before = (await host.balance()).available
        shown: list[mm.QueueUpdate] = []
        started = asyncio.get_running_loop().time()
        with pytest.raises(QueueEnded, match="before it expired; the hold is released"):
            await asyncio.wait_for(
                host.open_private_table(SHORT["room_id"], CARRY, on_update=shown.append), 20
            )
        waited = asyncio.get_running_loop().time() - started
        assert SHORT["ticket_seconds"] <= waited + 0.2 < 10, waited
        code = shown[0].private_code.code
        assert [u.WhichOneof("kind") for u in shown] == ["private_code", "queued", "expired"]
        for _ in range(50):  # the release is the wallet's answer to matchmaking, a moment after
            balance = await host.balance()
            if balance.available == before:
                break
            await asyncio.sleep(0.1)
        assert (balance.available, balance.held) == (before, 0)
        with pytest.raises(grpc.aio.AioRpcError) as expired:
            await friend.join_private_table(code, CARRY)
        assert expired.value.code() == grpc.StatusCode.NOT_FOUND
        assert "expired" in (expired.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as own:
            opened = host.open_private(SHORT["room_id"], CARRY)
            mine = (await anext(opened)).private_code.code
            await host.join_private_table(mine, CARRY)
        assert own.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "your own private table" in (own.value.details() or "")
        await opened.aclose()
    finally:
        for client in clients:
            await client.close()
