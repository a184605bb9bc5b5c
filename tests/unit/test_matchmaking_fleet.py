"""Matchmaking as a fleet: replicas sharing one store (a :class:`MemoryBackend` here, JetStream KV in
production), any of them serving any RPC. Players queued on different replicas pair once; a player holds
one ticket across the fleet; a ticket's place survives every restart; a deadline seen due by two
replicas is acted on once; a pairing whose holder died lapses; a stream is followed again from the
entry's state on any replica (FollowQueue); an entry nobody follows ends after the stream grace."""

from __future__ import annotations

import asyncio
import json

import pytest

from duelmahjong.platform.errors import FailedPrecondition, NotFound, PermissionDenied, RateLimited
from duelmahjong.platform.ratelimit import RateLimiter
from services.matchmaking import updates
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.pairings import HOLD_SECONDS
from services.matchmaking.queue import ADMISSION_SECONDS
from services.matchmaking.records import (
    ALLOCATING,
    DONE,
    ENDED,
    HOLDING,
    NEGOTIATING,
    PAIRED,
    PLAYING,
    WAITING,
    Pairing,
    Ticket,
    player_key,
)
from tests.unit.matchmaking_fakes import (
    Harness,
    LostTables,
    StalledWallet,
    Tables,
    Wallet,
    latest,
    paired,
    room,
    run,
    turns,
)

pytestmark = pytest.mark.asyncio

ANYONE = room(rating_window_per_second=0)  # new players (± 350): anyone pairs with anyone at once
GRACE = 10.0


def _live(mm: Matchmaker) -> list[Pairing]:
    return [p for p in mm.records.pairings.values() if p.state != ENDED]


async def _step_both(a: Matchmaker, b: Matchmaker, stagger: int) -> None:
    """Both replicas step every room: at once (``stagger`` 0), or ``stagger`` loop turns apart, so
    one's step meets the other's holds half placed and its mirror a write or two behind."""
    if stagger:
        await a.tick()
        await turns(stagger)
        await b.tick()
        await turns(stagger)
    else:
        await asyncio.gather(a.tick(), b.tick())
    await asyncio.gather(a.settle(), b.settle())


@pytest.mark.parametrize("stagger", [0, 1, 2, 3, 5])
async def test_players_queued_on_two_replicas_are_each_paired_once_with_one_hold(
    harness: Harness, stagger: int
) -> None:
    players = [f"p{n}" for n in range(12)]
    wallet = Wallet(dict.fromkeys(players, 1000))
    a = await harness.matchmaker(ANYONE, wallet, replica_id="a")
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    tickets = []
    for wave in range(3):  # players keep arriving, on either replica, while both step the room
        for player in players[wave * 4 : wave * 4 + 4]:
            tickets.append(await (a if len(tickets) % 2 else b).enqueue(player, "r", 100))
        await _step_both(a, b, stagger)
    for _ in range(3):
        await _step_both(a, b, stagger)
    await turns()

    for mm in (a, b):  # both replicas' mirrors say the same
        live = _live(mm)
        assert sorted(p for pairing in live for p in pairing.players) == sorted(players)  # once each
        for ticket in tickets:
            now = latest(mm, ticket)
            assert now.state == PAIRED and mm.records.pairings[now.pairing_id] in live
            assert mm.records.pairings[now.pairing_id].seats[now.seat].ticket_id == ticket.ticket_id
    pairing_of_player = {p: pairing.pairing_id for pairing in _live(a) for p in pairing.players}
    for player in players:  # the wallet holds each player's carry once, for the pairing they are in
        assert wallet.held(player) == [pairing_of_player[player]], player
    assert all(pairing.held == pairing.players for pairing in _live(a))
    assert a.counts["paired", "r"] + b.counts["paired", "r"] == len(players) // 2
    assert wallet.released == []  # no pairing ended: no hold was given back


