"""``duel bench chaos``'s parts that need no stack: its arguments, and the checks of the tables'
write-ahead logs against what the bots saw (bench/table_logs.py) — each violation found, and a clean
table found clean."""

from __future__ import annotations

import pytest

from duelmahjong.cli.bench import load
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, server_state_pb2, table_pb2

chaos = load("chaos")  # bench/ is not an installed package: loaded the way `duel bench` loads it
logs = load("table_logs")
FIRST = rules_pb2.SEAT_FIRST
PLAYER = server_state_pb2.ACTION_ORIGIN_PLAYER


def test_defaults_are_ten_minutes_of_eight_pairs_a_fault_every_30_to_60s_and_not_in_bench_all() -> None:
    args = chaos.parse_args([])
    assert (args.minutes, args.pairs, args.every_range, args.kinds) == (
        10.0,
        8,
        (30.0, 60.0),
        ["kill", "term"],
    )
    assert chaos.parse_args(["--every", "15"]).every_range == (15.0, 15.0)
    assert chaos.IN_ALL is False


@pytest.mark.parametrize(
    "argv", [["--every", "60..30"], ["--every", "x"], ["--kinds", "stop"], ["--pairs", "0"]]
)
def test_nonsense_arguments_are_refused_with_usage_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        chaos.parse_args(argv)
    assert exit_info.value.code == 2


def _discard(tile: str) -> play_pb2.Action:
    return play_pb2.Action(discard=play_pb2.DiscardAction(tile=tile))


def _step(
    sequence: int, *records: server_state_pb2.TableLogRecord, hand: str = "t1-h1"
) -> events_pb2.TableEventAppended:
    step = events_pb2.TableEventAppended(table_id="t1", hand_id=hand, sequence=sequence, record=records[0])
    step.following.extend(records[1:])
    step.envelope.event_id = f"t1/{hand}/{sequence}"
    return step


def _applied(action: play_pb2.Action, seat: int = FIRST) -> server_state_pb2.TableLogRecord:
    return server_state_pb2.TableLogRecord(
        action_applied=server_state_pb2.ActionApplied(
            seat=seat, action=action, origin=PLAYER, engine_action="0 discard"
        )
    )


def _event(shown_as: int, at: int) -> server_state_pb2.TableLogRecord:
    return server_state_pb2.TableLogRecord(
        engine_event=server_state_pb2.EngineEventRecord(
            kind="discard", seat_sequence=shown_as, shown_at_unix_nanos=at
        )
    )


def _begun() -> server_state_pb2.TableLogRecord:
    return server_state_pb2.TableLogRecord(hand_begun=server_state_pb2.HandBegun(hand_number=1))


def _table() -> list[events_pb2.TableEventAppended]:
    """A hand begun (event 1 shown), then seat FIRST's discard answering decision 1 (event 2)."""
    return [_step(1, _begun(), _event(1, 100)), _step(3, _applied(_discard("5m")), _event(2, 200))]


def _seat(*shown: tuple[int, int], chose: play_pb2.Action | None = None) -> object:
    seat = logs.SeatRecord("t1", FIRST)
    for sequence, at in shown:
        event = table_pb2.PlayResponse(event=play_pb2.SeatEvent(sequence=sequence))
        event.event.occurred_at.FromNanoseconds(at)
        seat.watch(table_pb2.PlayResponse(batch=table_pb2.PlayBatch(responses=[event])))
    seat.chose(play_pb2.LegalActions(sequence=1), chose or _discard("5m"))
    return seat


def test_a_clean_table_is_found_clean() -> None:
    findings = logs.examine({"t1": _table()}, [_seat((1, 100), (2, 200))])
    assert (findings.lost, findings.duplicates, findings.gaps) == ([], [], [])
    assert (findings.acknowledged, findings.events_checked) == (1, 2)
    assert findings.voided({"t1-h1"}) == [] and findings.voided(set()) == ["t1-h1 (table t1)"]


def test_an_event_a_seat_saw_that_the_log_lacks_or_logged_otherwise_is_lost() -> None:
    findings = logs.examine({"t1": _table()}, [_seat((1, 100), (2, 250), (3, 300))])
    assert findings.lost == [
        "table t1: seat 1 saw event 2, logged at 200, shown at 250",
        "table t1: seat 1 saw event 3, not in the log",
    ]


def test_an_acknowledged_action_the_log_applied_differently_is_lost() -> None:
    findings = logs.examine({"t1": _table()}, [_seat((1, 100), (2, 200), chose=_discard("9p"))])
    assert len(findings.lost) == 1 and "answered decision 1" in findings.lost[0]


def test_an_action_applied_twice_and_a_sequence_written_twice_are_duplicates() -> None:
    begun = _step(1, _begun(), _event(1, 100))
    twice = [
        begun,
        _step(3, _applied(_discard("5m"))),
        _step(4, _applied(_discard("5m"))),
    ]  # none shown between
    assert (
        logs.examine({"t1": twice}, []).duplicates[0].startswith("table t1: seat 1 applied '0 discard' twice")
    )
    forked = [*_table(), _step(4, _applied(_discard("7s")), _event(2, 201))]
    found = logs.examine({"t1": forked}, []).duplicates
    assert "table t1: record sequence 4 twice" in found and "table t1: event sequence 2 shown twice" in found
    assert logs.examine({"t1": [*_table(), _step(9, _event(3, 300))]}, []).gaps == [
        "table t1: records 5..8 missing"
    ]


def test_a_seat_shown_one_sequence_at_two_times_saw_a_fork() -> None:
    seat = _seat((1, 100), (2, 200), (2, 201))
    assert logs.examine({"t1": _table()}, [seat]).lost == ["table t1: event 2 shown at 200, then at 201"]
