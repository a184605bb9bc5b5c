"""The client library follows a table that moves (real wallet, matchmaking and table server; gRPC,
NATS). Clients reach the table server through a TCP relay that stands for its address; mid-hand the
relay is cut the moment a seat is asked to decide — so that seat's answer never reaches the table —
and stops listening (the address is dead). A second gRPC server for the same live tables comes up on
another port and a ``TableAdopted`` names it. Both seats locate the table through matchmaking, find the
dead address first and back off, then rejoin at the new one with their tickets and last sequences, see
every event once and in order with no gap, resend the lost answer under its client action id, and
finish the hand; the table's log holds each answer once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.grpc_server import ServiceServer
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import events_pb2, play_pb2, server_state_pb2, table_pb2, table_pb2_grpc
from duelmahjong.v1 import matchmaking_pb2 as mm
from services.table.api import SERVICE_NAME, TableApi
from services.table.config import TableConfig
from services.table.main import TableServer
from tests.integration.relay import Relay

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

ROOM_ID = "erren-follow"
ROOM = {"room_id": ROOM_ID, "profile": "erren", "fan_rate": 1, "fee": 1, "carry_min": 100}
# seat 0's decision whose answer is lost with the connection: early, so that a short hand still has it
CUT_AT_DECISION = 2
DEAD_FOR = 1.0  # how long nothing answers for the table before its adopter does


class CountingBot(BaselineBot):
    """The baseline bot, counting the decisions it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.decided = 0

    def decide(self, view: play_pb2.SeatView, legal: play_pb2.LegalActions) -> play_pb2.Action:
        self.decided += 1
        return super().decide(view, legal)


async def _log_records(bus: Bus, table_id: str) -> list[server_state_pb2.TableLogRecord]:
    subscription = await bus.js.subscribe(subjects.table_log_subject(table_id), ordered_consumer=True)
    records: list[server_state_pb2.TableLogRecord] = []
    try:
        while True:
            try:
                message = await subscription.next_msg(timeout=2.0)
            except TimeoutError:
                return records
            appended = events_pb2.TableEventAppended.FromString(message.data)
            records += [appended.record, *appended.following]
    finally:
        await subscription.unsubscribe()


async def test_a_client_follows_its_table_to_another_server_and_finishes_the_hand(
    start_service: Any,
    service_env: dict[str, str],
    start_matchmaking: Callable[..., Any],
    bus: Bus,
    client_tls: ClientTls,
) -> None:
    wallet, matchmaking = await start_matchmaking([ROOM])
    relay = Relay()
    dead_address = await relay.start()
    table_env = {
        **service_env,
        "ANNOUNCE_SECONDS": "0.2",
        "SERVER_ID": f"opener-{uuid.uuid4().hex[:6]}",
        "ADVERTISE_ADDRESS": dead_address,  # clients (and matchmaking) reach it through the relay
        "SETTLEMENT_WAIT_SECONDS": "0.5",
    }
    table_server = TableServer()
    config = TableConfig.from_env(table_env)
    await start_service(table_server.spec, config)
    relay.upstream = table_server.address
    adopter = ServiceServer(config, ServiceMetrics("table_adopter"))
    adopter.add_service(
        SERVICE_NAME, table_pb2_grpc.add_TableServiceServicer_to_server, TableApi(table_server.host)
    )

    clients = [
        DuelClient(tls=client_tls, wallet=wallet.server.address, matchmaking=matchmaking.server.address)
        for _ in range(2)
    ]
    bots = [CountingBot(), CountingBot()]
    sequences: list[list[int]] = [[], []]
    decisions: list[set[int]] = [set(), set()]
    moves: list[asyncio.Task[None]] = []

    async def adopt(table_id: str, pairing_id: str) -> None:
        await asyncio.sleep(DEAD_FOR)  # the clients find the dead address meanwhile, and back off
        await adopter.start()
        adopted = events_pb2.TableAdopted(
            envelope=events_pb2.EventEnvelope(
                event_id=subjects.table_adopted_id(table_id, "adopter-1"), producer="table/adopter"
            ),
            table_id=table_id,
            pairing_id=pairing_id,
            server_id="adopter",
            address=adopter.address,
            incarnation="adopter-1",
            how=events_pb2.ADOPTION_KIND_ORPHAN,
        )
        await bus.publish_event(subjects.TABLE_ADOPTED, adopted)

    def watcher(seat: int, ready: mm.TableReady) -> Callable[[table_pb2.PlayResponse], None]:
        def watch(response: table_pb2.PlayResponse) -> None:
            if response.HasField("event"):
                sequences[seat].append(response.event.sequence)
            view = response.view if response.HasField("view") else None
            if view is None or not view.legal_actions.actions or view.table.phase != play_pb2.HAND_PHASE_PLAY:
                return
            decisions[seat].add(view.legal_actions.sequence)
            if seat == 0 and len(decisions[0]) == CUT_AT_DECISION and not relay.cut_done:
                relay.cut()  # before the seat reads this decision: its answer goes nowhere
                moves.append(asyncio.create_task(adopt(ready.table_id, ready.pairing_id)))

        return watch

    try:
        for client, name in zip(clients, ("ana", "bo"), strict=True):
            await client.login(name)
        readies = await asyncio.gather(*(c.find_table(ROOM_ID, 200) for c in clients))
        assert readies[0].address == dead_address
        outcomes = await asyncio.wait_for(
            asyncio.gather(
                *(
                    client.play(ready, bot, MatchPlan(hands=1), watch=watcher(seat, ready))
                    for seat, (client, ready, bot) in enumerate(zip(clients, readies, bots, strict=True))
                )
            ),
            timeout=90,
        )
        assert relay.cut_done and moves, (
            f"seat 0 was asked {len(decisions[0])} play decisions before its hand ended, the cut is at "
            f"decision {CUT_AT_DECISION}: {outcomes}"
        )
        await moves[0]
    finally:
        relay.close()  # whatever happened: no connection of it outlives the test
        for client in clients:
            await client.close()
        await adopter.stop(0)

    for seat, outcome in enumerate(outcomes):
        assert outcome.hands_settled == 1 and outcome.ended_reason, outcome
        assert outcome.reconnects >= 1 and outcome.relocations == 1, outcome
        assert outcome.rejections == [], outcome.rejections  # nothing the client did was refused
        # Every event once: each resume sent what the seat had not seen, under its original number.
        assert sequences[seat] == list(range(1, len(sequences[seat]) + 1)), sequences[seat]
    assert outcomes[0].resent_actions == 1  # the answer lost with the connection, sent again
    assert outcomes[1].resent_actions == 0

    # The table applied each answer of the first client once: the one sent twice too.
    records = await _log_records(bus, readies[0].table_id)
    played = [
        r.action_applied
        for r in records
        if r.HasField("action_applied")
        and r.action_applied.seat == readies[0].seat  # the first client's seat (either)
        and r.action_applied.origin == server_state_pb2.ACTION_ORIGIN_PLAYER
        and r.action_applied.action.WhichOneof("kind") not in ("leave", "continue_playing")
    ]
    assert len(played) == bots[0].decided, [a.engine_action for a in played]
