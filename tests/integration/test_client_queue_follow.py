"""The client library follows a queue entry whose stream broke (docs/protocol.md "When the queue stream
breaks"), through real gRPC channels to two fake matchmaking replicas that share their entries
(tests/integration/queue_fleet.py). The client's target names both (``ipv4:A,B``); the replica that
serves the entry's stream is killed (its connections dropped under the calls, its address dead: a
SIGKILL), or stopped (``server.stop(0)``), or cuts the stream (a status, or an early end),
and the client follows the ticket with ``FollowQueue`` on the other to its table, negotiating T7 once
however often a step is shown; it does not follow again what matchmaking refused (``NOT_FOUND``,
``PERMISSION_DENIED``), gives up after its bound when no replica answers, and behaves as before with
a matchmaking that has no FollowQueue."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.client.session import DuelClient, QueueEnded, QueueLost
from duelmahjong.platform.tls import ClientTls
from duelmahjong.tui import lobby
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import rules_pb2
from tests.integration.queue_fleet import ACCEPTED, END, PROPOSED, Entry, Fleet, Replica, negotiation, until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

PLAYER = "ana"
# Loopback, a replica gone: the state is shown again well within the 5 s failover goal.
SHOWN_AGAIN_WITHIN = 1.0


@pytest_asyncio.fixture
async def fleet(tls_env: dict[str, str]) -> AsyncIterator[tuple[Fleet, list[Replica]]]:
    shared = Fleet()
    replicas = [await Replica(shared, name, tls_env).start() for name in "ab"]
    yield shared, replicas
    for replica in replicas:
        await replica.close()


def _client(replicas: list[Replica], client_tls: ClientTls, follow_seconds: float = 30.0) -> DuelClient:
    target = "ipv4:" + ",".join(r.address for r in replicas)
    client = DuelClient(
        tls=client_tls, wallet=replicas[0].address, matchmaking=target, queue_follow_seconds=follow_seconds
    )
    client.use_session(PLAYER, PLAYER)
    return client


def _accept_and_seat(fleet: Fleet) -> None:
    """Matchmaking's side of a proposal: accepted (the house bot answers at once), then the table."""

    def answered(entry: Entry) -> None:
        fleet.publish(entry, negotiation(entry, ACCEPTED, multiplier=2))
        fleet.ready(entry)

    fleet.on_answer = answered


async def _serving(fleet: Fleet, replicas: list[Replica]) -> Replica:
    """The replica that serves the entry's stream, once it sent the ticket."""
    await until(lambda: len(fleet.entries) == 1, what="the client queued")
    return next(r for r in replicas if r.name == fleet.opened_on[-1])


@pytest.mark.parametrize(
    ("how", "private"),
    [
        ("killed", False),
        ("stopped", False),
        (grpc.StatusCode.UNAVAILABLE, False),
        (grpc.StatusCode.INTERNAL, False),
        (END, False),
        ("killed", True),
    ],
    ids=["killed", "stopped", "unavailable", "internal", "ended", "killed-private-table"],
)
async def test_a_queue_entry_is_followed_to_its_table_across_a_break(
    fleet: tuple[Fleet, list[Replica]], how: Any, private: bool, client_tls: ClientTls
) -> None:
    shared, replicas = fleet
    _accept_and_seat(shared)
    seen: list[str] = []
    breaks: list[str] = []
    async with _client(replicas, client_tls) as client:
        opening = client.open_private_table if private else client.find_table
        finding = asyncio.create_task(
            opening(
                "r",
                200,
                multiplier=2,
                on_update=lambda u: seen.append(str(u.WhichOneof("kind"))),
                on_break=breaks.append,
            )
        )
        serving = await _serving(shared, replicas)
        await until(lambda: "queued" in seen, what="the ticket reached the client")
        if how == "killed":
            await serving.kill()
        elif how == "stopped":
            await serving.stop()
        else:
            serving.cut(how)
        await until(lambda: client.queue_stats.resumes == 1, what="the entry's state shown again")
        shared.match(shared.only())
        ready = await asyncio.wait_for(finding, 10)

    assert ready.table_id == "table-t-1"
    # The ticket (and a private table's code) again: the state now; then the rest; T7 answered once.
    ticket = ["private_code", "queued"] if private else ["queued"]
    assert seen == [*ticket, *ticket, "matched", "negotiation", "negotiation", "table_ready"]
    assert [request.pairing_id for _, request in shared.answers] == ["p-t-1"]
    stats = client.queue_stats
    assert (stats.breaks, stats.resumes, stats.follows) == (1, 1, 1), stats
    assert stats.resume_seconds[0] < SHOWN_AGAIN_WITHIN, stats
    assert len(breaks) == 1 and ("UNAVAILABLE" in breaks[0] or how not in ("killed", "stopped")), breaks
    if how in ("killed", "stopped"):
        assert shared.followed_on == [r.name for r in replicas if r is not serving]


