"""The duel hands of data/duel_hands.jsonl, each with its exact expected breakdown (seeds 001/002, D1–D13).

Each line: ``name``, the decision ids (docs/decisions.md) it exercises (``rules``), optionally the
seed line it checks (``source``), the ``hand`` (docs/decisions.md §7) and what is expected: the exact
patterns with their fan, total, capped and limit — or an ``error`` substring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.description import HandDescription
from duelmahjong.rules.errors import RulesError
from duelmahjong.rules.evaluate import evaluate

DATA = Path(__file__).parent / "data" / "duel_hands.jsonl"
CASES: list[dict[str, Any]] = [
    json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line
]


def _case_id(case: dict[str, Any]) -> str:
    return " ".join([*case["rules"], case["name"]])


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_duel_hand(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(RulesError, match=expect["error"]):
            evaluate(HandDescription.from_json(case["hand"]))
        return
    result = evaluate(HandDescription.from_json(case["hand"]))
    assert {p.id: p.fan for p in result.patterns} == expect["patterns"]
    assert (result.total_fan, result.capped, result.limit) == (
        expect["total_fan"],
        expect["capped"],
        expect["limit"],
    )
    assert result.meets_minimum
    assert [p.name_zh for p in result.patterns] == [DUEL[p.id].name_zh for p in result.patterns]


def test_every_duel_pattern_appears_in_the_data() -> None:
    scored = {pattern for case in CASES for pattern in case["expect"].get("patterns", {})}
    assert set(DUEL.ids) - scored == set()


def test_every_duel_decision_has_a_case() -> None:
    named = {rule for case in CASES for rule in case["rules"]}
    assert {f"D{n}" for n in range(1, 14)} <= named
