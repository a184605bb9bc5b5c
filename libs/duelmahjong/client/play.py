"""One seat's ``TableService.Play`` stream, driven by a policy.

The client sends the ticket first, then answers each decision the server asks for (``LegalActions``,
alone or inside a ``SeatView``) once, with the sequence it follows as ``last_seen_sequence``. A
rejected action is not fatal: a stale one waits for the next decision, an illegal one is replaced by
the decision's default action. Between hands the :class:`MatchPlan` decides: continue until it has
played ``hands`` hands, then leave (T7 / T10); ``escape_in_hand`` leaves in the middle of that hand
instead (escape, H3); with ``ask_between_hands`` the policy decides that too (a person playing). A
policy may answer with an awaitable (a person deciding): the stream goes on reading while it is
pending, and a later decision replaces it. Every message received goes to ``watch`` (the demo prints
them; tests check them for hidden information), and ``on_break`` hears of each break being followed.

A stream that breaks before the table ended (the connection drops, the server goes away or ends the
stream early, or the table is not — or not yet — on that server) is followed (docs/protocol.md "When a
table moves"): the client asks ``locate`` (matchmaking's ``LocateTable``) where the table is now,
reconnects there with its ticket and the last sequence it saw, and plays on; it keeps trying, with
backoff, for ``follow_seconds`` after the last stream that brought anything. An action whose decision
is offered again after the reconnect was never applied: it is sent again as it was, under the same
``client_action_id``; one whose decision is gone was applied (or timed out) and is not sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
import grpc.aio

from duelmahjong.client.policy import Policy
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import play_pb2, table_pb2, table_pb2_grpc

Watcher = Callable[[table_pb2.PlayResponse], None]
# Where a table is served now, by its id (matchmaking's LocateTable).
Locator = Callable[[str], Awaitable[mm.LocateTableResponse]]
# Told why a stream broke each time the client goes to find and rejoin its table.
BreakWatcher = Callable[[str], None]
# What the seat sends back for one message: a request, one still being decided, or nothing.
Answer = table_pb2.PlayRequest | Awaitable[table_pb2.PlayRequest] | None


@dataclass(frozen=True)
class MatchPlan:
    """How long a client stays: ``hands`` finished hands, or escape during hand ``escape_in_hand``
    after ``escape_after_actions`` of its own actions in that hand; ``drop_after_actions`` makes it
    drop its stream once and reconnect."""

    hands: int = 1
    escape_in_hand: int = 0
    escape_after_actions: int = 3
    # Disconnect once after this many own actions and reconnect (exercises T10 resume); 0 = never.
    drop_after_actions: int = 0
    # Between hands the policy decides continue or leave (a person), instead of ``hands``.
    ask_between_hands: bool = False


@dataclass
class PlayOutcome:
    """What one seat saw of its table."""

    table_id: str
    hands_settled: int = 0
    escaped: bool = False
    ended_reason: str = ""
    rejections: list[table_pb2.ActionRejected] = field(default_factory=list)
    settlements: list[play_pb2.HandSettled] = field(default_factory=list)
    reveals: list[play_pb2.HandRevealed] = field(default_factory=list)
    # Each hand's id (HandStarted.hand_id), in the order the hands started: the archive's key.
    hand_ids: list[str] = field(default_factory=list)
    # The won event (SeatEvent.won) of each won hand, by hand number.
    wins: dict[int, play_pb2.HandWon] = field(default_factory=dict)
    messages: int = 0
    # New Play streams opened after the first: deliberate drops and breaks followed.
    reconnects: int = 0
    # Reconnects to another address than the previous stream's (the table moved).
    relocations: int = 0
    # Actions sent again, unchanged, after a reconnect offered their decision again.
    resent_actions: int = 0


def win_detail(event: play_pb2.SeatEvent) -> play_pb2.HandWon | None:
    """The won event (winning hand and its evaluation), if ``event`` is one."""
    return event.won if event.HasField("won") else None


def continue_action() -> play_pb2.Action | None:
    """The contract's 'play on' action between hands, if the contract has one (the table stream
    carries the continue-or-leave decision, T7)."""
    for name in play_pb2.Action.DESCRIPTOR.oneofs_by_name["kind"].fields:
        if name.name.startswith("continue"):
            message = play_pb2.Action()
            getattr(message, name.name).SetInParent()
            return message
    return None


def _kind(name: str) -> int:
    return play_pb2.ActionKind.Value(name) if name in play_pb2.ActionKind.keys() else -1


ACTION_KIND_CONTINUE = _kind("ACTION_KIND_CONTINUE")


def _decision_key(legal: play_pb2.LegalActions) -> tuple[int, bytes]:
    """One decision: the sequence it follows and what it offers (deadlines aside), answered once."""
    choices = play_pb2.LegalActions(actions=legal.actions)
    return legal.sequence, choices.SerializeToString(deterministic=True)


class _Dropped(Exception):
    """The plan's deliberate disconnect (``drop_after_actions``)."""


