"""The two rule profiles as data (docs/decisions.md §1): tile set, deal sizes, flowers, catalogue, limits.

>>> duel = get_profile("duel")
>>> duel.wall_size, duel.in_play, duel.dealer_tiles, duel.revealed_bonus_tiles
(136, 71, 14, 2)
>>> duel.catalogue.cap, duel.escape_fan
(13, 64)
>>> get_profile("riichi")
Traceback (most recent call last):
...
duelmahjong.rules.errors.UnknownProfileError: unknown profile 'riichi'; known profiles: duel, erren
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from duelmahjong.rules.errors import InvalidHandError, UnknownProfileError
from duelmahjong.rules.tiles import PROFILE_KINDS, format_tiles

if TYPE_CHECKING:
    from duelmahjong.rules.description import HandDescription
    from duelmahjong.rules.patterns import Catalogue


@dataclass(frozen=True)
class Profile:
    """One rule profile. ``catalogue`` is loaded on first use (the catalogues import this package)."""

    id: str
    name_zh: str
    tile_kinds: frozenset[int]  # every kind the wall holds, flowers included
    wall_size: int
    in_play: int  # tiles used per hand; duel leaves the rest as the unused pool (T4, T5, T9)
    dealer_tiles: int
    nondealer_tiles: int
    has_flowers: bool  # erren: flowers are set aside and replaced (补花), E14
    revealed_bonus_tiles: int  # duel 花牌: tiles of the unused pool turned face up (D1); a room may set 1-4
    seven_pairs: bool
    thirteen_orphans: bool
    all_green_free_form: bool  # duel 绿一色 "可以乱牌" (D12)
    catalogue_module: str
    catalogue_name: str

    @cached_property
    def catalogue(self) -> Catalogue:
        module = importlib.import_module(self.catalogue_module)
        catalogue: Catalogue = getattr(module, self.catalogue_name)
        return catalogue

    @property
    def minimum_fan(self) -> int:
        """Default 起和 (E16); rooms may change it."""
        return self.catalogue.minimum

    @property
    def cap(self) -> int | None:
        return self.catalogue.cap

    @property
    def escape_fan(self) -> int:
        """The highest fan of the profile, the base of the escape penalty (H3)."""
        return self.catalogue.highest_fan

    def check_description(self, desc: HandDescription) -> None:
        """Raise InvalidHandError if the description uses something this profile does not have."""
        outside = sorted({kind for kind in desc.all_tiles() if kind not in self.tile_kinds})
        if outside:
            raise InvalidHandError(f"{format_tiles(outside)} not in the {self.id} tile set")
        if desc.context.flowers and not self.has_flowers:
            raise InvalidHandError(f"profile {self.id} has no flower tiles; context.flowers must be empty")
        bonus = desc.context.revealed_bonus_tiles
        if bonus and not self.revealed_bonus_tiles:
            raise InvalidHandError(f"profile {self.id} has no revealed bonus tiles (花牌)")
        if len(bonus) > 4:
            raise InvalidHandError(f"at most 4 revealed bonus tiles, got {len(bonus)}")
        outside = sorted({kind for kind in bonus if kind not in self.tile_kinds})
        if outside:
            raise InvalidHandError(
                f"revealed bonus tile {format_tiles(outside)} not in the {self.id} tile set"
            )


PROFILES: dict[str, Profile] = {
    "duel": Profile(
        id="duel",
        name_zh="决斗麻将",
        tile_kinds=PROFILE_KINDS["duel"],
        wall_size=136,
        in_play=71,
        dealer_tiles=14,
        nondealer_tiles=13,
        has_flowers=False,
        revealed_bonus_tiles=2,
        seven_pairs=True,
        thirteen_orphans=True,
        all_green_free_form=True,
        catalogue_module="duelmahjong.rules.catalogue_duel",
        catalogue_name="DUEL",
    ),
    "erren": Profile(
        id="erren",
        name_zh="二人麻将",
        tile_kinds=PROFILE_KINDS["erren"],
        wall_size=72,
        in_play=72,
        dealer_tiles=14,
        nondealer_tiles=13,
        has_flowers=True,
        revealed_bonus_tiles=0,
        seven_pairs=True,
        thirteen_orphans=False,  # impossible without 筒/条, and not in the 000 table
        all_green_free_form=False,
        catalogue_module="duelmahjong.rules.catalogue_erren",
        catalogue_name="ERREN",
    ),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name`` (``duel`` or ``erren``)."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfileError(
            f"unknown profile {name!r}; known profiles: {', '.join(PROFILES)}"
        ) from None
