"""gRPC face of the table service: ``duelmahjong.v1.TableService``.

``OpenTable`` is server to server (matchmaking's service token); ``Play`` is one bidirectional stream
per seat, authenticated twice: the session token (the interceptor) and the table ticket of the first
message, whose player must be the token's player.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc.aio

from duelmahjong.platform.auth import Role, current_principal, require_role
from duelmahjong.platform.errors import DomainError, InvalidArgument, PermissionDenied, readable_details
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.table.core import TableHost, check_open_request
from services.table.live import LiveTable
from services.table.seats import SeatSession

SERVICE_NAME = table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name


class TableApi(table_pb2_grpc.TableServiceServicer):
    def __init__(self, host: TableHost) -> None:
        self._host = host

    async def Play(
        self, request_iterator: AsyncIterator[table_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> None:
        # Written with context.write (not yielded): a client that goes away cancels this coroutine
        # where it waits, and the finally below runs in the RPC's own context.
        principal = current_principal()
        try:
            first = await anext(request_iterator)
        except StopAsyncIteration:
            raise InvalidArgument("the first Play message must carry the table ticket") from None
        if self._host.tickets is None:
            raise PermissionDenied("this table server cannot check tickets")
        ticket = self._host.tickets.verify(first.table_ticket)
        if ticket.player_id != principal.player_id:
            raise PermissionDenied("this table ticket belongs to another player")
        table = self._host.find(ticket.table_id)
        session = SeatSession(ticket.seat, batched=first.accept_batches, grand_shift=first.use_grand_shift)
        table.attach(session, first.last_seen_sequence)
        if first.HasField("action"):
            table.submit(session, first)
        reader = asyncio.create_task(self._read(request_iterator, table, session))
        try:
            while True:
                # Write everything the table queued for this seat before waiting again (an action's
                # events and view arrive together): one wake-up per batch, not per message.
                ended = await self._write_queued(context, session, await session.take())
                if ended:
                    return
        finally:
            reader.cancel()
            table.detach(session)

    @staticmethod
    async def _write_queued(
        context: grpc.aio.ServicerContext, session: SeatSession, taken: list[table_pb2.PlayResponse | None]
    ) -> bool:
        """Write what was taken from the seat's queue up to its end mark; True when the stream is to end."""
        ended = None in taken
        queued: list[table_pb2.PlayResponse] = []
        for response in taken:
            if response is None:
                break
            queued.append(response)
        if len(queued) > 1 and session.batched:
            batch = table_pb2.PlayResponse()
            batch.batch.responses.extend(queued)  # one copy of each, into the message written
            await context.write(batch)
        else:
            for each in queued:
                await context.write(each)
        return ended

    @staticmethod
    async def _read(
        request_iterator: AsyncIterator[table_pb2.PlayRequest], table: LiveTable, session: SeatSession
    ) -> None:
        try:
            async for request in request_iterator:
                if request.HasField("action"):
                    table.submit(session, request)
        except DomainError as err:  # e.g. bytes that are no PlayRequest: say so, read no further
            refused = table_pb2.ActionRejected(
                code=table_pb2.REJECTION_CODE_ILLEGAL, reason=readable_details(err.message)
            )
            session.send(table_pb2.PlayResponse(rejected=refused))
        except Exception:  # the client went away mid-read: the writing side ends the stream and detaches
            return

    async def OpenTable(
        self, request: table_pb2.OpenTableRequest, context: grpc.aio.ServicerContext
    ) -> table_pb2.OpenTableResponse:
        require_role(Role.SERVICE, Role.ADMIN)
        checked = check_open_request(
            request.table_id,
            request.pairing_id,
            request.room_id,
            request.rules,
            list(request.players),
            request.negotiated,
        )
        self._host.open(checked)
        tickets = self._host.tickets
        if tickets is None:
            raise PermissionDenied("this table server cannot issue tickets")
        return table_pb2.OpenTableResponse(
            table_id=checked.table_id,
            address=self._host.address,
            incarnation=self._host.incarnation,
            tickets=[
                table_pb2.SeatTicket(
                    seat=player.seat,
                    player_id=player.player_id,
                    table_ticket=tickets.issue(checked.table_id, seat, player.player_id),
                )
                for seat, player in enumerate(checked.players)
            ],
        )

    async def GetTableStatus(
        self, request: table_pb2.GetTableStatusRequest, context: grpc.aio.ServicerContext
    ) -> table_pb2.GetTableStatusResponse:
        table = self._host.find(request.table_id)
        return await table.public_status()
