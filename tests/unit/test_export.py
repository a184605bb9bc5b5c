"""duel export's library (libs/duelmahjong/export) on real hands: replays a real ``LiveTable`` played
(tests/unit/replay_samples.py), played again through the engine.

- every decision of a wanted seat is one record, in order, and nothing of the other seat's;
- the record's view is the same whatever the opponent's concealed tiles, the wall and the pool are
  (the encoder cannot leak them), and its action is one of its legal actions, in text that parses back;
- a seat's reward is what the wallet's postings moved for the hand's result, in 1番;
- the exporter writes only seats whose players share, leaves out hands not settled, void, private,
  not served by the archive or of another profile or time, keeps to its limit, and refuses an encoder
  that writes its fields.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from duelmahjong.engine.actions import Action
from duelmahjong.engine.table import Table
from duelmahjong.export.archive import ArchivedHandOf, HandUnavailable
from duelmahjong.export.decisions import HandNotReplayable, decisions
from duelmahjong.export.encoding import combined, view_encoder
from duelmahjong.export.exporter import NOT_SERVED, NOT_SETTLED, VOID, ExportOptions, export
from duelmahjong.export.records import EncoderError
from duelmahjong.export.rewards import seat_rewards
from duelmahjong.v1 import archive_pb2, rules_pb2
from tests.unit.replay_samples import every_hand

SAMPLES = [("duel", 9, 0.3), ("duel", 19, 0.3), ("erren", 3, 0.0)]
FIRST, SECOND = rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND
TRANSFER = rules_pb2.POSTING_REASON_HAND_TRANSFER
FEE = rules_pb2.POSTING_REASON_FEE
# Choices of several tiles: the engine lists representatives of them (docs/engine.md).
COMBINATORIAL = {"exchange", "take_triplet", "swap_item", "shuffle_item", "rub"}
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@functools.cache
def replays(profile: str, seed: int, offers: float) -> tuple[archive_pb2.Replay, ...]:
    return tuple(every_hand(profile, seed, offers=offers))


def all_replays() -> list[archive_pb2.Replay]:
    return [replay for sample in SAMPLES for replay in replays(*sample)]


def decision_seats(replay: archive_pb2.Replay) -> list[int]:
    return [0 if step.decision.seat == FIRST else 1 for step in replay.steps if step.HasField("decision")]


def test_every_decision_of_the_wanted_seats_is_one_record_in_order() -> None:
    for replay in all_replays():
        made = decision_seats(replay)
        for wanted in ({0}, {1}, {0, 1}):
            found = list(decisions(replay, wanted, view_encoder))
            assert [d.seat for d in found] == [seat for seat in made if seat in wanted]
            for seat in wanted:
                assert [d.number for d in found if d.seat == seat] == list(range(made.count(seat)))
        assert list(decisions(replay, set(), view_encoder)) == []


def kind(action: str) -> str:
    return action.split()[1]


def taken_among(action: str, legal: list[str]) -> bool:
    """The action is listed, or is a choice of tiles whose kind the list carries representatives of."""
    return action in legal or (kind(action) in COMBINATORIAL and kind(action) in {kind(a) for a in legal})


def hidden_changed(table: Table, seat: int) -> Table:
    """The table with the other seat's concealed tiles, the wall and the pool made up anew (the same
    counts of tiles, other tiles)."""
    other = copy.deepcopy(table)
    state = other.state
    hand = state.hands[1 - seat]
    state.hands[1 - seat] = [0] * len(hand)
    state.hands[1 - seat][33] = sum(hand)  # every concealed tile a red dragon
    state.wall = [0] * len(state.wall)
    state.pool = [1] * len(state.pool)
    return other


def test_a_view_does_not_depend_on_what_the_seat_cannot_see() -> None:
    checked = 0

    def probe(table: Table, seat: int, action: Action) -> dict[str, Any]:
        nonlocal checked
        fields = view_encoder(table, seat, action)
        assert view_encoder(hidden_changed(table, seat), seat, action) == fields
        assert "hand" not in fields["view"]["seats"][1 - seat] and "hand" in fields["view"]["seats"][seat]
        assert str(Action.parse(fields["action"])) == fields["action"]
        assert taken_among(fields["action"], fields["legal"]), (fields["action"], fields["legal"])
        json.dumps(fields)  # JSON-able
        checked += 1
        return fields

    for replay in all_replays():
        list(decisions(replay, {0, 1}, probe))
    assert checked == sum(len(decision_seats(r)) for r in all_replays())


def settled(replay: archive_pb2.Replay, transfer: int, *, fee: int = 3) -> archive_pb2.Replay:
    """``replay`` as the archive serves it once the wallet applied it: SEAT_FIRST's player received
    ``transfer`` (negative: paid it), both paid ``fee``."""
    out = archive_pb2.Replay()
    out.CopyFrom(replay)
    first, second = (f"player:{p.player_id}" for p in sorted(out.players, key=lambda p: p.seat))
    result = out.result
    result.settled = True
    postings = result.settlement.postings
    if transfer:
        postings.add(account=first, amount=transfer, reason=TRANSFER)
        postings.add(account=second, amount=-transfer, reason=TRANSFER)
    for account in (first, second):
        postings.add(account=account, amount=-fee, reason=FEE)
        postings.add(account="house:fees", amount=fee, reason=FEE)
    return out


def test_a_seats_reward_is_the_hands_transfer_in_fan_without_fees() -> None:
    replay = replays("duel", 9, 0.3)[0]
    rate = replay.multipliers.fan_rate
    assert seat_rewards(replay) is None  # not settled yet
    assert seat_rewards(settled(replay, 8 * rate)) == (8.0, -8.0)
    assert seat_rewards(settled(replay, -3 * rate - rate // 2)) == (-3.5, 3.5)
    assert seat_rewards(settled(replay, 0)) == (0.0, 0.0)
    void = settled(replay, 0)
    void.result.outcome = archive_pb2.ARCHIVED_OUTCOME_VOID
    assert seat_rewards(void) is None


class FakeArchive:
    """The exporter's source over given replays: ``sharing`` players share; every hand is in one pairing."""

    def __init__(self, hands: list[archive_pb2.Replay], sharing: set[str], private: bool = False) -> None:
        self.by_id = {replay.hand_id: replay for replay in hands}
        self._sharing = sharing
        self.fetched: list[str] = []
        self.refused: set[str] = set()  # hands whose replay the archive does not serve now
        self.found: list[ArchivedHandOf] = []
        for number, replay in enumerate(hands):
            match = archive_pb2.MatchSummary(
                pairing_id=replay.pairing_id, profile=replay.rules.profile, private_table=private
            )
            hand = archive_pb2.ArchivedHand()
            hand.CopyFrom(replay.result)
            hand.hand_id = replay.hand_id
            hand.ended_at.FromDatetime(T0 + timedelta(minutes=number))
            self.found.append(ArchivedHandOf(match, hand))

    async def sharing(self) -> set[str]:
        return set(self._sharing)

    async def hands_of(self, player_id: str) -> list[ArchivedHandOf]:
        return list(self.found)  # every player played every hand here

    async def replay(self, hand_id: str) -> archive_pb2.Replay:
        self.fetched.append(hand_id)
        if hand_id in self.refused:
            raise HandUnavailable(f"hand {hand_id}: the archive answered FAILED_PRECONDITION: not yet")
        return self.by_id[hand_id]


