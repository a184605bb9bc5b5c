"""Private tables in matchmaking's domain, on an injected clock: the opener's carry is held at once and a
code sent first; a friend joins with it (case and spaces ignored) and the pair negotiates and is allocated
as any other, as a private pairing; no bot ever fills; an unused code expires with its hold released;
wrong, used, expired and own codes, busy players and too many guesses are refused with readable errors.
The store, the wallet and the table servers are the in-memory ones of tests/unit/matchmaking_fakes.py."""

from __future__ import annotations

import pytest

from duelmahjong.platform.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    RateLimited,
)
from duelmahjong.platform.ratelimit import RateLimiter
from duelmahjong.v1 import rules_pb2
from services.matchmaking import codes, updates
from services.matchmaking.api import queue_update
from services.matchmaking.bots import BotPool
from services.matchmaking.core import STREAM_GRACE_SECONDS, Matchmaker
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.pairings import CLOSED_TABLE_KEPT_SECONDS
from services.matchmaking.records import ALLOCATING, DONE, NEGOTIATING, PLAYING, WAITING, Ticket, code_key
from services.matchmaking.rooms import Room
from tests.unit.matchmaking_fakes import (
    Clock,
    Harness,
    PooledBots,
    Stream,
    Tables,
    Wallet,
    latest,
    paired,
    pairing_of,
    room,
    run,
    turns,
)

pytestmark = pytest.mark.asyncio

PLAYERS = {"ana": 1000, "bo": 1000, "cy": 1000}


async def _matchmaker(
    harness: Harness, *rooms: Room, wallet: Wallet | None = None, joins: RateLimiter | None = None
) -> tuple[Matchmaker, Wallet, Tables, Clock, PooledBots]:
    wallet = wallet or Wallet(dict(PLAYERS))
    tables = Tables()
    directory = TableServerDirectory(clock=harness.clock, ttl_seconds=1e9)
    directory.observe(TableServer("s", "h:1", 10, 1))
    bots = PooledBots(BotPool(2))
    mm = await harness.matchmaker(
        {r.room_id: r for r in rooms or (room(),)},
        wallet,
        tables,
        directory,
        bots=bots,
        private_joins=joins,
    )
    return mm, wallet, tables, harness.clock, bots


async def _code(harness: Harness, mm: Matchmaker, opener: Ticket) -> tuple[str, Stream]:
    """The code the opener's stream shows first, and the stream."""
    stream = harness.follow(mm, opener)
    await turns()
    first = stream.seen[0]
    assert isinstance(first, updates.PrivateCode)
    return first.code, stream


async def test_an_opened_private_table_is_held_at_once_sends_its_code_first_and_waits_outside_the_queue(
    harness: Harness,
) -> None:
    mm, wallet, _tables, clock, bots = await _matchmaker(harness, room(bot_fill_seconds=1, ticket_seconds=60))
    opener = await mm.open_private("ana", "r", 200)
    assert wallet.holds == {("ana", opener.held_for): 205}  # carry + fee, before anyone joins
    _code_shown, stream = await _code(harness, mm, opener)
    sent = stream.new()
    assert isinstance(sent[0], updates.PrivateCode) and sent[0].room_id == "r"
    assert sent[0].expires_in_seconds == 60 and codes.well_formed(sent[0].code)
    assert sent[0].code == opener.private_code
    assert [type(u) for u in sent[1:]] == [updates.Queued]  # its ticket: CancelQueue takes it
    assert mm.waiting("r") == 0
    queued = await mm.enqueue("bo", "r", 200)  # a stranger in the room's queue is not paired with it
    clock.now += 30
    await run(mm)
    assert pairing_of(mm, opener) is None and latest(mm, opener).state == WAITING
    assert [for_ticket for _bot, for_ticket in bots.started] == [queued.ticket_id]  # never the private one
    assert stream.new() == []  # no place in a queue, no match


