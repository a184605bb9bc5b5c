"""What ``duel export`` reads, as an operator: who shares their hands (the wallet's
``ListDataSharing``) and those players' archived hands (scoring's ``ArchiveService``).

The archive lists hands by player, so the hands to export are found from the players who share:
each one's pairings (``ListMatches``), their hands (``GetMatch``), and a hand's whole log
(``GetReplay``). An admin token is no player, so the archive leaves private tables out of its lists
and refuses their replays: a private table's hands are served to its two players only, and are never
exported.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
import grpc.aio

from duelmahjong.client.closing import Closing
from duelmahjong.client.history import MatchHistory
from duelmahjong.platform.auth import bearer_metadata
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import archive_pb2, wallet_pb2, wallet_pb2_grpc

PAGE = 1000  # ListDataSharing's largest page
# What GetReplay answers for one hand it will not serve now (an earlier hand of its table not archived
# yet; a private table's hand): that hand is left out, the export goes on.
HAND_REFUSALS = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.PERMISSION_DENIED})


class HandUnavailable(Exception):
    """The archive does not serve this hand's replay now (the message is its answer)."""


@dataclass(frozen=True, slots=True)
class ArchivedHandOf:
    """One archived hand and the pairing it belongs to."""

    match: archive_pb2.MatchSummary
    hand: archive_pb2.ArchivedHand


class ExportSource(Closing):
    def __init__(self, *, wallet: str, scoring: str, token: str, tls: ClientTls) -> None:
        self._wallet_channel = tls.channel(wallet)
        self._wallet = wallet_pb2_grpc.WalletServiceStub(self._wallet_channel)
        self._metadata = bearer_metadata(token)
        self._history = MatchHistory(scoring=scoring, token=token, tls=tls)

    async def close(self) -> None:
        await self._wallet_channel.close()
        await self._history.close()

    async def sharing(self) -> set[str]:
        """Every player who shares their hands now (admin or service token)."""
        players: set[str] = set()
        token = ""
        while True:
            page = await self._wallet.ListDataSharing(
                wallet_pb2.ListDataSharingRequest(page_size=PAGE, page_token=token), metadata=self._metadata
            )
            players.update(entry.player_id for entry in page.players if entry.share_hands)
            token = page.next_page_token
            if not token:
                return players

    async def hands_of(self, player_id: str) -> list[ArchivedHandOf]:
        """Every archived hand of the player's public pairings."""
        found: list[ArchivedHandOf] = []
        for match in await self._history.all_matches(player_id):
            if match.private_table:  # never listed to a non-player; checked again all the same
                continue
            got = await self._history.match(match.pairing_id)
            found.extend(ArchivedHandOf(match, hand) for hand in got.hands)
        return found

    async def replay(self, hand_id: str) -> archive_pb2.Replay:
        try:
            return await self._history.replay(hand_id)
        except grpc.aio.AioRpcError as err:
            if err.code() not in HAND_REFUSALS:
                raise
            raise HandUnavailable(
                f"hand {hand_id}: the archive answered {err.code().name}: {err.details()}"
            ) from None
