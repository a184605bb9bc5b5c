"""Matchmaking's domain on an injected clock: the skill-rating window (uncertainty, waiting), tickets expire,
a refused hold sends the other player back to the queue, allocation picks the roomiest live server
and a pairing waits while none has room, bot fill, lost and adopted tables. The store, the wallet and
the table servers are in memory here (tests/unit/matchmaking_fakes.py); tests/integration/
test_matchmaking.py runs the same core against the real wallet over gRPC, and
tests/unit/test_matchmaking_fleet.py runs several replicas on one store."""

from __future__ import annotations

import pytest

from duelmahjong.platform.config import ConfigError
from duelmahjong.platform.errors import FailedPrecondition, NotFound, PermissionDenied
from duelmahjong.platform.metrics import ServiceMetrics
from services.matchmaking import metrics, updates
from services.matchmaking.allocation import LOST_RETRY_SECONDS
from services.matchmaking.botfill import BOT_RETRY_SECONDS
from services.matchmaking.bots import BotPool
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.core import Matchmaker
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.ports import TableLocation
from services.matchmaking.records import ALLOCATING, DONE, ENDED, PLAYING, WAITING, Pairing, Ticket
from services.matchmaking.rooms import Room
from tests.unit.matchmaking_fakes import (
    Clock,
    Harness,
    LostTables,
    PooledBots,
    ReportingTables,
    Tables,
    Wallet,
    latest,
    paired,
    pairing_of,
    room,
    run,
)

pytestmark = pytest.mark.asyncio


async def test_the_rating_window_widens_with_waiting_time(harness: Harness) -> None:
    clock = harness.clock
    window = room(rating_window_per_second=50)  # k = 1 deviation of the difference
    # 400 points apart; the difference is uncertain by √(60² + 80²) = 100.
    wallet = Wallet({"strong": 700, "weak": 1000}, ratings={"strong": (1900, 60), "weak": (1500, 80)})
    mm = await harness.matchmaker(window, wallet)
    strong = await mm.enqueue("strong", "r", 200)
    weak = await mm.enqueue("weak", "r", 200)
    assert wallet.rated == [("strong", "erren"), ("weak", "erren")]  # the room's profile, at enqueue
    await run(mm)
    assert pairing_of(mm, strong) is None  # window 100
    clock.now += 5.0  # window 100 + 5 × 50 = 350: still apart
    await run(mm)
    assert pairing_of(mm, strong) is None
    clock.now += 1.0  # 400: they pair
    await run(mm)
    pairing = paired(mm, strong)
    assert pairing_of(mm, weak) == pairing
    assert pairing.seats[0].ticket_id == strong.ticket_id  # the longer waiter is SEAT_FIRST (T7 proposer)


async def test_the_window_is_as_wide_as_the_ratings_are_uncertain_and_ignores_balances(
    harness: Harness,
) -> None:
    """300 points apart: a new player (± 350) pairs with a settled one at once, two settled players
    (± 60 each: the difference ± 85) do not; a rich and a poor player of equal skill pair at once."""
    ratings = {
        "new": (1500.0, 350.0),
        "settled": (1800.0, 60.0),
        "low": (1500.0, 60.0),
        "high": (1800.0, 60.0),
        "rich": (1600.0, 50.0),
        "poor": (1600.0, 50.0),
    }
    wallet = Wallet(dict.fromkeys(ratings, 1000) | {"rich": 100_000, "poor": 200}, ratings=ratings)
    rooms = {name: room(room_id=name, rating_window_per_second=0) for name in ("r1", "r2", "r3")}
    mm = await harness.matchmaker(rooms, wallet)
    new, settled = await mm.enqueue("new", "r1", 100), await mm.enqueue("settled", "r1", 100)
    low, high = await mm.enqueue("low", "r2", 100), await mm.enqueue("high", "r2", 100)
    rich, poor = await mm.enqueue("rich", "r3", 100), await mm.enqueue("poor", "r3", 100)
    await run(mm)
    assert paired(mm, new) == pairing_of(mm, settled)
    assert pairing_of(mm, low) is None and pairing_of(mm, high) is None
    assert paired(mm, rich) == pairing_of(mm, poor)


