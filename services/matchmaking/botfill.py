"""Bot fill, decided by the room's owner: a player still alone after the room's wait gets a house bot
(:class:`~services.matchmaking.bots.ClientBots` plays it). The request is recorded on the player's
ticket by compare-and-set before the bot starts, so one fill is asked per wait however many replicas
see it due; a request that never produced a bot (its replica died) is asked again after
:data:`BOT_START_SECONDS`.
"""

from __future__ import annotations

from duelmahjong.platform.logging import get_logger
from services.matchmaking.ports import BotFill, BotsBusy
from services.matchmaking.queue import Fleet, Queue
from services.matchmaking.records import WAITING, Ticket
from services.matchmaking.rooms import Room
from services.matchmaking.store import Conflict

BOT_RETRY_SECONDS = 1.0  # a bot fill that failed (not merely busy) is tried again after this
BOT_START_SECONDS = 30.0  # a fill asked this long ago with no bot in the queue is asked again
_log = get_logger("matchmaking")


class BotFills:
    def __init__(self, fleet: Fleet, queue: Queue, bots: BotFill | None = None) -> None:
        self._fleet = fleet
        self._records = fleet.records
        self._queue = queue
        self.bots = bots
        # Bots this replica started, by bot player id → the ticket each fills for: a bot enqueues at
        # the replica that started it (its own address), which marks its ticket as the fill.
        self._expected: dict[str, str] = {}

    def expect(self, bot_player_id: str, for_ticket: str) -> None:
        """Called by bot fill before the bot enqueues: that bot pairs only with ``for_ticket``."""
        self._expected[bot_player_id] = for_ticket

    def take_expected(self, player_id: str) -> str:
        return self._expected.pop(player_id, "")

    def engaged(self, player_id: str) -> bool:
        """The player is queued, paired, at a table not yet closed, or an expected bot: a house bot
        that is must not start another fill."""
        return player_id in self._expected or self._records.claim(f"players.{player_id}") is not None

    def waits_for_bot(self, ticket_id: str) -> bool:
        ticket = self._records.tickets.get(ticket_id)
        return ticket is not None and ticket.state == WAITING

    async def stopped(self, bot_player_id: str, for_ticket: str) -> None:
        """A fill's bot stopped. If it never got that player a table (its enqueue or hold was refused,
        its pairing ended), the player, still waiting, gets another fill."""
        if self._expected.get(bot_player_id) == for_ticket:
            del self._expected[bot_player_id]
        ticket = self._records.tickets.get(for_ticket)
        if ticket is not None and ticket.state == WAITING and ticket.bot_requested_at:
            await self._retry(ticket, BOT_RETRY_SECONDS)

    async def sweep(self, room: Room, now: float, paired: set[str]) -> None:
        waiting = self._records.waiting(room.room_id)
        filling = {t.fill_for for t in waiting if t.is_bot}
        for ticket in waiting:
            if ticket.ticket_id in paired:
                continue
            if ticket.is_bot:
                if not self.waits_for_bot(ticket.fill_for):
                    # Its player left or paired with someone else: free the house bot for another fill.
                    await self._queue.finish(ticket, "the player this bot filled for is no longer waiting")
                continue
            if self.bots is None or room.bot_fill_seconds <= 0 or ticket.private_code:
                continue
            if ticket.bot_requested_at:
                if now - ticket.bot_requested_at >= BOT_START_SECONDS and ticket.ticket_id not in filling:
                    await self._retry(ticket, 0.0)
                continue
            if now - ticket.enqueued_at >= room.bot_fill_seconds and now >= ticket.bot_not_before:
                try:
                    requested = await self._records.update(ticket, bot_requested_at=now)
                except Conflict:
                    continue
                self._fleet.spawn(self._start(room, requested))

    async def _start(self, room: Room, ticket: Ticket) -> None:
        if self.bots is None:
            return
        try:
            await self.bots.start(room, ticket.ticket_id)
        except BotsBusy as busy:  # expected: no log, the ticket keeps waiting for a bot
            await self._retry(ticket, busy.retry_after)
            return
        except Exception:
            _log.exception("bot fill failed", extra={"fields": {"room": room.room_id}})
            await self._retry(ticket, BOT_RETRY_SECONDS)
            return
        self._fleet.count("bot_fill", room.room_id)

    async def _retry(self, ticket: Ticket, after: float) -> None:
        current = self._records.tickets.get(ticket.ticket_id)
        if current is None or current.state != WAITING:
            return
        try:
            await self._records.update(
                current, bot_requested_at=0.0, bot_not_before=self._fleet.clock() + after
            )
        except Conflict:
            pass
