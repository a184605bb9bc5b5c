"""Stored table logs replay: each golden log (tests/data/golden_logs, written by
:mod:`tests.unit.engine.golden_logs`) reads back into typed events, replays to the state it was written
with, and serialises back to the stored bytes. Together the logs hold every event kind the engine emits.
"""

from __future__ import annotations

import json

import pytest

from duelmahjong.engine.events import CATALOGUE, Event, canonical_log
from duelmahjong.engine.outcome import Outcome
from duelmahjong.engine.table import Table
from tests.unit.engine.golden_logs import CASES, GOLDEN_LOGS, digests

# Every kind the engine can emit (docs/engine.md "Events").
KINDS = {
    "table_opened", "hand_started", "doubling_chosen", "doubling_revealed", "dealt", "drew", "exchanged",
    "play_started", "discarded", "passed", "claimed", "konged", "offered", "swapped", "thrown_away",
    "exhausted", "won", "guessed", "escaped", "hand_ended", "pairing_ended",
}  # fmt: skip


def test_the_catalogue_has_one_row_per_kind() -> None:
    assert {row.kind for row in CATALOGUE} == KINDS and len(CATALOGUE) == len(KINDS)
    assert all(row.cls.kind == row.kind and row.cls.row is row for row in CATALOGUE)


def _log(name: str) -> str:
    return (GOLDEN_LOGS / f"{name}.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_log_replays_byte_for_byte(name: str) -> None:
    text = _log(name)
    events = [Event.from_json(json.loads(line)) for line in text.splitlines()]
    for line, event in zip(text.splitlines(), events, strict=True):
        assert type(event) is CATALOGUE.by_kind[json.loads(line)["kind"]].cls
    assert canonical_log(events) + "\n" == text
    replayed = Table.replay(events)
    assert canonical_log(replayed.events) + "\n" == text
    from_json = Table.replay(json.loads(line) for line in text.splitlines())
    assert vars(from_json.state) == vars(replayed.state)
    stored = (GOLDEN_LOGS / f"{name}.states.jsonl").read_text(encoding="utf-8").splitlines()
    assert digests(events) == stored


def test_golden_logs_hold_every_kind_and_ending() -> None:
    seen: set[str] = set()
    endings: set[str] = set()
    for name in CASES:
        for line in _log(name).splitlines():
            event = json.loads(line)
            seen.add(event["kind"])
            if event["kind"] == "hand_ended":
                endings.add(event["public"]["result"]["outcome"])
    assert seen == KINDS
    assert endings == {"win", "drawn", "escape"}


def test_outcomes_read_back_to_the_logged_result() -> None:
    for name in CASES:
        for line in _log(name).splitlines():
            event = json.loads(line)
            if event["kind"] == "hand_ended":
                result = event["public"]["result"]
                assert Outcome.from_json(result).to_json() == result
