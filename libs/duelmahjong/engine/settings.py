"""Room settings: every option a room fixes for its tables, in one validated frozen object.

The matchmaking service builds it from room configuration; the engine only reads it. Defaults follow
docs/decisions.md: no in-game offers unless the room sets a probability (T5), 2 revealed bonus tiles (D1),
erren exchanges limited to 5 with the first free (T4), 猜大小 off (T12), 15 s + 30 s bank (T11).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from duelmahjong.engine.errors import SettingsError

PROFILES = ("duel", "erren")
NEGOTIATED_MULTIPLIERS = (1, 2, 5, 10)  # T7
# Default minimum fan: duel wins always score at least 推倒胡 (1); erren 起和 is 8 (E16).
DEFAULT_MINIMUM_FAN = {"duel": 1, "erren": 8}


@dataclass(frozen=True, slots=True)
class RoomSettings:
    """The rule options of one room (docs/decisions.md §5). Validated on construction."""

    profile: str = "duel"
    minimum_fan: int | None = None  # None = the profile's default
    triplet_offer_probability: float = 0.0  # T5 in-game 换牌 (duel)
    rub_offer_probability: float = 0.0  # T5 搓牌 (duel)
    items_enabled: bool = True  # T6 (duel)
    guess_enabled: bool = False  # T12 猜大小 (duel)
    bonus_tile_count: int = 2  # D1 (duel): 1–4
    exchange_limit: int | None = None  # T4: None = the profile's (duel unlimited, erren 5)
    exchange_fee: int = 0  # T4 erren: the cost of each exchange after the first
    task_multiplier: int = 2  # T8 erren
    max_win_doublings: int = 8  # T8 erren 胡加倍
    negotiated_multiplier: int = 1  # T7 (duel), agreed before the table opens
    decision_seconds: float = 15.0  # T11
    time_bank_seconds: float = 30.0  # T11

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise SettingsError(f"unknown profile {self.profile!r}; expected one of {', '.join(PROFILES)}")
        for name in ("triplet_offer_probability", "rub_offer_probability"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise SettingsError(f"{name} must be between 0 and 1, got {value}")
        if self.triplet_offer_probability + self.rub_offer_probability > 1.0:
            raise SettingsError("triplet and rub offer probabilities together must not exceed 1")
        if not 1 <= self.bonus_tile_count <= 4:
            raise SettingsError(f"bonus_tile_count must be 1–4 (D1), got {self.bonus_tile_count}")
        if self.minimum_fan is not None and self.minimum_fan < 0:
            raise SettingsError(f"minimum_fan must not be negative, got {self.minimum_fan}")
        if self.exchange_limit is not None and self.exchange_limit < 0:
            raise SettingsError(f"exchange_limit must not be negative, got {self.exchange_limit}")
        if self.exchange_fee < 0:
            raise SettingsError(f"exchange_fee must not be negative, got {self.exchange_fee}")
        if self.task_multiplier < 1:
            raise SettingsError(f"task_multiplier must be at least 1, got {self.task_multiplier}")
        if not 0 <= self.max_win_doublings <= 8:
            raise SettingsError(f"max_win_doublings must be 0–8 (T8), got {self.max_win_doublings}")
        if self.negotiated_multiplier not in NEGOTIATED_MULTIPLIERS:
            raise SettingsError(
                f"negotiated_multiplier must be one of {NEGOTIATED_MULTIPLIERS} (T7), "
                f"got {self.negotiated_multiplier}"
            )
        if self.decision_seconds <= 0 or self.time_bank_seconds < 0:
            raise SettingsError("decision_seconds must be positive and time_bank_seconds not negative")

    @property
    def is_duel(self) -> bool:
        return self.profile == "duel"

    @property
    def effective_minimum_fan(self) -> int:
        return DEFAULT_MINIMUM_FAN[self.profile] if self.minimum_fan is None else self.minimum_fan

    @property
    def effective_exchange_limit(self) -> int | None:
        if self.exchange_limit is not None:
            return self.exchange_limit
        return None if self.is_duel else 5

    def to_json(self) -> dict[str, Any]:
        # Every field is a plain value: no recursive ``asdict`` needed (a table is opened per pairing).
        return {name: getattr(self, name) for name in _FIELD_NAMES}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoomSettings:
        unknown = sorted(set(data) - set(_FIELD_NAMES))
        if unknown:
            raise SettingsError(f"unknown room settings: {', '.join(unknown)}")
        return cls(**data)


_FIELD_NAMES = tuple(f.name for f in fields(RoomSettings))
