"""Private tables in matchmaking's domain, on an injected clock: the opener's carry is held at once and a
code sent first; a friend joins with it (case and spaces ignored) and the pair negotiates and is allocated
as any other, as a private pairing; no bot ever fills; an unused code expires with its hold released;
wrong, used, expired and own codes, busy players and too many guesses are refused with readable errors.
The wallet and table servers are the in-memory ports of test_matchmaking_core."""

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
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.pairing import ALLOCATING, NEGOTIATING, PLAYING, OpenedTable, Pairing, QueueEntry
from services.matchmaking.rooms import Room
from tests.unit.test_matchmaking_core import Clock, PooledBots, Tables, Wallet, _drain, _room, _settle

pytestmark = pytest.mark.asyncio

PLAYERS = {"ana": 1000, "bo": 1000, "cy": 1000}


class RecordingTables(Tables):
    def __init__(self) -> None:
        super().__init__()
        self.pairings: list[Pairing] = []

    async def open(self, server: TableServer, pairing: Pairing) -> OpenedTable:
        self.pairings.append(pairing)
        return await super().open(server, pairing)


def _matchmaker(
    *rooms: Room, wallet: Wallet | None = None, joins: RateLimiter | None = None
) -> tuple[Matchmaker, Wallet, RecordingTables, Clock, PooledBots]:
    clock = Clock()
    wallet = wallet or Wallet(dict(PLAYERS))
    tables = RecordingTables()
    directory = TableServerDirectory(clock=clock, ttl_seconds=1e9)
    directory.observe(TableServer("s", "h:1", 10, 1))
    bots = PooledBots(BotPool(2))
    mm = Matchmaker(
        {room.room_id: room for room in rooms or (_room(),)},
        wallet,
        tables,
        directory,
        bots=bots,
        private_joins=joins,
        clock=clock,
    )
    bots.mm = mm
    return mm, wallet, tables, clock, bots


def _code(entry: QueueEntry) -> str:
    first = _drain(entry)[0]
    assert isinstance(first, updates.PrivateCode)
    return first.code


async def test_an_opened_private_table_is_held_at_once_sends_its_code_first_and_waits_outside_the_queue() -> (
    None
):
    mm, wallet, _tables, clock, bots = _matchmaker(_room(bot_fill_seconds=1, ticket_seconds=60))
    opener = await mm.open_private("ana", "r", 200)
    assert wallet.holds == {("ana", opener.held_for): 205}  # carry + fee, before anyone joins
    sent = _drain(opener)
    assert isinstance(sent[0], updates.PrivateCode) and sent[0].room_id == "r"
    assert sent[0].expires_in_seconds == 60 and codes.well_formed(sent[0].code)
    assert [type(u) for u in sent[1:]] == [updates.Queued]  # its ticket: CancelQueue takes it
    assert mm.waiting("r") == 0
    queued = await mm.enqueue("bo", "r", 200)  # a stranger in the room's queue is not paired with it
    clock.now += 30
    mm.tick()
    await _settle()
    assert opener.pairing is None and not opener.done
    assert [for_ticket for _bot, for_ticket in bots.started] == [queued.ticket_id]  # never the private one
    assert not any(isinstance(u, updates.Position) for u in _drain(opener))


async def test_a_friend_joins_with_the_code_in_any_case_and_spacing_as_the_private_pairing_s_second() -> None:
    mm, wallet, tables, _clock, _bots = _matchmaker()
    opener = await mm.open_private("ana", "r", 200)
    code = _code(opener)
    typed = f" {code[:3].lower()} {code[3:]} "
    friend = await mm.join_private("bo", typed, 300)
    await _settle()
    pairing = opener.pairing
    assert pairing is not None and pairing is friend.pairing and pairing.private_table
    assert pairing.seats == (opener, friend)  # the opener sits first (proposes in duel, T7)
    assert pairing.pairing_id == opener.held_for  # the hold it opened with is the pairing's
    assert wallet.holds == {("ana", pairing.pairing_id): 205, ("bo", pairing.pairing_id): 305}
    matched = [u for e in (opener, friend) for u in _drain(e) if isinstance(u, updates.Matched)]
    assert [(m.seat, m.opponent_player_id, m.private_table) for m in matched] == [
        (0, "bo", True),
        (1, "ana", True),
    ]
    assert pairing.state == PLAYING and tables.pairings == [pairing]  # erren: 1×, allocated at once
    assert mm.live_tables("r") == []
    with pytest.raises(NotFound, match="expired or was used"):  # a code opens one table
        await mm.join_private("cy", code, 200)


