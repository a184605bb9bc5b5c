"""build_replay (libs/duelmahjong/replay/build.py) on real logs: matches of both profiles played
through a real ``LiveTable`` (tests/unit/table_logs.py), duel with items, triplet offers and 搓牌 picks.

Every step's state is checked against the engine folded up to that step, every event's seat copies
against what the table sent each seat, and every field of the replay against the log."""

from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from typing import Any

import pytest

from duelmahjong.engine import fairness
from duelmahjong.engine.events import Event
from duelmahjong.engine.table import Table
from duelmahjong.replay.build import ReplayError, build_replay
from duelmahjong.rules.tiles import parse_tiles, tile_name, tiles_of
from duelmahjong.v1 import archive_pb2, play_pb2, rules_pb2, server_state_pb2
from tests.unit.table_logs import RecordedMatch, played

# (profile, seed, offer probability): between them won, drawn and escaped hands, exchanges, offers,
# items and 乾坤大挪移 (seat 0 asks for it in the first hand).
MATCHES = [("duel", 9, 0.3), ("duel", 19, 0.3), ("erren", 12, 0.0), ("erren", 3, 0.0)]


@functools.cache
def match(profile: str, seed: int, offers: float) -> RecordedMatch:
    return played(profile, seed, offers=offers)


def hand_ids(records: list[server_state_pb2.TableLogRecord]) -> list[str]:
    return [r.hand_begun.hidden.hand_id for r in records if r.HasField("hand_begun")]


def _received(m: RecordedMatch, seat: int) -> dict[int, play_pb2.SeatEvent]:
    """Every event the table sent ``seat`` (on any of its sessions), by sequence."""
    return {
        response.event.sequence: response.event
        for session in m.sent(seat)
        for response in session
        if response.HasField("event")
    }


def _engine_states(records: list[server_state_pb2.TableLogRecord], hand_id: str) -> list[dict[str, Any]]:
    """The engine after each logged event of the hand, folded one by one (independent of the replay)."""
    table = Table()
    states = []
    inside = False
    for record in records:
        if record.HasField("hand_begun"):
            inside = record.hand_begun.hidden.hand_id == hand_id
        if record.HasField("engine_event"):
            event = Event.from_json(json.loads(record.engine_event.canonical_json))
            table.emit(event)
            if inside and event.kind != "pairing_ended":
                states.append(copy.deepcopy(vars(table.state)))
            inside = inside and event.kind != "hand_ended"
    return states


@pytest.mark.parametrize(("profile", "seed", "offers"), MATCHES)
def test_a_replay_shows_every_step_of_every_hand_as_the_table_played_it(
    profile: str, seed: int, offers: float
) -> None:
    m = match(profile, seed, offers)
    records = m.records()
    sent = [_received(m, 0), _received(m, 1)]
    results = {s.claim.hand_id: s.claim.outcome for s in m.scored()}
    compared = 0
    for hand_id in hand_ids(records):
        replay = build_replay(records, hand_id)
        begun = next(
            r.hand_begun
            for r in records
            if r.HasField("hand_begun") and r.hand_begun.hidden.hand_id == hand_id
        )
        opening = records[0].table_opening
        assert (replay.hand_id, replay.table_id, replay.pairing_id, replay.room_id) == (
            hand_id,
            opening.table_id,
            opening.pairing_id,
            opening.room_id,
        )
        assert replay.hand_number == begun.hand_number and replay.rules == begun.rules
        assert [p.player_id for p in replay.players] == ["a", "b"]
        assert replay.dealer == begun.dealer and replay.multipliers == begun.multipliers
        assert replay.round_wind != rules_pb2.WIND_UNSPECIFIED
        seed_value = int.from_bytes(begun.hidden.seed, "big")
        assert replay.fairness.commitment == fairness.commitment(seed_value, begun.hidden.salt)
        assert (replay.fairness.seed, replay.fairness.salt) == (begun.hidden.seed, begun.hidden.salt)
        dealt = sum(len(parse_tiles(hand.concealed)) for hand in replay.deal.dealt)
        assert list(replay.deal.wall) == list(begun.hidden.wall)[dealt:]
        assert list(replay.deal.unused_pool) == list(begun.hidden.unused_pool)
        assert [hand.seat for hand in replay.deal.dealt] == [rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND]

        events = [s for s in replay.steps if s.HasField("event")]
        decisions = [s for s in replay.steps if s.HasField("decision")]
        assert [s.index for s in replay.steps] == list(range(1, len(replay.steps) + 1))
        assert events[0].event.first_seat.HasField("hand_started")
        assert events[0].event.first_seat.hand_started.wall_commitment == replay.fairness.commitment
        assert all(d.decision.origin != archive_pb2.DECISION_ORIGIN_UNSPECIFIED for d in decisions)
        # The state after each event is the engine's after that event.
        states = _engine_states(records, hand_id)
        assert len(states) == len(events)
        for step, state in zip(events, states, strict=True):
            _same_table(step.state, state)
            assert step.event.summary
            for seat, seat_copy in ((0, step.event.first_seat), (1, step.event.second_seat)):
                if step.event.sequence and step.event.sequence in sent[seat]:
                    assert seat_copy == sent[seat][step.event.sequence], f"step {step.index}"
                    compared += 1
        # A decision shows the table as the previous event left it.
        for step in decisions:
            before = replay.steps[step.index - 2]
            assert step.state == before.state
        if hand_id in results:
            assert (
                replay.result.outcome
                == {
                    "win": archive_pb2.ARCHIVED_OUTCOME_WIN,
                    "drawn": archive_pb2.ARCHIVED_OUTCOME_DRAWN,
                    "escape": archive_pb2.ARCHIVED_OUTCOME_ESCAPE,
                }[results[hand_id]]
            )
            assert events[-1].event.first_seat.HasField("hand_revealed")
        # The table as dealt: after the step that dealt (erren deals after 开始加倍), 补花 included.
        dealt = next(i for i, s in enumerate(replay.steps) if s.event.first_seat.HasField("tiles_dealt"))
        last = next(i for i in range(dealt, len(replay.steps)) if replay.steps[i].HasField("decision")) - 1
        assert replay.initial == replay.steps[last].state
    assert compared > 100


