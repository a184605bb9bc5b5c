"""gRPC handlers of ``WalletService``: translate requests into core calls and results into responses.

The platform interceptor has verified the token (all but the two public methods) and maps the
domain errors raised below to status codes: insufficient prestige FAILED_PRECONDITION, unknown
player NOT_FOUND, another player's data PERMISSION_DENIED, bad input INVALID_ARGUMENT, too many guest
logins from one address RESOURCE_EXHAUSTED (with the wait, also as ``grpc-retry-pushback-ms``).
"""

from __future__ import annotations

import math
from typing import Any

from duelmahjong.platform.auth import current_principal
from duelmahjong.platform.errors import InvalidArgument, RateLimited
from duelmahjong.platform.ratelimit import RateLimiter, client_address
from duelmahjong.v1 import rules_pb2, wallet_pb2, wallet_pb2_grpc
from services.wallet import codec
from services.wallet.core import Session, WalletCore
from services.wallet.leaderboard import RankedPlayer
from services.wallet.rating_board import RatedPlayer
from services.wallet.sharing import DataSharing
from services.wallet.sharing_store import Consent

SERVICE_NAME = wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name
# The only RPCs callable without a session token.
PUBLIC_METHODS = frozenset({f"/{SERVICE_NAME}/GuestLogin", f"/{SERVICE_NAME}/RefreshToken"})


def _session(session: Session) -> wallet_pb2.SessionToken:
    return wallet_pb2.SessionToken(
        token=session.token,
        expires_at=codec.timestamp(session.expires_at),
        refresh_token=session.refresh_token,
        refresh_expires_at=codec.timestamp(session.refresh_expires_at),
    )


def _sharing(consent: Consent) -> wallet_pb2.DataSharing:
    sharing = wallet_pb2.DataSharing(player_id=consent.player_id, share_hands=consent.share_hands)
    if consent.changed_at is not None:
        sharing.changed_at.CopyFrom(codec.timestamp(consent.changed_at))
    return sharing