class _Seat:
    def __init__(self, ready: mm.TableReady, policy: Policy, plan: MatchPlan) -> None:
        self.ready, self.policy, self.plan = ready, policy, plan
        self.outcome = PlayOutcome(table_id=ready.table_id)
        self.view: play_pb2.SeatView | None = None
        self.last_seen = 0
        self.answered: set[tuple[int, bytes]] = set()
        self.client_action_id = 0
        self.hand_number = 0
        self.actions_this_hand = 0
        self.actions_total = 0
        self.pending_default: play_pb2.Action | None = None
        # The last answer sent and its decision, until the decision is seen gone: after a reconnect
        # that offers the same decision again, this request (same client action id) is sent again.
        self.unacked: tuple[tuple[int, bytes], table_pb2.PlayRequest] | None = None
        self.ended = False  # table_ended seen: the stream's end is the table's

    def reconnected(self) -> None:
        """A new stream: a decision pending at the break is asked again, and answered again."""
        self.outcome.reconnects += 1
        self.answered.clear()

    def request(
        self, action: play_pb2.Action | None = None, sequence: int | None = None
    ) -> table_pb2.PlayRequest:
        request = table_pb2.PlayRequest(
            table_ticket=self.ready.table_ticket,
            last_seen_sequence=self.last_seen if sequence is None else sequence,
        )
        if action is not None:
            self.client_action_id += 1
            request.action.CopyFrom(action)
            request.client_action_id = self.client_action_id
        return request

    def take(self, response: table_pb2.PlayResponse) -> Answer:
        """Fold one server message; the request to send back, if any."""
        self.outcome.messages += 1
        kind = response.WhichOneof("kind")
        if kind == "event":
            self._event(response.event)
            return None
        if kind == "view":
            self.view = response.view
            self.last_seen = max(self.last_seen, response.view.table.sequence)
            self.hand_number = max(self.hand_number, response.view.table.hand_number)
            if response.view.HasField("legal_actions"):
                return self._decide(response.view.legal_actions)
            return None
        if kind == "legal_actions":
            return self._decide(response.legal_actions)
        if kind == "rejected":
            rejected = response.rejected
            self.outcome.rejections.append(rejected)
            if self.unacked is not None and self.unacked[1].client_action_id == rejected.client_action_id:
                self.unacked = None  # answered: refused, never to be sent again
            if rejected.HasField("view"):
                self.view = rejected.view
            if rejected.code == table_pb2.REJECTION_CODE_ILLEGAL and self.pending_default is not None:
                default, self.pending_default = self.pending_default, None
                return self.request(default)
            if rejected.view.HasField("legal_actions"):
                self.answered.discard(_decision_key(rejected.view.legal_actions))
                return self._decide(rejected.view.legal_actions)
        return None

    def _event(self, event: play_pb2.SeatEvent) -> None:
        if event.sequence <= self.last_seen:
            return None  # seen already (sequences are unique on a seat's stream)
        self.last_seen = event.sequence
        detail = win_detail(event)
        if detail is not None:
            self.outcome.wins[self.hand_number] = detail
        which = event.WhichOneof("kind")
        if which == "hand_started":
            self.hand_number = event.hand_started.hand_number
            self.actions_this_hand = 0
            self.outcome.hand_ids.append(event.hand_started.hand_id)
        elif which == "hand_revealed":
            self.outcome.reveals.append(event.hand_revealed)
        elif which == "hand_settled":
            self.outcome.hands_settled += 1
            self.outcome.settlements.append(event.hand_settled)
        elif which == "table_ended":
            self.outcome.ended_reason = event.table_ended.reason
            self.ended = True
        return None

    def _decide(self, legal: play_pb2.LegalActions) -> Answer:
        key = _decision_key(legal)
        view = self.view
        if key in self.answered or view is None or not legal.actions:
            return None
        self.answered.add(key)
        if self.unacked is not None:
            if self.unacked[0] == key:  # offered again after a reconnect: it never reached the table
                self.outcome.resent_actions += 1
                return self.unacked[1]
            self.unacked = None  # another decision: the one answered is behind us
        request = self._answer(view, legal)
        if isinstance(request, table_pb2.PlayRequest):
            self.unacked = (key, request)
            return request
        return self._when_decided(key, request)

    async def _when_decided(
        self, key: tuple[int, bytes], decision: Awaitable[play_pb2.Action]
    ) -> table_pb2.PlayRequest:
        request = self.request(await decision, key[0])
        self.unacked = (key, request)
        return request

    def _answer(
        self, view: play_pb2.SeatView, legal: play_pb2.LegalActions
    ) -> table_pb2.PlayRequest | Awaitable[play_pb2.Action]:
        kinds = {entry.kind for entry in legal.actions}
        between = ACTION_KIND_CONTINUE in kinds or (play_pb2.ACTION_KIND_LEAVE in kinds and len(kinds) == 1)
        if between and not self.plan.ask_between_hands:
            return self._between_hands(legal)
        plan = self.plan
        if plan.escape_in_hand and self.hand_number == plan.escape_in_hand:
            if self.actions_this_hand >= plan.escape_after_actions and play_pb2.ACTION_KIND_LEAVE in kinds:
                self.outcome.escaped = True
                return self.request(play_pb2.Action(leave=play_pb2.LeaveAction()), legal.sequence)
        self.actions_this_hand += 1
        self.actions_total += 1
        if plan.drop_after_actions and self.actions_total == plan.drop_after_actions:
            raise _Dropped
        self.pending_default = legal.default_action if legal.HasField("default_action") else None
        decision = self.policy.decide(view, legal)
        if inspect.isawaitable(decision):
            return decision
        assert isinstance(decision, play_pb2.Action)
        return self.request(decision, legal.sequence)

    def _between_hands(self, legal: play_pb2.LegalActions) -> table_pb2.PlayRequest:
        carry_on = continue_action()
        wanted = self.plan.escape_in_hand or self.plan.hands
        if self.outcome.hands_settled < wanted and carry_on is not None:
            return self.request(carry_on, legal.sequence)
        return self.request(play_pb2.Action(leave=play_pb2.LeaveAction()), legal.sequence)


