"""The archive on real NATS and Postgres: scoring stores each hand it verified once, whatever is
redelivered, as its own slice of the table's log (the opening once per table); the wallet's answers
(what moved, both ratings) are kept by hand in whatever order they come; a hand archived before an
earlier hand of its table is replayed once that one is there too; a table closed mid-hand leaves its
hand VOID; ArchiveService serves it all over real gRPC, private tables to their players only."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import grpc
import pytest
import pytest_asyncio
from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.engine.outcome import Outcome
from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import archive_pb2, archive_pb2_grpc, events_pb2, rules_pb2, server_state_pb2, wallet_pb2
from services.scoring.archive_facts import ArchivedPlayer, HandEntry
from services.scoring.archive_store import ArchiveStore, Posting, TransactionRow
from services.scoring.config import ScoringConfig
from services.scoring.main import SPEC as SCORING
from services.scoring.replay import HandPointer
from tests.integration.test_scoring_replay import LoggedTable, bot_hand, hand_ended, write_log

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
SEATS = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)


def opened_table(profile: str = "duel") -> LoggedTable:
    """A logged table whose log starts as a real table's does: with its opening."""
    name = secrets.token_hex(4)
    table = LoggedTable(profile, players=((f"ann-{name}", 5000), (f"bob-{name}", 5000)))
    opening = server_state_pb2.TableOpening(
        table_id=table.table_id,
        pairing_id=f"p-{table.table_id}",
        room_id="room-test",
        rules=table.rules,
        players=table.players,
        negotiated_multiplier=1,
    )
    table.records.clear()  # a real table's log starts with its opening, then the engine's first event
    table._write([server_state_pb2.TableLogRecord(table_opening=opening)], table.engine.events[:1])
    return table


async def write_table_log(bus: Bus, table: LoggedTable) -> None:
    """The log on NATS, each HandBegun naming its hand as a real table's does."""
    for appended in table.records:
        if appended.record.WhichOneof("kind") == "hand_begun":
            appended.record.hand_begun.hidden.table_id = table.table_id
            appended.record.hand_begun.hidden.hand_id = appended.hand_id
    await write_log(bus, table)


def hand_result(table: LoggedTable, outcome: Outcome) -> rules_pb2.HandResult:
    """What the test knows of the hand just played: its ids, number, players, winner and where its log
    ends (the table publishes only the pointer; scoring replays the rest)."""
    return rules_pb2.HandResult(
        table_id=table.table_id,
        hand_id=table.hand_id,
        hand_number=outcome.hand,
        players=table.players,
        winner=SEATS[outcome.winner] if outcome.winner >= 0 else rules_pb2.SEAT_UNSPECIFIED,
        last_sequence=len(table.records),
    )


async def end(bus: Bus, result: rules_pb2.HandResult, event_id: str = "") -> None:
    """The table's HandEnded for the hand: where it ends in the log."""
    await hand_ended(bus, HandPointer(result.table_id, result.hand_id, result.last_sequence), event_id)


def won_hand() -> tuple[LoggedTable, rules_pb2.HandResult]:
    for seed in range(1, 200):
        table = opened_table()
        outcome = bot_hand(table, seed)
        if outcome.win is not None:
            return table, hand_result(table, outcome)
    raise AssertionError("no won hand in 200 seeds")


def applied(
    table_id: str,
    hand_id: str,
    transaction: str,
    postings: Sequence[tuple[str, int, rules_pb2.PostingReason.ValueType]],
    *,
    own: bool,
    ratings: Sequence[wallet_pb2.RatingChange] = (),
) -> events_pb2.SettlementApplied:
    entries = [rules_pb2.Posting(account=a, amount=n, reason=r) for a, n, r in postings]
    event = events_pb2.SettlementApplied(
        envelope=events_pb2.EventEnvelope(event_id=f"wallet:{transaction}"),
        source_event_id=f"source:{transaction}",
        transaction_id=transaction,
        table_id=table_id,
        hand_id=hand_id,
        hand_transaction=own,
        postings=entries,
        ratings=ratings,
    )
    if own:
        event.settlement.CopyFrom(rules_pb2.Settlement(hand_id=hand_id, total_fan=8, postings=entries))
    return event


async def publish_twice(bus: Bus, event: events_pb2.SettlementApplied) -> None:
    """The event, and a redelivery of it past JetStream's duplicate window (another message id)."""
    await bus.publish_event(subjects.SETTLEMENT_APPLIED, event)
    again = events_pb2.SettlementApplied()
    again.CopyFrom(event)
    again.envelope.event_id += ":again"
    await bus.publish_event(subjects.SETTLEMENT_APPLIED, again)


