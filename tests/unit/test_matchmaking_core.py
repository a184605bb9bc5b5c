"""Matchmaking's domain on an injected clock: the skill-rating window (uncertainty, waiting), tickets expire,
a refused hold sends the other player back to the queue, allocation picks the roomiest live server
and a pairing waits while none has room. The wallet and the table servers are in-memory ports here;
tests/integration/test_matchmaking.py runs the same core against the real wallet over gRPC."""

from __future__ import annotations

import asyncio

import pytest

from duelmahjong.platform.config import ConfigError
from duelmahjong.platform.errors import FailedPrecondition, NotFound, PermissionDenied
from duelmahjong.platform.metrics import ServiceMetrics
from services.matchmaking import metrics, updates
from services.matchmaking.allocation import LOST_RETRY_SECONDS
from services.matchmaking.bots import BotPool
from services.matchmaking.config import MatchmakingConfig
from services.matchmaking.core import BOT_RETRY_SECONDS, Matchmaker
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.pairing import (
    ALLOCATING,
    ENDED,
    PLAYING,
    BotsBusy,
    OpenedTable,
    Pairing,
    QueueEntry,
    SkillEstimate,
    TableLocation,
    TableUnavailable,
)
from services.matchmaking.rooms import Room

pytestmark = pytest.mark.asyncio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Wallet:
    def __init__(
        self,
        balances: dict[str, int],
        refuse: frozenset[str] = frozenset(),
        ratings: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.balances, self.refuse = balances, refuse
        self.ratings = ratings or {}  # player -> (rating, deviation); a new player's by default
        self.rated: list[tuple[str, str]] = []
        self.holds: dict[tuple[str, str], int] = {}

    async def available(self, player_id: str) -> int:
        return self.balances[player_id]

    async def rating(self, player_id: str, profile: str) -> SkillEstimate:
        self.rated.append((player_id, profile))
        return SkillEstimate(*self.ratings.get(player_id, (1500.0, 350.0)))

    async def display_name(self, player_id: str) -> str:
        return player_id.upper()

    async def place_hold(self, player_id: str, pairing_id: str, amount: int, fee: int) -> None:
        if player_id in self.refuse:
            raise FailedPrecondition("not enough prestige")
        self.holds[(player_id, pairing_id)] = amount

    async def release_hold(self, player_id: str, pairing_id: str) -> None:
        self.holds.pop((player_id, pairing_id), None)


class Tables:
    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.refuse = refuse
        self.opened: list[tuple[str, str]] = []

    async def open(self, server: TableServer, pairing: Pairing) -> OpenedTable:
        if server.server_id in self.refuse:
            raise TableUnavailable("full")
        self.opened.append((server.server_id, pairing.table_id))
        return OpenedTable(server.address, {0: "ticket-0", 1: "ticket-1"})


def _room(**overrides: object) -> Room:
    settings: dict[str, object] = {"room_id": "r", "profile": "erren", "fan_rate": 1, "fee": 5}
    settings.update(overrides)
    return Room(**settings)  # type: ignore[arg-type]


def _drain(entry: QueueEntry) -> list[updates.Update]:
    seen = []
    while not entry.updates.empty():
        seen.append(entry.updates.get_nowait())
    return seen


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_rating_window_widens_with_waiting_time() -> None:
    clock = Clock()
    room = _room(rating_window_per_second=50)  # k = 1 deviation of the difference
    # 400 points apart; the difference is uncertain by √(60² + 80²) = 100.
    wallet = Wallet({"strong": 700, "weak": 1000}, ratings={"strong": (1900, 60), "weak": (1500, 80)})
    mm = Matchmaker({"r": room}, wallet, Tables(), TableServerDirectory(clock=clock), clock=clock)
    strong = await mm.enqueue("strong", "r", 200)
    weak = await mm.enqueue("weak", "r", 200)
    assert wallet.rated == [("strong", "erren"), ("weak", "erren")]  # the room's profile, at enqueue
    assert strong.pairing is None  # window 100
    clock.now += 5.0  # window 100 + 5 × 50 = 350: still apart
    mm.tick()
    assert strong.pairing is None
    clock.now += 1.0  # 400: they pair
    mm.tick()
    assert strong.pairing is not None and strong.pairing is weak.pairing
    assert strong.pairing.seats[0] is strong  # the longer waiter is SEAT_FIRST (T7 proposer)


async def test_the_window_is_as_wide_as_the_ratings_are_uncertain_and_ignores_balances() -> None:
    """300 points apart: a new player (± 350) pairs with a settled one at once, two settled players
    (± 60 each: the difference ± 85) do not; a rich and a poor player of equal skill pair at once."""
    clock = Clock()
    ratings = {
        "new": (1500.0, 350.0),
        "settled": (1800.0, 60.0),
        "low": (1500.0, 60.0),
        "high": (1800.0, 60.0),
        "rich": (1600.0, 50.0),
        "poor": (1600.0, 50.0),
    }
    wallet = Wallet(dict.fromkeys(ratings, 1000) | {"rich": 100_000, "poor": 200}, ratings=ratings)
    rooms = {name: _room(room_id=name, rating_window_per_second=0) for name in ("r1", "r2", "r3")}
    mm = Matchmaker(rooms, wallet, Tables(), TableServerDirectory(clock=clock), clock=clock)
    new, settled = await mm.enqueue("new", "r1", 100), await mm.enqueue("settled", "r1", 100)
    low, high = await mm.enqueue("low", "r2", 100), await mm.enqueue("high", "r2", 100)
    rich, poor = await mm.enqueue("rich", "r3", 100), await mm.enqueue("poor", "r3", 100)
    assert new.pairing is not None and new.pairing is settled.pairing
    assert low.pairing is None and high.pairing is None
    assert rich.pairing is not None and rich.pairing is poor.pairing


async def test_tickets_expire_on_the_clock() -> None:
    clock = Clock()
    mm = Matchmaker(
        {"r": _room(ticket_seconds=10)}, Wallet({"a": 500}), Tables(), TableServerDirectory(), clock=clock
    )
    entry = await mm.enqueue("a", "r", 100)
    clock.now += 9.9
    mm.tick()
    assert not entry.done
    clock.now += 0.2
    mm.tick()
    assert entry.done and isinstance(_drain(entry)[-2], updates.Expired)
    await mm.enqueue("a", "r", 100)  # free to queue again


async def test_a_refused_hold_keeps_the_other_player_waiting() -> None:
    clock = Clock()
    wallet = Wallet({"a": 500, "b": 500, "c": 500}, refuse=frozenset({"b"}))
    mm = Matchmaker({"r": _room()}, wallet, Tables(), TableServerDirectory(clock=clock), clock=clock)
    a = await mm.enqueue("a", "r", 100)
    b = await mm.enqueue("b", "r", 100)
    await _settle()
    assert b.done and any(isinstance(u, updates.Expired) and "hold" in u.reason for u in _drain(b))
    assert not a.done and a.pairing is None
    assert wallet.holds == {}  # a's hold (placed first) was released again
    c = await mm.enqueue("c", "r", 100)
    await _settle()
    assert a.pairing is not None and a.pairing is c.pairing


async def test_allocation_picks_the_roomiest_live_server_and_waits_when_none_has_room() -> None:
    clock = Clock()
    directory = TableServerDirectory(clock=clock, ttl_seconds=10)
    tables = Tables(refuse=frozenset({"full-liar"}))
    mm = Matchmaker({"r": _room()}, Wallet({"a": 500, "b": 500}), tables, directory, clock=clock)
    a = await mm.enqueue("a", "r", 100)
    await mm.enqueue("b", "r", 100)
    await _settle()
    assert a.pairing is not None and a.pairing.state == ALLOCATING  # erren: no negotiation, 1×
    assert tables.opened == []  # no server known: the pairing waits, not lost

    directory.observe(TableServer("old", "h:1", 50, 1))
    clock.now += 11  # "old" fell silent
    directory.observe(TableServer("draining", "h:2", 99, 1, draining=True))
    directory.observe(TableServer("small", "h:3", 2, 1))
    directory.observe(TableServer("small", "h:3", 1, 0))  # an older announcement: ignored
    directory.observe(TableServer("full-liar", "h:4", 5, 1))
    mm.tick()
    await _settle()
    # The roomiest live server refused; it is skipped until it announces again, then "small" is used.
    assert a.pairing.state == ALLOCATING
    mm.tick()
    await _settle()
    assert a.pairing.state == PLAYING and tables.opened == [("small", a.pairing.table_id)]
    ready = [u for u in _drain(a) if isinstance(u, updates.TableReady)]
    assert ready and ready[0].address == "h:3" and ready[0].table_ticket == "ticket-0"


async def test_queue_wait_is_observed_per_paired_player_on_the_clock() -> None:
    clock = Clock()
    room = _room(rating_window_per_second=50)
    mm = Matchmaker(
        {"r": room},
        Wallet({"rich": 1000, "poor": 700}, ratings={"rich": (1800, 60), "poor": (1500, 80)}),
        Tables(),
        TableServerDirectory(clock=clock),
        clock=clock,
    )
    service_metrics = ServiceMetrics("matchmaking")
    metrics.register(service_metrics, mm)
    await mm.enqueue("rich", "r", 200)
    clock.now += 1.0
    await mm.enqueue("poor", "r", 200)
    clock.now += 3.0  # 300 apart: the window 100 + 50 × 4 s (rich waited longer) reaches it
    mm.tick()

    def sample(name: str) -> float | None:
        return service_metrics.registry.get_sample_value(
            f"duel_matchmaking_queue_wait_seconds_{name}", {"room": "r"}
        )

    assert (sample("count"), sample("sum")) == (2, 4.0 + 3.0)


class PooledBots:
    """Bot fill as ClientBots does it, minus the client: a house bot from the pool enqueues at once."""

    def __init__(self, pool: BotPool) -> None:
        self.pool = pool
        self.mm: Matchmaker | None = None
        self.started: list[tuple[str, str]] = []  # (bot id, ticket filled for)

    async def start(self, room: Room, for_ticket: str) -> str:
        assert self.mm is not None
        bot_id = self.pool.take(self.mm.engaged)
        if bot_id is None:
            raise BotsBusy("every house bot is playing")
        self.started.append((bot_id, for_ticket))
        self.mm.expect_bot(bot_id, for_ticket)
        await self.mm.enqueue(bot_id, room.room_id, room.carry_min)
        return bot_id

    def stopped(self, bot_id: str, for_ticket: str) -> None:
        """What ClientBots does once the bot's client stops (its stream ended)."""
        assert self.mm is not None
        self.mm.bot_stopped(bot_id, for_ticket)
        self.pool.give_back(bot_id)


def _bot_fill(wallet: Wallet, pool_size: int, *rooms: Room) -> tuple[Matchmaker, PooledBots, Clock]:
    clock = Clock()
    bots = PooledBots(BotPool(pool_size))
    mm = Matchmaker(
        {room.room_id: room for room in rooms},
        wallet,
        Tables(),
        TableServerDirectory(),
        bots=bots,
        clock=clock,
    )
    bots.mm = mm
    return mm, bots, clock


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


async def test_with_every_bot_busy_a_fill_waits_for_the_next_free_one_and_reuses_it() -> None:
    wallet = Wallet({"a": 500, "c": 500, "bot-1": 500})
    mm, bots, clock = _bot_fill(
        wallet, 1, _room(room_id="r", bot_fill_seconds=5), _room(room_id="s", bot_fill_seconds=5)
    )
    a = await mm.enqueue("a", "r", 100)
    c = await mm.enqueue("c", "s", 100)
    clock.now += 5
    mm.tick()
    await _settle()
    assert bots.started == [("bot-1", a.ticket_id)] and a.pairing is not None
    assert c.pairing is None and not c.bot_requested  # busy: not lost, asked again every tick
    for _ in range(3):
        mm.tick()
        await _settle()
    assert len(bots.started) == 1 and mm.counts["bot_fill", "s"] == 0

    mm.leave_pairing("a", a.pairing.pairing_id)  # a's pairing ends: the bot's stream ends with it
    await _settle()
    bots.stopped("bot-1", a.ticket_id)
    mm.tick()
    await _settle()
    assert bots.started[-1] == ("bot-1", c.ticket_id) and c.pairing is not None  # the same house bot
    assert mm.counts["bot_fill", "r"] == mm.counts["bot_fill", "s"] == 1


async def _one_bot_fill(refuse: str) -> tuple[Matchmaker, PooledBots, Clock, QueueEntry]:
    """A lonely player "a" after the room's fill wait, with one house bot; ``refuse``'s hold is refused."""
    wallet = Wallet({"a": 500, "bot-1": 500}, refuse=frozenset({refuse}))
    mm, bots, clock = _bot_fill(wallet, 1, _room(bot_fill_seconds=5))
    a = await mm.enqueue("a", "r", 100)
    clock.now += 5
    mm.tick()
    await _settle()
    return mm, bots, clock, a


async def test_a_bot_whose_player_is_gone_is_freed_and_a_refused_bot_is_replaced_later() -> None:
    # The human's hold is refused: the bot it was paired with is left alone, so it leaves the queue.
    mm, bots, clock, a = await _one_bot_fill(refuse="a")
    assert a.done and mm.waiting("r") == 1  # the bot, alone
    mm.tick()
    assert mm.waiting("r") == 0 and not mm.engaged("bot-1")  # its ticket ended: free for another fill

    # The bot's hold is refused: its player waits on and gets another fill after BOT_RETRY_SECONDS.
    mm, bots, clock, a = await _one_bot_fill(refuse="bot-1")
    assert not a.done and a.pairing is None
    bots.stopped("bot-1", a.ticket_id)  # its Enqueue stream ended with "expired"
    mm.tick()
    await _settle()
    assert len(bots.started) == 1  # not before the retry delay
    clock.now += BOT_RETRY_SECONDS
    mm.tick()
    await _settle()
    assert bots.started == [("bot-1", a.ticket_id)] * 2


# --- lost table servers ---------------------------------------------------------------------------
LOST_AFTER = 60.0


class LostTables:
    """The TableClosed matchmaking publishes for a lost table, recorded (or refused: NATS away).
    ``echo``: the published TableClosed comes back through matchmaking's own table-events consumer
    before the publish returns (the consumer is quicker than the PubAck)."""

    def __init__(self) -> None:
        self.closed: list[tuple[str, str, str, str]] = []  # (table, server, pairing, reason)
        self.refuse = False
        self.echo: Matchmaker | None = None

    async def close(self, pairing: Pairing, reason: str) -> None:
        if self.refuse:
            raise ConnectionError("nats is away")
        self.closed.append((pairing.table_id, pairing.server_id, pairing.pairing_id, reason))
        if self.echo is not None:
            self.echo.table_closed(pairing.table_id)


class ReportingTables(Tables):
    """OpenTable as a server that names its process in the reply."""

    def __init__(self, incarnation: str) -> None:
        super().__init__()
        self.incarnation = incarnation

    async def open(self, server: TableServer, pairing: Pairing) -> OpenedTable:
        opened = await super().open(server, pairing)
        return OpenedTable(opened.address, opened.tickets, incarnation=self.incarnation)


async def _seated(
    tables: Tables | None = None, grace: float = 0.0
) -> tuple[Matchmaker, TableServerDirectory, LostTables, Clock, Pairing]:
    """Players "a" and "b" at a table that server "s" (incarnation "one") opened; a lost table is
    closed ``grace`` seconds after it was found lost unless adopted by then."""
    clock = Clock()
    directory = TableServerDirectory(clock=clock, ttl_seconds=15)
    closer = LostTables()
    mm = Matchmaker(
        {"r": _room()},
        Wallet({"a": 500, "b": 500}),
        tables or Tables(),
        directory,
        lost_tables=closer,
        server_lost_seconds=LOST_AFTER,
        adoption_grace_seconds=grace,
        clock=clock,
    )
    directory.observe(TableServer("s", "h:1", 10, 1, incarnation="one"))
    a = await mm.enqueue("a", "r", 100)
    await mm.enqueue("b", "r", 100)
    await _settle()
    assert a.pairing is not None and a.pairing.state == PLAYING
    assert a.pairing.server_id == "s"
    return mm, directory, closer, clock, a.pairing


async def _tick(mm: Matchmaker) -> None:
    mm.tick()
    await _settle()


async def test_a_restarted_server_s_tables_are_closed_as_lost_and_the_players_may_queue_again() -> None:
    mm, directory, closer, clock, pairing = await _seated()
    assert pairing.incarnation == "one"  # the reply did not say: the announcement allocation read
    service_metrics = ServiceMetrics("matchmaking")
    metrics.register(service_metrics, mm)
    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="one"))  # the same process: alive
    await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING
    with pytest.raises(FailedPrecondition):
        await mm.enqueue("a", "r", 100)  # still at the table

    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 3, incarnation="two"))  # restarted: the table is gone
    await _tick(mm)
    assert closer.closed == [(pairing.table_id, "s", pairing.pairing_id, "the table server was lost")]
    assert pairing.state == ENDED and mm.counts["table_lost", "r"] == 1
    assert service_metrics.registry.get_sample_value("duel_matchmaking_table_lost_total", {"room": "r"}) == 1
    await mm.enqueue("a", "r", 100)
    await mm.enqueue("b", "r", 100)  # free to queue again (and paired anew, on the new process)
    await _tick(mm)
    assert len(closer.closed) == 1  # the new pairing sits at a table of the live incarnation