async def test_tickets_expire_on_the_clock(harness: Harness) -> None:
    clock = harness.clock
    mm = await harness.matchmaker(room(ticket_seconds=10), Wallet({"a": 500}))
    ticket = await mm.enqueue("a", "r", 100)
    stream = harness.follow(mm, ticket)
    clock.now += 9.9
    await run(mm)
    assert latest(mm, ticket).state == WAITING and not stream.ended
    clock.now += 0.2
    await run(mm)
    assert latest(mm, ticket).state == DONE and mm.counts["expired", "r"] == 1
    assert isinstance(stream.seen[-1], updates.Expired) and stream.ended  # the stream's last word
    await mm.enqueue("a", "r", 100)  # free to queue again


async def test_a_refused_hold_keeps_the_other_player_waiting(harness: Harness) -> None:
    wallet = Wallet({"a": 500, "b": 500, "c": 500}, refuse=frozenset({"b"}))
    mm = await harness.matchmaker(room(), wallet)
    a = await mm.enqueue("a", "r", 100)
    b = await mm.enqueue("b", "r", 100)
    a_sees, b_sees = harness.follow(mm, a), harness.follow(mm, b)
    await run(mm)
    assert latest(mm, b).state == DONE and b_sees.ended
    assert any(isinstance(u, updates.Expired) and "hold" in u.reason for u in b_sees.seen)
    assert latest(mm, a).state == WAITING and pairing_of(mm, a) is None and not a_sees.ended
    assert wallet.holds == {}  # a's hold (placed first) was released again
    assert mm.counts["hold_refused", "r"] == 1
    c = await mm.enqueue("c", "r", 100)
    await run(mm)
    assert paired(mm, a) == pairing_of(mm, c)


async def test_allocation_picks_the_roomiest_live_server_and_waits_when_none_has_room(
    harness: Harness,
) -> None:
    clock = harness.clock
    directory = TableServerDirectory(clock=clock, ttl_seconds=10)
    tables = Tables(refuse=frozenset({"full-liar"}))
    mm = await harness.matchmaker(room(), Wallet({"a": 500, "b": 500}), tables, directory)
    a = await mm.enqueue("a", "r", 100)
    await mm.enqueue("b", "r", 100)
    a_sees = harness.follow(mm, a)
    await run(mm)
    assert paired(mm, a).state == ALLOCATING  # erren: no negotiation, 1×
    assert tables.opened == []  # no server known: the pairing waits, not lost

    directory.observe(TableServer("old", "h:1", 50, 1))
    clock.now += 11  # "old" fell silent
    directory.observe(TableServer("draining", "h:2", 99, 1, draining=True))
    directory.observe(TableServer("small", "h:3", 2, 1))
    directory.observe(TableServer("small", "h:3", 1, 0))  # an older announcement: ignored
    directory.observe(TableServer("full-liar", "h:4", 5, 1))
    await run(mm, rounds=1)
    # The roomiest live server refused; it is skipped until it announces again, then "small" is used.
    assert paired(mm, a).state == ALLOCATING and tables.opened == []
    await run(mm, rounds=1)
    pairing = paired(mm, a)
    assert pairing.state == PLAYING and tables.opened == [("small", pairing.table_id)]
    ready = a_sees.of(updates.TableReady)
    assert ready and ready[0].address == "h:3" and ready[0].table_ticket == "ticket-0" and a_sees.ended


