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
        ScoringConfig.from_env({"TOKEN_SECRET": "x" * 32, "NATS_URL": "nats://127.0.0.1:1"})