async def test_a_server_silent_beyond_the_threshold_is_lost_not_one_merely_past_the_ttl() -> None:
    mm, directory, closer, clock, pairing = await _seated()
    clock.now += 20  # past the directory TTL: no new tables there, but its tables may still be live
    await _tick(mm)
    assert directory.roomiest() is None and closer.closed == []
    clock.now += LOST_AFTER - 20  # exactly the threshold: not yet
    await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING
    clock.now += 0.5
    await _tick(mm)
    assert [c[0] for c in closer.closed] == [pairing.table_id] and pairing.state == ENDED


async def test_a_live_server_s_tables_are_never_declared_lost() -> None:
    mm, directory, closer, clock, pairing = await _seated()
    for number in range(2, 200):  # ten times the threshold, a heartbeat every 4 s, ticks between
        clock.now += 4
        directory.observe(TableServer("s", "h:1", 9, number, incarnation="one"))
        await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING and mm.counts["table_lost", "r"] == 0


async def test_the_open_reply_names_the_process_so_a_stale_announcement_is_no_restart() -> None:
    # The server restarted between its last announcement ("one") and OpenTable, which "two" answered.
    mm, directory, closer, clock, pairing = await _seated(ReportingTables("two"))
    assert pairing.incarnation == "two"
    await _tick(mm)  # the directory still says "one", announced before the table opened
    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="two"))
    await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING


