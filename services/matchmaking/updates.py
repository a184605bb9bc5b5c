"""The updates of one queue entry, as domain values (``QueueUpdate`` of matchmaking.proto on the wire),
derived from the records by :mod:`.feed`."""

from __future__ import annotations

from dataclasses import dataclass

AWAITING_PROPOSAL, PROPOSED, ACCEPTED, DECLINED = "awaiting_proposal", "proposed", "accepted", "declined"


@dataclass(frozen=True)
class Queued:
    ticket_id: str
    expires_in_seconds: float


@dataclass(frozen=True)
class Position:
    position: int  # 1-based
    waiting: int


@dataclass(frozen=True)
class Matched:
    pairing_id: str
    seat: int  # 0 = SEAT_FIRST
    opponent_player_id: str
    opponent_is_bot: bool
    opponent_display_name: str = ""
    private_table: bool = False


@dataclass(frozen=True)
class Negotiation:
    pairing_id: str
    state: str
    multiplier: int
    your_turn: bool
    deadline: float  # on the matchmaker's clock


@dataclass(frozen=True)
class TableReady:
    pairing_id: str
    table_id: str
    address: str
    table_ticket: str
    seat: int


@dataclass(frozen=True)
class PrivateCode:
    """The code of the private table a player opened, for a friend to join with."""

    code: str
    room_id: str
    expires_in_seconds: float


@dataclass(frozen=True)
class Expired:
    reason: str


Update = Queued | Position | Matched | Negotiation | TableReady | Expired | PrivateCode
