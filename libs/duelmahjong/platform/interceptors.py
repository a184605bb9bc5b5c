"""The one server interceptor every service runs: request id, auth, metrics and error mapping.

For each RPC, in this order:

1. bind a request id (the caller's ``x-request-id`` metadata, or a new one) for the log lines;
2. unless the method is public (health, reflection, wallet login…), verify the bearer token and bind the
   :class:`~duelmahjong.platform.auth.Principal` — a missing or bad token is ``UNAUTHENTICATED``, and so
   is one signed with a key the service does not accept; each token verified is counted by the key it
   was signed with, ``duel_<service>_tokens_verified_total{key="signing"|"accepted"}`` (during a key
   rotation, ``accepted`` shows the previous key is still in use);
3. a request whose bytes do not parse as the expected message is ``INVALID_ARGUMENT`` with a message
   (gRPC's own default would be an opaque error), and so is one with a string field that holds a
   control character or is too long (:mod:`duelmahjong.platform.validation`, naming the field).
   Streaming handlers get this by iterating their request iterator (``async for request in
   request_iterator``), not by ``context.read()``; a message refused so raises from ``__anext__`` and
   the next one can still be read (the Play stream carries on past it). A client stream refused
   before its handler read anything first receives the client's first message, so the refusal
   reaches the client as sent (see :class:`_Incoming`);
4. map what the handler raises: a :class:`~duelmahjong.platform.errors.DomainError` becomes its status
   with its message (a :class:`~duelmahjong.platform.errors.RateLimited` also sends its wait as the
   ``grpc-retry-pushback-ms`` trailer); the generated base class's ``NotImplementedError`` (a method
   the servicer does not override) becomes ``UNIMPLEMENTED``, as gRPC answers a method it does not
   know; anything else is logged with its traceback
   and the client gets ``INTERNAL`` with a generic message — never ``UNKNOWN``, never a traceback;
5. count the call and time it: ``duel_<service>_grpc_requests_total{method,code}``,
   ``duel_<service>_grpc_request_duration_seconds{method}``, ``duel_<service>_grpc_requests_in_flight``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio
from google.protobuf.message import DecodeError, Message

from duelmahjong.platform import auth
from duelmahjong.platform.errors import (
    DomainError,
    InvalidText,
    MalformedRequest,
    RateLimited,
    readable_details,
)
from duelmahjong.platform.logging import get_logger, log_context
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.validation import refused_text

# Methods no token is needed for, besides those a service declares public (e.g. wallet login).
ALWAYS_PUBLIC_PREFIXES = (
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
)
REQUEST_ID_KEY = "x-request-id"
# gRPC's retry pushback (gRFC A6): how long the client should wait before trying again.
RETRY_PUSHBACK_KEY = "grpc-retry-pushback-ms"
INTERNAL_MESSAGE = "internal error; it has been logged (request id {request_id})"
_log = get_logger("grpc")


class _Malformed:
    """Stands in for a request whose bytes did not parse, so the handler wrapper can reject it."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def parse(raw: bytes) -> Any:
        try:
            return deserializer(raw)
        except (DecodeError, ValueError, TypeError) as err:
            return _Malformed(err)

    return parse


def _check_parsed(request: Any, method: str) -> Any:
    if isinstance(request, _Malformed):
        raise MalformedRequest(f"the request to {method} is not a valid protobuf message: {request.error}")
    if isinstance(request, Message):
        problem = refused_text(request)
        if problem:
            raise InvalidText(problem, request)
    return request


# How long a refused client stream is given to deliver its first message before the refusal is sent.
SETTLE_SECONDS = 2.0