async def test_queue_wait_is_observed_per_paired_player_on_the_clock(harness: Harness) -> None:
    clock = harness.clock
    mm = await harness.matchmaker(
        room(rating_window_per_second=50),
        Wallet({"rich": 1000, "poor": 700}, ratings={"rich": (1800, 60), "poor": (1500, 80)}),
    )
    service_metrics = ServiceMetrics("matchmaking")
    metrics.register(service_metrics, mm)
    await mm.enqueue("rich", "r", 200)
    clock.now += 1.0
    await mm.enqueue("poor", "r", 200)
    clock.now += 3.0  # 300 apart: the window 100 + 50 × 4 s (rich waited longer) reaches it
    await run(mm)

    def sample(name: str) -> float | None:
        return service_metrics.registry.get_sample_value(
            f"duel_matchmaking_queue_wait_seconds_{name}", {"room": "r"}
        )

    assert (sample("count"), sample("sum")) == (2, 4.0 + 3.0)


async def _bot_fill(
    harness: Harness, wallet: Wallet, pool_size: int, *rooms: Room
) -> tuple[Matchmaker, PooledBots, Clock]:
    bots = PooledBots(BotPool(pool_size))
    mm = await harness.matchmaker({r.room_id: r for r in rooms}, wallet, bots=bots)
    return mm, bots, harness.clock


async def test_the_bot_pool_lends_the_bot_idle_longest_and_skips_engaged_ones() -> None:
    pool = BotPool(3)
    assert pool.take(lambda _bot: False) == "bot-1"
    assert pool.take(lambda bot: bot == "bot-2") == "bot-3"  # bot-2 still at a table: kept idle
    pool.give_back("bot-3")
    pool.give_back("bot-1")
    assert [pool.take(lambda _bot: False) for _ in range(3)] == ["bot-2", "bot-3", "bot-1"]
    assert pool.take(lambda _bot: False) is None and pool.idle == 0
    with pytest.raises(ValueError):
        BotPool(0)


async def test_with_every_bot_busy_a_fill_waits_for_the_next_free_one_and_reuses_it(
    harness: Harness,
) -> None:
    wallet = Wallet({"a": 500, "c": 500, "bot-1": 500})
    mm, bots, clock = await _bot_fill(
        harness, wallet, 1, room(room_id="r", bot_fill_seconds=5), room(room_id="s", bot_fill_seconds=5)
    )
    a = await mm.enqueue("a", "r", 100)
    c = await mm.enqueue("c", "s", 100)
    clock.now += 5
    await run(mm)
    assert bots.started == [("bot-1", a.ticket_id)] and paired(mm, a).players == ("a", "bot-1")
    # Busy: not lost, asked again at every step.
    assert pairing_of(mm, c) is None and not latest(mm, c).bot_requested_at
    await run(mm)
    assert len(bots.started) == 1 and mm.counts["bot_fill", "s"] == 0

    await mm.leave_pairing("a", paired(mm, a).pairing_id)  # the bot's stream ends with the pairing
    await run(mm, rounds=1)
    await bots.stopped("bot-1", a.ticket_id)
    await run(mm)
    assert bots.started[-1] == ("bot-1", c.ticket_id)  # the same house bot
    assert paired(mm, c).players == ("c", "bot-1")
    assert mm.counts["bot_fill", "r"] == mm.counts["bot_fill", "s"] == 1


async def _one_bot_fill(harness: Harness, refuse: str) -> tuple[Matchmaker, PooledBots, Clock, Ticket]:
    """A lonely player "a" after the room's fill wait, with one house bot, paired with it and the
    holds tried; ``refuse``'s hold is refused."""
    wallet = Wallet({"a": 500, "bot-1": 500}, refuse=frozenset({refuse}))
    mm, bots, clock = await _bot_fill(harness, wallet, 1, room(bot_fill_seconds=5))
    a = await mm.enqueue("a", "r", 100)
    clock.now += 5
    await run(mm, rounds=2)  # the fill is asked for and the bot enqueues; they pair, the holds fail
    return mm, bots, clock, a


