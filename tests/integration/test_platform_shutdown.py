"""A service stops in bounded time even when a background task loses or ignores its cancel.

Python 3.11's ``asyncio.wait_for`` (used inside nats-py's fetch) returns a result and drops a cancel
that lands in the same loop turn (cpython gh-86296); a consumer that lost its cancel once polled on
forever and held a CI run's teardown until the 300 s timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from duelmahjong.platform.config import ServiceConfig
from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, serve

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_a_task_that_loses_one_cancel_or_ignores_all_does_not_hold_the_shutdown(
    service_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    release = asyncio.Event()
    lost_once = asyncio.Event()

    async def loses_the_first_cancel() -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if lost_once.is_set():
                    raise
                lost_once.set()  # as wait_for does when a result races the cancel

    async def ignores_every_cancel() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    async def wire(runtime: ServiceRuntime[Any]) -> None:
        runtime.spawn(loses_the_first_cancel(), name="loses-one-cancel")
        runtime.spawn(ignores_every_cancel(), name="ignores-cancels")

    config = ServiceConfig.from_env({**service_env, "SHUTDOWN_GRACE_SECONDS": "1"})
    stop = asyncio.Event()
    ready: asyncio.Future[ServiceRuntime[Any]] = asyncio.get_running_loop().create_future()
    service = asyncio.create_task(serve(config, ServiceSpec(wire=wire), stop=stop, on_ready=ready.set_result))
    try:
        runtime = await asyncio.wait_for(ready, 30)
        by_name = {task.get_name(): task for task in runtime._tasks}
        lost, stubborn = by_name["loses-one-cancel"], by_name["ignores-cancels"]
        began = time.monotonic()
        with caplog.at_level(logging.ERROR, logger="duelmahjong.service"):
            stop.set()
            clean = await asyncio.wait_for(asyncio.shield(service), 10)
        took = time.monotonic() - began
        assert clean
        assert lost_once.is_set() and lost.cancelled(), "the lost cancel was not repeated"
        assert 1.0 <= took < 5.0, f"shutdown took {took:.1f}s with a 1s bound"
        assert not stubborn.done()
        warned = [r for r in caplog.records if "ignored its cancellation" in r.getMessage()]
        assert [getattr(r, "fields", {}).get("task") for r in warned] == ["ignores-cancels"]
    finally:  # a failed check must not leave a gRPC server running into the loop's close
        stop.set()
        release.set()
        await asyncio.gather(service, *runtime._tasks if ready.done() else (), return_exceptions=True)


async def test_on_close_runs_after_the_background_tasks_in_reverse_order_even_past_a_failure(
    service_env: dict[str, str],
) -> None:
    happened: list[str] = []

    async def background() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            happened.append("background cancelled")

    async def wire(runtime: ServiceRuntime[Any]) -> None:
        async def close_first_opened() -> None:
            happened.append("first opened closed")

        async def close_second_opened() -> None:
            happened.append("second opened closed")
            raise RuntimeError("its connection was gone already")

        runtime.spawn(background(), name="background")
        runtime.on_close(close_first_opened)
        runtime.on_close(close_second_opened)

    config = ServiceConfig.from_env(service_env)
    stop = asyncio.Event()
    service = asyncio.create_task(
        serve(config, ServiceSpec(wire=wire), stop=stop, on_ready=lambda _: stop.set())
    )
    assert await asyncio.wait_for(service, 30)
    assert happened == ["background cancelled", "second opened closed", "first opened closed"]