async def test_a_second_table_closed_is_harmless_whichever_comes_first() -> None:
    mm, directory, closer, clock, pairing = await _seated()
    clock.now += LOST_AFTER + 1
    await _tick(mm)
    assert len(closer.closed) == 1
    a, b = await mm.enqueue("a", "r", 100), await mm.enqueue("b", "r", 100)
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="one"))
    await _tick(mm)
    assert a.pairing is not None and a.pairing.state == PLAYING
    # The server's own TableClosed of the lost table arrives late: the new pairing is untouched.
    assert mm.table_closed(pairing.table_id) is False
    assert a.pairing.state == PLAYING and b.pairing is a.pairing and mm.counts["table_lost", "r"] == 1

    # The other order: the server closed the table itself, then fell silent — nothing is lost.
    mm, directory, closer, clock, pairing = await _seated()
    assert mm.table_closed(pairing.table_id) is True
    clock.now += LOST_AFTER + 1
    await _tick(mm)
    assert closer.closed == [] and mm.counts["table_lost", "r"] == 0


async def test_a_lost_table_counts_once_when_its_own_table_closed_comes_back_first() -> None:
    mm, _directory, closer, clock, pairing = await _seated()
    closer.echo = mm
    clock.now += LOST_AFTER + 1
    await _tick(mm)
    assert pairing.state == ENDED and mm.counts["table_lost", "r"] == 1
    await _tick(mm)
    assert len(closer.closed) == 1 and mm.counts["table_lost", "r"] == 1


