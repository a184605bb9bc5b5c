"""Golden event logs: a seed and a list of actions give exactly the stored events (canonical JSON).

The evaluation the engine attaches to a win is left out of the comparison: it is the rules library's
answer (tested there), and a catalogue correction must not break the engine's logs. Regenerate after an
intended engine change with ``DUEL_UPDATE_GOLDEN=1 pytest tests/unit/engine/test_golden.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.engine.actions import Action
from duelmahjong.engine.bot import choose
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.engine.table import Table

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "duel_seed_11": ("duel", 11),
    "duel_seed_2024": ("duel", 2024),
    "erren_seed_5": ("erren", 5),
}


def _comparable(event: dict[str, Any]) -> dict[str, Any]:
    public = event.get("public") or {}
    if "evaluation" in public:
        public = {k: v for k, v in public.items() if k != "evaluation"}
    if "result" in public:
        public = {**public, "result": {k: v for k, v in public["result"].items() if k != "evaluation"}}
    return {**event, "public": public} if public else event


def _bot_actions(profile: str, seed: int) -> list[str]:
    table = Table(RoomSettings(profile=profile))
    table.start_hand(seed)
    played = []
    while table.phase != "over":
        seat = next(s for s in (0, 1) if len(table.legal_actions(s)) > 1)
        action = choose(table.state, seat, table.legal_actions(seat))
        played.append(str(action))
        table.apply(action)
    return played


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_log(name: str) -> None:
    profile, seed = CASES[name]
    path = GOLDEN / f"{name}.jsonl"
    if os.environ.get("DUEL_UPDATE_GOLDEN") or not path.exists():
        actions = _bot_actions(profile, seed)
    else:
        actions = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["actions"]
    table = Table(RoomSettings(profile=profile))
    table.start_hand(seed)
    for text in actions:
        table.apply(Action.parse(text))
    lines = [json.dumps(_comparable(e.to_json()), sort_keys=True, ensure_ascii=False) for e in table.events]
    header = json.dumps({"profile": profile, "seed": seed, "actions": actions}, ensure_ascii=False)
    if os.environ.get("DUEL_UPDATE_GOLDEN") or not path.exists():
        path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    stored = path.read_text(encoding="utf-8").splitlines()
    assert stored[0] == header
    assert stored[1:] == lines, "the event log changed; if intended, regenerate (see the module doc)"
