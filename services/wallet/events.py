"""Settlement over NATS: consume the events that move prestige, apply each once, publish the result.

For each delivered event: decode → its command (``sources.py``; the idempotency key comes from the
event's documented key) → :meth:`LedgerStore.execute` (one database transaction; a key seen before
returns the recorded outcome instead) → publish ``SettlementApplied`` with the JetStream message id
``wallet:<key>`` → once the stream has stored it (its PubAck), ack the input.

The publish is pipelined: a worker sends the output and goes on to its next event at once, while
the confirmer acks the input once the stream's PubAck for that output is in. So a worker never
idles on a NATS round trip, and the database keeps ``workers`` ledger transactions in flight.

Why nothing is lost and nothing doubled — the input is acked only after its output is stored:

* crash before the commit: nothing happened; JetStream redelivers after ``ack_wait``;
* crash after the commit, before the output is stored (not sent, sent but lost, PubAck late): the
  input is not acked, so it is redelivered; the key's row exists, so the redelivery writes nothing
  and republishes the recorded outcome under the same message id; the output is published then;
* crash after the output is stored, before the input's ack: the same, and JetStream's duplicate
  window drops the second copy (consumers deduplicate on ``source_event_id`` beyond it);
* PubAck refused or not back within ``PUBLISH_TIMEOUT_SECONDS``: the input is nak'ed, and its
  redelivery republishes as above.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.msg import Msg

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.db import database_unavailable
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import Children, ServiceMetrics
from duelmahjong.platform.pull import PullFeed
from duelmahjong.platform.streams import ConsumerSpec
from duelmahjong.platform.tasks import cancel_and_wait
from duelmahjong.v1 import events_pb2, rules_pb2
from services.wallet import codec
from services.wallet.commands import EscapePenalty, HandSettlement
from services.wallet.connections import ConnectionLender
from services.wallet.errors import WalletError
from services.wallet.ledger import Status
from services.wallet.ledger_store import LedgerStore, Outcome
from services.wallet.sources import PLATFORM_NAMESPACE, SOURCES, Namespace, Source

_log = get_logger("wallet.events")

# Called at "received", "committed" and "published" (the output stored) with the source event id: a
# test (or a chaos drill) may stop the consumer there; the benchmark times events between them.
Checkpoint = Callable[[str, str], Awaitable[None]]

FETCH_PER_WORKER = 4  # events asked for per pull request, per worker of the durable
POLL_SECONDS = 1.0  # how long an idle worker waits for an event before it looks at the stop again
# A PubAck not back by then: nak the input; its redelivery republishes under the same message id.
PUBLISH_TIMEOUT_SECONDS = 5.0
# Outputs sent and not yet stored, per consumer: bounds memory and what a crash leaves to redo.
MAX_UNCONFIRMED = 256
# Settlement lag buckets (hand end → applied; scoring's replay included): 50 ms .. 5 min.
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def happened_at(event: Message) -> float:
    """When the fact behind ``event`` happened (Unix seconds; 0 if unknown): the hand's end for a
    HandScored that carries it, else the event's own envelope time."""
    stamp: Timestamp = event.envelope.occurred_at  # type: ignore[attr-defined]
    if isinstance(event, events_pb2.HandScored) and event.HasField("hand_ended_at"):
        stamp = event.hand_ended_at
    return stamp.seconds + stamp.nanos / 1e9


@dataclass(slots=True, eq=False)
class _Sent:
    """An event whose output is sent: its input is acked once ``stored`` (the PubAck) resolves."""

    source: Source
    spec: ConsumerSpec
    message: Msg
    stored: asyncio.Future[bool]  # resolved by the PubAck (True: a duplicate of the message id)
    timeout: asyncio.TimerHandle  # cancels ``stored`` if the PubAck is not back in time
    source_event_id: str
    outcome: str  # the metric label: applied, rejected, duplicate
    started: float
    happened: float  # Unix seconds the fact happened (the hand ended), 0 if unknown