async def test_two_replicas_placing_one_pairing_s_holds_at_the_same_moment_list_each_once(
    harness: Harness,
) -> None:
    """Replica a paired x and y and is placing their holds; b, stepping the room, sees a pairing whose
    tickets are both claimed and places them too (it cannot tell a slow placer from a dead one). The
    wallet answers both at the same moment: a lists x's hold first, b's listing loses the
    compare-and-set before its mirror has a's write, and must wait for it rather than read the same."""
    wallet = Wallet({"x": 1000, "y": 1000})
    slow_a, slow_b = StalledWallet(wallet), StalledWallet(wallet)
    a = await harness.matchmaker(ANYONE, slow_a, replica_id="a")
    b = await harness.matchmaker(ANYONE, slow_b, replica_id="b")
    x = await a.enqueue("x", "r", 100)
    await a.enqueue("y", "r", 100)
    await a.tick()
    await turns()
    await b.tick()
    await turns()
    pairing = paired(a, x)
    assert slow_a.stalled == slow_b.stalled == [("x", pairing.pairing_id)]
    slow_a.answer.set()
    slow_b.answer.set()
    await asyncio.wait_for(asyncio.gather(a.settle(), b.settle()), 10)
    await turns()
    # b's listing lost, once: it did not try again before its mirror had the write that won.
    assert b.records.mirror.conflicts == {"pairings": 1}
    now = latest(b, pairing)
    assert now.state == ALLOCATING and now.held == ("x", "y")
    assert wallet.held("x") == wallet.held("y") == [pairing.pairing_id] and wallet.released == []


async def test_a_step_on_a_stale_view_of_the_queue_stops_at_its_first_lost_claim(harness: Harness) -> None:
    """Two replicas step a long queue at once: the second reads it before the first's pairings reach
    its mirror, so each pairing it tries loses a ticket's compare-and-set and leaves an ended pairing
    record behind. It stops at the first (the change that beat it wakes its next step), rather than
    trying every other ticket with the stale one: a record or two, not one per pair of waiting tickets."""
    players = [f"p{n}" for n in range(20)]
    wallet = Wallet(dict.fromkeys(players, 1000))
    a = await harness.matchmaker(ANYONE, wallet, replica_id="a")
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    for player in players:
        await a.enqueue(player, "r", 100)
    await turns()
    await asyncio.gather(a.tick(), b.tick())
    await asyncio.gather(a.settle(), b.settle())
    await turns()
    assert a.counts["paired", "r"] == 10 and b.counts["paired", "r"] == 0
    assert len([p for p in b.records.pairings.values() if p.state == ENDED]) == 1
    assert b.records.mirror.conflicts == {"tickets": 1}


async def test_a_player_holds_one_ticket_across_the_fleet_and_queues_again_once_it_ended(
    harness: Harness,
) -> None:
    wallet = Wallet({"x": 1000})
    a = await harness.matchmaker(ANYONE, wallet, replica_id="a")
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    first = await a.enqueue("x", "r", 100)
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await b.enqueue("x", "r", 100)  # before b's mirror has seen the ticket: the store refuses
    await turns()
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await b.enqueue("x", "r", 100)
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await b.open_private("x", "r", 100)
    for mm in (a, b):
        assert [t.ticket_id for t in mm.records.tickets.values()] == [first.ticket_id]
    await b.cancel("x", first.ticket_id)  # ended on the other replica…
    second = await a.enqueue("x", "r", 100)  # …the player queues again at once, on either
    await turns()
    assert latest(b, first).state == DONE and latest(b, second).state == WAITING


async def test_a_ticket_keeps_its_place_across_restarts_of_every_replica(harness: Harness) -> None:
    clock = harness.clock
    wallet = Wallet({"x": 1000, "y": 1000, "z": 1000}, ratings={"z": (2500.0, 30.0)})
    a = await harness.matchmaker(ANYONE, wallet, replica_id="a")
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    x = await a.enqueue("x", "r", 100)
    clock.now += 7
    z = await b.enqueue("z", "r", 100)  # far from anyone's rating: waits behind x
    await run(a, b)
    await harness.stop(a)
    await harness.stop(b)

    clock.now += 60
    c = await harness.matchmaker(ANYONE, wallet, replica_id="c")
    assert latest(c, x).enqueued_at == x.enqueued_at == 1000.0 and latest(c, x).state == WAITING
    x_sees = harness.follow(c, x)  # FollowQueue on the new replica
    await turns()
    assert x_sees.new() == [updates.Queued(x.ticket_id, x.expires_at - clock.now), updates.Position(1, 2)]
    y = await c.enqueue("y", "r", 100)
    await run(c)
    pairing = paired(c, y)
    assert pairing.seats[0].ticket_id == x.ticket_id  # the longer waiter, across restarts: SEAT_FIRST
    assert latest(c, z).state == WAITING
    assert updates.Matched(pairing.pairing_id, 0, "y", False, "Y") in x_sees.seen


