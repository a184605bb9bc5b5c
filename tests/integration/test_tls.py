"""TLS on the gRPC servers every service runs, through real servers, channels and certificates.

- a renewed certificate written over the old files is served to the next connection, without a
  restart, while a connection (and a stream) opened before keeps working;
- a renewal that is not a pair yet (a key from another certificate) is not served;
- a plaintext client, a client trusting another CA and a client dialing a name the certificate does
  not carry are refused at once, with an error that says why, never a hang;
- plaintext is served only with GRPC_PLAINTEXT=true, and then a warning is logged at start.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
import pytest_asyncio
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.embedded import free_port
from duelmahjong.platform.pki import LocalAuthority
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec
from duelmahjong.platform.tls import PLAINTEXT_WARNING, RELOAD_CHECK_SECONDS, ClientTls

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

# Refusals come back in milliseconds on loopback; this bounds "not a hang" with room for a loaded
# machine, far below the call's own deadline.
REFUSED_WITHIN = 3.0
CALL_DEADLINE = 20.0


async def _nothing(runtime: ServiceRuntime[Any]) -> None:
    return None


SPEC = ServiceSpec(wire=_nothing)
HEALTH = health_pb2.HealthCheckRequest()


def served_serial(port: int, ca_file: Path, name: str = "127.0.0.1") -> int:
    """The serial number of the certificate a new connection to ``port`` is shown (verified)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=name) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def file_serial(cert_file: Path) -> int:
    return x509.load_pem_x509_certificate(cert_file.read_bytes()).serial_number


@pytest_asyncio.fixture
async def own_certificate(local_ca: LocalAuthority, tmp_path: Path) -> AsyncIterator[Path]:
    """A directory with this test's own server certificate (``server.pem``), to renew at will."""
    local_ca.issue("server", ["localhost", "127.0.0.1"], directory=tmp_path)
    yield tmp_path


async def _serve(start_service: Any, service_env: dict[str, str], **settings: str) -> ServiceRuntime[Any]:
    config = ServiceConfig.from_env({**service_env, "SERVICE_NAME": "tls_probe", **settings})
    runtime: ServiceRuntime[Any] = await start_service(SPEC, config)
    return runtime


async def _check(channel: grpc.aio.Channel) -> int:
    reply = await health_pb2_grpc.HealthStub(channel).Check(HEALTH, timeout=CALL_DEADLINE)
    return int(reply.status)