class _Incoming:
    """A client stream's requests as the handler reads them, each checked (``MalformedRequest``,
    ``InvalidText``); a refused one raises and the next can still be read.

    It also remembers whether the handler read anything, because of how a refusal reaches the client.
    A status sent before the client's first message has arrived ends the HTTP/2 stream under the
    client's pending write; grpc.aio clients then report that failed write as ``INTERNAL "Internal
    error from Core"`` in place of the status the server sent (grpc/grpc#36066). So a call refused
    before its handler read a request (a missing or forged token, above all) first receives the
    client's first message or half-close (:meth:`settle`), for at most ``SETTLE_SECONDS``.
    """

    def __init__(self, raw: AsyncIterator[Any], method: str) -> None:
        self._raw = raw
        self._method = method
        self._read = False

    def __aiter__(self) -> _Incoming:
        return self

    async def __anext__(self) -> Any:
        self._read = True
        return _check_parsed(await anext(self._raw), self._method)

    async def settle(self) -> None:
        """Wait for the client's first message (or the end of its stream) unless one was read."""
        if self._read:
            return
        self._read = True
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                await anext(self._raw)
        except Exception:  # half-closed, silent for SETTLE_SECONDS, or gone: nothing left to race
            pass


class _Outcome:
    """The status an RPC ended with, for the metrics label, and whether it has been counted."""

    def __init__(self, method: str, started: float) -> None:
        self.method = method
        self.started = started
        self.code = grpc.StatusCode.OK
        self.recorded = False


