"""verify_replay (libs/duelmahjong/replay/verify.py): a true replay of a real log verifies; one changed
draw, wall tile, salt or decision fails, naming the step."""

from __future__ import annotations

import functools

import pytest
from google.protobuf import json_format

from duelmahjong.replay.build import build_replay
from duelmahjong.replay.verify import verify_replay
from duelmahjong.v1 import archive_pb2, play_pb2
from tests.unit.table_logs import played

HANDS = [("duel", 9, 0.3), ("duel", 19, 0.3), ("erren", 3, 0.0)]


@functools.cache
def replays(profile: str, seed: int, offers: float) -> tuple[archive_pb2.Replay, ...]:
    records = played(profile, seed, offers=offers).records()
    hands = [r.hand_begun.hidden.hand_id for r in records if r.HasField("hand_begun")]
    return tuple(build_replay(records, hand) for hand in hands)


def _copy(replay: archive_pb2.Replay) -> archive_pb2.Replay:
    return archive_pb2.Replay.FromString(replay.SerializeToString())


@pytest.mark.parametrize(("profile", "seed", "offers"), HANDS)
def test_a_true_replay_of_every_hand_verifies(profile: str, seed: int, offers: float) -> None:
    for replay in replays(profile, seed, offers):
        verification = verify_replay(replay)
        assert verification.ok, verification.problem
        assert verification.problem == "" and verification.step == 0
        counts = {check.name: check.count for check in verification.checks}
        assert counts["commitment"] == 3 and counts["steps"] == len(replay.steps)
        assert counts["deal"] >= len(replay.deal.wall) and all(check.ok for check in verification.checks)
        # What duel verify --file reads: the replay as JSON verifies the same.
        again = json_format.Parse(json_format.MessageToJson(replay), archive_pb2.Replay())
        assert verify_replay(again).ok


def test_one_draw_changed_in_a_seat_copy_fails_at_its_step() -> None:
    replay = _copy(replays("duel", 9, 0.3)[1])
    step = next(
        s
        for s in replay.steps[30:]
        if s.event.first_seat.HasField("tile_drawn") and s.event.first_seat.tile_drawn.tile
    )
    drawn = step.event.first_seat.tile_drawn
    drawn.tile = "1m" if drawn.tile != "1m" else "2m"
    verification = verify_replay(replay)
    assert not verification.ok and verification.step == step.index
    assert verification.problem.startswith(f"step {step.index}: the first seat's copy of the event differs")
    assert "tile_drawn" in verification.problem
    assert [c.name for c in verification.checks if not c.ok] == ["steps"]


def test_one_wall_tile_changed_fails_naming_the_step_that_drew_it() -> None:
    replay = _copy(replays("duel", 19, 0.3)[0])
    replay.deal.wall[3] = "9s" if replay.deal.wall[3] != "9s" else "8s"
    verification = verify_replay(replay)
    assert not verification.ok
    assert "wall tile 4" in verification.problem and "in the replay; the seed gives" in verification.problem
    drew = replay.steps[verification.step - 1].event
    assert verification.step and (
        drew.first_seat.HasField("tile_drawn") or drew.second_seat.HasField("tile_drawn")
    )
    assert [c.name for c in verification.checks if not c.ok] == ["deal"]


def test_a_changed_salt_fails_the_commitment() -> None:
    replay = _copy(replays("erren", 3, 0.0)[0])
    replay.fairness.salt = bytes(16)
    verification = verify_replay(replay)
    assert not verification.ok and verification.step == 1
    assert "commitment" in verification.problem and verification.problem.startswith("step 1:")
    # The engine dealing with that salt commits to another hash: step 1's copies differ too.
    assert [c.name for c in verification.checks if not c.ok] == ["commitment", "steps"]


def test_one_decision_changed_fails_at_its_step() -> None:
    replay = _copy(replays("duel", 9, 0.3)[0])
    decisions = [s for s in replay.steps if s.decision.action.HasField("discard")]
    step = decisions[len(decisions) // 2]
    own = replay.steps[step.index - 2].state.seats[step.decision.seat - 1]
    tiles = own.concealed + own.drawn_tile
    other = next(t for t in ("1m", "9p", "5s", "7z", "2m") if t not in tiles)
    step.decision.action.discard.tile = other
    verification = verify_replay(replay)
    assert not verification.ok and verification.step == step.index, verification.problem
    assert verification.problem.startswith(f"step {step.index}:")


def test_a_replay_without_a_commitment_is_not_proven() -> None:
    replay = _copy(replays("erren", 3, 0.0)[0])
    replay.fairness.commitment = b""
    for step in replay.steps:
        for copy in (step.event.first_seat, step.event.second_seat):
            if copy.HasField("hand_started"):
                copy.hand_started.wall_commitment = b""
    verification = verify_replay(replay)
    assert not verification.ok and "no commitment" in verification.problem


def test_a_decision_the_engine_refuses_names_its_step() -> None:
    replay = _copy(replays("duel", 9, 0.3)[0])
    step = next(s for s in replay.steps if s.HasField("decision"))
    step.decision.action.CopyFrom(play_pb2.Action(pong=play_pb2.PongAction()))
    verification = verify_replay(replay)
    assert not verification.ok and verification.step == step.index, verification.problem


def test_a_void_hand_verifies_up_to_where_its_log_stops() -> None:
    records = played("erren", 3, offers=0.0).records()
    end = next(
        i for i, r in enumerate(records) if r.HasField("engine_event") and r.engine_event.kind == "hand_ended"
    )
    actions = [i for i, r in enumerate(records[:end]) if r.HasField("action_applied")]
    first = next(r.hand_begun.hidden.hand_id for r in records if r.HasField("hand_begun"))
    replay = build_replay(records[: actions[len(actions) // 2]], first)
    assert replay.result.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID
    verification = verify_replay(replay)
    assert verification.ok, verification.problem
