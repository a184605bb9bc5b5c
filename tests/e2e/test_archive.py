"""Match history and replays on the whole stack (``make run``'s four service processes, embedded NATS
and Postgres): two players play a duel pairing and an erren pairing; scoring archives every hand it
verified with what the wallet's ledger moved; each player's ListMatches shows both pairings with the
right counts and prestige moved equal to their wallet history for those tables; GetMatch lists the
hands with both ratings as each HandSettled showed them, and each pairing's rating change ending where
GetRating is; GetReplay gives the whole hand, ending in its reveal; ``duel replay`` and ``duel verify``
read a hand just played from the stack's archive (and ``duel replay --html`` writes its page)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from duelmahjong.client.history import MatchHistory
from duelmahjong.client.play import MatchPlan, PlayOutcome
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import archive_pb2, rules_pb2, wallet_pb2
from tests.cli import duel

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

HANDS = 2
ROOMS = [
    {
        "room_id": "archive-duel",
        "profile": "duel",
        "fan_rate": 2,
        "fee": 3,
        "carry_min": 100,
        "items_enabled": True,
    },
    {"room_id": "archive-erren", "profile": "erren", "fan_rate": 1, "fee": 3, "carry_min": 100},
]
REVEALED_KINDS = {"hand_revealed"}


@pytest.fixture(scope="module")
def stack(stack_with: Any) -> Iterator[StackState]:
    with stack_with("archive", {"MATCHMAKING_ROOMS": json.dumps(ROOMS)}) as state:
        yield state


async def play_pairing(clients: list[DuelClient], room: str, hands: int = HANDS) -> list[PlayOutcome]:
    readies = await asyncio.gather(*(c.find_table(room, 200, multiplier=2) for c in clients))
    played = list(
        await asyncio.gather(
            *(c.play(r, BaselineBot(), MatchPlan(hands=hands)) for c, r in zip(clients, readies, strict=True))
        )
    )
    await pairing_over(clients)
    return played


async def pairing_over(clients: list[DuelClient]) -> None:
    """Wait until the pairing's TableClosed reached the wallet (it releases the holds): a player queues
    once at a time, so the next pairing may only be sought after that."""
    for _ in range(300):
        if not any([(await c.balance()).held for c in clients]):
            return
        await asyncio.sleep(0.1)
    pytest.fail("the holds were not released after the table closed")


@contextlib.asynccontextmanager
async def signed_in(stack: StackState, names: tuple[str, str]) -> AsyncIterator[list[DuelClient]]:
    """Two players logged in to the stack's wallet, closed afterwards."""
    clients = [
        DuelClient(
            tls=stack.client_tls(),
            wallet=stack.services["wallet"].grpc,
            matchmaking=stack.target("matchmaking"),
        )
        for _ in names
    ]
    try:
        for client, name in zip(clients, names, strict=True):
            await client.login(name)
        yield clients
    finally:
        for client in clients:
            await client.close()


def by_seat(changes: Any) -> list[wallet_pb2.RatingChange]:
    return sorted(changes, key=lambda change: change.seat)


async def history_of(client: DuelClient) -> list[wallet_pb2.HistoryEntry]:
    entries: list[wallet_pb2.HistoryEntry] = []
    token = ""
    while True:
        page = await client.wallet.ListHistory(
            wallet_pb2.ListHistoryRequest(page_size=100, page_token=token), metadata=client.metadata
        )
        entries.extend(page.entries)
        token = page.next_page_token
        if not token:
            return entries


async def archived(history: MatchHistory, tables: set[str]) -> list[archive_pb2.MatchSummary]:
    """The caller's pairings once every hand of ``tables`` is archived and settled (or the last seen)."""
    matches: list[archive_pb2.MatchSummary] = []
    for _ in range(150):
        matches = await history.all_matches()
        done = [m for m in matches if m.table_id in tables and m.hands == HANDS]
        if len(done) == len(tables):
            hands = [h for m in done for h in (await history.match(m.pairing_id)).hands]
            if all(h.settled for h in hands):
                return matches
        await asyncio.sleep(0.2)
    return matches


