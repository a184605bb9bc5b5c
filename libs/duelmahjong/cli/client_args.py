"""What the commands that act as a game client share: where the wallet and matchmaking are, and
which CA their certificates are verified with.

``--wallet`` / ``--matchmaking``, else ``WALLET_ADDRESS`` / ``MATCHMAKING_ADDRESS``, else the state
file of ``make run`` (``--state-file``). The CA: ``--ca-file``, else ``TLS_CA_FILE``, else the state
file's local CA, else the system trust store (:func:`duelmahjong.platform.stackfile.client_tls`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc

from duelmahjong.platform import eventloop
from duelmahjong.platform.stackfile import DEFAULT_STATE_FILE, client_tls, service_addresses
from duelmahjong.platform.tls import ClientTls, TlsError

ClientMain = Callable[[argparse.Namespace, str, str, ClientTls], Coroutine[Any, Any, int]]


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wallet", metavar="HOST:PORT", help="wallet address")
    parser.add_argument(
        "--matchmaking",
        metavar="TARGET",
        help="matchmaking address (HOST:PORT; replicas: ipv4:HOST:PORT,HOST:PORT)",
    )
    add_tls_arguments(parser)


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """``--state-file`` and ``--ca-file``: where the stack is and what verifies its certificates."""
    parser.add_argument(
        "--state-file", type=Path, default=DEFAULT_STATE_FILE, help="state file of `make run`"
    )
    parser.add_argument(
        "--ca-file",
        type=Path,
        help="PEM CA bundle that verifies the servers (default $TLS_CA_FILE, else the CA of `make run`'s "
        "state file, else the system trust store)",
    )


def tls_of(args: argparse.Namespace) -> ClientTls:
    """The channel security ``args`` ask for (see :func:`add_tls_arguments`)."""
    return client_tls(args.state_file, ca_file=args.ca_file)


def client_addresses(args: argparse.Namespace) -> tuple[str, str] | None:
    """The wallet's and matchmaking's addresses; None (having said why) when one is unknown."""
    addresses = service_addresses(
        args.state_file, overrides={"wallet": args.wallet, "matchmaking": args.matchmaking}
    )
    if not addresses["wallet"] or not addresses["matchmaking"]:
        print("no wallet/matchmaking address: start a stack with `make run` or give --wallet/--matchmaking")
        return None
    return str(addresses["wallet"]), str(addresses["matchmaking"])


def run_client(args: argparse.Namespace, main: ClientMain, failures: dict[type[Exception], str]) -> int:
    """``main(args, wallet, matchmaking)`` on the event loop: 2 without addresses; 1, saying why, when
        it raises one of ``failures`` (exception type → what to say first; the first type the exception is an
    instance of) or the backend refuses."""
    addresses = client_addresses(args)
    if addresses is None:
        return 2
    try:
        return eventloop.run(main(args, *addresses, tls_of(args)))
    except TlsError as err:
        print(f"TLS: {err}", file=sys.stderr)
        return 2
    except grpc.RpcError as err:
        print(f"the backend refused: {err.code().name} {err.details()}", file=sys.stderr)
        return 1
    except tuple(failures) as err:
        what = next(said for kind, said in failures.items() if isinstance(err, kind))
        print(f"{what}: {err}", file=sys.stderr)
        return 1
