"""docs/operations.md "Rotating the token key", followed step by step on the four services (wallet,
matchmaking, table, scoring) over real gRPC, NATS and Postgres.

Each step restarts the services one at a time on their own ports, as a rolling update does. After
every restart, a player's session token from before the rotation (key A) is still accepted by every
service, and so is a token from a login made then; pairings made along the way (matchmaking's service
tokens to the wallet and the table, the table's tickets on Play) seat their players. New logins get
tokens of key B once the wallet has switched. Once key A is dropped, its tokens are refused by every
service with a message that names the retired key. (The wait between the switch and the drop, at
least the session lifetime, is not waited here: it is what lets every token of key A expire first.)
"""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
import jwt
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duelmahjong.client.session import CHANNEL_OPTIONS, DuelClient
from duelmahjong.platform import auth
from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2, table_pb2_grpc
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.main import SPEC as MATCHMAKING
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING
from services.table.config import TableConfig
from services.table.main import TableServer
from services.wallet.config import WalletConfig
from services.wallet.main import SPEC as WALLET
from tests.integration.conftest import ServiceStarter

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

KEY_A = secrets.token_urlsafe(32)
KEY_B = secrets.token_urlsafe(32)
ORDER = ("table", "scoring", "matchmaking", "wallet")  # any order works: the runbook's point
ROOM = "erren-rotation"


@dataclass
class Member:
    spec: Callable[[], ServiceSpec]
    config: type[ServiceConfig]
    env: dict[str, str]
    runtime: ServiceRuntime[Any] | None = None

    @property
    def address(self) -> str:
        assert self.runtime is not None
        return self.runtime.server.address


class Fleet:
    """The four services, restarted one at a time with new token settings on their own ports."""

    def __init__(self, start: ServiceStarter, members: dict[str, Member], tls: ClientTls) -> None:
        self._start = start
        self.members = members
        self.tls = tls

    async def start(self, name: str, keys: dict[str, str]) -> None:
        member = self.members[name]
        if member.runtime is not None:
            member.env["GRPC_PORT"] = member.address.rsplit(":", 1)[1]  # the same address after
            await self._start.stop(member.runtime)
        member.runtime = await self._start(member.spec(), member.config.from_env({**member.env, **keys}))
        # Channels in this process share their connections (gRPC's subchannel pool, one per set of
        # channel options): one that failed while the service was down waits out its reconnect
        # backoff. Wait until the service is reachable with the test's and the client's options.
        for options in ((), CHANNEL_OPTIONS):
            async with self.tls.channel(member.address, options=options) as channel:
                await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), wait_for_ready=True, timeout=15
                )

    def address(self, name: str) -> str:
        return self.members[name].address

    def verified(self, name: str, key: str) -> float:
        """``duel_<name>_tokens_verified_total{key=...}`` from the service's /metrics."""
        runtime = self.members[name].runtime
        assert runtime is not None
        url = f"http://127.0.0.1:{runtime.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        prefix = f'duel_{name}_tokens_verified_total{{key="{key}"}} '
        return next(
            (float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix)), 0.0
        )


