"""Bring your own bot on the whole stack: ``duel bot --policy module:callable`` plays, as a separate
process, the example policy of docs/protocol.md ("Bring your own bot") — written for the training env
— against the house bot in a duel and an erren room, and leaves after its hands."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.platform.stackfile import StackState

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BOT_SECONDS = 60
# Rooms that fill the empty seat with a house bot at once, with clocks short enough for two bots.
_QUICK = {"fee": 0, "bot_fill_seconds": 0.2, "decision_millis": 10000, "time_bank_millis": 10000}
ROOMS = [
    {"room_id": "byo-duel", "profile": "duel", "fan_rate": 10, "carry_min": 100, **_QUICK},
    {"room_id": "byo-erren", "profile": "erren", "fan_rate": 1, "carry_min": 100, **_QUICK},
]


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    settings = {"MATCHMAKING_ROOMS": json.dumps(ROOMS), "MATCHMAKING_BOT_POOL": "2"}
    with stack_with("byo", settings) as state:
        yield state


@pytest.mark.timeout(90)
def test_duel_bot_plays_the_docs_example_env_policy_against_the_house_bot(
    stack: StackState, tmp_path: Path
) -> None:
    text = (ROOT / "docs" / "protocol.md").read_text()
    (tmp_path / "mybot.py").write_text("#" + text.split("# mypkg/mybot.py", 1)[1].split("```", 1)[0])
    common = [
        *("--wallet", stack.services["wallet"].grpc, "--matchmaking", stack.target("matchmaking")),
        *("--state-file", str(Path(stack.logs_dir).parent / "stack.json"), "--policy", "mybot:policy"),
    ]
    runs = [
        subprocess.Popen(
            [str(Path(sys.executable).parent / "duel"), "bot", "--room", room, "--hands", "2", *common],
            cwd=tmp_path,  # the policy's module lies where duel bot runs, as a user's own would
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for room in ("byo-duel", "byo-erren")
    ]
    for run in runs:
        printed, _ = run.communicate(timeout=BOT_SECONDS)
        print(printed)
        assert run.returncode == 0, printed
        assert "played 2 hand(s)" in printed, printed