async def until(check: Callable[[], Any], within: float = 20.0) -> Any:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = await check()
        if value or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(0.2)


@pytest_asyncio.fixture
async def archive(
    start_service: Any,
    service_env: dict[str, str],
    database_url: str,
    scoring_database_url: str,
    client_tls: ClientTls,
) -> AsyncIterator[tuple[Any, asyncpg.Connection]]:
    runtime = await start_service(
        SCORING, ScoringConfig.from_env({**service_env, "SCORING_DATABASE_URL": scoring_database_url})
    )
    conn = await asyncpg.connect(database_url)
    async with client_tls.channel(runtime.server.address) as channel:
        yield archive_pb2_grpc.ArchiveServiceStub(channel), conn
    await conn.close()


async def test_a_verified_hand_is_archived_once_with_what_the_ledger_moved(
    archive: tuple[Any, asyncpg.Connection], bus: Bus, issue: Callable[..., Any]
) -> None:
    stub, conn = archive
    table, result = won_hand()
    ann, bob = (p.player_id for p in result.players)
    winner = result.players[0 if result.winner == rules_pb2.SEAT_FIRST else 1].player_id
    loser = bob if winner == ann else ann
    # The wallet's answers first (out of order): the hand's transaction and a 换牌 of the hand.
    hand_postings = [
        (f"player:{winner}", 80, rules_pb2.POSTING_REASON_HAND_TRANSFER),
        (f"player:{loser}", -80, rules_pb2.POSTING_REASON_HAND_TRANSFER),
        (f"player:{ann}", -5, rules_pb2.POSTING_REASON_FEE),
        (f"player:{bob}", -5, rules_pb2.POSTING_REASON_FEE),
        ("house:fees", 10, rules_pb2.POSTING_REASON_FEE),
    ]
    exchange = [
        (f"player:{ann}", -3, rules_pb2.POSTING_REASON_EXCHANGE),
        ("house:exchanges", 3, rules_pb2.POSTING_REASON_EXCHANGE),
    ]
    tx = secrets.token_hex(4)
    await publish_twice(bus, applied(table.table_id, result.hand_id, f"{tx}1", hand_postings, own=True))
    await publish_twice(bus, applied(table.table_id, result.hand_id, f"{tx}2", exchange, own=False))
    await write_table_log(bus, table)
    await end(bus, result)
    await end(bus, result, event_id="hand_ended:redelivered")

    async def archived() -> bool:
        rows = await conn.fetchval("SELECT count(*) FROM archive.hands WHERE hand_id = $1", result.hand_id)
        moved = await conn.fetchval(
            "SELECT count(*) FROM archive.postings WHERE transaction_id LIKE $1", f"{tx}%"
        )
        return bool(rows == 1 and moved == 7)

    assert await until(archived)
    await asyncio.sleep(1.0)  # room for a second, wrong row from the redeliveries
    assert await conn.fetchval("SELECT count(*) FROM archive.hands WHERE hand_id = $1", result.hand_id) == 1
    assert (
        await conn.fetchval("SELECT count(*) FROM archive.transactions WHERE hand_id = $1", result.hand_id)
        == 2
    )
    assert (
        await conn.fetchval("SELECT count(*) FROM archive.postings WHERE transaction_id LIKE $1", f"{tx}%")
        == 7
    )

    listed = await stub.ListMatches(archive_pb2.ListMatchesRequest(), metadata=issue(ann), timeout=10)
    (match,) = listed.matches
    assert (match.pairing_id, match.table_id, match.room_id) == (
        f"p-{table.table_id}",
        table.table_id,
        "room-test",
    )
    assert match.profile == rules_pb2.PROFILE_DUEL
    assert (match.player.player_id, match.opponent.player_id, match.opponent_is_bot) == (ann, bob, False)
    assert (match.hands, match.hands_won + match.hands_lost, match.hands_drawn, match.hands_other) == (
        1,
        1,
        0,
        0,
    )
    mine = (80 if winner == ann else -80) - 5 - 3
    assert match.prestige_moved == mine
    assert match.result == (archive_pb2.MATCH_RESULT_WON if winner == ann else archive_pb2.MATCH_RESULT_LOST)
    assert match.started_at.seconds and match.last_hand_at.seconds and not match.private_table
    assert not listed.next_page_token

    got = await stub.GetMatch(archive_pb2.GetMatchRequest(pairing_id=match.pairing_id), metadata=issue(bob))
    assert got.match.player.player_id == bob
    (hand,) = got.hands
    assert (hand.hand_id, hand.hand_number, hand.outcome) == (
        result.hand_id,
        1,
        archive_pb2.ARCHIVED_OUTCOME_WIN,
    )
    assert hand.winner == result.winner and hand.escaper == rules_pb2.SEAT_UNSPECIFIED
    assert hand.evaluation.total_fan > 0 and hand.settled and hand.settlement.total_fan == 8
    assert [(m.seat, m.player_id, m.amount) for m in hand.moved] == [
        (rules_pb2.SEAT_FIRST, ann, mine),
        (rules_pb2.SEAT_SECOND, bob, (80 if winner == bob else -80) - 5),
    ]
    assert hand.ended_at.ToDatetime() >= hand.started_at.ToDatetime()

    replay = (
        await stub.GetReplay(archive_pb2.GetReplayRequest(hand_id=result.hand_id), metadata=issue("zed"))
    ).replay
    assert replay.hand_id == result.hand_id and replay.result == hand