def renamed(replay: archive_pb2.Replay, hand_id: str, players: tuple[str, str]) -> archive_pb2.Replay:
    out = archive_pb2.Replay()
    out.CopyFrom(replay)
    out.hand_id = out.result.hand_id = hand_id
    for player in out.players:
        player.player_id = players[0] if player.seat == FIRST else players[1]
    return out


def run_export(
    archive: FakeArchive, options: ExportOptions | None = None, **kw: Any
) -> tuple[list[Any], Any]:
    sink = io.StringIO()
    summary = asyncio.run(export(archive, sink, options, **kw))
    return [json.loads(line) for line in sink.getvalue().splitlines()], summary


def test_only_the_seats_of_players_who_share_are_exported_with_their_rewards() -> None:
    duel, erren = replays("duel", 19, 0.3)[0], replays("erren", 3, 0.0)[1]
    rate = duel.multipliers.fan_rate
    hands = [
        settled(renamed(duel, "h-duel", ("ann", "bob")), 6 * rate),
        settled(renamed(erren, "h-erren", ("bob", "ann")), -2 * erren.multipliers.fan_rate),
    ]
    records, summary = run_export(FakeArchive(hands, {"ann"}))
    # ann sat first in the duel hand, second in the erren one: only her decisions.
    expected = [("h-duel", 0, n) for n in range(decision_seats(hands[0]).count(0))]
    expected += [("h-erren", 1, n) for n in range(decision_seats(hands[1]).count(1))]
    assert [(r["hand"], r["seat"], r["decision"]) for r in records] == expected
    assert {r["hand"]: r["reward"] for r in records} == {"h-duel": 6.0, "h-erren": 2.0}
    assert {r["hand"]: r["profile"] for r in records} == {"h-duel": "duel", "h-erren": "erren"}
    assert all(taken_among(r["action"], r["legal"]) for r in records)
    assert {r["origin"] for r in records} <= {"player", "timeout", "autoplay", "locked_hand"}
    assert "ann" not in json.dumps(records) and "bob" not in json.dumps(records)  # no player ids
    assert (summary.hands, summary.records, summary.players_sharing) == (2, len(records), 1)
    assert not summary.left_out

    both, _ = run_export(FakeArchive(hands, {"ann", "bob"}))
    assert len(both) == sum(len(decision_seats(h)) for h in hands)
    nobody, summary = run_export(FakeArchive(hands, {"cid"}))
    assert nobody == [] and summary.hands == 0


