"""Wallet commands: every input that changes prestige, holds or items, each with its idempotency key.

A command names the accounts it touches (so the ledger store can lock them in a fixed order before
planning) and says what it does to a :class:`~services.wallet.ledger.Draft`. By concept:

- :mod:`.base` — :class:`Command` itself, and the id check every input and read goes through;
- :mod:`.play` — what play at a table causes (hands, escapes, fees, 换牌, items, 猜大小), with the
  H1 and H3 caps;
- :mod:`.grants` — minting and burning: grants and house bots' top-ups;
- :mod:`.holds` — a pairing's holds, placed and released.
"""

from services.wallet.commands.base import Command, check_ids
from services.wallet.commands.grants import BotTopUp, Grant, Minting
from services.wallet.commands.holds import PlaceHold, ReleaseHolds
from services.wallet.commands.play import (
    FEES,
    Charge,
    EscapePenalty,
    Guess,
    GuessSettlement,
    HandSettlement,
    ItemUse,
    TableCommand,
    TableOpening,
    carried_transfer,
    charge_fee,
)

__all__ = [
    "FEES",
    "BotTopUp",
    "Charge",
    "Command",
    "EscapePenalty",
    "Grant",
    "Guess",
    "GuessSettlement",
    "HandSettlement",
    "ItemUse",
    "Minting",
    "PlaceHold",
    "ReleaseHolds",
    "TableCommand",
    "TableOpening",
    "carried_transfer",
    "charge_fee",
    "check_ids",
]
