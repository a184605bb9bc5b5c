"""``duel bench chaos``'s matchmaking parts that need no stack: ``--targets``, how a bot's queue entry
ended, the store as its watcher saw it (who follows the open tickets, the pairings made, players in
two at once), the wallet's holds that overlap, and the queue streams each matchmaking fault broke."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import grpc
import pytest

from duelmahjong.cli.bench import load
from duelmahjong.client.session import ENDED_EARLY, QueueEnded, QueueLost, QueueStats

chaos = load("chaos")  # bench/ is not an installed package: loaded the way `duel bench` loads it
soak = load("soak")
watched = load("chaos_matchmaking")
REFUSED = "the wallet refused the hold:"


def test_targets_default_to_both_and_are_taken_in_the_order_given() -> None:
    assert chaos.parse_args([]).targets == ["table", "matchmaking"]
    assert chaos.parse_args(["--targets", "matchmaking,table"]).targets == ["matchmaking", "table"]
    assert chaos.parse_args(["--targets", "matchmaking"]).targets == ["matchmaking"]
    assert chaos.SETTINGS["MATCHMAKING_REPLICAS"] >= "2"


@pytest.mark.parametrize("targets", ["wallet", "table,table", ""])
def test_targets_other_than_table_and_matchmaking_once_each_are_refused(targets: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        chaos.parse_args(["--targets", targets])
    assert exit_info.value.code == 2


def _rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="went wrong")


@pytest.mark.parametrize(
    ("error", "ticket", "outcome"),
    [
        (QueueEnded("the queue ticket expired before a match was found"), "q", "expired.ticket_time"),
        (QueueEnded("the multiplier negotiation timed out (T7)"), "q", "expired.t7_timeout"),
        (QueueEnded("the multiplier was declined; the pairing ends (T7)"), "q", "expired.t7_declined"),
        (
            QueueEnded("the wallet refused the hold: p has 3 prestige free, the hold needs 9"),
            "q",
            "expired.prestige",
        ),
        (
            QueueEnded("the wallet refused the hold: p is already holding for pairing x"),
            "q",
            "lost.hold_refused",
        ),
        (QueueEnded("the queue stream closed and was not followed again"), "q", "lost.stream_grace"),
        (QueueEnded("the queue ticket is no longer known (it ended long ago)"), "q", "lost.ended_otherwise"),
        (QueueLost("could not be followed again within 30 s"), "q", "lost.follow_gave_up"),
        (QueueEnded(ENDED_EARLY), "", "not_queued.ended_early"),
        (_rpc_error(grpc.StatusCode.FAILED_PRECONDITION), "", "not_queued.FAILED_PRECONDITION"),
        (_rpc_error(grpc.StatusCode.UNAVAILABLE), "", "not_queued.UNAVAILABLE"),
        (_rpc_error(grpc.StatusCode.NOT_FOUND), "q", "lost.grpc.NOT_FOUND"),
        (TimeoutError(), "q", "lost.no_table_in_time"),
        (KeyError("seat"), "q", "lost.unexpected.KeyError"),
    ],
)
def test_a_queue_entry_ends_paired_left_by_a_room_rule_not_queued_or_lost(
    error: BaseException, ticket: str, outcome: str
) -> None:
    assert soak.queue_outcome(error, ticket) == outcome
    tally = soak.Tally()
    tally.queues.update({"paired": 3, outcome: 1})
    assert tally.lost() == ({outcome: 1} if outcome.startswith("lost.") else {})


def _ticket(ticket_id: str, follower: str, state: str = "waiting", **fields: object) -> bytes:
    return json.dumps({"ticket_id": ticket_id, "state": state, "follower": follower, **fields}).encode()


def _pairing(pairing_id: str, players: tuple[str, str], state: str, **fields: object) -> bytes:
    seats = [{"player_id": player} for player in players]
    record = {"pairing_id": pairing_id, "seats": seats, "state": state, "held": [], "created_at": 0.0}
    return json.dumps({**record, **fields}).encode()


def test_the_store_watch_knows_who_follows_the_open_tickets_and_which_pairings_were_made() -> None:
    watch = watched.StoreWatch()
    watch.apply("tickets.r.q1", _ticket("q1", "matchmaking-2:ab12"))
    watch.apply("tickets.r.q2", _ticket("q2", "matchmaking-2:ab12"))
    watch.apply("tickets.r.q3", _ticket("q3", "matchmaking:cd34"))
    watch.apply("tickets.r.q4", _ticket("q4", "matchmaking:cd34", unfollowed_at=5.0))
    watch.apply("tickets.r.q3", _ticket("q3", "matchmaking:cd34", state="done", reason="table_ready"))
    assert watch.followers() == {"matchmaking-2": 2}
    assert watch.ticket_end("q3") == "ended: table_ready" and watch.ticket_end("q9") == "never stored"
    watch.apply("pairings.r.p1", _pairing("p1", ("x", "y"), "holding", held=["x"]))
    watch.apply("pairings.r.p2", _pairing("p2", ("x", "z"), "negotiating"))
    watch.apply("pairings.r.p3", _pairing("p3", ("y", "z"), "ended", held=["y", "z"], ended_at=9.0))
    watch.apply("pairings.r.p3", None)  # the bucket forgets it; the watch does not
    assert watch.made == {"p2", "p3"}
    watch.apply("players.x", json.dumps({"ticket_id": "q1", "claimed_at": "12.5"}).encode())
    watch.apply("players.y", json.dumps({"ticket_id": "q2"}).encode())
    watch.apply("players.y", None)
    assert watch.claims == {"x": ("q1", 12.5)}


def test_a_player_in_two_pairings_made_at_once_is_found_in_the_records() -> None:
    watch = watched.StoreWatch()
    watch.apply("pairings.r.p1", _pairing("p1", ("x", "y"), "playing", created_at=0.0))
    watch.apply("pairings.r.p1", _pairing("p1", ("x", "y"), "ended", created_at=0.0, ended_at=10.0))
    watch.apply("pairings.r.p2", _pairing("p2", ("x", "z"), "ended", created_at=10.5, ended_at=20.0))
    watch.apply("pairings.r.p9", _pairing("p9", ("x", "z"), "ended", created_at=1.0, ended_at=2.0))  # lapsed
    assert watched.pairing_overlaps(watch) == []
    watch.apply("pairings.r.p3", _pairing("p3", ("y", "w"), "playing", created_at=5.0))  # y still in p1
    assert watched.pairing_overlaps(watch) == ["y: p1 until 10.0 and p3 from 5.0"]


def test_holds_of_two_pairings_open_at_once_are_found_per_player() -> None:
    def at(seconds: float) -> datetime:
        return datetime.fromtimestamp(1_800_000_000 + seconds, UTC)

    holds = [
        ("p1", "x", at(0), at(10)),
        ("p2", "x", at(11), at(20)),
        ("p1", "y", at(0), at(10)),
        ("p3", "y", at(9), None),  # placed before p1's was released, and never released
    ]
    found = watched.hold_overlaps(holds)
    assert len(found) == 1 and found[0].startswith("y: p1 until ") and " and p3 from " in found[0]
    assert watched.overlaps({"y": [(0.0, math.inf, "a"), (3.0, 4.0, "b")]}) == [
        "y: a until inf and b from 3.0"
    ]


def test_each_matchmaking_fault_counts_the_streams_broken_after_it_until_the_next() -> None:
    first, second = QueueStats(), QueueStats()
    clients = [first]
    failover = watched.Failover(lambda: clients)
    first.breaks, first.resume_seconds = 1, [0.3]  # before any fault: not counted
    failover.mark("kill")
    first.breaks, first.resume_seconds = 3, [0.3, 0.2, 0.4]
    clients.append(second)  # a client made after the kill
    second.breaks, second.resume_seconds = 1, [0.1]
    failover.mark("term")
    second.breaks, second.resume_seconds = 2, [0.1, 1.5]
    assert failover.of("kill") == (3, [0.2, 0.4, 0.1])
    assert failover.of("term") == (1, [1.5])
    line = watched.failover_line("kill", *failover.of("kill"))
    assert line.startswith("chaos queue failover after kill: 3 streams broken, 3 shown again p50=0.20s")
