"""Rooms from configuration: what a room fixes for its tables, validated when the service starts.

A room is one JSON object; the service reads a list of them from ``MATCHMAKING_ROOMS_FILE`` (or the
inline ``MATCHMAKING_ROOMS``), else the default rooms of ``rooms.json`` beside this module. The rule
options are checked by the engine's own :class:`~duelmahjong.engine.settings.RoomSettings` (one place
knows what a valid room of docs/decisions.md §5 is); the money and queue settings are checked here.

>>> rooms = parse_rooms('[{"room_id": "duel-10", "profile": "duel", "fan_rate": 10}]')
>>> room = rooms["duel-10"]
>>> (room.profile, room.fan_rate, room.fee, room.carry_min <= room.carry_max)
('duel', 10, 0, True)
>>> parse_rooms('[{"room_id": "x", "profile": "duel", "fan_rate": 0}]')
Traceback (most recent call last):
...
services.matchmaking.rooms.RoomConfigError: room 'x': fan_rate must be positive (H1: 1番 = N 威望)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from duelmahjong.client.policy import POLICIES
from duelmahjong.contract import MAX_CLAIM_WINDOW_MS
from duelmahjong.engine.errors import SettingsError
from duelmahjong.engine.settings import RoomSettings

DEFAULT_ROOMS_FILE = Path(__file__).with_name("rooms.json")
DEFAULT_SPECTATE_DELAY_SECONDS = 30  # RoomRules.spectate_delay_seconds' default
MAX_SPECTATE_DELAY_SECONDS = 3600


class RoomConfigError(ValueError):
    """The room configuration is not valid; the message names the room and what is wrong."""


@dataclass(frozen=True)
class Room:
    """One room: profile, money (1番 = ``fan_rate`` 威望, fee, limits) and rule options."""

    room_id: str
    profile: str
    fan_rate: int
    name: str = ""
    fee: int = 0
    minimum_balance: int = 0
    carry_min: int = 100
    carry_max: int = 1000
    minimum_fan: int = 0  # 0 = the profile's default (E16)
    revealed_bonus_tiles: int = 2  # D1
    triplet_offer_probability: float = 0.0  # T5
    pick_offer_probability: float = 0.0  # T5 搓牌
    items_enabled: bool = False  # T6
    guess_enabled: bool = False  # T12
    exchange_fee: int = 0  # T4 erren
    task_multiplier: int = 2  # T8 erren
    decision_millis: int = 15000  # T11
    time_bank_millis: int = 30000  # T11
    reconnect_grace_millis: int = 60000  # T10
    # Claim timing that leaks nothing (docs/protocol.md "Claim windows"): every discard holds the next
    # draw this long; 0 = none.
    claim_window_ms: int = 0
    # Queue: a ticket expires after this long unpaired; bot fill after bot_fill_seconds (0 = never).
    ticket_seconds: float = 300.0
    bot_fill_seconds: float = 0.0
    # The policy the room's fill bots play (duelmahjong.client.policy.POLICIES; docs/evaluation.md).
    bot_policy: str = "baseline"
    # Pairing: players pair when their skill ratings differ by at most rating_window (points) +
    # rating_window_deviations × √(d1² + d2²) (the uncertainty of the difference) +
    # rating_window_per_second × the longer wait (docs/protocol.md "Pairing").
    rating_window: float = 0.0
    rating_window_deviations: float = 1.0
    rating_window_per_second: float = 10.0
    negotiation_seconds: float = 30.0  # T7: time to propose / respond
    # Spectators may watch the room's public tables, what they see lagging play by the delay
    # (0 = DEFAULT_SPECTATE_DELAY_SECONDS), so a watcher cannot coach a player.
    watchable: bool = False
    spectate_delay_seconds: int = 0

    @property
    def spectate_delay(self) -> int:
        """The seconds a spectator's stream lags play, the default applied."""
        return self.spectate_delay_seconds or DEFAULT_SPECTATE_DELAY_SECONDS

    def needed(self, carry: int) -> int:
        """The available prestige a player must have to queue here with ``carry``."""
        return max(self.minimum_balance, carry + self.fee)

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise RoomConfigError(f"room {self.room_id!r}: " + "; ".join(problems))

    def _problems(self) -> list[str]:
        problems = []
        if not self.room_id or not self.room_id.replace("-", "").replace("_", "").isalnum():
            problems.append("room_id must be letters, digits, - and _")
        if self.fan_rate <= 0:
            problems.append("fan_rate must be positive (H1: 1番 = N 威望)")
        if self.fee < 0 or self.minimum_balance < 0 or self.exchange_fee < 0:
            problems.append("fee, minimum_balance and exchange_fee must not be negative")
        if not 0 < self.carry_min <= self.carry_max:
            problems.append(f"carry range {self.carry_min}..{self.carry_max} must satisfy 0 < min <= max")
        if self.decision_millis <= 0 or self.time_bank_millis < 0 or self.reconnect_grace_millis < 0:
            problems.append("decision_millis must be positive, time bank and reconnect grace not negative")
        window = self.claim_window_ms
        if not isinstance(window, int) or isinstance(window, bool) or not 0 <= window <= MAX_CLAIM_WINDOW_MS:
            problems.append(
                f"claim_window_ms must be a whole number 0..{MAX_CLAIM_WINDOW_MS} (0 = none), got {window!r}"
            )
        if self.ticket_seconds <= 0 or self.negotiation_seconds <= 0 or self.bot_fill_seconds < 0:
            problems.append("ticket_seconds and negotiation_seconds must be positive, bot_fill_seconds >= 0")
        if self.bot_policy not in POLICIES:
            problems.append(f"bot_policy must be one of {', '.join(POLICIES)}, got {self.bot_policy!r}")
        if not 0 <= self.spectate_delay_seconds <= MAX_SPECTATE_DELAY_SECONDS:
            problems.append(f"spectate_delay_seconds must be 0 (the default) .. {MAX_SPECTATE_DELAY_SECONDS}")
        if min(self.rating_window, self.rating_window_deviations, self.rating_window_per_second) < 0:
            problems.append("the rating window, its deviations and its widening must not be negative")
        try:
            self.engine_settings()
        except SettingsError as err:
            problems.append(str(err))
        return problems

    def engine_settings(self, negotiated: int = 1) -> RoomSettings:
        """The engine's view of this room's rule options (docs/decisions.md §5)."""
        return RoomSettings(
            profile=self.profile,
            minimum_fan=self.minimum_fan or None,
            triplet_offer_probability=self.triplet_offer_probability,
            rub_offer_probability=self.pick_offer_probability,
            items_enabled=self.items_enabled,
            guess_enabled=self.guess_enabled,
            bonus_tile_count=self.revealed_bonus_tiles,
            exchange_fee=self.exchange_fee,
            task_multiplier=self.task_multiplier,
            negotiated_multiplier=negotiated,
            decision_seconds=self.decision_millis / 1000,
            time_bank_seconds=self.time_bank_millis / 1000,
        )

    @property
    def plays_items(self) -> bool:
        """T6 items are duel's, and only in rooms that enable them."""
        return self.profile == "duel" and self.items_enabled

    @property
    def negotiates(self) -> bool:
        """T7 negotiation is a duel rule; erren pairings play at 1×."""
        return self.profile == "duel"

    def rating_window_for(self, deviations: tuple[float, float], seconds_waited: float) -> float:
        """How far apart two ratings with these deviations may be to pair after that wait: the
        difference of two estimates is uncertain by √(d1² + d2²), so two new players (350 each) pair
        across ~500 points at once, two settled ones (60 each) only within ~85 until they have waited."""
        return (
            self.rating_window
            + self.rating_window_deviations * math.hypot(*deviations)
            + self.rating_window_per_second * max(0.0, seconds_waited)
        )

    @classmethod
    def from_json(cls, data: Any) -> Room:
        if not isinstance(data, dict):
            raise RoomConfigError(f"a room must be a JSON object, got {data!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        label = data.get("room_id", "?")
        if unknown:
            raise RoomConfigError(f"room {label!r}: unknown settings {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as err:  # a required setting is missing
            raise RoomConfigError(f"room {label!r}: {err}") from None


def parse_rooms(text: str) -> dict[str, Room]:
    """Rooms from a JSON list; every room is validated, ids must be unique."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise RoomConfigError(f"room configuration is not JSON: {err}") from None
    if not isinstance(raw, list) or not raw:
        raise RoomConfigError("room configuration must be a non-empty JSON list of rooms")
    rooms: dict[str, Room] = {}
    for entry in raw:
        room = Room.from_json(entry)
        if room.room_id in rooms:
            raise RoomConfigError(f"room {room.room_id!r} is configured twice")
        rooms[room.room_id] = room
    return rooms


def load_rooms(inline: str, path: str) -> dict[str, Room]:
    """The configured rooms: inline JSON wins, then the file, then the default rooms."""
    if inline:
        return parse_rooms(inline)
    source = Path(path) if path else DEFAULT_ROOMS_FILE
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as err:
        raise RoomConfigError(f"cannot read the room configuration {source}: {err}") from None
    return parse_rooms(text)
