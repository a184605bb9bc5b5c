"""A player's session with the backend: login at the wallet, rooms and queues at matchmaking.

::

    tls = ClientTls(ca_file=Path(".local/tls/ca.pem"))  # what `make run` made; ClientTls() = system CAs
    async with DuelClient(wallet="127.0.0.1:7001", matchmaking="127.0.0.1:7002", tls=tls) as client:
        await client.login("alice")
        ready = await client.find_table("duel-novice", carry=500, multiplier=2)
        outcome = await client.play(ready, BaselineBot(), MatchPlan(hands=3))

``play`` follows a table that moves to another table server (``locate_table``) by itself.
``find_table`` follows the ``Enqueue`` stream and negotiates T7 by itself (the first seated proposes
``multiplier``, the second accepts — or declines when told to); it returns the ``TableReady`` or
raises :class:`QueueEnded` with the server's reason. ``open_private_table`` and ``join_private_table``
do the same for a private table (docs/protocol.md "Private tables")::

    codes: list[str] = []
    ready = await host.open_private_table(
        "duel-novice", 500, multiplier=2,
        on_update=lambda u: codes.append(u.private_code.code) if u.HasField("private_code") else None,
    )
    # ... and the friend, told codes[0]:
    ready = await friend.join_private_table("abc 234", 500)

A queue stream that breaks before its ``table_ready`` or ``expired`` (the matchmaking replica serving it
went away, the connection dropped, the stream ended early) is followed again with ``FollowQueue`` and
the entry's ticket, on whichever replica the channel reaches (docs/protocol.md "When the queue stream
breaks"): the client waits 0.1 s, doubling up to 2 s, and gives up (:class:`QueueLost`) once
``queue_follow_seconds`` pass without a stream that brought anything. matchmaking's own answers
(``NOT_FOUND``, ``PERMISSION_DENIED``, ``FAILED_PRECONDITION`` …) are raised, not retried. A followed
stream starts with the entry's state as it is now, so updates may come again: ``follow`` answers each
T7 step once. ``DuelClient.queue_stats`` counts the breaks and how long each took to show the state
again. The matchmaking target may name several replicas (``ipv4:10.0.0.1:50051,10.0.0.2:50051``):
the channel balances over them and skips one that is down (:data:`CHANNEL_OPTIONS`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio

from duelmahjong.client.closing import Closing
from duelmahjong.client.play import BreakWatcher, MatchPlan, PlayOutcome, Watcher, play_table
from duelmahjong.client.policy import Policy
from duelmahjong.client.spectate import watch_table
from duelmahjong.platform.auth import bearer_metadata
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import matchmaking_pb2_grpc, rules_pb2, table_pb2, wallet_pb2, wallet_pb2_grpc

QueueWatcher = Callable[[mm.QueueUpdate], None]
# Told why a queue stream broke each time the client goes to follow its entry again.
QueueBreakWatcher = Callable[[str], None]
QueueCall = grpc.aio.UnaryStreamCall[Any, Any]

# Both channels (wallet, matchmaking): balance over every address of the target and leave one that is
# down out at once (round_robin sends a call only to a connected replica; pick_first would send the
# next call to the first address again), and reconnect quickly (0.1 s doubling to 1 s, not 1 s to
# 120 s), so a replica killed mid-stream costs the follow a fraction of a second.
CHANNEL_OPTIONS = (
    ("grpc.lb_policy_name", "round_robin"),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)
# Backoff between attempts to follow a queue entry whose stream broke: doubling up to the cap.
QUEUE_FIRST_WAIT, QUEUE_MAX_WAIT = 0.1, 2.0
QUEUE_FOLLOW_SECONDS = 30.0
CANCEL_SECONDS = 2.0  # a closed queue's CancelQueue: best effort, the stream grace does it otherwise
# Status codes of a queue stream that broke without the entry ending: the replica went away
# (UNAVAILABLE) or the connection dropped mid-stream (CANCELLED, INTERNAL, UNKNOWN). Any other status
# is matchmaking's answer (NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, INVALID_ARGUMENT,
# RESOURCE_EXHAUSTED …): raised, never retried.
QUEUE_BROKEN = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)
# A T7 answer whose reply was lost may have been applied: sent again, bounded like the queue's follow.
ANSWER_CALL_SECONDS = 5.0
ANSWER_RETRIED = QUEUE_BROKEN | {grpc.StatusCode.DEADLINE_EXCEEDED}
TERMINAL = frozenset({"table_ready", "expired"})
ENDED_EARLY = "the queue stream ended without a table"


class QueueEnded(Exception):
    """The queue entry ended without a table (expired, cancelled, declined)."""


class QueueLost(QueueEnded):
    """The queue stream broke and no ``FollowQueue`` brought the entry back within the client's
    ``queue_follow_seconds`` (no matchmaking replica answered)."""


@dataclass
class QueueStats:
    """What this client's queue streams went through (``DuelClient.queue_stats``): for tests and
    benchmarks of a matchmaking replica lost mid-queue."""

    # Queue streams that broke before a terminal update (each followed again).
    breaks: int = 0
    # FollowQueue calls made (each attempt, the failed ones too).
    follows: int = 0
    # Breaks after which a FollowQueue stream showed the entry's state again.
    resumes: int = 0
    # For each resume, seconds from the break to the first update of the stream that followed it.
    resume_seconds: list[float] = field(default_factory=list)


class QueueUpdates:
    """One queue entry's updates, followed across breaks (``DuelClient.queue``, ``open_private``,
    ``join_private``): an async iterator that ends after ``table_ready`` or ``expired``. The opening
    call is made at the first read; its refusals are raised there. Closing it (``aclose``) before its
    end cancels the entry (``CancelQueue``: an entry already paired is left to its pairing); an
    iterator dropped unclosed leaves the entry to matchmaking's stream grace."""

    def __init__(
        self, client: DuelClient, opening: Callable[[], QueueCall], on_break: QueueBreakWatcher | None
    ) -> None:
        self._client = client
        self._opening = opening
        self.on_break = on_break
        # Queued.queue_ticket_id, once the stream sent it: what FollowQueue follows.
        self.ticket_id = ""
        # How many times this entry's stream broke: updates after the first may repeat what was shown.
        self.breaks = 0
        self.ended = False  # table_ready or expired was shown
        self._updates = self._follow()

    def __aiter__(self) -> QueueUpdates:
        return self

    async def __anext__(self) -> mm.QueueUpdate:
        return await anext(self._updates)

    async def aclose(self) -> None:
        await self._updates.aclose()
        if self.ticket_id and not self.ended and not self._client.closed:
            request = mm.CancelQueueRequest(queue_ticket_id=self.ticket_id)
            with contextlib.suppress(grpc.aio.AioRpcError, TimeoutError):
                await self._client.matchmaking.CancelQueue(
                    request, metadata=self._client.metadata, timeout=CANCEL_SECONDS
                )

    async def _follow(self) -> AsyncGenerator[mm.QueueUpdate, None]:
        client, stats = self._client, self._client.queue_stats
        loop = asyncio.get_running_loop()
        call = self._opening()
        broke_at = give_up_at = 0.0  # the break being followed (0: none), and when to stop trying
        wait = QUEUE_FIRST_WAIT
        try:
            while True:
                broke: grpc.aio.AioRpcError | None = None
                try:
                    async for reply in call:
                        update: mm.QueueUpdate = reply.update
                        if broke_at:
                            stats.resumes += 1
                            stats.resume_seconds.append(loop.time() - broke_at)
                            broke_at, wait = 0.0, QUEUE_FIRST_WAIT
                        if update.HasField("queued"):
                            self.ticket_id = update.queued.queue_ticket_id
                        if update.WhichOneof("kind") in TERMINAL:
                            self.ended = True
                        yield update
                        if self.ended:
                            return
                except grpc.aio.AioRpcError as err:
                    # A follow that reached a replica without FollowQueue (a rollout half done) is
                    # tried again like a break: another replica may answer it.
                    following = err.code() == grpc.StatusCode.UNIMPLEMENTED and broke_at
                    if err.code() not in QUEUE_BROKEN and not following:
                        raise
                    broke = err
                call.cancel()
                if not self.ticket_id or client.closed:
                    raise broke or QueueEnded(ENDED_EARLY)  # nothing to follow
                now = loop.time()
                if not broke_at:  # a stream that brought updates broke: a new break
                    broke_at, give_up_at = now, now + client.queue_follow_seconds
                    self.breaks += 1
                    stats.breaks += 1
                why = f"{broke.code().name}: {broke.details()}" if broke else ENDED_EARLY
                if now >= give_up_at:
                    raise QueueLost(
                        f"queue ticket {self.ticket_id} could not be followed again within "
                        f"{client.queue_follow_seconds:g} s: {why}"
                    ) from broke
                if self.on_break is not None:
                    self.on_break(why)
                await asyncio.sleep(min(wait, give_up_at - now))
                wait = min(QUEUE_MAX_WAIT, wait * 2)
                stats.follows += 1
                request = mm.FollowQueueRequest(queue_ticket_id=self.ticket_id)
                call = client.matchmaking.FollowQueue(request, metadata=client.metadata)
        finally:
            call.cancel()


