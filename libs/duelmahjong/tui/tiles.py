"""Tiles as a person sees them: Unicode mahjong tiles (🀇…) or a plain two-letter fallback.

Every tile takes two terminal columns in both styles, so rows of tiles line up: a Unicode tile is one
column wide (🀄 two) and gets a space after it; a plain tile is its notation (``5m``) or, for honors,
a two-letter name (``Ea`` … ``No``, ``Wh`` ``Gr`` ``Rd``) and flowers ``F1`` … ``F8``.

>>> split_tiles("123m5z")
['1m', '2m', '3m', '5z']
>>> TileStyle(unicode=False).tile("6z"), TileStyle(unicode=True).tile("1m")
('Gr', '🀇 ')
>>> TileStyle(unicode=False).tiles("19s")
'1s 9s'
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from wcwidth import wcswidth

_SUIT_BASE = {"m": 0x1F007, "s": 0x1F010, "p": 0x1F019}
_HONORS = "🀀🀁🀂🀃🀆🀅🀄"  # 1z–7z: East South West North 白 发 中 (rules/tiles.py)
_FLOWERS = "🀦🀧🀨🀩🀢🀣🀤🀥"  # 1f–8f: 春夏秋冬梅兰竹菊
_HONOR_LETTERS = ("Ea", "So", "We", "No", "Wh", "Gr", "Rd")
BACK = "🀫"
PROBE = "🀇🀄"


def split_tiles(notation: str) -> list[str]:
    """``"123m5z"`` → ``["1m", "2m", "3m", "5z"]`` (the contract's notation, one tile each)."""
    tiles: list[str] = []
    digits = ""
    for char in notation:
        if char.isdigit():
            digits += char
        elif char in "mpszf":
            tiles += [digit + char for digit in digits]
            digits = ""
    return tiles


def can_show_unicode(stream: TextIO | None = None) -> bool:
    """The output's encoding can carry mahjong tiles (a UTF-8 terminal); else letters are used."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        PROBE.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


@dataclass(frozen=True)
class TileStyle:
    unicode: bool = True

    def tile(self, tile: str) -> str:
        """One tile in two columns."""
        if len(tile) != 2 or not tile[0].isdigit():
            return tile.ljust(2)[:2]
        number, suit = int(tile[0]), tile[1]
        if not self.unicode:
            if suit == "z" and 1 <= number <= 7:
                return _HONOR_LETTERS[number - 1]
            return f"F{number}" if suit == "f" else tile
        if suit in _SUIT_BASE and 1 <= number <= 9:
            glyph = chr(_SUIT_BASE[suit] + number - 1)
        elif suit == "z" and 1 <= number <= 7:
            glyph = _HONORS[number - 1]
        elif suit == "f" and 1 <= number <= 8:
            glyph = _FLOWERS[number - 1]
        else:
            return tile
        return glyph + " " * (2 - max(1, wcswidth(glyph)))

    def back(self) -> str:
        return BACK + " " if self.unicode else "##"

    def tiles(self, notation: str, separator: str = " ") -> str:
        """A row of tiles; letters are spaced by ``separator``, Unicode tiles carry their own space."""
        drawn = [self.tile(t) for t in split_tiles(notation)]
        return "".join(drawn).rstrip() if self.unicode else separator.join(drawn)

    def width(self, count: int) -> int:
        """Columns a row of ``count`` tiles takes (as :meth:`tiles` draws it)."""
        return 2 * count if self.unicode else max(0, 3 * count - 1)