# Backoff between attempts to find and rejoin a table whose stream broke: doubling up to the cap.
FOLLOW_FIRST_WAIT, FOLLOW_MAX_WAIT = 0.2, 2.0
# Status codes of a stream that broke without the table ending: the server went away (UNAVAILABLE,
# CANCELLED), or the table is not on it, or not yet (NOT_FOUND: moved, or being adopted).
RESUMABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ABORTED,
    }
)
CLOSED_AWAY = "the table closed while this seat was away"


class TableLost(Exception):
    """The table's stream broke and the table could not be rejoined within ``follow_seconds``."""


async def play_table(
    ready: mm.TableReady,
    metadata: tuple[tuple[str, str], ...],
    policy: Policy,
    plan: MatchPlan,
    *,
    tls: ClientTls,
    watch: Watcher | None = None,
    stream_seconds: float = 600.0,
    locate: Locator | None = None,
    follow_seconds: float = 30.0,
    on_break: BreakWatcher | None = None,
) -> PlayOutcome:
    """Connect to the table of ``ready`` and play until the table ends. A stream that breaks first
    (or the plan's deliberate drop) is reopened with the ticket and the last sequence seen — where
    ``locate`` says the table is now, else at the same address: the table resends what the seat
    missed (T10) and play goes on. :class:`TableLost` once ``follow_seconds`` pass without a stream
    that brings anything; a refusal that no reconnect can mend (a bad ticket or token) is raised."""
    seat = _Seat(ready, policy, plan)
    channels: dict[str, grpc.aio.Channel] = {}
    address = ready.address
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + follow_seconds
    wait = FOLLOW_FIRST_WAIT
    try:
        while True:
            if address not in channels:
                channels[address] = tls.channel(address)
            stub = table_pb2_grpc.TableServiceStub(channels[address])
            seen = seat.outcome.messages
            broke: grpc.aio.AioRpcError | None = None
            try:
                await _stream(stub, seat, metadata, watch, stream_seconds)
                if seat.ended:
                    return seat.outcome
            except _Dropped:
                if on_break is not None:
                    on_break("the client dropped its stream")
                seat.reconnected()
                continue
            except grpc.aio.AioRpcError as err:
                if err.code() not in RESUMABLE:
                    raise
                broke = err
            if on_break is not None:
                on_break(f"{broke.code().name}: {broke.details()}" if broke else "the stream ended")
            if seat.outcome.messages > seen:  # that stream worked: a new break gets the whole time
                give_up_at, wait = loop.time() + follow_seconds, FOLLOW_FIRST_WAIT
            if loop.time() >= give_up_at:
                raise TableLost(
                    f"table {ready.table_id} could not be rejoined: {broke or 'its stream ended'}"
                )
            await asyncio.sleep(wait)
            wait = min(FOLLOW_MAX_WAIT, wait * 2)
            if locate is not None:
                try:
                    where = await locate(ready.table_id)
                except grpc.aio.AioRpcError:
                    where = None  # matchmaking unreachable: try the last address again
                if where is not None and not where.open:
                    seat.outcome.ended_reason = seat.outcome.ended_reason or CLOSED_AWAY
                    return seat.outcome
                if where is not None and where.address and where.address != address:
                    address = where.address
                    seat.outcome.relocations += 1
            seat.reconnected()
    finally:
        for channel in channels.values():
            await channel.close()