@pytest.mark.parametrize("stagger", [0, 1, 3])
async def test_a_negotiation_that_timed_out_seen_due_by_two_replicas_ends_once(
    harness: Harness, stagger: int
) -> None:
    duel = room(profile="duel", fan_rate=10, negotiation_seconds=30, rating_window_per_second=0)
    wallet = Wallet({"x": 1000, "y": 1000})
    a = await harness.matchmaker(duel, wallet, replica_id="a")
    b = await harness.matchmaker(duel, wallet, replica_id="b")
    x = await a.enqueue("x", "r", 100)
    y = await b.enqueue("y", "r", 100)
    x_sees, y_sees = harness.follow(a, x), harness.follow(b, y)
    await run(a, b)
    pairing = paired(a, x)
    assert pairing.state == NEGOTIATING and wallet.held("x") == wallet.held("y") == [pairing.pairing_id]
    harness.clock.now += 30
    await _step_both(a, b, stagger)
    await run(a, b)
    for stream in (x_sees, y_sees):
        assert stream.ended and len(stream.of(updates.Expired)) == 1
        assert "timed out" in stream.of(updates.Expired)[0].reason
    assert latest(a, pairing).state == ENDED and latest(b, pairing).release == ()
    assert sorted(wallet.released) == [("x", pairing.pairing_id), ("y", pairing.pairing_id)]  # once each
    assert wallet.holds == {}
    assert a.holds_released["ended"] + b.holds_released["ended"] == 2
    assert sum(mm.holds_released.total() for mm in (a, b)) == 2


async def _holding(harness: Harness) -> tuple[Matchmaker, StalledWallet, Ticket, Ticket, Ticket, Pairing]:
    """Replica "a" paired "x" and "y" (x waited longer) and is placing their holds, which its wallet does
    not answer; "z" (rated far from both) queued meanwhile."""
    wallet = Wallet({"x": 1000, "y": 1000, "z": 1000}, ratings={"z": (2500.0, 30.0)})
    stalled = StalledWallet(wallet)
    a = await harness.matchmaker(ANYONE, stalled, replica_id="a")
    x = await a.enqueue("x", "r", 100)
    harness.clock.now += 1
    y = await a.enqueue("y", "r", 100)
    await a.tick()
    await turns()
    pairing = paired(a, x)
    assert pairing.state == HOLDING and stalled.stalled == [("x", pairing.pairing_id)]
    harness.clock.now += 1
    z = await a.enqueue("z", "r", 100)
    return a, stalled, x, y, z, pairing


async def test_a_pairing_whose_holder_died_lapses_and_its_players_wait_on_at_their_places(
    harness: Harness,
) -> None:
    a, stalled, x, y, z, pairing = await _holding(harness)
    wallet = stalled.wallet
    await harness.stop(a)  # it dies mid-hold, and no replica steps the room until the deadline
    harness.clock.now += HOLD_SECONDS - 1  # its deadline
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    c = await harness.matchmaker(ANYONE, wallet, replica_id="c")
    await _step_both(b, c, 0)  # both see it due at once
    await run(b, c)
    lapsed = latest(b, pairing)
    assert lapsed.state == ENDED and "lapsed" in lapsed.reason
    assert b.counts["lapsed", "r"] + c.counts["lapsed", "r"] == 1
    # Every hold that might have been placed is released once; none is left under the lapsed pairing.
    assert sorted(wallet.released) == [("x", pairing.pairing_id), ("y", pairing.pairing_id)]
    # Back at their old places, ahead of z: x and y pair again, x first.
    again = paired(b, x)
    assert again.pairing_id != pairing.pairing_id
    assert [s.ticket_id for s in again.seats] == [x.ticket_id, y.ticket_id]
    assert latest(b, x).enqueued_at == x.enqueued_at and latest(b, y).enqueued_at == y.enqueued_at
    assert latest(b, z).state == WAITING
    assert wallet.held("x") == wallet.held("y") == [again.pairing_id]


