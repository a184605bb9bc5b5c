"""Fan patterns and catalogues: a pattern is a data row plus one predicate over an Arrangement.

A :class:`Catalogue` holds one profile's patterns and the profile-wide scoring data (cap, minimum,
limit-hand rule, fallback pattern). It precomputes what evaluation needs per call: the patterns in E1
order (highest value first), and, per set of arrangement facts, the patterns worth calling.

>>> from duelmahjong.rules.catalogue_duel import DUEL
>>> DUEL["full_flush"].name_zh, DUEL["full_flush"].fan, sorted(DUEL["full_flush"].excludes)
('清一色', 5, ['half_flush'])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from duelmahjong.rules.arrangement import Arrangement
from duelmahjong.rules.errors import RulesError
from duelmahjong.rules.facts import FACTS


class ScoredPattern(NamedTuple):
    """One line of a breakdown; a pattern that occurs several times appears once with its summed fan."""

    id: str
    name_zh: str
    fan: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name_zh": self.name_zh, "fan": self.fan}


class CatalogueError(RulesError):
    """A catalogue that contradicts itself (duplicate id, exclusion of an unknown id, bad value)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pattern:
    """One fan pattern (番种).

    ``detect`` returns how many times the pattern occurs in an arrangement (0 = absent); the fan scored
    is ``fan`` per occurrence. ``limit_tier`` marks a limit hand (役满, duel D9) and is its value.
    ``excludes`` are the ids this pattern stops from scoring (不记番, E1), and ``exclusion_sources``
    says where each comes from (see :func:`row`). ``requires`` lists facts of
    :data:`~duelmahjong.rules.facts.FACT_NAMES` that must hold for the pattern to occur: the
    catalogue calls ``detect`` only when they do, so ``detect`` may take them for granted, and a
    pattern the facts define completely uses :func:`always` (which the catalogue does not even call).
    :meth:`occurrences` applies both.
    """

    id: str
    name_zh: str
    fan: int
    detect: Callable[[Arrangement], int] = field(repr=False, compare=False)
    excludes: frozenset[str] = frozenset()
    limit_tier: int | None = None
    counts_toward_minimum: bool = True  # erren flower fans do not count toward 起和 (E16)
    requires: frozenset[str] = frozenset()
    exclusion_sources: Mapping[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)

    def occurrences(self, arrangement: Arrangement) -> int:
        """How many times the pattern occurs in ``arrangement`` (required facts, then ``detect``)."""
        if not all(arrangement.facts & FACTS[name] for name in self.requires):
            return 0
        return self.detect(arrangement)

    @property
    def value(self) -> int:
        """The value used to order patterns for exclusions: the tier of a limit hand, else its fan."""
        return self.limit_tier if self.limit_tier is not None else self.fan


_MEMO_LIMIT = 1 << 14


def always(arrangement: Arrangement) -> int:
    """The ``detect`` of a pattern its required facts define completely (e.g. 门清 = ``concealed``)."""
    return 1


Detect = Callable[[Arrangement], int]
# Where an exclusion comes from (E1): the seed's 不记番 list, the 国标 (MCR) list of the same fan, what
# the pattern cannot occur without, a decision of docs/decisions.md (duel's D2/D3 replacements too).
EXCLUSION_SOURCES: tuple[str, ...] = ("seed", "gb", "implied", "decided")


def row(
    pattern_id: str,
    name_zh: str,
    /,
    *,
    fan: int | None = None,
    limit: int | None = None,
    detect: Detect = always,
    requires: Iterable[str] = (),
    seed: Iterable[str] = (),
    gb: Iterable[str] = (),
    implied: Iterable[str] = (),
    decided: Iterable[str] = (),
    toward_minimum: bool = True,
) -> Pattern:
    """One catalogue row, the same shape in both profiles: the id and the name as the seed writes it,
    then ``fan`` per occurrence, or ``limit``, the tier of a limit hand (役满, D9); ``detect``, the
    predicate (:func:`always` when the required facts define the pattern); ``requires``, the facts of
    :data:`~duelmahjong.rules.facts.FACT_NAMES` it needs; the ids it excludes, by source
    (:data:`EXCLUSION_SOURCES`); ``toward_minimum=False`` for the fans 起和 leaves out (E16).

    >>> row("a", "甲", fan=2, requires=["concealed"], decided=["b"]).excludes
    frozenset({'b'})
    """
    if (fan is None) == (limit is None):
        raise CatalogueError(f"row {pattern_id!r}: give exactly one of fan and limit")
    value = limit if limit is not None else fan
    assert value is not None
    sources = {"seed": seed, "gb": gb, "implied": implied, "decided": decided}
    by_source = {source: frozenset(sources[source]) for source in EXCLUSION_SOURCES}
    return Pattern(
        id=pattern_id,
        name_zh=name_zh,
        fan=value,
        detect=detect,
        excludes=frozenset().union(*by_source.values()),
        limit_tier=limit,
        counts_toward_minimum=toward_minimum,
        requires=frozenset(requires),
        exclusion_sources=by_source,
    )


# (catalogue position, pattern, id, is a limit under the limit rule, detect is ``always``)
Entry = tuple[int, Pattern, str, bool, bool]


