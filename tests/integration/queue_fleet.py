"""A fake matchmaking fleet for the clients' queue-follow tests: real ``grpc.aio`` servers on loopback
ports (replicas) serving one ``MatchmakingService`` whose queue entries live in a shared :class:`Fleet`
— as the real replicas share theirs in NATS KV. Only the queue's RPCs are served (``Enqueue``,
``OpenPrivateTable``, ``FollowQueue``, ``ProposeMultiplier``, ``RespondMultiplier``); a test drives the
entry (``match``, ``publish``) and breaks a replica's streams (``Replica.cut``, ``stop``, ``kill``).
Clients reach each replica through a TCP relay (tests/integration/relay.py) that stands for its
address, so that a kill drops the connections as a SIGKILL does: no GOAWAY, nothing listening.

The caller is the bearer token itself (``DuelClient.use_session(player, player)``): a FollowQueue of
another player's ticket is ``PERMISSION_DENIED``, an unknown ticket ``NOT_FOUND``; a replica made with
``follows=False`` is a matchmaking without FollowQueue (``UNIMPLEMENTED``)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from duelmahjong.platform.tls import server_credentials
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import matchmaking_pb2_grpc, rules_pb2
from tests.integration.relay import Relay

Context = grpc.aio.ServicerContext[Any, Any]
AWAITING, PROPOSED, ACCEPTED = (
    mm.NEGOTIATION_STATE_AWAITING_PROPOSAL,
    mm.NEGOTIATION_STATE_PROPOSED,
    mm.NEGOTIATION_STATE_ACCEPTED,
)
TERMINAL = ("table_ready", "expired")
# What a replica's cut does to its open streams: end them early, or fail them with a status.
END = "end"


@dataclass
class Entry:
    ticket: str
    player: str
    updates: list[mm.QueueUpdate] = field(default_factory=list)
    # The negotiation as matchmaking knows it, which may be ahead of what the streams were sent.
    state: int = 0
    pairing_id: str = ""

    def snapshot(self) -> list[mm.QueueUpdate]:
        """The entry's state now, as FollowQueue sends it first: its ticket (and private code), the
        latest of each kind after it, and how it ended."""
        latest: dict[str, mm.QueueUpdate] = {}
        for update in self.updates:
            latest[update.WhichOneof("kind")] = update
        order = ("private_code", "queued", "position", "matched", "negotiation", *TERMINAL)
        return [latest[kind] for kind in order if kind in latest]


class Fleet:
    """What every replica shares: the entries, and what each was asked."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.opened_on: list[str] = []  # the replica of each Enqueue / OpenPrivateTable
        self.followed_on: list[str] = []  # the replica of each FollowQueue
        self.answers: list[tuple[str, mm.ProposeMultiplierRequest | mm.RespondMultiplierRequest]] = []
        # Told each T7 answer matchmaking took (after the state moved): a test publishes what follows.
        self.on_answer: Callable[[Entry], None] = lambda entry: None
        # ProposeMultiplier / RespondMultiplier apply the answer, then fail with this status once.
        self.lose_next_answer: grpc.StatusCode | None = None
        self._changed = asyncio.Event()
        self._tickets = itertools.count(1)

    def open(self, player: str, private: bool) -> Entry:
        entry = Entry(f"t-{next(self._tickets)}", player)
        self.entries[entry.ticket] = entry
        if private:
            entry.updates.append(mm.QueueUpdate(private_code=mm.PrivateCode(code="K7P2QX", room_id="r")))
        entry.updates.append(mm.QueueUpdate(queued=mm.Queued(queue_ticket_id=entry.ticket)))
        return entry

    def only(self) -> Entry:
        (entry,) = self.entries.values()
        return entry

    def publish(self, entry: Entry, *updates: mm.QueueUpdate) -> None:
        entry.updates += updates
        self.poke()

    def poke(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self) -> None:
        await self._changed.wait()

    def match(self, entry: Entry, seat: rules_pb2.Seat.ValueType = rules_pb2.SEAT_FIRST) -> None:
        """Paired: ``matched``, then the negotiation's first step (this seat's turn when first)."""
        entry.pairing_id, entry.state = f"p-{entry.ticket}", AWAITING
        matched = mm.Matched(pairing_id=entry.pairing_id, seat=seat, opponent_player_id="bo")
        first = seat == rules_pb2.SEAT_FIRST
        self.publish(entry, mm.QueueUpdate(matched=matched), negotiation(entry, AWAITING, your_turn=first))

    def ready(self, entry: Entry) -> None:
        table = mm.TableReady(pairing_id=entry.pairing_id, table_id=f"table-{entry.ticket}", address="t:1")
        self.publish(entry, mm.QueueUpdate(table_ready=table))


def negotiation(entry: Entry, state: int, *, multiplier: int = 0, your_turn: bool = False) -> mm.QueueUpdate:
    n = mm.Negotiation(pairing_id=entry.pairing_id, state=state, multiplier=multiplier, your_turn=your_turn)
    return mm.QueueUpdate(negotiation=n)


