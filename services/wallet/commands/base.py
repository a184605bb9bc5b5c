"""What every wallet command is: an idempotency key, the accounts it locks, and what it does to a draft.

Also the check of the ids a command names, which the wallet's reads use too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from duelmahjong.platform import ids
from services.wallet.errors import InvalidAmountError
from services.wallet.ledger import Draft, House


def check_ids(*values: str) -> None:
    """Every id a wallet input names; also checked before a read, so a bad one never reaches SQL."""
    for value in values:
        if not ids.is_entity_id(value):
            raise InvalidAmountError(f"bad id {value!r}: {ids.ENTITY_ID_RULE}")


def _check_non_negative(**amounts: int) -> None:
    for name, value in amounts.items():
        if value < 0:
            raise InvalidAmountError(f"{name} must be >= 0, got {value}")


def check_at_most(highest: int, **amounts: int) -> None:
    _check_non_negative(**amounts)
    for name, value in amounts.items():
        if value > highest:
            raise InvalidAmountError(f"{name} must be at most {highest}, got {value}")


@dataclass(frozen=True, slots=True)
class Command(ABC):
    key: str  # the idempotency key: one command with a given key changes the ledger at most once
    kind: ClassVar[str] = "command"
    at_table: ClassVar[bool] = False  # play at a table draws on the players' holds (carry, fee reserve)
    houses: ClassVar[tuple[House, ...]] = ()  # house accounts the command may touch
    # It only moves prestige between its accounts and changes holds that exist: it may be planned on a
    # snapshot read and written by one version-checked statement (ledger_store.py); anything else (new
    # holds, items, a table or a closure to record) takes the locked path.
    snapshot_safe: ClassVar[bool] = False

    @abstractmethod
    def players(self) -> tuple[str, ...]:
        """The players whose accounts the command locks."""

    @property
    def pairing(self) -> str:
        """The pairing whose holds the command places or releases ("" = use the open holds)."""
        return ""

    @property
    def hand(self) -> str:
        return ""

    @property
    def table(self) -> str:
        return ""

    @property
    def reason(self) -> str:
        return ""

    @property
    def actor(self) -> str:
        return ""

    @property
    def rated_profile(self) -> str:
        """The profile whose skill ratings the command moves ("" = none): its players' ratings are
        read with their accounts."""
        return ""

    @property
    def item_owner(self) -> str | None:
        """The player whose inventory the command reads, if any."""
        return None

    def validate(self) -> None:
        if not self.key or len(self.key) > 200:
            raise InvalidAmountError(f"idempotency key must be 1 to 200 characters, got {self.key!r}")
        check_ids(*self.players())

    @abstractmethod
    def apply(self, draft: Draft) -> None:
        """Change the draft: postings, holds, items. Raises a WalletError to reject the command."""
