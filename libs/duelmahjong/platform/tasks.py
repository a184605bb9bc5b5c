"""Stopping asyncio tasks that may not stop when asked once.

A cancel can be lost inside a library: ``asyncio.wait_for`` on Python 3.11 returns a result and
drops a cancel that lands in the same loop turn (cpython gh-86296), and nats-py waits that way in its
fetch and flush. A task that lost its cancel runs on, and whoever awaits it waits forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(
    tasks: Iterable[asyncio.Future[Any]], *, within: float | None = None, first_wait: float = 0.5
) -> list[asyncio.Future[Any]]:
    """Cancel ``tasks`` and wait for them; cancel again, every half second after ``first_wait``
    (the time a task's cleanup gets), any that goes on. With ``within`` give up after that many
    seconds and return the tasks still running; without, wait as long as it takes. The outcome of
    every task that ended is retrieved (a crash superseded by the stop is not reported as lost)."""
    tasks = list(tasks)
    loop = asyncio.get_running_loop()
    give_up = None if within is None else loop.time() + within
    wait = first_wait
    pending = {task for task in tasks if not task.done()}
    while pending and (give_up is None or loop.time() < give_up):
        for task in pending:
            task.cancel()
        timeout = wait if give_up is None else min(wait, max(0.0, give_up - loop.time()))
        _, pending = await asyncio.wait(pending, timeout=timeout)
        wait = 0.5
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()
    return [task for task in tasks if not task.done()]