def hand_settlement(event: Message, outcome: Outcome) -> rules_pb2.Settlement | None:
    """What a hand's transaction moved, as the seats are shown it (rules.proto "as applied"): for an
    applied HandScored or EscapePenalty; None for every other event and for a refusal."""
    if outcome.status is not Status.APPLIED:
        return None
    if isinstance(event, events_pb2.HandScored):
        transfer = event.settlement.transfer
        uncapped = event.settlement.fan_amount or transfer.amount
        return codec.applied_settlement(
            event.settlement,
            outcome.postings,
            payer=transfer.from_player_id,
            payee=transfer.to_player_id,
            uncapped=uncapped,
        )
    if isinstance(event, events_pb2.EscapePenalty):
        scored = event.settlement
        if not event.HasField("settlement"):  # from a producer that predates it: the amount alone
            scored = rules_pb2.Settlement(hand_id=event.hand_id, fan_amount=event.amount)
        return codec.applied_settlement(
            scored,
            outcome.postings,
            payer=event.escaper_player_id,
            payee=event.opponent_player_id,
            uncapped=event.amount,
        )
    return None


def settlement_applied(
    outcome: Outcome, source_event_id: str, producer: str, event: Message | None = None
) -> events_pb2.SettlementApplied:
    """The answer to one applied (or refused, or repeated) event; ``event`` is the input, whose
    settlement an applied hand's answer carries as applied."""
    settlement = hand_settlement(event, outcome) if event is not None else None
    applied = events_pb2.SettlementApplied(
        envelope=events_pb2.EventEnvelope(
            event_id=f"wallet:{outcome.key}",
            producer=producer,
            occurred_at=codec.now(),
        ),
        source_event_id=source_event_id,
        transaction_id=str(outcome.transaction_id) if outcome.status is Status.APPLIED else "",
        table_id=outcome.table_id,
        hand_id=outcome.hand_id,
        balances=[
            rules_pb2.AccountBalance(account=codec.player_account(player), balance=balance, player_id=player)
            for player, (balance, _held) in sorted(outcome.balances.items())
        ],
        rejected_reason=outcome.reason if outcome.status is Status.REJECTED else "",
        hand_transaction=outcome.kind in (HandSettlement.kind, EscapePenalty.kind),
        ratings=[codec.rating_change(move) for move in outcome.ratings],
    )
    if outcome.status is Status.APPLIED:
        applied.postings.extend(codec.posting_messages(outcome.postings))
    if settlement is not None:
        applied.settlement.CopyFrom(settlement)
    return applied


