"""Matchmaking's calls to other services over gRPC (TLS, verified with ``TLS_CA_FILE``), with a
short-lived service token.

- :class:`WalletClient` — available balance, skill rating, ``PlaceHold`` / ``ReleaseHold``,
  inventories and the house bots' ``BotLogin`` (server to server).
- :class:`TableClient` — ``OpenTable`` on the chosen table server.

Domain errors of the callee come back as status codes; the ones that say "not now" (full, draining,
unreachable) become :class:`~services.matchmaking.ports.TableUnavailable` so the pairing waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

import grpc
import grpc.aio

from duelmahjong.contract import PROFILES
from duelmahjong.platform import auth
from duelmahjong.platform.errors import FailedPrecondition, NotFound, Unavailable
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import rules_pb2, table_pb2, table_pb2_grpc, wallet_pb2, wallet_pb2_grpc
from services.matchmaking.directory import TableServer
from services.matchmaking.ports import OpenedTable, SkillEstimate, TableUnavailable
from services.matchmaking.records import Pairing
from services.matchmaking.rooms import Room

SERVICE_PRINCIPAL = "service:matchmaking"
CALL_TIMEOUT = 10.0
_RETRY_ELSEWHERE = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.DEADLINE_EXCEEDED,
)

RequestT = TypeVar("RequestT")
ReplyT = TypeVar("ReplyT")


class ServiceToken:
    """A service token, signed once and used until a minute before it expires (signing one per call
    cost a few per cent of the process)."""

    LIFETIME = timedelta(minutes=5)
    RENEW_BEFORE = 60.0  # seconds before expiry

    def __init__(self, keys: auth.TokenKeys | str, clock: Callable[[], float] = time.monotonic) -> None:
        self._keys = keys
        self._clock = clock
        self._metadata: tuple[tuple[str, str]] | None = None
        self._renew_at = 0.0

    def metadata(self) -> tuple[tuple[str, str]]:
        now = self._clock()
        if self._metadata is None or now >= self._renew_at:
            token = auth.issue_token(
                self._keys, player_id=SERVICE_PRINCIPAL, role=auth.Role.SERVICE, ttl=self.LIFETIME
            )
            self._metadata = auth.bearer_metadata(token)
            self._renew_at = now + self.LIFETIME.total_seconds() - self.RENEW_BEFORE
        return self._metadata


def room_rules(room: Room) -> rules_pb2.RoomRules:
    """A room's rules as the contract carries them (ListRooms, OpenTable)."""
    return rules_pb2.RoomRules(
        profile=PROFILES[room.profile],
        fan_rate=room.fan_rate,
        fee=room.fee,
        minimum_balance=room.minimum_balance,
        carry_min=room.carry_min,
        carry_max=room.carry_max,
        minimum_fan=room.minimum_fan,
        revealed_bonus_tiles=room.revealed_bonus_tiles,
        triplet_offer_probability=room.triplet_offer_probability,
        pick_offer_probability=room.pick_offer_probability,
        items_enabled=room.items_enabled,
        guess_enabled=room.guess_enabled,
        exchange_fee=room.exchange_fee,
        task_multiplier=room.task_multiplier,
        decision_millis=room.decision_millis,
        time_bank_millis=room.time_bank_millis,
        reconnect_grace_millis=room.reconnect_grace_millis,
        watchable=room.watchable,
        spectate_delay_seconds=room.spectate_delay,
        claim_window_ms=room.claim_window_ms,
    )


@dataclass(frozen=True)
class BotLogin:
    player_id: str
    token: str
    available: int