async def _calls(fleet: Fleet, client: DuelClient) -> dict[str, grpc.StatusCode]:
    """One authenticated call to each service with ``client``'s token, and the status each ended with."""
    async with fleet.tls.channel(fleet.address("scoring")) as scoring_channel:
        async with fleet.tls.channel(fleet.address("table")) as table_channel:
            catalogue = scoring_pb2.GetCatalogueRequest(profile=rules_pb2.PROFILE_ERREN)
            calls: dict[str, Callable[[], Any]] = {
                "wallet": client.balance,
                "matchmaking": client.rooms,
                "scoring": lambda: scoring_pb2_grpc.ScoringServiceStub(scoring_channel).GetCatalogue(
                    catalogue, metadata=client.metadata, timeout=10
                ),
                # No such table: NOT_FOUND is what a caller the table authenticated is told.
                "table": lambda: table_pb2_grpc.TableServiceStub(table_channel).GetTableStatus(
                    table_pb2.GetTableStatusRequest(table_id="t-none"), metadata=client.metadata, timeout=10
                ),
            }
            outcomes: dict[str, grpc.StatusCode] = {}
            for name, call in calls.items():
                for _attempt in range(20):
                    try:
                        await call()
                        outcomes[name] = grpc.StatusCode.OK
                    except grpc.aio.AioRpcError as err:
                        outcomes[name] = err.code()
                        if err.code() == grpc.StatusCode.UNAVAILABLE:
                            # a channel of this process to a service just restarted may still wait out
                            # its reconnect backoff: a connection matter, not a token one
                            await asyncio.sleep(0.25)
                            continue
                        if err.code() == grpc.StatusCode.UNAUTHENTICATED:
                            retired = f"key id {auth.key_id(KEY_A)}: retired"
                            assert retired in (err.details() or ""), err.details()
                    break
            return outcomes


ACCEPTED = {
    "wallet": grpc.StatusCode.OK,
    "matchmaking": grpc.StatusCode.OK,
    "scoring": grpc.StatusCode.OK,
    "table": grpc.StatusCode.NOT_FOUND,
}


async def _login(fleet: Fleet, name: str) -> DuelClient:
    client = DuelClient(
        wallet=fleet.address("wallet"), matchmaking=fleet.address("matchmaking"), tls=fleet.tls
    )
    await client.login(name)
    return client


def _kid(client: DuelClient) -> str:
    return str(jwt.get_unverified_header(client.token)["kid"])


