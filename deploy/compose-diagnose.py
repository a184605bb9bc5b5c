"""Matchmaking's view of the wallet, printed by deploy/compose-test.sh when a run fails (run inside
the matchmaking container: `python - < deploy/compose-diagnose.py`): how the name resolves, whether
a TCP connection, a health check and a wallet call get through, and how long each took."""

import asyncio
import os
import socket
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from duelmahjong.platform.tls import ClientTls, plaintext_requested
from duelmahjong.v1 import wallet_pb2, wallet_pb2_grpc
from services.matchmaking.remote import ServiceToken

WALLET = ("wallet", 50051)


def timed(what: str, started: float, outcome: str = "ok") -> None:
    print(f"{what}: {outcome} after {time.monotonic() - started:.3f} s")


def resolve_and_connect() -> None:
    started = time.monotonic()
    try:
        addresses = sorted({info[4][0] for info in socket.getaddrinfo(*WALLET, type=socket.SOCK_STREAM)})
        timed(f"lookup of {WALLET[0]} {addresses}", started)
    except OSError as err:
        timed(f"lookup of {WALLET[0]}", started, repr(err))
    started = time.monotonic()
    try:
        socket.create_connection(WALLET, 5).close()
        timed("tcp connect", started)
    except OSError as err:
        timed("tcp connect", started, repr(err))


async def calls() -> None:
    tls = ClientTls.from_settings(os.environ.get("TLS_CA_FILE"), plaintext_requested(os.environ))
    async with tls.channel(f"{WALLET[0]}:{WALLET[1]}") as channel:
        started = time.monotonic()
        try:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            timed("health check", started)
        except grpc.aio.AioRpcError as err:
            timed("health check", started, f"{err.code().name} {err.details()}")
        started = time.monotonic()
        try:
            await wallet_pb2_grpc.WalletServiceStub(channel).GetBalance(
                wallet_pb2.GetBalanceRequest(player_id="nobody"),
                metadata=ServiceToken(os.environ["TOKEN_SECRET"]).metadata(),
                timeout=10,
            )
            timed("GetBalance", started)
        except grpc.aio.AioRpcError as err:  # NOT_FOUND: the wallet answered
            timed("GetBalance", started, f"{err.code().name} {err.details()}")


if __name__ == "__main__":
    with open("/etc/resolv.conf") as resolv:
        print(resolv.read().strip())
    resolve_and_connect()
    asyncio.run(calls())
