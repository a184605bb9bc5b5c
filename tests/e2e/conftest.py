"""Fixtures of the end-to-end suites.

- ``stack_with`` — ``with stack_with("name", {"MATCHMAKING_ROOMS": …}) as state:`` runs the stack
  ``make run`` runs (four service processes, embedded NATS and Postgres) with those settings added to
  the environment, and stops it (and removes its data) afterwards. A module's ``stack`` fixture wraps
  it with the settings that module needs.
- ``stored_messages`` — ``await stored_messages(stack, subject)``: the payload of every message the
  stack's JetStream holds on ``subject`` (read as the ``tools`` identity, with an ordered consumer
  until a second passes idle).
- ``demo_through`` — ``await demo_through(stack, hands, fault)``: ``duel demo --json`` plays a match of
  ``hands`` hands on the stack; once its first hand is in play (the table log has grown) ``fault()``
  runs (kill a node, restart a database…). Fails with the services' warnings and errors if the demo
  fails or any service logged an error; returns the demo's JSON summary and every table-log record the
  match wrote, checked to hold each record of each table once, with no gap.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import nats
import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_permissions import LocalAccess
from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import SERVICE_NAMES, StackState
from duelmahjong.v1 import events_pb2

# (name, settings[, the NATS access of servers the test started itself]) -> the running stack
StackWith = Callable[..., AbstractContextManager[StackState]]


@contextmanager
def _running_stack(
    name: str, settings: dict[str, str], nats_access: LocalAccess | None = None
) -> Iterator[StackState]:
    # Server data outside pytest's root, which a concurrent pytest may reset to 0700 (tests/conftest.py).
    data_dir = Path(tempfile.mkdtemp(prefix=f"duel-e2e-{name}-"))
    # Only these settings and the stack's own: not the servers, secret or addresses of whoever runs it.
    environ = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL", "TOKEN_SECRET")}
    environ = {k: v for k, v in environ.items() if not k.endswith("_ADDRESS")}
    environ = {k: v for k, v in environ.items() if k not in ("NATS_NKEY_SEED_FILE", "TLS_CA_FILE")}
    running = Stack(data_dir, list(SERVICE_NAMES), {**environ, **settings}, nats_access=nats_access)
    loop = asyncio.new_event_loop()  # only for bringing it up: the services are other processes
    try:
        yield loop.run_until_complete(running.up())
    finally:
        running.down()
        loop.close()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def stack_with() -> StackWith:
    return _running_stack


StoredMessages = Callable[[StackState, str], Awaitable[list[bytes]]]


async def _stored_messages(stack: StackState, subject: str) -> list[bytes]:
    connection = await nats.connect(stack.nats_url.split(","), **stack.nats_options())  # one, or a cluster
    try:
        subscription = await connection.jetstream().subscribe(subject, ordered_consumer=True)
        payloads = []
        while True:
            try:
                message = await subscription.next_msg(timeout=1.0)
            except TimeoutError:
                break
            payloads.append(message.data)
        await subscription.unsubscribe()
        return payloads
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def stored_messages() -> StoredMessages:
    return _stored_messages


Fault = Callable[[], Awaitable[None]]
DemoThrough = Callable[
    [StackState, int, Fault], Awaitable[tuple[dict[str, Any], list[events_pb2.TableEventAppended]]]
]
_IN_PLAY = 12  # table-log messages after which the first hand is surely dealt and being played


async def _table_log(stack: StackState) -> list[events_pb2.TableEventAppended]:
    payloads = await _stored_messages(stack, f"{subjects.TABLE_LOG_PREFIX}.>")
    return [events_pb2.TableEventAppended.FromString(payload) for payload in payloads]


async def _until_the_log_grows(
    stack: StackState, by: int, demo: asyncio.subprocess.Process, within: float
) -> None:
    connection = await nats.connect(stack.nats_url.split(","), **stack.nats_options())
    try:
        js = connection.jetstream()
        start = (await js.stream_info("DUEL_TABLE_LOG")).state.messages
        deadline = asyncio.get_running_loop().time() + within
        while (await js.stream_info("DUEL_TABLE_LOG")).state.messages < start + by:
            if demo.returncode is not None:
                _, stderr = await demo.communicate()
                pytest.fail(f"the demo ended before its first hand was in play: {stderr.decode()[-3000:]}")
            if asyncio.get_running_loop().time() > deadline:
                pytest.fail(f"the table log did not grow by {by} messages within {within}s")
            await asyncio.sleep(0.1)
    finally:
        await connection.close()


def service_warnings(stack: StackState) -> str:
    """The services' log lines above INFO, to say why play stopped."""
    lines = []
    for log in sorted(Path(stack.logs_dir).glob("*.log")):
        lines += [
            f"{log.stem}: {line[:3000]}"
            for line in log.read_text().splitlines()
            if '"level": "INFO"' not in line
        ]
    return "\n".join(["", *lines[-60:]])


async def _demo_through(
    stack: StackState, hands: int, fault: Fault
) -> tuple[dict[str, Any], list[events_pb2.TableEventAppended]]:
    state_file = Path(stack.logs_dir).parent / "stack.json"
    duel = Path(sys.executable).parent / "duel"
    command = [str(duel), "demo", "--hands", str(hands), "--json", "--state-file", str(state_file)]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_ADDRESS")}  # the state file decides
    before = len(await _table_log(stack))
    demo = await asyncio.create_subprocess_exec(
        *command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        await _until_the_log_grows(stack, _IN_PLAY, demo, within=120)
        await fault()
        stdout, stderr = await asyncio.wait_for(demo.communicate(), timeout=240)
    finally:
        if demo.returncode is None:
            demo.kill()
            await demo.wait()
    assert demo.returncode == 0, stderr.decode()[-3000:] + service_warnings(stack)
    errors = [line for line in service_warnings(stack).splitlines() if '"level": "ERROR"' in line]
    assert not errors, "\n".join(errors)
    written = (await _table_log(stack))[before:]
    sequences: dict[str, list[int]] = {}
    for appended in written:
        first = appended.sequence
        sequences.setdefault(appended.table_id, []).extend(range(first, first + 1 + len(appended.following)))
    assert sequences, "the match wrote no table log"
    for table_id, seen in sequences.items():
        assert len(seen) == len(set(seen)), f"{table_id}: a record was written twice"
        assert seen == list(range(seen[0], seen[0] + len(seen))), f"{table_id}: a gap in the log"
    return json.loads(stdout), written


@pytest.fixture(scope="session")
def demo_through() -> DemoThrough:
    return _demo_through