def _player(context: Context) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return str(value).removeprefix("Bearer ")
    return ""


class Replica(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    """One matchmaking replica of ``fleet`` on its own loopback port, serving TLS with ``tls_env``'s
    certificate (as a real replica does)."""

    def __init__(self, fleet: Fleet, name: str, tls_env: dict[str, str], *, follows: bool = True) -> None:
        self.fleet, self.name, self.follows = fleet, name, follows
        self.server = grpc.aio.server()
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(self, self.server)
        self.relay = Relay()
        credentials, _ = server_credentials(Path(tls_env["TLS_CERT_FILE"]), Path(tls_env["TLS_KEY_FILE"]))
        self.relay.upstream = f"127.0.0.1:{self.server.add_secure_port('127.0.0.1:0', credentials)}"
        self.address = ""  # the relay's: where clients reach it
        self.cuts = 0  # how many times its streams were cut
        self.how: grpc.StatusCode | str = END

    async def start(self) -> Replica:
        await self.server.start()
        self.address = await self.relay.start()
        return self

    async def close(self) -> None:
        self.relay.close()
        await self.server.stop(0)

    def cut(self, how: grpc.StatusCode | str) -> None:
        """Break every stream this replica serves (``END`` ends them early); new ones still work."""
        self.how, self.cuts = how, self.cuts + 1
        self.fleet.poke()

    async def stop(self) -> None:
        """A server stopped at once (``server.stop(0)``): its calls end with a GOAWAY."""
        await self.server.stop(0)

    async def kill(self) -> None:
        """As a SIGKILL looks to a client: every connection drops under its calls (no GOAWAY), and
        nothing answers at the address any more."""
        self.relay.cut()
        await self.server.stop(0)

    async def _stream(
        self, entry: Entry, first: list[mm.QueueUpdate], context: Context
    ) -> AsyncIterator[Any]:
        """``first``, then the entry's updates from where it stands now, until a terminal one."""
        cuts, sent = self.cuts, len(entry.updates)
        for update in first:
            yield update
            if update.WhichOneof("kind") in TERMINAL:
                return
        while True:
            if self.cuts != cuts:
                if self.how == END:
                    return
                assert isinstance(self.how, grpc.StatusCode)
                await context.abort(self.how, f"replica {self.name} cut its streams")
            while sent < len(entry.updates):
                update = entry.updates[sent]
                sent += 1
                yield update
                if update.WhichOneof("kind") in TERMINAL:
                    return
            await self.fleet.changed()

    async def _open(self, context: Context, private: bool) -> AsyncIterator[mm.QueueUpdate]:
        self.fleet.opened_on.append(self.name)
        entry = self.fleet.open(_player(context), private)
        async for update in self._stream(entry, list(entry.updates), context):
            yield update

    async def Enqueue(
        self, request: mm.EnqueueRequest, context: Context
    ) -> AsyncIterator[mm.EnqueueResponse]:
        async for update in self._open(context, private=False):
            yield mm.EnqueueResponse(update=update)

    async def OpenPrivateTable(
        self, request: mm.OpenPrivateTableRequest, context: Context
    ) -> AsyncIterator[mm.OpenPrivateTableResponse]:
        async for update in self._open(context, private=True):
            yield mm.OpenPrivateTableResponse(update=update)

    async def FollowQueue(
        self, request: mm.FollowQueueRequest, context: Context
    ) -> AsyncIterator[mm.FollowQueueResponse]:
        self.fleet.followed_on.append(self.name)
        if not self.follows:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        entry = self.fleet.entries.get(request.queue_ticket_id)
        if entry is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no queue ticket {request.queue_ticket_id}")
        assert entry is not None
        if entry.player != _player(context):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "another player's ticket")
        async for update in self._stream(entry, entry.snapshot(), context):
            yield mm.FollowQueueResponse(update=update)

    async def _answer(self, context: Context, request: Any, wanted: int, moved_to: int) -> None:
        self.fleet.answers.append((self.name, request))
        entry = next(e for e in self.fleet.entries.values() if e.pairing_id == request.pairing_id)
        if entry.state != wanted:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "not your turn to answer")
        entry.state = moved_to
        self.fleet.on_answer(entry)
        lost, self.fleet.lose_next_answer = self.fleet.lose_next_answer, None
        if lost is not None:
            await context.abort(lost, "the connection dropped")

    async def ProposeMultiplier(
        self, request: mm.ProposeMultiplierRequest, context: Context
    ) -> mm.ProposeMultiplierResponse:
        await self._answer(context, request, AWAITING, PROPOSED)
        return mm.ProposeMultiplierResponse()

    async def RespondMultiplier(
        self, request: mm.RespondMultiplierRequest, context: Context
    ) -> mm.RespondMultiplierResponse:
        await self._answer(context, request, PROPOSED, ACCEPTED)
        return mm.RespondMultiplierResponse()


async def until(check: Callable[[], bool], within: float = 5.0, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + within
    while not check():
        assert loop.time() < give_up_at, f"not within {within} s: {what}"
        await asyncio.sleep(0.01)
