"""The load generator of ``duel bench capacity``: one process playing many seats on one asyncio loop.

Each seat has its own grpc.aio channel (a player's own connection) and one Play stream. It thinks a
random ``think`` seconds before each decision, then wins when it can, else continues between hands,
else plays the decision's default action. Latency: the action sent → the first event it caused
received on the same seat (continues wait for the other seat by design: sent, not timed).

Tables opened together would all be at the same point of their first hand, their hand ends bunched a
hand's length (minutes at human pace) later. So each table gets a random head start: its seats play
that many decisions first at ``FAST_THINK``, which spreads the tables over the phases of a hand as a
population of players is; the parent measures once every head start is used up.

A batch of seats opens its streams first and plays only once the parent releases it, when every seat
of the batch (in every process) is attached: head starts asked at ``FAST_THINK`` are many times what
the server can serve, and a loop saturated by them takes new calls so slowly (grpc.aio asks grpc core
for one call at a time, one loop turn each) that seats still connecting would wait out grpc core's
30 s limit for an unrequested call and be cancelled, or the table's join time and find it closed.

The parent drives it over a pipe: ``("add", seats)``, ``("collect", None)`` → the samples since the
last collect, ``("release", None)`` → the seats added so far may play, ``("stop", None)``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path

import grpc
import grpc.aio

from bench.common import PLAINTEXT
from bench.table import choose
from duelmahjong.platform import auth, eventloop
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import play_pb2, table_pb2, table_pb2_grpc

Think = tuple[float, float]
FAST_THINK = (0.05, 0.15)


@dataclass
class Samples:
    """What the seats of one process saw since the last collect."""

    latencies: list[float] = field(default_factory=list)  # seconds, action sent → its first event
    sent: int = 0  # actions sent, continues included
    rejected: int = 0
    # streams that ended in an RPC error, since the run began (not reset by take): a seat refused or
    # cut while warming up leaves every later step with fewer live tables than it names
    errors: int = 0
    hands_started: int = 0  # seen by the first seat of each table
    head_start_left: int = 0  # decisions still to be played at FAST_THINK (not reset by take)
    attached: int = 0  # streams that received their first response (not reset by take)

    def take(self) -> Samples:
        taken = replace(self)
        self.latencies, self.sent, self.rejected, self.hands_started = [], 0, 0, 0
        return taken


class Seat:
    """One seat: a reader of its stream and an actor that answers its decisions after thinking."""

    def __init__(
        self,
        call: grpc.aio.StreamStreamCall,
        samples: Samples,
        think: Think,
        first: bool,
        head_start: int,
        released: asyncio.Event,
    ) -> None:
        self.call = call
        self.samples = samples
        self.released = released
        self.attached = False
        self.think = think
        self.first = first
        self.head_start = head_start
        self.last_seen = 0
        self.sent_at = 0.0
        self.sent_after = -1  # the last sequence seen when a timed action went out; -1: none in flight
        self.legal: play_pb2.LegalActions | None = None
        self.decision = 0  # bumped by every view: a thought-out answer to an older one is dropped
        self.wake = asyncio.Event()

    def on_response(self, response: table_pb2.PlayResponse) -> None:
        if not self.attached:
            self.attached = True
            self.samples.attached += 1
        if response.HasField("event"):
            event = response.event
            self.last_seen = max(self.last_seen, event.sequence)
            if self.sent_after >= 0 and event.sequence > self.sent_after:
                self.samples.latencies.append(time.perf_counter() - self.sent_at)
                self.sent_after = -1
            if self.first and event.HasField("hand_started"):
                self.samples.hands_started += 1
        elif response.HasField("rejected"):
            self.samples.rejected += 1
            self.sent_after, self.legal = -1, None
        elif response.HasField("view"):
            self.decision += 1
            legal = response.view.legal_actions
            self.legal = legal if legal.actions else None
            if self.legal is not None:
                self.wake.set()

    async def act(self) -> None:
        await self.released.wait()
        while True:
            await self.wake.wait()
            self.wake.clear()
            decision = self.decision
            await asyncio.sleep(random.uniform(*(FAST_THINK if self.head_start else self.think)))
            if decision != self.decision or self.legal is None:
                continue  # a newer view came meanwhile (the wake is set again if it asks something)
            action, self.legal = choose(self.legal), None
            if action.WhichOneof("kind") != "continue_playing":
                self.sent_at, self.sent_after = time.perf_counter(), self.last_seen
            self.samples.sent += 1
            if self.head_start:
                self.head_start -= 1
                self.samples.head_start_left -= 1
            await self.call.write(table_pb2.PlayRequest(action=action, last_seen_sequence=self.last_seen))


SeatTicket = tuple[str, str, bool, int]  # token, table ticket, first seat, head start


async def play_seat(
    address: str,
    seat_ticket: SeatTicket,
    think: Think,
    samples: Samples,
    released: asyncio.Event,
    tls: ClientTls,
) -> None:
    token, ticket, first, head_start = seat_ticket
    if think[1] <= FAST_THINK[1]:
        head_start = 0  # seats this fast need none
    samples.head_start_left += head_start
    seat: Seat | None = None
    try:
        async with tls.channel(address) as channel:
            call = table_pb2_grpc.TableServiceStub(channel).Play(metadata=auth.bearer_metadata(token))
            await call.write(table_pb2.PlayRequest(table_ticket=ticket, accept_batches=True))
            seat = Seat(call, samples, think, first, head_start, released)
            actor = asyncio.create_task(seat.act())
            try:
                while (received := await call.read()) is not grpc.aio.EOF:
                    batch = received.batch.responses if received.HasField("batch") else (received,)
                    for response in batch:
                        seat.on_response(response)
            finally:
                actor.cancel()
    except grpc.aio.AioRpcError:
        samples.errors += 1
    finally:
        samples.head_start_left -= seat.head_start if seat is not None else head_start


async def _serve(conn: Connection, address: str, think: Think, tls: ClientTls) -> None:
    samples = Samples()
    seats: list[asyncio.Task[None]] = []
    released = asyncio.Event()
    while True:
        command, payload = await asyncio.to_thread(conn.recv)
        if command == "add":
            released = asyncio.Event()  # this batch waits for its own release
            for seat_ticket in payload:
                seats.append(
                    asyncio.create_task(play_seat(address, seat_ticket, think, samples, released, tls))
                )
            conn.send(len(seats))
        elif command == "collect":
            conn.send(samples.take())
        elif command == "release":
            released.set()
            conn.send(None)
        else:
            for task in seats:
                task.cancel()
            await asyncio.gather(*seats, return_exceptions=True)
            conn.send(None)
            return


def serve(conn: Connection, address: str, think: Sequence[float], ca_file: str) -> None:
    """A load-generator process's entry point (multiprocessing, spawned); ``ca_file`` "" = plaintext."""
    tls = ClientTls(ca_file=Path(ca_file)) if ca_file else PLAINTEXT
    eventloop.run(_serve(conn, address, (float(think[0]), float(think[1])), tls))
