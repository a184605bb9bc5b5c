"""The load generator of ``duel bench matchmaking``, in processes of its own (so its CPU is its own and
the bench's bookkeeping does not slow it): players queueing in pairs at an offered rate, each timed
from its ``Enqueue`` sent to its ``Matched`` and to its ``TableReady``.

It takes commands on stdin and answers on stdout, one JSON object a line:

* ``{"cmd": "connect", "addresses": [...]}`` — one channel per matchmaking replica (closing the last
  configuration's), each ready before it answers;
* ``{"cmd": "prepare", "tag", "rate", "seconds", "seed", "rooms", "worker", "workers", "secret"}`` —
  the step's pairs: their arrival times (``rate`` pairs a second for ``seconds``, drawn as
  :func:`bench.common.arrivals`), rooms (round robin) and session tokens (minted now, not timed);
* ``{"cmd": "go"}`` — run the step; the answer is its :class:`StepResult` once every player of it has
  its table, failed, or gave up after ``PLAYER_SECONDS``;
* ``{"cmd": "quit"}``.

The two players of a pair queue at the same instant in the same room, each on the next replica
(round robin by channel), so the latency is matchmaking's and not the wait for a partner to arrive.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import grpc.aio

from bench.common import arrivals, tls_for
from duelmahjong.platform import auth, eventloop
from duelmahjong.v1 import matchmaking_pb2, matchmaking_pb2_grpc

CARRY = 200
# A player with no table by then gives up; its latencies count as this long (the percentiles of an
# overloaded step are then lower bounds) and it is counted as unseated.
PLAYER_SECONDS = 30.0


@dataclass
class StepResult:
    """What the load saw of one step (seconds; ``sent`` players)."""

    sent: int = 0
    seated: int = 0  # players who got their TableReady
    matched: list[float] = field(default_factory=list)  # Enqueue sent → Matched (of its table's pairing)
    ready: list[float] = field(default_factory=list)  # Enqueue sent → TableReady
    late: list[float] = field(default_factory=list)  # each pair sent after its arrival time by
    updates: dict[str, int] = field(default_factory=dict)  # QueueUpdates received, by kind
    rematched: int = 0  # Matched updates of pairings undone before their table (the player matched again)
    unseated: int = 0  # players with no table after PLAYER_SECONDS (overload: they gave up)
    failed: int = 0  # players whose stream ended otherwise (expired, an error): something is wrong
    first_error: str = ""
    cpu: float = 0.0  # this process's CPU seconds from the first send to the last table
    span: float = 0.0  # the first send → the last TableReady

    @classmethod
    def of(cls, data: dict[str, Any]) -> StepResult:
        return cls(**data)

    @classmethod
    def merged(cls, results: list[StepResult]) -> StepResult:
        """The workers' results of one step as one."""
        merged = cls()
        for result in results:
            for name, value in dataclasses.asdict(result).items():
                if name == "span":
                    merged.span = max(merged.span, value)
                elif name == "first_error":
                    merged.first_error = merged.first_error or value
                elif name == "updates":
                    for kind, count in value.items():
                        merged.updates[kind] = merged.updates.get(kind, 0) + count
                else:
                    setattr(merged, name, getattr(merged, name) + value)
        return merged


@dataclass(frozen=True)
class Player:
    player_id: str
    token: str
    replica: int  # the channel it queues on


@dataclass(frozen=True)
class Pair:
    at: float  # seconds after the step's start
    room: str
    players: tuple[Player, Player]


