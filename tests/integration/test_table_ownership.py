"""Table ownership on real JetStream (services/table/ownership.py): a table has one owner; when its
server stops renewing its lease (killed, paused), exits cleanly or comes back as another incarnation,
the table is an orphan for every other server, exactly one adoption wins, and the former owner hears
that its table was taken. Fenced appends (platform/bus.py) refuse a writer that lost a table's log."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from duelmahjong.platform.bus import Bus, SequenceConflict
from duelmahjong.platform.streams import StreamSpec
from services.table.adoption import Adopter
from services.table.ownership import Lease, Ownership, TableTaken

pytestmark = pytest.mark.asyncio

LEASE = 0.6


@pytest.fixture
def bucket() -> str:
    return f"OWNERS_{uuid.uuid4().hex[:8]}"


ServerFactory = Callable[..., Awaitable[Ownership]]


@pytest_asyncio.fixture
async def server(
    nats_server_url: str, harness_nats: dict[str, str], bucket: str
) -> AsyncIterator[ServerFactory]:
    started: list[tuple[Ownership, Bus]] = []

    async def start(server_id: str, incarnation: str = "i1", taken: list[str] | None = None) -> Ownership:
        bus = await Bus.connect(nats_server_url, name=server_id, **harness_nats)
        ownership = Ownership(
            bus,
            Lease(server_id, incarnation, f"{server_id}:1"),
            lease_seconds=LEASE,
            bucket=bucket,
            on_taken=None if taken is None else taken.append,
        )
        await ownership.start()
        started.append((ownership, bus))
        return ownership

    yield start
    for ownership, bus in started:
        await ownership.stop(release=False)
        await bus.close()


async def _until(condition: Callable[[], bool], within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_a_table_has_one_owner_and_is_no_orphan_while_its_lease_is_renewed(
    server: ServerFactory,
) -> None:
    a, b = await server("a"), await server("b")
    await a.claim("t1")
    with pytest.raises(TableTaken):
        await b.claim("t1")
    await _until(lambda: b.owner("t1") is not None)
    await asyncio.sleep(LEASE * 3)  # several lease periods: a keeps renewing
    assert b.orphans() == [] and a.owned() == ["t1"]
    assert {lease.server_id for lease in b.live()} == {"a", "b"}


async def test_a_server_that_stops_renewing_loses_its_tables_to_exactly_one_adopter(
    server: ServerFactory,
) -> None:
    taken: list[str] = []
    a = await server("a", taken=taken)
    b, c = await server("b"), await server("c")
    await a.claim("t1")
    await a.claim("t2")
    await _until(lambda: len(b.orphans()) == 0 and b.owner("t2") is not None and c.owner("t2") is not None)
    # a's renewals stop (a paused or cut-off server), its watch goes on.
    next(task for task in a._tasks if task.get_name() == "ownership-renew").cancel()
    await _until(lambda: sorted(b.orphans()) == ["t1", "t2"] and sorted(c.orphans()) == ["t1", "t2"])
    results = await asyncio.gather(b.take("t1"), c.take("t1"))
    assert sorted(results) == [False, True]  # compare-and-set: one adoption wins
    assert await c.take("t2") is True
    await _until(lambda: sorted(taken) == ["t1", "t2"])  # the former owner hears it at once
    await _until(lambda: b.orphans() == [] and c.orphans() == [])


async def test_a_clean_exit_or_a_new_incarnation_orphans_the_tables_at_once(server: ServerFactory) -> None:
    a, b = await server("a"), await server("b")
    await a.claim("t1")
    await _until(lambda: b.owner("t1") is not None)
    await a.stop(release=True)
    await _until(lambda: b.orphans() == ["t1"], within=LEASE / 2)  # before any lease could expire
    assert await b.take("t1")

    await b.claim("t2")
    again = await server("b", incarnation="i2")  # b restarted with the same server id
    await _until(lambda: again.orphans() == ["t1", "t2"] or sorted(again.orphans()) == ["t1", "t2"])


async def test_an_orphans_latency_runs_from_the_renewal_of_the_incarnation_that_died(
    server: ServerFactory,
) -> None:
    watcher = await server("c")
    first = await server("b", incarnation="i1")
    await _until(lambda: watcher.last_renewed("b", "i1") is not None)
    await first.stop(release=False)  # killed: its lease is neither renewed nor deleted
    await asyncio.sleep(0.2)
    died = watcher.last_renewed("b", "i1")
    await asyncio.sleep(LEASE)
    await server("b", incarnation="i2")  # b restarted with the same server id: its key is replaced
    await _until(lambda: watcher.last_renewed("b", "i2") is not None)
    assert watcher.last_renewed("b", "i1") == died  # the dead one's stays, the new one's is apart
    assert (watcher.last_renewed("b", "i2") or 0) - (died or 0) >= LEASE


async def test_a_fenced_append_refuses_a_writer_that_lost_the_subject(bus: Bus) -> None:
    stream = f"FENCE_{uuid.uuid4().hex[:8]}"
    await bus.declare_stream(StreamSpec(stream, (f"{stream.lower()}.>",)))
    subject = f"{stream.lower()}.t1"
    first = await bus.append_fenced(stream, subject, b"1", msg_id="t1/1", expected_last_sequence=0)
    adopter = await bus.append_fenced(stream, subject, b"2", msg_id="t1/2", expected_last_sequence=first)
    # The ack of that append was lost and it is sent again: stored once, answered as stored.
    again = await bus.append_fenced(stream, subject, b"2", msg_id="t1/2", expected_last_sequence=first)
    assert again == adopter
    with pytest.raises(SequenceConflict, match="expected the last message"):  # the former owner
        await bus.append_fenced(stream, subject, b"2'", msg_id="t1/2-old", expected_last_sequence=first)
    assert await bus.last_on_subject(stream, subject) == (adopter, "t1/2")


async def test_the_adopter_serves_orphans_and_tables_handed_to_it_within_its_room(
    server: ServerFactory,
) -> None:
    a = await server("a")
    b = await server("b")
    for table_id in ("t1", "t2", "t3"):
        await a.claim(table_id)
    await _until(lambda: len(b.owned()) == 0 and all(b.owner(t) for t in ("t1", "t2", "t3")))
    served: list[str] = []

    async def serve(table_id: str, how: str) -> bool:
        served.append(table_id)
        return True

    capacity = [2]
    adopter = Adopter(
        b, serving=served.__contains__, room=lambda: capacity[0] - len(served), serve=serve, poll_seconds=0.05
    )
    running = asyncio.create_task(adopter.run_forever())
    try:
        await asyncio.sleep(LEASE * 2)
        assert served == []  # a's lease is alive: nothing is taken from a live server
        await a.stop(release=True)  # a exits cleanly
        await _until(lambda: len(served) == 2)
        await asyncio.sleep(LEASE)
        assert len(served) == 2 and sorted(b.owned()) == sorted(served)  # room for two only
        (left,) = b.orphans()
        c = await server("c")
        await _until(lambda: c.owner(left) is not None and left in c.orphans())
        assert await c.take(left, to=b.lease)  # c hands the orphan to b
        capacity[0] = 3  # b has room again
        await _until(lambda: left in served)
    finally:
        running.cancel()


async def test_an_orphan_no_server_has_room_for_is_given_up_before_matchmaking_closes_it(
    server: ServerFactory,
) -> None:
    a, b = await server("a"), await server("b")
    await a.claim("t1")
    await _until(lambda: b.owner("t1") is not None)
    await a.stop(release=True)
    served: list[str] = []

    async def serve(table_id: str, how: str) -> bool:
        served.append(table_id)
        return True

    full = Adopter(
        b, serving=served.__contains__, room=lambda: 0, serve=serve, poll_seconds=0.05, give_up_seconds=0.5
    )
    running = asyncio.create_task(full.run_forever())
    try:
        await _until(lambda: b.owner("t1") is None)  # the record is gone: nobody adopts it later
        c = await server("c")
        await asyncio.sleep(LEASE)
        assert c.orphans() == [] and c.owner("t1") is None and served == []
    finally:
        running.cancel()