class WalletApi(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(
        self, core: WalletCore, sharing: DataSharing, guest_logins: RateLimiter | None = None
    ) -> None:
        self.core = core
        self.sharing = sharing
        # Each guest login mints a starting grant: per client address, at most so many a minute.
        self.guest_logins = guest_logins or RateLimiter(
            per_minute=core.config.guest_logins_per_minute, burst=core.config.guest_login_burst
        )

    async def GuestLogin(
        self, request: wallet_pb2.GuestLoginRequest, context: Any
    ) -> wallet_pb2.GuestLoginResponse:
        wait = self.guest_logins.take(client_address(context.peer()))
        if wait > 0:
            seconds = math.ceil(wait)
            raise RateLimited(
                f"too many new guests from this address ({self.guest_logins.burst} at once, then "
                f"{self.guest_logins.per_minute:g} a minute); retry in {seconds} s, or keep the guest "
                "you have with RefreshToken",
                retry_after=wait,
            )
        session = await self.core.guest_login(request.display_name)
        return wallet_pb2.GuestLoginResponse(player_id=session.player_id, session=_session(session))

    async def RefreshToken(
        self, request: wallet_pb2.RefreshTokenRequest, context: Any
    ) -> wallet_pb2.RefreshTokenResponse:
        session = await self.core.refresh(request.refresh_token)
        return wallet_pb2.RefreshTokenResponse(player_id=session.player_id, session=_session(session))

    async def GetBalance(
        self, request: wallet_pb2.GetBalanceRequest, context: Any
    ) -> wallet_pb2.GetBalanceResponse:
        balance = await self.core.balance(current_principal(), request.player_id)
        return wallet_pb2.GetBalanceResponse(
            player_id=balance.player_id,
            balance=balance.balance,
            held=balance.held,
            available=balance.available,
            level=balance.level,
            level_name=balance.level_name,
            display_name=balance.display_name,
        )

    async def ListHistory(
        self, request: wallet_pb2.ListHistoryRequest, context: Any
    ) -> wallet_pb2.ListHistoryResponse:
        rows, next_token = await self.core.history(
            current_principal(), request.player_id, request.page_size, request.page_token
        )
        return wallet_pb2.ListHistoryResponse(
            entries=[
                wallet_pb2.HistoryEntry(
                    transaction_id=str(row.transaction_id),
                    reason=codec.POSTING_REASONS.get(row.purpose, rules_pb2.POSTING_REASON_UNSPECIFIED),
                    amount=row.amount,
                    balance_after=row.balance_after,
                    occurred_at=codec.timestamp(row.occurred_at),
                    reference=row.reference,
                )
                for row in rows
            ],
            next_page_token=next_token,
        )

    async def GetLeaderboard(
        self, request: wallet_pb2.GetLeaderboardRequest, context: Any
    ) -> wallet_pb2.GetLeaderboardResponse:
        around_me = request.scope == wallet_pb2.LEADERBOARD_SCOPE_AROUND_ME
        if request.kind == wallet_pb2.LEADERBOARD_KIND_RATING:
            profile = codec.profile_name(request.profile)
            rated = await self.core.rating_board(current_principal(), profile, around_me, request.limit)
            return self._rating_board(profile, rated)
        prestige = (wallet_pb2.LEADERBOARD_KIND_UNSPECIFIED, wallet_pb2.LEADERBOARD_KIND_PRESTIGE)
        if request.kind not in prestige:
            raise InvalidArgument(f"unknown leaderboard kind {request.kind}")
        ranked = await self.core.leaderboard(current_principal(), around_me, request.limit)
        return wallet_pb2.GetLeaderboardResponse(entries=[self._entry(player) for player in ranked])

    def _entry(self, player: RankedPlayer | RatedPlayer) -> wallet_pb2.LeaderboardEntry:
        return wallet_pb2.LeaderboardEntry(
            rank=player.rank,
            player_id=player.player_id,
            display_name=player.display_name,
            prestige=player.prestige,
            level=self.core.level_of(player.prestige)[0],
        )

    def _rating_board(self, profile: str, ranked: list[RatedPlayer]) -> wallet_pb2.GetLeaderboardResponse:
        entries = []
        for player in ranked:
            entry = self._entry(player)
            entry.rating.CopyFrom(codec.skill_rating(profile, player.skill))
            entries.append(entry)
        return wallet_pb2.GetLeaderboardResponse(entries=entries)

    async def GetRating(
        self, request: wallet_pb2.GetRatingRequest, context: Any
    ) -> wallet_pb2.GetRatingResponse:
        player_id, skills = await self.core.rating(current_principal(), request.player_id)
        return wallet_pb2.GetRatingResponse(
            player_id=player_id,
            ratings=[codec.skill_rating(profile, skill) for profile, skill in skills.items()],
        )

    async def GetInventory(
        self, request: wallet_pb2.GetInventoryRequest, context: Any
    ) -> wallet_pb2.GetInventoryResponse:
        items = await self.core.inventory(current_principal(), request.player_id)
        return wallet_pb2.GetInventoryResponse(
            items=[
                wallet_pb2.ItemStack(item=codec.item_kind(name), count=count) for name, count in items.items()
            ]
        )

    async def AdminGrant(
        self, request: wallet_pb2.AdminGrantRequest, context: Any
    ) -> wallet_pb2.AdminGrantResponse:
        items = tuple((codec.item_name(stack.item), stack.count) for stack in request.items)
        outcome = await self.core.admin_grant(
            current_principal(), request.player_id, request.amount, items, request.reason, request.request_id
        )
        balance = outcome.balances.get(request.player_id, (0, 0))[0]
        return wallet_pb2.AdminGrantResponse(transaction_id=str(outcome.transaction_id), balance=balance)

    async def PlaceHold(
        self, request: wallet_pb2.PlaceHoldRequest, context: Any
    ) -> wallet_pb2.PlaceHoldResponse:
        principal = current_principal()
        outcome = await self.core.place_hold(
            principal, request.player_id, request.pairing_id, request.amount, request.fee
        )
        balance, held = next(iter(outcome.balances.values()))
        return wallet_pb2.PlaceHoldResponse(hold_id=str(outcome.transaction_id), available=balance - held)

    async def ReleaseHold(
        self, request: wallet_pb2.ReleaseHoldRequest, context: Any
    ) -> wallet_pb2.ReleaseHoldResponse:
        outcome = await self.core.release_hold(current_principal(), request.player_id, request.pairing_id)
        balance, held = next(iter(outcome.balances.values()))
        return wallet_pb2.ReleaseHoldResponse(available=balance - held)

    async def BotLogin(
        self, request: wallet_pb2.BotLoginRequest, context: Any
    ) -> wallet_pb2.BotLoginResponse:
        bot = await self.core.bot_login(
            current_principal(), request.bot_id, request.minimum_available, request.request_id
        )
        return wallet_pb2.BotLoginResponse(
            player_id=bot.session.player_id,
            session=_session(bot.session),
            available=bot.available,
            topped_up=bot.topped_up,
        )

    async def SetDataSharing(
        self, request: wallet_pb2.SetDataSharingRequest, context: Any
    ) -> wallet_pb2.SetDataSharingResponse:
        consent = await self.sharing.set(current_principal(), request.player_id, request.share_hands)
        return wallet_pb2.SetDataSharingResponse(sharing=_sharing(consent))

    async def GetDataSharing(
        self, request: wallet_pb2.GetDataSharingRequest, context: Any
    ) -> wallet_pb2.GetDataSharingResponse:
        consent = await self.sharing.get(current_principal(), request.player_id)
        return wallet_pb2.GetDataSharingResponse(sharing=_sharing(consent))

    async def ListDataSharing(
        self, request: wallet_pb2.ListDataSharingRequest, context: Any
    ) -> wallet_pb2.ListDataSharingResponse:
        found, next_token = await self.sharing.sharing(
            current_principal(), list(request.player_ids), request.page_size, request.page_token
        )
        return wallet_pb2.ListDataSharingResponse(
            players=[_sharing(consent) for consent in found], next_page_token=next_token
        )
