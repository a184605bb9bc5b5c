"""The gRPC bootstrap and its interceptor, through a real server and channel, on a test-only service.

The test service reuses health's request/response messages on its own method names, so no proto is
needed; its handlers raise whatever a test asks for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duelmahjong.platform import auth, errors
from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec
from duelmahjong.platform.tls import ClientTls

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

Request = health_pb2.HealthCheckRequest
Reply = health_pb2.HealthCheckResponse
PROBE = "duel.test.Probe"

FAILURES: dict[str, BaseException] = {
    "invalid": errors.InvalidArgument("tile 0z is not a tile"),
    "precondition": errors.FailedPrecondition("not your turn"),
    "denied": errors.PermissionDenied("that is the other seat"),
    "missing": errors.NotFound("no table t-1"),
    "full": errors.ResourceExhausted("queue is full"),
    "generated": NotImplementedError("Method not implemented!"),
    "bug": RuntimeError("secret internals: password=hunter2"),
}


async def _unary(request: Request, context: grpc.aio.ServicerContext) -> Reply:
    failure = FAILURES.get(request.service)
    if failure is not None:
        raise failure
    if request.service == "whoami":
        principal = auth.current_principal()
        return Reply(status=Reply.SERVING if principal.player_id == "p-7" else Reply.UNKNOWN)
    return Reply(status=Reply.SERVING)


async def _slow(request: Request, context: grpc.aio.ServicerContext) -> Reply:
    await asyncio.sleep(0.5)
    return Reply(status=Reply.SERVING)


async def _stream(request: Request, context: grpc.aio.ServicerContext) -> AsyncIterator[Reply]:
    yield Reply(status=Reply.SERVING)
    raise errors.FailedPrecondition("table closed mid-stream")


def _register(_servicer: object, server: grpc.aio.Server) -> None:
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(
            _unary, request_deserializer=Request.FromString, response_serializer=Reply.SerializeToString
        ),
        "Public": grpc.unary_unary_rpc_method_handler(
            _unary, request_deserializer=Request.FromString, response_serializer=Reply.SerializeToString
        ),
        "Slow": grpc.unary_unary_rpc_method_handler(
            _slow, request_deserializer=Request.FromString, response_serializer=Reply.SerializeToString
        ),
        "Stream": grpc.unary_stream_rpc_method_handler(
            _stream, request_deserializer=Request.FromString, response_serializer=Reply.SerializeToString
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(PROBE, handlers),))


async def _wire(runtime: ServiceRuntime[Any]) -> None:
    runtime.server.add_service(PROBE, _register, None)


PROBE_SPEC = ServiceSpec(wire=_wire, public_methods={f"/{PROBE}/Public"})


@pytest_asyncio.fixture
async def probe(
    service_env: dict[str, str], start_service: Any, client_tls: ClientTls
) -> AsyncIterator[tuple[Any, Any]]:
    config = ServiceConfig.from_env({**service_env, "SERVICE_NAME": "probe"})
    runtime = await start_service(PROBE_SPEC, config)
    async with client_tls.channel(runtime.server.address) as channel:
        yield runtime, channel


def _call(channel: grpc.aio.Channel, method: str) -> Any:
    return channel.unary_unary(
        f"/{PROBE}/{method}",
        request_serializer=Request.SerializeToString,
        response_deserializer=Reply.FromString,
    )


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        ("invalid", grpc.StatusCode.INVALID_ARGUMENT),
        ("precondition", grpc.StatusCode.FAILED_PRECONDITION),
        ("denied", grpc.StatusCode.PERMISSION_DENIED),
        ("missing", grpc.StatusCode.NOT_FOUND),
        ("full", grpc.StatusCode.RESOURCE_EXHAUSTED),
    ],
)
async def test_domain_errors_map_to_their_status_with_their_message(
    probe: tuple[Any, Any], issue: Callable[..., Any], failure: str, code: grpc.StatusCode
) -> None:
    _, channel = probe
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _call(channel, "Unary")(Request(service=failure), metadata=issue(), timeout=5)
    assert err.value.code() == code
    assert err.value.details() == str(FAILURES[failure])


async def test_an_unexpected_exception_is_internal_with_a_generic_message_never_unknown(
    probe: tuple[Any, Any], issue: Callable[..., Any]
) -> None:
    _, channel = probe
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _call(channel, "Unary")(Request(service="bug"), metadata=issue(), timeout=5)
    assert err.value.code() == grpc.StatusCode.INTERNAL
    details = err.value.details() or ""
    assert "internal error" in details
    assert "hunter2" not in details and "Traceback" not in details


async def test_the_generated_base_class_default_reads_as_unimplemented(
    probe: tuple[Any, Any], issue: Callable[..., Any]
) -> None:
    _, channel = probe
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _call(channel, "Unary")(Request(service="generated"), metadata=issue(), timeout=5)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert err.value.details() == f"/{PROBE}/Unary is not implemented by this service"


async def test_handler_sees_the_verified_caller(probe: tuple[Any, Any], issue: Callable[..., Any]) -> None:
    _, channel = probe
    reply = await _call(channel, "Unary")(Request(service="whoami"), metadata=issue("p-7"), timeout=5)
    assert reply.status == Reply.SERVING


async def test_public_methods_need_no_token_and_others_do(probe: tuple[Any, Any], token_secret: str) -> None:
    _, channel = probe
    reply = await _call(channel, "Public")(Request(service="ok"), timeout=5)
    assert reply.status == Reply.SERVING
    expired = auth.issue_token(token_secret, player_id="p-1", now=auth.datetime(2020, 1, 1, tzinfo=auth.UTC))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _call(channel, "Unary")(Request(), metadata=auth.bearer_metadata(expired), timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "expired" in (err.value.details() or "")


async def test_a_stream_that_fails_midway_ends_with_the_domain_status(
    probe: tuple[Any, Any], issue: Callable[..., Any]
) -> None:
    _, channel = probe
    call = channel.unary_stream(
        f"/{PROBE}/Stream",
        request_serializer=Request.SerializeToString,
        response_deserializer=Reply.FromString,
    )(Request(), metadata=issue(), timeout=5)
    replies = []
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for reply in call:
            replies.append(reply)
    assert len(replies) == 1
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.value.details() == "table closed mid-stream"


async def test_every_rpc_is_counted_by_method_and_code(
    probe: tuple[Any, Any], issue: Callable[..., Any]
) -> None:
    runtime, channel = probe
    await _call(channel, "Unary")(Request(service="ok"), metadata=issue(), timeout=5)
    with pytest.raises(grpc.aio.AioRpcError):
        await _call(channel, "Unary")(Request(service="missing"), metadata=issue(), timeout=5)
    text = runtime.metrics.exposition().decode()
    method = f"/{PROBE}/Unary"
    assert f'duel_probe_grpc_requests_total{{code="OK",method="{method}"}} 1.0' in text
    assert f'duel_probe_grpc_requests_total{{code="NOT_FOUND",method="{method}"}} 1.0' in text
    assert f'duel_probe_grpc_request_duration_seconds_count{{method="{method}"}} 2.0' in text


async def test_stopping_marks_health_not_serving_first(probe: tuple[Any, Any]) -> None:
    runtime, channel = probe
    health = health_pb2_grpc.HealthStub(channel)
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=10)
    first = await watch.read()
    assert first.status == Reply.SERVING
    runtime.stopping.set()
    second = await watch.read()
    assert second.status == Reply.NOT_SERVING


async def test_an_rpc_in_flight_when_the_service_stops_still_completes(
    probe: tuple[Any, Any], issue: Callable[..., Any]
) -> None:
    runtime, channel = probe
    call = _call(channel, "Slow")(Request(), metadata=issue(), timeout=10)
    await asyncio.sleep(0.2)  # the call is being handled
    runtime.stopping.set()  # what SIGTERM does
    reply = await call
    assert reply.status == Reply.SERVING


@pytest.mark.timeout(60)
async def test_a_burst_of_new_connections_is_served_not_refused(
    probe: tuple[Any, Any], client_tls: ClientTls
) -> None:
    """As the seats of a dead server's tables reconnect to the one that adopts them: thousands of
    players' own connections, each opening its call at once. grpc core refuses calls that arrive
    faster than grpc.aio asks for them beyond its pending-request limit (1,000 by default), which a
    client sees as INTERNAL or CANCELLED; the server's limit is set above such a burst."""
    runtime, _ = probe
    burst = 2500
    # Each channel its own connection and TLS handshake, as each player's is (channels of one process
    # share a connection to the same target unless told not to).
    own = [("grpc.use_local_subchannel_pool", 1)]
    channels = [client_tls.channel(runtime.server.address, options=own) for _ in range(burst)]
    try:
        outcomes = await asyncio.gather(
            *(_call(channel, "Public")(Request(), timeout=30) for channel in channels), return_exceptions=True
        )
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))
    refused = [str(outcome.code()) for outcome in outcomes if isinstance(outcome, grpc.aio.AioRpcError)]
    assert not refused, f"{len(refused)} of {burst} calls refused: {sorted(set(refused))}"
    assert all(isinstance(outcome, Reply) and outcome.status == Reply.SERVING for outcome in outcomes)
