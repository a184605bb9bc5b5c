"""What a rule profile is apart from its fan catalogue (docs/decisions.md §1): tile set, wall, deal,
flowers and the winning forms it allows.

The description of a win and its readings need this much of a profile; the catalogues are built on
those readings. So it lives here, below them, and :class:`duelmahjong.rules.profiles.Profile` adds
the catalogue on top.

>>> get_setup("erren").wall_size, get_setup("erren").thirteen_orphans
(72, False)
>>> get_setup("riichi")
Traceback (most recent call last):
...
duelmahjong.rules.errors.UnknownProfileError: unknown profile 'riichi'; known profiles: duel, erren
"""

from __future__ import annotations

from dataclasses import dataclass

from duelmahjong.rules.errors import UnknownProfileError
from duelmahjong.rules.tiles import PROFILE_KINDS


@dataclass(frozen=True, kw_only=True)
class Setup:
    """One profile's setup; the defaults are what both profiles share."""

    id: str
    name_zh: str
    tile_kinds: frozenset[int]  # every kind the wall holds, flowers included
    wall_size: int
    in_play: int  # tiles used per hand; duel leaves the rest as the unused pool (T4, T5, T9)
    dealer_tiles: int = 14
    nondealer_tiles: int = 13
    has_flowers: bool = False  # erren: flowers are set aside and replaced (补花), E14
    revealed_bonus_tiles: int = 0  # duel 花牌: tiles of the unused pool turned face up (D1); rooms set 1-4
    seven_pairs: bool = True
    thirteen_orphans: bool = False
    all_green_free_form: bool = False  # duel 绿一色 "可以乱牌" (D12)

    @property
    def has_unused_pool(self) -> bool:
        """Whether tiles stay out of play (duel: extra draws come from them, T9)."""
        return self.in_play < self.wall_size


SETUPS: dict[str, Setup] = {
    "duel": Setup(
        id="duel",
        name_zh="决斗麻将",
        tile_kinds=PROFILE_KINDS["duel"],
        wall_size=136,
        in_play=71,
        revealed_bonus_tiles=2,
        thirteen_orphans=True,
        all_green_free_form=True,
    ),
    "erren": Setup(
        id="erren",
        name_zh="二人麻将",
        tile_kinds=PROFILE_KINDS["erren"],
        wall_size=72,
        in_play=72,
        has_flowers=True,
        # no thirteen orphans: impossible without 筒/条, and not in the 000 table
    ),
}


def get_setup(name: str) -> Setup:
    """The setup of the profile called ``name`` (``duel`` or ``erren``)."""
    try:
        return SETUPS[name]
    except KeyError:
        raise UnknownProfileError(f"unknown profile {name!r}; known profiles: {', '.join(SETUPS)}") from None
