"""What matchmaking deals in: queue entries, pairings and their states, and the ports of the services
it calls (the wallet's holds, the table servers' ``OpenTable``, bot fill) — implemented over gRPC in
:mod:`services.matchmaking.remote` and :mod:`services.matchmaking.bots`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from duelmahjong.platform.errors import PermissionDenied
from services.matchmaking.directory import TableServer
from services.matchmaking.rooms import Room
from services.matchmaking.updates import Update


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

    async def open(self, server: TableServer, pairing: Pairing) -> OpenedTable: ...


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


@dataclass(eq=False)
class QueueEntry:
    ticket_id: str
    player_id: str
    room: Room
    carry: int
    skill: SkillEstimate  # in the room's profile, as the wallet had it at enqueue
    enqueued_at: float
    expires_at: float
    updates: asyncio.Queue[Update] = field(default_factory=asyncio.Queue)
    is_bot: bool = False
    fill_for: str = ""  # a bot's: the ticket it was started for
    bot_requested: bool = False
    bot_not_before: float = 0.0  # after a failed bot fill: when to try again
    items: dict[int, int] = field(default_factory=dict)  # T6 counts from the wallet (item rooms only)
    display_name: str = ""  # the name given at login, from the wallet
    # A private table's (OpenPrivateTable / JoinPrivateTable): its code; such an entry is in no queue,
    # never paired by the queue nor given a bot.
    private_code: str = ""
    # An opener's: the pairing id its hold was placed under when it opened (the pairing's, once joined).
    held_for: str = ""
    pairing: Pairing | None = None
    done: bool = False

    def send(self, update: Update) -> None:
        self.updates.put_nowait(update)


@dataclass(frozen=True)
class TableLocation:
    """Where a pairing's table is served (or was, once closed), and who may ask."""

    table_id: str
    address: str
    server_id: str
    players: tuple[str, str]
    open: bool


# Pairing states
HOLDING, NEGOTIATING, ALLOCATING, PLAYING, ENDED = "holding", "negotiating", "allocating", "playing", "ended"


@dataclass(eq=False)
class Pairing:
    pairing_id: str
    room: Room
    seats: tuple[QueueEntry, QueueEntry]  # SEAT_FIRST (waited longest, proposes — T7), SEAT_SECOND
    state: str = HOLDING
    multiplier: int = 0
    negotiation_deadline: float = 0.0
    table_id: str = ""
    # Once PLAYING: the server process hosting the table, where clients reach it, and when that
    # process took it (opened or adopted it; for loss detection).
    server_id: str = ""
    incarnation: str = ""
    address: str = ""
    opened_at: float = 0.0
    lost_since: float = 0.0  # when its server was first seen lost (0: not lost); adoption may follow
    closing_lost: bool = False  # a TableClosed on the lost table's behalf is being published
    lost_retry_at: float = 0.0  # after that publish failed: not before this
    first_opened_at: float = 0.0  # when the table opened (kept through adoptions), on matchmaking's clock
    # A private table (OpenPrivateTable / JoinPrivateTable): never listed for spectators
    # (ListLiveTables), never watchable, archived for its two players only (the table keeps the flag).
    private_table: bool = False

    def location(self, *, open_: bool = True) -> TableLocation:
        """Where its table is served, as LocateTable tells its players."""
        players = (self.seats[0].player_id, self.seats[1].player_id)
        return TableLocation(self.table_id, self.address, self.server_id, players, open_)

    def seat_of(self, player_id: str) -> int:
        for seat, entry in enumerate(self.seats):
            if entry.player_id == player_id:
                return seat
        raise PermissionDenied(f"you are not a player of pairing {self.pairing_id}")