async def test_a_table_closed_mid_hand_leaves_its_hand_void(
    archive: tuple[Any, asyncpg.Connection], bus: Bus, issue: Callable[..., Any]
) -> None:
    stub, conn = archive
    table = opened_table("erren")
    table.deal(11)
    for _ in range(6):  # a few decisions into the hand, then the table is gone
        for seat in (0, 1):
            legal = [a for a in table.engine.legal_actions(seat) if a.kind != "leave"]
            if legal:
                table.play(legal[0])
                break
    assert table.engine.outcome is None
    await write_table_log(bus, table)
    closed_at = Timestamp(seconds=1_800_000_000)
    closed = events_pb2.TableClosed(
        envelope=events_pb2.EventEnvelope(
            event_id=subjects.table_closed_id(table.table_id), occurred_at=closed_at
        ),
        table_id=table.table_id,
        pairing_id=f"p-{table.table_id}",
        reason="server lost",
    )
    await bus.publish_event(subjects.TABLE_CLOSED, closed)
    found = await until(
        lambda: conn.fetchrow("SELECT * FROM archive.hands WHERE hand_id = $1", table.hand_id)
    )
    assert found is not None and found["outcome"] == archive_pb2.ARCHIVED_OUTCOME_VOID
    assert found["ended_at"] == closed_at.ToDatetime(tzinfo=UTC)
    # The hand's slice: from its HandBegun (the opening before it is kept with the pairing) to the end.
    begun = next(r.sequence for r in table.records if r.record.WhichOneof("kind") == "hand_begun")
    assert found["first_sequence"] == begun
    assert found["first_sequence"] + len(found["records"]) - 1 == len(table.records)
    opening = await conn.fetchval("SELECT opening FROM archive.pairings WHERE table_id = $1", table.table_id)
    assert [server_state_pb2.TableLogRecord.FromString(raw) for raw in opening] == [
        r.record for r in table.records[: begun - 1]
    ]
    got = await stub.GetMatch(
        archive_pb2.GetMatchRequest(pairing_id=f"p-{table.table_id}"),
        metadata=issue(table.players[0].player_id),
    )
    (hand,) = got.hands
    assert hand.outcome == archive_pb2.ARCHIVED_OUTCOME_VOID and not hand.settled
    assert got.match.hands_other == 1 and got.match.result == archive_pb2.MATCH_RESULT_EVEN


def entry(pairing: str, players: tuple[str, str], started: datetime, *, private: bool) -> HandEntry:
    return HandEntry(
        hand_id=f"{pairing}-h1",
        pairing_id=pairing,
        table_id=f"t-{pairing}",
        room_id="room-test",
        profile=rules_pb2.PROFILE_DUEL,
        hand_number=1,
        private_table=private,
        players=tuple(
            ArchivedPlayer(SEATS[i], p, p.upper(), p.startswith("bot-")) for i, p in enumerate(players)
        ),
        outcome=archive_pb2.ARCHIVED_OUTCOME_DRAWN,
        winner=rules_pb2.SEAT_UNSPECIFIED,
        escaper=rules_pb2.SEAT_UNSPECIFIED,
        evaluation=None,
        started_at=started,
        ended_at=started + timedelta(minutes=3),
        records=(),
        first_sequence=1,
        opening=(),
    )


@pytest_asyncio.fixture
async def store(database_url: str) -> AsyncIterator[ArchiveStore]:
    """The archive's store on a pool of its own, beside the running service."""
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    try:
        yield ArchiveStore(pool)
    finally:
        await pool.close()


