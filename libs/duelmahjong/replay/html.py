"""The replay page (docs/replays.md): one self-contained HTML file that shows a hand step by step as
tiles. The replay travels inside the page as proto JSON and the page's script renders it, so the
file needs nothing but a browser: styles, script and tile outlines are inlined, nothing is fetched.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from google.protobuf import json_format

from duelmahjong.replay.verify import Verification
from duelmahjong.v1 import archive_pb2

_PAGE = resources.files("duelmahjong.replay") / "page"
_PLACEHOLDER = re.compile(r"/\*@(CSS|JS|DATA)@\*/")


def _asset(name: str) -> str:
    return (_PAGE / name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """JSON that is safe as the text of a <script> element: no "</script>" or "<!--" can end or
    change it, whatever a player named themselves (the characters are escaped, JSON.parse restores
    them)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    # Line and paragraph separators are valid in JSON strings but not in older script parsers.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def page_data(replay: archive_pb2.Replay, verification: Verification | None) -> dict[str, Any]:
    """What the page renders: the replay as proto JSON (field names as in the .proto, enums by name,
    bytes in base64) and the verification's result."""
    data: dict[str, Any] = {
        "replay": json_format.MessageToDict(replay, preserving_proto_field_name=True),
        "verification": None,
    }
    if verification is not None:
        data["verification"] = {
            "ok": verification.ok,
            "checks": [{"name": c.name, "count": c.count, "ok": c.ok} for c in verification.checks],
            "problem": verification.problem,
            "step": verification.step,
        }
    return data


def render_html(replay: archive_pb2.Replay, verification: Verification | None) -> str:
    """The page of one replay; ``verification`` is :func:`~duelmahjong.replay.verify.verify_replay`'s
    result, or None when it was not run (the page then says so, and still recomputes the commitment
    itself)."""
    script = "\n".join(
        [
            f"const GLYPHS = {script_json(json.loads(_asset('glyphs.json')))};",
            # In this order: each file uses what the ones before it define.
            *(_asset(name) for name in ("tiles.js", "data.js", "story.js", "result.js", "replay.js")),
        ]
    )
    # The assets are ours; a closing tag inside them would end their element early.
    for name, text in (("script", script), ("style", _asset("replay.css"))):
        if f"</{name}" in text.lower():
            raise ValueError(f"the page's {name} contains a closing </{name}> tag")
    parts = {"CSS": _asset("replay.css"), "JS": script, "DATA": script_json(page_data(replay, verification))}
    # One pass, so nothing inserted is read again as a placeholder.
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _asset("replay.html"))
