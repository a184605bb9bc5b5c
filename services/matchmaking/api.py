"""gRPC face of the matchmaking service: ``duelmahjong.v1.MatchmakingService``.

Handlers convert messages and call :class:`~services.matchmaking.core.Matchmaker`; the player is the
session token's (the platform interceptor verified it). ``Enqueue`` streams the entry's updates until
the table is ready, the ticket expires or the player cancels; ``FollowQueue`` streams them again, on
any replica, after a stream broke. An unpaired ticket no stream follows for the stream grace is
cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc.aio
from google.protobuf.timestamp_pb2 import Timestamp

from duelmahjong.contract import PROFILES
from duelmahjong.platform.auth import Role, current_principal, require_role
from duelmahjong.platform.errors import InvalidArgument
from duelmahjong.v1 import matchmaking_pb2, matchmaking_pb2_grpc, play_pb2, rules_pb2
from services.matchmaking import updates
from services.matchmaking.core import Matchmaker
from services.matchmaking.records import Pairing, Ticket
from services.matchmaking.remote import room_rules
from services.matchmaking.rooms import Room

SERVICE_NAME = matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name
Context = grpc.aio.ServicerContext[Any, Any]

_SEATS = (rules_pb2.SEAT_FIRST, rules_pb2.SEAT_SECOND)
_NEGOTIATION_STATES = {
    updates.AWAITING_PROPOSAL: matchmaking_pb2.NEGOTIATION_STATE_AWAITING_PROPOSAL,
    updates.PROPOSED: matchmaking_pb2.NEGOTIATION_STATE_PROPOSED,
    updates.ACCEPTED: matchmaking_pb2.NEGOTIATION_STATE_ACCEPTED,
    updates.DECLINED: matchmaking_pb2.NEGOTIATION_STATE_DECLINED,
}


def _timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


_UINT32_MAX = 2**32 - 1


def _millis(seconds: float) -> int:
    return min(_UINT32_MAX, max(0, round(seconds * 1000)))


def room_times(room: Room) -> matchmaking_pb2.RoomTimes:
    """A room's clocks as ``ListRooms`` shows them, from its configuration (``rooms.py``)."""
    return matchmaking_pb2.RoomTimes(
        bot_fill_millis=_millis(room.bot_fill_seconds),
        ticket_millis=_millis(room.ticket_seconds),
        negotiation_millis=_millis(room.negotiation_seconds) if room.negotiates else 0,
        decision_millis=room.decision_millis,
        time_bank_millis=room.time_bank_millis,
        reconnect_grace_millis=room.reconnect_grace_millis,
    )


def negotiation_message(update: updates.Negotiation) -> matchmaking_pb2.Negotiation:
    return matchmaking_pb2.Negotiation(
        pairing_id=update.pairing_id,
        state=_NEGOTIATION_STATES[update.state],
        multiplier=update.multiplier,
        your_turn=update.your_turn,
        deadline=_timestamp(update.deadline),
    )


def queue_update(update: updates.Update, now: float) -> matchmaking_pb2.QueueUpdate:
    """One domain update as the contract's ``QueueUpdate``."""
    match update:
        case updates.Queued(ticket_id, expires_in):
            return matchmaking_pb2.QueueUpdate(
                queued=matchmaking_pb2.Queued(
                    queue_ticket_id=ticket_id, expires_at=_timestamp(now + expires_in)
                )
            )
        case updates.Position(position, waiting):
            return matchmaking_pb2.QueueUpdate(
                position=matchmaking_pb2.QueuePosition(position=position, waiting=waiting)
            )
        case updates.Matched(pairing_id, seat, opponent, is_bot, opponent_name):
            matched = matchmaking_pb2.Matched(
                pairing_id=pairing_id,
                seat=_SEATS[seat],
                opponent_player_id=opponent,
                opponent_display_name=opponent_name or opponent,
                opponent_is_bot=is_bot,
                private_table=update.private_table,
            )
            return matchmaking_pb2.QueueUpdate(matched=matched)
        case updates.Negotiation():
            return matchmaking_pb2.QueueUpdate(negotiation=negotiation_message(update))
        case updates.TableReady(pairing_id, table_id, address, ticket, seat):
            ready = matchmaking_pb2.TableReady(
                pairing_id=pairing_id,
                table_id=table_id,
                address=address,
                table_ticket=ticket,
                seat=_SEATS[seat],
            )
            return matchmaking_pb2.QueueUpdate(table_ready=ready)
        case updates.Expired(reason):
            return matchmaking_pb2.QueueUpdate(expired=matchmaking_pb2.Expired(reason=reason))
        case updates.PrivateCode(code, room_id, expires_in):
            private = matchmaking_pb2.PrivateCode(
                code=code, room_id=room_id, expires_at=_timestamp(now + expires_in)
            )
            return matchmaking_pb2.QueueUpdate(private_code=private)
    raise TypeError(f"not a queue update: {update!r}")


def live_table(pairing: Pairing, room: Room) -> matchmaking_pb2.LiveTableSummary:
    """A table spectators may watch, where it is served now (after an adoption, the adopter)."""
    return matchmaking_pb2.LiveTableSummary(
        table_id=pairing.table_id,
        room_id=pairing.room_id,
        address=pairing.address,
        players=[
            play_pb2.TablePlayer(
                seat=_SEATS[seat],
                player_id=entry.player_id,
                display_name=entry.display_name or entry.player_id,
            )
            for seat, entry in enumerate(pairing.seats)
        ],
        opened_at=_timestamp(pairing.first_opened_at),
        spectate_delay_seconds=room.spectate_delay,
    )


