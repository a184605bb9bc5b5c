"""``duel status``: the health of every service of a running stack, one line each.

Addresses come from ``--wallet HOST:PORT``… flags, else ``WALLET_ADDRESS``… variables, else the state
file ``make run`` writes (``.local/stack.json``), which also names every further process it runs
(``matchmaking-2``, ``table-2``…): each process is listed on its own line at its own address, not
at the target that reaches all of a service's replicas. Exit code 0 only if every one listed is
SERVING.
"""

from __future__ import annotations

import argparse

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc  # type: ignore[import-untyped]  # no py.typed marker

from duelmahjong.cli.client_args import add_tls_arguments, tls_of
from duelmahjong.platform.stackfile import SERVICE_NAMES, StackState, service_addresses
from duelmahjong.platform.tls import ClientTls


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_tls_arguments(parser)
    for name in SERVICE_NAMES:
        parser.add_argument(f"--{name}", metavar="HOST:PORT", help=f"gRPC address of the {name} service")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for each answer")


def check_health(address: str, timeout: float, tls: ClientTls) -> str:
    """The overall health of the server at ``address``: SERVING, NOT_SERVING, … or UNREACHABLE
    (a server whose certificate does not verify is unreachable too: grpc says so in its log)."""
    with tls.blocking_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=timeout
            )
        except grpc.RpcError as err:
            code = err.code() if isinstance(err, grpc.Call) else None
            return (
                "UNREACHABLE"
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
                else (f"ERROR ({code.name if code else err})")
            )
    status: str = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return status


def run(args: argparse.Namespace) -> int:
    overrides = {name: getattr(args, name) for name in SERVICE_NAMES}
    addresses = service_addresses(args.state_file, overrides=overrides)
    # Every process the stack runs (matchmaking-2, table-2…), from its state file, each at its own
    # address where the state file gave the service's: its target would answer for one replica.
    state = StackState.read(args.state_file)
    if state is not None:
        for name, endpoint in state.services.items():
            if addresses.get(name) in (None, state.target(name)):
                addresses[name] = endpoint.grpc
    if not any(addresses.values()):
        print(f"no running stack found: start one with `make run` (it writes {args.state_file}),")
        print("or give addresses with --wallet/--matchmaking/--table/--scoring or WALLET_ADDRESS…")
    tls = tls_of(args)
    all_serving = True
    width = max(12, *(len(name) + 1 for name in addresses))
    for name in addresses:
        address = addresses[name]
        health = check_health(address, args.timeout, tls) if address else "NO ADDRESS"
        all_serving = all_serving and health == "SERVING"
        print(f"{name:<{width}} {address or '-':<22} {health}")
    return 0 if all_serving else 1