def _same_table(shown: archive_pb2.ReplayState, state: dict[str, Any]) -> None:
    for seat, entry in enumerate(shown.seats):
        held = parse_tiles(entry.concealed + entry.drawn_tile)
        assert sorted(held) == tiles_of(state["hands"][seat])
        assert [d.tile for d in entry.discards] == [tile_name(t) for t, _ in state["river_marks"][seat]]
        assert len(entry.melds) == len(state["melds"][seat])
        assert sorted(parse_tiles(entry.flowers)) == sorted(state["flowers"][seat])
        assert entry.declared_ready == state["ready"][seat]
    assert shown.wall_remaining == state["tail"] - state["head"]
    assert shown.pool_remaining == len(state["pool"])


def test_the_matches_hold_every_kind_of_hand_and_step() -> None:
    outcomes: Counter[int] = Counter()
    kinds: Counter[str] = Counter()
    for profile, seed, offers in MATCHES:
        records = match(profile, seed, offers).records()
        for hand_id in hand_ids(records):
            replay = build_replay(records, hand_id)
            outcomes[replay.result.outcome] += 1
            kinds.update(
                s.event.first_seat.WhichOneof("kind") or "" for s in replay.steps if s.HasField("event")
            )
            if replay.rules.profile == rules_pb2.PROFILE_DUEL and replay.hand_number == 1:
                assert replay.deal.grand_shift == [rules_pb2.SEAT_FIRST] and replay.deal.items
    assert {
        archive_pb2.ARCHIVED_OUTCOME_WIN,
        archive_pb2.ARCHIVED_OUTCOME_DRAWN,
        archive_pb2.ARCHIVED_OUTCOME_ESCAPE,
    } <= set(outcomes)
    assert {
        "tiles_exchanged",
        "offer_made",
        "offer_resolved",
        "item_applied",
        "meld_made",
        "flower_replaced",
    } <= set(kinds)


def test_a_void_hand_replays_up_to_where_its_log_stops() -> None:
    records = match("duel", 9, 0.3).records()
    first = hand_ids(records)[0]
    whole = build_replay(records, first)
    end = next(
        i for i, r in enumerate(records) if r.HasField("engine_event") and r.engine_event.kind == "hand_ended"
    )
    actions = [i for i, r in enumerate(records[:end]) if r.HasField("action_applied")]
    cut = actions[len(actions) // 2]
    replay = build_replay(records[:cut], first)
    assert replay.result.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID
    assert 0 < len(replay.steps) < len(whole.steps)
    assert list(replay.steps) == list(whole.steps[: len(replay.steps)])
    assert replay.result.started_at == whole.result.started_at


def test_a_log_dealt_without_a_salt_still_replays() -> None:
    records = [
        server_state_pb2.TableLogRecord.FromString(r.SerializeToString())
        for r in match("erren", 12, 0.0).records()
    ]
    for record in records:  # as a table wrote them before hands were committed
        if record.HasField("hand_begun"):
            record.hand_begun.hidden.salt = b""
        if record.HasField("engine_event") and record.engine_event.kind == "hand_started":
            event = json.loads(record.engine_event.canonical_json)
            event["public"].pop("commitment")
            event["server"].pop("salt")
            record.engine_event.canonical_json = Event.from_json(event).canonical()
    replay = build_replay(records, hand_ids(records)[0])
    assert (
        replay.fairness.commitment == b"" and replay.fairness.salt == b"" and len(replay.fairness.seed) == 8
    )
    assert replay.steps[0].event.first_seat.hand_started.wall_commitment == b""


def test_a_log_that_does_not_replay_is_refused_naming_the_step() -> None:
    records = [
        server_state_pb2.TableLogRecord.FromString(r.SerializeToString())
        for r in match("duel", 9, 0.3).records()
    ]
    draws = [r for r in records if r.HasField("engine_event") and r.engine_event.kind == "drew"]
    target = draws[5].engine_event
    event = json.loads(target.canonical_json)
    tile = event["private"]["tile"] if "private" in event else event["public"]["tile"]
    other = "1m" if tile != "1m" else "2m"
    target.canonical_json = target.canonical_json.replace(f'"tile":"{tile}"', f'"tile":"{other}"')
    with pytest.raises(ReplayError, match=r"step \d+ .*'drew', differs with other contents"):
        for hand in hand_ids(records):
            build_replay(records, hand)
    with pytest.raises(ReplayError, match="holds no hand"):
        build_replay(records, "no-such-hand")
