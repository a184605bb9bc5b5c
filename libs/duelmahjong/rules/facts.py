"""Facts: cheap properties of a winning hand and of one reading of it, as bits of an int.

A pattern lists the facts it ``requires`` (``frozenset({"standard", "concealed"})``); the catalogue
calls its predicate only for arrangements that have them all, and memoises per facts value which
patterns are worth calling. :class:`HandFacts` computes what is the same for every reading of a hand
once; the arrangement adds the facts of its reading (form, number of chows and pungs).

>>> sorted(name for name in FACT_NAMES if FACTS[name] & facts_of("standard", 4, 0))[:3]
['chow', 'four_chows', 'standard']
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from duelmahjong.rules.description import CONTEXT_FLAGS, HandDescription
from duelmahjong.rules.tiles import (
    DRAGONS,
    GREEN_TILES,
    NUM_KINDS,
    SUIT_FIRSTS,
    TERMINALS_AND_HONORS,
    WINDS,
)

# The context flags that are facts of the same name. Not ``dealer`` (no pattern reads it as a fact),
# nor the two declarations, which both set the fact ``declared_ready``.
_CONTEXT_FACTS = tuple(
    flag for flag in CONTEXT_FLAGS if flag not in ("dealer", "declared_ready", "declared_first_turn")
)
# Every fact, in bit order.
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
    # context of the win (docs/decisions.md §7)
    "declared_ready",  # declared_ready or declared_first_turn
    "first_turn_win",
    *_CONTEXT_FACTS,  # the boolean context keys, each true when the context says so
    "bonus_tiles",  # duel: revealed bonus tiles (花牌) exist
    "flowers",  # erren: the winner holds flowers
)
FACTS: dict[str, int] = {name: 1 << bit for bit, name in enumerate(FACT_NAMES)}
_F = FACTS

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

# The set kind of each declared meld kind.
MELD_SET_KIND = {"chi": "chow", "pong": "pung", "exposed_kong": "kong", "added_kong": "kong"}
MELD_SET_KIND["concealed_kong"] = "kong"


_BIT = tuple(1 << kind for kind in range(NUM_KINDS))


def _mask(kinds: Iterable[int]) -> int:
    return sum(_BIT[kind] for kind in set(kinds))


_MAN, _PIN, _SOU = (_mask(range(first, first + 9)) for first in SUIT_FIRSTS)
_WIND_MASK = _mask(WINDS)
_DRAGON_MASK = _mask(DRAGONS)
_HONOR_MASK = _WIND_MASK | _DRAGON_MASK
TERMINAL_HONOR_MASK = _mask(TERMINALS_AND_HONORS)
GREEN_MASK = _mask(GREEN_TILES)
_CONTEXT_FLAGS = attrgetter("declared_ready", "declared_first_turn", *_CONTEXT_FACTS)
_CONTEXT_FLAG_BITS = (_F["declared_ready"], _F["declared_ready"], *(_F[name] for name in _CONTEXT_FACTS))
_context_facts_memo: dict[tuple[bool, ...], int] = {}


_CHOW_FACTS: tuple[int, ...] = (
    0,
    _F["chow"],
    _F["chow"] | _F["two_chows"],
    _F["chow"] | _F["two_chows"] | _F["three_chows"],
)
_CHOW_FACTS += (_CHOW_FACTS[3] | _F["four_chows"],)
_PUNG_FACTS: tuple[int, ...] = (0, 0, _F["two_pungs"], _F["two_pungs"] | _F["three_pungs"])
_PUNG_FACTS += (_PUNG_FACTS[3] | _F["four_pungs"],)
_FORM_FACTS = {form: _F[form] for form in ("standard", "seven_pairs", "thirteen_orphans", "free")}


def facts_of(form: str, chows: int, pungs: int) -> int:
    """The facts of a reading itself: its form and how many chows and pungs/kongs it has."""
    return _FORM_FACTS[form] | _CHOW_FACTS[chows] | _PUNG_FACTS[pungs]


def _context_facts(flags: tuple[bool, ...]) -> int:
    facts = 0
    for flag, bit in zip(flags, _CONTEXT_FLAG_BITS, strict=True):
        if flag:
            facts |= bit
    _context_facts_memo[flags] = facts
    return facts


class HandFacts:
    """What is the same for every reading of one hand, computed once per evaluation: the counts, a
    bit mask of the kinds present, the declared melds' chows and pungs, and the hand-level facts."""

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
        "waits",
        "win",
    )

    def __init__(self, desc: HandDescription) -> None:
        self.desc = desc
        bits = _BIT
        closed = [0] * NUM_KINDS
        mask = 0
        for kind in desc.concealed:
            closed[kind] += 1
            mask |= bits[kind]
        win = self.win = desc.win_tile
        closed[win] += 1
        mask |= bits[win]
        self.closed = closed
        facts = 0
        meld_chows: list[int] = []
        meld_pungs: list[int] = []
        hidden = kongs = 0
        if desc.melds:
            counts = closed[:]
            concealed = True
            for meld in desc.melds:
                set_kind = MELD_SET_KIND[meld.kind]
                tile = meld.tiles[0]
                is_hidden = meld.kind == "concealed_kong"
                concealed = concealed and is_hidden
                if set_kind == "chow":
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
                    kongs += set_kind == "kong"
            if kongs:
                facts |= _KONG_FACT
        else:
            counts = closed  # shared: neither is ever modified after this point
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
        context_facts = _context_facts_memo.get(flags)
        facts |= _context_facts(flags) if context_facts is None else context_facts
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
        if not mask & TERMINAL_HONOR_MASK:
            facts |= _SIMPLES_FACT
        elif not mask & ~TERMINAL_HONOR_MASK:
            facts |= _TERMINALS_OR_HONORS_FACT
        if context.first_turn_win is not None:
            facts |= _FIRST_TURN_WIN_FACT
        if context.revealed_bonus_tiles:
            facts |= _BONUS_TILES_FACT
        if context.flowers:
            facts |= _FLOWERS_FACT
        self.facts = facts
