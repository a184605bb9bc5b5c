"""Table allocation: a pairing agreed on its terms gets a table on the least-loaded table server with
room (none: it waits, nothing is lost), and its table is closed when the table server says so — or,
when that server restarted or fell silent for ``server_lost_seconds`` and no other server adopted the
table within ``adoption_grace_seconds`` (``TableAdopted``), by matchmaking on its behalf. Where each
table is served — after its opening or its last adoption — is what ``LocateTable`` answers.

The room's owner allocates. It first records its attempt (a table id and a deadline) by
compare-and-set, then calls ``OpenTable``; a replica that dies in between leaves an attempt whose
deadline passes, and the next owner tries again with a new table id.
"""

from __future__ import annotations

import uuid

from duelmahjong.platform.errors import InvalidArgument, NotFound, PermissionDenied
from duelmahjong.platform.logging import get_logger
from services.matchmaking.directory import TableServer, TableServerDirectory
from services.matchmaking.ports import LostTables, TableLocation, Tables, TableUnavailable
from services.matchmaking.queue import Fleet
from services.matchmaking.records import (
    ALLOCATING,
    DONE,
    ENDED,
    PAIRED,
    PLAYING,
    TABLE_READY,
    Pairing,
    code_key,
    player_key,
)
from services.matchmaking.store import Conflict, unless_changed

OPEN_SECONDS = 15.0  # an OpenTable attempt not recorded as opened by then is tried again
LOST_RETRY_SECONDS = 5.0  # closing a lost table failed (NATS away): tried again after this
TABLE_LOST_REASON = "the table server was lost"
_log = get_logger("matchmaking")


