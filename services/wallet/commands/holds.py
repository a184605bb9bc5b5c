"""The commands on a pairing's holds: placed when a player enters it, released when it closes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from services.wallet.commands.base import Command, check_ids
from services.wallet.ledger import Draft


@dataclass(frozen=True, slots=True)
class PlaceHold(Command):
    """A player enters a pairing: reserve their carry (携带威望) plus the fee."""

    pairing_id: str = ""
    player: str = ""
    carry: int = 0
    fee: int = 0
    kind: ClassVar[str] = "hold"

    def players(self) -> tuple[str, ...]:
        return (self.player,)

    @property
    def pairing(self) -> str:
        return self.pairing_id

    def validate(self) -> None:
        Command.validate(self)
        check_ids(self.pairing_id)

    def apply(self, draft: Draft) -> None:
        draft.place_hold(self.pairing_id, self.player, self.carry, self.fee)


@dataclass(frozen=True, slots=True)
class ReleaseHolds(Command):
    """A pairing closed (or one player left it): release what is left of the holds.

    With no ``seats`` the ledger store releases every open hold of the pairing.
    """

    pairing_id: str = ""
    seats: tuple[str, ...] = ()
    table_id: str = ""
    kind: ClassVar[str] = "release"

    def players(self) -> tuple[str, ...]:
        return self.seats

    @property
    def pairing(self) -> str:
        return self.pairing_id

    @property
    def table(self) -> str:
        return self.table_id

    def validate(self) -> None:
        Command.validate(self)
        check_ids(self.pairing_id)

    def apply(self, draft: Draft) -> None:
        draft.release_holds(self.pairing_id, closing=bool(self.table_id))  # TableClosed ends the pairing
