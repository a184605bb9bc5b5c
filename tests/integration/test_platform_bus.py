"""JetStream through the platform bus, on the session's real NATS: de-duplication, acks, shared work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import nats.errors
import nats.js.errors
import pytest
from nats.aio.msg import Msg

from duelmahjong.platform.bus import Bus
from duelmahjong.platform.embedded import EmbeddedNats
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.nats_permissions import LocalAccess
from duelmahjong.platform.streams import ConsumerSpec, StreamSpec
from duelmahjong.v1 import events_pb2

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def _drain(bus: Bus, spec: ConsumerSpec, handler: Callable[[Msg], object], *, settle: float) -> None:
    """Consume until nothing has arrived for ``settle`` seconds."""
    stop = asyncio.Event()
    task = asyncio.create_task(bus.consume(spec, handler, poll_seconds=0.2, stop=stop))  # type: ignore[arg-type]
    await asyncio.sleep(settle)
    stop.set()
    await asyncio.wait_for(task, 5)


async def _declare(bus: Bus, unique_name: Callable[[str], str]) -> tuple[StreamSpec, str]:
    name = unique_name("TEST")
    subject = f"duel.test.{name.lower()}"
    spec = StreamSpec(name, (f"{subject}.>",))
    await bus.declare_stream(spec)
    await bus.declare_stream(spec)  # declaring again is a no-op, as every replica does at start
    return spec, subject


async def test_a_publish_repeated_with_the_same_message_id_is_delivered_once(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    stream, subject = await _declare(bus, unique_name)
    first = await bus.publish(f"{subject}.hand_ended", b"hand h-1", msg_id="h-1")
    again = await bus.publish(f"{subject}.hand_ended", b"hand h-1", msg_id="h-1")
    other = await bus.publish(f"{subject}.hand_ended", b"hand h-2", msg_id="h-2")
    assert [bool(ack.duplicate) for ack in (first, again, other)] == [False, True, False]

    received: list[bytes] = []

    async def handle(msg: Msg) -> None:
        received.append(msg.data)

    consumer = ConsumerSpec(stream.name, unique_name("reader"), f"{subject}.>")
    await _drain(bus, consumer, handle, settle=0.6)
    assert received == [b"hand h-1", b"hand h-2"]


async def test_a_write_nobody_stores_yet_is_sent_again_until_its_stream_answers(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    """As while a stream elects its leader: nobody answers for the subject until the stream exists."""
    name = unique_name("LATE")
    subject = f"duel.test.{name.lower()}"
    with pytest.raises((nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError)):
        await bus.publish(f"{subject}.x", b"too early", msg_id="early", within_seconds=0.2)

    async def declare_later() -> None:
        await asyncio.sleep(0.5)
        await bus.declare_stream(StreamSpec(name, (f"{subject}.>",)))

    late = asyncio.create_task(declare_later())
    put = await bus.until_stored(
        lambda: bus.js.publish(f"{subject}.x", b"stored", headers={"Nats-Msg-Id": "once"}),
        what={"subject": subject},
        within_seconds=10,
    )
    await late
    assert put.stream == name and put.seq == 1
    assert (await bus.js.get_last_msg(name, f"{subject}.x")).data == b"stored"


async def test_publish_event_uses_the_envelope_event_id(bus: Bus, unique_name: Callable[[str], str]) -> None:
    _, subject = await _declare(bus, unique_name)
    event = events_pb2.HandEnded(envelope=events_pb2.EventEnvelope(event_id="evt-1", producer="table/t-0"))
    assert not (await bus.publish_event(f"{subject}.hand_ended", event)).duplicate
    assert (await bus.publish_event(f"{subject}.hand_ended", event)).duplicate
    with pytest.raises(ValueError, match="event_id"):
        await bus.publish_event(f"{subject}.hand_ended", events_pb2.HandEnded())


async def test_an_unconfirmed_publish_resolves_on_the_streams_ack(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    stream, subject = await _declare(bus, unique_name)
    first = await bus.publish_unconfirmed(f"{subject}.x", b"one", msg_id="u-1")
    again = await bus.publish_unconfirmed(f"{subject}.x", b"one", msg_id="u-1")
    assert await asyncio.wait_for(first, 5) is False and await asyncio.wait_for(again, 5) is True
    info = await bus.js.stream_info(stream.name)
    assert info.state.messages == 1
    nowhere = await bus.publish_unconfirmed(
        f"duel.nostream.{unique_name('x').lower()}", b"lost", msg_id="u-2"
    )
    with pytest.raises(nats.js.errors.NoStreamResponseError):  # no stream takes it: refused, not stored
        await asyncio.wait_for(nowhere, 5)
    with pytest.raises(ValueError, match="message id"):
        await bus.publish_unconfirmed(f"{subject}.x", b"no id", msg_id="")


async def test_a_failing_handler_naks_and_the_message_comes_again(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    stream, subject = await _declare(bus, unique_name)
    await bus.publish(f"{subject}.x", b"flaky", msg_id="m-1")
    attempts: list[int] = []

    async def handle(msg: Msg) -> None:
        attempts.append(msg.metadata.num_delivered)
        if len(attempts) == 1:
            raise RuntimeError("wallet not reachable yet")

    consumer = ConsumerSpec(stream.name, unique_name("flaky"), f"{subject}.>", nak_delay_seconds=0.1)
    await _drain(bus, consumer, handle, settle=1.0)
    assert attempts == [1, 2]


async def test_replicas_on_one_durable_share_the_messages(
    bus: Bus, nats_server_url: str, harness_nats: dict[str, str], unique_name: Callable[[str], str]
) -> None:
    stream, subject = await _declare(bus, unique_name)
    for n in range(40):
        await bus.publish(f"{subject}.x", str(n).encode(), msg_id=f"m-{n}")
    consumer = ConsumerSpec(stream.name, unique_name("shared"), f"{subject}.>")
    seen: dict[str, list[int]] = {"a": [], "b": []}

    def handler(replica: str) -> Callable[[Msg], object]:
        async def handle(msg: Msg) -> None:
            seen[replica].append(int(msg.data))
            await asyncio.sleep(0.01)  # so the other replica gets its turn

        return handle

    other = await Bus.connect(nats_server_url, name="replica-b", **harness_nats)
    try:
        await asyncio.gather(
            _drain(bus, consumer, handler("a"), settle=1.5),
            _drain(other, consumer, handler("b"), settle=1.5),
        )
    finally:
        await other.close()
    assert sorted(seen["a"] + seen["b"]) == list(range(40))  # each message handled exactly once
    assert seen["a"] and seen["b"]


async def test_the_bus_reconnects_when_nats_comes_back_and_keeps_the_stream(
    tmp_path: Path,
    nats_access: LocalAccess | None,
    harness_nats: dict[str, str],
    unique_name: Callable[[str], str],
) -> None:
    metrics = ServiceMetrics("probe")
    server = EmbeddedNats(tmp_path / "nats", access=nats_access)
    await asyncio.to_thread(server.start)
    bus = await Bus.connect(server.url, name="probe", metrics=metrics, **harness_nats)
    try:
        _, subject = await _declare(bus, unique_name)
        await bus.publish(f"{subject}.x", b"before", msg_id="m-1")
        await asyncio.to_thread(server.stop)
        for _ in range(50):  # the client notices the closed socket on its own read loop
            if metrics.registry.get_sample_value("duel_probe_nats_connected_bool") == 0:
                break
            await asyncio.sleep(0.1)
        assert metrics.registry.get_sample_value("duel_probe_nats_connected_bool") == 0

        # same port, same JetStream store
        restarted = EmbeddedNats(tmp_path / "nats", port=server.port, access=nats_access)
        await asyncio.to_thread(restarted.start)
        try:
            ack = None
            for _ in range(100):  # until the client has reconnected (reconnect_time_wait is 0.5 s)
                try:
                    ack = await bus.publish(f"{subject}.x", b"after", msg_id="m-2")
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            assert ack is not None and ack.seq == 2  # the stream survived the restart
            assert metrics.registry.get_sample_value("duel_probe_nats_reconnects_total") == 1
            assert metrics.registry.get_sample_value("duel_probe_nats_connected_bool") == 1
        finally:
            await bus.close()
            await asyncio.to_thread(restarted.stop)
    finally:
        await bus.close()
        await asyncio.to_thread(server.stop)


async def test_consumer_lag_gauges_read_pending_and_unacked_messages_from_jetstream(
    nats_server_url: str, harness_nats: dict[str, str], unique_name: Callable[[str], str]
) -> None:
    metrics = ServiceMetrics("scoring")
    bus = await Bus.connect(nats_server_url, name="lag-test", metrics=metrics, **harness_nats)
    try:
        stream, subject = await _declare(bus, unique_name)
        gone = ConsumerSpec(stream.name, unique_name("gone").lower(), f"{subject}.>")
        await bus.declare_consumer(gone)
        await bus.js.delete_consumer(gone.stream, gone.durable)  # deleted behind the service's back
        spec = ConsumerSpec(stream.name, unique_name("lag").lower(), f"{subject}.>")
        await bus.declare_consumer(spec)
        for n in range(3):
            await bus.publish(f"{subject}.hand_ended", b"hand", msg_id=f"h-{n}")

        def lag(what: str) -> float | None:
            sample = f"duel_scoring_bus_consumer_{what}_messages"
            return metrics.registry.get_sample_value(sample, {"durable": spec.durable})

        await bus.poll_consumer_lag()  # the deleted consumer is skipped: the others still count
        assert (lag("pending"), lag("ack_pending")) == (3, 0)
        subscription = await bus.js.pull_subscribe_bind(durable=spec.durable, stream=spec.stream)
        (delivered,) = await subscription.fetch(1, timeout=2)
        await bus.poll_consumer_lag()
        assert (lag("pending"), lag("ack_pending")) == (2, 1)
        await delivered.ack_sync()
        await bus.poll_consumer_lag()
        assert (lag("pending"), lag("ack_pending")) == (2, 0)
        await subscription.unsubscribe()
    finally:
        await bus.close()