class Allocation:
    def __init__(
        self,
        fleet: Fleet,
        tables: Tables,
        directory: TableServerDirectory,
        *,
        lost_tables: LostTables | None = None,
        server_lost_seconds: float = 60.0,
        adoption_grace_seconds: float = 0.0,
    ) -> None:
        self._fleet = fleet
        self._records = fleet.records
        self._tables = tables
        self.directory = directory
        self._lost_tables = lost_tables  # None: tables are never declared lost (nothing could close them)
        self._server_lost_seconds = server_lost_seconds
        self._adoption_grace_seconds = adoption_grace_seconds
        self._lost_retry_at: dict[str, float] = {}  # table id → not before (a close that failed)
        # TableAdopted events that moved a table, by how ("orphan", "handed_over"), read by the metrics.
        self.adoptions: dict[str, int] = {}

    # --- the room owner's step -----------------------------------------------------------------------
    async def sweep(self, room_id: str, now: float) -> None:
        for pairing in self._records.live_pairings(room_id):
            if pairing.state == ALLOCATING and (not pairing.table_id or now >= pairing.deadline):
                await self._allocate(pairing, now)

    async def check_lost(self, room_id: str, now: float) -> None:
        """The room's tables whose server was lost: checked once a second, not at every change of the
        room (a room may have thousands of tables in play)."""
        for pairing in self._records.playing_pairings(room_id):
            await self._check_lost(pairing, now)

    async def _allocate(self, pairing: Pairing, now: float) -> None:
        server = self.directory.roomiest()
        if server is None:
            return  # no server with room: the pairing waits for the next announcement (not lost)
        try:
            attempt = await self._records.update(
                pairing,
                table_id=f"t-{uuid.uuid4().hex[:16]}",
                server_id=server.server_id,
                deadline=now + OPEN_SECONDS,
            )
        except Conflict:
            return
        self.directory.took_one(server.server_id)
        self._fleet.spawn(self._open(attempt, server))

    async def _open(self, pairing: Pairing, server: TableServer) -> None:
        room = self._fleet.room(pairing.room_id)
        try:
            opened = await self._tables.open(server, room, pairing)
        except TableUnavailable as err:
            _log.warning(
                "table server refused", extra={"fields": {"server": server.server_id, "error": str(err)}}
            )
            self.directory.unusable(server.server_id)
            current = self._records.pairings.get(pairing.pairing_id)
            if current is not None and current.table_id == pairing.table_id and current.state == ALLOCATING:
                await unless_changed(self._records.update(current, table_id="", server_id="", deadline=0.0))
            return
        current = self._records.pairings.get(pairing.pairing_id)
        if current is None or current.state != ALLOCATING or current.table_id != pairing.table_id:
            return  # ended, or another attempt replaced this one: the table opened here is never joined
        now = self._fleet.clock()
        try:
            await self._records.update(
                current,
                state=PLAYING,
                deadline=0.0,
                # The server's own word on which process opened it beats the announcement allocation
                # read: the server may have restarted since (then the new process opened it).
                incarnation=opened.incarnation or server.incarnation,
                address=opened.address,
                table_tickets=(opened.tickets[0], opened.tickets[1]),
                opened_at=now,
                first_opened_at=now,
            )
        except Conflict:
            return
        self._fleet.count("table_opened", pairing.room_id)
        for seat in pairing.seats:
            ticket = self._records.tickets.get(seat.ticket_id)
            if ticket is not None and ticket.state == PAIRED:
                # The player's key stays theirs until the table closes.
                await unless_changed(
                    self._records.update(ticket, state=DONE, reason=TABLE_READY, ended_at=now)
                )
            if ticket is not None and ticket.held_for:  # a private table's code opened its one table
                await unless_changed(
                    self._records.drop_claim(code_key(ticket.private_code), pairing_id=ticket.held_for)
                )

    # --- what the table servers say ------------------------------------------------------------------
    async def table_closed(self, table_id: str) -> bool:
        """TableClosed: the pairing is over (the wallet releases its holds); the players may queue again.
        False if the table was not (or no longer) open: a second TableClosed of a table is a no-op."""
        while True:
            pairing = self._records.pairing_of_table(table_id)
            if pairing is None or pairing.state != PLAYING:
                return False
            try:
                await self._records.update(
                    pairing, state=ENDED, ended_at=self._fleet.clock(), reason="the table closed"
                )
                break
            except Conflict:  # an adoption changed it meanwhile: read it again
                await self._records.mirror.newer(pairing.key, pairing.revision)
        for seat in pairing.seats:
            try:
                await self._records.drop_claim(player_key(seat.player_id), ticket_id=seat.ticket_id)
            except Conflict:
                pass
        return True

    async def table_adopted(
        self, table_id: str, *, server_id: str, address: str, incarnation: str, kind: str
    ) -> bool:
        """TableAdopted: process ``incarnation`` of ``server_id`` serves the open table from now on, at
        ``address``; its players are told so by LocateTable, and it is no longer lost. False if the
        table is not open (closed already, or never opened by matchmaking) or the event says nothing
        new (a redelivery)."""
        while True:
            pairing = self._records.pairing_of_table(table_id)
            if pairing is None or pairing.state != PLAYING:
                return False
            if (pairing.server_id, pairing.incarnation, pairing.address) == (server_id, incarnation, address):
                return False
            fields = {"table_id": table_id, "from": pairing.server_id, "to": server_id, "kind": kind}
            if pairing.closing_lost:  # the close is being published already: too late for this adoption
                _log.warning(
                    "a table was adopted while it was being closed as lost", extra={"fields": fields}
                )
            try:
                await self._records.update(
                    pairing,
                    server_id=server_id,
                    incarnation=incarnation,
                    address=address,
                    opened_at=self._fleet.clock(),  # the adopter's silence counts from now
                    lost_since=0.0,
                )
            except Conflict:  # a lost table's owner changed it meanwhile: read it again
                await self._records.mirror.newer(pairing.key, pairing.revision)
                continue
            self.adoptions[kind] = self.adoptions.get(kind, 0) + 1
            _log.info("table adopted", extra={"fields": fields})
            return True

    # --- lost table servers ------------------------------------------------------------------------
    # A table server that dies (crash, OOM, node lost) publishes no TableClosed: without this its
    # pairings would stay PLAYING and their holds held. Closing is the last resort: another server
    # may adopt the table (TableAdopted) within the grace, and play goes on.
    async def _check_lost(self, pairing: Pairing, now: float) -> None:
        closer = self._lost_tables
        if closer is None or pairing.closing_lost or now < self._lost_retry_at.get(pairing.table_id, 0.0):
            return
        why = self.directory.lost(
            pairing.server_id,
            pairing.incarnation,
            opened_at=pairing.opened_at,
            silent_seconds=self._server_lost_seconds,
        )
        try:
            if not why:
                if pairing.lost_since:
                    await self._records.update(pairing, lost_since=0.0)
                return
            if not pairing.lost_since:
                if self._adoption_grace_seconds > 0:
                    _log.info(
                        "table server lost: waiting for another server to adopt its table",
                        extra={"fields": {"table_id": pairing.table_id, "why": why}},
                    )
                pairing = await self._records.update(pairing, lost_since=now)
            if now - pairing.lost_since < self._adoption_grace_seconds:
                return
            pairing = await self._records.update(pairing, closing_lost=True)
        except Conflict:
            return  # adopted or closed meanwhile: read again next step
        await self._close_lost(closer, pairing, why)

    async def _close_lost(self, closer: LostTables, pairing: Pairing, why: str) -> None:
        """Publish TableClosed for the table (the wallet releases both holds: the hand in progress is
        void, nothing was scored), then end the pairing. If the server's own TableClosed comes too, it
        is one more close of the same table: a duplicate the stream, the wallet and we drop."""
        fields = {
            "table_id": pairing.table_id,
            "server_id": pairing.server_id,
            "pairing_id": pairing.pairing_id,
            "why": why,
        }
        try:
            await closer.close(pairing, TABLE_LOST_REASON)
        except Exception:
            _log.exception("closing a lost table failed; retrying", extra={"fields": fields})
            self._lost_retry_at[pairing.table_id] = self._fleet.clock() + LOST_RETRY_SECONDS
            current = self._records.pairings.get(pairing.pairing_id)
            if current is not None and current.state == PLAYING:
                await unless_changed(self._records.update(current, closing_lost=False))
            return
        self._lost_retry_at.pop(pairing.table_id, None)
        # Our own TableClosed may come back through the table-events consumer first and end the
        # pairing: the table was lost and closed by us either way, count it once.
        await self.table_closed(pairing.table_id)
        self._fleet.count("table_lost", pairing.room_id)
        _log.warning("table server lost: its table is closed, the holds released", extra={"fields": fields})

    # --- reads -------------------------------------------------------------------------------------
    def locate(self, player_id: str, table_id: str) -> TableLocation:
        """Where table ``table_id`` is served now (or was, if closed), for one of its two players."""
        if not table_id:
            raise InvalidArgument("table_id is required: the id TableReady gave the table")
        pairing = self._records.pairing_of_table(table_id)
        if pairing is None or pairing.state not in (PLAYING, ENDED) or not pairing.address:
            raise NotFound(
                f"no table {table_id!r} is known to matchmaking: it was never opened, or closed "
                "long ago (queue again)"
            )
        if player_id not in pairing.players:
            raise PermissionDenied(
                f"you are not a player at table {table_id}: only its two players may locate it"
            )
        return TableLocation(
            table_id, pairing.address, pairing.server_id, pairing.players, pairing.state == PLAYING
        )

    def live_tables(self, room_id: str) -> list[Pairing]:
        """The public tables of a watchable room a spectator may watch, newest first (ListLiveTables):
        the open ones, and those closed less than the room's spectate delay ago (their spectators'
        streams have not shown the end yet). None for a room that is not watchable."""
        room = self._fleet.room(room_id)
        if not room.watchable:
            return []
        now = self._fleet.clock()
        candidates = self._records.playing_pairings(room_id) + self._records.settled_pairings(room_id)
        tables = [
            p
            for p in candidates
            if not p.private_table
            and p.address
            and (
                p.state == PLAYING
                or (p.state == ENDED and not p.closing_lost and now < p.ended_at + room.spectate_delay)
            )
        ]
        return sorted(tables, key=lambda p: p.first_opened_at, reverse=True)

    def awaiting_table(self) -> int:
        """Pairings agreed and waiting for a table server with room."""
        return sum(1 for p in self._records.pairings.values() if p.state == ALLOCATING)
