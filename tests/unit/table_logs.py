"""Real table logs for the replay tests: a ``LiveTable`` played in process by the random policy of
tests/unit/test_table_rebuild.py, in a room of either profile (duel with items, triplet offers and 搓牌
picks), with every message each seat was sent kept."""

from __future__ import annotations

import asyncio
import dataclasses

from duelmahjong.replay.build import log_records
from duelmahjong.v1 import rules_pb2, server_state_pb2, table_pb2
from services.table.live import LiveTable
from services.table.live_state import LiveState
from services.table.ports import BusPorts
from services.table.seats import SeatSession
from tests.unit.test_table_rebuild import Match, _request


class RecordedMatch(Match):
    """A match whose seats' sessions are all kept (a seat that comes back gets a new one)."""

    def __init__(self, profile: str, seed: int, *, offers: float = 0.0) -> None:
        super().__init__(profile, seed)
        request = _request(profile)
        if offers:
            rules = rules_pb2.RoomRules()
            rules.CopyFrom(request.rules)
            rules.triplet_offer_probability = rules.pick_offer_probability = offers
            request = dataclasses.replace(request, rules=rules)
        self.table = LiveTable(request, self.host, BusPorts(self.log, self.quiet, self.quiet))
        self.every_session: list[SeatSession] = list(self.sessions)

    async def _step(self, state: LiveState, hands: int) -> None:
        await super()._step(state, hands)
        for session in self.sessions:
            if all(session is not kept for kept in self.every_session):
                self.every_session.append(session)

    def records(self) -> list[server_state_pb2.TableLogRecord]:
        """The table's log records in order, as the log's messages hold them."""
        return log_records(self.log.messages)

    def sent(self, seat: int) -> list[list[table_pb2.PlayResponse]]:
        """What each of ``seat``'s sessions was sent, session by session, in order."""
        return [
            [response for response in session._outbox if response is not None]
            for session in self.every_session
            if session.seat == seat
        ]


def played(profile: str, seed: int, hands: int = 3, *, offers: float = 0.0) -> RecordedMatch:
    match = RecordedMatch(profile, seed, offers=offers)
    asyncio.run(match.play(hands))
    return match
