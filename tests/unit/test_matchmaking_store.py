"""Matchmaking's shared store (services/matchmaking/store.py, records.py) on the in-memory backend:
every write is a compare-and-set that loses to any write since the read (counted by record kind), each
mirror sees every other's writes a loop turn later, a late echo never brings back a deleted key, a
change wakes the waiters of its key and of the key's parent, and records read back on another
replica as they were written."""

from __future__ import annotations

import asyncio

import pytest

from services.matchmaking import store
from services.matchmaking.records import Pairing, Records, Seat, Ticket
from services.matchmaking.store import Conflict, Entry, Mirror, token
from tests.unit.matchmaking_fakes import Mirrors, turns

pytestmark = pytest.mark.asyncio

KEY = "tickets.r.q-1"


Changes = list[tuple[str, bytes | None]]


async def _mirror(mirrors: Mirrors) -> tuple[Mirror, Changes]:
    """A replica's mirror, and the changes it applied."""
    changes: Changes = []
    mirror = await mirrors.mirror(lambda key, value: changes.append((key, value)))
    return mirror, changes


async def test_writes_are_compare_and_set_and_the_lost_ones_are_counted_by_kind(mirrors: Mirrors) -> None:
    mirror, changes = await _mirror(mirrors)
    first = await mirror.create(KEY, b"1")
    with pytest.raises(Conflict):
        await mirror.create(KEY, b"again")  # exists
    second = await mirror.update(KEY, b"2", first)
    with pytest.raises(Conflict):
        await mirror.update(KEY, b"3", first)  # not at the revision read any more
    with pytest.raises(Conflict):
        await mirror.delete(KEY, first)
    with pytest.raises(Conflict):
        await mirror.update("pairings.r.p-1", b"x", 1)  # absent
    with pytest.raises(Conflict):
        await mirror.delete("players.x", 1)
    assert mirror.conflicts == {"tickets": 3, "pairings": 1, "players": 1}
    assert mirror.get(KEY) == Entry(KEY, b"2", second)  # a lost write changes nothing
    await mirror.delete(KEY, second)
    assert mirror.get(KEY) is None
    third = await mirror.create(KEY, b"new")  # once deleted, created again
    assert third > second and mirror.get(KEY) == Entry(KEY, b"new", third)
    assert changes == [(KEY, b"1"), (KEY, b"2"), (KEY, None), (KEY, b"new")]


async def test_a_mirror_sees_another_s_writes_a_turn_later_and_a_write_on_a_stale_read_loses(
    mirrors: Mirrors,
) -> None:
    (a, _), (b, _) = await _mirror(mirrors), await _mirror(mirrors)
    first = await a.create(KEY, b"1")
    assert b.get(KEY) is None  # the watch has not brought it yet
    with pytest.raises(Conflict):
        await b.create(KEY, b"mine")  # but the store has it
    await turns()
    assert b.get(KEY) == Entry(KEY, b"1", first) and b.under("tickets.r") == [b.get(KEY)]
    second = await b.update(KEY, b"2", first)
    with pytest.raises(Conflict):
        await a.update(KEY, b"3", first)  # a read before b wrote: it loses
    assert a.conflicts == {"tickets": 1} and b.conflicts == {"tickets": 1}
    await turns()
    assert a.get(KEY) == b.get(KEY) == Entry(KEY, b"2", second)
    assert b.under("tickets.s") == [] and b.under("tickets") == [b.get(KEY)]


async def test_a_late_echo_of_an_older_write_never_brings_a_deleted_key_back(mirrors: Mirrors) -> None:
    (a, a_changes), (b, b_changes) = await _mirror(mirrors), await _mirror(mirrors)
    first = await a.create(KEY, b"1")
    second = await a.update(KEY, b"2", first)
    await a.delete(KEY, second)
    assert a.get(KEY) is None  # our own writes apply at once…
    await turns()  # …and the watch's echoes of them, the create and the update included, come after
    assert a.get(KEY) is None and b.get(KEY) is None
    assert a_changes == [(KEY, b"1"), (KEY, b"2"), (KEY, None)]  # each change applied once
    assert b_changes == [(KEY, b"1"), (KEY, b"2"), (KEY, None)]
    again = await b.create(KEY, b"3")  # a newer write of the key is a key again
    await turns()
    assert a.get(KEY) == Entry(KEY, b"3", again)