class ServiceInterceptor(grpc.aio.ServerInterceptor):
    """Wraps every handler of one service (see the module doc for what it does)."""

    def __init__(
        self,
        *,
        metrics: ServiceMetrics,
        token_keys: auth.TokenKeys,
        public_methods: Collection[str] = (),
    ) -> None:
        self._keys = token_keys
        self._signing_id = token_keys.signing_id
        self._public = frozenset(public_methods)
        tokens = metrics.counter(
            "tokens_verified", "total", "bearer tokens verified, by the key they were signed with", ["key"]
        )
        self._verified_signing = tokens.labels(key="signing")
        self._verified_accepted = tokens.labels(key="accepted")
        self._requests = metrics.counter("grpc_requests", "total", "RPCs handled", ["method", "code"])
        self._latency = metrics.histogram(
            "grpc_request_duration", "seconds", "time to handle an RPC (to the end of its stream)", ["method"]
        )
        self._in_flight = metrics.gauge("grpc_requests_in_flight", "count", "RPCs being handled", ["method"])

    def is_public(self, method: str) -> bool:
        return method in self._public or method.startswith(ALWAYS_PUBLIC_PREFIXES)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None  # unknown method: gRPC answers UNIMPLEMENTED itself
        method: str = handler_call_details.method
        deserializer = _tolerant(handler.request_deserializer)
        serializer = handler.response_serializer
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(method, handler.unary_unary, stream_in=False), deserializer, serializer
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_unary(method, handler.stream_unary, stream_in=True), deserializer, serializer
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(method, handler.unary_stream, stream_in=False), deserializer, serializer
            )
        assert handler.stream_stream is not None  # a handler is one of the four kinds
        return grpc.stream_stream_rpc_method_handler(
            self._wrap_stream(method, handler.stream_stream, stream_in=True), deserializer, serializer
        )

    def _wrap_unary(
        self, method: str, behavior: Callable[..., Any], *, stream_in: bool
    ) -> Callable[..., Any]:
        async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            incoming = _Incoming(request, method) if stream_in else None
            async with self._rpc(method, context, incoming):
                result = behavior(incoming or _check_parsed(request, method), context)
                return await result if inspect.isawaitable(result) else result

        return handle

    def _wrap_stream(
        self, method: str, behavior: Callable[..., Any], *, stream_in: bool
    ) -> Callable[..., Any]:
        async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
            incoming = _Incoming(request, method) if stream_in else None
            async with self._rpc(method, context, incoming):
                result = behavior(incoming or _check_parsed(request, method), context)
                if inspect.isasyncgen(result):
                    async for response in result:
                        yield response
                elif inspect.isawaitable(result):
                    await result  # a handler that writes with context.write()

        return handle

    @asynccontextmanager
    async def _rpc(
        self, method: str, context: grpc.aio.ServicerContext[Any, Any], incoming: _Incoming | None
    ) -> AsyncIterator[None]:
        """Everything around one handler call: ids, auth, error mapping, metrics."""
        outcome = _Outcome(method, time.perf_counter())
        self._in_flight.labels(method=method).inc()
        try:
            with self._call_scope(context) as request_id:
                try:
                    self._authenticate(method, context)
                    yield
                except BaseException as err:
                    if incoming is not None and isinstance(err, Exception):
                        await incoming.settle()
                    await self._fail(err, method, context, outcome, request_id)
                    raise  # _fail aborts; only cancellation and the handler's own aborts get here
        finally:
            if outcome.code == grpc.StatusCode.OK and context.cancelled():
                outcome.code = grpc.StatusCode.CANCELLED
            self._record(outcome)

    def _record(self, outcome: _Outcome) -> None:
        """Count and time the call, once: before a refusal is sent, so whoever got it sees it counted."""
        if outcome.recorded:
            return
        outcome.recorded = True
        self._in_flight.labels(method=outcome.method).dec()
        self._latency.labels(method=outcome.method).observe(time.perf_counter() - outcome.started)
        self._requests.labels(method=outcome.method, code=outcome.code.name).inc()

    def _authenticate(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if self.is_public(method):
            return
        token = auth.token_from_metadata(context.invocation_metadata())
        principal = auth.verify_token(self._keys, token)
        if principal.key_id == self._signing_id:
            self._verified_signing.inc()
        else:
            self._verified_accepted.inc()
        auth.bind_principal(principal)

    def _call_scope(self, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        request_id = None
        for key, value in context.invocation_metadata() or ():
            if key == REQUEST_ID_KEY:
                request_id = (value if isinstance(value, str) else value.decode())[:64]
        return _RequestScope(request_id or uuid.uuid4().hex[:16])

    async def _fail(
        self,
        err: BaseException,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        outcome: _Outcome,
        request_id: str,
    ) -> None:
        if isinstance(err, grpc.aio.AbortError):
            # The handler aborted by itself; its status is already set on the context.
            outcome.code = context.code() or grpc.StatusCode.UNKNOWN
            return
        if not isinstance(err, Exception):
            outcome.code = grpc.StatusCode.CANCELLED
            return  # cancellation (client went away, server stopping): nothing to tell anyone
        if isinstance(err, DomainError):
            code, message = grpc.StatusCode[err.status], readable_details(err.message)
            if isinstance(err, RateLimited):
                context.set_trailing_metadata(((RETRY_PUSHBACK_KEY, str(math.ceil(err.retry_after * 1000))),))
            _log.info("rpc failed", extra={"fields": {"method": method, "code": code.name, "error": message}})
        elif isinstance(err, NotImplementedError):
            code = grpc.StatusCode.UNIMPLEMENTED
            message = f"{method} is not implemented by this service"
        else:
            code, message = grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE.format(request_id=request_id)
            _log.error("rpc raised", exc_info=err, extra={"fields": {"method": method}})
        outcome.code = code
        self._record(outcome)
        await context.abort(code, message)


class _RequestScope:
    """Binds the request id for logs and a fresh principal slot for the duration of one RPC."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self._log_scope = log_context(request_id=request_id)
        self._principal_token: Any = None

    def __enter__(self) -> str:
        self._log_scope.__enter__()
        self._principal_token = auth.bind_principal(None)
        return self.request_id

    def __exit__(self, *exc: object) -> None:
        try:
            auth.reset_principal(self._principal_token)
            self._log_scope.__exit__(None, None, None)
        except ValueError:
            # A streaming handler closed from another context (e.g. by the garbage collector): the
            # variables belong to a context that is gone anyway.
            pass
