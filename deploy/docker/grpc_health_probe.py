#!/usr/bin/env python3
"""Container health check: asks the gRPC health service of the service in this container.

Exit 0 when the server answers SERVING for the whole-server status (service name ""), 1 otherwise
(NOT_SERVING while a table server drains, unreachable, or too slow). Kubernetes uses its native gRPC
probe; docker-compose and `docker run` use this, since they have no gRPC probe of their own.

The probe speaks TLS as the service serves it: it trusts ``TLS_CA_FILE`` and checks the name of the
service's own certificate (``TLS_CERT_FILE``), since it dials 127.0.0.1, which that certificate need
not name; plaintext only when ``GRPC_PLAINTEXT`` is true.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duelmahjong.platform.tls import ClientTls, plaintext_requested, subject_names


def own_tls(environ: Mapping[str, str]) -> ClientTls:
    """How to reach this container's own server: its CA, and the first name its certificate carries."""
    if plaintext_requested(environ):
        return ClientTls(plaintext=True)
    names = subject_names(Path(environ["TLS_CERT_FILE"]).read_bytes()) if environ.get("TLS_CERT_FILE") else ()
    ca_file = Path(environ["TLS_CA_FILE"]) if environ.get("TLS_CA_FILE") else None
    return ClientTls(ca_file=ca_file, server_name=names[0] if names else "")


def probe(address: str, timeout_s: float, tls: ClientTls) -> bool:
    with tls.blocking_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
        except grpc.RpcError as error:
            print(f"unhealthy: {address}: {error.code().name}", file=sys.stderr)
            return False
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"unhealthy: {address}: {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}")
        return False
    return True


def main(argv: list[str]) -> int:
    address = argv[1] if len(argv) > 1 else f"127.0.0.1:{os.environ.get('GRPC_PORT', '50051')}"
    return 0 if probe(address, timeout_s=2.0, tls=own_tls(os.environ)) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
