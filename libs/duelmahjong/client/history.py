"""A player's match history and replays: scoring's ``ArchiveService`` (docs/protocol.md "Match history
and replays").

::

    async with MatchHistory(scoring="127.0.0.1:7004", token=client.token, tls=client.tls) as history:
        matches = await history.all_matches()            # the caller's pairings, newest first
        hands = (await history.match(matches[0].pairing_id)).hands
        replay = await history.replay(hands[-1].hand_id)
"""

from __future__ import annotations

from duelmahjong.client.closing import Closing
from duelmahjong.platform.auth import bearer_metadata
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import archive_pb2, archive_pb2_grpc


class MatchHistory(Closing):
    def __init__(self, *, scoring: str, token: str, tls: ClientTls) -> None:
        if not token:
            raise ValueError("the archive serves signed-in players: log in first")
        self._channel = tls.channel(scoring)
        self.archive = archive_pb2_grpc.ArchiveServiceStub(self._channel)
        self._metadata = bearer_metadata(token)

    async def close(self) -> None:
        await self._channel.close()

    async def list_matches(
        self, player_id: str = "", *, page_size: int = 0, page_token: str = ""
    ) -> archive_pb2.ListMatchesResponse:
        """One page of a player's pairings (``player_id`` "" = the caller), newest first."""
        request = archive_pb2.ListMatchesRequest(
            player_id=player_id, page_size=page_size, page_token=page_token
        )
        return await self.archive.ListMatches(request, metadata=self._metadata)

    async def all_matches(
        self, player_id: str = "", *, page_size: int = 100
    ) -> list[archive_pb2.MatchSummary]:
        """Every pairing of a player, newest first, page after page."""
        matches: list[archive_pb2.MatchSummary] = []
        token = ""
        while True:
            page = await self.list_matches(player_id, page_size=page_size, page_token=token)
            matches.extend(page.matches)
            token = page.next_page_token
            if not token:
                return matches

    async def match(self, pairing_id: str) -> archive_pb2.GetMatchResponse:
        """One pairing and its archived hands, oldest first."""
        return await self.archive.GetMatch(
            archive_pb2.GetMatchRequest(pairing_id=pairing_id), metadata=self._metadata
        )

    async def replay(self, hand_id: str) -> archive_pb2.Replay:
        """One finished hand, whole (NOT_FOUND until scoring archived it)."""
        reply = await self.archive.GetReplay(
            archive_pb2.GetReplayRequest(hand_id=hand_id), metadata=self._metadata
        )
        return reply.replay