async def test_a_pairing_whose_holder_died_is_held_by_the_next_replica_to_step_the_room(
    harness: Harness,
) -> None:
    a, stalled, _x, _y, _z, pairing = await _holding(harness)
    wallet = stalled.wallet
    await harness.stop(a)
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    await run(b)  # before the deadline: b places the holds a could not
    assert latest(b, pairing).state == ALLOCATING and latest(b, pairing).held == ("x", "y")
    assert wallet.held("x") == wallet.held("y") == [pairing.pairing_id] and wallet.released == []
    assert b.counts["lapsed", "r"] == 0


async def test_a_hold_the_wallet_places_after_its_pairing_lapsed_is_given_back(harness: Harness) -> None:
    a, stalled, x, _y, _z, pairing = await _holding(harness)
    wallet = stalled.wallet
    harness.clock.now += HOLD_SECONDS - 1.1  # the deadline is 0.1 s away
    await a.tick()  # a, still placing the holds, steps the room: nothing lapses before the deadline
    await turns()
    assert latest(a, pairing).state == HOLDING and a.counts["lapsed", "r"] == 0
    harness.clock.now += 0.1
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    await run(b)  # a hangs; b finds the pairing lapsed, and x and y paired again
    again = paired(b, x)
    assert latest(b, pairing).state == ENDED and b.counts["lapsed", "r"] == 1
    assert wallet.held("x") == [again.pairing_id]
    stalled.answer.set()  # a's wallet call returns at last: the hold is placed, for a lapsed pairing
    await a.settle()
    assert wallet.held("x") == [again.pairing_id] and a.holds_released["lapsed"] == 1
    assert latest(a, pairing).state == ENDED and latest(a, again).state == ALLOCATING


async def test_following_a_ticket_again_starts_from_its_state_now_on_any_replica(harness: Harness) -> None:
    duel = room(profile="duel", fan_rate=10, negotiation_seconds=30, rating_window_per_second=0)
    directory = TableServerDirectory(clock=harness.clock)
    wallet = Wallet({"x": 1000, "y": 1000, "w": 1000})
    a = await harness.matchmaker(duel, wallet, Tables(), directory, replica_id="a")
    b = await harness.matchmaker(duel, wallet, replica_id="b")  # serves RPCs, never steps here
    x = await a.enqueue("x", "r", 100)
    await turns()

    async def from_scratch() -> list[updates.Update]:
        """What FollowQueue on b shows first: the entry's state now."""
        stream = harness.follow(b, x)
        await turns()
        shown = stream.new()
        await stream.close()
        return shown

    queued = updates.Queued(x.ticket_id, x.expires_at - harness.clock.now)
    assert await from_scratch() == [queued, updates.Position(1, 1)]
    follower = harness.follow(b, x)  # and then what happens, as it happens
    await turns()
    await b.enqueue("y", "r", 100)
    await run(a)
    pairing = paired(a, x)
    matched = updates.Matched(pairing.pairing_id, 0, "y", False, "Y")
    awaiting = updates.Negotiation(pairing.pairing_id, updates.AWAITING_PROPOSAL, 0, True, pairing.deadline)
    assert await from_scratch() == [queued, matched, awaiting]
    await b.propose("x", pairing.pairing_id, 2)
    await turns()  # y's stream shows the proposal; y answers on the other replica
    await a.respond("y", pairing.pairing_id, True)
    directory.observe(TableServer("s", "h:1", 10, 1))
    await run(a)
    table = latest(a, pairing)
    accepted = updates.Negotiation(pairing.pairing_id, updates.ACCEPTED, 2, False, 0.0)
    ready = updates.TableReady(pairing.pairing_id, table.table_id, "h:1", "ticket-0", 0)
    assert await from_scratch() == [queued, matched, accepted, ready]
    assert follower.seen[:2] == [queued, updates.Position(1, 1)] and follower.seen[-1] == ready
    assert {type(u) for u in follower.seen} == {
        updates.Queued,
        updates.Position,
        updates.Matched,
        updates.Negotiation,
        updates.TableReady,
    }
    assert follower.ended

    w = await a.enqueue("w", "r", 100)  # an entry that ended without a table: its end
    await a.cancel("w", w.ticket_id)
    await turns()
    stream = harness.follow(b, w)
    await turns()
    assert stream.seen == [
        updates.Queued(w.ticket_id, w.expires_at - harness.clock.now),
        updates.Expired("cancelled by the player"),
    ]
    assert stream.ended

    with pytest.raises(PermissionDenied):
        await anext(aiter(b.follow("y", x.ticket_id)))  # another player's
    with pytest.raises(NotFound):
        await anext(aiter(b.follow("x", "q-unknown")))


