"""One training record per decision: a JSON object on one line.

::

    {"hand": "t1-h2", "profile": "duel", "seat": 0, "decision": 7, "step": 31, "origin": "player",
     "view": {...}, "legal": ["0 discard 1m", ...], "action": "0 discard 5m", "reward": 4.0}

``hand`` is the archived hand's id, ``seat`` the engine seat (0 = SEAT_FIRST), ``decision`` the seat's
decision number in the hand (0, 1, 2…), ``step`` the replay step of the decision, ``origin`` who made
it (``player``; ``timeout``, ``autoplay`` and ``locked_hand`` the server played for the seat), and
``reward`` the hand's final reward of the seat in 1番 (:mod:`duelmahjong.export.rewards`), the same on
every record of the seat in the hand. The rest are the encoder's (:mod:`duelmahjong.export.encoding`).
No player id is written: a record says which seat, not who sat there.
"""

from __future__ import annotations

import json
from typing import Any

from duelmahjong.export.decisions import Decision
from duelmahjong.export.encoding import RESERVED
from duelmahjong.v1 import archive_pb2


class EncoderError(Exception):
    """An encoder returned a field the exporter writes itself (a bug of the encoder)."""


def origin_name(origin: archive_pb2.DecisionOrigin.ValueType) -> str:
    return archive_pb2.DecisionOrigin.Name(origin).removeprefix("DECISION_ORIGIN_").lower()


def record(replay: archive_pb2.Replay, profile: str, decision: Decision, reward: float) -> dict[str, Any]:
    clash = RESERVED & decision.fields.keys()
    if clash:
        raise EncoderError(f"the encoder returned fields the exporter writes: {sorted(clash)}")
    return {
        "hand": replay.hand_id,
        "profile": profile,
        "seat": decision.seat,
        "decision": decision.number,
        "step": decision.step,
        "origin": origin_name(decision.origin),
        **decision.fields,
        "reward": reward,
    }


def json_line(fields: dict[str, Any]) -> str:
    """The record as one line of JSON (UTF-8 text kept as it is: tile names, Chinese pattern names)."""
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":")) + "\n"