async def test_a_bot_whose_player_is_gone_is_freed(harness: Harness) -> None:
    # The human's hold is refused: the bot it was paired with is left alone, so it leaves the queue.
    mm, _bots, _clock, a = await _one_bot_fill(harness, refuse="a")
    assert latest(mm, a).state == DONE and mm.waiting("r") == 1  # the bot, alone
    await run(mm, rounds=1)
    assert mm.waiting("r") == 0 and not mm.engaged("bot-1")  # its ticket ended: free for another fill


async def test_a_refused_bot_is_replaced_after_the_retry_delay(harness: Harness) -> None:
    # The bot's hold is refused: its player waits on and gets another fill after BOT_RETRY_SECONDS.
    mm, bots, clock, a = await _one_bot_fill(harness, refuse="bot-1")
    assert latest(mm, a).state == WAITING and pairing_of(mm, a) is None
    await bots.stopped("bot-1", a.ticket_id)  # its Enqueue stream ended with "expired"
    await run(mm)
    assert len(bots.started) == 1  # not before the retry delay
    clock.now += BOT_RETRY_SECONDS
    await run(mm, rounds=1)
    assert bots.started == [("bot-1", a.ticket_id)] * 2


# --- lost table servers ---------------------------------------------------------------------------
LOST_AFTER = 60.0


async def _seated(
    harness: Harness, tables: Tables | None = None, grace: float = 0.0
) -> tuple[Matchmaker, TableServerDirectory, LostTables, Clock, Pairing]:
    """Players "a" and "b" at a table that server "s" (incarnation "one") opened; a lost table is
    closed ``grace`` seconds after it was found lost unless adopted by then."""
    clock = harness.clock
    directory = TableServerDirectory(clock=clock, ttl_seconds=15)
    closer = LostTables()
    mm = await harness.matchmaker(
        room(),
        Wallet({"a": 500, "b": 500}),
        tables or Tables(),
        directory,
        lost_tables=closer,
        server_lost_seconds=LOST_AFTER,
        adoption_grace_seconds=grace,
    )
    directory.observe(TableServer("s", "h:1", 10, 1, incarnation="one"))
    a = await mm.enqueue("a", "r", 100)
    await mm.enqueue("b", "r", 100)
    await run(mm)
    pairing = paired(mm, a)
    assert pairing.state == PLAYING and pairing.server_id == "s"
    return mm, directory, closer, clock, pairing


async def test_a_restarted_server_s_tables_are_closed_as_lost_and_the_players_may_queue_again(
    harness: Harness,
) -> None:
    mm, directory, closer, clock, pairing = await _seated(harness)
    assert pairing.incarnation == "one"  # the reply did not say: the announcement allocation read
    service_metrics = ServiceMetrics("matchmaking")
    metrics.register(service_metrics, mm)
    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="one"))  # the same process: alive
    await run(mm)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING
    with pytest.raises(FailedPrecondition):
        await mm.enqueue("a", "r", 100)  # still at the table

    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 3, incarnation="two"))  # restarted: the table is gone
    await run(mm)
    assert closer.closed == [(pairing.table_id, "s", pairing.pairing_id, "the table server was lost")]
    assert latest(mm, pairing).state == ENDED and mm.counts["table_lost", "r"] == 1
    assert service_metrics.registry.get_sample_value("duel_matchmaking_table_lost_total", {"room": "r"}) == 1
    await mm.enqueue("a", "r", 100)
    await mm.enqueue("b", "r", 100)  # free to queue again (and paired anew, on the new process)
    await run(mm)
    assert len(closer.closed) == 1  # the new pairing sits at a table of the live incarnation


async def test_a_server_silent_beyond_the_threshold_is_lost_not_one_merely_past_the_ttl(
    harness: Harness,
) -> None:
    mm, directory, closer, clock, pairing = await _seated(harness)
    clock.now += 20  # past the directory TTL: no new tables there, but its tables may still be live
    await run(mm)
    assert directory.roomiest() is None and closer.closed == []
    clock.now += LOST_AFTER - 20  # exactly the threshold: not yet
    await run(mm)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING
    clock.now += 0.5
    await run(mm)
    assert [c[0] for c in closer.closed] == [pairing.table_id] and latest(mm, pairing).state == ENDED