class WalletClient:
    def __init__(self, address: str, token: ServiceToken, tls: ClientTls) -> None:
        self._channel = tls.channel(address)
        self._stub = wallet_pb2_grpc.WalletServiceStub(self._channel)
        self._token = token
        self._names: dict[str, str] = {}  # from the last GetBalance of each player (its login name)

    async def available(self, player_id: str) -> int:
        reply = await self._call(self._stub.GetBalance, wallet_pb2.GetBalanceRequest(player_id=player_id))
        self._names[player_id] = reply.display_name
        return int(reply.available)

    async def display_name(self, player_id: str) -> str:
        """The player's login name, as the balance read at enqueue gave it (read again if unknown)."""
        name = self._names.pop(player_id, None)
        if name is None:
            await self.available(player_id)
            name = self._names.pop(player_id, "")
        return name or player_id

    async def rating(self, player_id: str, profile: str) -> SkillEstimate:
        reply = await self._call(self._stub.GetRating, wallet_pb2.GetRatingRequest(player_id=player_id))
        for skill in reply.ratings:
            if skill.profile == PROFILES[profile]:
                return SkillEstimate(skill.rating, skill.deviation)
        raise Unavailable(f"the wallet gave no {profile} rating for player {player_id!r}")

    async def place_hold(self, player_id: str, pairing_id: str, amount: int, fee: int) -> None:
        request = wallet_pb2.PlaceHoldRequest(
            player_id=player_id, pairing_id=pairing_id, amount=amount, fee=fee
        )
        await self._call(self._stub.PlaceHold, request)

    async def release_hold(self, player_id: str, pairing_id: str) -> None:
        await self._call(
            self._stub.ReleaseHold, wallet_pb2.ReleaseHoldRequest(player_id=player_id, pairing_id=pairing_id)
        )

    async def inventory(self, player_id: str) -> dict[int, int]:
        reply = await self._call(self._stub.GetInventory, wallet_pb2.GetInventoryRequest(player_id=player_id))
        return {stack.item: stack.count for stack in reply.items if stack.count > 0}

    async def bot_login(self, bot_id: str, minimum_available: int, request_id: str) -> BotLogin:
        """A session for the house bot ``bot_id``, topped up to ``minimum_available`` if it holds nothing."""
        reply = await self._call(
            self._stub.BotLogin,
            wallet_pb2.BotLoginRequest(
                bot_id=bot_id, minimum_available=minimum_available, request_id=request_id
            ),
        )
        return BotLogin(reply.player_id, reply.session.token, int(reply.available))

    async def _call(
        self, method: grpc.aio.UnaryUnaryMultiCallable[RequestT, ReplyT], request: RequestT
    ) -> ReplyT:
        try:
            return await method(request, metadata=self._token.metadata(), timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                raise FailedPrecondition(err.details() or "the wallet refused") from None
            if err.code() == grpc.StatusCode.NOT_FOUND:  # the wallet answered: it has no such player
                raise NotFound(err.details() or "the wallet knows no such player") from None
            raise Unavailable(f"the wallet did not answer: {err.code().name} {err.details()}") from None

    async def close(self) -> None:
        await self._channel.close()


_NO_WALLET = "matchmaking has no WALLET_ADDRESS: it cannot check balances or hold carries"


class WalletMissing:
    """No ``WALLET_ADDRESS``: the service runs (health, ListRooms) but cannot queue anyone."""

    async def available(self, player_id: str) -> int:
        raise Unavailable(_NO_WALLET)

    async def display_name(self, player_id: str) -> str:
        await self.available(player_id)
        return player_id

    async def rating(self, player_id: str, profile: str) -> SkillEstimate:
        raise Unavailable(_NO_WALLET)

    async def place_hold(self, player_id: str, pairing_id: str, amount: int, fee: int) -> None:
        await self.available(player_id)

    async def release_hold(self, player_id: str, pairing_id: str) -> None:
        await self.available(player_id)

    async def inventory(self, player_id: str) -> dict[int, int]:
        await self.available(player_id)
        return {}

    async def close(self) -> None:
        return None


class TableClient:
    """``OpenTable`` on whichever server allocation picks; one channel per server address."""

    def __init__(self, token: ServiceToken, tls: ClientTls) -> None:
        self._token = token
        self._tls = tls
        self._channels: dict[str, grpc.aio.Channel] = {}

    async def open(self, server: TableServer, room: Room, pairing: Pairing) -> OpenedTable:
        channel = self._channels.get(server.address)
        if channel is None:
            channel = self._channels[server.address] = self._tls.channel(server.address)
        request = table_pb2.OpenTableRequest(
            table_id=pairing.table_id,
            pairing_id=pairing.pairing_id,
            room_id=room.room_id,
            rules=room_rules(room),
            negotiated=pairing.multiplier or 1,
            private_table=pairing.private_table,
            players=[
                rules_pb2.SeatPlayer(
                    seat=rules_pb2.SEAT_FIRST if seat == 0 else rules_pb2.SEAT_SECOND,
                    player_id=entry.player_id,
                    display_name=entry.display_name or entry.player_id,
                    carry=entry.carry,
                    items=[
                        rules_pb2.ItemCount(item=rules_pb2.ItemKind.ValueType(item), count=n)
                        for item, n in sorted(entry.items.items())
                    ],
                )
                for seat, entry in enumerate(pairing.seats)
            ],
        )
        try:
            reply = await table_pb2_grpc.TableServiceStub(channel).OpenTable(
                request, metadata=self._token.metadata(), timeout=CALL_TIMEOUT
            )
        except grpc.aio.AioRpcError as err:
            if err.code() in _RETRY_ELSEWHERE:
                raise TableUnavailable(f"{err.code().name}: {err.details()}") from None
            raise
        tickets = {}
        for ticket in reply.tickets:
            tickets[0 if ticket.seat == rules_pb2.SEAT_FIRST else 1] = ticket.table_ticket
        return OpenedTable(
            address=reply.address or server.address, tickets=tickets, incarnation=reply.incarnation
        )

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
