"""The table server's collector policy (services/table/gc_policy.py): thresholds set and given back,
what survives frozen, periodically; and what freezing relies on — a live table, played and closed or
stopped mid-hand, leaves no cycle of its own for the collector (frozen, it would never be freed)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator

import pytest

from duelmahjong.engine.events import Event
from duelmahjong.engine.table import Table
from duelmahjong.platform.config import ConfigError
from services.table.config import TableConfig
from services.table.gc_policy import MIN_PERIOD_SECONDS, GcPolicy, GcSettings
from services.table.live import LiveTable
from services.table.live_state import LiveState, Shown
from tests.unit.test_table_rebuild import Match


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector as the test found it, whatever the test did to it."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_install_sets_the_thresholds_and_freezes_what_exists_and_close_gives_both_back(
    collector: None,
) -> None:
    before = gc.get_threshold()
    policy = GcPolicy(GcSettings(5.0, (12345, 7, 3), 0.005))
    policy.install()
    assert gc.get_threshold() == (12345, 7, 3)
    assert gc.get_freeze_count() > 0 and policy.freezes == 1
    survivor = [object()]  # made after the freeze: not frozen until the next one
    policy.freeze()
    assert policy.freezes == 2 and gc.get_freeze_count() > 0
    asyncio.run(policy.close())
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert survivor


def test_a_zero_period_never_freezes_but_sets_the_thresholds(collector: None) -> None:
    gc.unfreeze()
    policy = GcPolicy(GcSettings(0.0, (5000, 10, 10), 0.005))
    policy.install()
    assert gc.get_threshold() == (5000, 10, 10) and gc.get_freeze_count() == 0
    asyncio.run(policy.run_forever())  # returns at once
    assert policy.freezes == 0
    asyncio.run(policy.close())


def test_run_forever_freezes_every_period(collector: None) -> None:
    policy = GcPolicy(GcSettings(0.01, gc.get_threshold(), 0.005))

    async def for_a_while() -> None:
        # until three periods have frozen, bounded: a loaded machine stretches each period, never
        # skips one, so the count is what is checked, not how many fit in a fixed time
        task = asyncio.create_task(policy.run_forever())
        for _ in range(1000):  # at most about 10 s
            if policy.freezes >= 3:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(for_a_while())
    assert policy.freezes >= 3
    asyncio.run(policy.close())


def test_the_period_follows_the_pause_toward_the_target_within_its_bounds(collector: None) -> None:
    """A collection over the target shortens the period, one under it lengthens it; a single slow one
    moves it by the square root of the ratio, not all the way; the bounds hold whatever the pause."""
    policy = GcPolicy(GcSettings(1.0, gc.get_threshold(), pause_target_seconds=0.005))
    policy.last_pause = 0.020  # four times the target
    policy.adapt()
    assert policy.period == pytest.approx(0.5)
    policy.last_pause = 0.010
    policy.adapt()
    assert policy.period == pytest.approx(0.5 / 2**0.5)
    policy.last_pause = 0.0025
    policy.adapt()
    assert policy.period == pytest.approx(0.5)
    policy.last_pause = 10.0
    policy.adapt()
    assert policy.period == MIN_PERIOD_SECONDS
    policy.last_pause = 0.0
    policy.adapt()
    assert policy.period == 1.0


def test_run_forever_adapts_the_period_to_what_the_collections_take(collector: None) -> None:
    """Objects the collector tracks, kept between freezes, make each collection walk them: a target
    far under what that takes drives the period to its floor; a target far over it, to its ceiling,
    which is the period when it is under the floor."""
    kept: list[list[int]] = []

    async def for_a_while(policy: GcPolicy, seconds: float) -> None:
        task = asyncio.create_task(policy.run_forever())
        for _ in range(round(seconds / 0.01)):
            kept.extend([i] for i in range(2_000))  # tracked, alive at the next collection
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    busy = GcPolicy(GcSettings(0.5, gc.get_threshold(), pause_target_seconds=1e-6))
    asyncio.run(for_a_while(busy, 1.5))
    assert busy.freezes >= 3 and busy.period == MIN_PERIOD_SECONDS and busy.last_pause > 1e-6
    asyncio.run(busy.close())
    idle = GcPolicy(GcSettings(MIN_PERIOD_SECONDS / 2, gc.get_threshold(), pause_target_seconds=10.0))
    asyncio.run(for_a_while(idle, 0.4))
    assert idle.freezes >= 1 and idle.period == MIN_PERIOD_SECONDS / 2
    asyncio.run(idle.close())
    assert kept


def test_the_settings_are_read_and_checked() -> None:
    environ = {
        "TOKEN_SECRET": "s" * 32,
        "NATS_URL": "nats://127.0.0.1:1",
        "TLS_CERT_FILE": "server.pem",
        "TLS_KEY_FILE": "server-key.pem",
    }
    config = TableConfig.from_env(
        {**environ, "GC_FREEZE_SECONDS": "2.5", "GC_THRESHOLD0": "20000", "GC_PAUSE_TARGET_SECONDS": "0.002"}
    )
    assert (config.gc_freeze_seconds, config.gc_threshold0, config.gc_threshold1) == (2.5, 20000, 10)
    assert config.gc_pause_target_seconds == 0.002
    assert TableConfig.from_env(environ).gc_pause_target_seconds == 0.005
    with pytest.raises(ConfigError) as refused:
        TableConfig.from_env(
            {**environ, "GC_FREEZE_SECONDS": "-1", "GC_THRESHOLD0": "0", "GC_PAUSE_TARGET_SECONDS": "0"}
        )
    for name in ("GC_FREEZE_SECONDS", "GC_THRESHOLD0", "GC_PAUSE_TARGET_SECONDS"):
        assert name in str(refused.value)


_TABLE_TYPES = (LiveTable, LiveState, Table, Event, Shown)


def _cyclic_garbage_of_tables(run: Callable[[], None]) -> list[str]:
    """The table objects that only the cycle collector would free after ``run``."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return sorted({type(o).__name__ for o in gc.garbage if isinstance(o, _TABLE_TYPES)})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_table_played_to_its_end_is_freed_by_reference_counting() -> None:
    def played() -> None:
        match = Match("duel", 11)
        asyncio.run(match.play(2))

    assert _cyclic_garbage_of_tables(played) == []


def test_a_table_stopped_mid_hand_is_freed_by_reference_counting() -> None:
    async def stopped() -> None:
        match = Match("erren", 5)
        await match.begin()
        for _ in range(20):
            await match._step(match.table.state, 5)
            await match.settle()
        await match.table.stop()

    assert _cyclic_garbage_of_tables(lambda: asyncio.run(stopped())) == []