async def test_a_live_server_s_tables_are_never_declared_lost(harness: Harness) -> None:
    mm, directory, closer, clock, pairing = await _seated(harness)
    for number in range(2, 200):  # ten times the threshold, a heartbeat every 4 s, steps between
        clock.now += 4
        directory.observe(TableServer("s", "h:1", 9, number, incarnation="one"))
        await run(mm, rounds=1)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING and mm.counts["table_lost", "r"] == 0


async def test_the_open_reply_names_the_process_so_a_stale_announcement_is_no_restart(
    harness: Harness,
) -> None:
    # The server restarted between its last announcement ("one") and OpenTable, which "two" answered.
    mm, directory, closer, clock, pairing = await _seated(harness, ReportingTables("two"))
    assert pairing.incarnation == "two"
    await run(mm)  # the directory still says "one", announced before the table opened
    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="two"))
    await run(mm)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING


async def test_a_second_table_closed_is_harmless_when_the_lost_close_came_first(harness: Harness) -> None:
    mm, directory, closer, clock, pairing = await _seated(harness)
    clock.now += LOST_AFTER + 1
    await run(mm)
    assert len(closer.closed) == 1
    a, b = await mm.enqueue("a", "r", 100), await mm.enqueue("b", "r", 100)
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="one"))
    await run(mm)
    assert paired(mm, a).state == PLAYING
    # The server's own TableClosed of the lost table arrives late: the new pairing is untouched.
    assert await mm.table_closed(pairing.table_id) is False
    assert paired(mm, a).state == PLAYING and pairing_of(mm, b) == pairing_of(mm, a)
    assert mm.counts["table_lost", "r"] == 1


async def test_a_table_closed_by_its_server_is_never_lost_after(harness: Harness) -> None:
    # The other order: the server closed the table itself, then fell silent — nothing is lost.
    mm, _directory, closer, clock, pairing = await _seated(harness)
    assert await mm.table_closed(pairing.table_id) is True
    assert await mm.table_closed(pairing.table_id) is False  # redelivered: a no-op
    clock.now += LOST_AFTER + 1
    await run(mm)
    assert closer.closed == [] and mm.counts["table_lost", "r"] == 0


async def test_a_lost_table_counts_once_when_its_own_table_closed_comes_back_first(
    harness: Harness,
) -> None:
    mm, _directory, closer, clock, pairing = await _seated(harness)
    closer.echo = mm
    clock.now += LOST_AFTER + 1
    await run(mm)
    assert latest(mm, pairing).state == ENDED and mm.counts["table_lost", "r"] == 1
    await run(mm)
    assert len(closer.closed) == 1 and mm.counts["table_lost", "r"] == 1


async def test_a_lost_table_whose_close_cannot_be_published_keeps_its_players_until_it_is(
    harness: Harness,
) -> None:
    mm, _directory, closer, clock, pairing = await _seated(harness)
    closer.refuse = True
    clock.now += LOST_AFTER + 1
    await run(mm)
    # The wallet would still hold their carries: not free to queue yet.
    assert latest(mm, pairing).state == PLAYING and not latest(mm, pairing).closing_lost
    closer.refuse = False
    await run(mm)
    assert closer.closed == []  # not retried at every step
    clock.now += LOST_RETRY_SECONDS
    await run(mm)
    assert len(closer.closed) == 1 and latest(mm, pairing).state == ENDED


# --- adoption: another server takes the table over ------------------------------------------------
GRACE = 20.0


