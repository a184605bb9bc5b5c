"""``duel score``: JSON lines in, one JSON line out per hand (docs/decisions.md §7); errors do not stop it."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duelmahjong.cli import main
from duelmahjong.cli.score import EXIT_UNREADABLE, score_stream

DUEL_SCRIPT = Path(sys.executable).parent / "duel"
NINE_GATES = '{"profile": "duel", "concealed": "1112345678999m", "win_tile": "5m"}'
NINE_GATES_OUT = {
    "patterns": [{"id": "nine_gates", "name_zh": "九莲宝灯", "fan": 64}],
    "total_fan": 64,
    "capped": False,
    "limit": True,
    "meets_minimum": True,
}


def _score(text: bytes) -> list[dict[str, object]]:
    sink = io.StringIO()
    score_stream(io.BytesIO(text), sink)
    return [json.loads(line) for line in sink.getvalue().splitlines()]


def test_installed_command_scores_lines_and_carries_on_after_errors() -> None:
    lines = [
        NINE_GATES,
        "not json at all",
        "",
        '{"profile": "duel", "concealed": "234567m234p678s5z", "win_tile": "6z"}',
        '{"profile": "duel", "concealed": "234567m234p678s5z", "win_tile": "5z", "self_drawn": true}',
    ]
    done = subprocess.run(
        [str(DUEL_SCRIPT), "score"],
        input="\n".join(lines).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(out) == 4  # the blank line is skipped
    assert out[0] == NINE_GATES_OUT
    assert out[1]["error"].startswith("not JSON")
    assert out[2] == {"error": "234567m234p678s5z + 6z is not a winning hand in profile duel"}
    assert out[3]["total_fan"] == 2
    assert [p["id"] for p in out[3]["patterns"]] == ["concealed_hand", "concealed_self_draw"]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"profile": "riichi", "concealed": "1m", "win_tile": "1m"}', "unknown profile 'riichi'"),
        (b'{"profile": "duel", "concealed": 123, "win_tile": "1m"}', "concealed must be tile notation"),
        (b'{"profile": "duel", "concealed": "1112345678999m", "win_tile": "5m", "context": {"x": 1}}', "'x'"),
        (b'{"profile": "duel", "concealed": "1112345678999m", "win_tile": "5m", "melds": "123m"}', "list"),
        (b'{"profile": "duel", "concealed": "1112345678999m", "win_tile": "55m"}', "exactly one tile"),
        (
            b'{"profile": "duel", "concealed": "1112345678999m", "win_tile": "5m", "self_drawn": 1}',
            "true or false",
        ),
        (b'{"profile": "duel", "concealed": "1112345678999m"}', "lacks 'win_tile'"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),  # json raises RecursionError here
    ],
)
def test_invalid_lines_get_an_error_saying_what_is_wrong(line: bytes, error: str) -> None:
    out = _score(line + b"\n" + NINE_GATES.encode() + b"\n")
    assert error in out[0]["error"]
    assert out[1] == NINE_GATES_OUT  # and the next line is still read


def test_every_data_file_hand_scores_like_the_library() -> None:
    data = Path(__file__).parent / "data" / "duel_hands.jsonl"
    cases = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    out = _score("".join(json.dumps(case["hand"]) + "\n" for case in cases).encode())
    assert len(out) == len(cases)
    for case, result in zip(cases, out, strict=True):
        expect = case["expect"]
        if "error" in expect:
            assert expect["error"] in result["error"]
        else:
            assert {p["id"]: p["fan"] for p in result["patterns"]} == expect["patterns"]
            assert result["total_fan"] == expect["total_fan"]


class _BrokenStdin:
    @property
    def buffer(self) -> io.RawIOBase:
        class Broken(io.RawIOBase):
            def readable(self) -> bool:
                return True

            def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
                raise OSError("input/output error")

        return Broken()


def test_unreadable_stdin_exits_non_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", _BrokenStdin())
    assert main(["score"]) == EXIT_UNREADABLE
    assert "cannot read stdin" in capsys.readouterr().err


def test_ascii_option_escapes_chinese_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(NINE_GATES.encode() + b"\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["score", "--ascii"]) == 0
    out = capsys.readouterr().out
    assert "\\u4e5d" in out and json.loads(out) == NINE_GATES_OUT


_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-5, 50)
    | st.sampled_from(
        [
            "",
            "5m",
            "1112345678999m",
            "123m",
            "1f",
            "east",
            "chi",
            "pong",
            "dealer_initial_hand",
            "duel",
            "erren",
        ]
    )
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
)
_KEYS = ["profile", "concealed", "melds", "win_tile", "self_drawn", "context", "kind", "tiles", "flowers"]


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=7))
def test_any_json_object_gets_a_result_or_an_error_never_a_crash(data: dict[str, object]) -> None:
    (out,) = _score(json.dumps(data).encode() + b"\n")
    assert set(out) == {"error"} or set(out) == set(NINE_GATES_OUT)


def test_readme_example_shows_what_duel_score_prints() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^\$ echo '(.+)' \| \.venv/bin/duel score\n(.+)$", readme, re.M)
    assert match, "README lost its duel score example"
    (out,) = _score(match.group(1).encode() + b"\n")
    assert out == json.loads(match.group(2))
