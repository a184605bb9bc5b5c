"""gRPC face of the table service: ``duelmahjong.v1.TableService``.

The contract is wired; each RPC answers UNIMPLEMENTED, naming where its logic comes from, until
issue 6 lands it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import NoReturn

import grpc.aio

from duelmahjong.platform.errors import NotYetImplemented
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.table.core import TableHost

SERVICE_NAME = table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name
ARRIVES_WITH = "issue 6 (table authority)"


class TableApi(table_pb2_grpc.TableServiceServicer):
    def __init__(self, host: TableHost) -> None:
        self._host = host

    async def Play(
        self, request_iterator: AsyncIterator[table_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> NoReturn:
        raise NotYetImplemented("TableService.Play", ARRIVES_WITH)

    async def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: grpc.aio.ServicerContext
    ) -> table_pb2.OpenTableResponse:
        raise NotYetImplemented("TableService.OpenTable", ARRIVES_WITH)

    async def GetTableStatus(
        self, request: table_pb2.GetTableStatusRequest, context: grpc.aio.ServicerContext
    ) -> table_pb2.GetTableStatusResponse:
        raise NotYetImplemented("TableService.GetTableStatus", ARRIVES_WITH)
