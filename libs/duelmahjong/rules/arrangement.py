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
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple

from duelmahjong.rules.analysis import waits
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.tables import SuitReading, get_tables, suit_keys
from duelmahjong.rules.tiles import GREEN_TILES

if TYPE_CHECKING:
    from duelmahjong.rules.description import HandDescription

_CONTEXT_FACTS = (
    "after_kong",
    "after_flower_replacement",
    "last_wall_tile",
    "last_discard",
    "extra_draw_after_exhaustion",
    "robbing_kong",
    "fourth_tile_visible",
    "first_turn_after_declare",
)
# Facts: cheap properties of an arrangement, as bits. A pattern may list facts it ``requires``; the
# catalogue then only calls its predicate for arrangements that have them all (speed, not meaning).
FACT_NAMES: tuple[str, ...] = (
    # forms
    "standard",
    "seven_pairs",
    "thirteen_orphans",
    "free",
    # the hand
    "concealed",  # no chi, pong or exposed/added kong (a concealed kong keeps the hand concealed)
    "open",
    "self_drawn",  # effective: robbing a kong and the extra draw count as self-drawn (D8, D13)
    "discard",
    "honors",
    "no_honors",
    "one_suit",  # number tiles of at most one suit (honours allowed)
    "simples",  # no terminal, no honour
    "terminals_or_honors",  # every tile is a terminal or an honour
    "winds",
    "dragons",
    "kong",
    # sets of this reading
    "chow",
    "two_chows",
    "three_chows",
    "four_chows",
    "two_pungs",  # pungs or kongs
    "three_pungs",
    "four_pungs",
    # context of the win (RULES.md §7)
    "declared_ready",  # declared_ready or declared_first_turn
    "first_turn_win",
    *_CONTEXT_FACTS,  # the boolean context keys, each true when the context says so
    "bonus_tiles",  # duel: revealed bonus tiles (花牌) exist
    "flowers",  # erren: the winner holds flowers
)
FACTS: dict[str, int] = {name: 1 << bit for bit, name in enumerate(FACT_NAMES)}
_F = FACTS
_TERMINALS_AND_HONORS = (0, 8, 9, 17, 18, 26, 27, 28, 29, 30, 31, 32, 33)
_CHOW_FACTS = (0, _F["chow"], _F["chow"] | _F["two_chows"], _F["chow"] | _F["two_chows"] | _F["three_chows"])
_CHOW_FACTS += (_CHOW_FACTS[3] | _F["four_chows"],)
_PUNG_FACTS = (0, 0, _F["two_pungs"], _F["two_pungs"] | _F["three_pungs"])
_PUNG_FACTS += (_PUNG_FACTS[3] | _F["four_pungs"],)

_BONUS_TILES_FACT = _F["bonus_tiles"]
_CONCEALED_FACT = _F["concealed"]
_DISCARD_FACT = _F["discard"]
_DRAGONS_FACT = _F["dragons"]
_FIRST_TURN_WIN_FACT = _F["first_turn_win"]
_FLOWERS_FACT = _F["flowers"]
_HONORS_FACT = _F["honors"]
_KONG_FACT = _F["kong"]
_NO_HONORS_FACT = _F["no_honors"]
_ONE_SUIT_FACT = _F["one_suit"]
_OPEN_FACT = _F["open"]
_SELF_DRAWN_FACT = _F["self_drawn"]
_SIMPLES_FACT = _F["simples"]
_TERMINALS_OR_HONORS_FACT = _F["terminals_or_honors"]
_WINDS_FACT = _F["winds"]
_SELF_DRAWN = _F["self_drawn"]
_CONCEALED = _F["concealed"]
_FORM_FACTS = {form: _F[form] for form in ("standard", "seven_pairs", "thirteen_orphans", "free")}

_MELD_SET_KIND = {"chi": "chow", "pong": "pung", "exposed_kong": "kong", "added_kong": "kong"}
_MELD_SET_KIND["concealed_kong"] = "kong"


class WinSet(NamedTuple):
    """One set of a reading: ``kind`` chow (``tile`` = its lowest tile), pung or kong.

    ``concealed`` is False for melds other than a concealed kong, and for a pung completed by a discard
    (D13). ``declared`` is the meld kind for declared melds, None for sets inside the concealed hand.
    """

    kind: str
    tile: int
    concealed: bool
    declared: str | None = None


_BIT = tuple(1 << kind for kind in range(34))
_MAN, _PIN, _SOU = (sum(_BIT[base : base + 9]) for base in (0, 9, 18))
_WIND_MASK = sum(_BIT[27:31])
_DRAGON_MASK = sum(_BIT[31:34])
_HONOR_MASK = _WIND_MASK | _DRAGON_MASK
_TERMINAL_HONOR_MASK = sum(_BIT[kind] for kind in _TERMINALS_AND_HONORS)
_GREEN_MASK = sum(_BIT[kind] for kind in GREEN_TILES)
_CONTEXT_FLAGS = attrgetter("declared_ready", "declared_first_turn", *_CONTEXT_FACTS)
_CONTEXT_FLAG_BITS = (_F["declared_ready"], _F["declared_ready"], *(_F[name] for name in _CONTEXT_FACTS))
_context_facts_memo: dict[tuple[bool, ...], int] = {}

