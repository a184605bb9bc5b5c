"""A player's session with the backend: login at the wallet, rooms and queues at matchmaking.

::

    async with DuelClient(wallet="127.0.0.1:7001", matchmaking="127.0.0.1:7002") as client:
        await client.login("alice")
        ready = await client.find_table("duel-novice", carry=500, multiplier=2)
        outcome = await client.play(ready, BaselineBot(), MatchPlan(hands=3))

``play`` follows a table that moves to another table server (``locate_table``) by itself.
``find_table`` follows the ``Enqueue`` stream and negotiates T7 by itself (the first seated proposes
``multiplier``, the second accepts — or declines when told to); it returns the ``TableReady`` or
raises :class:`QueueEnded` with the server's reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import grpc
import grpc.aio

from duelmahjong.client.closing import Closing
from duelmahjong.client.play import BreakWatcher, MatchPlan, PlayOutcome, Watcher, play_table
from duelmahjong.client.policy import Policy
from duelmahjong.client.spectate import watch_table
from duelmahjong.platform.auth import bearer_metadata
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import matchmaking_pb2_grpc, rules_pb2, table_pb2, wallet_pb2, wallet_pb2_grpc

QueueWatcher = Callable[[mm.QueueUpdate], None]


class QueueEnded(Exception):
    """The queue entry ended without a table (expired, cancelled, declined)."""


class DuelClient(Closing):
    def __init__(self, *, wallet: str, matchmaking: str) -> None:
        self._wallet_channel = grpc.aio.insecure_channel(wallet)
        self._mm_channel = grpc.aio.insecure_channel(matchmaking)
        self.wallet = wallet_pb2_grpc.WalletServiceStub(self._wallet_channel)
        self.matchmaking = matchmaking_pb2_grpc.MatchmakingServiceStub(self._mm_channel)
        self.player_id = ""
        self.display_name = ""
        self.token = ""

    async def close(self) -> None:
        await self._wallet_channel.close()
        await self._mm_channel.close()

    @property
    def metadata(self) -> tuple[tuple[str, str]]:
        if not self.token:
            raise RuntimeError("log in first")
        return bearer_metadata(self.token)

    async def login(self, display_name: str) -> str:
        """Guest login: a new player with the wallet's starting grant."""
        reply = await self.wallet.GuestLogin(wallet_pb2.GuestLoginRequest(display_name=display_name))
        self.player_id, self.token, self.display_name = reply.player_id, reply.session.token, display_name
        return self.player_id

    def use_session(self, player_id: str, token: str, display_name: str = "") -> str:
        """Act as a player whose session token was obtained elsewhere (matchmaking's bot fill gets
        its house bots' sessions from the wallet's service-only ``BotLogin``)."""
        if not player_id or not token:
            raise ValueError("a session needs a player id and a token")
        self.player_id, self.token, self.display_name = player_id, token, display_name or player_id
        return self.player_id

    async def balance(self) -> wallet_pb2.GetBalanceResponse:
        return await self.wallet.GetBalance(
            wallet_pb2.GetBalanceRequest(player_id=self.player_id), metadata=self.metadata
        )

    async def ratings(self, player_id: str = "") -> wallet_pb2.GetRatingResponse:
        """A player's skill ratings, one per profile ("" = this client's player)."""
        return await self.wallet.GetRating(
            wallet_pb2.GetRatingRequest(player_id=player_id or self.player_id), metadata=self.metadata
        )

    async def rooms(
        self, profile: rules_pb2.Profile.ValueType = rules_pb2.PROFILE_UNSPECIFIED
    ) -> list[mm.Room]:
        reply = await self.matchmaking.ListRooms(mm.ListRoomsRequest(profile=profile), metadata=self.metadata)
        return list(reply.rooms)

    async def queue(self, room_id: str, carry: int) -> AsyncIterator[mm.QueueUpdate]:
        """The raw ``Enqueue`` stream of this player's queue entry."""
        call = self.matchmaking.Enqueue(
            mm.EnqueueRequest(room_id=room_id, carry=carry), metadata=self.metadata
        )
        try:
            async for reply in call:
                yield reply.update
        finally:
            call.cancel()

    async def find_table(
        self,
        room_id: str,
        carry: int,
        *,
        multiplier: int = 1,
        accept: bool = True,
        on_update: QueueWatcher | None = None,
    ) -> mm.TableReady:
        """Queue, negotiate (T7) and return where to play; :class:`QueueEnded` if no table came."""
        async for update in self.queue(room_id, carry):
            if on_update is not None:
                on_update(update)
            kind = update.WhichOneof("kind")
            if kind == "table_ready":
                return update.table_ready
            if kind == "expired":
                raise QueueEnded(update.expired.reason)
            if kind == "negotiation" and update.negotiation.your_turn:
                await self._negotiate(update.negotiation, multiplier, accept)
        raise QueueEnded("the queue stream ended without a table")

    async def _negotiate(self, state: mm.Negotiation, multiplier: int, accept: bool) -> None:
        if state.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL:
            request = mm.ProposeMultiplierRequest(pairing_id=state.pairing_id, multiplier=multiplier)
            await self.matchmaking.ProposeMultiplier(request, metadata=self.metadata)
        elif state.state == mm.NEGOTIATION_STATE_PROPOSED:
            answer = mm.RespondMultiplierRequest(pairing_id=state.pairing_id, accept=accept)
            await self.matchmaking.RespondMultiplier(answer, metadata=self.metadata)

    async def play(
        self,
        ready: mm.TableReady,
        policy: Policy,
        plan: MatchPlan | None = None,
        *,
        watch: Watcher | None = None,
        on_break: BreakWatcher | None = None,
        stream_seconds: float = 600.0,
    ) -> PlayOutcome:
        """Play at the table of ``ready`` until the table ends (see :func:`play_table`), following it
        to wherever matchmaking says it is served should its stream break."""
        return await play_table(
            ready,
            self.metadata,
            policy,
            plan or MatchPlan(),
            watch=watch,
            locate=self.locate_table,
            on_break=on_break,
            stream_seconds=stream_seconds,
        )

    async def locate_table(self, table_id: str) -> mm.LocateTableResponse:
        """Where matchmaking says table ``table_id`` is served now (``LocateTable``; this player's
        tables only), and whether it is still open."""
        return await self.matchmaking.LocateTable(
            mm.LocateTableRequest(table_id=table_id), metadata=self.metadata
        )

    async def live_tables(self, room_id: str) -> list[mm.LiveTableSummary]:
        """The live tables of ``room_id`` spectators may watch, newest first (``ListLiveTables``)."""
        reply = await self.matchmaking.ListLiveTables(
            mm.ListLiveTablesRequest(room_id=room_id), metadata=self.metadata
        )
        return list(reply.tables)

    def watch(
        self,
        table: mm.LiveTableSummary,
        *,
        last_seen: int = 0,
        on_move: Callable[[str], None] | None = None,
    ) -> AsyncIterator[table_pb2.WatchResponse]:
        """A spectator's stream of ``table`` (``Watch``), following it should it move (see
        :func:`duelmahjong.client.spectate.watch_table`)."""
        return watch_table(table, self.metadata, self.live_tables, last_seen=last_seen, on_move=on_move)
