"""PullFeed on real NATS: every message once across workers, a bounded local queue, naks on close,
no spin on a deleted consumer, and requests asked again after NATS restarts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from nats.js import api

from duelmahjong.platform.bus import Bus
from duelmahjong.platform.embedded import EmbeddedNats
from duelmahjong.platform.nats_permissions import LocalAccess
from duelmahjong.platform.pull import REQUESTS, PullFeed
from duelmahjong.platform.streams import ConsumerSpec, StreamSpec

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def _stream_with(
    bus: Bus, unique_name: Callable[[str], str], messages: int, *, ack_wait: float = 30.0
) -> ConsumerSpec:
    name = unique_name("PULL")
    subject = f"duel.test.{name.lower()}"
    await bus.declare_stream(StreamSpec(name, (f"{subject}.>",)))
    await asyncio.gather(
        *(bus.publish(f"{subject}.x", str(n).encode(), msg_id=f"m-{n}") for n in range(messages))
    )
    spec = ConsumerSpec(name, unique_name("feed"), f"{subject}.>", ack_wait_seconds=ack_wait)
    await bus.declare_consumer(spec)
    return spec


async def _settled(bus: Bus, spec: ConsumerSpec) -> api.ConsumerInfo:
    return await bus.js.consumer_info(spec.stream, spec.durable)


async def test_a_feed_hands_every_message_to_its_workers_once(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    spec = await _stream_with(bus, unique_name, 300)
    feed = PullFeed(bus.client, spec.stream, spec.durable, batch=8)
    await feed.start()
    seen: list[int] = []

    async def worker() -> None:
        while (message := await feed.next(0.5)) is not None:
            seen.append(int(message.data))
            await message.ack()

    try:
        await asyncio.gather(*(worker() for _ in range(4)))
    finally:
        await feed.close()
    assert sorted(seen) == list(range(300))
    info = await _settled(bus, spec)
    assert info.num_pending == 0 and info.num_ack_pending == 0


async def test_an_idle_feed_answers_none_after_the_wait(bus: Bus, unique_name: Callable[[str], str]) -> None:
    spec = await _stream_with(bus, unique_name, 0)
    feed = PullFeed(bus.client, spec.stream, spec.durable, batch=4)
    await feed.start()
    try:
        started = asyncio.get_running_loop().time()
        assert await feed.next(0.3) is None
        assert 0.25 <= asyncio.get_running_loop().time() - started < 2.0
    finally:
        await feed.close()


async def test_messages_wait_here_only_a_few_batches_deep(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    """Nobody takes anything: the feed stops asking once its queue holds what its open requests
    brought, so the rest stays in JetStream (their ack wait not started)."""
    spec = await _stream_with(bus, unique_name, 200)
    feed = PullFeed(bus.client, spec.stream, spec.durable, batch=8)
    await feed.start()
    try:
        await asyncio.sleep(1.0)
        assert feed.waiting <= 8 * (REQUESTS + 1)
        info = await _settled(bus, spec)
        assert info.num_ack_pending <= 8 * (REQUESTS + 1) and info.num_pending >= 200 - 8 * (REQUESTS + 1)
        taken = [await feed.next(1.0) for _ in range(60)]  # taking makes room: it asks again
        assert all(message is not None for message in taken)
    finally:
        await feed.close()


async def test_closing_a_feed_naks_what_it_holds_so_another_replica_gets_it_at_once(
    bus: Bus, nats_server_url: str, harness_nats: dict[str, str], unique_name: Callable[[str], str]
) -> None:
    spec = await _stream_with(bus, unique_name, 20, ack_wait=60.0)
    first = PullFeed(bus.client, spec.stream, spec.durable, batch=16)
    await first.start()
    await asyncio.sleep(0.5)
    assert first.waiting == 20  # delivered here, unacked: without a nak they would wait 60 s
    await first.close()
    other = await Bus.connect(nats_server_url, name="replica-b", **harness_nats)
    second = PullFeed(other.client, spec.stream, spec.durable, batch=16)
    await second.start()
    try:
        got = []
        async with asyncio.timeout(10):
            while len(got) < 20:
                message = await second.next(1.0)
                if message is not None:
                    got.append(int(message.data))
                    await message.ack()
        assert sorted(got) == list(range(20))
    finally:
        await second.close()
        await other.close()


async def test_a_deleted_consumer_is_asked_again_slowly_and_served_when_it_returns(
    bus: Bus, unique_name: Callable[[str], str]
) -> None:
    spec = await _stream_with(bus, unique_name, 0)
    feed = PullFeed(bus.client, spec.stream, spec.durable, batch=4, expires=1.0)
    asks = 0
    publish = bus.client.publish

    async def counting(subject: str, payload: bytes = b"", **options: object) -> None:
        nonlocal asks
        if subject.startswith("$JS.API.CONSUMER.MSG.NEXT."):
            asks += 1
        await publish(subject, payload, **options)  # type: ignore[arg-type]

    bus.client.publish = counting  # type: ignore[method-assign]
    await feed.start()
    try:
        await bus.js.delete_consumer(spec.stream, spec.durable)
        asks = 0
        await asyncio.sleep(2.5)
        assert asks <= 4 * REQUESTS, f"{asks} pull requests in 2.5 s for a consumer that is gone"
        await bus.declare_consumer(spec)
        await bus.publish(f"duel.test.{spec.stream.lower()}.x", b"back", msg_id="back")
        message = await feed.next(5.0)
        assert message is not None and message.data == b"back"
    finally:
        bus.client.publish = publish  # type: ignore[method-assign]
        await feed.close()


async def test_a_feed_asks_again_after_nats_restarts(
    tmp_path: Path,
    nats_access: LocalAccess | None,
    harness_nats: dict[str, str],
    unique_name: Callable[[str], str],
) -> None:
    server = EmbeddedNats(tmp_path / "nats", access=nats_access)
    await asyncio.to_thread(server.start)
    bus = await Bus.connect(server.url, name="probe", **harness_nats)
    restarted: EmbeddedNats | None = None
    try:
        spec = await _stream_with(bus, unique_name, 0)
        feed = PullFeed(bus.client, spec.stream, spec.durable, batch=4, expires=1.0)
        await feed.start()
        await asyncio.to_thread(server.stop)
        # same port, same JetStream store
        restarted = EmbeddedNats(tmp_path / "nats", port=server.port, access=nats_access)
        await asyncio.to_thread(restarted.start)
        subject = f"duel.test.{spec.stream.lower()}.x"
        for _ in range(100):  # until the client has reconnected
            try:
                await bus.publish(subject, b"after", msg_id="after")
                break
            except Exception:
                await asyncio.sleep(0.1)
        message = await feed.next(10.0)  # the requests open before the restart are gone: asked again
        assert message is not None and message.data == b"after"
        await message.ack()
        await feed.close()
    finally:
        await bus.close()
        if restarted is not None:
            await asyncio.to_thread(restarted.stop)
        await asyncio.to_thread(server.stop)