async def test_an_unfollowed_ticket_ends_after_the_stream_grace_unless_followed_again(
    harness: Harness,
) -> None:
    clock = harness.clock
    wallet = Wallet({"x": 1000, "y": 1000, "v": 1000}, ratings={"y": (2500.0, 30.0)})
    a = await harness.matchmaker(ANYONE, wallet, replica_id="a", stream_grace_seconds=GRACE)
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b", stream_grace_seconds=GRACE)
    x = await a.enqueue("x", "r", 100)
    y = await a.enqueue("y", "r", 100)  # rated far from x: both wait
    x_sees, y_sees = harness.follow(a, x), harness.follow(a, y)
    await run(a, b)
    await x_sees.close()  # both streams break
    await y_sees.close()
    clock.now += GRACE - 1
    await run(a, b)
    assert latest(a, x).state == latest(a, y).state == WAITING  # not before the grace
    y_again = harness.follow(b, y)  # FollowQueue on another replica, within the grace
    clock.now += 1
    await run(a, b)
    assert latest(a, x).state == DONE and "stream" in latest(a, x).reason
    assert a.counts["unfollowed", "r"] + b.counts["unfollowed", "r"] == 1
    clock.now += 10 * GRACE
    await run(a, b)
    assert latest(a, y).state == WAITING and not y_again.ended  # followed: kept
    await y_again.close()
    clock.now += GRACE
    await run(a, b)
    assert latest(a, y).state == DONE


async def test_a_ticket_followed_twice_on_one_replica_is_followed_while_either_stream_lasts(
    harness: Harness,
) -> None:
    clock = harness.clock
    a = await harness.matchmaker(ANYONE, Wallet({"x": 1000}), replica_id="a", stream_grace_seconds=GRACE)
    x = await a.enqueue("x", "r", 100)
    broken = harness.follow(a, x)  # its client is gone, but the server has not noticed yet
    await turns()
    again = harness.follow(a, x)  # the client follows again (FollowQueue), on the same replica
    await turns()
    await broken.close()  # the server notices the first stream is gone
    clock.now += 10 * GRACE
    await run(a)
    assert latest(a, x).state == WAITING and not again.ended
    await again.close()
    clock.now += GRACE
    await run(a)
    assert latest(a, x).state == DONE


async def test_a_code_guesser_spread_over_the_replicas_gets_the_rate_once(harness: Harness) -> None:
    joins = RateLimiter(per_minute=6, burst=3)
    a = await harness.matchmaker(ANYONE, Wallet({"g": 1000}), replica_id="a", private_joins=joins)
    b = await harness.matchmaker(ANYONE, Wallet({"g": 1000}), replica_id="b", private_joins=joins)
    for mm in (a, b, a):  # the burst, spent on both replicas, each try seen at once by the other
        with pytest.raises(NotFound):
            await mm.join_private("g", "ZZZZZZ", 100)
        await turns()
    for mm in (a, b):
        with pytest.raises(RateLimited, match="retry in 10 s"):
            await mm.join_private("g", "ZZZZZZ", 100)
    await asyncio.gather(*(mm.join_private("g", "ZZZZZZ", 100) for mm in (a, b)), return_exceptions=True)
    harness.clock.now += 10  # one token back, for the fleet: one try, whichever replica takes it
    tries = await asyncio.gather(
        *(mm.join_private("g", "ZZZZZZ", 100) for mm in (a, b)), return_exceptions=True
    )
    assert sorted(type(t).__name__ for t in tries) == ["NotFound", "RateLimited"]


