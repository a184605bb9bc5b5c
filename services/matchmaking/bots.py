"""Bot fill: after a room's wait, a bot takes the empty seat through the same APIs a game client uses.

The bot is a :class:`~duelmahjong.client.session.DuelClient` of this process: it logs in as a guest at
the wallet, enqueues at this matchmaking service (told beforehand which ticket it fills for, so it
pairs with that player only), negotiates like any player and plays the table with the baseline bot
policy until the table ends.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from duelmahjong.client.play import MatchPlan
from duelmahjong.client.policy import BaselineBot
from duelmahjong.client.session import DuelClient
from duelmahjong.platform.logging import get_logger
from services.matchmaking.core import Matchmaker
from services.matchmaking.rooms import Room

_log = get_logger("matchmaking.bots")
_numbers = itertools.count(1)
PLAY_ON = 1_000_000  # a fill bot plays on while its opponent does


class ClientBots:
    def __init__(self, wallet_address: str, own_address: Callable[[], str], matchmaker: Matchmaker) -> None:
        self._wallet = wallet_address
        self._own_address = own_address
        self._matchmaker = matchmaker
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, room: Room, for_ticket: str) -> str:
        client = DuelClient(wallet=self._wallet, matchmaking=self._own_address())
        try:
            player = await client.login(f"bot-{next(_numbers)}")
            available = (await client.balance()).available
        except BaseException:
            await client.close()
            raise
        carry = max(room.carry_min, min(room.carry_max, available - room.fee))
        self._matchmaker.expect_bot(player, for_ticket)
        task = asyncio.create_task(self._play(client, room, carry), name=f"bot {player}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return player

    async def _play(self, client: DuelClient, room: Room, carry: int) -> None:
        try:
            ready = await client.find_table(room.room_id, carry)
            await client.play(ready, BaselineBot(), MatchPlan(hands=PLAY_ON))
        except Exception:
            _log.exception("a fill bot stopped", extra={"fields": {"player_id": client.player_id}})
        finally:
            await client.close()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
