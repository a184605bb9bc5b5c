"""Each service skeleton, run exactly as its process runs it, over real gRPC, NATS and HTTP.

A service comes up healthy, answers over reflection (what grpcurl uses), serves /metrics, refuses a
call without a valid token (UNAUTHENTICATED), rejects malformed bytes (INVALID_ARGUMENT with a message)
(the error mapping itself is tested on a probe service in test_platform_grpc.py).
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.service import ServiceSpec
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.main import SPEC as MATCHMAKING
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING
from services.table.config import TableConfig
from services.table.main import TableServer
from services.wallet.config import WalletConfig
from services.wallet.main import SPEC as WALLET

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

# Each a spec to start: a table server is one TableServer, wired once.
SERVICES: dict[str, tuple[type[ServiceConfig], Callable[[], ServiceSpec], str]] = {
    "matchmaking": (MatchmakingConfig, lambda: MATCHMAKING, "duelmahjong.v1.MatchmakingService"),
    "table": (TableConfig, lambda: TableServer().spec, "duelmahjong.v1.TableService"),
}


async def _reflected_services(channel: grpc.aio.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    call = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names: set[str] = set()
    async for reply in call:
        names.update(service.name for service in reply.list_services_response.service)
    return names


@pytest.mark.parametrize("name", sorted(SERVICES))
async def test_service_comes_up_healthy_and_answers_over_reflection(
    name: str, service_env: dict[str, str], start_service: Any, client_tls: ClientTls
) -> None:
    config_class, make_spec, full_name = SERVICES[name]
    runtime = await start_service(make_spec(), config_class.from_env(service_env))
    await _check_healthy_reflected_and_measured(runtime, name, full_name, client_tls)


# Services that keep data: each on a database of its own, and every gRPC service it offers.
WITH_DATABASE: dict[str, tuple[type[ServiceConfig], ServiceSpec, tuple[str, ...]]] = {
    "wallet": (WalletConfig, WALLET, ("duelmahjong.v1.WalletService",)),
    "scoring": (ScoringConfig, SCORING, ("duelmahjong.v1.ScoringService", "duelmahjong.v1.ArchiveService")),
}


@pytest.mark.parametrize("name", sorted(WITH_DATABASE))
async def test_a_service_that_keeps_data_comes_up_healthy_on_its_own_database(
    name: str, service_env: dict[str, str], start_service: Any, database_url: str, client_tls: ClientTls
) -> None:
    config_class, spec, offered = WITH_DATABASE[name]
    config = config_class.from_env({**service_env, config_class.database_variable(): database_url})
    runtime = await start_service(spec, config)
    for full_name in offered:
        await _check_healthy_reflected_and_measured(runtime, name, full_name, client_tls)


async def _check_healthy_reflected_and_measured(
    runtime: Any, name: str, full_name: str, client_tls: ClientTls
) -> None:
    async with client_tls.channel(runtime.server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", full_name):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert full_name in await _reflected_services(channel)
    url = f"http://127.0.0.1:{runtime.metrics_port}/metrics"
    metrics = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
    assert f"duel_{name}_grpc_requests_total".encode() in metrics
    assert f"duel_{name}_nats_connected_bool 1.0".encode() in metrics


async def test_a_call_without_a_valid_token_is_unauthenticated(
    service_env: dict[str, str], start_service: Any, token_secret: str, client_tls: ClientTls
) -> None:
    runtime = await start_service(TableServer().spec, TableConfig.from_env(service_env))
    async with client_tls.channel(runtime.server.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetTableStatus(table_pb2.GetTableStatusRequest(), timeout=5)
        assert missing.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "session token" in (missing.value.details() or "")

        forged = (("authorization", "Bearer not.a.token"),)
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await stub.GetTableStatus(table_pb2.GetTableStatusRequest(), metadata=forged, timeout=5)
        assert bad.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_malformed_request_bytes_get_invalid_argument_with_a_message(
    service_env: dict[str, str],
    start_service: Any,
    database_url: str,
    issue: Callable[..., Any],
    client_tls: ClientTls,
) -> None:
    env = {**service_env, "SCORING_DATABASE_URL": database_url}
    runtime = await start_service(SCORING, ScoringConfig.from_env(env))
    async with client_tls.channel(runtime.server.address) as channel:
        raw = channel.unary_unary("/duelmahjong.v1.ScoringService/EvaluateHand")
        # Field 1, length-delimited, claims 5 bytes and carries 2: not a parseable message.
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await raw(b"\x0a\x05ab", metadata=issue(), timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid protobuf message" in (err.value.details() or "")
