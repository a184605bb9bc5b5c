"""``duel replay --file`` and ``duel verify --file`` (libs/duelmahjong/cli/replay.py, verify.py) on
replays of real logs saved as JSON and as binary: the hand prints turn by turn with its tiles; verify
prints every check and exits non-zero on a tampered file."""

from __future__ import annotations

from pathlib import Path

import pytest

from duelmahjong.cli import main
from duelmahjong.cli.replay import read_replay, write_replay
from tests.unit.test_replay_verify import replays


@pytest.mark.parametrize("suffix", [".json", ".bin"])
def test_replay_prints_the_saved_hand_turn_by_turn(
    suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = replays("duel", 9, 0.3)[0]
    path = tmp_path / f"hand{suffix}"
    write_replay(replay, path)
    assert read_replay(path) == replay
    assert main(["replay", "--file", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"hand {replay.hand_id}:")
    for hand in replay.deal.dealt:
        assert any(line.endswith(hand.concealed) and line.startswith("dealt to") for line in out)
    for step in replay.steps:  # every step has its line, events with their summary (every tile in it)
        line = next(line for line in out if line.startswith(f"{step.index:>4}  "))
        if step.HasField("event"):
            assert line.endswith(step.event.summary)
        else:
            assert "decides:" in line
    drawn = [s.event.first_seat.tile_drawn for s in replay.steps if s.event.first_seat.tile_drawn.tile]
    assert drawn and any(f"draws {d.tile} from" in line for d in drawn for line in out)
    assert any(line.startswith("result: win") for line in out)
    assert any(line.strip().endswith("fan") and "total" in line for line in out)


def test_verify_passes_a_true_file_and_fails_a_tampered_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = replays("duel", 19, 0.3)[0]
    good = tmp_path / "good.json"
    write_replay(replay, good)
    assert main(["verify", "--file", str(good)]) == 0
    out = capsys.readouterr().out
    assert "verified" in out and "FAIL" not in out
    for name in ("commitment", "steps", "deal", "initial", "result"):
        assert f"ok   {name}" in out
    tampered = read_replay(good)
    step = next(s for s in tampered.steps if s.event.second_seat.tile_drawn.tile)
    step.event.second_seat.tile_drawn.tile = "9p" if step.event.second_seat.tile_drawn.tile != "9p" else "8p"
    bad = tmp_path / "bad.bin"
    write_replay(tampered, bad)
    assert main(["verify", "--file", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL steps" in out and f"NOT verified: step {step.index}: the second seat's copy" in out


def test_unreadable_input_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCORING_ADDRESS", raising=False)
    junk = tmp_path / "junk.json"
    junk.write_text("{not json", encoding="utf-8")
    assert main(["replay", "--file", str(junk)]) == 1
    assert "is not a saved Replay" in capsys.readouterr().err
    assert main(["verify"]) == 1
    assert "give a HAND_ID" in capsys.readouterr().err
    missing = tmp_path / "none.json"
    assert main(["replay", "h-1", "--state-file", str(missing)]) == 1
    assert "no scoring address" in capsys.readouterr().err
