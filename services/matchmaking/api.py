"""gRPC face of the matchmaking service: ``duelmahjong.v1.MatchmakingService``.

Handlers convert messages and call :class:`~services.matchmaking.core.Matchmaker`; the player is the
session token's (the platform interceptor verified it). ``Enqueue`` streams the entry's updates until
the table is ready, the ticket expires or the player cancels; a stream that goes away cancels an
unpaired ticket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc.aio
from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.platform.auth import Role, current_principal, require_role
from duelmahjong.v1 import matchmaking_pb2 as pb
from duelmahjong.v1 import matchmaking_pb2_grpc, rules_pb2
from services.matchmaking import updates as U
from services.matchmaking.core import Matchmaker
from services.matchmaking.remote import PROFILES, room_rules
from services.matchmaking.rooms import Room

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MatchmakingService"].full_name
Context = grpc.aio.ServicerContext

_SEATS = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)
_NEGOTIATION_STATES = {
    U.AWAITING_PROPOSAL: pb.NEGOTIATION_STATE_AWAITING_PROPOSAL,
    U.PROPOSED: pb.NEGOTIATION_STATE_PROPOSED,
    U.ACCEPTED: pb.NEGOTIATION_STATE_ACCEPTED,
    U.DECLINED: pb.NEGOTIATION_STATE_DECLINED,
}


def _timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


_UINT32_MAX = 2**32 - 1


def _millis(seconds: float) -> int:
    return min(_UINT32_MAX, max(0, round(seconds * 1000)))


def room_times(room: Room) -> pb.RoomTimes:
    """A room's clocks as ``ListRooms`` shows them, from its configuration (``rooms.py``)."""
    return pb.RoomTimes(
        bot_fill_millis=_millis(room.bot_fill_seconds),
        ticket_millis=_millis(room.ticket_seconds),
        negotiation_millis=_millis(room.negotiation_seconds) if room.negotiates else 0,
        decision_millis=room.decision_millis,
        time_bank_millis=room.time_bank_millis,
        reconnect_grace_millis=room.reconnect_grace_millis,
    )


def negotiation_message(update: U.Negotiation) -> pb.Negotiation:
    return pb.Negotiation(
        pairing_id=update.pairing_id,
        state=_NEGOTIATION_STATES[update.state],
        multiplier=update.multiplier,
        your_turn=update.your_turn,
        deadline=_timestamp(update.deadline),
    )


def queue_update(update: U.Update, now: float) -> pb.QueueUpdate:
    """One domain update as the contract's ``QueueUpdate``."""
    match update:
        case U.Queued(ticket_id, expires_in):
            return pb.QueueUpdate(
                queued=pb.Queued(queue_ticket_id=ticket_id, expires_at=_timestamp(now + expires_in))
            )
        case U.Position(position, waiting):
            return pb.QueueUpdate(position=pb.QueuePosition(position=position, waiting=waiting))
        case U.Matched(pairing_id, seat, opponent, is_bot, opponent_name):
            matched = pb.Matched(
                pairing_id=pairing_id,
                seat=_SEATS[seat],
                opponent_player_id=opponent,
                opponent_display_name=opponent_name or opponent,
                opponent_is_bot=is_bot,
            )
            return pb.QueueUpdate(matched=matched)
        case U.Negotiation():
            return pb.QueueUpdate(negotiation=negotiation_message(update))
        case U.TableReady(pairing_id, table_id, address, ticket, seat):
            ready = pb.TableReady(
                pairing_id=pairing_id,
                table_id=table_id,
                address=address,
                table_ticket=ticket,
                seat=_SEATS[seat],
            )
            return pb.QueueUpdate(table_ready=ready)
        case U.Expired(reason):
            return pb.QueueUpdate(expired=pb.Expired(reason=reason))
    raise TypeError(f"not a queue update: {update!r}")


class MatchmakingApi(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, matchmaker: Matchmaker) -> None:
        self._mm = matchmaker

    async def ListRooms(self, request: pb.ListRoomsRequest, context: Context) -> pb.ListRoomsResponse:
        rooms = [
            pb.Room(
                room_id=room.room_id,
                name=room.name,
                rules=room_rules(room),
                waiting=self._mm.waiting(room.room_id),
                times=room_times(room),
            )
            for room in self._mm.rooms.values()
            if request.profile in (rules_pb2.PROFILE_UNSPECIFIED, PROFILES[room.profile])
        ]
        return pb.ListRoomsResponse(rooms=rooms)

    async def Enqueue(
        self, request: pb.EnqueueRequest, context: Context
    ) -> AsyncIterator[pb.EnqueueResponse]:
        player = require_role(Role.PLAYER).player_id  # a service or admin token has no prestige to queue with
        entry = await self._mm.enqueue(player, request.room_id, request.carry)
        try:
            while True:
                update = await entry.updates.get()
                if update is U.END:
                    return
                yield pb.EnqueueResponse(update=queue_update(update, self._mm.now()))
        finally:
            self._mm.stream_closed(entry)

    async def CancelQueue(self, request: pb.CancelQueueRequest, context: Context) -> pb.CancelQueueResponse:
        self._mm.cancel(current_principal().player_id, request.queue_ticket_id)
        return pb.CancelQueueResponse()

    async def ProposeMultiplier(
        self, request: pb.ProposeMultiplierRequest, context: Context
    ) -> pb.ProposeMultiplierResponse:
        state = self._mm.propose(current_principal().player_id, request.pairing_id, request.multiplier)
        return pb.ProposeMultiplierResponse(negotiation=negotiation_message(state))

    async def RespondMultiplier(
        self, request: pb.RespondMultiplierRequest, context: Context
    ) -> pb.RespondMultiplierResponse:
        state = self._mm.respond(current_principal().player_id, request.pairing_id, request.accept)
        return pb.RespondMultiplierResponse(negotiation=negotiation_message(state))

    async def ContinuePairing(
        self, request: pb.ContinuePairingRequest, context: Context
    ) -> pb.ContinuePairingResponse:
        progressive, both = self._mm.continue_pairing(current_principal().player_id, request.pairing_id)
        return pb.ContinuePairingResponse(next_progressive=progressive, both_continue=both)

    async def LeavePairing(
        self, request: pb.LeavePairingRequest, context: Context
    ) -> pb.LeavePairingResponse:
        self._mm.leave_pairing(current_principal().player_id, request.pairing_id)
        return pb.LeavePairingResponse()
