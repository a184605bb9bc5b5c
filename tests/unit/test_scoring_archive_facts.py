"""What the archive keeps of a hand, read from a real table's log (a LiveTable played in process): the
table's opening once and each hand's own slice, which join up again into the records a replay is built
from, whichever hand was archived first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from duelmahjong.replay.build import build_replay
from duelmahjong.v1 import archive_pb2, rules_pb2, server_state_pb2
from services.scoring.archive_chain import ChainIncomplete, Slice, hand_records
from services.scoring.archive_facts import (
    VOID,
    HandEntry,
    HandNotInLog,
    HandResult,
    hand_entry,
    unended_hand,
)
from services.scoring.tablelog import WHOLE_LOG, LoggedRecord, logged_records
from tests.unit.table_logs import played

CLOSED_AT = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def table_log(profile: str, seed: int, hands: int) -> list[LoggedRecord]:
    match = played(profile, seed, hands)
    return [record for message in match.log.messages for record in logged_records(message)]


def step_ends(profile: str, seed: int, hands: int) -> tuple[list[LoggedRecord], list[tuple[str, int]]]:
    """The table's log, and each hand's id with its last sequence as the table claims it (the end of
    the step whose events hold hand_ended), in hand order."""
    match = played(profile, seed, hands)
    ends: list[tuple[str, int]] = []
    for message in match.log.messages:
        records = logged_records(message)
        if any(
            r.record.WhichOneof("kind") == "engine_event" and r.record.engine_event.kind == "hand_ended"
            for r in records
        ):
            ends.append((records[-1].hand_id, records[-1].sequence))
    return [r for m in match.log.messages for r in logged_records(m)], ends


def archived(log: list[LoggedRecord], hand_id: str, last: int) -> HandEntry:
    return hand_entry(
        log, hand_id, HandResult(archive_pb2.ARCHIVED_OUTCOME_DRAWN), last_sequence=last, ended_at=CLOSED_AT
    )


def slice_of(entry: HandEntry) -> Slice:
    return Slice(entry.hand_number, entry.first_sequence, entry.records)


def ends(log: list[LoggedRecord]) -> dict[str, int]:
    """hand id -> the sequence of its hand_ended event."""
    return {
        r.hand_id: r.sequence
        for r in log
        if r.record.WhichOneof("kind") == "engine_event" and r.record.engine_event.kind == "hand_ended"
    }


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_a_finished_hand_is_kept_with_the_log_from_the_opening_through_its_end(profile: str) -> None:
    log = table_log(profile, 3, 2)
    assert unended_hand(log) is None  # every hand the table began, it ended
    ended = ends(log)
    assert len(ended) == 2
    second = sorted(ended, key=ended.__getitem__)[1]
    entry = hand_entry(
        log,
        second,
        HandResult(archive_pb2.ARCHIVED_OUTCOME_DRAWN),
        last_sequence=ended[second],
        ended_at=CLOSED_AT,
    )
    assert (entry.table_id, entry.pairing_id, entry.room_id) == ("t-rebuild", "p-1", "r-1")
    assert entry.hand_number == 2 and entry.hand_id == second
    assert entry.profile == (rules_pb2.PROFILE_DUEL if profile == "duel" else rules_pb2.PROFILE_ERREN)
    assert [(p.seat, p.player_id, p.is_bot) for p in entry.players] == [
        (rules_pb2.SEAT_FIRST, "a", False),
        (rules_pb2.SEAT_SECOND, "b", False),
    ]
    assert not entry.private_table
    opening = [server_state_pb2.TableLogRecord.FromString(raw) for raw in entry.opening]
    assert opening[0].WhichOneof("kind") == "table_opening"
    assert all(r.WhichOneof("kind") != "hand_begun" for r in opening)
    assert log[len(opening)].record.WhichOneof("kind") == "hand_begun"  # the opening: all before it
    first_end = min(ended.values())
    assert entry.first_sequence == first_end + 1  # after the previous hand's hand_ended
    assert entry.last_sequence == ended[second]
    records = [server_state_pb2.TableLogRecord.FromString(raw) for raw in entry.records]
    assert records == [r.record for r in log[first_end : ended[second]]]
    assert entry.started_at < entry.ended_at  # both from the times the seats were shown the events
    assert entry.ended_at != CLOSED_AT


def test_a_hand_the_table_never_ended_is_the_void_one_ended_when_the_table_closed() -> None:
    log = table_log("duel", 3, 2)
    ended = ends(log)
    assert len(ended) == 2
    first_end = min(ended.values())
    # The table is cut off a few records into its second hand.
    second_begun = next(
        r.sequence for r in log if r.sequence > first_end and r.record.WhichOneof("kind") == "hand_begun"
    )
    cut = log[: second_begun + 5]
    void = unended_hand(cut)
    assert void == cut[-1].hand_id and void not in {h for h, s in ended.items() if s <= first_end}
    entry = hand_entry(cut, void, VOID, last_sequence=WHOLE_LOG, ended_at=CLOSED_AT)
    assert entry.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID
    assert entry.ended_at == CLOSED_AT and entry.started_at <= CLOSED_AT
    assert entry.winner == entry.escaper == rules_pb2.SEAT_UNSPECIFIED and entry.evaluation is None
    assert entry.first_sequence == first_end + 1 and entry.last_sequence == len(cut)


def test_a_log_without_the_hand_or_the_opening_is_refused() -> None:
    log = table_log("erren", 7, 1)
    with pytest.raises(HandNotInLog, match="no HandBegun"):
        hand_entry(log, "t-rebuild-h9", VOID, last_sequence=WHOLE_LOG, ended_at=CLOSED_AT)
    with pytest.raises(HandNotInLog, match="no table opening"):
        hand_entry(log[1:], log[-1].hand_id, VOID, last_sequence=WHOLE_LOG, ended_at=CLOSED_AT)


def test_a_hand_of_a_private_table_is_archived_private_from_its_opening() -> None:
    log = table_log("duel", 3, 1)
    log[0].record.table_opening.private_table = True  # as OpenTableRequest.private_table opens it
    (hand_id, last), *_ = ends(log).items()
    entry = hand_entry(
        log, hand_id, HandResult(archive_pb2.ARCHIVED_OUTCOME_DRAWN), last_sequence=last, ended_at=CLOSED_AT
    )
    assert entry.private_table


@pytest.mark.parametrize("profile", ["duel", "erren"])
def test_the_slices_of_a_tables_hands_join_into_each_hands_replay_in_any_order(profile: str) -> None:
    log, ends = step_ends(profile, 3, 3)
    assert len(ends) == 3
    entries = [archived(log, hand_id, last) for hand_id, last in ends]
    assert [e.hand_number for e in entries] == [1, 2, 3]
    assert len({e.opening for e in entries}) == 1  # every hand reads the same opening
    opening = entries[0].opening
    # Linear: the opening and the slices hold the log once, but for the few records neighbours share.
    stored = len(opening) + sum(len(e.records) for e in entries)
    assert ends[-1][1] <= stored <= ends[-1][1] + 2 * len(entries)
    for later, earlier in zip(entries[1:], entries, strict=False):
        assert later.first_sequence <= earlier.last_sequence + 1  # no gap between neighbours
    whole = [r.record.SerializeToString() for r in log]
    # Archived last first: hand 3 waits for hands 1 and 2, then each hand's records come back whole.
    with pytest.raises(ChainIncomplete, match=r"hands 1, 2 are not archived"):
        hand_records("t-rebuild", opening, [slice_of(entries[2])], 3, entries[2].last_sequence)
    with pytest.raises(ChainIncomplete, match=r"hand 2 is not archived"):
        hand_records("t-rebuild", opening, [slice_of(entries[0]), slice_of(entries[2])], 3, ends[2][1])
    slices = [slice_of(e) for e in reversed(entries)]
    for entry in entries:
        joined = hand_records("t-rebuild", opening, slices, entry.hand_number, entry.last_sequence)
        assert joined == whole[: entry.last_sequence]
        replay = build_replay(
            [server_state_pb2.TableLogRecord.FromString(raw) for raw in joined], entry.hand_id
        )
        assert replay.hand_number == entry.hand_number and replay.steps
        assert replay.steps[-1].event.first_seat.WhichOneof("kind") == "hand_revealed"


def test_a_missing_opening_or_a_hole_in_the_chain_is_named() -> None:
    log, ends = step_ends("duel", 3, 2)
    first, second = (archived(log, hand_id, last) for hand_id, last in ends)
    with pytest.raises(ChainIncomplete, match="the opening of table t-1 is not archived"):
        hand_records("t-1", (), [slice_of(first)], 1, first.last_sequence)
    cut = Slice(1, first.first_sequence, first.records[:-3])  # a slice that stops short of its hand
    with pytest.raises(ChainIncomplete, match=r"lacks its log records \d+\.\.\d+ before the end of hand 2"):
        hand_records("t-1", first.opening, [cut, slice_of(second)], 2, second.last_sequence)
