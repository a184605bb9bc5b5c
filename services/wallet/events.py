"""Settlement over NATS: consume the events that move prestige, apply each once, publish the result.

For each delivered event: decode → build the command (its idempotency key comes from the event's
documented key: ``hand:<hand_id>``, ``fee:<hand_id>:<player>``…) → :meth:`WalletStore.execute`
(one database transaction; a key seen before returns the recorded outcome instead) → publish
``SettlementApplied`` with the JetStream message id ``wallet:<key>`` → return, and the bus acks.

A crash anywhere before the ack means redelivery: before the commit nothing happened; after it, the
key's row exists, so the redelivered event republishes the same recorded outcome under the same
message id (dropped by JetStream's duplicate window, and deduplicated by consumers on
``source_event_id`` beyond it) and is acked. Nothing is lost, nothing applied twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import DecodeError, Message
from nats.aio.msg import Msg

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus, ConsumerSpec, StreamSpec
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import events_pb2, rules_pb2
from services.wallet import codec
from services.wallet.commands import (
    Charge,
    Command,
    EscapePenalty,
    GuessSettlement,
    HandSettlement,
    ItemUse,
    ReleaseHolds,
    TableOpening,
)
from services.wallet.errors import WalletError
from services.wallet.ledger import Status
from services.wallet.store import ConnectionLender, Outcome, WalletStore

_log = get_logger("wallet.events")

# Called at "received", "committed" and "published" with the source event id: a test (or a chaos
# drill) may stop the consumer there; the benchmark times events between them.
Checkpoint = Callable[[str, str], Awaitable[None]]


def _hand_scored(event: events_pb2.HandScored) -> Command:
    settlement = event.settlement
    payer = payee = ""
    stake = 0
    if settlement.HasField("transfer"):
        payer, payee = settlement.transfer.from_player_id, settlement.transfer.to_player_id
        # The wallet applies H1 with its own carries (the holds), so it takes the uncapped amount.
        stake = settlement.fan_amount or settlement.transfer.amount
    return HandSettlement(
        f"hand:{event.hand_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        payer=payer,
        payee=payee,
        stake=stake,
    )


def _escape(event: events_pb2.EscapePenalty) -> Command:
    return EscapePenalty(
        f"escape:{event.hand_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        escaper=event.escaper_player_id,
        opponent=event.opponent_player_id,
        penalty=event.amount,
    )


def _fee(event: events_pb2.FeeCharged) -> Command:
    return Charge(
        f"fee:{event.hand_id}:{event.player_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        amount=event.amount,
        purpose="fee",
    )


def _exchange(event: events_pb2.ExchangeCharged) -> Command:
    return Charge(
        f"exchange:{event.table_id}:{event.sequence}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        amount=event.amount,
        purpose="exchange",
    )


def _item(event: events_pb2.ItemUsed) -> Command:
    return ItemUse(
        f"item:{event.table_id}:{event.sequence}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        item=codec.item_name(event.item),
    )


def _guess(event: events_pb2.GuessResolved) -> Command:
    return GuessSettlement(
        f"guess:{event.hand_id}",
        table_id=event.table_id,
        hand_id=event.hand_id,
        player=event.player_id,
        stake=event.stake,
        won=event.won,
        multiplier=event.payout_multiplier,
    )


def _opened(event: events_pb2.TableOpened) -> Command:
    return TableOpening(f"open:{event.table_id}", table_id=event.table_id, pairing_id=event.pairing_id)


def _closed(event: events_pb2.TableClosed) -> Command:
    return ReleaseHolds(f"close:{event.table_id}", pairing_id=event.pairing_id, table_id=event.table_id)


@dataclass(frozen=True)
class Namespace:
    """Where the wallet's events travel: the platform's subjects and streams, or — for tests that
    share one NATS — a private copy (``duel.`` → ``<name>.``, stream ``DUEL_X`` → ``DUEL_X_<NAME>``)."""

    name: str = ""

    def subject(self, subject: str) -> str:
        return subject if not self.name else self.name + subject.removeprefix("duel")

    def stream(self, spec: StreamSpec) -> StreamSpec:
        if not self.name:
            return spec
        return dataclasses.replace(
            spec,
            name=f"{spec.name}_{self.name.upper()}",
            subjects=tuple(self.subject(s) for s in spec.subjects),
        )


@dataclass(frozen=True)
class Source:
    """One consumed event type: where it arrives, how it decodes, what command it becomes."""

    subject: str
    stream: StreamSpec
    message: type[Message]
    to_command: Callable[[Any], Command]
    hot: bool = False  # hot sources get the configured number of workers, the others one

    @property
    def durable(self) -> str:
        return "wallet-" + self.subject.rsplit(".", 1)[1].replace("_", "-")


SOURCES: tuple[Source, ...] = (
    Source(subjects.HAND_SCORED, subjects.SCORING_STREAM, events_pb2.HandScored, _hand_scored, hot=True),
    Source(subjects.FEE_CHARGED, subjects.TABLE_STREAM, events_pb2.FeeCharged, _fee, hot=True),
    Source(subjects.ESCAPE_PENALTY, subjects.SCORING_STREAM, events_pb2.EscapePenalty, _escape),
    Source(subjects.EXCHANGE_CHARGED, subjects.TABLE_STREAM, events_pb2.ExchangeCharged, _exchange),
    Source(subjects.ITEM_USED, subjects.TABLE_STREAM, events_pb2.ItemUsed, _item),
    Source(subjects.GUESS_RESOLVED, subjects.TABLE_STREAM, events_pb2.GuessResolved, _guess),
    Source(subjects.TABLE_OPENED, subjects.TABLE_STREAM, events_pb2.TableOpened, _opened),
    Source(subjects.TABLE_CLOSED, subjects.TABLE_STREAM, events_pb2.TableClosed, _closed),
)


def settlement_applied(outcome: Outcome, source_event_id: str, producer: str) -> events_pb2.SettlementApplied:
    return events_pb2.SettlementApplied(
        envelope=events_pb2.EventEnvelope(
            event_id=f"wallet:{outcome.key}",
            producer=producer,
            occurred_at=codec.timestamp(datetime.now(UTC)),
        ),
        source_event_id=source_event_id,
        transaction_id=str(outcome.transaction_id) if outcome.status is Status.APPLIED else "",
        table_id=outcome.table_id,
        hand_id=outcome.hand_id,
        balances=[
            rules_pb2.AccountBalance(account=codec.player_account(player), balance=balance)
            for player, (balance, _held) in sorted(outcome.balances.items())
        ],
        rejected_reason=outcome.reason if outcome.status is Status.REJECTED else "",
    )


class SettlementConsumer:
    """The durable consumers of every prestige-moving event, with their workers."""

    def __init__(
        self,
        bus: Bus,
        store: WalletStore,
        metrics: ServiceMetrics,
        *,
        workers: int,
        ack_wait_seconds: float,
        producer: str = "wallet",
        checkpoint: Checkpoint | None = None,
        sources: tuple[Source, ...] = SOURCES,
        namespace: Namespace = Namespace(),
    ) -> None:
        self.bus = bus
        self.store = store
        self.workers = workers  # ledger transactions in flight (connections kept), and hot consume loops
        self._lender = ConnectionLender(store.pool, workers)
        self.ack_wait_seconds = ack_wait_seconds
        self.producer = producer
        self.sources = sources
        self.namespace = namespace
        self.applied_subject = namespace.subject(subjects.SETTLEMENT_APPLIED)
        self._checkpoint = checkpoint
        self._handled = metrics.counter(
            "events_handled", "total", "consumed events by kind and outcome", ["kind", "outcome"]
        )
        self._latency = metrics.histogram(
            "settlement_duration", "seconds", "decode → ledger transaction → publish, per event", ["kind"]
        )

    def consumer_spec(self, source: Source) -> ConsumerSpec:
        return ConsumerSpec(
            self.namespace.stream(source.stream).name,
            source.durable,
            self.namespace.subject(source.subject),
            ack_wait_seconds=self.ack_wait_seconds,
            # Prestige is never dropped: an event the wallet cannot apply yet (database down) is
            # redelivered until it can; one it refuses is recorded and acked, not retried.
            max_deliver=-1,
        )

    async def declare(self) -> None:
        """Streams (shared specs from the platform) and this service's durable consumers."""
        for stream in {s.stream for s in self.sources} | {subjects.WALLET_STREAM}:
            await self.bus.declare_stream(self.namespace.stream(stream))
        for source in self.sources:
            await self.bus.declare_consumer(self.consumer_spec(source))

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Consume until ``stop`` is set or cancelled. If any worker dies, all stop (like a crash)."""
        await self.declare()
        self._lender = ConnectionLender(self.store.pool, self.workers)
        tasks = [
            asyncio.create_task(
                self.bus.consume(self.consumer_spec(source), self._handler(source), stop=stop),
                name=f"{source.durable}-{n}",
            )
            for source in self.sources
            for n in range(self.workers if source.hot else 1)
        ]
        try:
            done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
                if task.cancelled():
                    raise asyncio.CancelledError(f"worker {task.get_name()} was stopped")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._lender.close()

    def _handler(self, source: Source) -> Callable[[Msg], Awaitable[None]]:
        async def handle(message: Msg) -> None:
            await self.handle(source, message)

        return handle

    async def handle(self, source: Source, message: Msg) -> None:
        started = time.perf_counter()
        kind = source.durable.removeprefix("wallet-")
        try:
            event = source.message.FromString(message.data)
        except DecodeError:
            # Redelivering bytes that do not parse cannot help: log loudly and let the bus ack.
            _log.error("undecodable event dropped", extra={"fields": {"subject": message.subject}})
            self._handled.labels(kind=kind, outcome="undecodable").inc()
            return
        source_event_id = event.envelope.event_id
        await self._reached("received", source_event_id)
        try:
            command = source.to_command(event)
            async with self._lender.borrow() as conn:  # a worker: one ledger transaction at a time
                outcome = await self.store.execute(command, record_rejection=True, conn=conn)
        except WalletError as err:
            # A malformed event (bad id, unknown item kind): nothing recorded, and the same answer on
            # every redelivery, so publishing a rejection keyed by the source event is idempotent.
            outcome = Outcome(f"invalid:{source_event_id}", kind, Status.REJECTED, str(err), 0, "", "", {})
        await self._reached("committed", source_event_id)
        applied = settlement_applied(outcome, source_event_id, self.producer)
        await self.bus.publish(
            self.applied_subject, applied.SerializeToString(), msg_id=applied.envelope.event_id
        )
        await self._reached("published", source_event_id)
        self._handled.labels(
            kind=kind, outcome="duplicate" if outcome.duplicate else outcome.status.value
        ).inc()
        self._latency.labels(kind=kind).observe(time.perf_counter() - started)

    async def _reached(self, point: str, source_event_id: str) -> None:
        if self._checkpoint is not None:
            await self._checkpoint(point, source_event_id)