async def test_a_lost_table_whose_close_cannot_be_published_keeps_its_players_until_it_is() -> None:
    mm, _directory, closer, clock, pairing = await _seated()
    closer.refuse = True
    clock.now += LOST_AFTER + 1
    await _tick(mm)
    assert pairing.state == PLAYING  # the wallet would still hold their carries: not free to queue yet
    closer.refuse = False
    await _tick(mm)
    assert closer.closed == []  # not retried at every tick
    clock.now += LOST_RETRY_SECONDS
    await _tick(mm)
    assert len(closer.closed) == 1 and pairing.state == ENDED


# --- adoption: another server takes the table over ------------------------------------------------
GRACE = 20.0


async def test_a_lost_table_is_closed_only_after_the_adoption_grace() -> None:
    mm, directory, closer, clock, pairing = await _seated(grace=GRACE)
    clock.now += 2
    directory.observe(TableServer("s", "h:1", 10, 2, incarnation="two"))  # restarted: lost
    await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING  # waiting for an adoption
    clock.now += GRACE - 0.5
    await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING
    clock.now += 0.5
    await _tick(mm)
    assert [c[0] for c in closer.closed] == [pairing.table_id] and pairing.state == ENDED
    assert mm.locate("a", pairing.table_id).open is False


async def test_an_adopted_table_moves_and_is_no_longer_lost() -> None:
    mm, directory, closer, clock, pairing = await _seated(grace=GRACE)
    service_metrics = ServiceMetrics("matchmaking")
    metrics.register(service_metrics, mm)
    assert mm.locate("b", pairing.table_id) == TableLocation(pairing.table_id, "h:1", "s", ("a", "b"), True)
    clock.now += LOST_AFTER + 1  # "s" silent: lost, the grace runs
    await _tick(mm)
    assert closer.closed == []
    clock.now += GRACE / 2
    moved = {"server_id": "s2", "address": "h:2", "incarnation": "x", "kind": "orphan"}
    assert mm.table_adopted(pairing.table_id, **moved) is True
    assert mm.table_adopted(pairing.table_id, **moved) is False  # redelivered: nothing new
    assert mm.table_adopted("t-unknown", **moved) is False
    assert mm.locate("a", pairing.table_id) == TableLocation(pairing.table_id, "h:2", "s2", ("a", "b"), True)
    sample = service_metrics.registry.get_sample_value
    assert sample("duel_matchmaking_table_adopted_total", {"kind": "orphan"}) == 1
    assert sample("duel_matchmaking_table_adopted_total", {"kind": "handed_over"}) == 0
    for _ in range(4):  # past the old grace; the adopter announces, so nothing is lost
        clock.now += GRACE / 2
        directory.observe(TableServer("s2", "h:2", 10, int(clock.now), incarnation="x"))
        await _tick(mm)
    assert closer.closed == [] and pairing.state == PLAYING
    # The adopter dies in turn, and no one adopts the table: closed after the grace, as lost.
    clock.now += LOST_AFTER + 1
    await _tick(mm)
    clock.now += GRACE
    await _tick(mm)
    assert [c[:2] for c in closer.closed] == [(pairing.table_id, "s2")] and pairing.state == ENDED


