"""Settings, actions and events: validation, text forms and JSON round trips."""

from __future__ import annotations

import json

import pytest

from duelmahjong.engine import actions as A
from duelmahjong.engine.actions import Action
from duelmahjong.engine.errors import IllegalActionError, ReplayError, SettingsError
from duelmahjong.engine.events import NO_TILE, Drew, Event, Swapped, canonical_log
from duelmahjong.engine.settings import RoomSettings
from duelmahjong.rules.tiles import M5, RED, S1, S2, S3


def test_settings_round_trip_and_defaults() -> None:
    settings = RoomSettings(profile="erren", exchange_fee=10)
    assert RoomSettings.from_json(settings.to_json()) == settings
    assert settings.effective_exchange_limit == 5  # T4: erren 5 per hand
    assert RoomSettings().effective_exchange_limit is None  # T4: duel any number
    assert RoomSettings().effective_minimum_fan == 1
    assert settings.effective_minimum_fan == 8  # E16


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"profile": "riichi"}, "unknown profile"),
        ({"triplet_offer_probability": 1.5}, "between 0 and 1"),
        ({"triplet_offer_probability": 0.6, "rub_offer_probability": 0.6}, "must not exceed 1"),
        ({"bonus_tile_count": 5}, "D1"),
        ({"negotiated_multiplier": 3}, "T7"),
        ({"max_win_doublings": 9}, "T8"),
    ],
)
def test_settings_refuse_impossible_rooms(options: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        RoomSettings(**options)  # type: ignore[arg-type]


def test_settings_refuse_unknown_keys() -> None:
    with pytest.raises(SettingsError, match="unknown room settings: colour"):
        RoomSettings.from_json({"colour": "red"})


@pytest.mark.parametrize(
    "text",
    [
        "0 discard 5m",
        "1 ready 7z",
        "0 exchange []",
        "1 take_triplet [1s,2s,3s]",
        "0 swap_item 5m >7z",
        "1 pass",
        "0 chi 1s",
    ],
)
def test_action_text_round_trips(text: str) -> None:
    action = Action.parse(text)
    assert str(action) == text
    assert eval(repr(action), {"Action": Action}) == action


def test_action_parse_reads_tiles() -> None:
    assert Action.parse("0 discard 5m") == Action(0, "discard", M5)
    assert Action.parse("1 take_triplet [3s,1s,2s]").tiles == (S1, S2, S3)
    assert Action.parse("0 swap_item 5m >7z").target == RED


@pytest.mark.parametrize("text", ["", "2 discard 5m", "0 dance", "0 discard 8z"])
def test_action_parse_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError):
        Action.parse(text)


def test_event_json_round_trip_and_visibility() -> None:
    event = Swapped(seat=1, reason="rub", given=(M5,), received=(0,), wall=(M5, 1), pool=())
    data = json.loads(json.dumps(event.to_json()))
    assert data["server"] == {"wall": ["5m", "2m"], "pool": []}
    assert Event.from_json(data) == event
    assert event.for_seat(1) == {
        "kind": "swapped",
        "seat": 1,
        "reason": "rub",
        "given": ["5m"],
        "received": ["1m"],
    }
    assert event.for_seat(0) == {"kind": "swapped", "seat": 1, "reason": "rub"}  # the opponent: "a swap"
    assert event.seen_by(0) == Swapped(seat=1, reason="rub", given=(), received=(), wall=(M5, 1), pool=())
    drew = Drew(seat=1, source="wall", tile=M5)
    assert drew.for_seat(0) == {"kind": "drew", "seat": 1, "source": "wall"}
    assert drew.seen_by(0).tile == NO_TILE and drew.seen_by(1) is drew
    assert canonical_log([event]) == event.canonical()
    assert event.canonical().index('"kind"') < event.canonical().index('"seat"')  # sorted keys


def test_an_unknown_field_is_refused() -> None:
    with pytest.raises(ReplayError):
        Event.from_json(
            {"kind": "drew", "seat": 1, "public": {"source": "wall", "tile": "1f"}, "server": {"x": 1}}
        )


def test_malformed_events_raise_replay_error() -> None:
    with pytest.raises(ReplayError):
        Event.from_json({"seat": 0})


def test_illegal_action_error_carries_reason() -> None:
    error = IllegalActionError("not your turn")
    assert error.reason == "not your turn" and isinstance(error, ValueError)


def test_stacked_tiles_refuse_a_fifth_copy() -> None:
    from duelmahjong.engine.wall import stack_tiles

    with pytest.raises(SettingsError, match="more copies of 1m"):
        stack_tiles("duel", dealer_hand="11111m", other_hand="")


def test_a_log_written_with_the_riichi_words_still_parses_to_the_contracts_kinds() -> None:
    for old, kind in (
        ("ron", A.WIN),
        ("tsumo", A.SELF_DRAW_WIN),
        ("ankan 5m", A.CONCEALED_KONG),
        ("kakan 5m", A.ADDED_KONG),
    ):
        assert Action.parse(f"1 {old}").kind == kind
        assert str(Action.parse(f"1 {old}")).split()[1] == kind
