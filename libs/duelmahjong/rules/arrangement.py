"""Arrangements: every reading of a winning hand, the input of every fan pattern.

An :class:`Arrangement` is one way to read the whole hand — four sets and a pair (``standard``), seven
pairs, thirteen orphans, or duel's all-green ``free`` form (D12) — together with what the winning tile
completed in that reading (its ``wait``). Patterns are predicates over an arrangement; the evaluator
scores every arrangement and keeps the best.

Everything a pattern needs often is computed once here (sorted chow and pung tiles, concealed pung
count, a ``facts`` bit set) so that predicates stay one-liners and the catalogue can skip patterns
whose required facts are absent without calling them.

>>> from duelmahjong.rules.description import HandDescription
>>> desc = HandDescription.from_json({"profile": "duel", "concealed": "11123m456p789s55z",
...     "win_tile": "1m", "self_drawn": False})
>>> [(arr.wait, arr.pair, arr.concealed_pung_count) for arr in arrangements(desc)]
[('pung', 31, 0), ('two_sided', 31, 1)]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace
from typing import NamedTuple

from duelmahjong.rules.analysis import shape_waits
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.facts import (
    FACTS,
    GREEN_MASK,
    MELD_SET_KIND,
    TERMINAL_HONOR_MASK,
    HandFacts,
    facts_of,
)
from duelmahjong.rules.keys import suit_keys
from duelmahjong.rules.setups import get_setup
from duelmahjong.rules.tables import OnFirstUse
from duelmahjong.rules.tiles import format_tiles

_SELF_DRAWN_FACT = FACTS["self_drawn"]
_CONCEALED_FACT = FACTS["concealed"]


class WinSet(NamedTuple):
    """One set of a reading: ``kind`` chow (``tile`` = its lowest tile), pung or kong.

    ``concealed`` is False for melds other than a concealed kong, and for a pung completed by a discard
    (D13). ``declared`` is the meld kind for declared melds, None for sets inside the concealed hand.
    """

    kind: str
    tile: int
    concealed: bool
    declared: str | None = None


# Concealed sets of a reading are shared values, not rebuilt per hand.
_HIDDEN_CHOW = tuple(WinSet("chow", tile, True) for tile in range(34))
_HIDDEN_PUNG = tuple(WinSet("pung", tile, True) for tile in range(34))
_OPEN_PUNG = tuple(WinSet("pung", tile, False) for tile in range(34))  # D13: completed by a discard


# Per-suit readings of the precomputed tables (duelmahjong.rules.table_build) as absolute chow/pung tiles.
_Shape = tuple[int, tuple[int, ...], tuple[int, ...]]
_SUIT_READINGS = OnFirstUse("suit_readings", globals())
_HONOR_READINGS = OnFirstUse("honor_readings", globals())
# Memoised per suit, keyed by the suit's counts as bytes (cheaper than computing the tables' key).
_SHAPES: dict[int, dict[bytes, list[_Shape]]] = {base: {} for base in (0, 9, 18, 27)}
_SUIT_SLICES = tuple(
    (base, base + size, bytes(size), _SHAPES[base]) for base, size in ((0, 9), (9, 9), (18, 9), (27, 7))
)


def _set_order(item: tuple[int, int, WinSet]) -> tuple[int, int]:
    return item[0], item[1]


class Arrangement:
    """One reading of a winning hand. Attributes are plain values; treat them as read-only."""

    __slots__ = (
        "_hand",
        "_hidden_chows",
        "_hidden_pungs",
        "_sets",
        "chows",
        "concealed_hand",
        "concealed_pung_count",
        "counts",
        "desc",
        "facts",
        "form",
        "kong_count",
        "pair",
        "pairs",
        "pungs_and_kongs",
        "self_drawn",
        "wait",
        "win_set",
        "win_tile",
    )

    form: str  # "standard" | "seven_pairs" | "thirteen_orphans" | "free"
    pair: int | None
    pairs: tuple[int, ...]  # seven pairs: the seven pair kinds (four of a kind appears twice)
    win_tile: int
    wait: str  # "edge" | "closed" | "single" | "two_sided" | "pung": what the win tile completed
    win_set: WinSet | None  # the set the winning tile completed (None when it completed the pair)
    counts: list[int]  # 34 counts of the whole hand, kongs counting 4
    desc: HandDescription
    self_drawn: bool  # effective self-draw (robbing a kong and the extra draw count: D13, D8)
    concealed_hand: bool  # 门清: no declared melds other than concealed kongs
    chows: tuple[int, ...]  # lowest tile of every chow (declared or not), sorted
    pungs_and_kongs: tuple[int, ...]  # tile of every pung and kong (declared or not), sorted
    concealed_pung_count: int  # concealed pungs + concealed kongs (D13: a discard-completed pung is open)
    kong_count: int
    facts: int  # FACTS bits

    def __init__(
        self,
        hand: HandFacts,
        form: str,
        pair: int | None,
        pairs: tuple[int, ...] = (),
        wait: str = "single",
        win_set: WinSet | None = None,
        hidden_chows: tuple[int, ...] = (),
        hidden_pungs: tuple[int, ...] = (),
    ) -> None:
        self._hand = hand
        self._hidden_chows = hidden_chows
        self._hidden_pungs = hidden_pungs
        self._sets: tuple[WinSet, ...] | None = None
        self.desc = hand.desc
        self.form = form
        self.pair = pair
        self.pairs = pairs
        self.win_tile = hand.win
        self.wait = wait
        self.win_set = win_set
        self.counts = hand.counts
        facts = hand.facts
        self.self_drawn = facts & _SELF_DRAWN_FACT != 0
        self.concealed_hand = facts & _CONCEALED_FACT != 0
        if hand.desc.melds:
            chows = tuple(sorted(hand.meld_chows + hidden_chows))
            pungs = tuple(sorted(hand.meld_pungs + hidden_pungs))
        else:
            chows, pungs = hidden_chows, hidden_pungs  # each suit's blocks come sorted, suits in order
        self.chows = chows
        self.pungs_and_kongs = pungs
        hidden = hand.meld_hidden + len(hidden_pungs)
        if wait == "pung" and win_set is not None and not win_set.concealed:
            hidden -= 1  # D13: the pung completed by a discard is not concealed
        self.concealed_pung_count = hidden
        self.kong_count = hand.meld_kongs
        self.facts = facts | facts_of(form, len(chows), len(pungs))

    @property
    def sets(self) -> tuple[WinSet, ...]:
        """Declared melds first, then the concealed sets of this reading by tile (built on first use)."""
        if self._sets is None:
            concealed = [(tile, 1, _HIDDEN_CHOW[tile]) for tile in self._hidden_chows]
            completed = self.win_set
            for tile in self._hidden_pungs:
                winset = (
                    completed
                    if completed is not None and completed.kind == "pung" and completed.tile == tile
                    else None
                )
                concealed.append((tile, 0, winset or _HIDDEN_PUNG[tile]))
            concealed.sort(key=_set_order)
            declared = tuple(
                WinSet(MELD_SET_KIND[meld.kind], meld.tiles[0], meld.kind == "concealed_kong", meld.kind)
                for meld in self.desc.melds
            )
            self._sets = declared + tuple(item[2] for item in concealed)
        return self._sets

    def has(self, fact: str) -> bool:
        """Whether this arrangement has the named fact (see :data:`~duelmahjong.rules.facts.FACT_NAMES`)."""
        return bool(self.facts & FACTS[fact])

    @property
    def all_tiles(self) -> list[int]:
        """Every tile of the hand as sorted kinds, kongs counting 4."""
        return [kind for kind, count in enumerate(self.counts) for _ in range(count)]

    @property
    def hand_waits(self) -> list[int]:
        """Tile kinds the 13 tiles before the win were waiting on by shape, kinds whose four copies the
        hand holds included (E15, ``analysis.shape_waits``); computed once per hand."""
        hand = self._hand
        if hand.waits is None:
            before = hand.closed[:]
            before[self.win_tile] -= 1
            melded = [tile for meld in self.desc.melds for tile in meld.tiles]
            hand.waits = shape_waits(before, profile=self.desc.profile, melded_tiles=melded)
        return hand.waits

    def __repr__(self) -> str:
        parts = [
            f"{s.kind}:{format_tiles(range(s.tile, s.tile + 3) if s.kind == 'chow' else [s.tile])}"
            for s in self.sets
        ]
        if self.pair is not None:
            parts.append(f"pair:{format_tiles([self.pair])}")
        if self.pairs:
            parts.append(f"pairs:{format_tiles(self.pairs)}")
        return f"<Arrangement {self.form} {' '.join(parts)} wait={self.wait}>"


def _chow_wait(low: int, win: int) -> str:
    offset = win - low
    if offset == 1:
        return "closed"
    rank = low % 9  # 0-based rank of the lowest tile
    if (offset == 2 and rank == 0) or (offset == 0 and rank == 6):
        return "edge"  # 12 waiting on 3, 89 waiting on 7
    return "two_sided"


def _suit_shapes(base: int, chunk: bytes, closed: list[int]) -> list[_Shape] | None:
    """The readings of one suit (``chunk``: its counts as bytes) as absolute tiles: (pair or -1, chow
    tiles, pung tiles); memoised. None if the suit cannot be split into sets and at most one pair."""
    key = suit_keys(closed)[base // 9]  # the reading tables' key; only on a memo miss
    readings = (_HONOR_READINGS if base == 27 else _SUIT_READINGS).get(key)
    if readings is None:
        return None  # not complete; not memoised, so odd inputs cannot grow the memo
    shapes = [
        (
            base + pair if pair >= 0 else -1,
            tuple(base + rank for is_chow, rank in blocks if is_chow),
            tuple(base + rank for is_chow, rank in blocks if not is_chow),
        )
        for pair, blocks in readings
    ]
    _SHAPES[base][chunk] = shapes
    return shapes


def _combine(combination: Iterable[_Shape]) -> _Shape | None:
    """One reading of the whole hand from one reading per suit: exactly one suit holds the pair."""
    pair = -1
    chows: tuple[int, ...] = ()
    pungs: tuple[int, ...] = ()
    for suit_pair, suit_chows, suit_pungs in combination:
        if suit_pair >= 0:
            if pair >= 0:
                return None  # two pairs: not a standard reading
            pair = suit_pair
        chows += suit_chows
        pungs += suit_pungs
    return (pair, chows, pungs) if pair >= 0 else None


def _standard_readings(closed: list[int]) -> list[_Shape]:
    """Every (pair, chow tiles, pung tiles) decomposition of the concealed tiles + the winning tile."""
    raw = bytes(closed)
    per_suit = []
    single = True  # the common case: every suit splits one way only
    for base, end, empty, memo in _SUIT_SLICES:
        chunk = raw[base:end]
        if chunk != empty:
            shapes = memo.get(chunk) or _suit_shapes(base, chunk, closed)
            if shapes is None:
                return []
            if len(shapes) > 1:
                single = False
            per_suit.append(shapes)
    if single:
        reading = _combine([shapes[0] for shapes in per_suit])
        return [] if reading is None else [reading]
    found = []
    for combination in itertools.product(*per_suit):
        reading = _combine(combination)
        if reading is not None:
            found.append(reading)
    return found


def arrangements(desc: HandDescription) -> list[Arrangement]:
    """Every reading of the winning hand; empty when the tiles do not form a win in its profile.

    One arrangement per standard decomposition of the concealed tiles and the winning tile × each
    distinct set (or the pair) the winning tile can have completed; plus seven pairs, thirteen orphans
    and the all-green free form where the profile allows them. The dealer's initial hand (天和) has no
    winning tile: each kind it holds is read as the winning one in turn.
    """
    out = _readings(desc)
    if out and desc.context.first_turn_win == "dealer_initial_hand":
        # D10 天和 "起手配牌后立即胡牌": the 14 dealt tiles win as they are, so which one the engine
        # names as the winning tile must not matter; with D3 (the best reading wins) a nine-gates
        # shape is the pure nine-sided wait (D12) whenever some tile can be the fourteenth.
        tiles = [*desc.concealed, desc.win_tile]
        for kind in sorted(set(desc.concealed) - {desc.win_tile}):
            rest = tiles.copy()
            rest.remove(kind)
            out += _readings(replace(desc, concealed=tuple(sorted(rest)), win_tile=kind))
    return out


def _readings(desc: HandDescription) -> list[Arrangement]:
    """:func:`arrangements` for the winning tile the description names."""
    profile = get_setup(desc.profile)
    hand = HandFacts(desc)
    closed = hand.closed
    win = desc.win_tile
    completed_pung = _HIDDEN_PUNG if hand.facts & _SELF_DRAWN_FACT else _OPEN_PUNG
    out: list[Arrangement] = []
    for pair, chows, pungs in _standard_readings(closed):
        if pair == win:
            out.append(Arrangement(hand, "standard", pair, (), "single", None, chows, pungs))
        if win in pungs:
            out.append(Arrangement(hand, "standard", pair, (), "pung", completed_pung[win], chows, pungs))
        previous = -1
        for low in chows:
            if low <= win <= low + 2 and low != previous:
                previous = low  # identical chows give one reading
                wait = _chow_wait(low, win)
                out.append(Arrangement(hand, "standard", pair, (), wait, _HIDDEN_CHOW[low], chows, pungs))
    if not desc.melds:
        # Seven pairs: 14 tiles in at most 7 kinds (a kind held four times is two pairs), all even.
        if (
            profile.seven_pairs
            and hand.mask.bit_count() <= 7
            and len(desc.concealed) == 13
            and not any(count & 1 for count in closed)
        ):
            pairs = tuple(kind for kind, count in enumerate(closed) for _ in range(count // 2))
            out.append(Arrangement(hand, "seven_pairs", None, pairs))
        if profile.thirteen_orphans and hand.mask == TERMINAL_HONOR_MASK:
            out.append(Arrangement(hand, "thirteen_orphans", closed.index(2)))
    if not out and profile.all_green_free_form and not hand.mask & ~GREEN_MASK:
        # D12: 绿一色 may be "乱牌" — any 14 green tiles win, in no particular shape.
        out.append(Arrangement(hand, "free", None))
    return out