async def _pair_and_seat(fleet: Fleet, players: list[DuelClient]) -> None:
    """Both players queue, are paired, and get a table whose Play stream seats the first of them;
    each may then read the table's status with their session token."""

    async def ready(client: DuelClient) -> mm.TableReady:
        async with asyncio.timeout(30):
            while True:
                updates = client.queue(ROOM, 200)
                try:
                    async for update in updates:
                        if update.WhichOneof("kind") == "table_ready":
                            return update.table_ready
                    raise AssertionError("the queue ended without a table")
                except grpc.aio.AioRpcError as err:
                    # One instance of each service here: matchmaking's channel to a wallet just
                    # restarted may still be waiting out its reconnect backoff (behind a Service of
                    # several replicas, a rolling restart never leaves none). Not a token matter.
                    if err.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    await asyncio.sleep(0.5)
                finally:
                    await updates.aclose()

    readies = await asyncio.gather(*(ready(client) for client in players))
    assert readies[0].table_id == readies[1].table_id
    async with fleet.tls.channel(readies[0].address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        call = stub.Play(metadata=players[0].metadata)
        await call.write(table_pb2.PlayRequest(table_ticket=readies[0].table_ticket))
        first = await asyncio.wait_for(call.read(), 10)
        assert first is not grpc.aio.EOF and first.WhichOneof("kind") != "rejected", first
        call.cancel()
        for client in players:
            request = table_pb2.GetTableStatusRequest(table_id=readies[0].table_id)
            await stub.GetTableStatus(request, metadata=client.metadata, timeout=10)


async def test_the_token_key_rotates_without_refusing_a_live_token(
    start_service: ServiceStarter,
    service_env: dict[str, str],
    database_url: str,
    unique_name: Callable[[str], str],
    client_tls: ClientTls,
) -> None:
    env = {key: value for key, value in service_env.items() if key != "TOKEN_SECRET"}
    rooms = [{"room_id": ROOM, "profile": "erren", "fan_rate": 1, "fee": 1, "carry_min": 100}]
    fleet = Fleet(
        start_service,
        {
            "table": Member(
                lambda: TableServer().spec,
                TableConfig,
                {**env, "ANNOUNCE_SECONDS": "0.2", "JOIN_SECONDS": "2", "SERVER_ID": unique_name("rot")},
            ),
            "scoring": Member(lambda: SCORING, ScoringConfig, {**env, "SCORING_DATABASE_URL": database_url}),
            "wallet": Member(
                lambda: WALLET,
                WalletConfig,
                {**env, "DATABASE_URL": database_url, "WALLET_EVENT_NAMESPACE": unique_name("w").lower()},
            ),
            "matchmaking": Member(
                lambda: MATCHMAKING,
                MatchmakingConfig,
                {**env, "MATCHMAKING_ROOMS": json.dumps(rooms), "MATCHMAKING_TICK_SECONDS": "0.05"},
            ),
        },
        client_tls,
    )
    clients: list[DuelClient] = []
    try:
        # Before: every service signs with key A and accepts nothing else.
        for name in ("table", "scoring", "wallet"):
            await fleet.start(name, {"TOKEN_SECRET": KEY_A})
        fleet.members["matchmaking"].env["WALLET_ADDRESS"] = fleet.address("wallet")
        await fleet.start("matchmaking", {"TOKEN_SECRET": KEY_A})
        early = [await _login(fleet, name) for name in ("early-1", "early-2")]
        clients += early
        assert {_kid(client) for client in early} == {auth.key_id(KEY_A)}
        assert await _calls(fleet, early[0]) == ACCEPTED

        # Step 1: every service learns key B, one at a time, and still signs with A.
        for name in ORDER:
            await fleet.start(name, {"TOKEN_SECRET": KEY_A, "TOKEN_SECRET_ACCEPTED": KEY_B})
            assert await _calls(fleet, early[0]) == ACCEPTED, f"after {name} learnt key B"
        staged = [await _login(fleet, f"staged-{n}") for n in (1, 2)]
        clients += staged
        assert {_kid(client) for client in staged} == {auth.key_id(KEY_A)}
        await _pair_and_seat(fleet, staged)

        # Step 2: every service switches to signing with B, one at a time, and accepts A. Services
        # signing with A and services signing with B work together all along.
        for name in ORDER:
            await fleet.start(name, {"TOKEN_SECRET": KEY_B, "TOKEN_SECRET_ACCEPTED": KEY_A})
            assert await _calls(fleet, early[0]) == ACCEPTED, f"after {name} switched to key B"
            during = [await _login(fleet, f"{name}-{n}") for n in (1, 2)]
            clients += during
            signing = KEY_B if ORDER.index(name) >= ORDER.index("wallet") else KEY_A
            assert {_kid(client) for client in during} == {auth.key_id(signing)}
            assert await _calls(fleet, during[0]) == ACCEPTED
            await _pair_and_seat(fleet, during)

        # Step 3, the wait: what still uses key A shows as the accepted key's verifications.
        before = {name: fleet.verified(name, "accepted") for name in ORDER}
        assert await _calls(fleet, early[0]) == ACCEPTED
        await _pair_and_seat(fleet, early)  # tokens of key A queue, hold, and sit as ever
        assert all(fleet.verified(name, "accepted") > before[name] for name in ORDER), before
        assert all(fleet.verified(name, "signing") > 0 for name in ORDER)

        # Step 4: key A is dropped, one service at a time; each refuses A's tokens as it goes.
        for index, name in enumerate(ORDER):
            await fleet.start(name, {"TOKEN_SECRET": KEY_B})
            outcomes = await _calls(fleet, early[0])
            dropped = set(ORDER[: index + 1])
            assert {n for n, code in outcomes.items() if code == grpc.StatusCode.UNAUTHENTICATED} == dropped
        after = [await _login(fleet, f"after-{n}") for n in (1, 2)]
        clients += after
        assert {_kid(client) for client in after} == {auth.key_id(KEY_B)}
        assert await _calls(fleet, after[0]) == ACCEPTED
        await _pair_and_seat(fleet, after)
    finally:
        for client in clients:
            await client.close()
