"""The stack on a real three-node JetStream cluster (three ``nats-server`` processes routed on loopback)
with ``JETSTREAM_REPLICAS=3``: every stream and durable consumer the services declare has three
replicas, and when the node leading the table-log stream is SIGKILLed mid-hand and brought back, play
goes on — every hand of the match ends and settles, no service logs an error, the ledger's total is
unchanged, and each table's write-ahead log holds every record exactly once, with no gap."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from duelmahjong.platform.bus import Bus
from duelmahjong.platform.nats_cluster import EmbeddedNatsCluster
from duelmahjong.platform.nats_permissions import HARNESS, SERVICES, TOOLS, LocalAccess
from duelmahjong.platform.stackfile import StackState
from duelmahjong.platform.streams import ConsumerSpec, StoragePolicy, StreamSpec

# tests/e2e/conftest.py's fixture (conftest modules are not imported by name here).
DemoThrough = Callable[
    [StackState, int, Callable[[], Awaitable[None]]], Awaitable[tuple[dict[str, Any], list[Any]]]
]

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

ROOM = {"room_id": "cluster-duel", "profile": "duel", "fan_rate": 1, "fee": 2, "carry_min": 100}
HANDS = 3
OUTAGE_SECONDS = 4.0  # the dead leader stays down this long: longer than a JetStream re-election


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedNatsCluster]:
    data_dir = Path(tempfile.mkdtemp(prefix="duel-cluster-"))
    try:
        access = LocalAccess.create(data_dir / "tls", data_dir / "nkeys", (*SERVICES, TOOLS, HARNESS))
        with EmbeddedNatsCluster(data_dir, size=3, access=access) as running:
            yield running
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(stack_with: Any, cluster: EmbeddedNatsCluster) -> Iterator[StackState]:
    settings = {
        "NATS_URL": cluster.url,
        "JETSTREAM_REPLICAS": "3",
        "MATCHMAKING_ROOMS": json.dumps([ROOM]),
    }
    with stack_with("cluster", settings, cluster.access) as state:
        yield state


async def _jetstream(stack: StackState) -> Any:
    return await nats.connect(stack.nats_url.split(","), connect_timeout=2, **stack.nats_options())


async def test_every_stream_and_durable_consumer_has_three_replicas(
    stack: StackState, cluster: EmbeddedNatsCluster
) -> None:
    connection = await _jetstream(stack)
    try:
        js = connection.jetstream()
        streams = await js.streams_info()
        names = {stream.config.name for stream in streams}
        assert {"DUEL_TABLE", "DUEL_TABLE_LOG", "DUEL_SCORING", "DUEL_WALLET"} <= names
        consumers = 0
        for stream in streams:
            assert stream.config.num_replicas == 3, stream.config.name
            assert stream.cluster is not None and len(stream.cluster.replicas or []) == 2
            for consumer in await js.consumers_info(stream.config.name):
                if consumer.config.durable_name:
                    consumers += 1
                    assert consumer.config.num_replicas in (0, 3), consumer.name  # 0: the stream's
                    assert consumer.cluster is not None and len(consumer.cluster.replicas or []) == 2
        assert consumers >= 4  # scoring's, the wallet's, matchmaking's
        table_log = next(s for s in streams if s.config.name == "DUEL_TABLE_LOG")
        assert table_log.config.max_age == pytest.approx(30 * 86400)  # TABLE_LOG_RETENTION_DAYS
    finally:
        await connection.close()


async def test_play_goes_on_when_the_node_leading_the_table_log_is_killed(
    stack: StackState, cluster: EmbeddedNatsCluster, demo_through: DemoThrough
) -> None:
    async def kill_the_leader() -> None:
        leader = cluster.stream_leader("DUEL_TABLE_LOG")
        cluster.kill(leader)
        await asyncio.sleep(OUTAGE_SECONDS)
        await asyncio.to_thread(cluster.start_node, leader)

    summary, _ = await demo_through(stack, HANDS, kill_the_leader)
    assert len(summary["hands"]) == HANDS
    assert summary["ledger_total_before"] == summary["ledger_total_after"]


async def test_declarations_wait_out_a_cluster_that_has_no_leader_yet(tmp_path: Path) -> None:
    """A service that starts while its cluster is still forming (one node up, no quorum, no meta
    leader) declares its streams and consumers once the peers arrive, instead of exiting on the first
    unanswered request."""
    access = LocalAccess.create(tmp_path / "tls", tmp_path / "nkeys", (HARNESS,))
    forming = EmbeddedNatsCluster(tmp_path, size=3, name="forming", access=access)
    try:
        forming.start_node(0, wait=False)
        bus = await Bus.connect(
            forming.url,
            name="declares-early",
            storage=StoragePolicy(replicas=3),
            seed_file=str(access.seed_file(HARNESS)),
            ca_file=str(access.ca_file),
        )
        try:
            stream = StreamSpec("FORMING", ("forming.>",))
            consumer = ConsumerSpec("FORMING", "forming-reader", "forming.>")

            async def declare() -> None:
                await bus.declare_stream(stream)
                await bus.declare_consumer(consumer)

            declaring = asyncio.create_task(declare())
            await asyncio.sleep(2.0)  # longer than one JetStream API request waits for its answer
            assert not declaring.done(), "declared with no meta leader: the test would prove nothing"
            for index in (1, 2):
                forming.start_node(index, wait=False)
            await asyncio.wait_for(declaring, 15.0)
            info = await bus.js.consumer_info("FORMING", "forming-reader")
            assert info.config.num_replicas in (0, 3)
        finally:
            await bus.close()
    finally:
        forming.stop()
