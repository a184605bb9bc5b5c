"""Hand shape analysis: decompositions, win check, waits (and waits by shape, E15), shanten — all table
lookups.

The public functions take the 34-entry count vector of the *concealed* tiles (declared melds removed,
see :func:`duelmahjong.rules.tiles.counts_of`) and validate it; a winning shape has 3k+2 tiles
(k = 0..4), a ready one 3k+1. Forms (docs/decisions.md §1, D12): the standard form (sets + one pair), seven
pairs (14 concealed tiles; four identical tiles are two pairs — E6), thirteen orphans (duel only:
erren has no 筒/条), and duel's 绿一色 free form (every tile of the hand, melds included, in
{2s 3s 4s 6s 8s 6z}, any arrangement).

The ``*_keys`` functions are the hot paths: they take the four suit keys that
:class:`duelmahjong.rules.hand.Hand` keeps (see :mod:`duelmahjong.rules.keys`) and validate nothing.
``green_melds`` there is the number of melded tiles if every one of them is a 绿一色 tile, else -1.

>>> from duelmahjong.rules.tiles import counts_of, parse_tiles, format_tiles
>>> is_winning(counts_of(parse_tiles("123m456p789s11222z")))
True
>>> format_tiles(waits(counts_of(parse_tiles("123m456p789s1122z"))))
'12z'
>>> shanten(counts_of(parse_tiles("147m258p369s1234z")))
6
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from duelmahjong.rules.errors import InvalidHandError, UnknownProfileError
from duelmahjong.rules.tables import OnFirstUse
from duelmahjong.rules.tiles import (
    COPIES,
    GREEN_TILES,
    NUM_KINDS,
    TERMINALS_AND_HONORS,
    format_tiles,
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
    """One reading of a concealed 3k+2-tile hand: a pair plus k blocks, ascending by tile."""

    pair: int
    blocks: tuple[Block, ...]

    def __str__(self) -> str:
        return " ".join([format_tiles((self.pair, self.pair)), *map(str, self.blocks)])


# --- the tables, bound to module globals on first use: every lookup below is one index ---------------
_SUIT_WIN, _HONOR_WIN = OnFirstUse("suit_win", globals()), OnFirstUse("honor_win", globals())
_SUIT_PAIRS, _HONOR_PAIRS = OnFirstUse("suit_pairs", globals()), OnFirstUse("honor_pairs", globals())
_SUIT_ORPHANS, _HONOR_ORPHANS = OnFirstUse("suit_orphans", globals()), OnFirstUse("honor_orphans", globals())
_SOU_GREEN, _HONOR_GREEN = OnFirstUse("sou_green", globals()), OnFirstUse("honor_green", globals())
_SUIT_CLASS, _HONOR_CLASS = OnFirstUse("suit_class", globals()), OnFirstUse("honor_class", globals())
_SUIT_WAITS, _HONOR_WAITS = OnFirstUse("suit_waits", globals()), OnFirstUse("honor_waits", globals())
_MERGE, _FINAL = OnFirstUse("merge", globals()), OnFirstUse("final", globals())
_SUIT_READINGS = OnFirstUse("suit_readings", globals())
_HONOR_READINGS = OnFirstUse("honor_readings", globals())


def load_tables() -> None:
    """Load the lookup tables now rather than at the first hand checked: a service calls this at
    start, so no player waits for the load (or, with no cache yet, the build) and a server that
    answers is one that has them."""
    OnFirstUse.load_all(globals())


_ORPHANS_COMPLETE = 13 + 16  # thirteen kinds, one of them twice
_DIGIT_OF_COUNT = bytes(range(48, 53)) + b"x" * 251
_GREEN_ORDER = sorted(GREEN_TILES)
_ORPHAN_ORDER = sorted(TERMINALS_AND_HONORS)
_BLOCKS = {(kind, tile): Block(kind, tile) for tile in range(NUM_KINDS) for kind in ("chow", "pung")}

WINNING_SIZES = frozenset({2, 5, 8, 11, 14})
READY_SIZES = frozenset({1, 4, 7, 10, 13})


# --- hot paths on suit keys --------------------------------------------------------------------------
def win_keys(m: int, p: int, s: int, z: int, size: int, duel: bool = True, green_melds: int = 0) -> bool:
    """Win check of a 3k+2 concealed hand given as suit keys; ``size`` = its number of tiles."""
    if _SUIT_WIN[m] * _SUIT_WIN[p] * _SUIT_WIN[s] * _HONOR_WIN[z] == 2:
        return True  # every suit is sets (+ pair) and exactly one suit holds the pair
    if size == 14:
        if _SUIT_PAIRS[m] + _SUIT_PAIRS[p] + _SUIT_PAIRS[s] + _HONOR_PAIRS[z] == 7:
            return True
        if duel and _SUIT_ORPHANS[m] + _SUIT_ORPHANS[p] + _SUIT_ORPHANS[s] + _HONOR_ORPHANS[z] == 29:
            return True
    return duel and m == p == 0 and _all_green(s, z, size, green_melds, 14)


def _all_green(s: int, z: int, size: int, green_melds: int, whole: int) -> bool:
    """D12 绿一色 free form: every concealed and melded tile green, the whole hand ≥ ``whole`` tiles
    (13 for a ready hand, 14 for a win: melds not given cannot make up the count)."""
    return green_melds >= 0 and size + green_melds >= whole and _SOU_GREEN[s] + _HONOR_GREEN[z] == size


def shanten_keys(m: int, p: int, s: int, z: int, size: int, duel: bool = True, green_melds: int = 0) -> int:
    """Shanten of a concealed hand given as suit keys: -1 winning, 0 ready, n = n tiles from ready."""
    sets = size // 3
    merged = _MERGE[_MERGE[_SUIT_CLASS[m] << 8 | _SUIT_CLASS[p]] << 8 | _SUIT_CLASS[s]]
    best = _FINAL[(merged << 8 | _HONOR_CLASS[z]) * 5 + sets] - 1
    if size >= 13:
        seven_pairs = 6 - (_SUIT_PAIRS[m] + _SUIT_PAIRS[p] + _SUIT_PAIRS[s] + _HONOR_PAIRS[z])
        if seven_pairs < best:
            best = seven_pairs
        if duel:
            orphans = _SUIT_ORPHANS[m] + _SUIT_ORPHANS[p] + _SUIT_ORPHANS[s] + _HONOR_ORPHANS[z]
            orphans = 13 - (orphans & 15) - (orphans >= 16)
            if orphans < best:
                best = orphans
    if duel and green_melds >= 0 and size + green_melds >= 13 + (size % 3 == 2):
        # 绿一色 free form: each tile that is not green must be exchanged for one that is.
        free = size - _SOU_GREEN[s] - _HONOR_GREEN[z] - (size % 3 == 2)
        if free < best:
            best = free
    return best


def waits_keys(
    counts: Sequence[int], m: int, p: int, s: int, z: int, size: int, duel: bool = True, green_melds: int = 0
) -> list[int]:
    """Waits of a 3k+1 concealed hand (counts and suit keys); copies held in melds are not checked."""
    codes = (_SUIT_WIN[m], _SUIT_WIN[p], _SUIT_WIN[s], _HONOR_WIN[z])
    found = 0  # bit per kind
    for suit, key in enumerate((m, p, s, z)):
        others = 1
        for other, code in enumerate(codes):
            if other != suit:
                others *= code
        if others not in (1, 2):
            continue
        mask = (_HONOR_WAITS if suit == 3 else _SUIT_WAITS)[key]
        if mask & 511 and others * (2 if mask & 512 else 1) == 2:
            found |= (mask & 511) << (9 * suit)
    if size == 13:
        if _SUIT_PAIRS[m] + _SUIT_PAIRS[p] + _SUIT_PAIRS[s] + _HONOR_PAIRS[z] == 6:
            found |= sum(1 << kind for kind in range(NUM_KINDS) if counts[kind] % 2)
        if duel:
            orphans = _SUIT_ORPHANS[m] + _SUIT_ORPHANS[p] + _SUIT_ORPHANS[s] + _HONOR_ORPHANS[z]
            if orphans == 13 or orphans == 12 + 16:
                found |= sum(1 << kind for kind in _ORPHAN_ORDER if orphans == 13 or not counts[kind])
    if duel and m == p == 0 and _all_green(s, z, size, green_melds, 13):
        found |= sum(1 << kind for kind in _GREEN_ORDER)
    return [kind for kind in range(NUM_KINDS) if found >> kind & 1 and counts[kind] < COPIES]


def readings_keys(m: int, p: int, s: int, z: int) -> list[Decomposition]:
    """Every standard decomposition of a complete hand given as suit keys (``[]`` if not complete)."""
    per_suit = []
    suit, honor = _SUIT_READINGS, _HONOR_READINGS
    for base, key, table in ((0, m, suit), (9, p, suit), (18, s, suit), (27, z, honor)):
        readings = table.get(key)
        if readings is None:
            return []
        per_suit.append([(base, reading) for reading in readings])
    found = []
    for combination in itertools.product(*per_suit):
        pairs = [base + pair for base, (pair, _) in combination if pair >= 0]
        if len(pairs) != 1:
            continue
        blocks = tuple(
            _BLOCKS["chow" if is_chow else "pung", base + rank]
            for base, (_, suit_blocks) in combination
            for is_chow, rank in suit_blocks
        )
        found.append(Decomposition(pairs[0], blocks))
    return sorted(found, key=_reading_order)


def _reading_order(reading: Decomposition) -> tuple[int, list[tuple[int, bool]]]:
    return reading.pair, [(block.tile, block.kind == "chow") for block in reading.blocks]


# --- validated public API on count vectors -----------------------------------------------------------
def _keys_of(counts: Sequence[int], sizes: frozenset[int], what: str) -> tuple[int, int, int, int, int]:
    """Validate a concealed count vector; return its suit keys and number of tiles."""
    try:
        if len(counts) != NUM_KINDS:
            raise InvalidHandError(f"a count vector has {NUM_KINDS} entries, got {len(counts)}")
        digits = bytes(counts).translate(_DIGIT_OF_COUNT)
        keys = int(digits[0:9], 5), int(digits[9:18], 5), int(digits[18:27], 5), int(digits[27:34], 5)
    except (ValueError, TypeError) as error:
        if isinstance(error, InvalidHandError):
            raise
        for kind, count in enumerate(counts):
            if type(count) is not int or not 0 <= count <= COPIES:
                raise InvalidHandError(
                    f"{count!r} copies of {tile_name(kind)} (expected 0–{COPIES})"
                ) from None
        raise InvalidHandError(f"not a count vector: {counts!r}") from None
    size = sum(counts)
    if size not in sizes:
        expected = ", ".join(map(str, sorted(sizes)))
        raise InvalidHandError(f"{what} needs {expected} concealed tiles, got {size}")
    return (*keys, size)


def _is_duel(profile: str, counts: Sequence[int], p: int, s: int) -> bool:
    if profile == "duel":
        return True
    if profile == "erren":
        if p or s:
            outside = [kind for kind in range(9, 27) if counts[kind]]
            raise InvalidHandError(f"{tile_name(outside[0])} is not in the erren tile set (no 筒/条)")
        return False
    raise UnknownProfileError(f"unknown profile {profile!r} (expected 'duel' or 'erren')")


def _melds(melded_tiles: Iterable[int]) -> tuple[list[int], int]:
    """Counts of the melded tiles, and the ``green_melds`` value of the hot paths."""
    counts = [0] * NUM_KINDS
    all_green = True
    for kind in melded_tiles:
        if type(kind) is not int or not 0 <= kind < NUM_KINDS:
            raise InvalidHandError(f"{kind!r} is not a tile kind that can be in a meld")
        counts[kind] += 1
        all_green = all_green and kind in GREEN_TILES
    return counts, sum(counts) if all_green else -1


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
    >>> decompositions(counts_of(parse_tiles("123m")))
    Traceback (most recent call last):
    ...
    duelmahjong.rules.errors.InvalidHandError: a decomposition needs 2, 5, 8, 11, 14 concealed tiles, got 3
    """
    m, p, s, z, _ = _keys_of(counts, WINNING_SIZES, "a decomposition")
    return readings_keys(m, p, s, z)