class DuelClient(Closing):
    """``wallet`` and ``matchmaking`` are gRPC targets: ``host:port``, or several replicas
    (``ipv4:127.0.0.1:5001,127.0.0.1:5002``, a Kubernetes Service's name). A queue stream that breaks
    is followed again for up to ``queue_follow_seconds`` (see the module's doc). ``tls`` says how
    every channel of the session (wallet, matchmaking, the tables) is secured and verified;
    ``matchmaking_tls``, when given, is matchmaking's alone (the house bots dial their own replica at
    an address its certificate may not name)."""

    def __init__(
        self,
        *,
        wallet: str,
        matchmaking: str,
        tls: ClientTls,
        matchmaking_tls: ClientTls | None = None,
        queue_follow_seconds: float = QUEUE_FOLLOW_SECONDS,
    ) -> None:
        self.tls = tls
        self._wallet_channel = tls.channel(wallet, options=CHANNEL_OPTIONS)
        self._mm_channel = (matchmaking_tls or tls).channel(matchmaking, options=CHANNEL_OPTIONS)
        self.wallet = wallet_pb2_grpc.WalletServiceStub(self._wallet_channel)
        self.matchmaking = matchmaking_pb2_grpc.MatchmakingServiceStub(self._mm_channel)
        self.player_id = ""
        self.display_name = ""
        self.token = ""
        self.queue_follow_seconds = queue_follow_seconds
        self.queue_stats = QueueStats()
        self.closed = False

    async def close(self) -> None:
        self.closed = True
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

    async def data_sharing(self) -> wallet_pb2.DataSharing:
        """Whether this player shares their hands for research (docs/wallet.md; default: not)."""
        reply = await self.wallet.GetDataSharing(wallet_pb2.GetDataSharingRequest(), metadata=self.metadata)
        return reply.sharing

    async def set_data_sharing(self, share_hands: bool) -> wallet_pb2.DataSharing:
        """Give (True) or withdraw (False) this player's consent to share their hands for research."""
        reply = await self.wallet.SetDataSharing(
            wallet_pb2.SetDataSharingRequest(share_hands=share_hands), metadata=self.metadata
        )
        return reply.sharing

    async def rooms(
        self, profile: rules_pb2.Profile.ValueType = rules_pb2.PROFILE_UNSPECIFIED
    ) -> list[mm.Room]:
        reply = await self.matchmaking.ListRooms(mm.ListRoomsRequest(profile=profile), metadata=self.metadata)
        return list(reply.rooms)

    def queue(self, room_id: str, carry: int, *, on_break: QueueBreakWatcher | None = None) -> QueueUpdates:
        """This player's queue entry in ``room_id`` (``Enqueue``): its updates, followed again should
        the stream break (``on_break`` is told why each time)."""
        request = mm.EnqueueRequest(room_id=room_id, carry=carry)
        return QueueUpdates(self, lambda: self.matchmaking.Enqueue(request, metadata=self.metadata), on_break)

    def open_private(
        self, room_id: str, carry: int, *, on_break: QueueBreakWatcher | None = None
    ) -> QueueUpdates:
        """A private table's entry (``OpenPrivateTable``): first the ``private_code`` to give a friend,
        then the queue entry's updates once the friend joined (or ``expired`` when nobody did)."""
        request = mm.OpenPrivateTableRequest(room_id=room_id, carry=carry)
        return QueueUpdates(
            self, lambda: self.matchmaking.OpenPrivateTable(request, metadata=self.metadata), on_break
        )

    def join_private(
        self, code: str, carry: int, *, on_break: QueueBreakWatcher | None = None
    ) -> QueueUpdates:
        """The entry of a friend's private table (``JoinPrivateTable``; ``code`` as the friend read it
        out: case and spaces do not matter). A wrong or expired code raises ``NOT_FOUND``
        (``grpc.aio.AioRpcError``) at the first read."""
        request = mm.JoinPrivateTableRequest(code=code, carry=carry)
        return QueueUpdates(
            self, lambda: self.matchmaking.JoinPrivateTable(request, metadata=self.metadata), on_break
        )

    async def find_table(
        self,
        room_id: str,
        carry: int,
        *,
        multiplier: int = 1,
        accept: bool = True,
        on_update: QueueWatcher | None = None,
        on_break: QueueBreakWatcher | None = None,
    ) -> mm.TableReady:
        """Queue, negotiate (T7) and return where to play; :class:`QueueEnded` if no table came."""
        return await self.follow(self.queue(room_id, carry, on_break=on_break), multiplier, accept, on_update)

    async def open_private_table(
        self,
        room_id: str,
        carry: int,
        *,
        multiplier: int = 1,
        accept: bool = True,
        on_update: QueueWatcher | None = None,
        on_break: QueueBreakWatcher | None = None,
    ) -> mm.TableReady:
        """Open a private table, wait for the friend, negotiate (T7) and return where to play.
        ``on_update`` is shown the ``private_code`` first (the code to give the friend);
        :class:`QueueEnded` if nobody joined before it expired."""
        updates = self.open_private(room_id, carry, on_break=on_break)
        return await self.follow(updates, multiplier, accept, on_update)

    async def join_private_table(
        self,
        code: str,
        carry: int,
        *,
        multiplier: int = 1,
        accept: bool = True,
        on_update: QueueWatcher | None = None,
        on_break: QueueBreakWatcher | None = None,
    ) -> mm.TableReady:
        """Join a friend's private table by its code, negotiate (T7) and return where to play."""
        updates = self.join_private(code, carry, on_break=on_break)
        return await self.follow(updates, multiplier, accept, on_update)

    async def follow(
        self,
        stream: AsyncIterator[mm.QueueUpdate],
        multiplier: int = 1,
        accept: bool = True,
        on_update: QueueWatcher | None = None,
    ) -> mm.TableReady:
        """Follow a queue entry's updates (``queue``, ``open_private``, ``join_private``), negotiating
        T7 when it is this player's turn, to its ``table_ready``; :class:`QueueEnded` otherwise.
        Updates are state, not commands: a T7 step shown again after a break (``on_update`` sees every
        update, repeats too) is not answered twice."""
        answered: set[tuple[str, int]] = set()
        try:
            async for update in stream:
                if on_update is not None:
                    on_update(update)
                kind = update.WhichOneof("kind")
                if kind == "table_ready":
                    return update.table_ready
                if kind == "expired":
                    raise QueueEnded(update.expired.reason)
                step = (update.negotiation.pairing_id, update.negotiation.state)
                if kind == "negotiation" and update.negotiation.your_turn and step not in answered:
                    after_break = getattr(stream, "breaks", 0) > 0
                    await self._negotiate(update.negotiation, multiplier, accept, after_break)
                    answered.add(step)
            raise QueueEnded(ENDED_EARLY)
        finally:
            if isinstance(stream, QueueUpdates):
                await stream.aclose()

    async def _negotiate(
        self, state: mm.Negotiation, multiplier: int, accept: bool, after_break: bool
    ) -> None:
        if state.state == mm.NEGOTIATION_STATE_AWAITING_PROPOSAL:
            await self.propose_multiplier(state.pairing_id, multiplier, after_break=after_break)
        elif state.state == mm.NEGOTIATION_STATE_PROPOSED:
            await self.respond_multiplier(state.pairing_id, accept, after_break=after_break)

    async def propose_multiplier(
        self, pairing_id: str, multiplier: int, *, after_break: bool = False
    ) -> None:
        """T7, ``SEAT_FIRST``: propose ``multiplier`` (see :meth:`_answer` for retries)."""
        request = mm.ProposeMultiplierRequest(pairing_id=pairing_id, multiplier=multiplier)
        await self._answer(self.matchmaking.ProposeMultiplier, request, after_break)

    async def respond_multiplier(self, pairing_id: str, accept: bool, *, after_break: bool = False) -> None:
        """T7, ``SEAT_SECOND``: accept or decline the proposal (see :meth:`_answer` for retries)."""
        request = mm.RespondMultiplierRequest(pairing_id=pairing_id, accept=accept)
        await self._answer(self.matchmaking.RespondMultiplier, request, after_break)

    async def _answer(self, send: Callable[..., Awaitable[Any]], request: Any, after_break: bool) -> None:
        """Send one T7 answer. A call that failed on its way (matchmaking unreachable, the connection
        dropped, no reply in time) may have been applied or not: it is sent again, with the queue's
        backoff, for up to ``queue_follow_seconds``. ``FAILED_PRECONDITION`` (the step is no longer
        this player's) after such a retry, or for a step shown again after the queue stream broke
        (``after_break``), means it was answered already: the queue stream tells what follows. Any
        other refusal is raised."""
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + self.queue_follow_seconds
        wait, retried = QUEUE_FIRST_WAIT, False
        while True:
            try:
                await send(request, metadata=self.metadata, timeout=ANSWER_CALL_SECONDS)
                return
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.FAILED_PRECONDITION and (retried or after_break):
                    return
                if err.code() not in ANSWER_RETRIED or loop.time() >= give_up_at or self.closed:
                    raise
            retried = True
            await asyncio.sleep(wait)
            wait = min(QUEUE_MAX_WAIT, wait * 2)

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
            tls=self.tls,
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
        return watch_table(
            table, self.metadata, self.live_tables, tls=self.tls, last_seen=last_seen, on_move=on_move
        )