class Catalogue:
    """One profile's fan table plus its scoring rules.

    ``cap``: non-limit totals are capped at this value (duel 13, D9). ``limit_rule``: when a limit
    pattern is present only limit patterns count and the total is the highest tier (D9). ``fallback``:
    the pattern scored when nothing else is (duel 推倒胡), ignoring ``fallback_ignores`` (D1: 花牌 alone
    still scores 推倒胡). ``minimum``: 起和, counted over patterns with ``counts_toward_minimum``.
    """

    def __init__(
        self,
        profile: str,
        patterns: Iterable[Pattern],
        *,
        cap: int | None = None,
        minimum: int = 0,
        limit_rule: bool = False,
        fallback: str | None = None,
        fallback_ignores: Iterable[str] = (),
    ) -> None:
        self.profile = profile
        self.patterns: tuple[Pattern, ...] = tuple(patterns)
        self.cap = cap
        self.minimum = minimum
        self.limit_rule = limit_rule
        self.fallback = fallback
        self.fallback_ignores = frozenset(fallback_ignores)
        self._by_id: dict[str, Pattern] = {}
        for pattern in self.patterns:
            if pattern.id in self._by_id:
                raise CatalogueError(f"{profile}: pattern id {pattern.id!r} appears twice")
            if pattern.fan <= 0:
                raise CatalogueError(
                    f"{profile}: pattern {pattern.id!r} has a non-positive fan {pattern.fan}"
                )
            unknown_facts = pattern.requires - FACTS.keys()
            if unknown_facts:
                raise CatalogueError(
                    f"{profile}: pattern {pattern.id!r} requires unknown facts {sorted(unknown_facts)}"
                )
            self._by_id[pattern.id] = pattern
        for pattern in self.patterns:
            unknown = pattern.excludes - self._by_id.keys()
            if unknown:
                raise CatalogueError(
                    f"{profile}: pattern {pattern.id!r} excludes unknown ids {sorted(unknown)}"
                )
        for name in (fallback, *self.fallback_ignores):
            if name is not None and name not in self._by_id:
                raise CatalogueError(f"{profile}: fallback names unknown pattern {name!r}")
        # E1: evaluate from the highest value down; ties keep catalogue order. Under the limit rule
        # every limit pattern goes first, so evaluation can stop at the first non-limit one (D9).
        position = {pattern.id: index for index, pattern in enumerate(self.patterns)}

        def order(p: Pattern) -> tuple[int, int, int]:
            return (int(limit_rule and p.limit_tier is None), -p.value, position[p.id])

        ordered = sorted((p for p in self.patterns if p.id != fallback), key=order)
        self.evaluation_order: tuple[Pattern, ...] = tuple(ordered)
        self.position = position
        self._toward_minimum = {p.id: p.counts_toward_minimum for p in self.patterns}
        self._requires_mask = {p.id: sum(FACTS[name] for name in p.requires) for p in self.patterns}
        self._candidates: dict[int, tuple[Entry, ...]] = {}
        self.scored_once: dict[str, ScoredPattern] = {
            p.id: ScoredPattern(p.id, p.name_zh, p.value) for p in self.patterns
        }
        self.highest_fan: int = max((p.value for p in self.patterns), default=0)
        if cap is not None and not limit_rule:
            self.highest_fan = min(self.highest_fan, cap)

    def __getitem__(self, pattern_id: str) -> Pattern:
        try:
            return self._by_id[pattern_id]
        except KeyError:
            raise KeyError(f"{self.profile} has no pattern {pattern_id!r}") from None

    def __contains__(self, pattern_id: object) -> bool:
        return pattern_id in self._by_id

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self.patterns)

    def __len__(self) -> int:
        return len(self.patterns)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(pattern.id for pattern in self.patterns)

    def candidates(self, facts: int) -> tuple[Pattern, ...]:
        """Patterns (E1 order, fallback left out) whose required facts are all in ``facts``."""
        return tuple(entry[1] for entry in self.entries(facts))

    def entries(self, facts: int) -> tuple[Entry, ...]:
        """:meth:`candidates` as evaluation entries ``(position, pattern, id, is_limit, is_always)``,
        memoised per facts value (``is_limit``: a limit pattern under the limit rule; ``is_always``:
        its ``detect`` is :func:`always`)."""
        found = self._candidates.get(facts)
        if found is None:
            masks = self._requires_mask
            found = tuple(
                (
                    self.position[p.id],
                    p,
                    p.id,
                    self.limit_rule and p.limit_tier is not None,
                    p.detect is always,
                )
                for p in self.evaluation_order
                if masks[p.id] & facts == masks[p.id]
            )
            if len(self._candidates) < _MEMO_LIMIT:  # real hands use a few hundred facts values
                self._candidates[facts] = found
        return found

    def fan_totals(self, lines: Iterable[ScoredPattern]) -> tuple[int, int]:
        """The fan of a breakdown's lines, and the part of it that counts toward 起和: every line but
        the erren flower fans (E16)."""
        counted = self._toward_minimum
        total = toward_minimum = 0
        for line in lines:
            total += line.fan
            if counted[line.id]:
                toward_minimum += line.fan
        return total, toward_minimum

    def scored(self, pattern: Pattern, occurrences: int) -> ScoredPattern:
        """The breakdown line of a pattern found ``occurrences`` times (shared for a single one)."""
        if occurrences == 1:
            return self.scored_once[pattern.id]
        return ScoredPattern(pattern.id, pattern.name_zh, pattern.value * occurrences)

    def __repr__(self) -> str:
        size = len(self.patterns)
        return f"<Catalogue {self.profile}: {size} patterns, cap={self.cap}, minimum={self.minimum}>"
