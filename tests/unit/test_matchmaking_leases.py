"""Room ownership between matchmaking replicas (services/matchmaking/leases.py) on one in-memory store,
each replica on a monotonic clock of its own that the test moves (a ``Clock``): the rooms split over the live
replicas; a replica that stops renewing loses its rooms to the others after the lease; one whose own
heartbeat has not been acknowledged within the lease acts on nothing until it renews; and with
leases, a matchmaker steps only its own rooms."""

from __future__ import annotations

import pytest

from services.matchmaking.leases import FORGET_AFTER_LEASES, Leases
from services.matchmaking.store import Mirror
from tests.unit.matchmaking_fakes import Clock, Harness, Mirrors, Wallet, room, run, turns

pytestmark = pytest.mark.asyncio

ROOMS = ["r1", "r2", "r3", "r4"]
LEASE = 5.0


async def _replica(mirrors: Mirrors, name: str, clock: Clock) -> Leases:
    """A replica's leases on its own mirror of the store, observing every change it applies."""
    own: list[Leases] = []
    mirror = Mirror(mirrors.backend, on_change=lambda key, value: own[0].observe(key, value))
    own.append(Leases(mirror, name, ROOMS, lease_seconds=LEASE, clock=clock))
    await mirrors.start(mirror)
    return own[0]


async def _rounds(*replicas: Leases, count: int = 4) -> None:
    """Each replica renews in turn, ``count`` times, the watch delivering between."""
    for _ in range(count):
        for leases in replicas:
            await turns()
            await leases.renew()
    await turns()


def _owners(leases: Leases) -> dict[str, str]:
    return {room_id: leases.owner(room_id) for room_id in ROOMS}


async def _split(mirrors: Mirrors, clock_a: Clock) -> tuple[Leases, Leases]:
    """Replica "a" takes every room alone, then "b" starts: they renew until they split the rooms."""
    a = await _replica(mirrors, "a", clock_a)
    await a.renew()
    assert a.owned() == ROOMS and all(a.owns(r) for r in ROOMS)  # alone: every room
    b = await _replica(mirrors, "b", Clock())
    await _rounds(b, a)
    assert len(a.owned()) == len(b.owned()) == 2 and sorted(a.owned() + b.owned()) == ROOMS
    return a, b


async def test_two_replicas_split_the_rooms_and_agree_on_who_owns_which(mirrors: Mirrors) -> None:
    a, b = await _split(mirrors, Clock())
    assert _owners(a) == _owners(b)
    assert all(a.owns(r) != b.owns(r) for r in ROOMS)  # each room has one owner
    assert a.live_replicas() == b.live_replicas() == ["a", "b"]


async def test_the_rooms_of_a_replica_that_stopped_renewing_are_taken_after_the_lease(
    mirrors: Mirrors,
) -> None:
    clock_a = Clock()
    a, b = await _split(mirrors, clock_a)
    theirs = b.owned()
    # b stops renewing (paused, cut off, dead); a renews every renew_seconds on its own clock.
    taken_at, start = None, clock_a.now
    while taken_at is None and clock_a.now - start < 3 * LEASE:
        clock_a.now += a.renew_seconds
        await _rounds(a, count=1)
        if len(a.owned()) == len(ROOMS):
            taken_at = clock_a.now - start
        else:
            assert a.owned() == [r for r in ROOMS if r not in theirs] and a.alive("b")
    assert taken_at is not None and LEASE < taken_at <= LEASE + a.renew_seconds
    assert not a.alive("b") and a.live_replicas() == ["a"]
    # b, on its own clock, still believes it is current, but the store says a owns its rooms now.
    assert b.current() and not any(b.owns(r) for r in ROOMS)

    await _rounds(b, a)  # b comes back: it gets its share again, one room given back each round
    assert len(a.owned()) == len(b.owned()) == 2 and _owners(a) == _owners(b)


async def test_a_replica_whose_heartbeat_is_not_acknowledged_within_the_lease_owns_nothing(
    mirrors: Mirrors,
) -> None:
    clock = Clock()
    a = await _replica(mirrors, "a", clock)
    await a.renew()
    clock.now += LEASE
    assert a.current() and all(a.owns(r) for r in ROOMS)  # acknowledged exactly a lease ago
    clock.now += 0.1  # not renewed for longer than the lease: paused, or cut off from the store
    assert not a.current() and not any(a.owns(r) for r in ROOMS)
    assert a.owned() == ROOMS  # though the store still names it
    await a.renew()
    assert a.current() and all(a.owns(r) for r in ROOMS)


