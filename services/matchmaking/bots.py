"""Bot fill: after a room's wait, a house bot takes the empty seat through the same APIs a game client uses.

The house bots are a fixed pool of players (``bot-1`` … ``bot-N``, ``MATCHMAKING_BOT_POOL``) that the
fills take turns with, so a fill creates no player and mints no starting grant: the wallet's
service-only ``BotLogin`` gives the bot's session, creating the player on first use, and tops it up
(an audited ledger grant) only when it has less than the room needs. The bot is a
:class:`~duelmahjong.client.session.DuelClient` of this process with that session: it enqueues at this
matchmaking service (told beforehand which ticket it fills for, so it pairs with that player only),
negotiates like any player and plays the table with the room's ``bot_policy`` (the baseline bot, or
the strong bot of docs/evaluation.md) until the table ends; then its id goes back to the pool. With
every bot busy the fill waits for the next tick.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Protocol

from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import POLICIES
from duelmahjong.client.session import DuelClient, QueueEnded
from duelmahjong.platform.logging import get_logger
from duelmahjong.platform.tls import ClientTls
from services.matchmaking.core import Matchmaker
from services.matchmaking.ports import BotsBusy
from services.matchmaking.remote import BotLogin
from services.matchmaking.rooms import Room

_log = get_logger("matchmaking.bots")
PLAY_ON = 1_000_000  # a fill bot plays on while its opponent does


class BotLogins(Protocol):
    """The wallet's ``BotLogin`` (matchmaking's service token): see :class:`~.remote.WalletClient`."""

    async def bot_login(self, bot_id: str, minimum_available: int, request_id: str) -> BotLogin: ...


class BotNotReady(BotsBusy):
    """The wallet still holds the bot's stake from its last pairing (its release is on the way)."""

    retry_after = 0.5


class BotPool:
    """The house bot ids. A fill takes the one idle longest, so a bot just back from a table — whose
    hold the wallet may still be releasing — is the last to be taken again."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a bot pool needs at least one bot, got {size}")
        self._idle = collections.deque(f"bot-{n}" for n in range(1, size + 1))
        self.size = size

    def take(self, engaged: Callable[[str], bool]) -> str | None:
        """An idle bot id that ``engaged`` does not name (still queued or at a table), or None."""
        for _ in range(len(self._idle)):
            bot_id = self._idle.popleft()
            if not engaged(bot_id):
                return bot_id
            self._idle.append(bot_id)
        return None

    def give_back(self, bot_id: str) -> None:
        self._idle.append(bot_id)

    @property
    def idle(self) -> int:
        return len(self._idle)


class ClientBots:
    def __init__(
        self,
        wallet_address: str,
        wallet: BotLogins,
        own_address: Callable[[], str],
        matchmaker: Matchmaker,
        pool: BotPool,
        tls: ClientTls,
        own_tls: Callable[[], ClientTls],
    ) -> None:
        self._wallet_address = wallet_address
        self._tls = tls
        self._own_tls = own_tls
        self._wallet = wallet
        self._own_address = own_address
        self._matchmaker = matchmaker
        self.pool = pool
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, room: Room, for_ticket: str) -> str:
        bot_id = self.pool.take(self._matchmaker.engaged)
        if bot_id is None:
            raise BotsBusy(f"all {self.pool.size} house bots are playing")
        client = DuelClient(
            wallet=self._wallet_address,
            matchmaking=self._own_address(),
            tls=self._tls,
            matchmaking_tls=self._own_tls(),
        )
        try:
            needed = room.needed(room.carry_min)
            # The ticket names the fill: a retried BotLogin for it tops the bot up once at most.
            login = await self._wallet.bot_login(bot_id, needed, request_id=for_ticket)
            if login.available < needed:
                raise BotNotReady(f"{bot_id} has {login.available} available, the room needs {needed}")
            client.use_session(login.player_id, login.token)
        except BaseException:
            await client.close()
            self.pool.give_back(bot_id)
            raise
        carry = max(room.carry_min, min(room.carry_max, login.available - room.fee))
        self._matchmaker.expect_bot(login.player_id, for_ticket)
        task = asyncio.create_task(self._play(bot_id, client, room, carry, for_ticket), name=f"bot {bot_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return login.player_id

    async def _play(self, bot_id: str, client: DuelClient, room: Room, carry: int, for_ticket: str) -> None:
        fields = {"player_id": bot_id, "room": room.room_id}
        try:
            ready = await client.find_table(room.room_id, carry)
            await client.play(ready, POLICIES[room.bot_policy](), MatchPlan(hands=PLAY_ON))
        except QueueEnded as ended:  # the pairing ended before a table: not a fault of the bot
            _log.info("a fill bot left the queue", extra={"fields": {**fields, "reason": str(ended)}})
        except Exception:
            _log.exception("a fill bot stopped", extra={"fields": fields})
        finally:
            await client.close()
            await self._matchmaker.bot_stopped(bot_id, for_ticket)
            self.pool.give_back(bot_id)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
