"""Settlement over real NATS JetStream into real Postgres: concurrency and exactly-once.

Each test gets private copies of the event streams (a namespace), so the durable consumers see only
the events the test publishes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest
import pytest_asyncio
from google.protobuf.message import Message

from duelmahjong.platform import db, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import events_pb2, rules_pb2
from services.wallet.audit import audit_ledger
from services.wallet.commands import Grant, PlaceHold, ReleaseHolds
from services.wallet.events import SettlementConsumer
from services.wallet.ledger_store import LedgerStore
from services.wallet.main import MIGRATIONS
from services.wallet.players import PlayerStore
from services.wallet.rating_board import RatingBoard
from services.wallet.sources import SOURCES, Namespace

pytestmark = pytest.mark.integration

SUBJECT_OF = {source.message: source.subject for source in SOURCES}


@dataclass
class Wallet:
    ledger: LedgerStore
    namespace: Namespace
    nats_url: str
    nats_options: dict[str, str]

    def consumer(self, bus: Bus, **options: object) -> SettlementConsumer:
        return SettlementConsumer(
            bus,
            self.ledger,
            ServiceMetrics("wallet"),
            namespace=self.namespace,
            **options,  # type: ignore[arg-type]
        )

    async def publish(self, bus: Bus, event: Message, *, copy: int = 0) -> None:
        event_id = event.envelope.event_id  # type: ignore[attr-defined]
        # A copy under another message id is a true redelivery: JetStream's duplicate window keeps it.
        msg_id = event_id if copy == 0 else f"{event_id}#copy{copy}"
        await bus.publish(
            self.namespace.subject(SUBJECT_OF[type(event)]), event.SerializeToString(), msg_id=msg_id
        )

    async def players(self, count: int, prestige: int) -> list[str]:
        ids = [f"p{n:02d}" for n in range(count)]
        for player_id in ids:
            await PlayerStore(self.ledger.pool, self.ledger).create_player(player_id, player_id)
            grant = Grant(f"start:{player_id}", player=player_id, amount=prestige, grant_reason="test")
            await self.ledger.execute(grant, record_rejection=False)
        return ids


@pytest_asyncio.fixture
async def wallet(
    database_url: str, nats_server_url: str, harness_nats: dict[str, str], unique_name: Callable[[str], str]
) -> AsyncIterator[Wallet]:
    pool = await db.create_pool(database_url, max_size=10)
    await db.apply_migrations(pool, MIGRATIONS, service="wallet")
    yield Wallet(LedgerStore(pool), Namespace(unique_name("w").lower()), nats_server_url, harness_nats)
    await pool.close()


def envelope(event_id: str) -> events_pb2.EventEnvelope:
    return events_pb2.EventEnvelope(event_id=event_id, producer="test")


def hand_scored(
    hand_id: str,
    payer: str,
    payee: str,
    stake: int,
    *,
    rated: bool = False,
    guess: rules_pb2.GuessStake | None = None,
) -> events_pb2.HandScored:
    """``rated``: with its players (the payer in SEAT_FIRST) and profile, so it moves their ratings;
    ``guess``: the winner's 猜大小 (T12), applied with the hand."""
    transfer = rules_pb2.Transfer(from_player_id=payer, to_player_id=payee, amount=stake)
    return events_pb2.HandScored(
        envelope=envelope(f"scored-{hand_id}"),
        table_id="t1",
        hand_id=hand_id,
        settlement=rules_pb2.Settlement(hand_id=hand_id, fan_amount=stake, transfer=transfer),
        player_ids=[payer, payee] if rated else [],
        profile=rules_pb2.PROFILE_DUEL if rated else rules_pb2.PROFILE_UNSPECIFIED,
        guess=guess,
    )


def fee_charged(hand_id: str, player: str, amount: int) -> events_pb2.FeeCharged:
    return events_pb2.FeeCharged(
        envelope=envelope(f"fee-{hand_id}-{player}"),
        table_id="t1",
        hand_id=hand_id,
        player_id=player,
        amount=amount,
    )


async def drained(bus: Bus, consumer: SettlementConsumer) -> bool:
    """True once every durable of ``consumer`` has nothing pending and nothing awaiting an ack."""
    for source in consumer.sources:
        spec = consumer.consumer_spec(source)
        info = await bus.js.consumer_info(spec.stream, spec.durable)
        if info.num_pending or info.num_ack_pending:
            return False
    return True