class Worker:
    def __init__(self) -> None:
        self.channels: list[grpc.aio.Channel] = []
        self.stubs: list[matchmaking_pb2_grpc.MatchmakingServiceStub] = []
        self.pairs: list[Pair] = []

    async def connect(self, addresses: list[str]) -> None:
        await self.close()
        tls = tls_for(os.environ)  # the CA the bench's servers were issued by (BENCH_CA_FILE)
        self.channels = [tls.channel(address) for address in addresses]
        for channel in self.channels:
            await asyncio.wait_for(channel.channel_ready(), timeout=30)
        self.stubs = [matchmaking_pb2_grpc.MatchmakingServiceStub(channel) for channel in self.channels]

    def prepare(
        self,
        tag: str,
        rate: float,
        seconds: float,
        seed: int,
        rooms: list[str],
        worker: int,
        workers: int,
        secret: str,
    ) -> None:
        replicas = len(self.stubs)
        self.pairs = []
        for number, at in enumerate(arrivals(rate, seconds, random.Random(seed))):
            first = 2 * number + worker

            def player(seat: int, number: int = number, first: int = first) -> Player:
                player_id = f"p{tag}-{worker}-{number}{'ab'[seat]}"
                token = auth.issue_token(secret, player_id=player_id)
                return Player(player_id, token, (first + seat) % replicas)

            room = rooms[(number * workers + worker) % len(rooms)]
            self.pairs.append(Pair(at, room, (player(0), player(1))))

    async def go(self) -> StepResult:
        result = StepResult()
        loop = asyncio.get_running_loop()
        cpu_before = time.process_time()
        start = time.perf_counter()
        players: list[asyncio.Task[None]] = []
        for pair in self.pairs:
            delay = start + pair.at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            result.late.append(max(0.0, time.perf_counter() - start - pair.at))
            for player in pair.players:
                players.append(loop.create_task(self._player(player, pair.room, result, start)))
        await asyncio.gather(*players)
        result.cpu = time.process_time() - cpu_before
        return result

    async def _player(self, player: Player, room: str, result: StepResult, start: float) -> None:
        result.sent += 1
        sent = time.perf_counter()
        matched: dict[str, float] = {}  # pairing id → its Matched received
        call = self.stubs[player.replica].Enqueue(
            matchmaking_pb2.EnqueueRequest(room_id=room, carry=CARRY),
            metadata=auth.bearer_metadata(player.token),
            timeout=PLAYER_SECONDS,
        )
        try:
            async for reply in call:
                update = reply.update
                kind = update.WhichOneof("kind")
                result.updates[kind] = result.updates.get(kind, 0) + 1
                if kind == "matched":
                    matched.setdefault(update.matched.pairing_id, time.perf_counter())
                elif kind == "table_ready":
                    seated = time.perf_counter()
                    # The Matched of the pairing that got the table: one of a pairing undone meanwhile
                    # (a compare-and-set lost to another replica) is counted apart.
                    result.matched.append(matched.get(update.table_ready.pairing_id, seated) - sent)
                    result.ready.append(seated - sent)
                    result.span = max(result.span, seated - start)
                    result.rematched += len(matched) - 1
                    result.seated += 1
                    return
                elif kind == "expired":
                    raise RuntimeError(f"expired: {update.expired.reason}")
            raise RuntimeError("the stream ended before TableReady")
        except grpc.aio.AioRpcError as err:
            # At the deadline a call still queued at the server may end CANCELLED rather than
            # DEADLINE_EXCEEDED: either way the player gave up waiting.
            if time.perf_counter() - sent >= PLAYER_SECONDS - 1.0:
                result.unseated += 1
                last = max(matched.values(), default=0.0)
                result.matched.append(last - sent if last else PLAYER_SECONDS)
                result.ready.append(PLAYER_SECONDS)
            else:
                self._failed(result, f"{err.code().name}: {err.details()}")
        except RuntimeError as err:
            self._failed(result, str(err))

    @staticmethod
    def _failed(result: StepResult, error: str) -> None:
        result.failed += 1
        result.first_error = result.first_error or error

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()
        self.channels, self.stubs = [], []


async def serve() -> None:
    worker = Worker()
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                return
            command = json.loads(line)
            match command.pop("cmd"):
                case "connect":
                    await worker.connect(command["addresses"])
                    answer: dict[str, Any] = {"ok": True}
                case "prepare":
                    worker.prepare(**command)
                    answer = {"ok": True, "pairs": len(worker.pairs)}
                case "go":
                    answer = dataclasses.asdict(await worker.go())
                case _:
                    return
            print(json.dumps(answer), flush=True)
    finally:
        await worker.close()


if __name__ == "__main__":
    eventloop.run(serve())