@pytest.mark.parametrize("event", ["closed", "adopted"])
async def test_a_table_event_handled_while_another_replica_updates_the_table_is_applied(
    harness: Harness, event: str
) -> None:
    """TableClosed and TableAdopted are consumed by any replica; the room's owner may update the same
    pairing (a lost server noticed) just before: the handler's first write loses, and it acts on the
    pairing as the owner left it."""
    directory = TableServerDirectory(clock=harness.clock, ttl_seconds=15)
    lost = LostTables()
    wallet = Wallet({"x": 1000, "y": 1000})
    owner = await harness.matchmaker(
        ANYONE, wallet, Tables(), directory, replica_id="a", lost_tables=lost, adoption_grace_seconds=20
    )
    consumer = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    directory.observe(TableServer("s", "h:1", 10, 1, incarnation="one"))
    x = await owner.enqueue("x", "r", 100)
    await owner.enqueue("y", "r", 100)
    await run(owner)
    table = paired(owner, x)
    assert table.state == PLAYING
    await turns()
    harness.clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="two"))  # restarted: lost, the grace runs
    await owner.tick()  # the owner writes lost_since; the consumer's mirror has not seen it yet
    assert latest(owner, table).lost_since and not latest(consumer, table).lost_since
    if event == "closed":
        assert await consumer.table_closed(table.table_id) is True
        await turns()
        assert latest(owner, table).state == ENDED and lost.closed == []
        await owner.enqueue("x", "r", 100)  # the players are free again
    else:
        moved = {"server_id": "s2", "address": "h:2", "incarnation": "x", "kind": "orphan"}
        assert await consumer.table_adopted(table.table_id, **moved) is True
        await turns()
        adopted = latest(owner, table)
        assert (adopted.server_id, adopted.address, adopted.lost_since) == ("s2", "h:2", 0.0)


async def test_a_claim_left_by_a_replica_that_died_ending_its_ticket_or_table_is_taken_over(
    harness: Harness,
) -> None:
    """A replica that dies between the write that ends a ticket (or its table) and the release of the
    player's claim leaves the claim behind; the player's next admission takes it over instead of
    refusing them for good."""
    wallet = Wallet({"x": 1000, "y": 1000})
    directory = TableServerDirectory(clock=harness.clock, ttl_seconds=15)
    directory.observe(TableServer("s", "h:1", 10, 1, incarnation="one"))
    a = await harness.matchmaker(ANYONE, wallet, Tables(), directory, replica_id="a")
    b = await harness.matchmaker(ANYONE, wallet, replica_id="b")
    x = await a.enqueue("x", "r", 100)
    await a.records.update(x, state=DONE, reason="cancelled by the player", ended_at=harness.clock.now)
    await turns()  # …and a died before it released x's claim
    again = await b.enqueue("x", "r", 100)
    await a.cancel("x", again.ticket_id)  # the claim is the new ticket's: it is released with it
    x = await a.enqueue("x", "r", 100)
    await a.enqueue("y", "r", 100)
    await run(a)
    table = paired(a, x)
    assert table.state == PLAYING
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await b.enqueue("x", "r", 100)  # at a table: the claim holds until the table closes
    await a.records.update(table, state=ENDED, ended_at=harness.clock.now, reason="the table closed")
    await turns()  # …and a died before it released the players' claims
    await b.enqueue("x", "r", 100)
    await b.enqueue("y", "r", 100)


async def test_a_claim_whose_ticket_was_never_stored_is_taken_over_after_the_admission_time(
    harness: Harness,
) -> None:
    """A replica that dies admitting a player (the claim taken, the wallet asked, no ticket written)
    leaves a claim with no ticket: it holds for the longest an admission takes, then the player's
    next admission takes it over. A claim without its time (an older replica's) is never taken."""
    wallet = Wallet({"x": 1000, "y": 1000})
    a = await harness.matchmaker(ANYONE, wallet, replica_id="a")
    await a.records.create_claim(player_key("x"), ticket_id="q-dead", claimed_at=f"{harness.clock.now:.3f}")
    await a.records.create_claim(player_key("y"), ticket_id="q-old")
    harness.clock.now += ADMISSION_SECONDS - 1
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await a.enqueue("x", "r", 100)  # it may still be on its way
    harness.clock.now += 1
    ticket = await a.enqueue("x", "r", 100)
    await turns()
    assert json.loads(a.records.entry(player_key("x")).value)["ticket_id"] == ticket.ticket_id
    harness.clock.now += 3600
    with pytest.raises(FailedPrecondition, match="already in a queue"):
        await a.enqueue("y", "r", 100)
