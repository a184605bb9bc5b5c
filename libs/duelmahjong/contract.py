"""The rules library's JSON (docs/decisions.md §7 descriptions, evaluations) as the contract's messages.

One converter for every service that shows a hand in the contract's words (``rules.proto``
``HandDescription`` / ``Evaluation``): the table shows the engine's win on the Play stream, scoring
answers its RPCs. A service must not import another service's code, so the shared part lives here.

>>> description = {"profile": "duel", "concealed": "123m456m789m1z", "melds": [{"kind": "pong",
...     "tiles": "555p"}], "win_tile": "1z", "self_drawn": True,
...     "context": {"seat_wind": "east", "dealer": True, "first_turn_win": "dealer_initial_hand"}}
>>> message = description_message(description)
>>> message.profile == rules_pb2.PROFILE_DUEL, message.melds[0].kind == tiles_pb2.MELD_KIND_PONG
(True, True)
>>> message.context.seat_wind == rules_pb2.WIND_EAST, message.context.dealer
(True, True)
>>> scored = evaluation_message({"patterns": [{"id": "basic_win", "name_zh": "和牌", "fan": 1}],
...     "total_fan": 1, "capped": False, "limit": False, "meets_minimum": True})
>>> scored.patterns[0].id == rules_pb2.PATTERN_ID_BASIC_WIN, scored.total_fan
(True, 1)
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor

from duelmahjong.rules.tiles import WIND_NAMES, format_tiles, parse_tiles
from duelmahjong.v1 import rules_pb2, tiles_pb2


def enum_words(enum: EnumDescriptor, prefix: str) -> dict[int, str]:
    """An enum's numbers to their names in the rules' words (``WIND_EAST`` → ``"east"``), but UNSPECIFIED."""
    return {v.number: v.name.removeprefix(prefix).lower() for v in enum.values if v.number}


# The rules' words → the contract's enums, and (``*_WORDS``) back, for reading a message.
PROFILES = {"duel": rules_pb2.PROFILE_DUEL, "erren": rules_pb2.PROFILE_ERREN}
# RoomRules.claim_window_ms: the longest claim window a room may set; a minute is far beyond a decision.
MAX_CLAIM_WINDOW_MS = 60_000
WINDS = dict(
    zip(
        WIND_NAMES,
        (rules_pb2.WIND_EAST, rules_pb2.WIND_SOUTH, rules_pb2.WIND_WEST, rules_pb2.WIND_NORTH),
        strict=True,
    )
)
MELD_KINDS = {
    "chi": tiles_pb2.MELD_KIND_CHI,
    "pong": tiles_pb2.MELD_KIND_PONG,
    "exposed_kong": tiles_pb2.MELD_KIND_EXPOSED_KONG,
    "concealed_kong": tiles_pb2.MELD_KIND_CONCEALED_KONG,
    "added_kong": tiles_pb2.MELD_KIND_ADDED_KONG,
}
PROFILE_WORDS: dict[int, str] = {number: word for word, number in PROFILES.items()}
WIND_WORDS: dict[int, str] = {number: word for word, number in WINDS.items()}
MELD_KIND_WORDS: dict[int, str] = {number: word for word, number in MELD_KINDS.items()}
FIRST_TURN_WIN_WORDS = enum_words(rules_pb2.FirstTurnWin.DESCRIPTOR, "FIRST_TURN_WIN_")
# The context keys docs/decisions.md §7 makes true/false: the contract's bool fields of HandContext.
CONTEXT_FLAGS = tuple(
    f.name for f in rules_pb2.HandContext.DESCRIPTOR.fields if f.type == FieldDescriptor.TYPE_BOOL
)


def pattern_enum(pattern_id: str) -> rules_pb2.PatternId.ValueType:
    """A pattern id of docs/decisions.md §2 (``"basic_win"``) as its ``PatternId``; UNSPECIFIED if unknown."""
    try:
        return rules_pb2.PatternId.Value(f"PATTERN_ID_{pattern_id.upper()}")
    except ValueError:
        return rules_pb2.PATTERN_ID_UNSPECIFIED


def notation(tiles: Any) -> str:
    """Tiles given as notation text or a list of tile names, in canonical notation ("" for none)."""
    text = "".join(tiles) if isinstance(tiles, list | tuple) else str(tiles or "")
    return format_tiles(parse_tiles(text)) if text else ""


def meld_message(kind: str, tiles: str, claimed_tile: str = "") -> tiles_pb2.Meld:
    """A meld; ``tiles`` "" means a concealed kong the viewer may not see (``hidden``)."""
    return tiles_pb2.Meld(kind=MELD_KINDS[kind], tiles=tiles, claimed_tile=claimed_tile, hidden=not tiles)


def description_message(description: dict[str, Any]) -> rules_pb2.HandDescription:
    """docs/decisions.md §7 JSON (as the engine describes a win) → ``HandDescription``."""
    context = description.get("context", {})
    proto_context = rules_pb2.HandContext(
        seat_wind=WINDS.get(context.get("seat_wind", ""), rules_pb2.WIND_UNSPECIFIED),
        round_wind=WINDS.get(context.get("round_wind", ""), rules_pb2.WIND_UNSPECIFIED),
        flowers=notation(context.get("flowers", "")),
        revealed_bonus_tiles=notation(context.get("revealed_bonus_tiles", "")),
    )
    for key in CONTEXT_FLAGS:
        setattr(proto_context, key, bool(context.get(key, False)))
    if context.get("first_turn_win"):
        proto_context.first_turn_win = rules_pb2.FirstTurnWin.Value(
            "FIRST_TURN_WIN_" + str(context["first_turn_win"]).upper()
        )
    return rules_pb2.HandDescription(
        profile=PROFILES[description["profile"]],
        concealed=description["concealed"],
        melds=[meld_message(m["kind"], m["tiles"]) for m in description.get("melds", [])],
        win_tile=description["win_tile"],
        self_drawn=bool(description.get("self_drawn")),
        context=proto_context,
    )


def _pattern(pattern: dict[str, Any]) -> rules_pb2.PatternScore:
    return rules_pb2.PatternScore(
        id=pattern_enum(str(pattern["id"])), name_zh=str(pattern["name_zh"]), fan=int(pattern["fan"])
    )


def evaluation_message(evaluation: dict[str, Any]) -> rules_pb2.Evaluation:
    """The rules library's ``Evaluation.to_json()`` → ``Evaluation`` (patterns in the library's order)."""
    return rules_pb2.Evaluation(
        patterns=[_pattern(p) for p in evaluation.get("patterns", ())],
        total_fan=int(evaluation.get("total_fan", 0)),
        capped=bool(evaluation.get("capped")),
        limit=bool(evaluation.get("limit")),
        meets_minimum=bool(evaluation.get("meets_minimum")),
    )
