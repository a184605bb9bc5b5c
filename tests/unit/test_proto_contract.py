"""The protobuf contract (proto/duelmahjong/v1) keeps its promises.

Checked on the generated descriptors (`make gen`), so the test sees exactly what clients get:
the PatternId enum is docs/decisions.md §2, every NATS event carries its envelope and idempotency keys, and
no client-facing response can carry the server-only hidden state (seed, wall, unused pool).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor, ServiceDescriptor

from duelmahjong.v1 import (
    events_pb2,
    matchmaking_pb2,
    play_pb2,
    rules_pb2,
    scoring_pb2,
    server_state_pb2,
    table_pb2,
    wallet_pb2,
)

# docs/decisions.md §2, copied as data (shared/ is not importable in CI), in the document's order.
DUEL_PATTERN_IDS = """
    basic_win concealed_hand concealed_ready heavenly_ready all_chows all_simples
    concealed_self_draw bonus_tiles pure_double_chow twice_pure_double_chow seven_pairs
    dragon_seven_pairs all_pungs mixed_triple_chow three_concealed_pungs pure_shifted_pungs
    triple_pung outside_hand pure_outside_hand all_terminals_and_honors half_flush full_flush
    little_three_dragons pure_straight out_on_replacement_tile win_on_last_wall_tile
    win_on_last_discard win_on_extra_draw little_four_winds earthly_hand human_hand
    four_concealed_pungs heavenly_hand big_wheels million_stones four_shifted_pungs all_honors
    big_three_dragons all_terminals four_kongs all_green red_peacock big_four_winds nine_gates
    thirteen_orphans northeast_express
""".split()
ERREN_PATTERN_IDS = """
    heavenly_hand earthly_hand human_hand heavenly_ready big_four_winds big_three_dragons nine_gates
    four_kongs seven_shifted_pairs great_seven_stars little_four_winds little_three_dragons
    all_honors four_concealed_pungs twin_edge_sequences quadruple_chow four_pure_shifted_pungs
    four_winds_seven_pairs three_dragons_seven_pairs four_pure_shifted_chows three_kongs
    all_terminals_and_honors seven_pairs full_flush pure_triple_chow pure_shifted_pungs
    big_three_winds pure_straight pure_shifted_chows three_concealed_pungs upper_four lower_four
    last_tile_draw last_tile_claim out_with_replacement_tile robbing_the_kong little_three_winds
    all_pungs half_flush melded_hand two_concealed_kongs two_dragon_pungs outside_hand
    fully_concealed_hand two_melded_kongs last_tile ready_first_discard no_flowers ready_declared
    four_plants four_seasons dragon_pung prevalent_wind seat_wind concealed_hand all_chows tile_hog
    two_concealed_pungs concealed_kong all_simples pure_double_chow short_straight
    two_terminal_chows terminal_honor_pung melded_kong edge_wait closed_wait single_wait
    flower_tiles self_drawn no_honors
