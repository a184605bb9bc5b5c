"""The replay page as text (duelmahjong/replay/html.py): one self-contained file, the replay embedded
as JSON that no player name can break out of. tests/unit/test_replay_page_browser.py opens it."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path

from duelmahjong.replay.html import page_data, render_html, script_json
from tests.unit.replay_samples import hand_made_replay

HOSTILE_NAME = '</script><script>alert("pwned")</script><!-- &amp; \u2028'


def _embedded(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', html, re.S)
    assert match, "the page embeds the replay"
    return json.loads(match.group(1))


def test_the_page_is_one_file_that_fetches_nothing() -> None:
    html = render_html(hand_made_replay(), None)
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"""\b(src|href)\s*=|@import|url\(|https?://""", html), (
        "nothing is loaded from elsewhere"
    )
    assert html.count("<script") == 2 and html.count("</script>") == 2 and html.count("<style>") == 1
    assert "/*@" not in html, "every placeholder is filled"


def test_a_player_name_cannot_end_the_script_element() -> None:
    replay = hand_made_replay()
    replay.players[0].display_name = HOSTILE_NAME
    html = render_html(replay, None)
    assert HOSTILE_NAME not in html and "alert(" not in html.replace('alert(\\"pwned', "")
    assert html.count("</script>") == 2
    assert _embedded(html)["replay"]["players"][0]["display_name"] == HOSTILE_NAME


def test_script_json_escapes_what_html_would_read() -> None:
    text = script_json({"a": "</script><!--&\u2028\u2029"})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"a": "</script><!--&\u2028\u2029"}


def test_the_embedded_replay_is_the_proto_json() -> None:
    replay = hand_made_replay()
    data = _embedded(render_html(replay, None))
    assert data == json.loads(json.dumps(page_data(replay, None), ensure_ascii=False))
    assert data["verification"] is None
    assert len(data["replay"]["steps"]) == len(replay.steps)
    assert data["replay"]["steps"][1]["state"]["seats"][1]["melds"][0]["tiles"] == "111p"


def test_every_file_of_the_page_ships_with_the_package() -> None:
    root = Path(__file__).resolve().parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["duelmahjong.replay"]
    page = root / "libs/duelmahjong/replay/page"
    needed = {p.name for p in page.iterdir() if p.suffix in {".html", ".css", ".js", ".json"}}
    assert {"replay.html", "replay.css", "replay.js", "story.js", "result.js", "glyphs.json"} <= needed
    for name in needed:
        assert any(fnmatch.fnmatch(f"page/{name}", pattern) for pattern in patterns), name