async def test_a_change_wakes_the_waiters_of_its_key_and_of_its_parent(mirrors: Mirrors) -> None:
    (mirror, _), (other, _) = await _mirror(mirrors), await _mirror(mirrors)
    key = mirror.changed(KEY)
    room = mirror.changed("tickets.r")
    other_room = mirror.changed("tickets.s")
    pairings = mirror.changed("pairings.r")
    await mirror.create(KEY, b"1")  # our own write: at once
    assert key.is_set() and room.is_set() and not other_room.is_set() and not pairings.is_set()

    either = mirror.changed("tickets.r.q-2", "pairings.r")
    await other.create("pairings.r.p-1", b"p")  # another replica's: when the watch brings it
    assert not either.is_set()
    await turns()
    assert either.is_set() and not other_room.is_set()

    echo = mirror.changed("tickets.r")
    await turns()  # the echo of our own create is not a change
    assert not echo.is_set()
    forgotten = mirror.changed("tickets.r")
    mirror.forget(forgotten, "tickets.r")
    mirror.forget(echo, "tickets.r")
    await mirror.create("tickets.r.q-3", b"3")
    assert not forgotten.is_set() and not echo.is_set()


async def test_records_read_back_on_another_replica_as_they_were_written(mirrors: Mirrors) -> None:
    views = []
    for _ in range(2):
        records = Records()
        records.attach(await mirrors.mirror(records.apply))
        views.append(records)
    writer, reader = views
    ticket = await writer.create(
        Ticket("q-1", "x", "r", 200, 1612.5, 80.0, 1000.0, 1300.0, display_name="X", follower="a")
    )
    seats = (Seat("q-1", "x", 200, items={3: 2, 7: 1}), Seat("q-2", "bot-1", 100, is_bot=True))
    pairing = await writer.create(
        Pairing("p-1", "r", seats, 1001.0, 1016.0, held=("x",), table_id="t-1", release=("x", "bot-1"))
    )
    await turns()
    assert reader.tickets["q-1"] == ticket and reader.tickets["q-1"].revision == ticket.revision
    assert reader.pairings["p-1"] == pairing and reader.pairings["p-1"].revision == pairing.revision
    assert reader.pairings["p-1"].seats[0].items == {3: 2, 7: 1}  # item kinds are ints again
    assert reader.pairing_of_table("t-1") == pairing and reader.waiting("r") == [ticket]
    moved = await reader.update(reader.tickets["q-1"], state="paired", pairing_id="p-1")
    with pytest.raises(Conflict):
        await writer.update(ticket, state="done")  # the writer's read is stale now
    await turns()
    assert writer.tickets["q-1"] == moved and writer.waiting("r") == []
    await writer.remove(writer.pairings["p-1"])
    await turns()
    assert "p-1" not in reader.pairings and reader.pairing_of_table("t-1") is None


async def test_a_key_is_named_by_ids_that_need_no_escaping() -> None:
    assert token("q-1f_A=") == "q-1f_A="
    for bad in ("", "a.b", "a b", "a*", "a>"):
        with pytest.raises(ValueError, match="cannot name a key"):
            token(bad)


async def test_after_a_lost_write_the_mirror_is_waited_for_until_it_has_the_write_that_won(
    mirrors: Mirrors, monkeypatch: pytest.MonkeyPatch
) -> None:
    (a, _), (b, _) = await _mirror(mirrors), await _mirror(mirrors)
    first = await a.create(KEY, b"1")
    await turns()
    second = await b.update(KEY, b"2", first)
    with pytest.raises(Conflict):
        await a.update(KEY, b"3", first)
    assert a.get(KEY) == Entry(KEY, b"1", first)  # reading again at once reads the same
    assert await a.newer(KEY, first) and a.get(KEY) == Entry(KEY, b"2", second)
    assert await a.newer(KEY, first)  # had it already
    created = asyncio.ensure_future(b.newer("tickets.r.q-2", 0))  # absent here: until it exists
    await turns()
    assert not created.done()
    await a.create("tickets.r.q-2", b"x")
    assert await created is True and b.get("tickets.r.q-2") is not None
    monkeypatch.setattr(store, "CATCH_UP_SECONDS", 0.01)
    assert await a.newer(KEY, second) is False  # nothing newer is coming
