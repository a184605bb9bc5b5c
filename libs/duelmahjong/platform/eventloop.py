"""The event loop our processes run on: uvloop (libuv) unless ``EVENT_LOOP=asyncio`` says otherwise.

Measured on the wallet's settlement path (``duel bench wallet``): the wallet process spends about
10 % less CPU per settlement on uvloop than on the standard loop — its socket I/O, callbacks and
timers are in C. grpc.aio, nats-py and asyncpg run on any asyncio loop. A process that must not use
it (a debugger session, a platform without a uvloop wheel) sets ``EVENT_LOOP=asyncio``.

>>> import asyncio
>>> async def answer() -> int:
...     return 42
>>> run(answer())
42
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
CHOICES = ("uvloop", "asyncio")


def loop_factory(choice: str | None = None) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of the loop named by ``choice`` (default: ``$EVENT_LOOP``, else uvloop); None is
    asyncio's own. Raises ValueError for an unknown name."""
    choice = (choice or os.environ.get("EVENT_LOOP") or "uvloop").strip().lower()
    if choice not in CHOICES:
        raise ValueError(f"EVENT_LOOP must be one of {', '.join(CHOICES)}, got {choice!r}")
    if choice == "asyncio":
        return None
    import uvloop  # a dependency; imported here so EVENT_LOOP=asyncio never needs it

    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T], *, choice: str | None = None) -> T:
    """``asyncio.run`` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(main)