async def test_a_negotiation_step_shown_again_after_a_break_is_answered_once(
    fleet: tuple[Fleet, list[Replica]],
    client_tls: ClientTls,
) -> None:
    """The proposal was taken, but the replica died before the streams were told (the snapshot shows
    the step as it was): the client does not propose again, and plays on when matchmaking moves on."""
    shared, replicas = fleet
    async with _client(replicas, client_tls) as client:
        finding = asyncio.create_task(client.find_table("r", 200, multiplier=5))
        serving = await _serving(shared, replicas)
        entry = shared.only()
        shared.match(entry)
        await until(lambda: entry.state == PROPOSED, what="the client proposed")
        await serving.kill()
        await until(lambda: client.queue_stats.resumes == 1)
        await asyncio.sleep(0.2)  # time enough to send a second proposal, were it to
        shared.publish(entry, negotiation(entry, ACCEPTED, multiplier=5))
        shared.ready(entry)
        ready = await asyncio.wait_for(finding, 10)
    assert ready.pairing_id == entry.pairing_id
    assert [(type(r).__name__, r.multiplier) for _, r in shared.answers] == [("ProposeMultiplierRequest", 5)]


@pytest.mark.parametrize("seat", [rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND], ids=["first", "second"])
async def test_an_answer_whose_reply_was_lost_is_sent_again_and_taken_as_given(
    fleet: tuple[Fleet, list[Replica]], seat: rules_pb2.Seat.ValueType, client_tls: ClientTls
) -> None:
    """The answer was applied but its reply lost (UNAVAILABLE): the client sends it again, matchmaking
    answers FAILED_PRECONDITION (not this player's turn any more), and the client takes it as given."""
    shared, replicas = fleet
    shared.lose_next_answer = grpc.StatusCode.UNAVAILABLE
    _accept_and_seat(shared)
    async with _client(replicas, client_tls) as client:
        finding = asyncio.create_task(client.find_table("r", 200, multiplier=2))
        await _serving(shared, replicas)
        entry = shared.only()
        shared.match(entry, seat)
        if seat == rules_pb2.SEAT_SECOND:  # the opponent proposed: this player's turn to respond
            entry.state = PROPOSED
            shared.publish(entry, negotiation(entry, PROPOSED, multiplier=2, your_turn=True))
        ready = await asyncio.wait_for(finding, 10)
    assert ready.table_id == "table-t-1"
    assert len(shared.answers) == 2, shared.answers  # the lost one, then the one refused as done


@pytest.mark.parametrize(
    "refusal",
    [grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED],
    ids=["not_found", "permission_denied"],
)
async def test_a_refused_follow_is_not_tried_again(
    fleet: tuple[Fleet, list[Replica]], refusal: grpc.StatusCode, client_tls: ClientTls
) -> None:
    shared, replicas = fleet
    async with _client(replicas, client_tls) as client:
        updates = client.queue("r", 200)
        assert (await anext(updates)).HasField("queued")
        entry = shared.only()
        if refusal == grpc.StatusCode.NOT_FOUND:
            del shared.entries[entry.ticket]  # finished long ago: matchmaking forgot it
        else:
            entry.player = "someone-else"
        for replica in replicas:
            replica.cut(grpc.StatusCode.UNAVAILABLE)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await anext(updates)
    assert refused.value.code() == refusal
    assert client.queue_stats.follows == 1 and len(shared.followed_on) == 1


