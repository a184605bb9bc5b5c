"""Table allocation: a pairing agreed on its terms gets a table on the least-loaded table server with
room (none: it waits, nothing is lost), and its table is closed when the table server says so — or,
when that server restarted or fell silent for ``server_lost_seconds`` and no other server adopted the
table within ``adoption_grace_seconds`` (``TableAdopted``), by matchmaking on its behalf. Where each
table is served — after its opening or its last adoption — is what ``LocateTable`` answers.
"""

from __future__ import annotations

import uuid

from duelmahjong.platform.errors import InvalidArgument, NotFound, PermissionDenied
from duelmahjong.platform.logging import get_logger
from services.matchmaking import updates
from services.matchmaking.directory import TableServer
from services.matchmaking.pairing import (
    ALLOCATING,
    ENDED,
    PLAYING,
    LostTables,
    Pairing,
    TableLocation,
    TableUnavailable,
)
from services.matchmaking.state import CLOSED_TABLES_KEPT, MatchmakerState

LOST_RETRY_SECONDS = 5.0  # closing a lost table failed (NATS away): tried again after this
TABLE_LOST_REASON = "the table server was lost"
_log = get_logger("matchmaking")


class TableAllocation(MatchmakerState):
    """Pairings to tables, and the tables closed again (by their server or, lost, by us)."""

    def _allocate(self, pairing: Pairing) -> None:
        if pairing.table_id:  # an OpenTable call is in flight
            return
        server = self.directory.roomiest()
        if server is None:
            return  # no server with room: the pairing waits for the next announcement (not lost)
        pairing.table_id = f"t-{uuid.uuid4().hex[:16]}"
        self.directory.took_one(server.server_id)
        self._spawn(self._open(pairing, server))

    async def _open(self, pairing: Pairing, server: TableServer) -> None:
        try:
            opened = await self._tables.open(server, pairing)
        except TableUnavailable as err:
            _log.warning(
                "table server refused", extra={"fields": {"server": server.server_id, "error": str(err)}}
            )
            self.directory.unusable(server.server_id)
            pairing.table_id = ""  # retried on the next tick, maybe elsewhere
            return
        if pairing.state != ALLOCATING:
            return
        pairing.state = PLAYING
        pairing.server_id = server.server_id
        # The server's own word on which process opened it beats the announcement allocation read: the
        # server may have restarted since (then the new process opened it, and that one is not lost).
        pairing.incarnation = opened.incarnation or server.incarnation
        pairing.address = opened.address
        pairing.opened_at = pairing.first_opened_at = self._clock()
        self._by_table[pairing.table_id] = pairing
        self.counts["table_opened", pairing.room.room_id] += 1
        for seat, entry in enumerate(pairing.seats):
            entry.send(
                updates.TableReady(
                    pairing.pairing_id, pairing.table_id, opened.address, opened.tickets[seat], seat
                )
            )
            entry.done = True
            entry.send(updates.END)
            self._entries.pop(entry.ticket_id, None)

    def table_closed(self, table_id: str) -> bool:
        """TableClosed: the pairing is over (the wallet releases its holds); the players may queue again.
        False if the table was not (or no longer) open: a second TableClosed of a table is a no-op."""
        pairing = self._by_table.pop(table_id, None)
        if pairing is None:
            return False
        self._closed_tables[table_id] = pairing.location(open_=False)
        while len(self._closed_tables) > CLOSED_TABLES_KEPT:
            self._closed_tables.popitem(last=False)
        if pairing.room.watchable and not pairing.closing_lost and not pairing.private_table:
            # A lost table is watched nowhere, a private one never.
            self._forget_watched_ends()
            self._watched_ends[table_id] = (pairing, self._clock() + pairing.room.spectate_delay)
        pairing.state = ENDED
        self._pairings.pop(pairing.pairing_id, None)
        for entry in pairing.seats:
            if self._player_ticket.get(entry.player_id) == entry.ticket_id:
                del self._player_ticket[entry.player_id]
        return True

    def table_adopted(
        self, table_id: str, *, server_id: str, address: str, incarnation: str, kind: str
    ) -> bool:
        """TableAdopted: process ``incarnation`` of ``server_id`` serves the open table from now on, at
        ``address``; its players are told so by LocateTable, and it is no longer lost. False if the
        table is not open here (closed already, or opened before this process started) or the event
        says nothing new (a redelivery)."""
        pairing = self._by_table.get(table_id)
        if pairing is None:
            return False
        if (pairing.server_id, pairing.incarnation, pairing.address) == (server_id, incarnation, address):
            return False
        fields = {"table_id": table_id, "from": pairing.server_id, "to": server_id, "kind": kind}
        if pairing.closing_lost:  # the close is being published already: too late for this adoption
            _log.warning("a table was adopted while it was being closed as lost", extra={"fields": fields})
        pairing.server_id, pairing.incarnation, pairing.address = server_id, incarnation, address
        pairing.opened_at = self._clock()  # the adopter's silence counts from now, as an opener's
        pairing.lost_since = 0.0
        self.adoptions[kind] += 1
        _log.info("table adopted", extra={"fields": fields})
        return True

    def locate(self, player_id: str, table_id: str) -> TableLocation:
        """Where table ``table_id`` is served now (or was, if closed), for one of its two players."""
        if not table_id:
            raise InvalidArgument("table_id is required: the id TableReady gave the table")
        pairing = self._by_table.get(table_id)
        location = pairing.location() if pairing is not None else self._closed_tables.get(table_id)
        if location is None:
            raise NotFound(
                f"no table {table_id!r} is known to matchmaking: it was never opened here, or closed "
                "long ago (queue again)"
            )
        if player_id not in location.players:
            raise PermissionDenied(
                f"you are not a player at table {table_id}: only its two players may locate it"
            )
        return location

    def live_tables(self, room_id: str) -> list[Pairing]:
        """The public tables of a watchable room a spectator may watch, newest first (ListLiveTables):
        the open ones, and those closed less than the room's spectate delay ago (their spectators'
        streams have not shown the end yet; a table that moved and closed is watched where it closed).
        None for a room that is not watchable; NotFound for an unknown room."""
        room = self.room(room_id)
        if not room.watchable:
            return []
        self._forget_watched_ends()
        ending = [pairing for pairing, _ in self._watched_ends.values()]
        open_ = [pairing for pairing in self._by_table.values() if pairing.state == PLAYING]
        tables = [p for p in open_ + ending if p.room.room_id == room_id and not p.private_table]
        return sorted(tables, key=lambda pairing: pairing.first_opened_at, reverse=True)

    def _forget_watched_ends(self) -> None:
        now = self._clock()
        for table_id, (_, until) in list(self._watched_ends.items()):
            if until <= now:
                del self._watched_ends[table_id]

    # A table server that dies (crash, OOM, node lost) publishes no TableClosed: without this its
    # pairings would stay PLAYING and their holds held until matchmaking restarts. Closing is the last
    # resort: another server may adopt the table (TableAdopted) within the grace, and play goes on.
    def _close_lost_tables(self, now: float) -> None:
        closer = self._lost_tables
        if closer is None:
            return
        for pairing in list(self._by_table.values()):
            if pairing.closing_lost or now < pairing.lost_retry_at:
                continue
            why = self.directory.lost(
                pairing.server_id,
                pairing.incarnation,
                opened_at=pairing.opened_at,
                silent_seconds=self._server_lost_seconds,
            )
            if not why:
                pairing.lost_since = 0.0
                continue
            if not pairing.lost_since:
                pairing.lost_since = now
                if self._adoption_grace_seconds > 0:
                    _log.info(
                        "table server lost: waiting for another server to adopt its table",
                        extra={"fields": {"table_id": pairing.table_id, "why": why}},
                    )
            if now - pairing.lost_since >= self._adoption_grace_seconds:
                pairing.closing_lost = True
                self._spawn(self._close_lost(closer, pairing, why))

    async def _close_lost(self, closer: LostTables, pairing: Pairing, why: str) -> None:
        """Publish TableClosed for the table (the wallet releases both holds: the hand in progress is
        void, nothing was scored), then end the pairing here. If the server's own TableClosed comes
        too, it is one more close of the same table: a duplicate the stream, wallet and we drop."""
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
            pairing.closing_lost = False
            pairing.lost_retry_at = self._clock() + LOST_RETRY_SECONDS
            return
        # Our own TableClosed may come back through the table-events consumer before this resumes
        # and end the pairing first: the table was lost and closed by us either way, count it once.
        self.table_closed(pairing.table_id)
        self.counts["table_lost", pairing.room.room_id] += 1
        _log.warning("table server lost: its table is closed, the holds released", extra={"fields": fields})
