"""What the archive keeps of a hand, read from a real table's log (a LiveTable played in process)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from duelmahjong.v1 import archive_pb2, rules_pb2, server_state_pb2
from services.scoring.archive_facts import VOID, HandNotInLog, HandResult, hand_entry, unended_hand
from services.scoring.tablelog import WHOLE_LOG, LoggedRecord, logged_records
from tests.unit.table_logs import played

CLOSED_AT = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def table_log(profile: str, seed: int, hands: int) -> list[LoggedRecord]:
    match = played(profile, seed, hands)
    return [record for message in match.log.messages for record in logged_records(message)]


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
    records = [server_state_pb2.TableLogRecord.FromString(raw) for raw in entry.records]
    assert len(records) == ended[second]  # every record 1..the hand's end, in order
    assert records == [r.record for r in log[: ended[second]]]
    assert records[0].WhichOneof("kind") == "table_opening"
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
    assert len(entry.records) == len(cut)


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
