"""gRPC face of the scoring service: ``duelmahjong.v1.ScoringService``.

Converts messages (``codec``), calls the core, converts back. Bad input raises ``InvalidArgument``
(a hand the rules refuse: ``InvalidHand``), which the platform interceptor maps to INVALID_ARGUMENT
with the reason as the message.
"""

from __future__ import annotations

from typing import Any

import grpc.aio

from duelmahjong.v1 import scoring_pb2, scoring_pb2_grpc
from services.scoring import codec
from services.scoring.core import ScoringCore

SERVICE_NAME = scoring_pb2.DESCRIPTOR.services_by_name["ScoringService"].full_name
Context = grpc.aio.ServicerContext[Any, Any]


class ScoringApi(scoring_pb2_grpc.ScoringServiceServicer):
    def __init__(self, core: ScoringCore) -> None:
        self._core = core

    async def EvaluateHand(
        self, request: scoring_pb2.EvaluateHandRequest, context: Context
    ) -> scoring_pb2.EvaluateHandResponse:
        evaluation = self._core.evaluate_hand(codec.description_json(request.hand), request.minimum_fan)
        return scoring_pb2.EvaluateHandResponse(evaluation=codec.evaluation_message(evaluation))

    async def GetCatalogue(
        self, request: scoring_pb2.GetCatalogueRequest, context: Context
    ) -> scoring_pb2.GetCatalogueResponse:
        return codec.catalogue_response(self._core.catalogue(codec.profile_name(request.profile)))

    async def ScoreHand(
        self, request: scoring_pb2.ScoreHandRequest, context: Context
    ) -> scoring_pb2.ScoreHandResponse:
        """The settlement of a hand result as stated (no replay: nothing is applied or published)."""
        scored = self._core.score(codec.hand_claim(request.result))
        response = scoring_pb2.ScoreHandResponse(settlement=codec.settlement_message(scored.settlement))
        if scored.evaluation is not None:
            response.evaluation.CopyFrom(codec.evaluation_message(scored.evaluation))
        return response
