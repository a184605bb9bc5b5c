"""A player's queue stream (services/matchmaking/feed.py) misses no change of its ticket: one made while
the stream's consumer is still sending an earlier update (the generator suspended at a ``yield``) is
seen as soon as the stream is read again; and a waiting player's place is shown at most once a second."""

from __future__ import annotations

import asyncio

import pytest

from services.matchmaking import updates
from services.matchmaking.feed import POSITION_EVERY_SECONDS as FEED_POSITION_EVERY
from services.matchmaking.feed import Feed
from services.matchmaking.records import DONE, Records, Ticket
from services.matchmaking.rooms import Room
from services.matchmaking.store import MemoryBackend, Mirror

pytestmark = pytest.mark.asyncio

ROOM = Room(room_id="r", profile="erren", fan_rate=1)


async def _records() -> Records:
    records = Records()
    mirror = Mirror(MemoryBackend(), on_change=records.apply)
    records.attach(mirror)
    await mirror.start()
    return records


async def test_a_change_made_while_an_update_is_being_sent_is_not_missed() -> None:
    records = await _records()
    ticket = await records.create(
        Ticket("q-1", "p-1", "r", carry=200, rating=1500, deviation=350, enqueued_at=1.0, expires_at=301.0)
    )
    stream = Feed(records, {"r": ROOM}, clock=lambda: 1.0).follow("q-1")
    assert isinstance(await anext(stream), updates.Queued)  # Position comes in the same batch
    # While the consumer sends Queued (the generator waits at its yield), the ticket ends.
    await records.update(ticket, state=DONE, reason="cancelled by the player")
    assert isinstance(await anext(stream), updates.Position)
    ended = await asyncio.wait_for(anext(stream), timeout=2.0)
    assert ended == updates.Expired("cancelled by the player")
    await stream.aclose()
    await records.mirror.stop()


async def test_a_waiting_player_s_place_is_shown_at_most_once_a_second() -> None:
    """Every arrival changes what each waiting player is shown (the count behind them): a busy room
    would cost an update per waiting player per arrival. The places are coalesced, the latest shown."""
    records = await _records()

    def ticket(n: int) -> Ticket:
        return Ticket(
            f"q-{n}", f"p-{n}", "r", carry=200, rating=1500, deviation=350, enqueued_at=n, expires_at=999.0
        )

    await records.create(ticket(1))
    seen: list[updates.Update] = []

    async def read() -> None:
        async for update in Feed(records, {"r": ROOM}, clock=lambda: 1.0).follow("q-1"):
            seen.append(update)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.05)
    started = asyncio.get_running_loop().time()
    for n in range(2, 12):  # ten arrivals within a few milliseconds
        await records.create(ticket(n))
        await asyncio.sleep(0)
    await asyncio.sleep(0.3)
    assert [u for u in seen if isinstance(u, updates.Position)] == [updates.Position(1, 1)]
    while updates.Position(1, 11) not in seen:
        assert asyncio.get_running_loop().time() - started < FEED_POSITION_EVERY + 1.0
        await asyncio.sleep(0.05)
    assert [u for u in seen if isinstance(u, updates.Position)] == [
        updates.Position(1, 1),
        updates.Position(1, 11),
    ]
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    await records.mirror.stop()
