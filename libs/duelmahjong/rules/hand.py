"""A player's hand: concealed tiles, declared melds and (erren) flowers set aside.

Notation: the concealed tiles (and flowers) in tile notation, then each meld as ``kind:tiles``::

    >>> from duelmahjong.rules.tiles import EAST, format_tiles
    >>> hand = Hand.parse("654p321m1z chi:789s pong:555z")
    >>> str(hand)
    '123m456p1z chi:789s pong:555z'
    >>> hand
    Hand.parse('123m456p1z chi:789s pong:555z')
    >>> hand.tile_count, hand.is_ready(), format_tiles(hand.waits())
    (13, True, '1z')
    >>> hand.draw(EAST).is_winning()
    True

A :class:`Hand` is immutable; :meth:`Hand.draw` and :meth:`Hand.discard` return new hands. It keeps
its concealed count vector and suit keys, so its analysis methods go straight to the table lookups of
:mod:`duelmahjong.rules.analysis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, TypeGuard, get_args

from duelmahjong.rules import analysis
from duelmahjong.rules.errors import InvalidHandError, NotationError
from duelmahjong.rules.keys import suit_keys
from duelmahjong.rules.tiles import (
    COPIES,
    GREEN_TILES,
    NUM_KINDS,
    check_profile_kinds,
    format_tiles,
    is_flower,
    parse_tiles,
    tile_name,
)

MeldKind = Literal["chi", "pong", "exposed_kong", "concealed_kong", "added_kong"]
MELD_KINDS: Final[tuple[MeldKind, ...]] = get_args(MeldKind)
_MELD_SIZE: Final = {"chi": 3, "pong": 3, "exposed_kong": 4, "concealed_kong": 4, "added_kong": 4}


def _is_meld_kind(kind: str) -> TypeGuard[MeldKind]:
    return kind in _MELD_SIZE


_KINDS_TEXT: Final = ", ".join(MELD_KINDS)


@dataclass(frozen=True, slots=True)
class Meld:
    """A declared meld: ``chi`` (a chow), ``pong``, or a kong (exposed, concealed or added to a pong).

    ``tiles`` are kept sorted. A meld of the wrong shape raises :class:`InvalidHandError`.

    >>> Meld.parse("chi:243m")
    Meld.parse('chi:234m')
    >>> Meld("pong", (0, 0, 1))
    Traceback (most recent call last):
    ...
    duelmahjong.rules.errors.InvalidHandError: a pong is three identical tiles, not 112m
    """

    kind: MeldKind
    tiles: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.kind not in _MELD_SIZE:
            raise InvalidHandError(
                f"unknown meld kind {self.kind!r} (expected one of {', '.join(MELD_KINDS)})"
            )
        tiles = tuple(sorted(self.tiles))
        object.__setattr__(self, "tiles", tiles)
        for kind in tiles:
            if type(kind) is not int or not 0 <= kind < NUM_KINDS:
                raise InvalidHandError(f"{kind!r} cannot be part of a meld (tile kinds 0–33; no flowers)")
        text = format_tiles(tiles)
        if self.kind == "chi":
            first = tiles[0] if len(tiles) == 3 else -1
            if not (0 <= first < 27 and first % 9 <= 6 and tiles == (first, first + 1, first + 2)):
                raise InvalidHandError(f"a chi is three consecutive tiles of one suit, not {text}")
        elif len(tiles) != _MELD_SIZE[self.kind] or len(set(tiles)) != 1:
            name = {"pong": "a pong", "exposed_kong": "an exposed kong"}.get(self.kind, f"a {self.kind}")
            shape = "three" if self.kind == "pong" else "four"
            raise InvalidHandError(f"{name.replace('_', ' ')} is {shape} identical tiles, not {text}")

    @classmethod
    def parse(cls, text: str) -> Meld:
        """``"chi:234m"``, ``"pong:555z"``, ``"concealed_kong:1111m"``…"""
        kind, colon, tiles = text.partition(":")
        if not colon:
            raise NotationError(f"a meld is written kind:tiles (e.g. pong:555z), got {text!r}")
        if not _is_meld_kind(kind):
            raise NotationError(
                f"unknown meld kind {kind!r} in {text!r} (expected one of {', '.join(MELD_KINDS)})"
            )
        return cls(kind, tuple(parse_tiles(tiles)))

    @property
    def tile(self) -> int:
        """The lowest tile (the tile of a pong or kong)."""
        return self.tiles[0]

    @property
    def is_kong(self) -> bool:
        return len(self.tiles) == 4

    @property
    def is_concealed(self) -> bool:
        """Only a concealed kong keeps the hand concealed (门清: 暗杠依然属于门清)."""
        return self.kind == "concealed_kong"

    def __str__(self) -> str:
        return f"{self.kind}:{format_tiles(self.tiles)}"

    def __repr__(self) -> str:
        return f"Meld.parse({str(self)!r})"


@dataclass(frozen=True, slots=True)
class Hand:
    """Concealed tiles (sorted kinds), declared melds and flowers set aside, in one profile.

    Holds 13 or 14 tiles, a kong counting as three. Validation raises :class:`InvalidHandError`
    (wrong count, fifth copy, tile outside the profile's set) or :class:`NotationError`.
    """

    concealed: tuple[int, ...]
    melds: tuple[Meld, ...] = ()
    flowers: tuple[int, ...] = ()
    profile: str = "duel"
    counts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    keys: tuple[int, int, int, int] = field(init=False, repr=False, compare=False)
    green_melds: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        concealed = tuple(sorted(self.concealed))
        flowers = tuple(sorted(self.flowers))
        object.__setattr__(self, "concealed", concealed)
        object.__setattr__(self, "melds", tuple(self.melds))
        object.__setattr__(self, "flowers", flowers)
        for kind in concealed:
            if type(kind) is not int or not 0 <= kind < NUM_KINDS:
                if is_flower(kind):
                    raise InvalidHandError(f"flower {tile_name(kind)} is set aside, not held among the tiles")
                raise InvalidHandError(f"{kind!r} is not a tile kind (expected an int 0–33)")
        for meld in self.melds:
            if not isinstance(meld, Meld):
                raise InvalidHandError(f"{meld!r} is not a Meld")
        if len(set(flowers)) != len(flowers) or not all(
            type(kind) is int and is_flower(kind) for kind in flowers
        ):
            raise InvalidHandError(f"flowers must be distinct 1f–8f, got {flowers!r}")
        melded = [kind for meld in self.melds for kind in meld.tiles]
        check_profile_kinds([*concealed, *melded, *flowers], self.profile)
        count = len(concealed) + 3 * len(self.melds)
        if count not in (13, 14):
            raise InvalidHandError(
                f"a hand holds 13 or 14 tiles (a kong counting as three), got {count}: "
                f"{len(concealed)} concealed and {len(self.melds)} meld(s)"
            )
        counts = [0] * NUM_KINDS
        for kind in concealed:
            counts[kind] += 1
        held = list(counts)
        for kind in melded:
            held[kind] += 1
        for kind in range(NUM_KINDS):
            if held[kind] > COPIES:
                raise InvalidHandError(f"{held[kind]} copies of {tile_name(kind)} (there are only four)")
        object.__setattr__(self, "counts", tuple(counts))
        object.__setattr__(self, "keys", suit_keys(counts))
        green = all(kind in GREEN_TILES for kind in melded)
        object.__setattr__(self, "green_melds", len(melded) if green else -1)

    # --- notation -----------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, *, profile: str = "duel") -> Hand:
        """Concealed tiles (flowers go aside) then ``kind:tiles`` melds, separated by spaces."""
        if not isinstance(text, str):
            raise NotationError(f"hand notation must be a string, not {type(text).__name__}")
        tiles: list[int] = []
        melds: list[Meld] = []
        for token in text.split():
            if ":" in token:
                melds.append(Meld.parse(token))
            else:
                tiles.extend(parse_tiles(token))
        concealed = [kind for kind in tiles if not is_flower(kind)]
        flowers = [kind for kind in tiles if is_flower(kind)]
        return cls(tuple(concealed), tuple(melds), tuple(flowers), profile)

    def __str__(self) -> str:
        parts = [format_tiles((*self.concealed, *self.flowers)), *map(str, self.melds)]
        return " ".join(part for part in parts if part)

    def __repr__(self) -> str:
        profile = "" if self.profile == "duel" else f", profile={self.profile!r}"
        return f"Hand.parse({str(self)!r}{profile})"

    # --- facts --------------------------------------------------------------------------------------
    @property
    def tile_count(self) -> int:
        """13 (waiting for a tile) or 14 (after drawing or claiming), a kong counting as three."""
        return len(self.concealed) + 3 * len(self.melds)

    @property
    def is_concealed(self) -> bool:
        """门清: no meld other than concealed kongs."""
        return all(meld.is_concealed for meld in self.melds)

    @property
    def melded_tiles(self) -> tuple[int, ...]:
        return tuple(kind for meld in self.melds for kind in meld.tiles)

    @property
    def all_tiles(self) -> tuple[int, ...]:
        """Every tile of the hand, kongs counting four, sorted (flowers excluded)."""
        return tuple(sorted(self.concealed + self.melded_tiles))

    # --- changes ------------------------------------------------------------------------------------
    def draw(self, kind: int) -> Hand:
        """The hand after drawing (or claiming) ``kind``: 13 tiles → 14."""
        if self.tile_count != 13:
            raise InvalidHandError(f"can only draw into a 13-tile hand, this one has {self.tile_count}")
        if is_flower(kind):
            raise InvalidHandError(f"flower {tile_name(kind)} is set aside, never held in a hand: draw again")
        return Hand((*self.concealed, kind), self.melds, self.flowers, self.profile)

    def discard(self, kind: int) -> Hand:
        """The hand after discarding ``kind`` from the concealed tiles: 14 tiles → 13."""
        if self.tile_count != 14:
            raise InvalidHandError(f"can only discard from a 14-tile hand, this one has {self.tile_count}")
        if kind not in self.concealed:
            raise InvalidHandError(f"cannot discard {tile_name(kind)}: not among the concealed tiles")
        concealed = list(self.concealed)
        concealed.remove(kind)
        return Hand(tuple(concealed), self.melds, self.flowers, self.profile)

    # --- analysis (table lookups) -------------------------------------------------------------------
    def is_winning(self) -> bool:
        """Whether this 14-tile hand is a winning shape (a 13-tile hand never is).

        >>> Hand.parse("19m19p19s12345677z").is_winning()
        True
        """
        if self.tile_count != 14:
            return False
        return analysis.win_keys(*self.keys, len(self.concealed), self.profile == "duel", self.green_melds)

    def waits(self) -> list[int]:
        """The kinds that would complete this 13-tile hand (kinds held four times excluded)."""
        if self.tile_count != 13:
            raise InvalidHandError(f"waits are those of a 13-tile hand, this one has {self.tile_count}")
        found = analysis.waits_keys(
            self.counts, *self.keys, len(self.concealed), self.profile == "duel", self.green_melds
        )
        if self.melds:
            melded = self.melded_tiles
            found = [kind for kind in found if self.counts[kind] + melded.count(kind) < COPIES]
        return found

    def is_ready(self) -> bool:
        """听牌: a 13-tile hand with at least one wait."""
        return self.tile_count == 13 and bool(self.waits())

    def shanten(self) -> int:
        """-1 winning (14 tiles), 0 ready, n = n exchanges from ready.

        >>> Hand.parse("147m258p369s1234z").shanten()
        6
        """
        return analysis.shanten_keys(
            *self.keys, len(self.concealed), self.profile == "duel", self.green_melds
        )

    def decompositions(self) -> list[analysis.Decomposition]:
        """Standard readings of the concealed tiles of a 14-tile hand (melds are sets already)."""
        if self.tile_count != 14:
            raise InvalidHandError(
                f"decompositions are those of a 14-tile hand, this one has {self.tile_count}"
            )
        return analysis.readings_keys(*self.keys)
