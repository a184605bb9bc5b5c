"""NATS JetStream for services: streams and durable consumers declared in code, de-duplicated publish.

Subjects read ``duel.<area>.<event>`` (``duel.table.hand_ended``). A service declares what it needs at
start — declaring is idempotent, so every replica does it; the declarations are in
:mod:`duelmahjong.platform.streams` — then publishes and consumes::

    bus = await Bus.connect(config.nats_url, name="scoring", metrics=metrics)
    await bus.declare_stream(StreamSpec("DUEL_TABLE", ("duel.table.>",)))
    ack = await bus.publish("duel.table.hand_ended", payload, msg_id=hand_id)   # ack.duplicate
    consumer = ConsumerSpec("DUEL_TABLE", "scoring-hand-ended", "duel.table.hand_ended")
    task = asyncio.create_task(bus.consume(consumer, handle_hand_ended))

Delivery is at least once: ``msg_id`` (header ``Nats-Msg-Id``) makes the server drop a second publish
of the same id within the stream's duplicate window, and consumers must still be idempotent on their
own keys. Consumers are durable *pull* consumers: every replica of a service asks the same durable
for messages (``pull.PullFeed``), so replicas share the work like a queue group. A handler that returns
normally acks the message; one that raises naks it with a delay so it is redelivered (up to
``max_deliver`` times).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import nats.errors
import nats.js.errors
from google.protobuf.message import Message
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

from duelmahjong.platform.db import database_unavailable
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.pull import PullFeed
from duelmahjong.platform.replies import ReplyInbox
from duelmahjong.platform.streams import ConsumerSpec, StoragePolicy, StreamSpec

MSG_ID_HEADER = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQUENCE_HEADER = "Nats-Expected-Last-Subject-Sequence"
# How often a service reads its durable consumers' backlog from JetStream (one consumer_info request
# per consumer declared: cheap, and nothing on the publish or consume path).
CONSUMER_LAG_POLL_SECONDS = 15.0
_STREAM_IN_USE = 10058  # JetStream: "stream name already in use with a different configuration"
_WRONG_LAST_SEQUENCE = 10071  # JetStream: "wrong last sequence" (an expected-last-sequence header)
# How long a publish keeps being sent again before its error is raised: longer than a NATS reconnect
# plus a JetStream leader election (a few seconds when a cluster node is lost), so losing the node a
# service is connected to, or the one leading a stream, only delays a publish.
PUBLISH_WITHIN_SECONDS = 20.0
PUBLISH_ATTEMPT_SECONDS = 5.0  # one publish's wait for its ack: nats-py's own default
_RETRY_FIRST_SECONDS, _RETRY_MOST_SECONDS = 0.05, 1.0  # between attempts: doubling, at most the latter
# NATS away for a moment (a reconnect, a stream electing its leader): the same message may be sent
# again (the stream did not store it, or drops the second copy as a duplicate of its message id), and
# a handler that met one is retried by redelivery, not a defect.
_TRANSIENT_ERRORS = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.js.errors.NoStreamResponseError,  # nobody answered for the stream: no leader yet
    nats.js.errors.ServiceUnavailableError,
)

_log = get_logger("bus")
T = TypeVar("T")
# What nats-py's error callback says (lower case) when the server refused a publish or a subscription.
_PERMISSIONS_VIOLATION = "permissions violation"

Handler = Callable[[Msg], Awaitable[None]]


class SequenceConflict(Exception):
    """A fenced append found another message last on its subject: someone else writes it now."""


class Bus:
    """A NATS connection with its JetStream context, reconnect handling and metrics."""

    def __init__(
        self, client: Client, metrics: ServiceMetrics | None, storage: StoragePolicy | None = None
    ) -> None:
        self.client = client
        self.storage = storage or StoragePolicy()
        self.js: JetStreamContext = client.jetstream()
        self._published = self._consumed = self._pending = self._ack_pending = None
        self._declared: dict[tuple[str, str], ConsumerSpec] = {}  # (stream, durable) -> spec
        self._pub_acks: _PubAcks | None = None
        if metrics is not None:
            self._pending = metrics.gauge(
                "bus_consumer_pending", "messages", "not yet delivered, per durable consumer", ["durable"]
            )
            self._ack_pending = metrics.gauge(
                "bus_consumer_ack_pending", "messages", "delivered, not yet acked, per durable", ["durable"]
            )
            self._published = metrics.counter("bus_published", "total", "JetStream publishes", ["outcome"])
            self._consumed = metrics.counter(
                "bus_messages_handled", "total", "consumed messages by outcome", ["durable", "outcome"]
            )

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        name: str,
        metrics: ServiceMetrics | None = None,
        storage: StoragePolicy | None = None,
        connect_timeout: float = 2.0,
        startup_seconds: float = 15.0,
        seed_file: str = "",
        ca_file: str = "",
        inbox: str = "",
    ) -> Bus:
        """Connect (retrying the first connection too) and keep reconnecting forever on loss, as the
        identity whose nkey seed is in ``seed_file`` (none: anonymously), verifying a ``tls://``
        server with the CA bundle ``ca_file`` (none: the system trust store), replies arriving on
        ``inbox`` (:func:`~duelmahjong.platform.nats_permissions.inbox_prefix` of the identity)."""
        connected = reconnects = violations = None
        if metrics is not None:
            connected = metrics.gauge("nats_connected", "bool", "1 while connected to NATS")
            reconnects = metrics.counter("nats_reconnects", "total", "NATS reconnections")
            violations = metrics.counter(
                "nats_permission_violations",
                "total",
                "publishes and subscriptions the NATS server refused this identity (a defect or misuse)",
            )

        async def on_disconnect() -> None:
            if not (client.is_closed or client.is_draining):  # our own close() is no loss
                _log.warning("nats disconnected; reconnecting")
            if connected is not None:
                connected.set(0)

        async def on_reconnect() -> None:
            _log.info("nats reconnected", extra={"fields": {"server": str(client.connected_url)}})
            if connected is not None:
                connected.set(1)
            if reconnects is not None:
                reconnects.inc()

        async def on_error(err: Exception) -> None:
            if _PERMISSIONS_VIOLATION in str(err).lower():
                # The server dropped what this identity may not do (nothing was stored or delivered):
                # either the code does what its BusUse does not declare, or the process is misused.
                _log.error(
                    "nats permissions violation: refused by the server",
                    extra={"fields": {"error": str(err), "identity": name}},
                )
                if violations is not None:
                    violations.inc()
                return
            _log.warning("nats error", extra={"fields": {"error": repr(err)}})

        async def on_closed() -> None:
            if connected is not None:
                connected.set(0)

        client = Client()
        deadline = asyncio.get_running_loop().time() + startup_seconds
        while True:
            try:
                await client.connect(
                    servers=[part.strip() for part in url.split(",") if part.strip()],
                    name=name,
                    # nats-py annotates these seconds as int; it takes (and we mean) fractions.
                    connect_timeout=connect_timeout,  # type: ignore[arg-type]
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,  # once connected, never give up: NATS comes back
                    reconnect_time_wait=0.5,  # type: ignore[arg-type]
                    disconnected_cb=on_disconnect,
                    reconnected_cb=on_reconnect,
                    error_cb=on_error,
                    closed_cb=on_closed,
                    **connection_options(url, seed_file=seed_file, ca_file=ca_file, inbox=inbox),
                )
                break
            except (nats.errors.NoServersError, OSError, TimeoutError) as err:
                # The first connection is retried too: in a fresh stack NATS may start a moment later.
                if asyncio.get_running_loop().time() > deadline:
                    raise ConnectionError(f"cannot reach NATS at {url}: {err!r}") from err
                await asyncio.sleep(0.25)
        if connected is not None:
            connected.set(1)
        return cls(client, metrics, storage)

    async def declare_stream(self, spec: StreamSpec, *, owner: bool = True) -> None:
        """Create the stream, or bring an existing one to ``spec`` (idempotent). Made again while a
        cluster just formed is still electing its meta leader, like a write (:meth:`until_stored`).

        ``owner=False``: another service's stream, created if missing so its consumers may start
        first; one that exists is left as its owner declared it (only the owner may update it)."""

        async def declare() -> None:
            try:
                await self.js.add_stream(config=spec.config(self.storage))
            except nats.js.errors.BadRequestError as err:
                if err.err_code != _STREAM_IN_USE:
                    raise
                if owner:
                    await self.js.update_stream(config=spec.config(self.storage))

        await self.until_stored(declare, what={"stream": spec.name})

    async def ensure_stream(self, spec: StreamSpec) -> None:
        """:meth:`declare_stream` of another service's stream (``owner=False``)."""
        await self.declare_stream(spec, owner=False)

    async def declare_consumer(self, spec: ConsumerSpec) -> None:
        """Create the durable consumer if it does not exist (idempotent); made again while the
        stream or the cluster elects a leader, like a write."""
        self._declared[spec.stream, spec.durable] = spec

        async def declare() -> None:
            try:
                await self.js.consumer_info(spec.stream, spec.durable)
            except nats.js.errors.NotFoundError:
                await self.js.add_consumer(spec.stream, config=spec.config(self.storage))

        await self.until_stored(declare, what={"stream": spec.stream, "durable": spec.durable})

    async def poll_consumer_lag(self) -> None:
        """Set the backlog gauges of every durable consumer this process declared, from JetStream's
        own counters (``num_pending``, ``num_ack_pending``)."""
        if self._pending is None or self._ack_pending is None:
            return
        for spec in list(self._declared.values()):
            try:
                info = await self.js.consumer_info(spec.stream, spec.durable)
            except nats.js.errors.NotFoundError:  # deleted by an operator: the others still count
                _log.warning("declared consumer not found", extra={"fields": {"durable": spec.durable}})
                continue
            self._pending.labels(durable=spec.durable).set(info.num_pending or 0)
            self._ack_pending.labels(durable=spec.durable).set(info.num_ack_pending or 0)

    async def watch_consumer_lag(self, interval_seconds: float = CONSUMER_LAG_POLL_SECONDS) -> None:
        """Poll the backlog every ``interval_seconds`` until cancelled; a failed poll (NATS away) is
        logged and retried at the next tick, never fatal: the gauges just keep their last value."""
        while True:
            try:
                await self.poll_consumer_lag()
            except (nats.errors.Error, TimeoutError, OSError) as err:
                _log.warning("consumer lag not read", extra={"fields": {"error": repr(err)}})
            await asyncio.sleep(interval_seconds)

    async def publish(
        self,
        subject: str,
        payload: bytes,
        *,
        msg_id: str,
        headers: dict[str, str] | None = None,
        within_seconds: float = PUBLISH_WITHIN_SECONDS,
    ) -> api.PubAck:
        """Publish to JetStream and wait for the stream's ack; ``ack.duplicate`` is truthy for a repeat
        id. While NATS reconnects or the stream elects a leader the publish is sent again, with the same
        message id (so the stream keeps one copy), until ``within_seconds`` have passed; then the last
        error is raised."""
        # one attempt waits at most the whole write's budget (nats-py's default is 5 s)
        attempt_seconds = min(within_seconds, PUBLISH_ATTEMPT_SECONDS)
        ack = await self.until_stored(
            lambda: self.js.publish(
                subject, payload, timeout=attempt_seconds, headers=_with_msg_id(msg_id, headers)
            ),
            what={"subject": subject, "msg_id": msg_id},
            within_seconds=within_seconds,
        )
        self._stored(bool(ack.duplicate))
        return ack

    async def until_stored(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        what: dict[str, str],
        within_seconds: float = PUBLISH_WITHIN_SECONDS,
    ) -> T:
        """``attempt()`` (a JetStream write: a publish, a key-value put) made again, after a doubling
        pause, while NATS reconnects or the stream elects a leader, until ``within_seconds`` have passed;
        then its last error is raised. ``what`` names the write in the warning each retry logs."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_seconds
        pause = _RETRY_FIRST_SECONDS
        while True:
            try:
                return await attempt()
            except _TRANSIENT_ERRORS as err:
                if self.client.is_closed or loop.time() + pause > deadline:
                    raise
                _log.warning(
                    "write not acked; sending it again",
                    extra={"fields": {**what, "error": type(err).__name__}},
                )
                await asyncio.sleep(pause)
                pause = min(pause * 2, _RETRY_MOST_SECONDS)

    async def append_fenced(
        self, stream: str, subject: str, payload: bytes, *, msg_id: str, expected_last_sequence: int
    ) -> int:
        """Append to ``subject`` only if the last message on it is still the one at stream sequence
        ``expected_last_sequence`` (0: the subject is empty) — JetStream's expected-last-subject-
        sequence — and return the new message's stream sequence. A writer that lost the subject to
        another (its append is not the next one) gets :class:`SequenceConflict` and must stop.

        JetStream checks the expectation before the message id, so a publish sent again after its ack
        was lost is refused as a conflict although it was stored: a refusal whose subject ends with a
        message of this very id is that case, and counts as stored."""
        headers = {EXPECTED_LAST_SUBJECT_SEQUENCE_HEADER: str(expected_last_sequence)}
        try:
            ack = await self.publish(subject, payload, msg_id=msg_id, headers=headers)
        except nats.js.errors.BadRequestError as err:
            if err.err_code != _WRONG_LAST_SEQUENCE:
                raise
            last = await self.last_on_subject(stream, subject)
            if last is not None and last[1] == msg_id:
                return last[0]
            raise SequenceConflict(
                f"{subject}: expected the last message at {expected_last_sequence}, found "
                f"{last[0] if last else 'none'}"
            ) from err
        return int(ack.seq)

    async def last_on_subject(self, stream: str, subject: str) -> tuple[int, str] | None:
        """The stream sequence and message id of the last message on ``subject``; None if it has none."""
        try:
            message = await self.js.get_last_msg(stream, subject)
        except nats.js.errors.NotFoundError:
            return None
        return int(message.seq or 0), (message.headers or {}).get(MSG_ID_HEADER, "")

    def _stored(self, duplicate: bool) -> None:
        """Count a publish the stream acknowledged."""
        if self._published is not None:
            self._published.labels(outcome="duplicate" if duplicate else "stored").inc()

    async def publish_unconfirmed(self, subject: str, payload: bytes, *, msg_id: str) -> asyncio.Future[bool]:
        """Publish to JetStream without waiting: the future resolves once the stream has stored the
        message (True if it was a duplicate of ``msg_id``) or fails if the stream refused it. Cancel
        it to stop waiting (a timeout). Cheaper than nats-py's ``publish_async`` per message (no
        random token, no semaphore, no PubAck object), which shows where every event publishes."""
        headers = _with_msg_id(msg_id)
        if self._pub_acks is None:
            self._pub_acks = _PubAcks(self.client, self._stored)
        return await self._pub_acks.publish(subject, payload, headers)

    async def publish_event(self, subject: str, event: Message) -> api.PubAck:
        """Publish an event of ``events.proto``: its ``envelope.event_id`` is the message id."""
        event_id = getattr(getattr(event, "envelope", None), "event_id", "")
        if not event_id:
            raise ValueError(f"{type(event).__name__} has no envelope.event_id to de-duplicate on")
        return await self.publish(subject, event.SerializeToString(), msg_id=event_id)

    async def consume(
        self,
        spec: ConsumerSpec,
        handler: Handler,
        *,
        batch: int = 16,
        poll_seconds: float = 1.0,
        stop: asyncio.Event | None = None,
    ) -> None:
        """Take the durable consumer's messages (a ``PullFeed`` asking ``batch`` at a time) and hand
        each to ``handler`` until ``stop`` is set (or the task is cancelled). Returning acks the
        message; raising naks it for redelivery."""
        await self.declare_consumer(spec)
        feed = PullFeed(self.client, spec.stream, spec.durable, batch=batch)
        await feed.start()
        try:
            while stop is None or not stop.is_set():
                message = await feed.next(poll_seconds)
                if message is not None:
                    await self._handle(spec, handler, message)
        finally:
            await feed.close()

    async def _handle(self, spec: ConsumerSpec, handler: Handler, message: Msg) -> None:
        try:
            await handler(message)
        except Exception as err:
            fields = {"subject": message.subject, "durable": spec.durable}
            if isinstance(err, (*_TRANSIENT_ERRORS, TimeoutError)):  # NATS reconnecting, a stream electing
                _log.warning(
                    "event handler met NATS away; will be redelivered",
                    extra={"fields": {**fields, "error": repr(err)}},
                )
            elif database_unavailable(err):  # Postgres restarting: the redelivery finds it back
                _log.warning(
                    "event handler met the database away; will be redelivered",
                    extra={"fields": {**fields, "error": repr(err)}},
                )
            else:
                _log.exception("event handler failed; will be redelivered", extra={"fields": fields})
            await message.nak(delay=spec.nak_delay_seconds)
            self._count(spec, "nak")
            return
        await message.ack()
        self._count(spec, "ack")

    def _count(self, spec: ConsumerSpec, outcome: str) -> None:
        if self._consumed is not None:
            self._consumed.labels(durable=spec.durable, outcome=outcome).inc()

    async def close(self) -> None:
        """Flush what is pending and close the connection."""
        if not self.client.is_closed:
            await self.client.drain()


class _PubAcks:
    """The PubAcks of :meth:`Bus.publish_unconfirmed`: replies on one :class:`ReplyInbox`, a
    future per publish (its reply route dropped once done, or cancelled by its waiter)."""

    def __init__(self, client: Client, on_stored: Callable[[bool], None]) -> None:
        self._client = client
        self._on_stored = on_stored
        self._replies = ReplyInbox(client)

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> asyncio.Future[bool]:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        reply, token = await self._replies.reply_subject(lambda message: self._arrived(future, message))
        future.add_done_callback(lambda _done: self._replies.release(token))
        try:
            await self._client.publish(subject, payload, reply=reply, headers=headers)
        except BaseException:
            future.cancel()
            raise
        return future

    def _arrived(self, future: asyncio.Future[bool], message: Msg) -> None:
        if future.done():
            return
        if message.headers and message.headers.get(api.Header.STATUS) == "503":
            future.set_exception(nats.js.errors.NoStreamResponseError())
            return
        reply = json.loads(message.data)
        if "error" in reply:
            future.set_exception(nats.js.errors.APIError.from_error(reply["error"]))
            return
        duplicate = bool(reply.get("duplicate"))
        self._on_stored(duplicate)
        future.set_result(duplicate)


def connection_options(
    url: str, *, seed_file: str = "", ca_file: str = "", inbox: str = ""
) -> dict[str, Any]:
    """nats-py ``connect`` options for an identity (its nkey seed file), TLS (``tls://`` URLs, verified
    with the CA bundle ``ca_file``, or the system trust store) and the identity's reply inbox: what the
    services and the tools reading the bus connect with."""
    options: dict[str, Any] = {}
    if seed_file:
        if not Path(seed_file).is_file():
            raise FileNotFoundError(f"NATS_NKEY_SEED_FILE={seed_file} is not a file")
        options["nkeys_seed"] = seed_file
    if ca_file or "tls://" in url:
        options["tls"] = ssl.create_default_context(cafile=ca_file or None)
    if inbox:
        options["inbox_prefix"] = inbox
    return options


def _with_msg_id(msg_id: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    if not msg_id:
        raise ValueError("every JetStream publish needs a message id for de-duplication")
    return {**(headers or {}), MSG_ID_HEADER: msg_id}