async def test_a_friend_joins_with_the_code_in_any_case_and_spacing_as_the_private_pairing_s_second(
    harness: Harness,
) -> None:
    mm, wallet, tables, clock, _bots = await _matchmaker(harness)
    opener = await mm.open_private("ana", "r", 200)
    code, opener_sees = await _code(harness, mm, opener)
    typed = f" {code[:3].lower()} {code[3:]} "
    friend = await mm.join_private("bo", typed, 300)
    friend_sees = harness.follow(mm, friend)
    await run(mm)
    pairing = paired(mm, opener)
    assert pairing == pairing_of(mm, friend) and pairing.private_table
    # The opener sits first (proposes in duel, T7).
    assert [s.ticket_id for s in pairing.seats] == [opener.ticket_id, friend.ticket_id]
    assert pairing.pairing_id == opener.held_for  # the hold it opened with is the pairing's
    assert wallet.holds == {("ana", pairing.pairing_id): 205, ("bo", pairing.pairing_id): 305}
    matched = [m for stream in (opener_sees, friend_sees) for m in stream.of(updates.Matched)]
    assert [(m.seat, m.opponent_player_id, m.private_table) for m in matched] == [
        (0, "bo", True),
        (1, "ana", True),
    ]
    # erren: 1×, allocated at once
    assert pairing.state == PLAYING and [p.pairing_id for p in tables.pairings] == [pairing.pairing_id]
    assert mm.live_tables("r") == []
    with pytest.raises(NotFound, match="expired or was used"):  # a code opens one table
        await mm.join_private("cy", code, 200)
    # Its key is gone from the store (a later table may draw the code again), and nothing else of the
    # table outlives it once it closed and was kept its while.
    assert mm.records.entry(code_key(code)) is None
    await mm.table_closed(pairing.table_id)
    clock.now += CLOSED_TABLE_KEPT_SECONDS
    await run(mm)
    assert mm.records.mirror.under("codes") == mm.records.mirror.under("players") == []
    assert mm.records.tickets == {} and mm.records.pairings == {}


async def test_a_private_duel_table_negotiates_the_multiplier_as_usual(harness: Harness) -> None:
    duel = room(room_id="d", profile="duel", fan_rate=10, negotiation_seconds=30, watchable=True)
    mm, _wallet, tables, _clock, _bots = await _matchmaker(harness, duel)
    opener = await mm.open_private("ana", "d", 200)
    code, opener_sees = await _code(harness, mm, opener)
    friend = await mm.join_private("bo", code, 200)
    await run(mm)
    pairing = paired(mm, opener)
    assert pairing.state == NEGOTIATING
    asked = opener_sees.of(updates.Negotiation)
    assert asked[-1].state == updates.AWAITING_PROPOSAL and asked[-1].your_turn
    await mm.propose("ana", pairing.pairing_id, 5)
    await mm.respond("bo", pairing.pairing_id, True)
    await run(mm)
    pairing = latest(mm, pairing)
    assert pairing.multiplier == 5 and pairing.state == PLAYING
    assert tables.pairings[0].private_table
    assert mm.live_tables("d") == []  # a watchable room, but the table is private
    await mm.table_closed(pairing.table_id)
    assert mm.live_tables("d") == []
    assert latest(mm, friend).state == DONE


async def test_an_unused_code_expires_with_the_room_s_ticket_its_hold_released(harness: Harness) -> None:
    mm, wallet, _tables, clock, _bots = await _matchmaker(harness, room(ticket_seconds=10))
    opener = await mm.open_private("ana", "r", 200)
    code, stream = await _code(harness, mm, opener)
    clock.now += 9.9
    await run(mm)
    assert latest(mm, opener).state == WAITING and not stream.ended
    clock.now += 0.2
    await run(mm)
    last = stream.seen[-1]
    assert isinstance(last, updates.Expired) and code in last.reason and stream.ended
    assert wallet.holds == {}
    with pytest.raises(NotFound, match=f"no private table has the code '{code}'"):
        await mm.join_private("bo", code, 200)
    again = await mm.open_private("ana", "r", 200)  # free to open another
    assert (await _code(harness, mm, again))[0] != "" and ("ana", again.held_for) in wallet.holds


async def test_a_cancelled_private_table_releases_its_hold(harness: Harness) -> None:
    mm, wallet, _tables, _clock, _bots = await _matchmaker(harness)
    opener = await mm.open_private("ana", "r", 200)
    code, _stream = await _code(harness, mm, opener)
    await mm.cancel("ana", opener.ticket_id)
    await mm.settle()
    assert wallet.holds == {}
    with pytest.raises(NotFound):
        await mm.join_private("bo", code, 200)


async def test_an_abandoned_private_table_releases_its_hold_after_the_stream_grace(harness: Harness) -> None:
    # The opener's stream went away. A stream that breaks may be followed again (FollowQueue), so the
    # ticket ends after the stream grace, not at once.
    mm, wallet, _tables, clock, _bots = await _matchmaker(harness)
    opener = await mm.open_private("ana", "r", 200)
    _code_shown, stream = await _code(harness, mm, opener)
    await stream.close()
    await run(mm)
    assert ("ana", opener.held_for) in wallet.holds and latest(mm, opener).state == WAITING
    clock.now += STREAM_GRACE_SECONDS
    await run(mm)
    assert wallet.holds == {} and latest(mm, opener).state == DONE


