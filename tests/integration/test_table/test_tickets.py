"""Table tickets on the Play stream, over real gRPC: a ticket of a key the server no longer accepts
(its table opened before a key rotation's switch) still seats its own player, because the table's
record says the seat is theirs; naming another seat, it is refused. Every ticket is held to that
record, a correctly signed one too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio
import pytest

from duelmahjong.platform import auth
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.table.tickets import TicketBook

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

RETIRED = "r" * 40  # a key this table server does not hold: the previous key of a finished rotation


async def _first_reply(tls: ClientTls, address: str, metadata: Any, ticket: str) -> table_pb2.PlayResponse:
    async with tls.channel(address) as channel:
        call = table_pb2_grpc.TableServiceStub(channel).Play(metadata=metadata)
        await call.write(table_pb2.PlayRequest(table_ticket=ticket))
        reply = await asyncio.wait_for(call.read(), 10)
        call.cancel()
        assert reply is not grpc.aio.EOF, await call.details()
        return reply


async def test_a_ticket_of_a_retired_key_seats_only_the_seats_own_player(
    table_server: Any, open_table: Callable[..., Any], token_secret: str, client_tls: ClientTls
) -> None:
    table_id, first, _second = await open_table()
    metrics = table_server.host.metrics
    retired = TicketBook(RETIRED)
    before = metrics.tickets_verified.labels(key="retired")._value.get()

    reply = await _first_reply(
        client_tls, table_server.address, first.token, retired.issue(table_id, 0, f"{table_id}-a")
    )
    assert reply.WhichOneof("kind") != "rejected", reply
    assert metrics.tickets_verified.labels(key="retired")._value.get() == before + 1

    # The other seat, under the bearer's own name: a retired key's signature is not trusted, and the
    # table's record gives that seat to the other player. A ticket signed with the server's own key
    # is held to the same record.
    for book in (retired, TicketBook(token_secret)):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _first_reply(
                client_tls, table_server.address, first.token, book.issue(table_id, 1, f"{table_id}-a")
            )
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert refused.value.details() == "this table ticket names a seat another player holds at this table"
    # Another player's seat, under that player's name: the ticket belongs to someone else.
    with pytest.raises(grpc.aio.AioRpcError) as foreign:
        await _first_reply(
            client_tls, table_server.address, first.token, retired.issue(table_id, 1, f"{table_id}-b")
        )
    assert foreign.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert foreign.value.details() == "this table ticket belongs to another player"
    # A ticket naming a key the server accepts must carry that key's signature.
    own = TicketBook(token_secret).issue(table_id, 0, f"{table_id}-a")
    with pytest.raises(grpc.aio.AioRpcError) as tampered:
        await _first_reply(
            client_tls,
            table_server.address,
            first.token,
            own[:-2] + ("xx" if not own.endswith("xx") else "yy"),
        )
    assert tampered.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "signature does not verify" in (tampered.value.details() or "")
    assert own.startswith(f"t2.{auth.key_id(token_secret)}.")
