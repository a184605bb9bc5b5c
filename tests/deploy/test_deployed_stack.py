"""A deployed stack works as one product: every service is SERVING for `duel status`, and a session
token the wallet issues is accepted by every other service (the same TOKEN_SECRET everywhere).

The compose test runner (deploy/compose, profile "test") runs these against the composed stack:
it sets DUEL_DEPLOYED_STACK=1 and the *_ADDRESS variables. Elsewhere (`make test`) they run against
the stack `make run` runs, started here on the session's NATS and Postgres.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import grpc
import pytest

from duelmahjong.platform import auth
from duelmahjong.platform.stackfile import StackState, client_tls
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def addresses(kit: ModuleType, request: pytest.FixtureRequest) -> dict[str, str]:
    """service -> gRPC address of the stack under test."""
    variables = kit.address_variables()
    if os.environ.get("DUEL_DEPLOYED_STACK"):
        return {service: os.environ[variable] for service, variable in variables.items()}
    state: StackState = request.getfixturevalue("make_run_stack")[1]
    return {service: state.target(service) for service in variables}


@pytest.fixture(scope="module")
def tls(request: pytest.FixtureRequest) -> ClientTls:
    """How the stack under test is dialed: TLS_CA_FILE (compose), or the CA of `make run`."""
    if os.environ.get("DUEL_DEPLOYED_STACK"):
        return client_tls(environ=os.environ)
    state: StackState = request.getfixturevalue("make_run_stack")[1]
    return state.client_tls()


def test_duel_status_sees_every_service_serving(
    kit: ModuleType, addresses: dict[str, str], tls: ClientTls
) -> None:
    flags = [f"--{service}={address}" for service, address in addresses.items()]
    flags += [f"--ca-file={tls.ca_file}"] if tls.ca_file else []
    done = subprocess.run(
        [str(Path(sys.executable).parent / "duel"), "status", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    serving = {line.split()[0] for line in done.stdout.splitlines() if line.split()[-1:] == ["SERVING"]}
    assert serving == set(kit.SERVICES)


def _code(call: grpc.UnaryUnaryMultiCallable, request: object, metadata: tuple[tuple[str, str], ...]) -> str:
    try:
        call(request, metadata=metadata, timeout=10)
    except grpc.RpcError as error:
        return str(error.code().name)  # type: ignore[attr-defined]
    return "OK"


def test_a_wallet_session_token_is_accepted_by_every_service(
    addresses: dict[str, str], tls: ClientTls
) -> None:
    with tls.blocking_channel(addresses["wallet"]) as channel:
        login = wallet_pb2_grpc.WalletServiceStub(channel).GuestLogin(
            wallet_pb2.GuestLoginRequest(display_name="deploy-check"), timeout=10
        )
    bearer = auth.bearer_metadata(login.session.token)
    calls = {
        "matchmaking": (
            matchmaking_pb2_grpc.MatchmakingServiceStub,
            "ListRooms",
            matchmaking_pb2.ListRoomsRequest(),
        ),
        "scoring": (scoring_pb2_grpc.ScoringServiceStub, "GetCatalogue", scoring_pb2.GetCatalogueRequest()),
        "table": (table_pb2_grpc.TableServiceStub, "GetTableStatus", table_pb2.GetTableStatusRequest()),
        "wallet": (wallet_pb2_grpc.WalletServiceStub, "GetBalance", wallet_pb2.GetBalanceRequest()),
    }
    for service, (stub_class, method, request) in calls.items():
        with tls.blocking_channel(addresses[service]) as channel:
            call = getattr(stub_class(channel), method)
            # Without a token every service refuses; with the wallet's, none does (whatever the
            # RPC then answers), so all of them verify with the same key.
            assert _code(call, request, ()) == "UNAUTHENTICATED", service
            assert _code(call, request, bearer) != "UNAUTHENTICATED", service
