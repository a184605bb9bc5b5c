"""The stack on a real three-node JetStream cluster (three ``nats-server`` processes routed on loopback)
with ``JETSTREAM_REPLICAS=3``: every stream and durable consumer the services declare has three
replicas, and when the node leading the table-log stream is SIGKILLed mid-hand and brought back, play
goes on — every hand of the match ends and settles, the ledger's total is unchanged, and each table's
write-ahead log holds every record exactly once, with no gap."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_cluster import EmbeddedNatsCluster
from duelmahjong.platform.stackfile import StackState
from duelmahjong.v1 import events_pb2

# tests/e2e/conftest.py's fixture (conftest modules are not imported by name here).
StoredMessages = Callable[[str, str], Awaitable[list[bytes]]]

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

ROOM = {"room_id": "cluster-duel", "profile": "duel", "fan_rate": 1, "fee": 2, "carry_min": 100}
HANDS = 3
OUTAGE_SECONDS = 4.0  # the dead leader stays down this long: longer than a JetStream re-election


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedNatsCluster]:
    data_dir = Path(tempfile.mkdtemp(prefix="duel-cluster-"))
    try:
        with EmbeddedNatsCluster(data_dir, size=3) as running:
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
    with stack_with("cluster", settings) as state:
        yield state


async def _jetstream(cluster: EmbeddedNatsCluster) -> Any:
    return await nats.connect(cluster.url.split(","), connect_timeout=2)


async def test_every_stream_and_durable_consumer_has_three_replicas(
    stack: StackState, cluster: EmbeddedNatsCluster
) -> None:
    connection = await _jetstream(cluster)
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


async def _table_log(stored_messages: StoredMessages, url: str) -> list[events_pb2.TableEventAppended]:
    payloads = await stored_messages(url, f"{subjects.TABLE_LOG_PREFIX}.>")
    return [events_pb2.TableEventAppended.FromString(payload) for payload in payloads]


async def _until_the_log_holds(
    cluster: EmbeddedNatsCluster, messages: int, demo: asyncio.subprocess.Process, within: float
) -> None:
    connection = await _jetstream(cluster)
    try:
        deadline = asyncio.get_running_loop().time() + within
        while (await connection.jetstream().stream_info("DUEL_TABLE_LOG")).state.messages < messages:
            if demo.returncode is not None:
                _, stderr = await demo.communicate()
                pytest.fail(f"the demo ended before the log grew: {stderr.decode()[-3000:]}")
            if asyncio.get_running_loop().time() > deadline:
                pytest.fail(f"the table log did not reach {messages} messages within {within}s")
            await asyncio.sleep(0.1)
    finally:
        await connection.close()


def _warnings(stack: StackState) -> str:
    """The services' warnings and errors, to say why play stopped."""
    lines = []
    for log in sorted(Path(stack.logs_dir).glob("*.log")):
        lines += [
            f"{log.stem}: {line[:6000]}"
            for line in log.read_text().splitlines()
            if '"level": "INFO"' not in line
        ]
    return "\n".join(["", *lines[-60:]])


async def test_play_goes_on_when_the_node_leading_the_table_log_is_killed(
    stack: StackState, cluster: EmbeddedNatsCluster, stored_messages: StoredMessages
) -> None:
    state_file = Path(stack.logs_dir).parent / "stack.json"
    duel = Path(sys.executable).parent / "duel"
    command = [str(duel), "demo", "--hands", str(HANDS), "--json", "--state-file", str(state_file)]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}
    before = len(await _table_log(stored_messages, cluster.url))
    demo = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        await _until_the_log_holds(cluster, before + 12, demo, within=120)  # the first hand is in play
        leader = cluster.stream_leader("DUEL_TABLE_LOG")
        cluster.kill(leader)
        await asyncio.sleep(OUTAGE_SECONDS)
        await asyncio.to_thread(cluster.start_node, leader)
        stdout, stderr = await asyncio.wait_for(demo.communicate(), timeout=240)
    finally:
        if demo.returncode is None:
            demo.kill()
            await demo.wait()
    assert demo.returncode == 0, stderr.decode()[-3000:] + _warnings(stack)
    errors = [line for line in _warnings(stack).splitlines() if '"level": "ERROR"' in line]
    assert not errors, "\n".join(errors)
    summary = json.loads(stdout)
    assert len(summary["hands"]) == HANDS
    assert summary["ledger_total_before"] == summary["ledger_total_after"]

    seen: dict[str, list[int]] = {}
    for appended in (await _table_log(stored_messages, cluster.url))[before:]:
        first = appended.sequence
        seen.setdefault(appended.table_id, []).extend(range(first, first + 1 + len(appended.following)))
    assert seen, "the match wrote no table log"
    for table_id, sequences in seen.items():
        assert len(sequences) == len(set(sequences)), f"{table_id}: a record was written twice"
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences))), f"{table_id}: a gap"