async def test_a_renewed_certificate_is_served_to_new_connections_and_old_ones_keep_working(
    start_service: Any,
    service_env: dict[str, str],
    local_ca: LocalAuthority,
    client_tls: ClientTls,
    own_certificate: Path,
) -> None:
    cert, key = own_certificate / "server.pem", own_certificate / "server-key.pem"
    runtime = await _serve(start_service, service_env, TLS_CERT_FILE=str(cert), TLS_KEY_FILE=str(key))
    port = runtime.server.port
    first = file_serial(cert)
    assert served_serial(port, local_ca.ca_cert) == first

    async with client_tls.channel(runtime.server.address) as old:
        assert await _check(old) == health_pb2.HealthCheckResponse.SERVING
        watch = health_pb2_grpc.HealthStub(old).Watch(HEALTH, timeout=CALL_DEADLINE)
        assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING

        local_ca.issue("server", ["localhost", "127.0.0.1"], directory=own_certificate)  # in place
        renewed = file_serial(cert)
        assert renewed != first
        deadline = time.monotonic() + 10 * RELOAD_CHECK_SECONDS
        while served_serial(port, local_ca.ca_cert) != renewed:
            assert time.monotonic() < deadline, "the renewed certificate was not served"
            await asyncio.sleep(0.2)
        assert runtime.server.certificate is not None and runtime.server.certificate.reloads == 1

        # The connection opened before the renewal: its stream goes on, and so do new calls on it.
        await runtime.server.mark(serving=False)
        assert (await watch.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert await _check(old) == health_pb2.HealthCheckResponse.NOT_SERVING
        watch.cancel()
    async with client_tls.channel(runtime.server.address) as new:
        assert await _check(new) == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_a_renewal_whose_key_does_not_match_is_not_served(
    start_service: Any,
    service_env: dict[str, str],
    local_ca: LocalAuthority,
    client_tls: ClientTls,
    own_certificate: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cert, key = own_certificate / "server.pem", own_certificate / "server-key.pem"
    runtime = await _serve(start_service, service_env, TLS_CERT_FILE=str(cert), TLS_KEY_FILE=str(key))
    first = file_serial(cert)
    other = local_ca.issue("other", ["localhost", "127.0.0.1"], directory=tmp_path / "other")
    with caplog.at_level(logging.WARNING):
        shutil.copyfile(other.cert, cert)  # the certificate renewed, its key not (yet)
        await asyncio.sleep(2 * RELOAD_CHECK_SECONDS)
        assert served_serial(runtime.server.port, local_ca.ca_cert) == first
        async with client_tls.channel(runtime.server.address) as channel:
            assert await _check(channel) == health_pb2.HealthCheckResponse.SERVING
    assert any("cannot be served yet" in record.getMessage() for record in caplog.records)

    shutil.copyfile(other.key, key)  # and now the pair is whole
    deadline = time.monotonic() + 10 * RELOAD_CHECK_SECONDS
    while served_serial(runtime.server.port, local_ca.ca_cert) != file_serial(other.cert):
        assert time.monotonic() < deadline, "the completed renewal was not served"
        await asyncio.sleep(0.2)


async def _refused(tls: ClientTls, target: str) -> grpc.aio.AioRpcError:
    started = time.monotonic()
    async with tls.channel(target) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _check(channel)
    assert time.monotonic() - started < REFUSED_WITHIN, "the refusal took as long as a hang"
    return refused.value


async def test_a_plaintext_client_is_refused_at_once(start_service: Any, service_env: dict[str, str]) -> None:
    runtime = await _serve(start_service, service_env)
    err = await _refused(ClientTls(plaintext=True), runtime.server.address)
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert "Socket closed" in (err.details() or "") or "failed to connect" in (err.details() or "")


async def test_a_client_that_trusts_another_ca_is_refused_at_once(
    start_service: Any, service_env: dict[str, str], tmp_path: Path
) -> None:
    runtime = await _serve(start_service, service_env)
    stranger = LocalAuthority.open(tmp_path / "another-ca")
    err = await _refused(ClientTls(ca_file=stranger.ca_cert), runtime.server.address)
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert "CERTIFICATE_VERIFY_FAILED" in (err.details() or "")


async def test_a_client_that_dials_a_name_the_certificate_does_not_carry_is_refused(
    start_service: Any, service_env: dict[str, str], local_ca: LocalAuthority
) -> None:
    runtime = await _serve(start_service, service_env)
    elsewhere = ClientTls(ca_file=local_ca.ca_cert, server_name="wallet.example.org")
    err = await _refused(elsewhere, runtime.server.address)
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert "Hostname Verification" in (err.details() or "")


async def test_a_replica_list_target_is_verified_against_the_host_its_addresses_share(
    start_service: Any, service_env: dict[str, str], client_tls: ClientTls
) -> None:
    first, second = [await _serve(start_service, service_env) for _ in range(2)]
    target = f"ipv4:{first.server.address},{second.server.address}"
    async with client_tls.channel(target) as channel:
        assert await _check(channel) == health_pb2.HealthCheckResponse.SERVING


async def test_plaintext_is_served_only_when_asked_for_and_says_so(
    start_service: Any, service_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """This test is about plaintext: the development setting."""
    without_tls = {k: v for k, v in service_env.items() if k not in ("TLS_CERT_FILE", "TLS_KEY_FILE")}
    with caplog.at_level(logging.WARNING):
        runtime = await _serve(start_service, without_tls, GRPC_PLAINTEXT="true")
    assert any(record.getMessage() == PLAINTEXT_WARNING for record in caplog.records)
    async with ClientTls(plaintext=True).channel(runtime.server.address) as channel:
        assert await _check(channel) == health_pb2.HealthCheckResponse.SERVING


async def test_a_client_sees_a_ca_bundle_replaced_in_place_on_its_next_channel(
    start_service: Any, service_env: dict[str, str], local_ca: LocalAuthority, tmp_path: Path
) -> None:
    runtime = await _serve(start_service, service_env)
    bundle = tmp_path / "bundle.pem"
    shutil.copyfile(LocalAuthority.open(tmp_path / "old-ca").ca_cert, bundle)
    tls = ClientTls(ca_file=bundle)
    await _refused(tls, runtime.server.address)
    await asyncio.sleep(0.01)  # a new modification time, whatever the file system's resolution
    shutil.copyfile(local_ca.ca_cert, bundle)  # the CA rotated: the bundle now holds the new one
    async with tls.channel(runtime.server.address) as channel:
        assert await _check(channel) == health_pb2.HealthCheckResponse.SERVING


async def test_a_health_port_answers_probes_in_plaintext_and_serves_nothing_else(
    start_service: Any, service_env: dict[str, str], client_tls: ClientTls
) -> None:
    """GRPC_HEALTH_PORT: for Kubernetes' gRPC probe, which speaks no TLS. The same health answers as
    on the TLS port, and nothing else: no other service, no reflection."""
    health_port = free_port("127.0.0.1")
    runtime = await _serve(start_service, service_env, GRPC_HEALTH_PORT=str(health_port))
    async with ClientTls(plaintext=True).channel(f"127.0.0.1:{health_port}") as probe:
        assert await _check(probe) == health_pb2.HealthCheckResponse.SERVING
        await runtime.server.mark(serving=False)
        assert await _check(probe) == health_pb2.HealthCheckResponse.NOT_SERVING
        reflection = probe.unary_unary("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await reflection(b"", timeout=CALL_DEADLINE)
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    err = await _refused(ClientTls(plaintext=True), runtime.server.address)  # the service port: TLS only
    assert err.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_server_bound_to_every_interface_is_dialed_by_its_own_certificate_s_name(
    start_service: Any, service_env: dict[str, str], client_tls: ClientTls
) -> None:
    """What matchmaking's house bots do (they dial their own replica at its bound address): 0.0.0.0 is
    no name a certificate carries, so the certificate's own first name is checked instead."""
    runtime = await _serve(start_service, service_env, GRPC_HOST="0.0.0.0")
    assert runtime.server.address.startswith("0.0.0.0:")
    await _refused(client_tls, runtime.server.address)  # "0.0.0.0" is not a name of the certificate
    own = runtime.server.own_tls(client_tls)
    assert own.server_name == "localhost" and own.ca_file == client_tls.ca_file
    async with own.channel(runtime.server.address) as channel:
        assert await _check(channel) == health_pb2.HealthCheckResponse.SERVING
