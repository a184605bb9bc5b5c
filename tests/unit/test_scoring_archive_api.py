"""The archive's page tokens, and the database variable each service reads (the stack sets the same)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from duelmahjong.platform.config import ConfigError
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.platform.stackfile import DATABASE_VARIABLES, database_variable
from services.scoring.archive_api import page_key, page_token
from services.scoring.archive_store import PageKey
from services.scoring.config import ScoringConfig
from services.wallet.config import WalletConfig


def test_a_page_token_names_where_the_page_ended() -> None:
    key = PageKey(datetime(2031, 2, 3, 4, 5, 6, 789000, tzinfo=UTC), "p-42")
    token = page_token(key)
    assert "p-42" not in token  # opaque to clients
    assert page_key(token) == key
    assert page_key("") is None


@pytest.mark.parametrize("token", ["nonsense!", "e30", page_token(PageKey(datetime(2031, 1, 1), "p"))])
def test_a_token_no_list_gave_is_invalid_argument(token: str) -> None:
    with pytest.raises(InvalidArgument, match="page_token is not one ListMatches gave"):
        page_key(token)


def test_each_service_reads_its_database_url_where_make_run_puts_it() -> None:
    assert database_variable("wallet") == WalletConfig.database_variable() == "DATABASE_URL"
    assert database_variable("scoring") == ScoringConfig.database_variable() == "SCORING_DATABASE_URL"
    assert set(DATABASE_VARIABLES) == {"wallet", "scoring"}


def test_scoring_refuses_to_start_without_its_archive_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="SCORING_DATABASE_URL is required"):
        ScoringConfig.from_env(
            {
                "TOKEN_SECRET": "x" * 32,
                "NATS_URL": "nats://127.0.0.1:1",
                "TLS_CERT_FILE": "server.pem",
                "TLS_KEY_FILE": "server-key.pem",
            }
        )


def test_only_a_replay_reveals_what_play_hid_and_never_as_the_servers_own_state() -> None:
    """The archive's answers never nest a server-only message (server_state.proto); the seed and
    the wall reach a client only inside a Replay, which the archive serves for hands that are over."""
    from google.protobuf.descriptor import FieldDescriptor

    from duelmahjong.v1 import archive_pb2, server_state_pb2
    from tests.unit.test_proto_contract import hidden_state_leaks, reachable_fields

    server_only = {m.full_name for m in server_state_pb2.DESCRIPTOR.message_types_by_name.values()}
    for method in archive_pb2.DESCRIPTOR.services_by_name["ArchiveService"].methods:
        fields: list[tuple[str, FieldDescriptor]] = list(reachable_fields(method.output_type))
        assert not [
            p for p, f in fields if f.message_type is not None and f.message_type.full_name in server_only
        ]
        leaks = hidden_state_leaks(method.output_type)
        if method.name == "GetReplay":
            assert leaks and all(".replay." in path for path in leaks), leaks
        else:
            assert leaks == [], f"{method.name} could reveal hidden tiles: {leaks}"