""".split()

SERVICE_FILES = (wallet_pb2, matchmaking_pb2, table_pb2, scoring_pb2)
FORBIDDEN_FIELD_NAMES = frozenset({"wall", "seed", "unused_pool"})
HIDDEN_STATE = server_state_pb2.HiddenTableState.DESCRIPTOR
# Fields that let a consumer recognise an event it has already handled.
IDEMPOTENCY_KEYS = frozenset({"hand_id", "table_id", "sequence", "source_event_id", "server_id"})


def test_pattern_ids_are_unique_within_each_profile() -> None:
    assert len(set(DUEL_PATTERN_IDS)) == len(DUEL_PATTERN_IDS) == 46
    assert len(set(ERREN_PATTERN_IDS)) == len(ERREN_PATTERN_IDS) == 71


def test_pattern_id_enum_is_the_union_of_both_profiles_each_id_once() -> None:
    values = rules_pb2.PatternId.DESCRIPTOR.values
    names = [value.name for value in values]
    expected = ["PATTERN_ID_UNSPECIFIED"] + [
        f"PATTERN_ID_{pattern_id.upper()}"
        for pattern_id in dict.fromkeys([*DUEL_PATTERN_IDS, *ERREN_PATTERN_IDS])
    ]
    assert sorted(names) == sorted(expected)
    assert len(names) == len(set(names))
    assert rules_pb2.PatternId.Value("PATTERN_ID_UNSPECIFIED") == 0
    assert len({value.number for value in values}) == len(values), "two pattern ids share a number"


def test_profiles_are_duel_and_erren() -> None:
    assert rules_pb2.Profile.keys() == ["PROFILE_UNSPECIFIED", "PROFILE_DUEL", "PROFILE_ERREN"]


def test_hand_context_carries_every_key_of_rules_section_7() -> None:
    keys = {
        "dealer", "seat_wind", "round_wind", "flowers", "revealed_bonus_tiles", "declared_ready",
        "declared_first_turn", "first_turn_after_declare", "last_wall_tile", "last_discard",
        "after_kong", "after_flower_replacement", "robbing_kong", "fourth_tile_visible",
        "extra_draw_after_exhaustion", "first_turn_win",
    }  # fmt: skip
    assert set(rules_pb2.HandContext.DESCRIPTOR.fields_by_name) == keys
    description = set(rules_pb2.HandDescription.DESCRIPTOR.fields_by_name)
    assert description == {"profile", "concealed", "melds", "win_tile", "self_drawn", "context"}
    evaluation = set(rules_pb2.Evaluation.DESCRIPTOR.fields_by_name)
    assert evaluation == {"patterns", "total_fan", "capped", "limit", "meets_minimum"}
    assert set(rules_pb2.PatternScore.DESCRIPTOR.fields_by_name) == {"id", "name_zh", "fan"}


def event_messages() -> list[Descriptor]:
    """Every message of events.proto but the envelope: one message per NATS event."""
    return [
        message
        for name, message in events_pb2.DESCRIPTOR.message_types_by_name.items()
        if name != "EventEnvelope"
    ]


def test_the_envelope_has_id_producer_and_timestamp() -> None:
    fields = events_pb2.EventEnvelope.DESCRIPTOR.fields_by_name
    assert fields["event_id"].type == FieldDescriptor.TYPE_STRING
    assert fields["producer"].type == FieldDescriptor.TYPE_STRING
    assert fields["occurred_at"].message_type.full_name == "google.protobuf.Timestamp"


def test_the_events_of_the_architecture_exist() -> None:
    names = {message.name for message in event_messages()}
    assert names >= {
        "HandEnded", "HandScored", "SettlementApplied", "EscapePenalty", "FeeCharged",
        "ExchangeCharged", "ItemUsed", "GuessResolved", "ReplayRejected", "TableServerAnnounced",
        "TableOpened", "TableClosed", "TableEventAppended",
    }  # fmt: skip


@pytest.mark.parametrize("event", event_messages(), ids=lambda message: message.name)
def test_every_event_carries_the_envelope_and_an_idempotency_key(event: Descriptor) -> None:
    envelope = event.fields_by_number.get(1)
    assert envelope is not None and envelope.name == "envelope", f"{event.name}: field 1 is not envelope"
    assert envelope.message_type is events_pb2.EventEnvelope.DESCRIPTOR
    assert IDEMPOTENCY_KEYS & set(event.fields_by_name), f"{event.name} has no idempotency key"


def reachable_fields(message: Descriptor) -> Iterator[tuple[str, FieldDescriptor]]:
    """Every field reachable from `message`, with the dotted path that reaches it (cycles cut)."""
    seen: set[str] = set()
    stack: list[tuple[str, Descriptor]] = [(message.name, message)]
    while stack:
        path, current = stack.pop()
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        for field in current.fields:
            yield f"{path}.{field.name}", field
            if field.message_type is not None:
                stack.append((f"{path}.{field.name}", field.message_type))


def hidden_state_leaks(message: Descriptor) -> list[str]:
    """The paths through which `message` could carry server-only state."""
    return [
        path
        for path, field in reachable_fields(message)
        if field.name in FORBIDDEN_FIELD_NAMES or field.message_type is HIDDEN_STATE
    ]


def client_facing_responses() -> list[tuple[str, Descriptor]]:
    services: list[ServiceDescriptor] = [
        service for module in SERVICE_FILES for service in module.DESCRIPTOR.services_by_name.values()
    ]
    return [
        (f"{service.name}.{method.name}", method.output_type)
        for service in services
        for method in service.methods
    ]


def test_every_service_file_has_exactly_one_service_named_service() -> None:
    for module in SERVICE_FILES:
        services = list(module.DESCRIPTOR.services_by_name)
        assert len(services) == 1 and services[0].endswith("Service"), module.DESCRIPTOR.name


@pytest.mark.parametrize(
    ("rpc", "response"), client_facing_responses(), ids=[rpc for rpc, _ in client_facing_responses()]
)
def test_no_response_can_carry_hidden_state(rpc: str, response: Descriptor) -> None:
    assert hidden_state_leaks(response) == [], f"{rpc} could leak server-only state"


def test_the_leak_check_finds_hidden_state_where_it_is() -> None:
    # The write-ahead log carries the seed (server to server only): the check must see it there,
    # or the test above could not fail.
    # (Each message type is walked once, so the log record is found under `record` or `following`.)
    leaks = {
        path.replace(".following.", ".record.")
        for path in hidden_state_leaks(events_pb2.TableEventAppended.DESCRIPTOR)
    }
    assert "TableEventAppended.record.hand_begun.hidden" in leaks
    assert "TableEventAppended.record.hand_begun.hidden.seed" in leaks


# Names under which a seat's secret tiles travel; SeatView may hold them for its own seat only.
SEAT_SECRET_FIELD_NAMES = frozenset({"concealed", "drawn_tile", "waits", "offers"})


def test_what_every_seat_sees_holds_no_seat_secret() -> None:
    # The opponent's hand shows as counts (concealed_count, holding_drawn_tile), never as tiles.
    secrets = [
        path
        for path, field in reachable_fields(play_pb2.PublicTableState.DESCRIPTOR)
        # Discard.drawn_tile is a public flag (the drawn tile was discarded straight away), not a tile.
        if field.name in SEAT_SECRET_FIELD_NAMES and field.type != FieldDescriptor.TYPE_BOOL
    ]
    assert secrets == []


def test_a_seat_view_has_its_own_tiles_and_the_public_state() -> None:
    fields = play_pb2.SeatView.DESCRIPTOR.fields_by_name
    assert {"seat", "concealed", "drawn_tile", "legal_actions"} <= set(fields)
    assert fields["table"].message_type is play_pb2.PublicTableState.DESCRIPTOR
    opponent = play_pb2.PublicSeatState.DESCRIPTOR.fields_by_name
    assert opponent["holding_drawn_tile"].type == FieldDescriptor.TYPE_BOOL


def test_every_seat_event_kind_is_a_typed_message_and_detail_json_is_documented_unused() -> None:
    kinds = play_pb2.SeatEvent.DESCRIPTOR.oneofs_by_name["kind"].fields
    names = {field.name for field in kinds}
    # Engine kinds each shown by a typed message of their own (docs/protocol.md "Events on the stream").
    assert names >= {
        "table_opened", "tiles_exchanged", "play_started", "exhausted", "thrown_away", "won",
        "escaped", "doubling_chosen", "doubling_revealed", "hand_settled", "seat_connection",
        "table_ended",
    }  # fmt: skip
    assert all(field.message_type is not None for field in kinds)
    detail = play_pb2.SeatEvent.DESCRIPTOR.fields_by_name["detail_json"]
    assert detail.containing_oneof is None and detail.type == FieldDescriptor.TYPE_STRING


def test_the_table_shows_players_without_their_carry_or_items() -> None:
    # A seat's carry and item counts are its own business (the wallet's, the table's): the opening event
    # names who sits where, nothing more.
    player = set(play_pb2.TablePlayer.DESCRIPTOR.fields_by_name)
    assert player == {"seat", "player_id", "display_name"}
    assert (
        play_pb2.TableInfo.DESCRIPTOR.fields_by_name["players"].message_type
        is play_pb2.TablePlayer.DESCRIPTOR
    )


def test_the_log_holds_what_seats_are_shown() -> None:
    record = server_state_pb2.TableLogRecord.DESCRIPTOR.fields_by_name
    assert record["shown"].message_type is play_pb2.SeatEvent.DESCRIPTOR
    assert "seat_sequence" in server_state_pb2.EngineEventRecord.DESCRIPTOR.fields_by_name
    # 托管 is part of the contract: on the event and on the seat's public state.
    assert "auto_play" in play_pb2.SeatConnection.DESCRIPTOR.fields_by_name
    assert "auto_play" in play_pb2.PublicSeatState.DESCRIPTOR.fields_by_name
