"""Fixtures of the end-to-end suites.

- ``stack_with`` — ``with stack_with("name", {"MATCHMAKING_ROOMS": …}) as state:`` runs the stack
  ``make run`` runs (four service processes, embedded NATS and Postgres) with those settings added to
  the environment, and stops it (and removes its data) afterwards. A module's ``stack`` fixture wraps
  it with the settings that module needs.
- ``stored_messages`` — ``await stored_messages(nats_url, subject)``: the payload of every message the
  stack's JetStream holds on ``subject`` (read with an ordered consumer until a second passes idle).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import nats
import pytest

from duelmahjong.platform.stack import Stack
from duelmahjong.platform.stackfile import SERVICE_NAMES, StackState

StackWith = Callable[[str, dict[str, str]], AbstractContextManager[StackState]]


@contextmanager
def _running_stack(name: str, settings: dict[str, str]) -> Iterator[StackState]:
    # Server data outside pytest's root, which a concurrent pytest may reset to 0700 (tests/conftest.py).
    data_dir = Path(tempfile.mkdtemp(prefix=f"duel-e2e-{name}-"))
    # Only these settings and the stack's own: not the servers, secret or addresses of whoever runs it.
    environ = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL", "TOKEN_SECRET")}
    environ = {k: v for k, v in environ.items() if not k.endswith("_ADDRESS")}
    running = Stack(data_dir, list(SERVICE_NAMES), {**environ, **settings})
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


StoredMessages = Callable[[str, str], Awaitable[list[bytes]]]


async def _stored_messages(nats_url: str, subject: str) -> list[bytes]:
    connection = await nats.connect(nats_url.split(","))  # one URL, or a cluster's
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
