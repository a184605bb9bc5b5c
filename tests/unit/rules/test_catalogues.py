"""Both catalogues have one row shape, and every row names things that exist: its predicate is a
named function of a predicates module, its required facts are facts, its exclusions are patterns."""

from __future__ import annotations

from dataclasses import fields
from types import ModuleType

import pytest

from duelmahjong.rules import duel_predicates, erren_predicates, patterns, predicates
from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.catalogue_erren import ERREN
from duelmahjong.rules.description import CONTEXT_FLAGS, Context
from duelmahjong.rules.facts import FACT_NAMES
from duelmahjong.rules.patterns import EXCLUSION_SOURCES, Catalogue, CatalogueError, ScoredPattern, row

# The modules a row's predicate may come from, per catalogue.
HOMES: dict[str, tuple[ModuleType, ...]] = {
    "duel": (patterns, predicates, duel_predicates),
    "erren": (patterns, predicates, erren_predicates),
}
ROWS = [
    pytest.param(catalogue, pattern, id=f"{catalogue.profile}:{pattern.id}")
    for catalogue in (DUEL, ERREN)
    for pattern in catalogue
]


def _public_functions(modules: tuple[ModuleType, ...]) -> dict[int, str]:
    return {
        id(value): f"{module.__name__}.{name}"
        for module in modules
        for name, value in vars(module).items()
        if callable(value)
        and not name.startswith("_")
        and getattr(value, "__module__", None) == module.__name__
    }


@pytest.mark.parametrize(("catalogue", "pattern"), ROWS)
def test_every_row_names_an_existing_predicate_facts_and_patterns(
    catalogue: Catalogue, pattern: patterns.Pattern
) -> None:
    assert id(pattern.detect) in _public_functions(HOMES[catalogue.profile]), (
        f"{pattern.id}: its predicate {pattern.detect!r} is not a public function of a predicates module"
    )
    assert pattern.requires <= set(FACT_NAMES), f"{pattern.id} requires unknown facts"
    assert pattern.excludes <= set(catalogue.ids), f"{pattern.id} excludes unknown patterns"
    assert set(pattern.exclusion_sources) == set(EXCLUSION_SOURCES)
    assert pattern.excludes == frozenset().union(*pattern.exclusion_sources.values())


def test_a_row_has_a_fan_or_a_limit_tier_never_both() -> None:
    assert row("a", "甲", limit=13).limit_tier == 13 and row("a", "甲", limit=13).value == 13
    assert row("a", "甲", fan=2).limit_tier is None and row("a", "甲", fan=2).value == 2
    for wrong in ({}, {"fan": 2, "limit": 13}):
        with pytest.raises(CatalogueError, match="exactly one of fan and limit"):
            row("a", "甲", **wrong)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([row("a", "甲", fan=1, requires=["no_such_fact"])], "requires unknown facts"),
        ([row("a", "甲", fan=1, decided=["b"])], "excludes unknown ids"),
        ([row("a", "甲", fan=1), row("a", "乙", fan=2)], "appears twice"),
    ],
)
def test_a_catalogue_refuses_a_row_naming_what_does_not_exist(
    rows: list[patterns.Pattern], message: str
) -> None:
    with pytest.raises(CatalogueError, match=message):
        Catalogue("toy", rows)


def test_the_fan_toward_the_minimum_leaves_out_the_flower_fans() -> None:
    lines = [ScoredPattern("flower_tiles", "花牌", 3), ScoredPattern("self_drawn", "自摸", 1)]
    assert ERREN.fan_totals(lines) == (4, 1)  # E16
    assert DUEL.fan_totals([ScoredPattern("bonus_tiles", "花牌", 2)]) == (2, 2)  # duel's 花牌 counts


def test_the_context_flags_are_the_true_false_context_fields_and_name_their_facts() -> None:
    assert CONTEXT_FLAGS == tuple(f.name for f in fields(Context) if f.type in (bool, "bool"))
    assert set(CONTEXT_FLAGS) - {"dealer", "declared_first_turn"} <= set(FACT_NAMES)