def test_the_exporter_leaves_out_unsettled_void_private_and_unwanted_hands() -> None:
    duel = replays("duel", 9, 0.3)[0]
    rate = duel.multipliers.fan_rate
    ready = settled(renamed(duel, "h-ready", ("ann", "bob")), rate)
    pending = renamed(duel, "h-pending", ("ann", "bob"))
    void = settled(renamed(duel, "h-void", ("ann", "bob")), 0)
    void.result.outcome = archive_pb2.ARCHIVED_OUTCOME_VOID
    archive = FakeArchive([ready, pending, void], {"ann"})
    records, summary = run_export(archive)
    assert {r["hand"] for r in records} == {"h-ready"}
    assert summary.left_out == {NOT_SETTLED: 1, VOID: 1}
    assert archive.fetched == ["h-ready"]  # a replay is only read for a hand to write

    archive.refused.add("h-ready")  # e.g. an earlier hand of its table not archived yet
    records, summary = run_export(archive)
    assert records == [] and summary.left_out[NOT_SERVED] == 1 and "h-ready" in summary.problems[0]
    archive.refused.clear()

    assert run_export(FakeArchive([ready], {"ann"}, private=True))[0] == []
    assert run_export(archive, ExportOptions(profile="erren"))[0] == []
    assert run_export(archive, ExportOptions(since=T0 + timedelta(seconds=30)))[1].hands == 0
    assert run_export(archive, ExportOptions(since=T0))[1].hands == 1

    erren = [settled(renamed(r, f"h-{n}", ("ann", "bob")), 0) for n, r in enumerate(replays("erren", 3, 0.0))]
    records, summary = run_export(FakeArchive(erren, {"bob"}), ExportOptions(limit=2))
    assert summary.hands == 2 and {r["hand"] for r in records} == {"h-0", "h-1"}  # oldest first


def test_an_encoder_may_not_write_the_exporters_fields_and_a_broken_hand_is_left_out() -> None:
    duel = settled(renamed(replays("duel", 9, 0.3)[0], "h1", ("ann", "bob")), 0)
    with pytest.raises(EncoderError, match="reward"):
        run_export(FakeArchive([duel], {"ann"}), encoder=lambda t, s, a: {"reward": 1})
    broken = archive_pb2.Replay()
    broken.CopyFrom(duel)
    decision = next(step for step in broken.steps if step.HasField("decision"))
    decision.decision.action.Clear()
    with pytest.raises(HandNotReplayable, match="h1, step"):
        list(decisions(broken, {0, 1}, view_encoder))
    records, summary = run_export(FakeArchive([broken], {"ann"}))
    assert records == [] and summary.left_out == {"not replayable": 1} and "h1" in summary.problems[0]


def test_encoders_combine_and_may_not_write_the_same_field() -> None:
    replay = replays("duel", 9, 0.3)[0]

    def indices(table: Table, seat: int, action: Action) -> dict[str, Any]:
        return {
            "action_indices": [table.legal_actions(seat).index(action)]
            if action in table.legal_actions(seat)
            else []
        }

    both = list(decisions(replay, {0}, combined(view_encoder, indices)))
    alone = list(decisions(replay, {0}, view_encoder))
    assert [{k: v for k, v in d.fields.items() if k != "action_indices"} for d in both] == [
        d.fields for d in alone
    ]
    assert all("action_indices" in d.fields for d in both)
    with pytest.raises(ValueError, match="action"):
        list(decisions(replay, {0}, combined(view_encoder, view_encoder)))
