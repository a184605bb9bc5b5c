"""Suit keys: one suit's tile counts as one integer, the index of every precomputed table.

A suit's counts encode to one integer, the *suit key*: the counts of ranks 1–9 (honours: 1z–7z) read
as base-5 digits, rank 1 the most significant (``1123m`` → ``211100000`` in base 5). A hand is four
keys (m, p, s, z). Keys whose digits sum to more than 14 never occur in a hand and are not tabled
(:mod:`duelmahjong.rules.table_build` builds the tables, :mod:`duelmahjong.rules.tables` serves them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

SUIT_RANKS: Final = 9
HONOR_RANKS: Final = 7
SUIT_SPACE: Final = 5**SUIT_RANKS
HONOR_SPACE: Final = 5**HONOR_RANKS
MAX_TILES: Final = 14  # the most concealed tiles a hand holds
# Adding one tile of rank index r (0-based) adds PLACE[r] to its suit key.
SUIT_PLACE: Final = tuple(5 ** (SUIT_RANKS - 1 - r) for r in range(SUIT_RANKS))
HONOR_PLACE: Final = tuple(5 ** (HONOR_RANKS - 1 - r) for r in range(HONOR_RANKS))

_DIGIT_OF_COUNT: Final = bytes(range(48, 53)) + b"x" * 251  # 0..4 -> b"0".."4"; anything else -> b"x"

# A reading of one suit: (pair rank index or -1, ((is_chow, rank index), ...)), blocks ascending.
SuitReading = tuple[int, tuple[tuple[bool, int], ...]]


def suit_keys(counts: Sequence[int]) -> tuple[int, int, int, int]:
    """The four suit keys (m, p, s, z) of a 34-entry count vector.

    Raises ``ValueError`` for a count outside 0–4 (callers turn it into a readable error).

    >>> suit_keys([1, 1, 2] + [0] * 31) == (int("112000000", 5), 0, 0, 0)
    True
    """
    digits = bytes(counts).translate(_DIGIT_OF_COUNT)
    return int(digits[0:9], 5), int(digits[9:18], 5), int(digits[18:27], 5), int(digits[27:34], 5)