class MatchmakingApi(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, matchmaker: Matchmaker) -> None:
        self._matchmaker = matchmaker

    async def ListRooms(
        self, request: matchmaking_pb2.ListRoomsRequest, context: Context
    ) -> matchmaking_pb2.ListRoomsResponse:
        rooms = [
            matchmaking_pb2.Room(
                room_id=room.room_id,
                name=room.name,
                rules=room_rules(room),
                waiting=self._matchmaker.waiting(room.room_id),
                times=room_times(room),
            )
            for room in self._matchmaker.rooms.values()
            if request.profile in (rules_pb2.PROFILE_UNSPECIFIED, PROFILES[room.profile])
        ]
        return matchmaking_pb2.ListRoomsResponse(rooms=rooms)

    async def Enqueue(
        self, request: matchmaking_pb2.EnqueueRequest, context: Context
    ) -> AsyncIterator[matchmaking_pb2.EnqueueResponse]:
        async for update in self._stream(
            lambda player: self._matchmaker.enqueue(player, request.room_id, request.carry)
        ):
            yield matchmaking_pb2.EnqueueResponse(update=update)

    async def OpenPrivateTable(
        self, request: matchmaking_pb2.OpenPrivateTableRequest, context: Context
    ) -> AsyncIterator[matchmaking_pb2.OpenPrivateTableResponse]:
        async for update in self._stream(
            lambda player: self._matchmaker.open_private(player, request.room_id, request.carry)
        ):
            yield matchmaking_pb2.OpenPrivateTableResponse(update=update)

    async def JoinPrivateTable(
        self, request: matchmaking_pb2.JoinPrivateTableRequest, context: Context
    ) -> AsyncIterator[matchmaking_pb2.JoinPrivateTableResponse]:
        async for update in self._stream(
            lambda player: self._matchmaker.join_private(player, request.code, request.carry)
        ):
            yield matchmaking_pb2.JoinPrivateTableResponse(update=update)

    async def FollowQueue(
        self, request: matchmaking_pb2.FollowQueueRequest, context: Context
    ) -> AsyncIterator[matchmaking_pb2.FollowQueueResponse]:
        if not request.queue_ticket_id:
            raise InvalidArgument("queue_ticket_id is required: the id of the Queued update")
        player_id = require_role(Role.PLAYER).player_id
        async for update in self._matchmaker.follow(player_id, request.queue_ticket_id):
            yield matchmaking_pb2.FollowQueueResponse(update=queue_update(update, self._matchmaker.now()))

    async def _stream(
        self, start: Callable[[str], Awaitable[Ticket]]
    ) -> AsyncIterator[matchmaking_pb2.QueueUpdate]:
        """The updates of the ticket ``start`` makes for the caller, until its end."""
        # A service or admin token has no prestige to queue or sit with.
        player_id = require_role(Role.PLAYER).player_id
        ticket = await start(player_id)
        async for update in self._matchmaker.follow(player_id, ticket.ticket_id):
            yield queue_update(update, self._matchmaker.now())

    async def CancelQueue(
        self, request: matchmaking_pb2.CancelQueueRequest, context: Context
    ) -> matchmaking_pb2.CancelQueueResponse:
        await self._matchmaker.cancel(current_principal().player_id, request.queue_ticket_id)
        return matchmaking_pb2.CancelQueueResponse()

    async def ProposeMultiplier(
        self, request: matchmaking_pb2.ProposeMultiplierRequest, context: Context
    ) -> matchmaking_pb2.ProposeMultiplierResponse:
        state = await self._matchmaker.propose(
            current_principal().player_id, request.pairing_id, request.multiplier
        )
        return matchmaking_pb2.ProposeMultiplierResponse(negotiation=negotiation_message(state))

    async def RespondMultiplier(
        self, request: matchmaking_pb2.RespondMultiplierRequest, context: Context
    ) -> matchmaking_pb2.RespondMultiplierResponse:
        state = await self._matchmaker.respond(
            current_principal().player_id, request.pairing_id, request.accept
        )
        return matchmaking_pb2.RespondMultiplierResponse(negotiation=negotiation_message(state))

    async def ContinuePairing(
        self, request: matchmaking_pb2.ContinuePairingRequest, context: Context
    ) -> matchmaking_pb2.ContinuePairingResponse:
        progressive, both = self._matchmaker.continue_pairing(
            current_principal().player_id, request.pairing_id
        )
        return matchmaking_pb2.ContinuePairingResponse(next_progressive=progressive, both_continue=both)

    async def LeavePairing(
        self, request: matchmaking_pb2.LeavePairingRequest, context: Context
    ) -> matchmaking_pb2.LeavePairingResponse:
        await self._matchmaker.leave_pairing(current_principal().player_id, request.pairing_id)
        return matchmaking_pb2.LeavePairingResponse()

    async def ListLiveTables(
        self, request: matchmaking_pb2.ListLiveTablesRequest, context: Context
    ) -> matchmaking_pb2.ListLiveTablesResponse:
        if not request.room_id:
            raise InvalidArgument("room_id is required: ListRooms names the rooms")
        return matchmaking_pb2.ListLiveTablesResponse(
            tables=[
                live_table(pairing, self._matchmaker.room(pairing.room_id))
                for pairing in self._matchmaker.live_tables(request.room_id)
            ]
        )

    async def LocateTable(
        self, request: matchmaking_pb2.LocateTableRequest, context: Context
    ) -> matchmaking_pb2.LocateTableResponse:
        location = await self._matchmaker.locate(current_principal().player_id, request.table_id)
        return matchmaking_pb2.LocateTableResponse(
            table_id=location.table_id,
            address=location.address,
            server_id=location.server_id,
            open=location.open,
        )
