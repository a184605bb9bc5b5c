"""Tile kinds, their names, and the text notation ``123m456p789s1234567z1f``.

A tile kind is a small ``int`` (docs/decisions.md §1):

* 0–8 = 1m–9m (万), 9–17 = 1p–9p (筒), 18–26 = 1s–9s (条),
* 27–33 = 1z–7z = East South West North 白 发 中,
* 34–41 = 1f–8f = 春夏秋冬梅兰竹菊 (flowers, erren only).

Hot code works on these ints and on 34-entry count vectors (flowers never take part in a shape).
:class:`Tile` is the small value type for when a readable object is wanted.

>>> parse_tiles("123m55z")
[0, 1, 2, 31, 31]
>>> format_tiles([EAST, M1, P9, M2])
'12m9p1z'
>>> counts_of(parse_tiles("1122m"))[:3]
[2, 2, 0]
>>> str(Tile.parse("6z")), Tile(RED)
('6z', Tile.parse('7z'))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress
from typing import Final

from duelmahjong.rules.errors import InvalidHandError, NotationError, UnknownProfileError

# --- kinds -------------------------------------------------------------------------------------------
NUM_KINDS: Final = 34  # kinds that take part in shapes; count vectors have this length
NUM_KINDS_WITH_FLOWERS: Final = 42
COPIES: Final = 4  # copies of every kind in the full set (flowers: one each)

M1, M2, M3, M4, M5, M6, M7, M8, M9 = range(0, 9)
P1, P2, P3, P4, P5, P6, P7, P8, P9 = range(9, 18)
S1, S2, S3, S4, S5, S6, S7, S8, S9 = range(18, 27)
EAST, SOUTH, WEST, NORTH, WHITE, GREEN, RED = range(27, 34)
F1, F2, F3, F4, F5, F6, F7, F8 = range(34, 42)
SPRING, SUMMER, AUTUMN, WINTER, PLUM, ORCHID, BAMBOO, CHRYSANTHEMUM = range(34, 42)

SUITED_KINDS: Final = 27  # kinds 0–26 are the number tiles: ``counts[:SUITED_KINDS]``
SUIT_FIRSTS: Final = (M1, P1, S1)  # the 1 of each suit

SUITS: Final = "mpszf"  # canonical print order
SUITED: Final = "mps"
_SUIT_START: Final = {"m": 0, "p": 9, "s": 18, "z": 27, "f": 34}
_SUIT_SIZE: Final = {"m": 9, "p": 9, "s": 9, "z": 7, "f": 8}

WINDS: Final = frozenset({EAST, SOUTH, WEST, NORTH})
DRAGONS: Final = frozenset({WHITE, GREEN, RED})
HONORS: Final = WINDS | DRAGONS
FLOWERS: Final = frozenset(range(34, 42))
SEASONS: Final = frozenset({SPRING, SUMMER, AUTUMN, WINTER})  # 春夏秋冬
PLANTS: Final = frozenset({PLUM, ORCHID, BAMBOO, CHRYSANTHEMUM})  # 梅兰竹菊
TERMINALS: Final = frozenset({M1, M9, P1, P9, S1, S9})
# 幺九牌: the thirteen kinds of 国士无双.
TERMINALS_AND_HONORS: Final = TERMINALS | HONORS
# 绿一色 (D12): 2s 3s 4s 6s 8s and 发.
GREEN_TILES: Final = frozenset({S2, S3, S4, S6, S8, GREEN})
# 红孔雀 (D12): 1s 5s 7s 9s and 中.
RED_TILES: Final = frozenset({S1, S5, S7, S9, RED})

WIND_NAMES: Final = ("east", "south", "west", "north")  # docs/decisions.md §7 context values, in kind order

# Kinds each profile plays with (docs/decisions.md §1): duel has no flowers; erren has no 筒/条.
PROFILE_KINDS: Final[dict[str, frozenset[int]]] = {
    "duel": frozenset(range(NUM_KINDS)),
    "erren": frozenset(range(0, 9)) | HONORS | FLOWERS,
}


def suit_of(kind: int) -> str:
    """The suit letter of a kind: ``m``, ``p``, ``s``, ``z`` (honours) or ``f`` (flowers).

    >>> suit_of(P5), suit_of(RED), suit_of(F1)
    ('p', 'z', 'f')
    """
    if kind < 27:
        return "mps"[kind // 9] if kind >= 0 else _bad_kind(kind)
    if kind < 34:
        return "z"
    if kind < 42:
        return "f"
    return _bad_kind(kind)


def rank_of(kind: int) -> int:
    """The number written before the suit letter: 1–9 for suits, 1–7 for honours, 1–8 for flowers.

    >>> rank_of(M9), rank_of(S1), rank_of(NORTH), rank_of(F8)
    (9, 1, 4, 8)
    """
    return kind - _SUIT_START[suit_of(kind)] + 1


def kind_of(rank: int, suit: str) -> int:
    """The kind written ``<rank><suit>``; raises :class:`NotationError` if there is no such tile.

    >>> kind_of(5, "s") == S5
    True
    """
    if suit not in _SUIT_START:
        raise NotationError(f"unknown suit letter {suit!r} (expected one of m, p, s, z, f)")
    if not 1 <= rank <= _SUIT_SIZE[suit]:
        raise NotationError(f"there is no tile {rank}{suit} (ranks of {suit!r} go 1–{_SUIT_SIZE[suit]})")
    return _SUIT_START[suit] + rank - 1


def _bad_kind(kind: object) -> str:
    raise InvalidHandError(f"{kind!r} is not a tile kind (expected an int 0–41)")


def is_suited(kind: int) -> bool:
    """万筒条 (ranks 1–9)."""
    return 0 <= kind < 27


def is_honor(kind: int) -> bool:
    """Winds and dragons (字牌)."""
    return 27 <= kind < 34


def is_flower(kind: int) -> bool:
    return 34 <= kind < 42


def is_terminal(kind: int) -> bool:
    """1 or 9 of a suit (老头牌)."""
    return kind in TERMINALS


def is_terminal_or_honor(kind: int) -> bool:
    """幺九牌: a terminal or an honour."""
    return kind in TERMINALS_AND_HONORS


def is_simple(kind: int) -> bool:
    """2–8 of a suit (中张)."""
    return 0 <= kind < 27 and kind % 9 not in (0, 8)


def tile_name(kind: int) -> str:
    """The notation of one tile, e.g. ``"5m"``, ``"7z"``, ``"1f"``.

    >>> tile_name(WHITE)
    '5z'
    """
    if type(kind) is int and 0 <= kind < NUM_KINDS_WITH_FLOWERS:
        return _NAMES[kind]
    return f"{rank_of(kind)}{suit_of(kind)}"  # not a kind: rank_of/suit_of say why


# Every kind's name, rank digit and suit letter, computed once: tile_name and format_tiles run for every
# tile of every view and event a table server sends, and the arithmetic above costs more than a lookup.
_NAMES: Final = tuple(f"{rank_of(kind)}{suit_of(kind)}" for kind in range(NUM_KINDS_WITH_FLOWERS))
_RANKS: Final = tuple(name[0] for name in _NAMES)
_SUIT_LETTERS: Final = tuple(name[1] for name in _NAMES)


def tile_names(kinds: Iterable[int]) -> list[str]:
    """:func:`tile_name` of each kind, in order (a river, a wall): one lookup per tile.

    >>> tile_names([M1, RED, F8])
    ['1m', '7z', '8f']
    """
    if not isinstance(kinds, list | tuple):
        kinds = list(kinds)
    try:
        if not kinds or min(kinds) >= 0:
            return [_NAMES[kind] for kind in kinds]
    except (IndexError, TypeError):
        pass
    return [tile_name(kind) for kind in kinds]  # raises for the first value that is no tile kind


# --- notation ----------------------------------------------------------------------------------------
def parse_tiles(text: str) -> list[int]:
    """Parse notation such as ``"123m456p789s11z"`` into kinds, in the order written.

    Spaces are ignored. Ranks go before their suit letter; every suit letter needs at least one rank.
    Raises :class:`NotationError` for anything else.

    >>> parse_tiles("19m 7z")
    [0, 8, 33]
    >>> parse_tiles("8z")
    Traceback (most recent call last):
    ...
    duelmahjong.rules.errors.NotationError: there is no tile 8z (ranks of 'z' go 1–7) in '8z'
    """
    if not isinstance(text, str):
        raise NotationError(f"tile notation must be a string, not {type(text).__name__}")
    # The common case (canonical text from our own messages) by table lookups; anything unusual
    # (spaces, errors) goes the careful way below, which says what is wrong.
    kinds: list[int] = []
    pending: list[int] = []
    for char in text:
        rank = _DIGITS.get(char)
        if rank is not None:
            pending.append(rank)
            continue
        start = _SUIT_START.get(char)
        if start is None or not pending or not all(0 < r <= _SUIT_SIZE[char] for r in pending):
            return _parse_tiles_checked(text)
        kinds.extend(start + r - 1 for r in pending)
        pending.clear()
    return kinds if not pending else _parse_tiles_checked(text)


_DIGITS: Final = {str(digit): digit for digit in range(10)}


def _parse_tiles_checked(text: str) -> list[int]:
    kinds: list[int] = []
    pending: list[int] = []
    for position, char in enumerate(text):
        if char.isspace():
            continue
        if "0" <= char <= "9":
            pending.append(int(char))
        elif char in _SUIT_START:
            if not pending:
                raise NotationError(f"suit letter {char!r} at position {position} has no ranks in {text!r}")
            for rank in pending:
                try:
                    kinds.append(kind_of(rank, char))
                except NotationError as error:
                    raise NotationError(f"{error} in {text!r}") from None
            pending.clear()
        else:
            raise NotationError(f"unexpected character {char!r} at position {position} in {text!r}")
    if pending:
        raise NotationError(
            f"ranks {''.join(map(str, pending))!r} at the end of {text!r} have no suit letter"
        )
    return kinds


def format_tiles(kinds: Iterable[int]) -> str:
    """Canonical notation: sorted, grouped by suit in the order m p s z f.

    >>> format_tiles(parse_tiles("5z1m9m1f3m"))
    '139m5z1f'
    >>> format_tiles([])
    ''
    """
    ordered = sorted(kinds)
    if not ordered:
        return ""
    if type(ordered[0]) is not int or ordered[0] < 0 or ordered[-1] >= NUM_KINDS_WITH_FLOWERS:
        for kind in ordered:  # raises for the first value that is no tile kind
            suit_of(kind)
    # Kinds sorted are already grouped by suit in the print order m p s z f: write each rank, and a
    # suit's letter where the next kind is of another suit (or at the end).
    ranks, letters = _RANKS, _SUIT_LETTERS
    parts: list[str] = []
    letter = letters[ordered[0]]
    for kind in ordered:
        if letters[kind] != letter:
            parts.append(letter)
            letter = letters[kind]
        parts.append(ranks[kind])
    parts.append(letter)
    return "".join(parts)


def counts_of(kinds: Iterable[int]) -> list[int]:
    """The 34-entry count vector of some kinds (flowers are skipped: they take part in no shape).

    Raises :class:`InvalidHandError` on a fifth copy or a value that is not a tile kind.

    >>> counts_of(parse_tiles("111122m"))[:2]
    [4, 2]
    """
    counts = [0] * NUM_KINDS
    for kind in kinds:
        if type(kind) is not int or not 0 <= kind < NUM_KINDS_WITH_FLOWERS:
            _bad_kind(kind)
        if kind < NUM_KINDS:
            counts[kind] += 1
            if counts[kind] > COPIES:
                raise InvalidHandError(f"a fifth copy of {tile_name(kind)} (there are only four)")
    return counts


def tiles_of(counts: Iterable[int]) -> list[int]:
    """The kinds of a count vector, sorted; the inverse of :func:`counts_of`.

    >>> format_tiles(tiles_of(counts_of(parse_tiles("2m11z"))))
    '2m11z'
    """
    # Only the kinds held, each repeated: views list hands all the time, and most kinds are not held.
    if not isinstance(counts, list | tuple):
        counts = list(counts)
    kinds: list[int] = []
    for kind in compress(range(len(counts)), counts):
        kinds += [kind] * counts[kind]
    return kinds


def check_profile_kinds(kinds: Iterable[int], profile: str) -> None:
    """Raise :class:`InvalidHandError` if a kind is not in the profile's tile set (docs/decisions.md §1).

    >>> check_profile_kinds(parse_tiles("5p"), "erren")
    Traceback (most recent call last):
    ...
    duelmahjong.rules.errors.InvalidHandError: 5p is not in the erren tile set (万, winds, dragons, flowers)
    """
    allowed = profile_kinds(profile)
    for kind in kinds:
        if kind not in allowed:
            sets = {"duel": "万筒条, winds, dragons; no flowers", "erren": "万, winds, dragons, flowers"}
            raise InvalidHandError(f"{tile_name(kind)} is not in the {profile} tile set ({sets[profile]})")


def profile_kinds(profile: str) -> frozenset[int]:
    """The kinds a profile plays with; raises :class:`UnknownProfileError` for an unknown name."""
    try:
        return PROFILE_KINDS[profile]
    except (KeyError, TypeError):
        raise UnknownProfileError(f"unknown profile {profile!r} (expected 'duel' or 'erren')") from None


# --- value type --------------------------------------------------------------------------------------
@dataclass(frozen=True, order=True, slots=True)
class Tile:
    """One tile kind as a value: ``Tile.parse("5m")``, ``str(tile) == "5m"``, ``repr`` pastes back.

    >>> Tile.parse("9s").kind == S9, Tile(S9).suit, Tile(S9).rank
    (True, 's', 9)
    """

    kind: int

    def __post_init__(self) -> None:
        if type(self.kind) is not int or not 0 <= self.kind < NUM_KINDS_WITH_FLOWERS:
            _bad_kind(self.kind)

    @classmethod
    def parse(cls, text: str) -> Tile:
        known = _TILE_OF_NAME.get(text) if cls is Tile and type(text) is str else None
        if known is not None:  # a canonical name: the shared value (tiles are immutable)
            return known
        kinds = parse_tiles(text)
        if len(kinds) != 1:
            raise NotationError(f"expected exactly one tile, got {len(kinds)} in {text!r}")
        return cls(kinds[0])

    @property
    def suit(self) -> str:
        return suit_of(self.kind)

    @property
    def rank(self) -> int:
        return rank_of(self.kind)

    def __str__(self) -> str:
        return tile_name(self.kind)

    def __repr__(self) -> str:
        return f"Tile.parse({tile_name(self.kind)!r})"


# Tile.parse of each canonical name ("5m"), built once: requests and views parse one tile at a time.
_TILE_OF_NAME: Final = {name: Tile(kind) for kind, name in enumerate(_NAMES)}
