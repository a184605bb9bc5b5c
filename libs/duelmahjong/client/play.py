"""One seat's ``TableService.Play`` stream, driven by a policy.

The client sends the ticket first, then answers each decision the server asks for (``LegalActions``,
alone or inside a ``SeatView``) once, with the sequence it follows as ``last_seen_sequence``. A
rejected action is not fatal: a stale one waits for the next decision, an illegal one is replaced by
the decision's default action. Between hands the :class:`MatchPlan` decides: continue until it has
played ``hands`` hands, then leave (T7 / T10); ``escape_in_hand`` leaves in the middle of that hand
instead (escape, H3). Every message received goes to ``watch`` (the demo prints them; tests check
them for hidden information).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
import grpc.aio

from duelmahjong.client.policy import Policy
from duelmahjong.v1 import matchmaking_pb2 as mm
from duelmahjong.v1 import play_pb2, table_pb2, table_pb2_grpc

Watcher = Callable[[table_pb2.PlayResponse], None]


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
    # The won event (SeatEvent.won) of each won hand, by hand number.
    wins: dict[int, play_pb2.HandWon] = field(default_factory=dict)
    messages: int = 0
    reconnects: int = 0


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

    def take(self, response: table_pb2.PlayResponse) -> table_pb2.PlayRequest | None:
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
        elif which == "hand_revealed":
            self.outcome.reveals.append(event.hand_revealed)
        elif which == "hand_settled":
            self.outcome.hands_settled += 1
            self.outcome.settlements.append(event.hand_settled)
        elif which == "table_ended":
            self.outcome.ended_reason = event.table_ended.reason
        return None

    def _decide(self, legal: play_pb2.LegalActions) -> table_pb2.PlayRequest | None:
        key = _decision_key(legal)
        if key in self.answered or self.view is None or not legal.actions:
            return None
        self.answered.add(key)
        kinds = {entry.kind for entry in legal.actions}
        if ACTION_KIND_CONTINUE in kinds or (play_pb2.ACTION_KIND_LEAVE in kinds and len(kinds) == 1):
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
        return self.request(self.policy.decide(self.view, legal), legal.sequence)

    def _between_hands(self, legal: play_pb2.LegalActions) -> table_pb2.PlayRequest:
        carry_on = continue_action()
        wanted = self.plan.escape_in_hand or self.plan.hands
        if self.outcome.hands_settled < wanted and carry_on is not None:
            return self.request(carry_on, legal.sequence)
        return self.request(play_pb2.Action(leave=play_pb2.LeaveAction()), legal.sequence)


RECONNECTS = 5


async def play_table(
    ready: mm.TableReady,
    metadata: tuple[tuple[str, str], ...],
    policy: Policy,
    plan: MatchPlan,
    *,
    watch: Watcher | None = None,
    stream_seconds: float = 600.0,
) -> PlayOutcome:
    """Connect to the table of ``ready`` and play until the server ends the stream. A stream lost to
    ``UNAVAILABLE`` (or the plan's deliberate drop) is reopened with the ticket and the last sequence
    seen: the table resends what the seat missed (T10) and play goes on."""
    seat = _Seat(ready, policy, plan)
    async with grpc.aio.insecure_channel(ready.address) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        for attempt in range(RECONNECTS + 1):
            try:
                await _stream(stub, seat, metadata, watch, stream_seconds)
                return seat.outcome
            except _Dropped:
                pass
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE or attempt == RECONNECTS:
                    raise
                await asyncio.sleep(0.2 * (attempt + 1))
            seat.outcome.reconnects += 1
            seat.answered.clear()  # a decision pending at the drop is asked again: answer it again
    return seat.outcome


async def _stream(
    stub: table_pb2_grpc.TableServiceAsyncStub,
    seat: _Seat,
    metadata: tuple[tuple[str, str], ...],
    watch: Watcher | None,
    stream_seconds: float,
) -> None:
    call = stub.Play(metadata=metadata, timeout=stream_seconds)
    try:
        await call.write(seat.request())  # the ticket and the last sequence seen (resume)
        while True:
            response = await call.read()
            if not isinstance(response, table_pb2.PlayResponse):  # grpc.aio.EOF: the server ended the stream
                return
            if watch is not None:
                watch(response)
            answer = seat.take(response)
            if answer is not None:
                try:
                    await call.write(answer)
                except (grpc.aio.AioRpcError, grpc.aio.UsageError):
                    return  # the server ended the stream meanwhile
    finally:
        call.cancel()