async def run_until_drained(bus: Bus, *consumers: SettlementConsumer, within: float) -> None:
    """Run ``consumers`` (replicas sharing the durables) until nothing is pending or awaiting an ack."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(consumer.run(stop)) for consumer in consumers]
    try:
        async with asyncio.timeout(within):
            await consumers[0].declare()
            for _poll in itertools.count():  # polls JetStream's own counters, nothing to wait on
                if any(task.done() for task in tasks) or await drained(bus, consumers[0]):
                    break
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.gather(*tasks)  # raises whatever killed a consumer


async def play_from_holds(wallet: Wallet, players: list[str]) -> None:
    """Half the players play from holds: fees and hands draw on them concurrently."""
    for player_id in players[::2]:
        await wallet.ledger.execute(
            PlaceHold(
                f"hold:{player_id}", pairing_id=f"p-{player_id}", player=player_id, carry=3_000, fee=100
            ),
            record_rejection=False,
        )


def settlements(
    players: list[str], count: int, *, seed: int, fee_every: int, top_stake: int
) -> list[Message]:
    """Hands between random pairs, every ``fee_every``-th a room fee (the house account moves too)."""
    rng = random.Random(seed)
    events: list[Message] = []
    for n in range(count):
        payer, payee = rng.sample(players, 2)
        if n % fee_every == fee_every - 1:
            events.append(fee_charged(f"h{n}", payer, rng.randint(1, 50)))
        else:
            # Every seventh hand's winner guesses 猜大小 (T12): the guess bank moves in the hand's own
            # transaction, staked on what the carries let through.
            won = rng.random() < 0.5
            guess = (
                rules_pb2.GuessStake(
                    guess=rules_pb2.GUESS_BIG,
                    dice=[1, 2, 3],
                    won=won,
                    payout_multiplier=rng.randint(2, 5) if won else 0,
                )
                if n % 7 == 3
                else None
            )
            events.append(hand_scored(f"h{n}", payer, payee, rng.randint(1, top_stake), guess=guess))
    return events


async def publish_all(wallet: Wallet, bus: Bus, events: list[Message]) -> None:
    for chunk in range(0, len(events), 200):
        await asyncio.gather(*(wallet.publish(bus, event) for event in events[chunk : chunk + 200]))


@pytest.mark.asyncio
async def test_2000_settlements_50_players_8_workers_keep_every_invariant(wallet: Wallet, bus: Bus) -> None:
    players = await wallet.players(50, 5_000)
    await play_from_holds(wallet, players)
    # A fifth are room fees; stakes large enough that carries (here: whole balances) often cap them (H1).
    events = settlements(players, 2_000, seed=20261130, fee_every=5, top_stake=3_000)
    consumer = wallet.consumer(bus, workers=8, ack_wait_seconds=30.0)
    await consumer.declare()  # the streams and durables exist before anything is published
    await publish_all(wallet, bus, events)
    await run_until_drained(bus, consumer, within=90)

    pool = wallet.ledger.pool
    applied = await pool.fetchval("SELECT count(*) FROM wallet.transactions WHERE kind IN ('hand', 'charge')")
    assert applied == 2_000
    assert await audit_ledger(pool) == []  # each balance = its replayed entries; total 0; all balanced
    in_circulation = await pool.fetchval(
        "SELECT sum(balance) FROM wallet.accounts WHERE house IS DISTINCT FROM 'grants'"
    )
    assert in_circulation == 50 * 5_000  # the grand total of players + house never changed
    guessed = await pool.fetchval(
        "SELECT count(DISTINCT transaction_id) FROM wallet.entries WHERE purpose = 'guess'"
    )
    assert guessed > 0  # hands whose guess moved prestige, each in the hand's own transaction
    assert await pool.fetchval("SELECT min(balance) FROM wallet.accounts WHERE player_id IS NOT NULL") >= 0
    for player_id in players[::2]:  # every hold releases cleanly: held was exact all along
        release = ReleaseHolds(f"close:{player_id}", pairing_id=f"p-{player_id}", table_id=f"t-{player_id}")
        await wallet.ledger.execute(release, record_rejection=False)
    assert await pool.fetchval("SELECT max(held) FROM wallet.accounts") == 0
    assert await audit_ledger(pool) == []


@pytest.mark.asyncio
async def test_two_replicas_settling_the_same_players_keep_every_invariant(wallet: Wallet, bus: Bus) -> None:
    """Two wallet replicas (their own stores: no in-process lock between them) share the durable
    consumers and settle 1,000 events among 10 players with 4 workers each: their snapshots go stale
    under each other, the version check refuses those writes, and the locked path applies them."""
    players = await wallet.players(10, 5_000)
    await play_from_holds(wallet, players)
    events = settlements(players, 1_000, seed=7, fee_every=4, top_stake=1_000)
    replicas = [LedgerStore(wallet.ledger.pool), LedgerStore(wallet.ledger.pool)]
    consumers = [
        SettlementConsumer(
            bus,
            ledger,
            ServiceMetrics("wallet"),
            workers=4,
            ack_wait_seconds=30.0,
            namespace=wallet.namespace,
        )
        for ledger in replicas
    ]
    await consumers[0].declare()
    await publish_all(wallet, bus, events)
    await run_until_drained(bus, *consumers, within=90)

    pool = wallet.ledger.pool
    settled = "SELECT count(*) FROM wallet.transactions WHERE kind IN ('hand', 'charge')"
    assert await pool.fetchval(settled) == 1_000
    assert await audit_ledger(pool) == []
    total = "SELECT sum(balance) FROM wallet.accounts WHERE house IS DISTINCT FROM 'grants'"
    assert await pool.fetchval(total) == 10 * 5_000
    print("paths per replica:", [dict(ledger.paths) for ledger in replicas])
    assert all(ledger.paths["snapshot"] and ledger.paths["snapshot_stale"] for ledger in replicas), [
        ledger.paths for ledger in replicas
    ]
    written = sum(
        ledger.paths["known"] + ledger.paths["snapshot"] + ledger.paths["locked"] for ledger in replicas
    )
    assert written >= 1_000  # each event written once; a redelivered duplicate is read, not written


class Killed(BaseException):
    """The consumer process dies here: no ack, no nak (a BaseException passes the bus's handler)."""


@pytest.mark.asyncio
async def test_every_event_three_times_shuffled_with_kills_between_commit_and_ack_applies_once(
    wallet: Wallet, bus: Bus
) -> None:
    players = await wallet.players(8, 100_000)  # rich enough that no cap binds: the result is order-free
    for player_id in players:
        items = Grant(
            f"items:{player_id}", player=player_id, items=(("graft_blossoms", 2),), grant_reason="test"
        )
        await wallet.ledger.execute(items, record_rejection=False)
    rng = random.Random(7)
    expected = dict.fromkeys(players, 100_000)
    events: list[Message] = []
    for n in range(24):
        payer, payee = rng.sample(players, 2)
        stake = rng.randint(1, 500)
        events.append(hand_scored(f"h{n}", payer, payee, stake, rated=True))
        expected[payer] -= stake
        expected[payee] += stake
        fee = rng.randint(1, 20)
        events.append(fee_charged(f"h{n}", payer, fee))
        expected[payer] -= fee
    for n, player_id in enumerate(players):
        events.append(
            events_pb2.GuessResolved(
                envelope=envelope(f"guess-g{n}"),
                hand_id=f"g{n}",
                player_id=player_id,
                won=n % 2 == 0,
                payout_multiplier=3 if n % 2 == 0 else 0,
                stake=100,
            )
        )
        expected[player_id] += 300 if n % 2 == 0 else -100
        events.append(
            events_pb2.ItemUsed(
                envelope=envelope(f"item-{n}"),
                table_id="t1",
                sequence=n,
                player_id=player_id,
                item=rules_pb2.ITEM_KIND_GRAFT_BLOSSOMS,
            )
        )
        escaper, opponent = player_id, players[(n + 1) % len(players)]
        events.append(
            events_pb2.EscapePenalty(
                envelope=envelope(f"escape-e{n}"),
                hand_id=f"e{n}",
                escaper_player_id=escaper,
                opponent_player_id=opponent,
                amount=640,
                player_ids=[opponent, escaper],
                profile=rules_pb2.PROFILE_DUEL,
            )
        )
        expected[escaper] -= 640
        expected[opponent] += 640
    await wallet.consumer(bus, workers=1, ack_wait_seconds=1.0).declare()
    deliveries = [(event, copy) for event in events for copy in range(3)]
    rng.shuffle(deliveries)
    for event, copy in deliveries:
        await wallet.publish(bus, event, copy=copy)

    kills = 0

    async def crash_sometimes(point: str, event_id: str) -> None:
        nonlocal kills
        # Between the database commit and the ack: after the commit, or after the publish.
        if point != "received" and kills < 10 and rng.random() < 0.08:
            kills += 1
            raise Killed(f"killed after {point} of {event_id}")

    restarts = 0
    while True:
        process_bus = await Bus.connect(
            wallet.nats_url, name=f"wallet-{restarts}", **wallet.nats_options
        )  # a fresh process
        consumer = wallet.consumer(process_bus, workers=4, ack_wait_seconds=1.0, checkpoint=crash_sometimes)
        try:
            await run_until_drained(bus, consumer, within=60)
            break
        except Killed:
            restarts += 1
        finally:
            await process_bus.client.close()
    assert restarts >= 3  # the consumer really died several times (two workers may die together)

    pool = wallet.ledger.pool
    for player_id in players:
        assert (await wallet.ledger.balance(player_id))[0] == expected[player_id]
        assert await PlayerStore(pool, wallet.ledger).inventory(player_id) == {"graft_blossoms": 1}
    keys = await pool.fetchval("SELECT count(*) FROM wallet.transactions WHERE kind NOT IN ('grant')")
    assert keys == len(events)
    assert await audit_ledger(pool) == []
    # Republished outcomes reuse their message id, so the output stream holds one per event.
    stream = wallet.namespace.stream(subjects.WALLET_STREAM).name
    assert (await bus.js.stream_info(stream)).state.messages == len(events)
    # Every rated hand and escape moved both ratings once: per player, in transaction order (commit
    # order: a rating moves under its account's lock), each starts where the last left it, and the
    # stored rating is where the last one ended, after as many hands as the player was in.
    last: dict[str, dict[str, float]] = {}
    rated_hands = dict.fromkeys(players, 0)
    for row in await pool.fetch(
        "SELECT ratings FROM wallet.transactions WHERE ratings IS NOT NULL ORDER BY id"
    ):
        for move in json.loads(row["ratings"]):
            player_id = move["player_id"]
            assert move["before"] == last.get(
                player_id, {"rating": 1500.0, "deviation": 350.0, "hands_rated": 0}
            )
            last[player_id] = move["after"]
            rated_hands[player_id] += 1
    assert sum(rated_hands.values()) == 2 * (24 + len(players))
    board = RatingBoard(pool)
    for player_id in players:
        stored = (await board.of(player_id))["duel"]
        assert stored.as_json() == last[player_id] and stored.hands_rated == rated_hands[player_id]


@pytest.mark.asyncio
async def test_prestige_moved_fees_and_the_settlement_lag_from_the_hand_end_are_measured(
    wallet: Wallet, bus: Bus
) -> None:
    ana, bo = await wallet.players(2, 1_000)
    metrics = ServiceMetrics("wallet")
    consumer = SettlementConsumer(
        bus, wallet.ledger, metrics, workers=2, ack_wait_seconds=30.0, namespace=wallet.namespace
    )
    await consumer.declare()
    scored = hand_scored("h1", ana, bo, 150)
    scored.hand_ended_at.FromSeconds(int(time.time()) - 30)  # the hand ended 30 s before scoring
    await wallet.publish(bus, scored)
    await wallet.publish(bus, scored, copy=1)  # a redelivery moves nothing and is not counted again
    await wallet.publish(bus, fee_charged("h1", ana, 7))
    await run_until_drained(bus, consumer, within=30)

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(f"duel_wallet_{name}", labels)

    assert sample("prestige_moved_total", kind="hand-scored", purpose="hand") == 150
    assert sample("prestige_moved_total", kind="fee-charged", purpose="fee") == 7
    assert sample("settlement_lag_seconds_count", kind="hand-scored") == 1  # the duplicate is not
    assert 30 <= (sample("settlement_lag_seconds_sum", kind="hand-scored") or 0) < 60
    assert sample("settlement_lag_seconds_count", kind="fee-charged") is None  # no envelope time: unknown
