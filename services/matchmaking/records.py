"""What matchmaking stores, and where: the records of the ``DUEL_MATCHMAKING`` bucket.

==============================  ==================================================================
key                             value
==============================  ==================================================================
``tickets.<room>.<ticket>``     a :class:`Ticket`: one player's entry, from Enqueue (or a private
                                table's open or join) to its end; its place is ``enqueued_at``
``pairings.<room>.<pairing>``   a :class:`Pairing`: two tickets' pairing, its holds, negotiation,
                                table and end; kept ``ENDED`` a while after, for LocateTable
``players.<player>``            the player's one ticket or pairing: created only if absent, so a
                                player is never in two at once
``codes.<code>``                a private table's code → the opener's pairing id, created only if
                                absent
``joins.<player>``              the player's bucket of private codes to try (a rate the fleet shares)
``rooms.<room>``                the replica that owns the room now (:mod:`.leases`)
``replicas.<replica>``          a replica's heartbeat (:mod:`.leases`)
==============================  ==================================================================

Every deadline is a field with its due time on the wall clock (``expires_at``, ``deadline``,
``release_due``): whichever replica owns the room when it falls due acts on it, by compare-and-set on
the revision it read, so it is acted on once however many replicas saw it due.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

from services.matchmaking.store import Entry, Mirror, token

# Ticket states
WAITING, PAIRED, DONE = "waiting", "paired", "done"
# Pairing states
HOLDING, NEGOTIATING, ALLOCATING, PLAYING, ENDED = "holding", "negotiating", "allocating", "playing", "ended"
TABLE_READY = "table_ready"  # a finished ticket's reason when its table opened

TICKETS, PAIRINGS, PLAYERS, CODES, JOINS, ROOMS, REPLICAS = (
    "tickets",
    "pairings",
    "players",
    "codes",
    "joins",
    "rooms",
    "replicas",
)


@dataclass(frozen=True)
class Ticket:
    ticket_id: str
    player_id: str
    room_id: str
    carry: int
    rating: float  # in the room's profile, as the wallet had it at enqueue
    deviation: float
    enqueued_at: float  # the player's place in the queue
    expires_at: float
    display_name: str = ""
    is_bot: bool = False
    fill_for: str = ""  # a bot's: the ticket it was started for
    private_code: str = ""  # a private table's (opener and friend): in no queue, never given a bot
    held_for: str = ""  # a private opener's: the pairing id its hold was placed under at open
    state: str = WAITING
    pairing_id: str = ""
    seat: int = 0
    reason: str = ""  # DONE: why (TABLE_READY, or the Expired reason the player is shown)
    # The stream that follows the ticket: the replica serving it, and when the last one let go (0:
    # followed). An unpaired ticket nobody follows for the stream grace is cancelled.
    follower: str = ""
    unfollowed_at: float = 0.0
    bot_requested_at: float = 0.0  # a bot fill was asked for then (0: not asked)
    bot_not_before: float = 0.0  # after a fill that failed: not again before this
    hold_placed: bool = False  # a private opener's: the wallet holds its carry (a friend may join)
    ended_at: float = 0.0  # DONE: when
    release_due: float = 0.0  # DONE, a private opener's: its hold is to be released (0: nothing to do)
    revision: int = field(default=0, compare=False)

    @property
    def key(self) -> str:
        return ticket_key(self.room_id, self.ticket_id)


@dataclass(frozen=True)
class Seat:
    ticket_id: str
    player_id: str
    carry: int
    is_bot: bool = False
    display_name: str = ""
    items: dict[int, int] = field(default_factory=dict)  # T6 counts from the wallet (item rooms only)


@dataclass(frozen=True)
class Pairing:
    pairing_id: str
    room_id: str
    seats: tuple[Seat, Seat]  # SEAT_FIRST (waited longest, proposes — T7), SEAT_SECOND
    created_at: float
    # What is due next, by state: the holds placed (HOLDING), the proposal or the answer (NEGOTIATING),
    # the table opened (ALLOCATING, an attempt in flight); 0 = nothing due.
    deadline: float
    state: str = HOLDING
    private_table: bool = False
    held: tuple[str, ...] = ()  # players whose hold for this pairing the wallet has placed
    multiplier: int = 0
    declined: bool = False
    table_id: str = ""
    server_id: str = ""
    incarnation: str = ""
    address: str = ""
    table_tickets: tuple[str, ...] = ()  # by seat, once PLAYING
    opened_at: float = 0.0  # when the process hosting the table took it (opened or adopted it)
    first_opened_at: float = 0.0
    lost_since: float = 0.0  # its server was first seen lost then (0: not lost)
    closing_lost: bool = False  # a TableClosed on the lost table's behalf is being published
    ended_at: float = 0.0
    reason: str = ""  # ENDED: why, as the players were told
    # ENDED before a table: the players whose holds are still to be released, and since when. Emptied
    # once the wallet has released them; a pairing whose release is overdue is a stranded hold.
    release: tuple[str, ...] = ()
    release_due: float = 0.0
    revision: int = field(default=0, compare=False)

    @property
    def key(self) -> str:
        return pairing_key(self.room_id, self.pairing_id)

    def seat_of(self, player_id: str) -> int | None:
        for seat, entry in enumerate(self.seats):
            if entry.player_id == player_id:
                return seat
        return None

    @property
    def players(self) -> tuple[str, str]:
        return (self.seats[0].player_id, self.seats[1].player_id)


def ticket_key(room_id: str, ticket_id: str) -> str:
    return f"{TICKETS}.{token(room_id)}.{token(ticket_id)}"


def pairing_key(room_id: str, pairing_id: str) -> str:
    return f"{PAIRINGS}.{token(room_id)}.{token(pairing_id)}"


def player_key(player_id: str) -> str:
    return f"{PLAYERS}.{token(player_id)}"


def code_key(code: str) -> str:
    return f"{CODES}.{token(code)}"


def join_key(player_id: str) -> str:
    return f"{JOINS}.{token(player_id)}"


def room_topic(room_id: str) -> str:
    """The topic of every ticket of a room (a key's parent: see :meth:`Mirror.changed`)."""
    return f"{TICKETS}.{token(room_id)}"


def pairings_topic(room_id: str) -> str:
    return f"{PAIRINGS}.{token(room_id)}"


def _encode(record: Ticket | Pairing) -> bytes:
    data = dataclasses.asdict(record)
    del data["revision"]
    return json.dumps(data, separators=(",", ":")).encode()


def _ticket(data: dict[str, Any], revision: int) -> Ticket:
    return Ticket(**data, revision=revision)


def _pairing(data: dict[str, Any], revision: int) -> Pairing:
    seats = tuple(
        Seat(**{**seat, "items": {int(kind): count for kind, count in seat["items"].items()}})
        for seat in data.pop("seats")
    )
    return Pairing(
        seats=(seats[0], seats[1]),
        held=tuple(data.pop("held")),
        table_tickets=tuple(data.pop("table_tickets")),
        release=tuple(data.pop("release")),
        **data,
        revision=revision,
    )


R = TypeVar("R", Ticket, Pairing)


class Records:
    """The bucket's records as this replica's mirror holds them, indexed the ways matchmaking reads
    them, and the compare-and-set writes on them (:class:`~.store.Conflict` when another writer won)."""

    def __init__(self) -> None:
        self.tickets: dict[str, Ticket] = {}
        self.pairings: dict[str, Pairing] = {}
        # By room, the records still in play (a ticket not DONE, a pairing not ENDED): what a room's
        # step reads at every change. The settled ones are read by the slower housekeeping only.
        self._live_tickets: dict[str, dict[str, Ticket]] = {}
        self._live_pairings: dict[str, dict[str, Pairing]] = {}
        self._settled_tickets: dict[str, dict[str, Ticket]] = {}
        self._settled_pairings: dict[str, dict[str, Pairing]] = {}
        # PLAYING pairings apart: their tables last minutes, and nothing of theirs is due at a change of
        # the room (lost tables are checked by the slower housekeeping).
        self._playing: dict[str, dict[str, Pairing]] = {}
        self.by_table: dict[str, str] = {}  # table id → pairing id
        self.openers: dict[str, str] = {}  # a private table's code → its opener's ticket id
        self._waiting: dict[str, tuple[int, list[Ticket]]] = {}  # room → (version, its queue)
        self._versions: dict[str, int] = {}  # room → changes of its tickets
        # Tickets in the order the store created them (the same on every replica: the bucket is one
        # stream), which breaks ties between equal enqueue times.
        self._arrival: dict[str, int] = {}
        self._arrivals = 0
        self.mirror: Mirror  # set by attach()

    def attach(self, mirror: Mirror) -> None:
        self.mirror = mirror

    # --- the mirror's changes, decoded once ---------------------------------------------------------
    def apply(self, key: str, value: bytes | None) -> None:
        kind, _, rest = key.partition(".")
        if kind == TICKETS:
            room_id, _, ticket_id = rest.partition(".")
            self._versions[room_id] = self._versions.get(room_id, 0) + 1
            gone = self.tickets.pop(ticket_id, None)
            if gone is not None and gone.held_for:
                self.openers.pop(gone.private_code, None)
            for index in (self._live_tickets, self._settled_tickets):
                index.get(room_id, {}).pop(ticket_id, None)
            if value is None:
                self._arrival.pop(ticket_id, None)
                return
            if ticket_id not in self._arrival:
                self._arrivals += 1
                self._arrival[ticket_id] = self._arrivals
            ticket = self.tickets[ticket_id] = _ticket(json.loads(value), self._revision(key))
            if ticket.held_for:
                self.openers[ticket.private_code] = ticket_id
            index = self._settled_tickets if ticket.state == DONE else self._live_tickets
            index.setdefault(room_id, {})[ticket_id] = ticket
        elif kind == PAIRINGS:
            room_id, _, pairing_id = rest.partition(".")
            before = self.pairings.pop(pairing_id, None)
            if before is not None and before.table_id:
                self.by_table.pop(before.table_id, None)
            for pairings in (self._live_pairings, self._playing, self._settled_pairings):
                pairings.get(room_id, {}).pop(pairing_id, None)
            if value is None:
                return
            pairing = self.pairings[pairing_id] = _pairing(json.loads(value), self._revision(key))
            if pairing.table_id:
                self.by_table[pairing.table_id] = pairing_id
            placed = {ENDED: self._settled_pairings, PLAYING: self._playing}.get(
                pairing.state, self._live_pairings
            )
            placed.setdefault(room_id, {})[pairing_id] = pairing

    def _revision(self, key: str) -> int:
        entry = self.mirror.get(key)
        return entry.revision if entry is not None else 0

    # --- reads -------------------------------------------------------------------------------------
    def waiting(self, room_id: str) -> list[Ticket]:
        """The room's queue: its waiting tickets but private tables', first come first (computed once
        per change of the room's tickets, however many streams ask)."""
        version = self._versions.get(room_id, 0)
        cached = self._waiting.get(room_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        queued = [t for t in self.live_tickets(room_id) if t.state == WAITING and not t.private_code]
        queued.sort(key=lambda t: (t.enqueued_at, self._arrival.get(t.ticket_id, 0)))
        self._waiting[room_id] = (version, queued)
        return queued

    def live_tickets(self, room_id: str) -> list[Ticket]:
        """The room's tickets not DONE."""
        return list(self._live_tickets.get(room_id, {}).values())

    def settled_tickets(self, room_id: str) -> list[Ticket]:
        return list(self._settled_tickets.get(room_id, {}).values())

    def live_pairings(self, room_id: str) -> list[Pairing]:
        """The room's pairings before their table: holding, negotiating, allocating."""
        return list(self._live_pairings.get(room_id, {}).values())

    def playing_pairings(self, room_id: str) -> list[Pairing]:
        """The room's pairings at a table."""
        return list(self._playing.get(room_id, {}).values())

    def settled_pairings(self, room_id: str) -> list[Pairing]:
        return list(self._settled_pairings.get(room_id, {}).values())

    def pairing_of_table(self, table_id: str) -> Pairing | None:
        pairing_id = self.by_table.get(table_id)
        return self.pairings.get(pairing_id) if pairing_id else None

    def entry(self, key: str) -> Entry | None:
        return self.mirror.get(key)

    def claim(self, key: str) -> dict[str, str] | None:
        entry = self.mirror.get(key)
        return json.loads(entry.value) if entry is not None else None

    # --- writes ------------------------------------------------------------------------------------
    async def create(self, record: R) -> R:
        revision = await self.mirror.create(record.key, _encode(record))
        return dataclasses.replace(record, revision=revision)

    async def update(self, record: R, **changes: Any) -> R:
        """``record`` with ``changes``, written only if its key is still at the revision read."""
        new = dataclasses.replace(record, **changes)
        revision = await self.mirror.update(record.key, _encode(new), record.revision)
        return dataclasses.replace(new, revision=revision)

    async def remove(self, record: Ticket | Pairing) -> None:
        await self.mirror.delete(record.key, record.revision)

    async def create_claim(self, key: str, **value: str) -> int:
        return await self.mirror.create(key, json.dumps(value).encode())

    async def drop_claim(self, key: str, **expected: str) -> bool:
        """Delete the claim at ``key`` if it still says ``expected``; False if it does not (or is gone)."""
        entry = self.mirror.get(key)
        if entry is None or any(json.loads(entry.value).get(k) != v for k, v in expected.items()):
            return False
        await self.mirror.delete(key, entry.revision)
        return True


__all__ = [
    "ALLOCATING",
    "DONE",
    "ENDED",
    "HOLDING",
    "NEGOTIATING",
    "PAIRED",
    "PLAYING",
    "TABLE_READY",
    "WAITING",
    "Pairing",
    "Records",
    "Seat",
    "Ticket",
]