async def test_a_hand_and_a_transaction_are_each_stored_once_in_one_statement(
    archive: tuple[Any, asyncpg.Connection], store: ArchiveStore
) -> None:
    _, db = archive
    pairing = f"po-{secrets.token_hex(4)}"
    first = entry(pairing, ("ann", "bot-2"), datetime(2030, 6, 1, tzinfo=UTC), private=False)
    second = dataclasses.replace(first, hand_id=f"{pairing}-h2", hand_number=2)
    assert await store.archive_hand(first) and await store.archive_hand(second)
    assert not await store.archive_hand(second)
    row = TransactionRow(
        transaction_id=f"tx-{pairing}",
        hand_id=first.hand_id,
        table_id=first.table_id,
        source_event_id=f"ev-{pairing}",
        hand_transaction=True,
        settlement=b"",
        postings=(
            Posting("player:ann", -120, rules_pb2.POSTING_REASON_HAND_TRANSFER),
            Posting("player:bot-2", 120, rules_pb2.POSTING_REASON_HAND_TRANSFER),
        ),
    )
    assert await store.record_transaction(row)
    assert not await store.record_transaction(dataclasses.replace(row, postings=row.postings[:1]))
    hands = await db.fetch("SELECT hand_number FROM archive.hands WHERE pairing_id = $1 ORDER BY 1", pairing)
    players = await db.fetch(
        "SELECT seat, player_id, is_bot FROM archive.pairing_players WHERE pairing_id = $1 ORDER BY seat",
        pairing,
    )
    postings = await db.fetch(
        "SELECT position, account, amount FROM archive.postings WHERE transaction_id = $1 ORDER BY 1",
        row.transaction_id,
    )
    assert [h["hand_number"] for h in hands] == [1, 2]
    assert [(p["seat"], p["player_id"], p["is_bot"]) for p in players] == [
        (rules_pb2.SEAT_FIRST, "ann", False),
        (rules_pb2.SEAT_SECOND, "bot-2", True),
    ]
    assert [tuple(p) for p in postings] == [(0, "player:ann", -120), (1, "player:bot-2", 120)]


