"""Fan evaluation: a hand description in, the scored breakdown out (docs/decisions.md §7).

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

from typing import Any, NamedTuple

from duelmahjong.rules.arrangement import Arrangement, arrangements
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import InvalidHandError
from duelmahjong.rules.patterns import Catalogue, Pattern, ScoredPattern
from duelmahjong.rules.profiles import get_profile
from duelmahjong.rules.tiles import format_tiles


class Evaluation(NamedTuple):
    """The score of a winning hand (immutable). ``patterns`` are in catalogue order."""

    patterns: tuple[ScoredPattern, ...]
    total_fan: int
    capped: bool  # the non-limit total exceeded the cap and was cut to it (D9)
    limit: bool  # a limit hand (役满): only limit patterns are listed, the total is the highest tier (D9)
    meets_minimum: bool  # the fan counted toward 起和 reaches the profile's minimum (E16)

    def to_json(self) -> dict[str, Any]:
        return {
            "patterns": [pattern.to_json() for pattern in self.patterns],
            "total_fan": self.total_fan,
            "capped": self.capped,
            "limit": self.limit,
            "meets_minimum": self.meets_minimum,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evaluation:
        """The evaluation :meth:`to_json` wrote (a logged win's, read back without scoring it again).

        >>> e = Evaluation((ScoredPattern("basic_win", "推倒胡", 1),), 1, False, False, True)
        >>> Evaluation.from_json(e.to_json()) == e
        True
        """
        return cls(
            patterns=tuple(
                ScoredPattern(str(p["id"]), str(p["name_zh"]), int(p["fan"])) for p in data["patterns"]
            ),
            total_fan=int(data["total_fan"]),
            capped=bool(data["capped"]),
            limit=bool(data["limit"]),
            meets_minimum=bool(data["meets_minimum"]),
        )

    def fan_of(self, pattern_id: str) -> int:
        """The fan scored by one pattern, 0 if absent."""
        return next((p.fan for p in self.patterns if p.id == pattern_id), 0)


def evaluate(desc: HandDescription, catalogue: Catalogue | None = None) -> Evaluation:
    """Score a winning hand with its profile's catalogue (or ``catalogue``).

    Raises :class:`InvalidHandError` if the tiles do not form a win.
    """
    return evaluate_with_arrangement(desc, catalogue)[0]


def evaluate_with_arrangement(
    desc: HandDescription, catalogue: Catalogue | None = None
) -> tuple[Evaluation, Arrangement]:
    """:func:`evaluate`, and the reading of the hand that scored best (to show or to debug)."""
    if catalogue is None:
        catalogue = get_profile(desc.profile).catalogue
    readings = arrangements(desc)
    if not readings:
        raise InvalidHandError(f"{_hand_text(desc)} is not a winning hand in profile {desc.profile}")
    best_arrangement = readings[0]
    best, best_limit = _detect(catalogue, best_arrangement)
    if len(readings) > 1:
        best_key = _key(catalogue, best, best_limit)
        for arrangement in readings[1:]:
            found, limit = _detect(catalogue, arrangement)
            key = _key(catalogue, found, limit)
            if key > best_key:
                best_key, best, best_limit, best_arrangement = key, found, limit, arrangement
    return _result(catalogue, best, best_limit), best_arrangement


# (catalogue position, pattern, occurrences): sorting these tuples gives catalogue order.
Found = tuple[int, Pattern, int]


def _detect(catalogue: Catalogue, arrangement: Arrangement) -> tuple[list[Found], bool]:
    """Patterns present in one arrangement after E1 exclusions, and whether one is a limit (D9)."""
    found: list[Found] = []
    excluded: frozenset[str] = frozenset()
    limit_found = False
    for position, pattern, pattern_id, is_limit, is_always in catalogue.entries(arrangement.facts):
        if pattern_id in excluded:
            continue  # E1: an excluded pattern excludes nothing, so it need not even be detected
        if limit_found and not is_limit:
            break  # D9: limit patterns are ordered first; once one is found nothing else can score
        occurrences = 1 if is_always else pattern.detect(arrangement)
        if occurrences:
            found.append((position, pattern, occurrences))
            if pattern.excludes:
                excluded = excluded | pattern.excludes
            if is_limit:
                limit_found = True
    fallback = catalogue.fallback
    if fallback is not None and not limit_found:
        ignores = catalogue.fallback_ignores
        for item in found:
            if item[1].id not in ignores:
                break
        else:  # D1: 推倒胡 when nothing else (花牌 aside) scored
            found.append((catalogue.position[fallback], catalogue[fallback], 1))
    return found, limit_found


def _key(catalogue: Catalogue, found: list[Found], limit: bool) -> tuple[int, int]:
    """How good a reading is: (total, raw sum). A limit hand beats any non-limit reading; between
    limit readings of the same tier, the one listing more limit hands is shown (D9)."""
    if limit:
        tiers = [item[1].value for item in found if item[1].limit_tier is not None]
        return (max(tiers), (1 << 30) + sum(tiers))
    raw = sum(item[1].fan * item[2] for item in found)
    cap = catalogue.cap
    return (raw if cap is None or raw <= cap else cap, raw)


def _result(catalogue: Catalogue, found: list[Found], limit: bool) -> Evaluation:
    found.sort()
    once = catalogue.scored_once
    scored = tuple([once[p.id] if n == 1 else catalogue.scored(p, n) for _, p, n in found])
    if limit:
        return Evaluation(scored, max(item[1].value for item in found), False, True, True)
    total, toward_minimum = catalogue.fan_totals(scored)
    meets_minimum = toward_minimum >= catalogue.minimum
    cap = catalogue.cap
    if cap is not None and total > cap:
        return Evaluation(scored, cap, True, False, meets_minimum)
    return Evaluation(scored, total, False, False, meets_minimum)


def _hand_text(desc: HandDescription) -> str:
    melds = " ".join(f"[{format_tiles(m.tiles)}]" for m in desc.melds)
    return f"{format_tiles(desc.concealed)}{' ' + melds if melds else ''} + {format_tiles([desc.win_tile])}"