def is_seven_pairs(counts: Sequence[int]) -> bool:
    """Seven pairs: 14 concealed tiles, every kind held 0, 2 or 4 times (four = two pairs, E6).

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> is_seven_pairs(counts_of(parse_tiles("1111m22p33s445566z")))
    True
    """
    m, p, s, z, size = _keys_of(counts, WINNING_SIZES, "a winning shape")
    return size == 14 and _SUIT_PAIRS[m] + _SUIT_PAIRS[p] + _SUIT_PAIRS[s] + _HONOR_PAIRS[z] == 7


def is_thirteen_orphans(counts: Sequence[int]) -> bool:
    """国士无双: one of each terminal and honour plus a second copy of one of them.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> is_thirteen_orphans(counts_of(parse_tiles("19m19p19s12345677z")))
    True
    """
    m, p, s, z, size = _keys_of(counts, WINNING_SIZES, "a winning shape")
    orphans = _SUIT_ORPHANS[m] + _SUIT_ORPHANS[p] + _SUIT_ORPHANS[s] + _HONOR_ORPHANS[z]
    return size == 14 and orphans == _ORPHANS_COMPLETE


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
    duelmahjong.rules.errors.InvalidHandError: 2s is not in the erren tile set (no 筒/条)
    """
    m, p, s, z, size = _keys_of(counts, WINNING_SIZES, "a winning shape")
    duel = _is_duel(profile, counts, p, s)
    green_melds = 0 if not melded_tiles else _melds(melded_tiles)[1]
    return win_keys(m, p, s, z, size, duel, green_melds)


def waits(counts: Sequence[int], *, profile: str = "duel", melded_tiles: Iterable[int] = ()) -> list[int]:
    """The kinds that complete a concealed 3k+1 hand, ascending.

    A kind the hand already holds all four of (concealed plus ``melded_tiles``) is not a wait.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles, format_tiles
    >>> format_tiles(waits(counts_of(parse_tiles("1112345678999m"))))
    '123456789m'
    >>> waits(counts_of(parse_tiles("1111m")))
    []
    """
    m, p, s, z, size = _keys_of(counts, READY_SIZES, "a ready shape")
    duel = _is_duel(profile, counts, p, s)
    melded, green_melds = _melds(melded_tiles)
    found = waits_keys(counts, m, p, s, z, size, duel, green_melds)
    return [kind for kind in found if counts[kind] + melded[kind] < COPIES]


def shape_waits(
    counts: Sequence[int], *, profile: str = "duel", melded_tiles: Iterable[int] = ()
) -> list[int]:
    """The kinds that complete a concealed 3k+1 hand *by shape*, ascending (E15).

    Unlike :func:`waits`, a kind counts even when the hand already holds all four copies of it: in its
    melds, or concealed (then the fifth copy would complete the shape). This is how 边张/坎张/单钓 are
    judged, as in Chinese Official rules; what a player can still win on is :func:`waits`. Melds count
    only for duel's 绿一色 free form, as in :func:`waits`.

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles, format_tiles
    >>> hand = counts_of(parse_tiles("1222233445556m"))
    >>> format_tiles(shape_waits(hand)), format_tiles(waits(hand))
    ('25m', '5m')
    """
    m, p, s, z, size = _keys_of(counts, READY_SIZES, "a ready shape")
    duel = _is_duel(profile, counts, p, s)
    green_melds = 0 if not melded_tiles else _melds(melded_tiles)[1]
    found = waits_keys(counts, m, p, s, z, size, duel, green_melds)  # kinds held four times left out
    if COPIES not in counts:
        return found
    green = duel and m == p == 0 and _all_green(s, z, size, green_melds, 13)
    keys = [m, p, s, z]
    for kind in range(NUM_KINDS):
        if counts[kind] == COPIES and (_fifth_copy_completes(keys, kind) or (green and kind in GREEN_TILES)):
            found.append(kind)
    return sorted(found)


def _fifth_copy_completes(keys: list[int], kind: int) -> bool:
    """Whether a fifth copy of ``kind`` (held four times) completes the standard form. Five copies need a
    pung or a pair of the kind (chows hold one each, and a hand has at most four sets), so the hand with
    the fifth copy is complete iff without a pung of it (two left) it is sets and a pair, or without a
    pair of it (three left) sets only. Seven pairs and thirteen orphans never hold five."""
    suit = min(kind // 9, 3)
    place = 5 ** ((8 if suit < 3 else 6) - (kind - 9 * suit))
    codes = [_SUIT_WIN[keys[0]], _SUIT_WIN[keys[1]], _SUIT_WIN[keys[2]], _HONOR_WIN[keys[3]]]
    table = _HONOR_WIN if suit == 3 else _SUIT_WIN
    others = 1
    for other, code in enumerate(codes):
        if other != suit:
            others *= code
    without_pung = table[keys[suit] - 2 * place]  # 4 + 1 − 3 = 2 copies left
    without_pair = table[keys[suit] - place]  # 4 + 1 − 2 = 3 copies left
    return others * without_pung == 2 or others * without_pair == 1


def shanten(counts: Sequence[int], *, profile: str = "duel", melded_tiles: Iterable[int] = ()) -> int:
    """Tiles away from ready: -1 = winning, 0 = ready, 1 = one exchange from ready, …

    Minimum over the forms the profile allows: standard, seven pairs and (duel) thirteen orphans
    when 13–14 tiles are concealed, and duel's 绿一色 free form. Exact for concealed hands: a kind
    held four times is never counted as a wait. Copies held in melds are not taken into account, so
    with melds the value is a lower bound (``shanten > 0`` still proves the hand is not ready).

    >>> from duelmahjong.rules.tiles import counts_of, parse_tiles
    >>> shanten(counts_of(parse_tiles("123m456p789s1122z")))
    0
    >>> shanten(counts_of(parse_tiles("1111m234p567p789s")))  # waiting on a fifth 1m is not ready
    1
    """
    m, p, s, z, size = _keys_of(counts, WINNING_SIZES | READY_SIZES, "shanten")
    duel = _is_duel(profile, counts, p, s)
    green_melds = 0 if not melded_tiles else _melds(melded_tiles)[1]
    return shanten_keys(m, p, s, z, size, duel, green_melds)
