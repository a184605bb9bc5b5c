"""``duel export`` on the whole stack (``make run``'s four service processes, embedded NATS and
Postgres): two players play a duel pairing, one of them consenting (``duel consent on``), the other
not. The export, run as an operator (an admin token minted from the stack's key), holds only the
consenting seat's decisions: as many records as that seat's decisions in the archived replays, none
of which shows the opponent's concealed tiles, each hand's reward being what the archive's settlement
moved for that seat, in 1番. Once the other player consents too, both seats are exported."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from duelmahjong.client.history import MatchHistory
from duelmahjong.env.records import samples
from duelmahjong.platform.stackfile import StackState
from duelmahjong.rules.tiles import counts_of, parse_tiles
from duelmahjong.v1 import archive_pb2, rules_pb2
from tests.cli import duel
from tests.e2e.test_archive import play_pairing, service_errors, signed_in

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

HANDS = 2
SECRET = "export-test-key-" + "k" * 32
ROOMS = [
    {
        "room_id": "export-duel",
        "profile": "duel",
        "fan_rate": 2,
        "fee": 3,
        "carry_min": 100,
        "items_enabled": True,
    }
]
# What a view may say of the other seat: nothing of its concealed tiles but how many (hand_size), its
# doubling only once both are revealed (erren), never its items.
PUBLIC_SEAT_KEYS = {
    "seat",
    "wind",
    "dealer",
    "hand_size",
    "melds",
    "discards",
    "flowers",
    "declared_ready",
    "win_doublings",
    "doubling",
}
RESULT_REASONS = {rules_pb2.POSTING_REASON_HAND_TRANSFER, rules_pb2.POSTING_REASON_ESCAPE_PENALTY}


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    settings = {"MATCHMAKING_ROOMS": json.dumps(ROOMS), "TOKEN_SECRET": SECRET}
    with stack_with("export", settings) as state:
        yield state


async def archived_replays(history: MatchHistory, table_id: str) -> list[archive_pb2.Replay]:
    """The table's hands once all are archived and settled."""
    for _ in range(300):
        matches = [m for m in await history.all_matches() if m.table_id == table_id]
        if matches and matches[0].hands == HANDS:
            hands = (await history.match(matches[0].pairing_id)).hands
            if all(h.settled for h in hands):
                return [await history.replay(h.hand_id) for h in hands]
        await asyncio.sleep(0.2)
    raise AssertionError(f"the hands of table {table_id} were not archived and settled")


def seat_of(replay: archive_pb2.Replay, player_id: str) -> int:
    seat = next(p.seat for p in replay.players if p.player_id == player_id)
    return 0 if seat == rules_pb2.SEAT_FIRST else 1


def decision_steps(replay: archive_pb2.Replay, seat: int) -> list[archive_pb2.ReplayStep]:
    wanted = rules_pb2.SEAT_FIRST if seat == 0 else rules_pb2.SEAT_SECOND
    return [s for s in replay.steps if s.HasField("decision") and s.decision.seat == wanted]


def moved_for_result(replay: archive_pb2.Replay, player_id: str) -> int:
    """What the hand's transfer moved for the player, read from the settlement's transfer (not from
    its postings, which the exporter reads)."""
    transfer = replay.result.settlement.transfer
    if transfer.to_player_id == player_id:
        return transfer.amount
    if transfer.from_player_id == player_id:
        return -transfer.amount
    return 0


