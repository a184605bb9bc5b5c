"""Hand shape analysis: decompositions, win check, waits, shanten.

Every function takes the 34-entry count vector of the *concealed* tiles (declared melds removed, see
:func:`duelmahjong.rules.tiles.counts_of`); a winning shape has 3k+2 tiles (k = 0..4), a ready one 3k+1.
Forms (RULES.md §1, D12): the standard form (sets + one pair), seven pairs (14 concealed tiles, four
identical tiles are two pairs — E6), thirteen orphans (duel only: erren has no 筒/条), and duel's
绿一色 free form (every tile of the hand, melds included, in {2s 3s 4s 6s 8s 6z}, any arrangement).

>>> from duelmahjong.rules.tiles import counts_of, parse_tiles, format_tiles
>>> is_winning(counts_of(parse_tiles("123m456p789s11222z")))
True
>>> format_tiles(waits(counts_of(parse_tiles("123m456p789s1122z"))))
'12z'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from duelmahjong.rules.errors import InvalidHandError
from duelmahjong.rules.tiles import (
    COPIES,
    GREEN_TILES,
    NUM_KINDS,
    TERMINALS_AND_HONORS,
    format_tiles,
    profile_kinds,
    tile_name,
)

BlockKind = Literal["chow", "pung"]


@dataclass(frozen=True, order=True, slots=True)
class Block:
    """A concealed set of a decomposition: ``chow`` (``tile`` = its lowest tile) or ``pung``.

    >>> str(Block("chow", 2)), str(Block("pung", 31))
    ('345m', '555z')
    """

    kind: BlockKind
    tile: int

    @property
    def tiles(self) -> tuple[int, int, int]:
        if self.kind == "chow":
            return (self.tile, self.tile + 1, self.tile + 2)
        return (self.tile, self.tile, self.tile)

    def __str__(self) -> str:
        return format_tiles(self.tiles)


@dataclass(frozen=True, order=True, slots=True)
class Decomposition:
    """One reading of a concealed 3k+2-tile hand: a pair plus k blocks (sorted)."""

    pair: int
    blocks: tuple[Block, ...]

    def __str__(self) -> str:
        return " ".join([format_tiles((self.pair, self.pair)), *map(str, self.blocks)])


# --- validation --------------------------------------------------------------------------------------
_WINNING_SIZES = frozenset({2, 5, 8, 11, 14})
_READY_SIZES = frozenset({1, 4, 7, 10, 13})


def _check_counts(counts: Sequence[int], sizes: frozenset[int], what: str) -> int:
    """Validate a concealed count vector; return its number of tiles."""
    if len(counts) != NUM_KINDS:
        raise InvalidHandError(f"a count vector has {NUM_KINDS} entries, got {len(counts)}")
    for kind, count in enumerate(counts):
        if type(count) is not int or not 0 <= count <= COPIES:
            raise InvalidHandError(f"{count!r} copies of {tile_name(kind)} (expected 0–{COPIES})")
    total = sum(counts)
    if total not in sizes:
        expected = ", ".join(map(str, sorted(sizes)))
        raise InvalidHandError(f"{what} needs {expected} concealed tiles, got {total}")
    return total


def _melded_counts(melded_tiles: Iterable[int]) -> list[int]:
    counts = [0] * NUM_KINDS
    for kind in melded_tiles:
        if type(kind) is not int or not 0 <= kind < NUM_KINDS:
            raise InvalidHandError(f"{kind!r} is not a tile kind that can be in a meld")
        counts[kind] += 1
    return counts


# --- standard form -----------------------------------------------------------------------------------
def _set_readings(counts: list[int], start: int) -> list[list[Block]]:
    """Every way to split ``counts[start:]`` into sets, each reading listed once.

    The lowest remaining tile is covered by at most one pung of itself, and every other copy of it
    must start a chow (nothing lower is left), so choosing the pung first gives each reading once.
    """
    kind = start
    while kind < NUM_KINDS and counts[kind] == 0:
        kind += 1
    if kind == NUM_KINDS:
        return [[]]
    readings: list[list[Block]] = []
    count = counts[kind]
    for pungs in (1, 0) if count >= 3 else (0,):
        chows = count - 3 * pungs
        if chows and not (kind < 27 and kind % 9 <= 6 and min(counts[kind + 1], counts[kind + 2]) >= chows):
            continue
        counts[kind] -= count
        if chows:
            counts[kind + 1] -= chows
            counts[kind + 2] -= chows
        head = [Block("pung", kind)] * pungs + [Block("chow", kind)] * chows
        readings.extend(head + rest for rest in _set_readings(counts, kind + 1))
        counts[kind] += count
        if chows:
            counts[kind + 1] += chows
            counts[kind + 2] += chows
    return readings


def decompositions(counts: Sequence[int]) -> list[Decomposition]:
    """Every distinct standard decomposition (pair + sets) of a concealed 3k+2-tile hand, sorted.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> for reading in decompositions(counts_of(parse_tiles("11122233344455m"))):
    ...     print(reading)
    22m 111m 234m 345m 345m
    55m 111m 222m 333m 444m
    55m 111m 234m 234m 234m
    55m 123m 123m 123m 444m
    >>> decompositions(counts_of(parse_tiles("12m")))
    []
    """
    _check_counts(counts, _WINNING_SIZES, "a decomposition")
    work = list(counts)
    found: list[Decomposition] = []
    for pair in range(NUM_KINDS):
        if work[pair] >= 2:
            work[pair] -= 2
            found.extend(Decomposition(pair, tuple(blocks)) for blocks in _set_readings(work, 0))
            work[pair] += 2
    return sorted(found, key=_reading_order)


def _reading_order(reading: Decomposition) -> tuple[int, list[tuple[int, bool]]]:
    return reading.pair, [(block.tile, block.kind == "chow") for block in reading.blocks]


def _is_standard(counts: list[int]) -> bool:
    for pair in range(NUM_KINDS):
        if counts[pair] >= 2:
            counts[pair] -= 2
            complete = bool(_set_readings(counts, 0))
            counts[pair] += 2
            if complete:
                return True
    return False


# --- other forms -------------------------------------------------------------------------------------
def is_seven_pairs(counts: Sequence[int]) -> bool:
    """Seven pairs: 14 concealed tiles, every kind held 0, 2 or 4 times (four = two pairs, E6).

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> is_seven_pairs(counts_of(parse_tiles("1111m22p33s445566z")))
    True
    """
    total = _check_counts(counts, _WINNING_SIZES, "a winning shape")
    return total == 14 and all(count % 2 == 0 for count in counts)


def is_thirteen_orphans(counts: Sequence[int]) -> bool:
    """国士无双: one of each terminal and honour plus a second copy of one of them.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> is_thirteen_orphans(counts_of(parse_tiles("19m19p19s12345677z")))
    True
    """
    total = _check_counts(counts, _WINNING_SIZES, "a winning shape")
    return (
        total == 14
        and all(counts[kind] >= 1 for kind in TERMINALS_AND_HONORS)
        and all(counts[kind] == 0 for kind in range(NUM_KINDS) if kind not in TERMINALS_AND_HONORS)
    )


def _is_free_green(counts: Sequence[int], total: int, melded: list[int]) -> bool:
    """D12 绿一色 free form: every tile of a complete hand (≥ 14 with melds) is green."""
    melded_total = sum(melded)
    if total + melded_total < 14:
        return False  # melds not given: cannot tell the whole hand is green
    return all(
        counts[kind] == 0 and melded[kind] == 0 for kind in range(NUM_KINDS) if kind not in GREEN_TILES
    )


def _check_profile(counts: Sequence[int], profile: str) -> frozenset[int]:
    allowed = profile_kinds(profile)
    for kind in range(NUM_KINDS):
        if counts[kind] and kind not in allowed:
            raise InvalidHandError(f"{tile_name(kind)} is not in the {profile} tile set")
    return allowed


def is_winning(counts: Sequence[int], *, profile: str = "duel", melded_tiles: Iterable[int] = ()) -> bool:
    """Whether concealed tiles (3k+2, melds removed) form a winning shape in ``profile``.

    ``melded_tiles`` (the kinds in declared melds) matter only for duel's 绿一色 free form, which
    needs every tile of the hand green; without them that form is recognised only for 14 concealed
    tiles.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> is_winning(counts_of(parse_tiles("22233346888s666z")))
    True
    >>> is_winning(counts_of(parse_tiles("22233346888s666z")), profile="erren")
    Traceback (most recent call last):
    ...
    duelmahjong.rules.errors.InvalidHandError: 2s is not in the erren tile set
    """
    total = _check_counts(counts, _WINNING_SIZES, "a winning shape")
    _check_profile(counts, profile)
    melded = _melded_counts(melded_tiles)
    if _is_standard(list(counts)):
        return True
    if total == 14 and all(count % 2 == 0 for count in counts):
        return True
    if profile == "duel":
        if is_thirteen_orphans(counts):
            return True
        if _is_free_green(counts, total, melded):
            return True
    return False


def waits(counts: Sequence[int], *, profile: str = "duel", melded_tiles: Iterable[int] = ()) -> list[int]:
    """The kinds that complete a concealed 3k+1 hand, ascending.

    A kind the hand already holds all four of (concealed plus ``melded_tiles``) is not a wait.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles, format_tiles
    >>> format_tiles(waits(counts_of(parse_tiles("1112345678999m"))))
    '123456789m'
    >>> waits(counts_of(parse_tiles("1111m")))
    []
    """
    _check_counts(counts, _READY_SIZES, "a ready shape")
    allowed = _check_profile(counts, profile)
    melded = list(melded_tiles)
    held = _melded_counts(melded)
    work = list(counts)
    found: list[int] = []
    for kind in range(NUM_KINDS):
        if kind in allowed and work[kind] + held[kind] < COPIES:
            work[kind] += 1
            if is_winning(work, profile=profile, melded_tiles=melded):
                found.append(kind)
            work[kind] -= 1
    return found