async def _stream(
    stub: table_pb2_grpc.TableServiceAsyncStub,
    seat: _Seat,
    metadata: tuple[tuple[str, str], ...],
    watch: Watcher | None,
    stream_seconds: float,
) -> None:
    call = stub.Play(metadata=metadata, timeout=stream_seconds)
    deciding: asyncio.Task[None] | None = None  # a person's pending answer, sent when made

    async def send_when_decided(answer: Awaitable[table_pb2.PlayRequest]) -> None:
        request = await answer
        with contextlib.suppress(grpc.aio.AioRpcError, grpc.aio.UsageError):
            await call.write(request)

    try:
        await call.write(seat.request())  # the ticket and the last sequence seen (resume)
        while True:
            response = await call.read()
            if not isinstance(response, table_pb2.PlayResponse):  # grpc.aio.EOF: the server ended the stream
                return
            if watch is not None:
                watch(response)
            answer = seat.take(response)
            if answer is None:
                continue
            if not isinstance(answer, table_pb2.PlayRequest):
                if deciding is not None:
                    deciding.cancel()  # a newer decision replaces the one still pending
                deciding = asyncio.ensure_future(send_when_decided(answer))
                continue
            try:
                await call.write(answer)
            except (grpc.aio.AioRpcError, grpc.aio.UsageError):
                return  # the server ended the stream meanwhile
    finally:
        if deciding is not None:
            deciding.cancel()
        call.cancel()