async def export(stack: StackState, out: Path, *more: str) -> tuple[list[dict[str, Any]], str]:
    where = ["--wallet", stack.services["wallet"].grpc, "--scoring", stack.services["scoring"].grpc]
    where += ["--ca-file", stack.ca_file, "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k not in ("DUEL_TOKEN",)} | {"TOKEN_SECRET": SECRET}
    code, stdout, stderr = await duel("export", *where, *more, env=env)
    assert code == 0, stderr
    assert stdout == ""
    return json_lines(out), stderr


def files_in(directory: Path) -> list[Path]:
    return sorted(directory.iterdir())


def json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_only_the_consenting_seat_is_exported_and_nothing_of_the_other(
    stack: StackState, tmp_path: Path
) -> None:
    async with signed_in(stack, ("ann", "bob")) as clients:
        ann, bob = clients
        where = ["--wallet", stack.services["wallet"].grpc, "--matchmaking", stack.target("matchmaking")]
        where += ["--ca-file", stack.ca_file]
        code, out, err = await duel("consent", "on", "--token", ann.token, *where)
        assert code == 0 and "on (since" in out, err
        assert not (await bob.data_sharing()).share_hands  # never chosen: off

        played = await play_pairing(clients, "export-duel", hands=HANDS)
        assert [o.hands_settled for o in played] == [HANDS, HANDS], [o.ended_reason for o in played]
        async with MatchHistory(
            scoring=stack.services["scoring"].grpc, token=ann.token, tls=ann.tls
        ) as history:
            replays = await archived_replays(history, played[0].table_id)

        records, summary = await export(stack, tmp_path / "hands.jsonl", "--format", "both")
        by_hand = {r.hand_id: r for r in replays}
        assert {record["hand"] for record in records} == set(by_hand)
        total_reward, total_moved = 0.0, 0
        for hand_id, replay in by_hand.items():
            mine = seat_of(replay, ann.player_id)
            theirs = 1 - mine
            steps = decision_steps(replay, mine)
            hand_records = [r for r in records if r["hand"] == hand_id]
            assert [r["seat"] for r in hand_records] == [mine] * len(steps)  # no record of bob's seat
            assert [r["decision"] for r in hand_records] == list(range(len(steps)))
            assert [r["step"] for r in hand_records] == [s.index for s in steps]
            for record, step in zip(hand_records, steps, strict=True):
                view = record["view"]
                assert view["seat"] == mine and PUBLIC_SEAT_KEYS >= view["seats"][theirs].keys()
                # ann's own hand as it stood at the decision (the replay's, both hands face up) ...
                own = step.state.seats[mine]
                assert sorted(parse_tiles(view["seats"][mine]["hand"])) == sorted(
                    parse_tiles(own.concealed + own.drawn_tile)
                )
                # ... and bob's only as a count: his concealed tiles appear nowhere in the record (as
                # text, when there are enough of them that the text could not be a part of ann's)
                hidden = step.state.seats[theirs]
                assert view["seats"][theirs]["hand_size"] == len(
                    parse_tiles(hidden.concealed + hidden.drawn_tile)
                )
                # The env's record of the same decision: the seat's own tiles as counts, the other's
                # size only, and steps a learner reads back as the env's planes, mask and index.
                observation = record["observation"]
                assert observation["hand"] == counts_of(parse_tiles(own.concealed + own.drawn_tile))
                assert observation["hand_sizes"][theirs] == view["seats"][theirs]["hand_size"]
                replayed = list(samples(record))
                assert replayed and all(sample.mask[sample.index] for sample in replayed)
                if len(parse_tiles(hidden.concealed)) >= 5:
                    assert hidden.concealed not in json.dumps(record, ensure_ascii=False)
            rate = replay.multipliers.fan_rate or replay.rules.fan_rate
            postings = sum(
                p.amount
                for p in replay.result.settlement.postings
                if p.account == f"player:{ann.player_id}" and p.reason in RESULT_REASONS
            )
            assert moved_for_result(replay, ann.player_id) == postings
            assert {r["reward"] for r in hand_records} == {postings / rate}
            total_reward += hand_records[0]["reward"]
            total_moved += postings
        rate = replays[0].multipliers.fan_rate or replays[0].rules.fan_rate
        assert total_reward * rate == total_moved
        assert f"{len(records)} decisions of {HANDS} hands exported" in summary

        # Nothing else: another profile, a time after the hands, a limit.
        assert (await export(stack, tmp_path / "erren.jsonl", "--profile", "erren"))[0] == []
        assert (await export(stack, tmp_path / "later.jsonl", "--since", "2999-01-01"))[0] == []
        limited, _ = await export(stack, tmp_path / "one.jsonl", "--limit", "1")
        assert {r["hand"] for r in limited} == {replays[0].hand_id}

        # bob consents too: both seats, every decision of the hands.
        await bob.set_data_sharing(True)
        both, _ = await export(stack, tmp_path / "both.jsonl")
        assert len(both) == sum(1 for r in replays for s in r.steps if s.HasField("decision"))
        # and ann withdraws: only bob's seat from now on.
        code, out, err = await duel("consent", "off", "--token", ann.token, *where)
        assert code == 0 and "off (since" in out, err
        after, _ = await export(stack, tmp_path / "after.jsonl")
        assert len(after) == len(both) - len(records)
    assert not service_errors(stack), "\n".join(service_errors(stack))


async def test_export_needs_an_admin_token(stack: StackState, tmp_path: Path) -> None:
    async with signed_in(stack, ("cid", "dee")) as clients:
        where = ["--wallet", stack.services["wallet"].grpc, "--scoring", stack.services["scoring"].grpc]
        where += ["--ca-file", stack.ca_file, "--out", str(tmp_path / "x.jsonl")]
        env = {k: v for k, v in os.environ.items() if k not in ("TOKEN_SECRET", "DUEL_TOKEN")}
        code, _, err = await duel("export", *where, "--token", clients[0].token, env=env)
        assert code == 1 and "PERMISSION_DENIED" in err, err
        assert files_in(tmp_path) == []  # no file, not even a partial one
        code, _, err = await duel("export", *where, env=env)
        assert code == 1 and "no admin token" in err, err