async def test_private_tables_paging_and_refusals(
    archive: tuple[Any, asyncpg.Connection], store: ArchiveStore, issue: Callable[..., Any]
) -> None:
    stub, _ = archive
    me = f"me-{secrets.token_hex(4)}"
    base = datetime(2030, 5, 1, tzinfo=UTC)
    await store.archive_hand(entry(f"pa-{me}", (me, "bot-7"), base, private=False))
    await store.archive_hand(entry(f"pb-{me}", ("eve", me), base + timedelta(hours=1), private=False))
    await store.archive_hand(entry(f"pc-{me}", (me, "eve"), base + timedelta(hours=2), private=True))
    again = entry(f"pc-{me}", (me, "eve"), base + timedelta(hours=2), private=True)
    assert not await store.archive_hand(again)  # a hand is stored once

    first = await stub.ListMatches(archive_pb2.ListMatchesRequest(page_size=2), metadata=issue(me))
    assert [m.pairing_id for m in first.matches] == [f"pc-{me}", f"pb-{me}"]  # newest first
    assert first.matches[0].private_table and first.matches[1].player.seat == rules_pb2.SEAT_SECOND
    second = await stub.ListMatches(
        archive_pb2.ListMatchesRequest(page_size=2, page_token=first.next_page_token), metadata=issue(me)
    )
    assert [m.pairing_id for m in second.matches] == [f"pa-{me}"] and not second.next_page_token
    assert second.matches[0].opponent_is_bot and second.matches[0].result == archive_pb2.MATCH_RESULT_EVEN

    theirs = await stub.ListMatches(archive_pb2.ListMatchesRequest(player_id=me), metadata=issue("zed"))
    assert [m.pairing_id for m in theirs.matches] == [f"pb-{me}", f"pa-{me}"]  # no private table

    async def refused(call: Any, request: Any, who: str) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(request, metadata=issue(who), timeout=10)
        return err.value.code(), err.value.details() or ""

    code, details = await refused(stub.GetReplay, archive_pb2.GetReplayRequest(hand_id=f"pc-{me}-h1"), "zed")
    assert code == grpc.StatusCode.PERMISSION_DENIED and "private table" in details
    code, _ = await refused(stub.GetMatch, archive_pb2.GetMatchRequest(pairing_id=f"pc-{me}"), "zed")
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = await refused(stub.GetReplay, archive_pb2.GetReplayRequest(hand_id="t-nowhere-h1"), me)
    assert code == grpc.StatusCode.NOT_FOUND and "not archived" in details
    code, details = await refused(
        stub.ListMatches, archive_pb2.ListMatchesRequest(page_token="nonsense!"), me
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in details
    code, details = await refused(stub.ListMatches, archive_pb2.ListMatchesRequest(page_size=101), me)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "page_size must be 1..100" in details


def rating(
    player_id: str, seat: rules_pb2.Seat.ValueType, before: float, after: float
) -> wallet_pb2.RatingChange:
    def at(value: float, hands: int) -> wallet_pb2.SkillRating:
        return wallet_pb2.SkillRating(
            profile=rules_pb2.PROFILE_DUEL, rating=value, deviation=100.0, hands_rated=hands
        )

    return wallet_pb2.RatingChange(seat=seat, player_id=player_id, before=at(before, 4), after=at(after, 5))


async def test_a_later_hand_archived_first_is_replayed_once_the_earlier_one_is_there(
    archive: tuple[Any, asyncpg.Connection], bus: Bus, issue: Callable[..., Any]
) -> None:
    stub, conn = archive
    table = opened_table()
    results = []
    for seed in (3, 5):
        results.append(hand_result(table, bot_hand(table, seed)))
    first, second = results
    assert (first.hand_number, second.hand_number) == (1, 2)
    ann, bob = (p.player_id for p in first.players)
    # Both seats' ratings as the wallet rated each hand: 1500 → 1510 → 1490 for ann.
    rated = {
        first.hand_id: [rating(ann, SEATS[0], 1500, 1510), rating(bob, SEATS[1], 1600, 1590)],
        second.hand_id: [rating(bob, SEATS[1], 1590, 1611), rating(ann, SEATS[0], 1510, 1490)],
    }
    tx = secrets.token_hex(4)
    for number, hand in enumerate(results):
        fees = [
            (f"player:{ann}", -5, rules_pb2.POSTING_REASON_FEE),
            ("house:fees", 5, rules_pb2.POSTING_REASON_FEE),
        ]
        await publish_twice(
            bus,
            applied(
                table.table_id, hand.hand_id, f"{tx}{number}", fees, own=True, ratings=rated[hand.hand_id]
            ),
        )
    await write_table_log(bus, table)
    await end(bus, second)  # the later hand first

    async def stored(hand_id: str) -> asyncpg.Record | None:
        return await conn.fetchrow(
            "SELECT first_sequence, cardinality(records) AS n FROM archive.hands WHERE hand_id = $1", hand_id
        )

    later = await until(lambda: stored(second.hand_id))
    assert later is not None
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.GetReplay(
            archive_pb2.GetReplayRequest(hand_id=second.hand_id), metadata=issue(ann), timeout=10
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "hand 1 is not archived" in (refused.value.details() or "")

    await end(bus, first)
    earlier = await until(lambda: stored(first.hand_id))
    assert earlier is not None
    # Linear: the opening once, each hand its own slice, the two slices meeting without a gap.
    opening = await conn.fetchval("SELECT opening FROM archive.pairings WHERE table_id = $1", table.table_id)
    assert earlier["first_sequence"] == len(opening) + 1
    assert earlier["first_sequence"] + earlier["n"] - 1 == first.last_sequence
    assert 1 < later["first_sequence"] <= first.last_sequence + 1
    assert later["first_sequence"] + later["n"] - 1 == second.last_sequence
    for hand in results:
        replay = (
            await stub.GetReplay(
                archive_pb2.GetReplayRequest(hand_id=hand.hand_id), metadata=issue(bob), timeout=10
            )
        ).replay
        assert (replay.hand_id, replay.hand_number) == (hand.hand_id, hand.hand_number)
        assert replay.steps[-1].event.summary.startswith("the hand ends")

    async def settled() -> archive_pb2.GetMatchResponse | None:
        got = await stub.GetMatch(
            archive_pb2.GetMatchRequest(pairing_id=f"p-{table.table_id}"), metadata=issue(ann)
        )
        return got if len(got.hands) == 2 and all(h.settled for h in got.hands) else None

    got = await until(settled)
    assert got is not None
    for hand in got.hands:  # SEAT_FIRST first, whatever order the wallet sent them in
        assert list(hand.ratings) == sorted(rated[hand.hand_id], key=lambda r: r.seat)
    assert got.match.rating_change == wallet_pb2.RatingChange(
        seat=SEATS[0],
        player_id=ann,
        before=rated[first.hand_id][0].before,
        after=rated[second.hand_id][1].after,
    )
    (listed,) = (
        await stub.ListMatches(archive_pb2.ListMatchesRequest(), metadata=issue(bob), timeout=10)
    ).matches
    assert (listed.rating_change.before.rating, listed.rating_change.after.rating) == (1600, 1611)
    assert listed.rating_change.seat == SEATS[1] and listed.rating_change.player_id == bob