def service_errors(stack: StackState) -> list[str]:
    return [
        f"{log.stem}: {line[:2000]}"
        for log in sorted(Path(stack.logs_dir).glob("*.log"))
        for line in log.read_text().splitlines()
        if '"level": "ERROR"' in line
    ]


async def test_the_players_histories_and_replays_are_the_hands_they_played(stack: StackState) -> None:
    async with signed_in(stack, ("ann", "bob")) as clients:
        outcomes = {str(room["profile"]): await play_pairing(clients, str(room["room_id"])) for room in ROOMS}
        tables = {profile: played[0].table_id for profile, played in outcomes.items()}
        for played in outcomes.values():
            assert [o.hands_settled for o in played] == [HANDS, HANDS], [o.ended_reason for o in played]

        scoring = stack.services["scoring"].grpc
        for me, client in enumerate(clients):
            async with MatchHistory(scoring=scoring, token=client.token, tls=client.tls) as history:
                matches = await archived(history, set(tables.values()))
                by_table = {m.table_id: m for m in matches}
                assert set(tables.values()) <= set(by_table), matches
                assert [m.table_id for m in matches[:2]] == [tables["erren"], tables["duel"]]  # newest first
                entries = await history_of(client)
                rated = await client.wallet.GetRating(wallet_pb2.GetRatingRequest(), metadata=client.metadata)
                for profile, table_id in tables.items():
                    match = by_table[table_id]
                    room = next(r for r in ROOMS if r["profile"] == profile)
                    assert match.room_id == room["room_id"] and match.profile == (
                        rules_pb2.PROFILE_DUEL if profile == "duel" else rules_pb2.PROFILE_ERREN
                    )
                    assert match.player.player_id == client.player_id and match.player.display_name
                    assert match.opponent.player_id == clients[1 - me].player_id and not match.opponent_is_bot
                    assert match.hands == HANDS
                    assert match.hands_won + match.hands_lost + match.hands_drawn + match.hands_other == HANDS
                    reveals = outcomes[profile][me].reveals
                    drawn = sum(1 for r in reveals if r.outcome == rules_pb2.HAND_OUTCOME_DRAWN)
                    assert match.hands_drawn == drawn
                    # What the ledger moved on this player's account for the table's hands.
                    ledger = sum(e.amount for e in entries if table_id in e.reference)
                    assert match.prestige_moved == ledger, (
                        profile,
                        [e for e in entries if table_id in e.reference],
                    )
                    assert (
                        match.started_at.seconds
                        and match.last_hand_at.ToDatetime() >= match.started_at.ToDatetime()
                    )

                    got = await history.match(match.pairing_id)
                    assert got.match == match
                    assert [h.hand_number for h in got.hands] == list(range(1, HANDS + 1))
                    assert (
                        sum(m.amount for h in got.hands for m in h.moved if m.player_id == client.player_id)
                        == ledger
                    )
                    for hand, reveal in zip(got.hands, reveals, strict=True):
                        assert (
                            hand.outcome
                            == {
                                rules_pb2.HAND_OUTCOME_WIN: archive_pb2.ARCHIVED_OUTCOME_WIN,
                                rules_pb2.HAND_OUTCOME_DRAWN: archive_pb2.ARCHIVED_OUTCOME_DRAWN,
                            }[reveal.outcome]
                        )
                        assert hand.settled and hand.table_id == table_id
                        if hand.outcome == archive_pb2.ARCHIVED_OUTCOME_WIN:
                            assert hand.winner == reveal.winner and hand.evaluation.total_fan > 0
                    # Both ratings of each hand as its HandSettled showed them; over the pairing, this
                    # player's from before its first hand to where GetRating is (its only pairing in
                    # the profile).
                    settled = outcomes[profile][me].settlements
                    assert [by_seat(h.ratings) for h in got.hands] == [by_seat(s.ratings) for s in settled]
                    assert all(len(h.ratings) == 2 for h in got.hands)
                    mine = [c for s in settled for c in s.ratings if c.player_id == client.player_id]
                    now = next(r for r in rated.ratings if r.profile == match.profile)
                    assert match.rating_change == wallet_pb2.RatingChange(
                        seat=match.player.seat, player_id=client.player_id, before=mine[0].before, after=now
                    )
                    assert match.rating_change.before.hands_rated + HANDS == now.hands_rated

        # Another signed-in player may see the public hands and their replays.
        async with DuelClient(
            tls=stack.client_tls(),
            wallet=stack.services["wallet"].grpc,
            matchmaking=stack.target("matchmaking"),
        ) as third:
            await third.login("cid")
            async with MatchHistory(scoring=scoring, token=third.token, tls=third.tls) as history:
                theirs = await history.all_matches(clients[0].player_id)
                assert set(tables.values()) <= {m.table_id for m in theirs}
                for table_id in tables.values():
                    match = next(m for m in theirs if m.table_id == table_id)
                    last = (await history.match(match.pairing_id)).hands[-1]
                    replay = await history.replay(last.hand_id)
                    assert (replay.hand_id, replay.table_id, replay.pairing_id) == (
                        last.hand_id,
                        table_id,
                        match.pairing_id,
                    )
                    assert replay.result == last
                    final = replay.steps[-1]
                    assert final.event.first_seat.WhichOneof("kind") in REVEALED_KINDS
                    assert all(seat.concealed for seat in final.state.seats)  # both hands face up
                    assert replay.fairness.seed and len(replay.fairness.commitment) == 32
                with pytest.raises(grpc.aio.AioRpcError) as unknown:
                    await history.replay(f"{tables['duel']}-h99")
                assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    assert not service_errors(stack), "\n".join(service_errors(stack))


