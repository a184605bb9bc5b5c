"""gRPC face of the table service: ``duelmahjong.v1.TableService``.

``OpenTable`` is server to server (matchmaking's service token); ``Play`` is one bidirectional stream
per seat, authenticated twice: the session token (the interceptor) and the table ticket of the first
message, whose player must be the token's player and hold the ticket's seat in the table's own record.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc.aio

from duelmahjong.platform.auth import Role, current_principal, require_role
from duelmahjong.platform.errors import (
    DomainError,
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
    readable_details,
)
from duelmahjong.v1 import table_pb2, table_pb2_grpc
from services.table.core import TableHost, check_open_request
from services.table.live import LiveTable
from services.table.ports import OpenRequest
from services.table.seats import DEFAULT_REPLY_LIMIT, SeatSession

SERVICE_NAME = table_pb2.DESCRIPTOR.services_by_name["TableService"].full_name
_PlayContext = grpc.aio.ServicerContext[table_pb2.PlayRequest, table_pb2.PlayResponse]


def refusal(err: DomainError, session: SeatSession) -> table_pb2.ActionRejected:
    """The rejection of a stream message refused before it reached the table, with the seat's last view."""
    refused = table_pb2.ActionRejected(
        code=table_pb2.REJECTION_CODE_ILLEGAL, reason=readable_details(err.message)
    )
    request = getattr(err, "request", None)  # InvalidText: the message parsed, so its id is known
    if isinstance(request, table_pb2.PlayRequest):
        refused.client_action_id = request.client_action_id
    if session.last_view is not None:
        refused.view.CopyFrom(session.last_view)
    return refused


class NotAtThisTable(PermissionDenied):
    """A player asked for the live status of a table they do not play at (PERMISSION_DENIED)."""


def check_status_reader(table: LiveTable) -> None:
    """Who may read a table's live status: its two players, the backend's services and operators.

    Anyone else is refused, whatever the table: the live state is what the seats see now, and a
    spectator's copy is the delayed one ``Watch`` serves, for the tables that may be watched.
    """
    principal = current_principal()
    if principal.role in (Role.SERVICE, Role.ADMIN):
        return
    if principal.player_id not in {player.player_id for player in table.state.request.players}:
        raise NotAtThisTable(
            f"only the two players of table {table.state.table_id} read its live status; a spectator "
            "follows a watchable table's delayed copy with Watch"
        )


class TableApi(table_pb2_grpc.TableServiceServicer):
    def __init__(
        self,
        host: TableHost,
        *,
        reply_limit: int = DEFAULT_REPLY_LIMIT,
        opener: Callable[[OpenRequest], Awaitable[None]] | None = None,
    ) -> None:
        self._host = host
        self._reply_limit = reply_limit
        # Opens a checked table: the host's own, or one that records the table as this server's first.
        self._open = opener

    # The generated base types a stream RPC as a generator of responses; this one writes with
    # context.write instead (grpc.aio's other form), which the stubs do not describe.
    async def Play(  # type: ignore[override]
        self, request_iterator: AsyncIterator[table_pb2.PlayRequest], context: _PlayContext
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
        # The table's own record decides as well: the only check a ticket of a retired key gets.
        if table.state.request.players[ticket.seat].player_id != principal.player_id:
            raise PermissionDenied("this table ticket names a seat another player holds at this table")
        if self._host.metrics is not None:
            self._host.metrics.tickets_verified.labels(key=ticket.key).inc()
        session = SeatSession(
            ticket.seat,
            batched=first.accept_batches,
            grand_shift=first.use_grand_shift,
            reply_limit=self._reply_limit,
        )
        table.attach(session, first.last_seen_sequence)
        if first.HasField("action"):
            table.submit(session, first)
        reader = asyncio.create_task(self._read(request_iterator, table, session))
        # The writer runs apart so that a client which never reads (its writes then wait on HTTP/2 flow
        # control for ever) can still be cut off when it has too many replies unread.
        writer = asyncio.create_task(self._write_all(context, session))
        overflowed = asyncio.create_task(session.overflowed.wait())
        try:
            await asyncio.wait((writer, overflowed), return_when=asyncio.FIRST_COMPLETED)
            if not writer.done():
                raise ResourceExhausted(
                    f"this stream has {session.reply_limit} replies its client has not read, so it is "
                    "closed; read the stream's responses as they come, and Play again with the table "
                    "ticket and last_seen_sequence to resume"
                )
            writer.result()
        finally:
            for task in (reader, writer, overflowed):
                task.cancel()
            await asyncio.gather(reader, writer, overflowed, return_exceptions=True)
            table.detach(session)

    async def _write_all(self, context: _PlayContext, session: SeatSession) -> None:
        while True:
            # Write everything the table queued for this seat before waiting again (an action's
            # events and view arrive together): one wake-up per batch, not per message.
            ended = await self._write_queued(context, session, await session.take())
            session.written()
            if ended:
                return

    @staticmethod
    async def _write_queued(
        context: _PlayContext, session: SeatSession, taken: list[table_pb2.PlayResponse | None]
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
        """Hand each action to the table until the client half-closes or goes away.

        A message refused at the edge (bytes that are no PlayRequest, a text field with a control
        character or too long) is answered with an ``ActionRejected`` (ILLEGAL, the reason, the last
        view) and the stream reads on: one bad message costs the client that message, not its seat.
        """
        while True:
            try:
                async for request in request_iterator:
                    if request.HasField("action"):
                        table.submit(session, request)
                return
            except DomainError as err:
                session.send(table_pb2.PlayResponse(rejected=refusal(err, session)))
            except Exception:  # the client went away mid-read: the writing side ends the stream and detaches
                return

    async def OpenTable(
        self,
        request: table_pb2.OpenTableRequest,
        context: grpc.aio.ServicerContext[table_pb2.OpenTableRequest, table_pb2.OpenTableResponse],
    ) -> table_pb2.OpenTableResponse:
        require_role(Role.SERVICE, Role.ADMIN)
        checked = check_open_request(
            request.table_id,
            request.pairing_id,
            request.room_id,
            request.rules,
            list(request.players),
            request.negotiated,
            private_table=request.private_table,
        )
        if self._open is not None:
            await self._open(checked)
        else:
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

    async def Watch(  # type: ignore[override]
        self,
        request: table_pb2.WatchRequest,
        context: grpc.aio.ServicerContext[table_pb2.WatchRequest, table_pb2.WatchResponse],
    ) -> None:
        # Any signed-in player (a seat of the table too: the delayed public copy tells it nothing it
        # was not shown), or an operator; written with context.write, as Play.
        require_role(Role.PLAYER, Role.ADMIN)
        if not request.table_id:
            raise InvalidArgument("table_id is required: ListLiveTables names the tables to watch")
        live = self._host.live_tables.get(request.table_id)
        spectators = self._host.spectators
        feed = spectators.feed(request.table_id, live.state if live is not None else None)
        await spectators.watch(feed, request.last_seen_sequence, context.write)

    async def GetTableStatus(
        self,
        request: table_pb2.GetTableStatusRequest,
        context: grpc.aio.ServicerContext[table_pb2.GetTableStatusRequest, table_pb2.GetTableStatusResponse],
    ) -> table_pb2.GetTableStatusResponse:
        table = self._host.find(request.table_id)
        check_status_reader(table)
        return await table.public_status()