async def test_only_the_table_s_players_may_locate_it() -> None:
    mm, _directory, _closer, _clock, pairing = await _seated()
    with pytest.raises(PermissionDenied, match="not a player at table"):
        mm.locate("c", pairing.table_id)
    with pytest.raises(NotFound, match="no table 't-nope' is known"):
        mm.locate("a", "t-nope")
    mm.table_closed(pairing.table_id)
    assert mm.locate("a", pairing.table_id).open is False  # closed: known, not open
    with pytest.raises(PermissionDenied):
        mm.locate("c", pairing.table_id)


async def test_the_adoption_grace_is_a_setting_of_20_seconds() -> None:
    env = {"NATS_URL": "nats://127.0.0.1:1", "TOKEN_SECRET": "x" * 32}
    assert MatchmakingConfig.from_env(env).matchmaking_adoption_grace_seconds == 20.0
    with pytest.raises(ConfigError, match="MATCHMAKING_ADOPTION_GRACE_SECONDS must not be negative"):
        MatchmakingConfig.from_env({**env, "MATCHMAKING_ADOPTION_GRACE_SECONDS": "-1"})


async def test_the_lost_threshold_must_exceed_the_directory_ttl() -> None:
    env = {"NATS_URL": "nats://127.0.0.1:1", "TOKEN_SECRET": "x" * 32, "MATCHMAKING_SERVER_TTL_SECONDS": "15"}
    assert MatchmakingConfig.from_env(env).matchmaking_server_lost_seconds == 60.0
    with pytest.raises(ConfigError, match="MATCHMAKING_SERVER_LOST_SECONDS must exceed"):
        MatchmakingConfig.from_env({**env, "MATCHMAKING_SERVER_LOST_SECONDS": "15"})


