"""Watching a table as a spectator (``TableService.Watch``), following it when it moves.

::

    tables = await client.live_tables("duel-novice")          # ListLiveTables, newest first
    async for response in client.watch(tables[0]):           # WatchResponse: state, then events
        ...

The stream lags play by the room's spectate delay and shows only what no seat hides
(docs/protocol.md "Spectating"). When the table's server stops serving it (``UNAVAILABLE``: it
moved; ``NOT_FOUND``: not, or no longer, there) or cuts a watcher that fell behind
(``RESOURCE_EXHAUSTED``), :func:`watch_table` asks ``ListLiveTables`` where the table is now and
watches on there with the last sequence it saw, so nothing is missed and nothing comes twice; a stream
that ends before ``table_ended`` (its server stopped) is followed the same way. It ends after
``table_ended``, or when the table is no longer listed (it closed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import grpc
import grpc.aio

from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import table_pb2, table_pb2_grpc

ListTables = Callable[[str], Awaitable[Sequence[mm.LiveTableSummary]]]
# A watch breaks, and the table may be served on elsewhere: ask where, and resume there.
_FOLLOWED = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED}
)


class TableGone(Exception):
    """The table could not be watched again in time after its stream broke."""


async def watch_table(
    table: mm.LiveTableSummary,
    metadata: Sequence[tuple[str, str]],
    list_tables: ListTables,
    *,
    tls: ClientTls,
    last_seen: int = 0,
    follow_seconds: float = 30.0,
    on_move: Callable[[str], None] | None = None,
) -> AsyncIterator[table_pb2.WatchResponse]:
    """Every ``WatchResponse`` of ``table``'s spectator stream, across moves (see the module doc);
    ``on_move`` is told each other address the watch goes on at."""
    address = table.address
    broke_at = 0.0
    while True:
        channel = tls.channel(address)
        try:
            stub = table_pb2_grpc.TableServiceStub(channel)
            request = table_pb2.WatchRequest(table_id=table.table_id, last_seen_sequence=last_seen)
            async for response in stub.Watch(request, metadata=metadata):
                broke_at = 0.0
                if response.HasField("event"):
                    last_seen = response.event.sequence
                yield response
                if response.HasField("event") and response.event.HasField("table_ended"):
                    return
            # Ended without table_ended: its server stopped (a server sends the end before it ends).
            code, details = grpc.StatusCode.UNAVAILABLE, "the stream ended before the table's end"
        except grpc.aio.AioRpcError as err:
            if err.code() not in _FOLLOWED:
                raise
            code, details = err.code(), err.details() or ""
        finally:
            await channel.close()
        broke_at = broke_at or time.monotonic()
        if time.monotonic() > broke_at + follow_seconds:
            raise TableGone(f"table {table.table_id} could not be watched again: {details}")
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            continue  # cut off for falling behind: resume where it is
        found = await _where(table, address, list_tables)
        if found is None:
            return  # no longer listed: the table closed
        if found != address and on_move is not None:
            on_move(found)
        address = found


async def _where(table: mm.LiveTableSummary, address: str, list_tables: ListTables) -> str | None:
    """Where matchmaking lists the table now: another address than ``address`` as soon as it says so,
    else ``address`` again after a moment (the break may have been the network's); None once the
    table is not listed."""
    for pause in (0.2, 0.4, 0.8):
        listed = {t.table_id: t for t in await list_tables(table.room_id)}
        now = listed.get(table.table_id)
        if now is None:
            return None
        if now.address != address:
            return now.address
        await asyncio.sleep(pause)
    return address