async def test_duel_replay_and_verify_read_a_hand_just_played_from_the_archive(
    stack: StackState, tmp_path: Path
) -> None:
    async with signed_in(stack, ("cli-ann", "cli-bob")) as clients:
        played = await play_pairing(clients, "archive-duel", hands=1)
        assert [o.hands_settled for o in played] == [1, 1], [o.ended_reason for o in played]
        hand_id = played[0].hand_ids[-1]
        async with MatchHistory(
            scoring=stack.services["scoring"].grpc, token=clients[0].token, tls=clients[0].tls
        ) as history:
            for _ in range(150):
                try:
                    replay = await history.replay(hand_id)
                    break
                except grpc.aio.AioRpcError as not_yet:
                    assert not_yet.code() == grpc.StatusCode.NOT_FOUND, not_yet
                    await asyncio.sleep(0.2)
            else:
                raise AssertionError(f"hand {hand_id} was never archived")
    # As a guest of the stack's wallet, from the scoring service's archive.
    where = ["--scoring", stack.services["scoring"].grpc, "--wallet", stack.services["wallet"].grpc]
    where += ["--ca-file", stack.ca_file]

    code, out, err = await duel("replay", hand_id, *where)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"hand {hand_id}: hand 1 of table {played[0].table_id}, room archive-duel")
    assert f"seed {replay.fairness.seed.hex()}" in out
    steps = [line for line in lines if line[:4].strip().isdigit()]
    assert [int(line[:4]) for line in steps] == [step.index for step in replay.steps]
    events = [step.event.summary for step in replay.steps if step.HasField("event")]
    assert all(summary in out for summary in events)
    assert sum("decides:" in line for line in steps) == sum(s.HasField("decision") for s in replay.steps)

    code, out, err = await duel("verify", hand_id, *where)
    assert code == 0, out + err
    assert out.splitlines()[-1] == "verified: the hand followed from its committed seed and its decisions"
    assert "FAIL" not in out and out.count("ok  ") >= 4

    page = tmp_path / "hand.html"
    code, out, err = await duel("replay", hand_id, "--html", str(page), *where)
    assert code == 0, err
    assert out.strip() == f"{page}: hand {hand_id}, {len(replay.steps)} steps, verified"
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and hand_id in html
