"""The ports of the services matchmaking calls (the wallet's holds, the table servers' ``OpenTable``,
bot fill) — implemented over gRPC in :mod:`services.matchmaking.remote` and
:mod:`services.matchmaking.bots` — and the values they trade in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from services.matchmaking.directory import TableServer
from services.matchmaking.records import Pairing
from services.matchmaking.rooms import Room


@dataclass(frozen=True)
class SkillEstimate:
    """A player's skill rating in one profile as the wallet keeps it (Glicko scale): the estimate and
    its uncertainty, which the pairing window compares (docs/protocol.md "Pairing")."""

    rating: float
    deviation: float


class Wallet(Protocol):
    """What matchmaking asks of the wallet (server to server)."""

    async def available(self, player_id: str) -> int: ...
    async def rating(self, player_id: str, profile: str) -> SkillEstimate:
        """The player's skill rating in ``profile`` (GetRating), read when the player enqueues."""
        ...

    async def display_name(self, player_id: str) -> str:
        """The name the player gave at login (shown to the opponent and at the table)."""
        ...

    async def place_hold(self, player_id: str, pairing_id: str, amount: int, fee: int) -> None: ...
    async def release_hold(self, player_id: str, pairing_id: str) -> None: ...
    async def inventory(self, player_id: str) -> dict[int, int]:
        """T6: the player's item counts (``ItemKind`` → count), read when the pairing is made."""
        ...


@dataclass(frozen=True)
class OpenedTable:
    address: str
    tickets: dict[int, str]  # seat (0 first, 1 second) → table ticket
    incarnation: str = ""  # of the server process that opened it ("" from a server that does not say)


class Tables(Protocol):
    """Opening a table on one table server (``TableService.OpenTable``)."""

    async def open(self, server: TableServer, room: Room, pairing: Pairing) -> OpenedTable: ...


class LostTables(Protocol):
    """Closing a table whose server was lost: ``TableClosed`` published on the table's behalf, so the
    wallet releases the pairing's holds as for any close."""

    async def close(self, pairing: Pairing, reason: str) -> None: ...


class BotFill(Protocol):
    """Starts a bot client that enqueues in ``room`` to play against a waiting player; raises
    :class:`BotsBusy` when no house bot is free."""

    async def start(self, room: Room, for_ticket: str) -> str: ...


class BotsBusy(Exception):
    """No house bot can play now: the fill is asked again ``retry_after`` seconds later (0: next tick)."""

    retry_after: float = 0.0


class TableUnavailable(Exception):
    """The chosen table server could not open the table (full, draining, unreachable)."""


@dataclass(frozen=True)
class TableLocation:
    """Where a pairing's table is served (or was, once closed), and who may ask."""

    table_id: str
    address: str
    server_id: str
    players: tuple[str, str]
    open: bool