async def test_a_heartbeat_the_store_refuses_is_not_an_acknowledgement(mirrors: Mirrors) -> None:
    clock = Clock()
    a = await _replica(mirrors, "a", clock)
    await a.renew()
    impostor = await _replica(mirrors, "a", Clock())  # another process under a's name writes first
    await impostor.renew()
    clock.now += LEASE + 0.1
    await a.renew()  # its heartbeat loses the compare-and-set: not acknowledged
    assert not a.current() and not any(a.owns(r) for r in ROOMS)
    await turns()
    await a.renew()
    assert a.current()


async def test_a_replica_that_stops_with_release_hands_its_rooms_over_at_once(mirrors: Mirrors) -> None:
    a, b = await _split(mirrors, Clock())
    await a.stop(release=True)
    await _rounds(b, count=1)
    assert b.owned() == ROOMS and b.live_replicas() == ["b"]  # no lease to wait for: a said goodbye


async def test_a_replica_that_starts_while_another_owns_the_rooms_takes_only_its_share(
    mirrors: Mirrors,
) -> None:
    a = await _replica(mirrors, "a", Clock())
    await a.renew()
    # b wired as the service wires it: its mirror has applied a's heartbeat before its leases exist.
    own: list[Leases] = []
    mirror = await mirrors.mirror(lambda key, value: own and own[0].observe(key, value))
    b = Leases(mirror, "b", ROOMS, lease_seconds=LEASE, clock=Clock())
    own.append(b)
    await b.start()
    try:
        assert b.owned() == [] and a.owned() == ROOMS  # a is alive: nothing is taken from it
        await _rounds(a, b)
        assert len(a.owned()) == len(b.owned()) == 2
    finally:
        await b.stop(release=False)


async def test_with_leases_a_matchmaker_steps_only_the_rooms_it_owns(harness: Harness) -> None:
    rooms = {r: room(room_id=r, rating_window_per_second=0) for r in ROOMS}
    wallet = Wallet({f"{p}-{r}": 1000 for p in "xy" for r in ROOMS})
    a = await harness.leased(rooms, wallet, "a", Clock())
    b = await harness.leased(rooms, wallet, "b", Clock())
    assert a.leases is not None and b.leases is not None
    await _rounds(b.leases, a.leases)
    mine = set(a.leases.owned())
    assert len(mine) == 2 and mine == {r for r in ROOMS if a.owns(r) and not b.owns(r)}
    for r in ROOMS:  # each pair queued on the replica that does not own the room
        other = b if r in mine else a
        await other.enqueue(f"x-{r}", r, 100)
        await other.enqueue(f"y-{r}", r, 100)
    await run(a)
    assert {p.room_id for p in a.records.pairings.values()} == mine  # only a's rooms were paired
    await run(b)
    assert {p.room_id for p in b.records.pairings.values()} == set(ROOMS)
    assert sum(a.counts[("paired", r)] for r in ROOMS) == sum(b.counts[("paired", r)] for r in ROOMS) == 2


async def test_a_ticket_whose_stream_is_on_a_dead_replica_ends_after_the_lease_and_the_grace(
    harness: Harness,
) -> None:
    rooms = {"r": room(room_id="r")}
    clock_a = Clock()
    a = await harness.leased(rooms, Wallet({"x": 1000}), "a", clock_a, stream_grace_seconds=10)
    b = await harness.leased(rooms, Wallet({"x": 1000}), "b", Clock(), stream_grace_seconds=10)
    assert a.leases is not None and b.leases is not None
    await _rounds(a.leases, b.leases)
    assert a.owns("r") and not b.owns("r")
    x = await b.enqueue("x", "r", 100)
    harness.follow(b, x)  # its stream is on b…
    await turns()
    await b.leases.stop(release=False)  # …which hangs for good: no heartbeat, no end of the stream seen

    async def after(seconds: float) -> str:
        clock_a.now += seconds
        harness.clock.now += seconds
        await _rounds(a.leases, count=1)  # type: ignore[arg-type]
        await run(a)
        return a.records.tickets[x.ticket_id].state

    assert await after(LEASE) == "waiting" and not a.records.tickets[x.ticket_id].unfollowed_at
    assert await after(1) == "waiting"  # b is dead: its stream is gone, the grace starts
    assert a.records.tickets[x.ticket_id].unfollowed_at == harness.clock.now
    assert await after(9.9) == "waiting"
    assert await after(0.1) == "done" and a.counts["unfollowed", "r"] == 1


async def test_a_replica_long_dead_is_forgotten_one_merely_late_is_not(mirrors: Mirrors) -> None:
    clock_a = Clock()
    a, _b = await _split(mirrors, clock_a)
    clock_a.now += FORGET_AFTER_LEASES * LEASE  # b silent exactly this long: kept
    await a.forget_dead()
    await turns()
    assert mirrors.backend_keys("replicas") == ["replicas.a", "replicas.b"]
    clock_a.now += 0.5
    await a.forget_dead()
    await turns()
    assert mirrors.backend_keys("replicas") == ["replicas.a"]  # a keeps its own, whatever its clock
