"""gRPC face of the archive: ``duelmahjong.v1.ArchiveService`` (ListMatches, GetMatch, GetReplay).

The platform interceptor has verified the caller's token. A hand of a private table is served to its
two players only: another caller's ListMatches leaves such pairings out, GetMatch answers NOT_FOUND
for them (their existence is theirs), GetReplay PERMISSION_DENIED. A replay is built on demand from
the log records the archive keeps (``duelmahjong.replay.build``): the table's opening and the slices
of its hands up to the one asked for (``archive_chain``); only hands that are over are ever
archived, so nothing hidden during play is served while it matters.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from duelmahjong.platform import ids
from duelmahjong.platform.auth import current_principal
from duelmahjong.platform.db import database_unavailable
from duelmahjong.platform.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)
from duelmahjong.replay.build import build_replay
from duelmahjong.replay.hand_log import ReplayError
from duelmahjong.v1 import archive_pb2, archive_pb2_grpc, server_state_pb2
from services.scoring import archive_codec
from services.scoring.archive_chain import ChainIncomplete, hand_records
from services.scoring.archive_store import ArchiveStore, PageKey, PairingRow

SERVICE_NAME = archive_pb2.DESCRIPTOR.services_by_name["ArchiveService"].full_name
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def page_token(key: PageKey) -> str:
    """An opaque token for the page after ``key`` (what it holds is no part of the contract)."""
    raw = json.dumps({"started_at": key.started_at.isoformat(), "pairing_id": key.pairing_id})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def page_key(token: str) -> PageKey | None:
    if not token:
        return None
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        key = PageKey(datetime.fromisoformat(raw["started_at"]), str(raw["pairing_id"]))
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise InvalidArgument('page_token is not one ListMatches gave (pass "" for the newest)') from None
    if key.started_at.tzinfo is None:
        raise InvalidArgument('page_token is not one ListMatches gave (pass "" for the newest)')
    return key


def _page_size(requested: int) -> int:
    if requested == 0:
        return DEFAULT_PAGE_SIZE
    if not 1 <= requested <= MAX_PAGE_SIZE:
        raise InvalidArgument(
            f"page_size must be 1..{MAX_PAGE_SIZE} (0 = {DEFAULT_PAGE_SIZE}), got {requested}"
        )
    return requested


@contextlib.contextmanager
def _database() -> Iterator[None]:
    """The database out of reach (down, restarting) is UNAVAILABLE: the caller may retry."""
    try:
        yield
    except Exception as err:
        if database_unavailable(err):
            raise Unavailable("the archive's database is out of reach; retry in a moment") from None
        raise


def _plays(pairing: PairingRow, player_id: str) -> bool:
    return any(p.player_id == player_id for p in pairing.players)


class ArchiveApi(archive_pb2_grpc.ArchiveServiceServicer):
    def __init__(self, store: ArchiveStore) -> None:
        self._store = store

    async def ListMatches(
        self, request: archive_pb2.ListMatchesRequest, context: Any
    ) -> archive_pb2.ListMatchesResponse:
        with _database():
            return await self._list_matches(request)

    async def GetMatch(
        self, request: archive_pb2.GetMatchRequest, context: Any
    ) -> archive_pb2.GetMatchResponse:
        with _database():
            return await self._get_match(request)

    async def GetReplay(
        self, request: archive_pb2.GetReplayRequest, context: Any
    ) -> archive_pb2.GetReplayResponse:
        with _database():
            return await self._get_replay(request)

    async def _list_matches(self, request: archive_pb2.ListMatchesRequest) -> archive_pb2.ListMatchesResponse:
        caller = current_principal().player_id
        player_id = request.player_id or caller
        if not ids.is_entity_id(player_id):
            raise InvalidArgument(f"player_id must be {ids.ENTITY_ID_RULE}")
        size = _page_size(request.page_size)
        after = page_key(request.page_token)
        # One more than asked: whether an older page exists, without a second query.
        found = await self._store.pairings_of(
            player_id, with_private=player_id == caller, after=after, limit=size + 1
        )
        page = found[:size]
        pairings = await self._store.pairings(page)
        hands = await self._store.hands(page)
        response = archive_pb2.ListMatchesResponse(
            matches=[
                archive_codec.match_summary(pairings[p], hands.get(p, []), player_id)
                for p in page
                if p in pairings
            ]
        )
        if len(found) > size and page:
            last = pairings[page[-1]]
            response.next_page_token = page_token(PageKey(last.started_at, last.pairing_id))
        return response

    async def _pairing(self, pairing_id: str, caller: str) -> PairingRow:
        if not ids.is_entity_id(pairing_id):
            raise InvalidArgument(f"pairing_id must be {ids.ENTITY_ID_RULE}")
        pairing = (await self._store.pairings([pairing_id])).get(pairing_id)
        if pairing is None or (pairing.private_table and not _plays(pairing, caller)):
            raise NotFound(f"no archived pairing {pairing_id!r}")
        return pairing

    async def _get_match(self, request: archive_pb2.GetMatchRequest) -> archive_pb2.GetMatchResponse:
        caller = current_principal().player_id
        pairing = await self._pairing(request.pairing_id, caller)
        hands = (await self._store.hands([pairing.pairing_id])).get(pairing.pairing_id, [])
        return archive_pb2.GetMatchResponse(
            match=archive_codec.match_summary(pairing, hands, caller),
            hands=[archive_codec.archived_hand(hand, pairing) for hand in hands],
        )

    async def _get_replay(self, request: archive_pb2.GetReplayRequest) -> archive_pb2.GetReplayResponse:
        caller = current_principal().player_id
        if not ids.is_entity_id(request.hand_id):
            raise InvalidArgument(f"hand_id must be {ids.ENTITY_ID_RULE}")
        found = await self._store.hand(request.hand_id)
        if found is None:
            raise NotFound(f"hand {request.hand_id!r} is not archived (unknown, or not over yet)")
        hand, last_sequence = found
        pairing = (await self._store.pairings([hand.pairing_id]))[hand.pairing_id]
        if pairing.private_table and not _plays(pairing, caller):
            raise PermissionDenied(f"hand {request.hand_id!r} is of a private table: only its players see it")
        chain = await self._store.chain(hand.table_id, last_sequence)
        try:
            stored = hand_records(hand.table_id, chain.opening, chain.slices, hand.hand_number, last_sequence)
        except ChainIncomplete as err:
            raise FailedPrecondition(f"hand {hand.hand_id!r} cannot be replayed yet: {err}") from None
        records = [server_state_pb2.TableLogRecord.FromString(raw) for raw in stored]
        result = archive_codec.archived_hand(hand, pairing)
        # CPU-bound (the whole hand through the engine): in a thread, so other calls go on.
        try:
            replay = await asyncio.to_thread(build_replay, records, hand.hand_id, result=result)
        except ReplayError as err:
            raise FailedPrecondition(
                f"hand {hand.hand_id!r} cannot be replayed from its archived log: {err}"
            ) from None
        return archive_pb2.GetReplayResponse(replay=replay)