# Concealed sets of a reading are shared values, not rebuilt per hand.
_HIDDEN_CHOW = tuple(WinSet("chow", tile, True) for tile in range(34))
_HIDDEN_PUNG = tuple(WinSet("pung", tile, True) for tile in range(34))
_OPEN_PUNG = tuple(WinSet("pung", tile, False) for tile in range(34))  # D13: completed by a discard


# Per-suit readings (R's precomputed tables) turned into absolute chow/pung tiles, memoised per key.
_Shape = tuple[int, tuple[int, ...], tuple[int, ...]]
_SUIT_READINGS = get_tables().suit_readings
_HONOR_READINGS = get_tables().honor_readings
_SHAPES: dict[tuple[int, int], list[_Shape]] = {}


def _set_order(item: tuple[int, int, WinSet]) -> tuple[int, int]:
    return item[0], item[1]


def _context_facts(flags: tuple[bool, ...]) -> int:
    facts = 0
    for flag, bit in zip(flags, _CONTEXT_FLAG_BITS, strict=True):
        if flag:
            facts |= bit
    _context_facts_memo[flags] = facts
    return facts


class _Hand:
    """What is the same for every reading of one hand (computed once per evaluation)."""

    __slots__ = (
        "closed",
        "counts",
        "desc",
        "facts",
        "mask",
        "meld_chows",
        "meld_hidden",
        "meld_kongs",
        "meld_pungs",
        "meld_sets",
        "odd",
        "waits",
        "win",
    )

    def __init__(self, desc: HandDescription) -> None:
        self.desc = desc
        bits = _BIT
        closed = [0] * 34
        mask = 0
        odd = 0  # kinds held an odd number of times (seven pairs needs none)
        for kind in desc.concealed:
            closed[kind] += 1
            mask |= bits[kind]
            odd ^= bits[kind]
        win = self.win = desc.win_tile
        closed[win] += 1
        mask |= bits[win]
        self.odd = odd ^ bits[win]
        self.closed = closed
        facts = 0
        meld_chows: list[int] = []
        meld_pungs: list[int] = []
        hidden = kongs = 0
        if desc.melds:
            counts = closed[:]
            meld_sets = []
            concealed = True
            for meld in desc.melds:
                kind = _MELD_SET_KIND[meld.kind]
                tile = meld.tiles[0]
                is_hidden = meld.kind == "concealed_kong"
                concealed = concealed and is_hidden
                if kind == "chow":
                    counts[tile] += 1
                    counts[tile + 1] += 1
                    counts[tile + 2] += 1
                    mask |= bits[tile] | bits[tile + 1] | bits[tile + 2]
                    meld_chows.append(tile)
                else:
                    counts[tile] += len(meld.tiles)
                    mask |= bits[tile]
                    meld_pungs.append(tile)
                    hidden += is_hidden
                    kongs += kind == "kong"
                meld_sets.append(WinSet(kind, tile, is_hidden, meld.kind))
            self.meld_sets = tuple(meld_sets)
            if kongs:
                facts |= _KONG_FACT
        else:
            counts = closed  # shared: neither is ever modified after this point
            self.meld_sets = ()
            concealed = True
        self.counts = counts
        self.mask = mask
        self.meld_chows = tuple(meld_chows)
        self.meld_pungs = tuple(meld_pungs)
        self.meld_hidden = hidden
        self.meld_kongs = kongs
        self.waits: list[int] | None = None
        context = desc.context
        flags = _CONTEXT_FLAGS(context)
        facts |= _context_facts_memo.get(flags) or _context_facts(flags)
        if desc.self_drawn or context.robbing_kong or context.extra_draw_after_exhaustion:
            facts |= _SELF_DRAWN_FACT
        else:
            facts |= _DISCARD_FACT
        facts |= _CONCEALED_FACT if concealed else _OPEN_FACT
        if mask & _HONOR_MASK:
            facts |= _HONORS_FACT
            if mask & _WIND_MASK:
                facts |= _WINDS_FACT
            if mask & _DRAGON_MASK:
                facts |= _DRAGONS_FACT
        else:
            facts |= _NO_HONORS_FACT
        if bool(mask & _MAN) + bool(mask & _PIN) + bool(mask & _SOU) <= 1:
            facts |= _ONE_SUIT_FACT
        if not mask & _TERMINAL_HONOR_MASK:
            facts |= _SIMPLES_FACT
        elif not mask & ~_TERMINAL_HONOR_MASK:
            facts |= _TERMINALS_OR_HONORS_FACT
        if context.first_turn_win is not None:
            facts |= _FIRST_TURN_WIN_FACT
        if context.revealed_bonus_tiles:
            facts |= _BONUS_TILES_FACT
        if context.flowers:
            facts |= _FLOWERS_FACT
        self.facts = facts


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
        hand: _Hand,
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
        self.self_drawn = facts & _SELF_DRAWN != 0
        self.concealed_hand = facts & _CONCEALED != 0
        if hand.meld_sets:
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
        self.facts = facts | _FORM_FACTS[form] | _CHOW_FACTS[len(chows)] | _PUNG_FACTS[len(pungs)]

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
            self._sets = self._hand.meld_sets + tuple(item[2] for item in concealed)
        return self._sets

    def has(self, fact: str) -> bool:
        """Whether this arrangement has the named fact (see ``FACT_NAMES``)."""
        return bool(self.facts & FACTS[fact])

    @property
    def all_tiles(self) -> list[int]:
        """Every tile of the hand as sorted kinds, kongs counting 4."""
        return [kind for kind, count in enumerate(self.counts) for _ in range(count)]

    @property
    def closed_counts(self) -> list[int]:
        """34 counts of the concealed tiles plus the winning tile (declared melds left out)."""
        return self._hand.closed

    @property
    def hand_waits(self) -> list[int]:
        """Tile kinds the 13 tiles before the win were waiting on (E15); computed once per hand."""
        hand = self._hand
        if hand.waits is None:
            before = hand.closed[:]
            before[self.win_tile] -= 1
            melded = [tile for meld in self.desc.melds for tile in meld.tiles]
            hand.waits = waits(before, profile=self.desc.profile, melded_tiles=melded)
        return hand.waits

    def __repr__(self) -> str:
        from duelmahjong.rules.tiles import format_tiles

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