async def test_a_private_duel_table_negotiates_the_multiplier_as_usual() -> None:
    duel = _room(room_id="d", profile="duel", fan_rate=10, negotiation_seconds=30, watchable=True)
    mm, _wallet, tables, _clock, _bots = _matchmaker(duel)
    opener = await mm.open_private("ana", "d", 200)
    friend = await mm.join_private("bo", _code(opener), 200)
    await _settle()
    assert opener.pairing is not None and opener.pairing.state == NEGOTIATING
    asked = [u for u in _drain(opener) if isinstance(u, updates.Negotiation)]
    assert asked[-1].state == updates.AWAITING_PROPOSAL and asked[-1].your_turn
    mm.propose("ana", opener.pairing.pairing_id, 5)
    mm.respond("bo", opener.pairing.pairing_id, True)
    await _settle()
    assert opener.pairing.multiplier == 5 and opener.pairing.state == PLAYING
    assert tables.pairings[0].private_table
    assert mm.live_tables("d") == []  # a watchable room, but the table is private
    mm.table_closed(opener.pairing.table_id)
    assert mm.live_tables("d") == []
    assert friend.done


async def test_an_unused_code_expires_with_the_room_s_ticket_its_hold_released() -> None:
    mm, wallet, _tables, clock, _bots = _matchmaker(_room(ticket_seconds=10))
    opener = await mm.open_private("ana", "r", 200)
    code = _code(opener)
    clock.now += 9.9
    mm.tick()
    assert not opener.done
    clock.now += 0.2
    mm.tick()
    await _settle()
    last = _drain(opener)
    assert isinstance(last[-2], updates.Expired) and code in last[-2].reason and last[-1] is updates.END
    assert wallet.holds == {}
    with pytest.raises(NotFound, match=f"no private table has the code '{code}'"):
        await mm.join_private("bo", code, 200)
    again = await mm.open_private("ana", "r", 200)  # free to open another
    assert _code(again) != "" and ("ana", again.held_for) in wallet.holds


async def test_a_cancelled_or_abandoned_private_table_releases_its_hold() -> None:
    mm, wallet, _tables, _clock, _bots = _matchmaker()
    opener = await mm.open_private("ana", "r", 200)
    code = _code(opener)
    mm.cancel("ana", opener.ticket_id)
    await _settle()
    assert wallet.holds == {}
    with pytest.raises(NotFound):
        await mm.join_private("bo", code, 200)
    other = await mm.open_private("ana", "r", 200)
    mm.stream_closed(other)  # the opener's stream went away
    await _settle()
    assert wallet.holds == {} and other.done


async def test_wrong_own_and_busy_joins_are_refused_with_what_to_do() -> None:
    mm, _wallet, _tables, _clock, _bots = _matchmaker(_room(carry_max=500))
    opener = await mm.open_private("ana", "r", 200)
    code = _code(opener)
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
    assert opener.pairing is None and not opener.done  # all that left the table waiting
    friend = await mm.join_private("bo", code, 200)
    assert friend.pairing is opener.pairing is not None


async def test_a_friend_the_wallet_refuses_leaves_the_table_open_for_another() -> None:
    wallet = Wallet(dict(PLAYERS), refuse=frozenset({"bo"}))
    mm, _wallet, _tables, _clock, _bots = _matchmaker(wallet=wallet)
    opener = await mm.open_private("ana", "r", 200)
    code = _code(opener)
    refused = await mm.join_private("bo", code, 200)
    await _settle()
    assert refused.done and opener.pairing is None and ("ana", opener.held_for) in wallet.holds
    friend = await mm.join_private("cy", code, 200)
    await _settle()
    assert friend.pairing is opener.pairing is not None and opener.pairing.state in (ALLOCATING, PLAYING)


async def test_code_guesses_are_rate_limited_per_player() -> None:
    clock = Clock()
    joins = RateLimiter(per_minute=6, burst=3, clock=clock)
    mm, _wallet, _tables, _clock, _bots = _matchmaker(joins=joins)
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
    with pytest.raises(RateLimited):  # even the right code waits for the bucket
        await mm.join_private("bo", _code(opener), 200)
    clock.now += 10
    assert (await mm.join_private("bo", opener.private_code, 200)).pairing is opener.pairing


async def test_the_code_and_the_private_match_go_on_the_wire_as_the_contract_says() -> None:
    code = queue_update(updates.PrivateCode("ABC234", "r", 60), now=1000.0)
    assert code.WhichOneof("kind") == "private_code"
    assert (code.private_code.code, code.private_code.room_id) == ("ABC234", "r")
    assert code.private_code.expires_at.ToSeconds() == 1060
    matched = queue_update(updates.Matched("p-1", 1, "ana", False, "Ana", private_table=True), now=0.0)
    assert matched.matched.private_table and matched.matched.seat == rules_pb2.SEAT_SECOND
    assert not queue_update(updates.Matched("p-2", 0, "bo", False, "Bo"), now=0.0).matched.private_table