async def test_room_times_are_the_configured_clocks_in_whole_milliseconds() -> None:
    from services.matchmaking.api import room_times
    from services.matchmaking.rooms import Room

    room = Room(
        room_id="r",
        profile="duel",
        fan_rate=10,
        bot_fill_seconds=2.0004,
        ticket_seconds=1e12,  # beyond uint32 milliseconds: shown as the largest value, not wrapped
        negotiation_seconds=0.0015,
        decision_millis=8000,
        time_bank_millis=0,
    )
    times = room_times(room)
    assert (times.bot_fill_millis, times.ticket_millis, times.negotiation_millis) == (2000, 2**32 - 1, 2)
    assert (times.decision_millis, times.time_bank_millis, times.reconnect_grace_millis) == (8000, 0, 60000)
    erren = Room(room_id="e", profile="erren", fan_rate=1, negotiation_seconds=10.0)
    assert room_times(erren).negotiation_millis == 0  # erren pairings never negotiate


async def test_live_tables_of_a_watchable_room_are_its_open_public_ones_newest_first_after_adoption_too() -> (
    None
):
    clock = Clock()
    directory = TableServerDirectory(clock=clock, ttl_seconds=15)
    rooms = {"r": _room(watchable=True), "quiet": _room(room_id="quiet")}
    players = {name: 500 for name in "abcdef"}
    mm = Matchmaker(rooms, Wallet(players), Tables(), directory, clock=clock)
    directory.observe(TableServer("s", "h:1", 10, 1, incarnation="one"))
    pairings = []
    for first, second in (("a", "b"), ("c", "d")):
        entry = await mm.enqueue(first, "r", 100)
        await mm.enqueue(second, "r", 100)
        await _settle()
        assert entry.pairing is not None and entry.pairing.state == PLAYING
        pairings.append(entry.pairing)
        clock.now += 5
    quiet = await mm.enqueue("e", "quiet", 100)
    await mm.enqueue("f", "quiet", 100)
    await _settle()
    assert quiet.pairing is not None and quiet.pairing.state == PLAYING
    older, newer = pairings
    assert mm.live_tables("r") == [newer, older]
    assert mm.live_tables("quiet") == []  # not watchable: nothing to list
    with pytest.raises(NotFound, match="no room 'nowhere'"):
        mm.live_tables("nowhere")
    clock.now += 5
    mm.table_adopted(older.table_id, server_id="s2", address="h:2", incarnation="x", kind="orphan")
    assert mm.live_tables("r") == [newer, older] and older.address == "h:2"  # the order is the opening's
    older.private_table = True
    assert mm.live_tables("r") == [newer]
    mm.table_closed(newer.table_id)
    assert mm.live_tables("r") == [newer]  # its spectators see the end only after the delay
    clock.now += 30
    assert mm.live_tables("r") == []


async def test_a_room_says_whether_it_is_watchable_and_its_spectate_delay() -> None:
    assert (_room().watchable, _room().spectate_delay) == (False, 30)  # the contract's default delay
    assert _room(watchable=True, spectate_delay_seconds=5).spectate_delay == 5
    with pytest.raises(ValueError, match="spectate_delay_seconds"):
        _room(spectate_delay_seconds=-1)
