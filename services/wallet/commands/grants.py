"""The commands that mint or burn: a grant (starting, admin; prestige and items) and a house bot's top-up.

Both move prestige between the mint (the grants house account) and one player, audited with who asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from services.wallet.commands.base import Command, check_ids
from services.wallet.errors import InvalidAmountError
from services.wallet.ledger import AccountRef, Draft, House

# An admin grant moves at most this much prestige either way, and this many of an item: balances are
# int64 and item counts int32 in Postgres, so anything near those limits is a typo, not a grant.
MAX_GRANT = 10**12
MAX_ITEM_GRANT = 100_000


@dataclass(frozen=True, slots=True)
class Minting(Command):
    """Prestige minted to one player from the grants house account (the mint), audited with who asked."""

    player: str = ""
    granted_by: str = ""
    kind: ClassVar[str] = "grant"
    houses: ClassVar[tuple[House, ...]] = (House.GRANTS,)

    def players(self) -> tuple[str, ...]:
        return (self.player,)

    @property
    def actor(self) -> str:
        return self.granted_by


@dataclass(frozen=True, slots=True)
class Grant(Minting):
    """Prestige minted to a player (starting grant, admin grant) or, if negative, burnt."""

    amount: int = 0
    grant_reason: str = ""
    items: tuple[tuple[str, int], ...] = ()  # (item, quantity) granted in the same transaction

    @property
    def reason(self) -> str:
        return self.grant_reason

    @property
    def item_owner(self) -> str | None:
        return self.player if self.items else None

    def validate(self) -> None:
        Command.validate(self)
        if self.amount == 0 and not self.items:
            raise InvalidAmountError("a grant needs a prestige amount or items")
        if abs(self.amount) > MAX_GRANT:
            raise InvalidAmountError(
                f"a grant moves at most {MAX_GRANT} prestige either way, got {self.amount}"
            )
        for item, quantity in self.items:
            check_ids(item)
            if not 0 < quantity <= MAX_ITEM_GRANT:
                raise InvalidAmountError(
                    f"item {item!r}: quantity must be 1-{MAX_ITEM_GRANT}, got {quantity}"
                )
        if not self.grant_reason.strip():
            raise InvalidAmountError("a grant needs an audit reason")

    def apply(self, draft: Draft) -> None:
        player, mint = AccountRef.player(self.player), AccountRef.house(House.GRANTS)
        if self.amount > 0:
            draft.move(mint, player, self.amount, "grant")
        elif self.amount < 0:
            draft.move(player, mint, -self.amount, "grant")  # a burn takes free prestige only
        for item, quantity in self.items:
            draft.change_item(self.player, item, quantity)


@dataclass(frozen=True, slots=True)
class BotTopUp(Minting):
    """A house bot short of what a room needs gets prestige minted up to ``minimum`` free.

    The shortfall is worked out on the locked account, so a settlement landing meanwhile is counted
    and the bot never ends above ``minimum`` by a top-up. A bot still holding for a pairing gets
    nothing: its stake comes back when that pairing closes, and minting for it would inflate.
    """

    minimum: int = 0

    @property
    def reason(self) -> str:
        return "bot top-up"

    def validate(self) -> None:
        Command.validate(self)
        if not 0 < self.minimum <= MAX_GRANT:
            raise InvalidAmountError(f"a bot top-up aims at 1-{MAX_GRANT} prestige, got {self.minimum}")

    def apply(self, draft: Draft) -> None:
        state = draft.account(AccountRef.player(self.player))
        if state.held == 0 and state.free < self.minimum:
            draft.move(AccountRef.house(House.GRANTS), state.ref, self.minimum - state.free, "grant")