def _suit_shapes(base: int, key: int, table: dict[int, tuple[SuitReading, ...]]) -> list[_Shape] | None:
    """The readings of one suit as absolute tiles: (pair or -1, chow tiles, pung tiles); memoised."""
    shapes = _SHAPES.get((base, key))
    if shapes is None:
        readings = table.get(key)
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
        _SHAPES[base, key] = shapes
    return shapes


def _standard_readings(keys: tuple[int, int, int, int]) -> list[_Shape]:
    """Every (pair, chow tiles, pung tiles) decomposition of the concealed tiles + the winning tile,
    given as their four suit keys."""
    m, p, s, z = keys
    per_suit = []
    single = True  # the common case: every suit splits one way only
    for base, key, table in (
        (0, m, _SUIT_READINGS),
        (9, p, _SUIT_READINGS),
        (18, s, _SUIT_READINGS),
        (27, z, _HONOR_READINGS),
    ):
        if key:
            shapes = _SHAPES.get((base, key)) or _suit_shapes(base, key, table)
            if shapes is None:
                return []
            if len(shapes) > 1:
                single = False
            per_suit.append(shapes)
    combinations: Iterable[tuple[_Shape, ...]]
    if single:
        combinations = (tuple(shapes[0] for shapes in per_suit),)
    else:
        combinations = itertools.product(*per_suit)
    found = []
    for combination in combinations:
        pair = -1
        chows: tuple[int, ...] = ()
        pungs: tuple[int, ...] = ()
        for suit_pair, suit_chows, suit_pungs in combination:
            if suit_pair >= 0:
                if pair >= 0:
                    break  # two pairs: not a standard reading
                pair = suit_pair
            chows += suit_chows
            pungs += suit_pungs
        else:
            if pair >= 0:
                found.append((pair, chows, pungs))
    return found


def arrangements(desc: HandDescription) -> list[Arrangement]:
    """Every reading of the winning hand; empty when the tiles do not form a win in its profile.

    One arrangement per standard decomposition of the concealed tiles and the winning tile × each
    distinct set (or the pair) the winning tile can have completed; plus seven pairs, thirteen orphans
    and the all-green free form where the profile allows them.
    """
    profile = get_profile(desc.profile)
    hand = _Hand(desc)
    closed = hand.closed
    win = desc.win_tile
    completed_pung = _HIDDEN_PUNG if hand.facts & _SELF_DRAWN else _OPEN_PUNG
    out: list[Arrangement] = []
    for pair, chows, pungs in _standard_readings(suit_keys(closed)):
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
    if not hand.meld_sets:
        if profile.seven_pairs and not hand.odd and len(desc.concealed) == 13:
            pairs = tuple(kind for kind, count in enumerate(closed) for _ in range(count // 2))
            out.append(Arrangement(hand, "seven_pairs", None, pairs))
        if profile.thirteen_orphans and hand.mask == _TERMINAL_HONOR_MASK:
            out.append(Arrangement(hand, "thirteen_orphans", closed.index(2)))
    if not out and profile.all_green_free_form and not hand.mask & ~_GREEN_MASK:
        # D12: 绿一色 may be "乱牌" — any 14 green tiles win, in no particular shape.
        out.append(Arrangement(hand, "free", None))
    return out
