"""Fixtures every suite may use: real NATS (JetStream) and Postgres, started once per test session.

The servers are embedded (``duelmahjong.platform.embedded``), on free ports, with their data in
temporary directories; they start only when a test asks for them, so unit tests pay nothing. Set
``NATS_URL`` / ``DATABASE_URL`` (an admin URL) to run the suites against servers of your own instead.

- ``nats_access`` — the session NATS's identities and CA (None when ``NATS_URL`` names your own
  server): every connection is one of the platform's identities, over TLS.
- ``nats_server_url`` — the session's NATS URL (``tls://``).
- ``harness_nats`` — ``Bus.connect(url, name=…, **harness_nats)``: the options of the test harness's
  identity, which may do anything (it plays any producer), with the CA that verifies the server.
- ``postgres_admin_url`` — the session's Postgres admin URL (database ``postgres``).
- ``token_secret`` — the HMAC key tokens are signed with in tests.
- ``local_ca`` — the session's certificate authority (``pki.LocalAuthority``): every gRPC server of
  the suites serves TLS with a certificate it issued (``tls_env``), every client trusts it
  (``client_tls``). Plaintext exists only in tests about plaintext.
- ``tls_env`` — ``TLS_CERT_FILE`` / ``TLS_KEY_FILE`` / ``TLS_CA_FILE`` of a server certificate for
  127.0.0.1 and localhost: what a service started in a test serves.
- ``client_tls`` — the ``ClientTls`` every test client dials with (verifying ``local_ca``).
- ``scratch_dir`` — a temporary directory for a server's data (e.g. a whole stack), see below.
- ``seat_secrets`` — ``seat_secrets(event)``: the fields of a ``SeatEvent`` set that only a seat may
  see (a spectator's copy must have none).
- ``unique_name`` — ``unique_name("WALLET")`` → ``"WALLET_3f2a9c1d"``: stream, durable and database
  names that no other test uses, so tests never see each other's data.

Per-test fixtures (a fresh database, a connected bus, a running service) are in
``tests/integration/conftest.py``.
"""

from __future__ import annotations

import os

# Before anything imports grpc (see libs/duelmahjong/platform/__init__.py): the suites spawn stacks of
# services while their own gRPC channels are busy.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from duelmahjong.platform.embedded import EmbeddedNats, EmbeddedPostgres
from duelmahjong.platform.nats_permissions import HARNESS, SERVICES, TOOLS, LocalAccess
from duelmahjong.platform.pki import LocalAuthority
from duelmahjong.platform.tls import ClientTls
from duelmahjong.rules.tables import get_tables

# Property tests check results, not speed: on two loaded cores one example can overrun hypothesis's
# default 200 ms deadline, and such a failure says nothing about the code. Timed behaviour has
# its own tests and benches.
settings.register_profile("duelmahjong", deadline=None)
settings.load_profile("duelmahjong")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Load the rules tables (building them, seconds, if no cache has them) before any test: they load
    on first use, and a first use inside a timed test (a hypothesis deadline) would pay for the build."""
    get_tables()


@pytest.fixture(scope="session")
def nats_access(tmp_path_factory: pytest.TempPathFactory, local_ca: LocalAuthority) -> LocalAccess | None:
    if os.environ.get("NATS_URL"):
        return None
    # the session's one CA issues the NATS server's certificate too: a service's TLS_CA_FILE verifies
    # every server it dials, gRPC's and NATS'
    directory = tmp_path_factory.mktemp("nats-access")
    return LocalAccess.create(local_ca.directory, directory / "nkeys", (*SERVICES, TOOLS, HARNESS))


@pytest.fixture(scope="session")
def nats_server_url(
    tmp_path_factory: pytest.TempPathFactory, nats_access: LocalAccess | None
) -> Iterator[str]:
    external = os.environ.get("NATS_URL")
    if external:
        yield external
        return
    with EmbeddedNats(tmp_path_factory.mktemp("nats"), access=nats_access) as server:
        yield server.url


@pytest.fixture(scope="session")
def harness_nats(nats_access: LocalAccess | None) -> dict[str, str]:
    if nats_access is None:
        return {}
    return {"seed_file": str(nats_access.seed_file(HARNESS)), "ca_file": str(nats_access.ca_file)}


@contextmanager
def scratch_directory(prefix: str) -> Iterator[Path]:
    """A temporary directory OUTSIDE pytest's ``pytest-of-<user>`` root, removed afterwards.

    As root, Postgres runs as another user who must traverse the path to its data; every pytest
    session that starts resets ``pytest-of-root`` to mode 0700, which would cut a running server off
    from its files. So server data lives in a directory of its own under the system tmp dir.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external
        return
    # fsync off: test data is thrown away, and it makes every commit much cheaper on a shared machine.
    with scratch_directory("duel-test-pg-") as data_dir, EmbeddedPostgres(data_dir, durable=False) as server:
        yield server.url


@pytest.fixture
def scratch_dir() -> Iterator[Path]:
    """Like ``tmp_path``, but safe for data of servers running as another user (see above)."""
    with scratch_directory("duel-test-") as path:
        yield path


@pytest.fixture(scope="session")
def token_secret() -> str:
    return secrets.token_urlsafe(32)


@pytest.fixture(scope="session")
def local_ca() -> Iterator[LocalAuthority]:
    with scratch_directory("duel-test-ca-") as directory:
        yield LocalAuthority.open(directory)


@pytest.fixture(scope="session")
def tls_env(local_ca: LocalAuthority) -> dict[str, str]:
    leaf = local_ca.issue("test-server", ["localhost", "127.0.0.1"])
    return {
        "TLS_CERT_FILE": str(leaf.cert),
        "TLS_KEY_FILE": str(leaf.key),
        "TLS_CA_FILE": str(local_ca.ca_cert),
    }


@pytest.fixture(scope="session")
def client_tls(local_ca: LocalAuthority) -> ClientTls:
    return ClientTls(ca_file=local_ca.ca_cert)


@pytest.fixture
def unique_name() -> Callable[[str], str]:
    def make(prefix: str) -> str:
        return f"{prefix}_{uuid.uuid4().hex[:8]}"

    return make


# What only a seat may see, by SeatEvent kind: its tiles, what it gave and got, its secret choices.
_SEAT_SECRETS = {
    "tiles_dealt": ("tiles",),
    "tile_drawn": ("tile",),
    "tiles_exchanged": ("given", "received"),
    "offer_resolved": ("offer_id", "given", "received"),
    "item_applied": ("given", "received"),
    "doubling_chosen": ("start_doubled",),
}


def _seat_secrets(event: Any) -> list[str]:
    from duelmahjong.v1 import tiles_pb2

    which = event.WhichOneof("kind") or ""
    part = getattr(event, which, None)
    found = [f"{which}.{name}" for name in _SEAT_SECRETS.get(which, ()) if getattr(part, name)]
    if which == "offer_made" and part.HasField("offer"):
        found.append("offer_made.offer")
    if which == "meld_made" and part.meld.kind == tiles_pb2.MELD_KIND_CONCEALED_KONG and part.meld.tiles:
        found.append("meld_made.meld.tiles")  # which kong it is stays the konger's
    return found


@pytest.fixture(scope="session")
def seat_secrets() -> Callable[[Any], list[str]]:
    return _seat_secrets