async def test_the_client_gives_up_when_no_replica_answers(
    fleet: tuple[Fleet, list[Replica]], client_tls: ClientTls
) -> None:
    shared, replicas = fleet
    breaks: list[str] = []
    async with _client(replicas, client_tls, follow_seconds=1.0) as client:
        updates = client.queue("r", 200, on_break=breaks.append)
        assert (await anext(updates)).HasField("queued")
        loop = asyncio.get_running_loop()
        for replica in replicas:
            await replica.kill()
        started = loop.time()
        with pytest.raises(QueueLost, match="could not be followed again within 1 s") as lost:
            await anext(updates)
        waited = loop.time() - started
    assert 1.0 <= waited < 2.0, waited
    assert isinstance(lost.value, QueueEnded)  # "no table", to a caller that knows no more
    # After 0.1, 0.2, 0.4 s and what is left of the second: four tries (three on a slow machine).
    assert client.queue_stats.follows == len(breaks) in (3, 4), (client.queue_stats, breaks)
    assert client.queue_stats.resumes == 0 and shared.followed_on == []


async def test_a_follow_a_replica_cannot_serve_is_tried_again_until_the_bound(
    client_tls: ClientTls, tls_env: dict[str, str]
) -> None:
    """Mid-rollout, a replica of an older version answers FollowQueue UNIMPLEMENTED: the client tries
    again as after a break (another replica may serve it), and gives up at its bound if none does."""
    shared = Fleet()
    replica = await Replica(shared, "old", tls_env, follows=False).start()
    try:
        async with _client([replica], client_tls, follow_seconds=1.0) as client:
            updates = client.queue("r", 200)
            assert (await anext(updates)).HasField("queued")
            replica.cut(grpc.StatusCode.UNAVAILABLE)
            with pytest.raises(QueueLost, match="UNIMPLEMENTED"):
                await anext(updates)
            assert client.queue_stats.follows >= 2 and client.queue_stats.resumes == 0
    finally:
        await replica.close()
    assert shared.followed_on.count("old") >= 2


async def test_a_stream_closed_by_its_reader_is_not_followed(
    fleet: tuple[Fleet, list[Replica]], client_tls: ClientTls
) -> None:
    """Leaving the queue is closing its stream (matchmaking cancels the ticket): no FollowQueue."""
    shared, replicas = fleet
    async with _client(replicas, client_tls) as client:
        updates = client.queue("r", 200)
        assert (await anext(updates)).HasField("queued")
        await updates.aclose()
        await asyncio.sleep(0.3)
    assert client.queue_stats == type(client.queue_stats)() and shared.followed_on == []


class ScreenUi:
    """What ``duel play``'s queue asks of its UI, with every redraw's text kept."""

    def __init__(self) -> None:
        self.screen: Any = None
        self.drawn: list[str] = []
        self.quitting: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def show(self, screen: Any) -> None:
        self.screen = screen

    def invalidate(self) -> None:
        self.drawn.append("\n".join("".join(text for _, text in line) for line in self.screen.lines(100)))


async def test_duel_play_says_it_reconnects_and_asks_each_step_once(
    fleet: tuple[Fleet, list[Replica]],
    client_tls: ClientTls,
) -> None:
    """``duel play``'s queue screen over the client library: the replica dies, the screen says it
    reconnects, the state comes back without the lines shown already, and the person's proposal,
    whose step the snapshot shows again, is not asked for again."""
    shared, replicas = fleet
    _accept_and_seat(shared)
    shared.on_answer = lambda entry: None  # taken; the streams are told after the break
    ui = ScreenUi()
    async with _client(replicas, client_tls) as client:
        queueing = asyncio.create_task(lobby._queue(ui, client, client.queue("r", 200), "r", 200, 0))
        serving = await _serving(shared, replicas)
        entry = shared.only()
        shared.match(entry)
        await until(lambda: "propose the multiplier (T7)" in ui.drawn[-1], what="the person is asked")
        ui.screen.press("2")
        await until(lambda: entry.state == PROPOSED, what="the proposal reached matchmaking")
        await serving.kill()
        await until(lambda: client.queue_stats.resumes == 1)
        await asyncio.sleep(0.2)  # the rest of the state shown again: time enough to ask again, were it to
        assert any("reconnecting to matchmaking… (UNAVAILABLE" in text for text in ui.drawn), ui.drawn
        assert "propose the multiplier (T7)" not in ui.drawn[-1] and "reconnecting" not in ui.drawn[-1], (
            ui.drawn[-1]
        )
        shared.publish(entry, negotiation(entry, ACCEPTED, multiplier=2))
        shared.ready(entry)
        ready = await asyncio.wait_for(queueing, 10)
    assert isinstance(ready, mm.TableReady) and ready.table_id == "table-t-1"
    assert ui.screen.status == [
        "in the queue",
        "matched with bo; you sit first",
        "negotiation: you propose the multiplier",
        "negotiation: 2× accepted",
        "table ready at t:1",
    ]
    assert len(shared.answers) == 1


