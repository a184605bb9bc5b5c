"""The proto contract and the rules library stay in step: pattern ids, names, the hand description.

The catalogues (duelmahjong.rules) are the source of the PatternId enum and of the §7 messages; a
pattern, a context key or an output field added on one side only fails here.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from duelmahjong.rules.catalogue_duel import DUEL
from duelmahjong.rules.catalogue_erren import ERREN
from duelmahjong.rules.description import FIRST_TURN_WINS, Context, HandDescription
from duelmahjong.rules.evaluate import Evaluation, ScoredPattern
from duelmahjong.rules.hand import MELD_KINDS
from duelmahjong.rules.tiles import WIND_NAMES
from duelmahjong.v1 import rules_pb2, tiles_pb2

RULES_PROTO = Path(__file__).resolve().parents[2] / "proto" / "duelmahjong" / "v1" / "rules.proto"
CATALOGUES = {"duel": DUEL, "erren": ERREN}


def _enum_suffixes(enum: object, prefix: str) -> list[str]:
    names = [value.name for value in enum.DESCRIPTOR.values]  # type: ignore[attr-defined]
    assert names[0] == f"{prefix}UNSPECIFIED"
    return [name.removeprefix(prefix).lower() for name in names[1:]]


def test_pattern_id_enum_is_exactly_the_union_of_the_catalogues() -> None:
    union = dict.fromkeys([*DUEL.ids, *ERREN.ids])
    assert _enum_suffixes(rules_pb2.PatternId, "PATTERN_ID_") == list(union)


def test_every_pattern_converts_to_the_enum_and_back() -> None:
    for catalogue in CATALOGUES.values():
        for pattern in catalogue:
            number = rules_pb2.PatternId.Value(f"PATTERN_ID_{pattern.id.upper()}")
            assert rules_pb2.PatternId.Name(number) == f"PATTERN_ID_{pattern.id.upper()}"


def test_proto_comments_name_each_pattern_as_its_catalogue_does() -> None:
    # rules.proto documents each value with "// duel 门清; erren 门前清" on the line above it.
    text = RULES_PROTO.read_text(encoding="utf-8")
    documented: dict[str, dict[str, str]] = {}
    for comment, name in re.findall(r"//\s*(.+)\n\s*PATTERN_ID_([A-Z0-9_]+)\s*=", text):
        for part in comment.split(";"):
            profile, _, name_zh = part.strip().partition(" ")
            if profile in CATALOGUES:
                documented.setdefault(profile, {})[name.lower()] = name_zh.strip()
    for profile, catalogue in CATALOGUES.items():
        assert documented[profile] == {p.id: p.name_zh for p in catalogue}, profile


def test_hand_description_message_has_the_section_7_keys() -> None:
    message = [field.name for field in rules_pb2.HandDescription.DESCRIPTOR.fields]
    assert message == [field.name for field in fields(HandDescription)]
    assert [field.name for field in rules_pb2.HandContext.DESCRIPTOR.fields] == [
        field.name for field in fields(Context)
    ]


def test_evaluation_messages_match_the_output_format() -> None:
    evaluation = [field.name for field in rules_pb2.Evaluation.DESCRIPTOR.fields]
    assert evaluation == list(Evaluation._fields)
    assert [field.name for field in rules_pb2.PatternScore.DESCRIPTOR.fields] == list(ScoredPattern._fields)


def test_enums_of_the_description_match() -> None:
    assert _enum_suffixes(rules_pb2.Wind, "WIND_") == list(WIND_NAMES)
    assert _enum_suffixes(rules_pb2.FirstTurnWin, "FIRST_TURN_WIN_") == list(FIRST_TURN_WINS)
    assert _enum_suffixes(rules_pb2.Profile, "PROFILE_") == list(CATALOGUES)
    assert _enum_suffixes(tiles_pb2.MeldKind, "MELD_KIND_") == list(MELD_KINDS)
