"""The gRPC server every service runs: health, reflection, the service interceptor, graceful stop.

Usage (a service's composition root does this through :func:`duelmahjong.platform.service.run`)::

    server = ServiceServer(config, metrics, public_methods={"/duelmahjong.v1.WalletService/Login"})
    server.add_service(wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name,
                       wallet_pb2_grpc.add_WalletServiceServicer_to_server, WalletApi(core))
    port = await server.start()        # health: SERVING for "" and every added service
    ...
    await server.stop()                # health: NOT_SERVING, in-flight RPCs get the grace period

Health answers for the overall server (service name ``""``) and for each added service by its full
name; reflection lists every added service plus health, so ``grpcurl -cacert ca.pem host:port list``
works. The server serves TLS with ``TLS_CERT_FILE`` / ``TLS_KEY_FILE``, reloaded when they change
(:mod:`duelmahjong.platform.tls`); plaintext only with ``GRPC_PLAINTEXT=true``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # type: ignore[import-untyped]
from grpc_reflection.v1alpha import reflection  # type: ignore[import-untyped]

from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.interceptors import ServiceInterceptor
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.tls import ClientTls, ReloadingCertificate, server_credentials, warn_if_plaintext

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
# Large enough for a whole table's event log in one message, small enough to bound a bad client.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# Calls grpc core has received and grpc.aio has not yet asked for. Past this many core refuses new
# ones (its default is 1,000), which a client sees as CANCELLED or INTERNAL: measured, a burst of
# 1,500 connections opening a call at once lost 40, 2,600 lost 180-290. Bursts that size are normal
# here: the seats of a dead table server's tables reconnecting to the adopter, a room's players
# returning after a deploy. Each pending call holds a few KB until it is served.
MAX_PENDING_CALLS = 20_000
PENDING_CALL_OPTIONS = [
    ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
    ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_CALLS),
]

_log = get_logger("grpc.server")


class ServiceServer:
    """A ``grpc.aio`` server set up the way every Duel Mahjong service needs it."""

    def __init__(
        self,
        config: ServiceConfig,
        metrics: ServiceMetrics,
        *,
        public_methods: Collection[str] = (),
    ) -> None:
        self.config = config
        self.interceptor = ServiceInterceptor(
            metrics=metrics,
            token_keys=config.token_keys(),
            public_methods=public_methods,
        )
        self._server = grpc.aio.server(
            interceptors=[self.interceptor],
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                *PENDING_CALL_OPTIONS,
                # Tolerate clients that keep long Play streams open through NATs.
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
                # No bandwidth-delay-product probing: it pings a connection as data arrives, to grow its
                # flow-control window for bulk transfers. Our messages are a few KB against a 64 KB
                # window, so the pings buy nothing, and over TLS each is a record sealed, written, read
                # and opened on its own: off, a table server at human pace spends ≈ 9 % less CPU per
                # action over TLS (docs/benchmarks.md "TLS on against off").
                ("grpc.http2.bdp_probe", 0),
            ],
        )
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        # Kubernetes' gRPC probe speaks no TLS: the same health answers, alone on a plaintext port of
        # their own (nothing else is served there, and no token or player data crosses it).
        self._health_server: grpc.aio.Server | None = None
        if config.grpc_health_port:
            self._health_server = grpc.aio.server()
            health_pb2_grpc.add_HealthServicer_to_server(self.health, self._health_server)
        self._service_names: list[str] = []
        self._port: int | None = None
        self.certificate: ReloadingCertificate | None = None  # None when plaintext
        self._serving = False
        self._stopping = False

    def add_service(
        self, full_name: str, register: Callable[[Any, grpc.aio.Server], None], servicer: Any
    ) -> None:
        """Register a generated servicer (``add_XServicer_to_server``) under its full proto name."""
        if self._port is not None:
            raise RuntimeError("add every service before the server starts")
        register(servicer, self._server)
        self._service_names.append(full_name)

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the server has not started")
        return self._port

    @property
    def address(self) -> str:
        return f"{self.config.grpc_host}:{self.port}"

    async def start(self) -> int:
        """Bind, start serving, and mark every service SERVING. Returns the bound port."""
        reflection.enable_server_reflection(
            (*self._service_names, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        bind = f"{self.config.grpc_host}:{self.config.grpc_port}"
        if self.config.grpc_plaintext:
            warn_if_plaintext(True)
            port = self._server.add_insecure_port(bind)
        else:
            credentials, self.certificate = server_credentials(
                Path(self.config.tls_cert_file), Path(self.config.tls_key_file)
            )
            port = self._server.add_secure_port(bind, credentials)
        if port == 0:
            raise OSError(f"cannot bind gRPC on {self.config.grpc_host}:{self.config.grpc_port}")
        if self._health_server is not None:
            health_bind = f"{self.config.grpc_host}:{self.config.grpc_health_port}"
            if self._health_server.add_insecure_port(health_bind) == 0:
                raise OSError(f"cannot bind the health port on {health_bind}")
            await self._health_server.start()
        await self._server.start()
        self._port = port
        await self.mark(serving=True)
        _log.info(
            "grpc serving",
            extra={
                "fields": {
                    "address": self.address,
                    "services": self._service_names,
                    "tls": not self.config.grpc_plaintext,
                }
            },
        )
        return port

    def own_tls(self, tls: ClientTls) -> ClientTls:
        """``tls`` for dialing this server at :attr:`address`: a server bound to every interface
        (``0.0.0.0``) is dialed at an address its certificate does not name, so the name checked is
        the certificate's own first name."""
        if self.certificate is None or not self.certificate.names or tls.plaintext:
            return tls
        if self.config.grpc_host in self.certificate.names:
            return tls
        return dataclasses.replace(tls, server_name=self.certificate.names[0])

    async def stop(self, grace: float | None = None) -> None:
        """Graceful stop: NOT_SERVING first (load balancers stop routing), then let in-flight RPCs end."""
        grace = self.config.shutdown_grace_seconds if grace is None else grace
        await self.mark(serving=False)
        self._stopping = True
        _log.info("grpc stopping", extra={"fields": {"grace_seconds": grace}})
        await self._server.stop(grace)
        if self._health_server is not None:
            await self._health_server.stop(0)

    async def mark(self, *, serving: bool) -> None:
        """Health SERVING or NOT_SERVING for every service: a service whose dependency it cannot do
        without is unreachable says so (readiness), without stopping. Never SERVING once stopping."""
        if serving and (self._port is None or self._stopping):
            return
        if serving == self._serving:
            return
        self._serving = serving
        for name in ("", *self._service_names):
            await self.health.set(name, SERVING if serving else NOT_SERVING)

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()


async def wait_until_serving(
    target: str, tls: ClientTls, *, service: str = "", within_seconds: float = 30.0
) -> None:
    """Poll ``target``'s health until ``service`` is SERVING; ``TimeoutError`` after ``within_seconds``."""
    deadline = asyncio.get_running_loop().time() + within_seconds
    async with tls.channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=1.0)
                if reply.status == SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass  # not listening yet
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{target} did not become SERVING within {within_seconds:.0f}s")
            await asyncio.sleep(0.1)