async def test_wrong_own_and_busy_joins_are_refused_with_what_to_do(harness: Harness) -> None:
    mm, _wallet, _tables, _clock, _bots = await _matchmaker(harness, room(carry_max=500))
    opener = await mm.open_private("ana", "r", 200)
    code, _stream = await _code(harness, mm, opener)
    wrong = "".join(next(c for c in codes.ALPHABET if c != s) for s in code)
    with pytest.raises(NotFound, match="mistyped, or it expired or was used already") as refused:
        await mm.join_private("bo", wrong, 200)
    assert "ask your friend" in str(refused.value)
    with pytest.raises(NotFound, match="no private table"):
        await mm.join_private("bo", "not a code", 200)
    with pytest.raises(InvalidArgument, match="code is required"):
        await mm.join_private("bo", "   ", 200)
    with pytest.raises(FailedPrecondition, match="your own private table"):
        await mm.join_private("ana", code.lower(), 200)
    with pytest.raises(FailedPrecondition, match="already in a queue"):  # as Enqueue refuses
        await mm.open_private("ana", "r", 200)
    await mm.enqueue("cy", "r", 200)
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await mm.join_private("cy", code, 200)
    with pytest.raises(InvalidArgument, match="outside room r's range"):  # the opener's room decides
        await mm.join_private("bo", code, 900)
    with pytest.raises(NotFound, match="no room"):
        await mm.open_private("bo", "nowhere", 200)
    # All that left the table waiting.
    assert pairing_of(mm, opener) is None and latest(mm, opener).state == WAITING
    friend = await mm.join_private("bo", code, 200)
    assert paired(mm, friend) == pairing_of(mm, opener)


async def test_a_friend_the_wallet_refuses_leaves_the_table_open_for_another(harness: Harness) -> None:
    wallet = Wallet(dict(PLAYERS), refuse=frozenset({"bo"}))
    mm, _wallet, _tables, _clock, _bots = await _matchmaker(harness, wallet=wallet)
    opener = await mm.open_private("ana", "r", 200)
    code, _stream = await _code(harness, mm, opener)
    refused = await mm.join_private("bo", code, 200)
    await run(mm)
    assert latest(mm, refused).state == DONE and pairing_of(mm, opener) is None
    assert ("ana", opener.held_for) in wallet.holds
    friend = await mm.join_private("cy", code, 200)
    await run(mm)
    assert paired(mm, friend) == pairing_of(mm, opener)
    assert paired(mm, opener).state in (ALLOCATING, PLAYING)


async def test_code_guesses_are_rate_limited_per_player(harness: Harness) -> None:
    # The buckets are records of the store, on the matchmaker's clock (one rate for the whole fleet:
    # tests/unit/test_matchmaking_fleet.py).
    joins = RateLimiter(per_minute=6, burst=3)
    mm, _wallet, _tables, clock, _bots = await _matchmaker(harness, joins=joins)
    for _ in range(3):
        with pytest.raises(NotFound):
            await mm.join_private("bo", "ZZZZZZ", 200)
    with pytest.raises(
        RateLimited, match=r"too many private codes tried \(3 at once, then 6 a minute\); retry in 10 s"
    ):
        await mm.join_private("bo", "ZZZZZZ", 200)
    with pytest.raises(NotFound):  # another player has a bucket of their own
        await mm.join_private("cy", "ZZZZZZ", 200)
    opener = await mm.open_private("ana", "r", 200)
    code, _stream = await _code(harness, mm, opener)
    with pytest.raises(RateLimited):  # even the right code waits for the bucket
        await mm.join_private("bo", code, 200)
    clock.now += 10
    friend = await mm.join_private("bo", opener.private_code, 200)
    assert paired(mm, friend) == pairing_of(mm, opener)


async def test_the_code_and_the_private_match_go_on_the_wire_as_the_contract_says() -> None:
    code = queue_update(updates.PrivateCode("ABC234", "r", 60), now=1000.0)
    assert code.WhichOneof("kind") == "private_code"
    assert (code.private_code.code, code.private_code.room_id) == ("ABC234", "r")
    assert code.private_code.expires_at.ToSeconds() == 1060
    matched = queue_update(updates.Matched("p-1", 1, "ana", False, "Ana", private_table=True), now=0.0)
    assert matched.matched.private_table and matched.matched.seat == rules_pb2.SEAT_SECOND
    assert not queue_update(updates.Matched("p-2", 0, "bo", False, "Bo"), now=0.0).matched.private_table
