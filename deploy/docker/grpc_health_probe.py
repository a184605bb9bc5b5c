#!/usr/bin/env python3
"""Container health check: asks the gRPC health service of the service in this container.

Exit 0 when the server answers SERVING for the whole-server status (service name ""), 1 otherwise
(NOT_SERVING while a table server drains, unreachable, or too slow). Kubernetes uses its native gRPC
probe; docker-compose and `docker run` use this, since they have no gRPC probe of their own.
"""

from __future__ import annotations

import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def probe(address: str, timeout_s: float) -> bool:
    with grpc.insecure_channel(address) as channel:
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
    return 0 if probe(address, timeout_s=2.0) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
