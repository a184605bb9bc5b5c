"""gRPC face of the matchmaking service: ``duelmahjong.v1.MatchmakingService``.

The contract is wired; each RPC answers UNIMPLEMENTED, naming where its logic comes from, until
issue 6 lands it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc.aio

from duelmahjong.platform.errors import NotYetImplemented
from duelmahjong.v1 import matchmaking_pb2 as pb
from duelmahjong.v1 import matchmaking_pb2_grpc
from services.matchmaking.core import TableServerDirectory

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MatchmakingService"].full_name
ARRIVES_WITH = "issue 6 (matchmaking)"
Context = grpc.aio.ServicerContext


class MatchmakingApi(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, directory: TableServerDirectory) -> None:
        self._directory = directory

    async def ListRooms(self, request: pb.ListRoomsRequest, context: Context) -> pb.ListRoomsResponse:
        raise NotYetImplemented("MatchmakingService.ListRooms", ARRIVES_WITH)

    async def Enqueue(
        self, request: pb.EnqueueRequest, context: Context
    ) -> AsyncIterator[pb.EnqueueResponse]:
        raise NotYetImplemented("MatchmakingService.Enqueue", ARRIVES_WITH)
        yield  # an async generator: Enqueue streams queue updates

    async def CancelQueue(self, request: pb.CancelQueueRequest, context: Context) -> pb.CancelQueueResponse:
        raise NotYetImplemented("MatchmakingService.CancelQueue", ARRIVES_WITH)

    async def ProposeMultiplier(
        self, request: pb.ProposeMultiplierRequest, context: Context
    ) -> pb.ProposeMultiplierResponse:
        raise NotYetImplemented("MatchmakingService.ProposeMultiplier", ARRIVES_WITH)

    async def RespondMultiplier(
        self, request: pb.RespondMultiplierRequest, context: Context
    ) -> pb.RespondMultiplierResponse:
        raise NotYetImplemented("MatchmakingService.RespondMultiplier", ARRIVES_WITH)

    async def ContinuePairing(
        self, request: pb.ContinuePairingRequest, context: Context
    ) -> pb.ContinuePairingResponse:
        raise NotYetImplemented("MatchmakingService.ContinuePairing", ARRIVES_WITH)

    async def LeavePairing(
        self, request: pb.LeavePairingRequest, context: Context
    ) -> pb.LeavePairingResponse:
        raise NotYetImplemented("MatchmakingService.LeavePairing", ARRIVES_WITH)
