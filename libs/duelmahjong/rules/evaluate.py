"""Fan evaluation: a hand description in, the scored breakdown out (RULES.md §7).

Generic over catalogues: for every arrangement of the hand, detect the catalogue's patterns from the
highest value down, skipping any pattern already excluded by a scored one (E1: an excluded pattern
excludes nothing), apply the limit-hand rule and the cap (D9) and the fallback pattern (D1), and keep
the arrangement with the highest total.

>>> from duelmahjong.rules.description import HandDescription
>>> desc = HandDescription.from_json({"profile": "duel", "concealed": "234567m234p5z",
...     "melds": [{"kind": "pong", "tiles": "777s"}], "win_tile": "5z", "self_drawn": False})
>>> result = evaluate(desc)
>>> [(p.id, p.fan) for p in result.patterns], result.total_fan
([('basic_win', 1)], 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duelmahjong.rules.arrangement import Arrangement, arrangements
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import InvalidHandError
from duelmahjong.rules.patterns import Catalogue, Pattern
from duelmahjong.rules.profiles import get_profile


@dataclass(frozen=True, slots=True)
class ScoredPattern:
    """One line of a breakdown; a pattern that occurs several times appears once with its summed fan."""

    id: str
    name_zh: str
    fan: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name_zh": self.name_zh, "fan": self.fan}


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The score of a winning hand. ``patterns`` are in catalogue order."""

    patterns: tuple[ScoredPattern, ...]
    total_fan: int
    capped: bool  # the non-limit total exceeded the cap and was cut to it (D9)
    limit: bool  # a limit hand (役满): only limit patterns are listed, the total is the highest tier (D9)
    meets_minimum: bool  # the fan counted toward 起和 reaches the profile's minimum (E16)
    arrangement: Arrangement | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "patterns": [pattern.to_json() for pattern in self.patterns],
            "total_fan": self.total_fan,
            "capped": self.capped,
            "limit": self.limit,
            "meets_minimum": self.meets_minimum,
        }

    def fan_of(self, pattern_id: str) -> int:
        """The fan scored by one pattern, 0 if absent."""
        return next((p.fan for p in self.patterns if p.id == pattern_id), 0)


def evaluate(desc: HandDescription, catalogue: Catalogue | None = None) -> Evaluation:
    """Score a winning hand with its profile's catalogue (or ``catalogue``).

    Raises :class:`InvalidHandError` if the tiles do not form a win.
    """
    if catalogue is None:
        catalogue = get_profile(desc.profile).catalogue
    best: tuple[int, int] | None = None
    best_found: list[tuple[Pattern, int]] = []
    best_arrangement: Arrangement | None = None
    for arrangement in arrangements(desc):
        found = _detect(catalogue, arrangement)
        if catalogue.limit_rule and found and found[0][0].limit_tier is not None:
            key = (max(p.value for p, _ in found), 1 << 30)  # a limit hand beats any non-limit reading
        else:
            raw = sum(p.fan * n for p, n in found)
            key = (min(raw, catalogue.cap) if catalogue.cap is not None else raw, raw)
        if best is None or key > best:
            best, best_found, best_arrangement = key, found, arrangement
    if best is None:
        raise InvalidHandError(f"{_hand_text(desc)} is not a winning hand in profile {desc.profile}")
    return _result(catalogue, best_found, best_arrangement)


def _detect(catalogue: Catalogue, arrangement: Arrangement) -> list[tuple[Pattern, int]]:
    """Patterns present in one arrangement after E1 exclusions, highest value first."""
    found: list[tuple[Pattern, int]] = []
    excluded: set[str] = set()
    limit_rule = catalogue.limit_rule
    for pattern in catalogue.candidates(arrangement.facts):
        if pattern.id in excluded:
            continue  # E1: an excluded pattern excludes nothing, so it need not even be detected
        if limit_rule and found and pattern.limit_tier is None and found[0][0].limit_tier is not None:
            break  # D9: limit patterns are ordered first; once one is found nothing else can score
        occurrences = pattern.detect(arrangement)
        if occurrences:
            found.append((pattern, occurrences))
            if pattern.excludes:
                excluded |= pattern.excludes
    fallback = catalogue.fallback
    if fallback is not None and all(p.id in catalogue.fallback_ignores for p, _ in found):
        found.append((catalogue[fallback], 1))  # D1: 推倒胡 when nothing else (花牌 aside) scored
    return found


def _result(
    catalogue: Catalogue, found: list[tuple[Pattern, int]], arrangement: Arrangement | None
) -> Evaluation:
    position = catalogue.position
    found.sort(key=lambda item: position[item[0].id])
    scored = tuple(ScoredPattern(p.id, p.name_zh, p.value * n) for p, n in found)
    if catalogue.limit_rule and any(p.limit_tier is not None for p, _ in found):
        return Evaluation(scored, max(p.value for p, _ in found), False, True, True, arrangement)
    raw = sum(s.fan for s in scored)
    total = raw
    capped = catalogue.cap is not None and raw > catalogue.cap
    if capped:
        total = catalogue.cap  # type: ignore[assignment]
    toward_minimum = sum(p.fan * n for p, n in found if p.counts_toward_minimum)
    return Evaluation(scored, total, capped, False, toward_minimum >= catalogue.minimum, arrangement)


def _hand_text(desc: HandDescription) -> str:
    from duelmahjong.rules.tiles import format_tiles

    melds = " ".join(f"[{format_tiles(m.tiles)}]" for m in desc.melds)
    return f"{format_tiles(desc.concealed)}{' ' + melds if melds else ''} + {format_tiles([desc.win_tile])}"
