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

from typing import TYPE_CHECKING, NamedTuple

from duelmahjong.rules.analysis import decompositions, is_seven_pairs, is_thirteen_orphans, waits
from duelmahjong.rules.profiles import get_profile
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


class _Hand:
    """What is the same for every reading of one hand (computed once per evaluation)."""

    __slots__ = ("closed", "counts", "desc", "facts", "meld_sets", "waits")

    def __init__(self, desc: HandDescription) -> None:
        self.desc = desc
        closed = [0] * 34
        for kind in desc.concealed:
            closed[kind] += 1
        closed[desc.win_tile] += 1
        self.closed = closed
        counts = closed[:]
        meld_sets = []
        concealed = True
        kong = False
        for meld in desc.melds:
            kind = _MELD_SET_KIND[meld.kind]
            tile = meld.tiles[0]
            hidden = meld.kind == "concealed_kong"
            concealed = concealed and hidden
            if kind == "chow":
                counts[tile] += 1
                counts[tile + 1] += 1
                counts[tile + 2] += 1
            else:
                kong = kong or kind == "kong"
                counts[tile] += len(meld.tiles)
            meld_sets.append(WinSet(kind, tile, hidden, meld.kind))
        self.counts = counts
        self.meld_sets = tuple(meld_sets)
        self.waits: list[int] | None = None
        context = desc.context
        self_drawn = desc.self_drawn or context.robbing_kong or context.extra_draw_after_exhaustion
        facts = (_F["concealed"] if concealed else _F["open"]) | (
            _F["self_drawn"] if self_drawn else _F["discard"]
        )
        if kong:
            facts |= _F["kong"]
        winds = counts[27] or counts[28] or counts[29] or counts[30]
        dragons = counts[31] or counts[32] or counts[33]
        facts |= (_F["winds"] if winds else 0) | (_F["dragons"] if dragons else 0)
        facts |= _F["honors"] if winds or dragons else _F["no_honors"]
        suits = (any(counts[0:9]), any(counts[9:18]), any(counts[18:27]))
        if sum(suits) <= 1:
            facts |= _F["one_suit"]
        outside = sum(counts[kind] for kind in _TERMINALS_AND_HONORS)
        if outside == 0:
            facts |= _F["simples"]
        elif outside == sum(counts):
            facts |= _F["terminals_or_honors"]
        if context.declared_ready or context.declared_first_turn:
            facts |= _F["declared_ready"]
        if context.first_turn_win is not None:
            facts |= _F["first_turn_win"]
        for name in _CONTEXT_FACTS:
            if getattr(context, name):
                facts |= _F[name]
        if context.revealed_bonus_tiles:
            facts |= _F["bonus_tiles"]
        if context.flowers:
            facts |= _F["flowers"]
        self.facts = facts


class Arrangement:
    """One reading of a winning hand. Attributes are plain values; treat them as read-only."""

    __slots__ = (
        "_hand",
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
        "sets",
        "wait",
        "win_set",
        "win_tile",
    )

    form: str  # "standard" | "seven_pairs" | "thirteen_orphans" | "free"
    sets: tuple[WinSet, ...]  # declared melds first, then the concealed sets of this reading
    pair: int | None
    pairs: tuple[int, ...]  # seven pairs: the seven pair kinds (four of a kind appears twice)
    win_tile: int
    wait: str  # "edge" | "closed" | "single" | "two_sided" | "pung": what the win tile completed
    win_set: WinSet | None  # the set the winning tile completed (None when it completed the pair)
    counts: list[int]  # 34 counts of the whole hand, kongs counting 4
    desc: HandDescription
    self_drawn: bool  # effective self-draw (robbing a kong and the extra draw count: D13, D8)
    concealed_hand: bool  # 门清: no declared melds other than concealed kongs
    chows: tuple[int, ...]  # lowest tile of every chow, sorted
    pungs_and_kongs: tuple[int, ...]  # tile of every pung and kong, sorted
    concealed_pung_count: int  # concealed pungs + concealed kongs (D13: a discard-completed pung is open)
    kong_count: int
    facts: int  # FACTS bits

    def __init__(
        self,
        hand: _Hand,
        form: str,
        sets: tuple[WinSet, ...],
        pair: int | None,
        pairs: tuple[int, ...],
        wait: str,
        win_set: WinSet | None,
    ) -> None:
        self._hand = hand
        self.desc = hand.desc
        self.form = form
        self.sets = sets
        self.pair = pair
        self.pairs = pairs
        self.win_tile = hand.desc.win_tile
        self.wait = wait
        self.win_set = win_set
        self.counts = hand.counts
        facts = hand.facts | _F[form]
        self.self_drawn = bool(facts & _F["self_drawn"])
        self.concealed_hand = bool(facts & _F["concealed"])
        chows = []
        pungs = []
        hidden = 0
        kongs = 0
        for winset in sets:
            if winset.kind == "chow":
                chows.append(winset.tile)
            else:
                pungs.append(winset.tile)
                if winset.concealed:
                    hidden += 1
                if winset.kind == "kong":
                    kongs += 1
        chows.sort()
        pungs.sort()
        self.chows = tuple(chows)
        self.pungs_and_kongs = tuple(pungs)
        self.concealed_pung_count = hidden
        self.kong_count = kongs
        self.facts = facts | _CHOW_FACTS[len(chows)] | _PUNG_FACTS[len(pungs)]

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
    meld_sets = hand.meld_sets
    discard = not (hand.facts & _F["self_drawn"])
    out: list[Arrangement] = []
    for decomposition in decompositions(closed):
        concealed_sets = []
        choices: list[int] = []  # indexes into concealed_sets the winning tile may have completed
        for block in decomposition.blocks:
            kind = block.kind
            tile = block.tile
            winset = WinSet(kind, tile, True)
            if (kind == "pung" and tile == win) or (kind == "chow" and tile <= win <= tile + 2):
                if winset not in concealed_sets:
                    choices.append(len(concealed_sets))
            concealed_sets.append(winset)
        if decomposition.pair == win:
            sets = meld_sets + tuple(concealed_sets)
            out.append(Arrangement(hand, "standard", sets, win, (), "single", None))
        for index in choices:
            completed = concealed_sets[index]
            if completed.kind == "pung":
                wait = "pung"
                if discard:  # D13: a pung completed by a discard is not concealed
                    completed = WinSet("pung", completed.tile, False)
            else:
                wait = _chow_wait(completed.tile, win)
            sets = (*meld_sets, *concealed_sets[:index], completed, *concealed_sets[index + 1 :])
            out.append(Arrangement(hand, "standard", sets, decomposition.pair, (), wait, completed))
    if not meld_sets:
        if profile.seven_pairs and is_seven_pairs(closed):
            pairs = tuple(kind for kind, count in enumerate(closed) for _ in range(count // 2))
            out.append(Arrangement(hand, "seven_pairs", (), None, pairs, "single", None))
        if profile.thirteen_orphans and is_thirteen_orphans(closed):
            pair = next(kind for kind, count in enumerate(closed) if count == 2)
            out.append(Arrangement(hand, "thirteen_orphans", (), pair, (), "single", None))
    if not out and profile.all_green_free_form:
        counts = hand.counts
        if all(counts[kind] == 0 for kind in range(34) if kind not in GREEN_TILES):
            # D12: 绿一色 may be "乱牌" — any 14 green tiles win, in no particular shape.
            out.append(Arrangement(hand, "free", meld_sets, None, (), "single", None))
    return out
