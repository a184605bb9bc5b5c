"""``duel verify``: check a finished hand against its seed (docs/protocol.md "Provably fair walls").

The replay comes as for ``duel replay`` (``HAND_ID`` from the archive of a running stack, or ``--file
F``). Every check prints with how much it covered; the first problem names its step. Exit code 0 only
when every check holds.
"""

from __future__ import annotations

import argparse

from duelmahjong.cli.replay import add_source_arguments, loaded
from duelmahjong.replay.verify import verify_replay

DESCRIPTIONS = {
    "commitment": "the commitment is SHA-256 of the label, seed and salt, and both seats received it",
    "steps": "every event and table state follows from the seed and the decisions",
    "deal": "the wall, the unused pool, both dealt hands and the bonus tiles follow from the seed",
    "initial": "the table as dealt follows from the seed",
    "result": "the result is the one the hand reached",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)


def run(args: argparse.Namespace) -> int:
    replay = loaded(args, "verify")
    if replay is None:
        return 1
    verification = verify_replay(replay)
    proof = replay.fairness
    print(f"hand {replay.hand_id}: seed {proof.seed.hex()}, commitment {proof.commitment.hex() or '(none)'}")
    for check in verification.checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"{mark} {check.name:<11} {check.count:>4} checked  {DESCRIPTIONS.get(check.name, '')}")
    if verification.ok:
        print("verified: the hand followed from its committed seed and its decisions")
        return 0
    print(f"NOT verified: {verification.problem}")
    return 1