async def test_a_lost_table_is_closed_only_after_the_adoption_grace(harness: Harness) -> None:
    mm, directory, closer, clock, pairing = await _seated(harness, grace=GRACE)
    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="two"))  # restarted: lost
    await run(mm)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING  # waiting for an adoption
    clock.now += GRACE - 0.5
    await run(mm)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING
    clock.now += 0.5
    await run(mm)
    assert [c[0] for c in closer.closed] == [pairing.table_id] and latest(mm, pairing).state == ENDED
    assert (await mm.locate("a", pairing.table_id)).open is False


async def test_an_adopted_table_moves_and_is_no_longer_lost(harness: Harness) -> None:
    mm, directory, closer, clock, pairing = await _seated(harness, grace=GRACE)
    service_metrics = ServiceMetrics("matchmaking")
    metrics.register(service_metrics, mm)
    assert await mm.locate("b", pairing.table_id) == TableLocation(
        pairing.table_id, "h:1", "s", ("a", "b"), True
    )
    clock.now += LOST_AFTER + 1  # "s" silent: lost, the grace runs
    await run(mm)
    assert closer.closed == [] and latest(mm, pairing).lost_since
    clock.now += GRACE / 2
    moved = {"server_id": "s2", "address": "h:2", "incarnation": "x", "kind": "orphan"}
    assert await mm.table_adopted(pairing.table_id, **moved) is True
    assert await mm.table_adopted(pairing.table_id, **moved) is False  # redelivered: nothing new
    assert await mm.table_adopted("t-unknown", **moved) is False
    assert await mm.locate("a", pairing.table_id) == TableLocation(
        pairing.table_id, "h:2", "s2", ("a", "b"), True
    )
    sample = service_metrics.registry.get_sample_value
    assert sample("duel_matchmaking_table_adopted_total", {"kind": "orphan"}) == 1
    assert sample("duel_matchmaking_table_adopted_total", {"kind": "handed_over"}) == 0
    for _ in range(4):  # past the old grace; the adopter announces, so nothing is lost
        clock.now += GRACE / 2
        directory.observe(TableServer("s2", "h:2", 10, int(clock.now), incarnation="x"))
        await run(mm)
    assert closer.closed == [] and latest(mm, pairing).state == PLAYING
    # The adopter dies in turn, and no one adopts the table: closed after the grace, as lost.
    clock.now += LOST_AFTER + 1
    await run(mm)
    clock.now += GRACE
    await run(mm)
    assert [c[:2] for c in closer.closed] == [(pairing.table_id, "s2")]
    assert latest(mm, pairing).state == ENDED


async def test_only_the_table_s_players_may_locate_it(harness: Harness) -> None:
    mm, _directory, _closer, _clock, pairing = await _seated(harness)
    with pytest.raises(PermissionDenied, match="not a player at table"):
        await mm.locate("c", pairing.table_id)
    with pytest.raises(NotFound, match="no table 't-nope' is known"):
        await mm.locate("a", "t-nope")
    await mm.table_closed(pairing.table_id)
    assert (await mm.locate("a", pairing.table_id)).open is False  # closed: known, not open
    with pytest.raises(PermissionDenied):
        await mm.locate("c", pairing.table_id)


async def test_the_adoption_grace_is_a_setting_of_20_seconds() -> None:
    env = {
        "NATS_URL": "nats://127.0.0.1:1",
        "TOKEN_SECRET": "x" * 32,
        "TLS_CERT_FILE": "server.pem",
        "TLS_KEY_FILE": "server-key.pem",
    }
    assert MatchmakingConfig.from_env(env).matchmaking_adoption_grace_seconds == 20.0
    with pytest.raises(ConfigError, match="MATCHMAKING_ADOPTION_GRACE_SECONDS must not be negative"):
        MatchmakingConfig.from_env({**env, "MATCHMAKING_ADOPTION_GRACE_SECONDS": "-1"})


