"""The two rule profiles (docs/decisions.md §1): a :class:`~duelmahjong.rules.setups.Setup` (tile
set, deal sizes, flowers, forms) and the profile's fan catalogue.

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

from dataclasses import dataclass, fields

from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.catalogue_erren import ERREN
from duelmahjong.rules.patterns import Catalogue
from duelmahjong.rules.setups import SETUPS, Setup, get_setup


@dataclass(frozen=True, kw_only=True)
class Profile(Setup):
    """One rule profile: its setup and its catalogue."""

    catalogue: Catalogue

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


def _profile(setup: Setup, catalogue: Catalogue) -> Profile:
    return Profile(**{field.name: getattr(setup, field.name) for field in fields(setup)}, catalogue=catalogue)


PROFILES: dict[str, Profile] = {
    "duel": _profile(SETUPS["duel"], DUEL),
    "erren": _profile(SETUPS["erren"], ERREN),
}


def get_profile(name: str) -> Profile:
    """The profile called ``name`` (``duel`` or ``erren``); an unknown name raises as :func:`get_setup`."""
    try:
        return PROFILES[name]
    except KeyError:
        return PROFILES[get_setup(name).id]  # get_setup names the known profiles in its error
