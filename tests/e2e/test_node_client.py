"""A client in another language on the whole stack: tests/node/client.js (Node.js, ``@grpc/grpc-js`` and
``@grpc/proto-loader`` loading proto/ at run time) logs in, opens a private table (its code; a wrong
code NOT_FOUND, its own FAILED_PRECONDITION; cancelled, the hold back), queues in a duel and an erren
room, plays two hands in each against the house bot and leaves, then checks that every settlement the
Play stream showed it equals its own ledger (``ListHistory``), that its match history (``ListMatches``)
holds both tables with those figures, and that each table's last hand comes back as a replay (``GetReplay``).
It keeps the contract language-neutral: a client needs only proto/ and docs/protocol.md.

The npm packages are installed by ``make test`` (the ``node-client`` target); only a machine without
``node`` skips this."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.platform.stackfile import StackState

NODE = shutil.which("node")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(NODE is None, reason="node is not installed: tests/node's client cannot run"),
]

CLIENT_DIR = Path(__file__).resolve().parents[1] / "node"
CLIENT = CLIENT_DIR / "client.js"
NODE_SECONDS = 60  # the node client's own limit; the stack's start comes on top (the test < 90 s)

# Rooms that finish hands quickly: the house bot fills at once, and short clocks are enough because
# both players answer at once. In the duel room the client brings a small carry (30 at 10 威望 a fan,
# 2x negotiated): from the second hand on (progressive 2x) every win is capped by a carry (H1), so the
# cap is checked against the ledger; the erren room's carry leaves its amounts uncapped.
_QUICK = {
    "fee": 2,
    "carry_max": 1000,
    "bot_fill_seconds": 0.2,
    "decision_millis": 10000,
    "time_bank_millis": 10000,
    "negotiation_seconds": 10,
}
_WATCHED = {"watchable": True, "spectate_delay_seconds": 1}  # the client also watches its duel table
ROOMS = [
    {"room_id": "node-duel", "profile": "duel", "fan_rate": 10, "carry_min": 30, **_QUICK, **_WATCHED},
    {"room_id": "node-erren", "profile": "erren", "fan_rate": 1, "carry_min": 100, **_QUICK},
]
PLAYED = ("node-duel:30", "node-erren:500")  # each room with the client's carry


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    if not (CLIENT_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        pytest.fail("tests/node's npm packages are not installed: run `make node-client` (make test does)")
    settings = {"MATCHMAKING_ROOMS": json.dumps(ROOMS), "MATCHMAKING_BOT_POOL": "2"}
    with stack_with("node", settings) as state:
        yield state


@pytest.mark.timeout(90)
def test_a_node_client_plays_both_profiles_and_its_settlements_equal_its_ledger(stack: StackState) -> None:
    assert NODE is not None  # the module is skipped without it
    command = [
        NODE,
        str(CLIENT),
        "--wallet",
        stack.services["wallet"].grpc,
        "--matchmaking",
        stack.target("matchmaking"),
        *("--scoring", stack.services["scoring"].grpc),
        *(argument for room in PLAYED for argument in ("--room", room)),
        *("--hands", "2", "--multiplier", "2"),
        *("--timeout-seconds", str(NODE_SECONDS)),
        *("--watch", "node-duel"),
        # The CA: the client finds it in the state file of the stack, as beside `make run`.
        *("--state-file", str(Path(stack.logs_dir).parent / "stack.json")),
    ]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=NODE_SECONDS + 5, check=False)
    except subprocess.TimeoutExpired as expired:
        printed = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        pytest.fail(f"the node client did not finish within {NODE_SECONDS + 5}s; it printed:\n{printed}")
    output = f"{run.stdout}{run.stderr}"
    print(output)
    assert run.returncode == 0, f"the node client exited {run.returncode}:\n{output}"
    assert "node client: OK" in run.stdout, output
    assert "as a spectator (delay 1 s)" in run.stdout, output