async def test_the_lost_threshold_must_exceed_the_directory_ttl() -> None:
    env = {
        "NATS_URL": "nats://127.0.0.1:1",
        "TOKEN_SECRET": "x" * 32,
        "MATCHMAKING_SERVER_TTL_SECONDS": "15",
        "TLS_CERT_FILE": "server.pem",
        "TLS_KEY_FILE": "server-key.pem",
    }
    assert MatchmakingConfig.from_env(env).matchmaking_server_lost_seconds == 60.0
    with pytest.raises(ConfigError, match="MATCHMAKING_SERVER_LOST_SECONDS must exceed"):
        MatchmakingConfig.from_env({**env, "MATCHMAKING_SERVER_LOST_SECONDS": "15"})


async def test_room_times_are_the_configured_clocks_in_whole_milliseconds() -> None:
    from services.matchmaking.api import room_times

    clocks = Room(
        room_id="r",
        profile="duel",
        fan_rate=10,
        bot_fill_seconds=2.0004,
        ticket_seconds=1e12,  # beyond uint32 milliseconds: shown as the largest value, not wrapped
        negotiation_seconds=0.0015,
        decision_millis=8000,
        time_bank_millis=0,
    )
    times = room_times(clocks)
    assert (times.bot_fill_millis, times.ticket_millis, times.negotiation_millis) == (2000, 2**32 - 1, 2)
    assert (times.decision_millis, times.time_bank_millis, times.reconnect_grace_millis) == (8000, 0, 60000)
    erren = Room(room_id="e", profile="erren", fan_rate=1, negotiation_seconds=10.0)
    assert room_times(erren).negotiation_millis == 0  # erren pairings never negotiate


async def test_live_tables_of_a_watchable_room_are_its_open_public_ones_newest_first_after_adoption_too(
    harness: Harness,
) -> None:
    clock = harness.clock
    directory = TableServerDirectory(clock=clock, ttl_seconds=15)
    rooms = {"r": room(watchable=True), "quiet": room(room_id="quiet")}
    players = dict.fromkeys("abcdef", 500)
    mm = await harness.matchmaker(rooms, Wallet(players), Tables(), directory)
    directory.observe(TableServer("s", "h:1", 10, 1, incarnation="one"))
    pairings = []
    for first, second in (("a", "b"), ("c", "d")):
        ticket = await mm.enqueue(first, "r", 100)
        await mm.enqueue(second, "r", 100)
        await run(mm)
        pairing = paired(mm, ticket)
        assert pairing.state == PLAYING
        pairings.append(pairing)
        clock.now += 5
    quiet = await mm.enqueue("e", "quiet", 100)
    await mm.enqueue("f", "quiet", 100)
    await run(mm)
    assert paired(mm, quiet).state == PLAYING
    older, newer = pairings

    def listed(room_id: str) -> list[str]:
        return [p.pairing_id for p in mm.live_tables(room_id)]

    assert listed("r") == [newer.pairing_id, older.pairing_id]
    assert listed("quiet") == []  # not watchable: nothing to list
    with pytest.raises(NotFound, match="no room 'nowhere'"):
        mm.live_tables("nowhere")
    clock.now += 5
    await mm.table_adopted(older.table_id, server_id="s2", address="h:2", incarnation="x", kind="orphan")
    assert listed("r") == [newer.pairing_id, older.pairing_id]  # the order is the opening's
    assert mm.live_tables("r")[1].address == "h:2"
    await mm.records.update(latest(mm, older), private_table=True)
    assert listed("r") == [newer.pairing_id]
    await mm.table_closed(newer.table_id)
    assert listed("r") == [newer.pairing_id]  # its spectators see the end only after the delay
    clock.now += 30
    assert listed("r") == []


async def test_a_room_says_whether_it_is_watchable_and_its_spectate_delay() -> None:
    assert (room().watchable, room().spectate_delay) == (False, 30)  # the contract's default delay
    assert room(watchable=True, spectate_delay_seconds=5).spectate_delay == 5
    with pytest.raises(ValueError, match="spectate_delay_seconds"):
        room(spectate_delay_seconds=-1)
