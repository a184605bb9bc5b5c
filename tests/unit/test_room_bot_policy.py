"""A room names the policy its fill bots play (``bot_policy``); the novice rooms play the strong bot."""

from __future__ import annotations

import pytest

from duelmahjong.client.policy import POLICIES, BaselineBot, StrongBot
from services.matchmaking.rooms import DEFAULT_ROOMS_FILE, RoomConfigError, parse_rooms


def test_the_novice_rooms_fill_with_the_strong_bot_and_others_with_the_baseline() -> None:
    rooms = parse_rooms(DEFAULT_ROOMS_FILE.read_text())
    assert {room_id for room_id, room in rooms.items() if room.bot_policy == "strong"} == {
        "duel-novice",
        "erren-novice",
    }
    assert rooms["duel-even"].bot_policy == "baseline"
    assert POLICIES["strong"] is StrongBot and POLICIES["baseline"] is BaselineBot


def test_an_unknown_bot_policy_is_refused_at_start() -> None:
    with pytest.raises(RoomConfigError, match="bot_policy must be one of baseline, strong"):
        parse_rooms('[{"room_id": "x", "profile": "duel", "fan_rate": 1, "bot_policy": "genius"}]')