NODE = shutil.which("node")
NODE_CLIENT = Path(__file__).resolve().parents[1] / "node" / "client.js"
# Queues with tests/node/client.js's Session (its findTable) and prints how it ended as one JSON line.
NODE_QUEUE = """
const { loadContract, Session } = require(process.env.CLIENT);
const given = JSON.parse(process.env.GIVEN);
const session = new Session(loadContract(process.env.PROTO), given);
session.metadata.set('authorization', 'Bearer ana');
session
  .findTable({ room_id: 'r' }, 200, (line) => console.error(line))
  .then(
    (ready) => console.log(JSON.stringify({ table_id: ready.table_id, resumes: session.queueResumes })),
    (err) => console.log(JSON.stringify({ error: err.message, code: err.code })),
  )
  .finally(() => session.close());
"""
needs_node = pytest.mark.skipif(
    NODE is None or not (NODE_CLIENT.parent / "node_modules" / "@grpc" / "grpc-js").is_dir(),
    reason="node or tests/node's npm packages (make node-client) are missing",
)


async def _node_queue(
    replicas: list[Replica], client_tls: ClientTls, follow_seconds: float = 30
) -> asyncio.subprocess.Process:
    given = {
        "caFile": str(client_tls.ca_file),
        "wallet": replicas[0].address,
        "matchmaking": "ipv4:" + ",".join(r.address for r in replicas),
        "scoring": "",
        "multiplier": 2,
        "followSeconds": follow_seconds,
    }
    assert NODE is not None
    env = {
        **os.environ,
        "CLIENT": str(NODE_CLIENT),
        "PROTO": str(NODE_CLIENT.parents[2] / "proto"),
        "GIVEN": json.dumps(given),
    }
    return await asyncio.create_subprocess_exec(
        NODE, "-e", NODE_QUEUE, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


async def _node_result(node: asyncio.subprocess.Process) -> dict[str, Any]:
    out, err = await asyncio.wait_for(node.communicate(), 20)
    assert node.returncode == 0, err.decode()
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["log"] = err.decode()
    return result


@needs_node
async def test_the_node_client_follows_its_entry_to_the_table_and_proposes_once(
    fleet: tuple[Fleet, list[Replica]], client_tls: ClientTls
) -> None:
    """tests/node/client.js: the proposal was taken but not yet shown when its replica died; the node
    client follows the ticket on the other replica, sees the step again, does not propose again, and
    gets its table."""
    shared, replicas = fleet
    node = await _node_queue(replicas, client_tls)
    try:
        serving = await _serving(shared, replicas)
        entry = shared.only()
        shared.match(entry)
        await until(lambda: entry.state == PROPOSED, within=10, what="the node client proposed")
        await serving.kill()
        await until(lambda: len(shared.followed_on) == 1, what="the node client followed its ticket")
        await asyncio.sleep(0.3)  # time enough to propose again, were it to
        shared.publish(entry, negotiation(entry, ACCEPTED, multiplier=2))
        shared.ready(entry)
        result = await _node_result(node)
    finally:
        if node.returncode is None:
            node.kill()
            await node.wait()
    assert result.get("table_id") == "table-t-1", result
    assert len(result["resumes"]) == 1 and result["resumes"][0] < SHOWN_AGAIN_WITHIN * 1000, result
    assert shared.followed_on == [r.name for r in replicas if r is not serving]
    assert len(shared.answers) == 1, (shared.answers, result["log"])


@needs_node
async def test_the_node_client_does_not_follow_a_ticket_matchmaking_does_not_know(
    fleet: tuple[Fleet, list[Replica]], client_tls: ClientTls
) -> None:
    shared, replicas = fleet
    node = await _node_queue(replicas, client_tls)
    try:
        await _serving(shared, replicas)
        del shared.entries[shared.only().ticket]
        for replica in replicas:
            replica.cut(grpc.StatusCode.UNAVAILABLE)
        result = await _node_result(node)
    finally:
        if node.returncode is None:
            node.kill()
            await node.wait()
    assert result.get("code") == grpc.StatusCode.NOT_FOUND.value[0], result
    assert "FollowQueue failed: NOT_FOUND" in result["error"] and len(shared.followed_on) == 1, result
