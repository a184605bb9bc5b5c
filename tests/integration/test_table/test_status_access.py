"""Who may read a table's live status (GetTableStatus), over real gRPC: its two players, the backend's
services and operators. A third player is refused PERMISSION_DENIED on a public, watchable table as on
a private one: the live state is what the seats see now, and a spectator's copy is Watch's delayed one.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import grpc
import grpc.aio
import pytest

from duelmahjong.platform import auth
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import rules_pb2, table_pb2, table_pb2_grpc

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


@pytest.mark.parametrize("private", [False, True], ids=["public watchable table", "private table"])
async def test_only_the_players_services_and_operators_read_a_tables_status(
    private: bool,
    kit: SimpleNamespace,
    table_server: Any,
    issue: Callable[..., tuple[tuple[str, str]]],
    client_tls: ClientTls,
) -> None:
    table_id = f"status-{'private' if private else 'public'}"
    players = [
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_FIRST, player_id=f"{table_id}-a"),
        rules_pb2.SeatPlayer(seat=rules_pb2.SEAT_SECOND, player_id=f"{table_id}-b"),
    ]
    request = table_pb2.OpenTableRequest(
        table_id=table_id,
        rules=kit.rules(watchable=not private),
        players=players,
        negotiated=1,
        private_table=private,
    )
    status = table_pb2.GetTableStatusRequest(table_id=table_id)
    async with client_tls.channel(table_server.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        await stub.OpenTable(request, metadata=issue("matchmaking", auth.Role.SERVICE), timeout=10)

        readers = [
            issue(f"{table_id}-a"),
            issue(f"{table_id}-b"),
            issue("matchmaking", auth.Role.SERVICE),
            issue("ops-1", auth.Role.ADMIN),
        ]
        for metadata in readers:
            reply = await stub.GetTableStatus(status, metadata=metadata, timeout=10)
            assert reply.state.table_id == table_id and reply.status == table_pb2.TABLE_STATUS_WAITING

        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetTableStatus(status, metadata=issue("someone-else"), timeout=10)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert refused.value.details() == (
            f"only the two players of table {table_id} read its live status; a spectator follows a "
            "watchable table's delayed copy with Watch"
        )
        # A table that is not here is NOT_FOUND for anyone signed in, as before any access check.
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetTableStatus(
                table_pb2.GetTableStatusRequest(table_id="status-none"), metadata=issue("someone-else")
            )
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