class SettlementConsumer:
    """The durable consumers of every prestige-moving event, with their workers."""

    def __init__(
        self,
        bus: Bus,
        ledger: LedgerStore,
        metrics: ServiceMetrics,
        *,
        workers: int,
        ack_wait_seconds: float,
        producer: str = "wallet",
        checkpoint: Checkpoint | None = None,
        sources: tuple[Source, ...] = SOURCES,
        namespace: Namespace = PLATFORM_NAMESPACE,
    ) -> None:
        self.bus = bus
        self.ledger = ledger
        self.workers = workers  # ledger transactions in flight (connections kept), and hot consume loops
        self.ack_wait_seconds = ack_wait_seconds
        self.producer = producer
        self.sources = sources
        self.namespace = namespace
        self.applied_subject = namespace.subject(subjects.SETTLEMENT_APPLIED)
        self._checkpoint = checkpoint
        self._lender = ConnectionLender(ledger.pool, workers)
        self._sending = asyncio.Semaphore(MAX_UNCONFIRMED)  # a slot per output not yet confirmed
        self._stored: asyncio.Queue[_Sent] = asyncio.Queue()  # outputs whose PubAck is in (or failed)
        self._unconfirmed = 0
        self._all_confirmed = asyncio.Event()
        # Each looked up once per label values (Children): these are touched for every event.
        self._handled = Children(
            metrics.counter(
                "events_handled", "total", "consumed events by kind and outcome", ["kind", "outcome"]
            )
        )
        self._latency = Children(
            metrics.histogram(
                "settlement_duration", "seconds", "fetched → ledger transaction → output stored", ["kind"]
            )
        )
        self._lag = Children(
            metrics.histogram(
                "settlement_lag",
                "seconds",
                "the fact happened (a HandScored: the hand ended) → applied and published",
                ["kind"],
                buckets=LAG_BUCKETS,
            )
        )
        self._moved = Children(
            metrics.counter(
                "prestige_moved", "total", "prestige moved by applied events", ["kind", "purpose"]
            )
        )

    def consumer_spec(self, source: Source) -> ConsumerSpec:
        return source.consumer(self.namespace, ack_wait_seconds=self.ack_wait_seconds)

    async def declare(self) -> None:
        """Streams (shared specs from the platform) and this service's durable consumers."""
        await self.bus.declare_stream(self.namespace.stream(subjects.WALLET_STREAM))
        # The producers' streams, created if missing so the wallet may start first; theirs to update.
        for stream in dict.fromkeys(s.stream for s in self.sources):
            await self.bus.ensure_stream(self.namespace.stream(stream))
        for source in self.sources:
            await self.bus.declare_consumer(self.consumer_spec(source))

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Consume until ``stop`` is set or cancelled, then confirm the outputs already sent. If a
        worker or the confirmer dies, everything stops and that error is raised (like a crash)."""
        await self.declare()
        self._lender = ConnectionLender(self.ledger.pool, self.workers)
        self._sending = asyncio.Semaphore(MAX_UNCONFIRMED)
        self._stored = asyncio.Queue()
        self._unconfirmed = 0
        self._all_confirmed.set()
        # One feed per durable, shared by its workers: each takes the next event as it is free.
        feeds: list[tuple[Source, int, PullFeed]] = []
        for source in self.sources:
            spec = self.consumer_spec(source)
            count = self.workers if source.hot else 1
            feed = PullFeed(self.bus.client, spec.stream, spec.durable, batch=FETCH_PER_WORKER * count)
            feeds.append((source, count, feed))
        confirmer = asyncio.create_task(self._confirm_stored(), name="wallet-confirm")
        workers: list[asyncio.Task[None]] = []
        confirmed: asyncio.Task[Any] | None = None
        try:
            for _source, _count, feed in feeds:
                await feed.start()
            workers = [
                asyncio.create_task(
                    self._consume(source, feed, stop or asyncio.Event()), name=f"{source.durable}-{n}"
                )
                for source, count, feed in feeds
                for n in range(count)
            ]
            pending: set[asyncio.Future[Any]] = {*workers, confirmer}
            while pending - {confirmer}:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for finished in done:
                    finished.result()  # what killed a worker or the confirmer; CancelledError if stopped
            # Stopped: the outputs already sent are confirmed (acked, or nak'ed after the timeout).
            confirmed = asyncio.create_task(self._all_confirmed.wait())
            ended, _pending = await asyncio.wait({confirmed, confirmer}, return_when=asyncio.FIRST_COMPLETED)
            if confirmer in ended:
                confirmer.result()
        finally:
            leftovers = (*workers, confirmer, *([confirmed] if confirmed else []))
            # nats-py can drop a worker's cancel (platform.tasks): keep cancelling until all stop.
            await cancel_and_wait(leftovers)
            for _source, _count, feed in feeds:
                await feed.close()
            await self._lender.close()

    async def _consume(self, source: Source, feed: PullFeed, stop: asyncio.Event) -> None:
        """One worker: settle the feed's next event, and the next (the outputs confirm behind it)."""
        spec = self.consumer_spec(source)
        while not stop.is_set():
            message = await feed.next(POLL_SECONDS)
            if message is not None:
                await self._settle(source, spec, message)

    async def _settle(self, source: Source, spec: ConsumerSpec, message: Msg) -> None:
        started = time.perf_counter()
        try:
            event = source.message.FromString(message.data)
        except DecodeError:
            # Redelivering bytes that do not parse cannot help: log loudly and ack.
            _log.error("undecodable event dropped", extra={"fields": {"subject": message.subject}})
            self._handled(source.kind, "undecodable").inc()
            await message.ack()
            return
        source_event_id = event.envelope.event_id  # type: ignore[attr-defined]
        await self._reached("received", source_event_id)
        try:
            outcome = await self._apply(source, event, source_event_id)
        except Exception as err:
            fields = {"subject": message.subject, "source_event_id": source_event_id}
            if database_unavailable(err):  # the database restarts: the redelivery applies it
                _log.warning(
                    "database unavailable; the event will be redelivered",
                    extra={"fields": {**fields, "error": repr(err)}},
                )
            else:
                _log.exception("settlement failed; the event will be redelivered", extra={"fields": fields})
            await self._retry(source, spec, message)
            return
        await self._reached("committed", source_event_id)
        for purpose, amount in outcome.moved:  # empty for a duplicate: counted once, when it moved
            self._moved(source.kind, purpose).inc(amount)
        applied = settlement_applied(outcome, source_event_id, self.producer, event)
        await self._sending.acquire()
        try:
            stored = await self.bus.publish_unconfirmed(
                self.applied_subject, applied.SerializeToString(), msg_id=applied.envelope.event_id
            )
        except Exception:
            self._sending.release()
            _log.exception("SettlementApplied not sent; the event will be redelivered")
            await self._retry(source, spec, message)
            return
        label = "duplicate" if outcome.duplicate else outcome.status.value
        # A timer and a callback, not a task per event: the confirmer handles the PubAck when it is in.
        timeout = asyncio.get_running_loop().call_later(PUBLISH_TIMEOUT_SECONDS, stored.cancel)
        happened = happened_at(event) if label == "applied" else 0.0
        sent = _Sent(source, spec, message, stored, timeout, source_event_id, label, started, happened)
        self._unconfirmed += 1
        self._all_confirmed.clear()
        stored.add_done_callback(lambda _stored: self._stored.put_nowait(sent))

    async def _apply(self, source: Source, event: Message, source_event_id: str) -> Outcome:
        """The ledger transaction of ``event`` (committed when this returns), or its refusal."""
        try:
            command = source.to_command(event)
            async with self._lender.borrow() as conn:  # a worker: one ledger transaction at a time
                return await self.ledger.execute(command, record_rejection=True, conn=conn)
        except WalletError as err:
            # A malformed event (bad id, unknown item kind): nothing recorded, and the same answer on
            # every redelivery, so publishing a rejection keyed by the source event is idempotent.
            key = f"invalid:{source_event_id}"
            return Outcome(key, source.kind, Status.REJECTED, str(err), 0, "", "", {})

    async def _confirm_stored(self) -> None:
        """The confirmer: ack each input once its output is stored; nak it if the output is not."""
        while True:
            sent = await self._stored.get()
            try:
                sent.timeout.cancel()
                failure = None if sent.stored.cancelled() else sent.stored.exception()
                if sent.stored.cancelled() or failure is not None:
                    _log.warning(
                        "SettlementApplied not stored; the event will be redelivered and republish it",
                        extra={"fields": {"source_event_id": sent.source_event_id, "error": repr(failure)}},
                    )
                    await self._retry(sent.source, sent.spec, sent.message)
                    continue
                await self._reached("published", sent.source_event_id)
                await sent.message.ack()
                self._handled(sent.source.kind, sent.outcome).inc()
                self._latency(sent.source.kind).observe(time.perf_counter() - sent.started)
                if sent.happened:  # clamped: the producer's clock may run a little ahead of ours
                    self._lag(sent.source.kind).observe(max(0.0, time.time() - sent.happened))
            finally:
                self._sending.release()
                self._unconfirmed -= 1
                if not self._unconfirmed:
                    self._all_confirmed.set()

    async def _retry(self, source: Source, spec: ConsumerSpec, message: Msg) -> None:
        await message.nak(delay=spec.nak_delay_seconds)
        self._handled(source.kind, "retried").inc()

    async def _reached(self, point: str, source_event_id: str) -> None:
        if self._checkpoint is not None:
            await self._checkpoint(point, source_event_id)
