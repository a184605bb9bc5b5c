"""gRPC face of the scoring service: ``duelmahjong.v1.ScoringService``.

The contract is wired; each RPC answers UNIMPLEMENTED, naming where its logic comes from, until
issue 6 lands it.
"""

from __future__ import annotations

import grpc.aio

from duelmahjong.platform.errors import NotYetImplemented
from duelmahjong.v1 import scoring_pb2 as pb
from duelmahjong.v1 import scoring_pb2_grpc
from services.scoring.core import ScoringCore

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ScoringService"].full_name
ARRIVES_WITH = "issue 6 (scoring)"
Context = grpc.aio.ServicerContext


class ScoringApi(scoring_pb2_grpc.ScoringServiceServicer):
    def __init__(self, core: ScoringCore) -> None:
        self._core = core

    async def EvaluateHand(
        self, request: pb.EvaluateHandRequest, context: Context
    ) -> pb.EvaluateHandResponse:
        raise NotYetImplemented("ScoringService.EvaluateHand", ARRIVES_WITH)

    async def GetCatalogue(
        self, request: pb.GetCatalogueRequest, context: Context
    ) -> pb.GetCatalogueResponse:
        raise NotYetImplemented("ScoringService.GetCatalogue", ARRIVES_WITH)

    async def ScoreHand(self, request: pb.ScoreHandRequest, context: Context) -> pb.ScoreHandResponse:
        raise NotYetImplemented("ScoringService.ScoreHand", ARRIVES_WITH)
