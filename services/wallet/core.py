"""The wallet's domain services: players and sessions, reads, grants and holds.

Everything that moves prestige goes through :meth:`LedgerStore.execute` with a command from
``commands``; this module decides who may ask for what and builds those commands. It knows
nothing of gRPC or NATS (``api.py`` and ``events.py`` translate).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from duelmahjong.platform import auth, ids
from duelmahjong.platform.auth import Principal, Role
from duelmahjong.platform.errors import InvalidArgument, PermissionDenied
from services.wallet.commands import BotTopUp, Grant, PlaceHold, ReleaseHolds, check_ids
from services.wallet.config import WalletConfig
from services.wallet.leaderboard import Leaderboard, RankedPlayer
from services.wallet.ledger_store import HistoryRow, LedgerStore, Outcome
from services.wallet.levels import LevelTable
from services.wallet.players import PlayerStore
from services.wallet.rating import PROFILES, Skill
from services.wallet.rating_board import RatedPlayer, RatingBoard

MAX_PAGE = 100
DEFAULT_PAGE = 20
DEFAULT_LEADERBOARD = 10
SERVER_ROLES = (Role.SERVICE, Role.ADMIN)
# A house bot's id is its player id: the "bot-" prefix never collides with a guest's (uuid hex).

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Session:
    player_id: str
    token: str
    expires_at: datetime
    refresh_token: str
    refresh_expires_at: datetime


@dataclass(frozen=True, slots=True)
class BotSession:
    session: Session
    available: int
    topped_up: int  # prestige this call's top-up granted


@dataclass(frozen=True, slots=True)
class Balance:
    player_id: str
    balance: int
    held: int
    level: int
    level_name: str
    display_name: str = ""

    @property
    def available(self) -> int:
        return self.balance - self.held


def _refresh_hash(refresh_token: str) -> bytes:
    return hashlib.sha256(refresh_token.encode()).digest()


def starting_grant_key(player_id: str) -> str:
    return f"grant:start:{player_id}"


def bot_display_name(bot_id: str) -> str:
    """A house bot's display name: "bot-3" is "Bot 3"."""
    return "Bot " + bot_id.removeprefix("bot-")


def check_page_size(size: int, default: int) -> int:
    if size == 0:
        return default
    if not 1 <= size <= MAX_PAGE:
        raise InvalidArgument(f"page size / limit must be 1-{MAX_PAGE}, got {size}")
    return size


def owner(principal: Principal, player_id: str) -> str:
    """The player whose data the caller asks for: their own ("" = me); servers may ask for anyone."""
    wanted = player_id or principal.player_id
    if wanted != principal.player_id and principal.role not in SERVER_ROLES:
        raise PermissionDenied("a player may only see or move their own prestige")
    check_ids(wanted)  # a NUL or a 100 kB id is refused here, not by Postgres as an internal error
    return wanted


class WalletCore:
    def __init__(
        self,
        ledger: LedgerStore,
        players: PlayerStore,
        leaderboard: Leaderboard,
        ratings: RatingBoard,
        config: WalletConfig,
        *,
        clock: Clock = utc_now,
    ) -> None:
        self.ledger = ledger
        self.players = players
        self.board = leaderboard
        self.ratings = ratings
        self.config = config
        self.levels: LevelTable = config.level_table
        self._clock = clock
        self._token_keys = config.token_keys()

    # -- sessions ---------------------------------------------------------------------------------

    async def guest_login(self, display_name: str) -> Session:
        """A new player with the starting grant (a ledger transaction from the grants account)."""
        name = display_name.strip()
        if not 1 <= len(name) <= 32:
            raise InvalidArgument(f"display name must be 1-32 characters, got {len(name)}")
        if not name.isprintable():
            raise InvalidArgument("display name must be printable (no control characters)")
        player_id = uuid.uuid4().hex
        await self.players.create_player(player_id, name, self._starting_grant(player_id, "starting grant"))
        return await self._new_session(player_id)

    async def bot_login(
        self, principal: Principal, bot_id: str, minimum_available: int, request_id: str
    ) -> BotSession:
        """A session for the house bot ``bot_id`` (matchmaking's bot fill), created on first use with
        the starting grant — once — and topped up to ``minimum_available`` when short (see
        :class:`BotTopUp`), so a fill mints nothing but what the bot lacks, and only in the ledger."""
        if principal.role is not Role.SERVICE:
            raise PermissionDenied("BotLogin is for the backend's services (bot fill), not players or admins")
        if not ids.is_bot_id(bot_id):
            raise InvalidArgument(f"bot id {bot_id!r} must be {ids.BOT_ID_RULE}")
        if minimum_available < 0:
            raise InvalidArgument(f"minimum_available must be >= 0, got {minimum_available}")
        if minimum_available and not request_id:
            raise InvalidArgument("request_id is required with minimum_available: a top-up is applied once")
        if request_id:
            check_ids(request_id)
        grant = self._starting_grant(bot_id, "starting grant (house bot)")
        await self.players.ensure_bot(bot_id, bot_display_name(bot_id), grant)
        topped_up = 0
        if minimum_available:
            balance, held = await self.ledger.balance(bot_id)
            if not held and balance < minimum_available:  # else the command would write an empty transaction
                command = BotTopUp(
                    f"grant:bot:{bot_id}:{request_id}",
                    player=bot_id,
                    minimum=minimum_available,
                    granted_by=principal.player_id,
                )
                outcome = await self.ledger.execute(command, record_rejection=False)
                topped_up = sum(amount for purpose, amount in outcome.moved if purpose == "grant")
        balance, held = await self.ledger.balance(bot_id)
        return BotSession(await self._new_session(bot_id), balance - held, topped_up)

    def _starting_grant(self, player_id: str, reason: str) -> Grant | None:
        """A new player's starting grant, a ledger transaction from the grants account (none if 0)."""
        if self.config.starting_grant <= 0:
            return None
        return Grant(
            starting_grant_key(player_id),
            player=player_id,
            amount=self.config.starting_grant,
            grant_reason=reason,
            granted_by="wallet",
        )

    async def _new_session(self, player_id: str) -> Session:
        now = self._clock()
        session_id = uuid.uuid4().hex
        refresh_token = secrets.token_urlsafe(32)
        refresh_expires = now + timedelta(seconds=self.config.refresh_ttl_seconds)
        await self.players.create_session(
            session_id, player_id, _refresh_hash(refresh_token), refresh_expires
        )
        return self._session(player_id, session_id, refresh_token, refresh_expires, now)

    def _session(
        self, player_id: str, session_id: str, refresh_token: str, refresh_expires: datetime, now: datetime
    ) -> Session:
        ttl = timedelta(seconds=self.config.session_ttl_seconds)
        token = auth.issue_token(
            self._token_keys,
            player_id=player_id,
            role=Role.PLAYER,
            ttl=ttl,
            session_id=session_id,
            now=now,
        )
        # The token's exp is whole seconds; report exactly what the token says.
        expires_at = datetime.fromtimestamp(int((now + ttl).timestamp()), UTC)
        return Session(player_id, token, expires_at, refresh_token, refresh_expires)

    async def refresh(self, refresh_token: str) -> Session:
        """Swap a refresh token (once) for a new session token and a new refresh token."""
        if not refresh_token:
            raise auth.InvalidToken("a refresh token is required")
        now = self._clock()
        new_refresh = secrets.token_urlsafe(32)
        refresh_expires = now + timedelta(seconds=self.config.refresh_ttl_seconds)
        rotated = await self.players.rotate_session(
            _refresh_hash(refresh_token), _refresh_hash(new_refresh), now, refresh_expires
        )
        if rotated is None:
            raise auth.InvalidToken("refresh token is unknown, already used or expired; log in again")
        session_id, player_id = rotated
        return self._session(player_id, session_id, new_refresh, refresh_expires, now)

    # -- reads ------------------------------------------------------------------------------------

    async def balance(self, principal: Principal, player_id: str) -> Balance:
        wanted = owner(principal, player_id)
        balance, held = await self.ledger.balance(wanted)
        level, name = self.levels.level_of(balance)
        return Balance(wanted, balance, held, level, name, await self.players.display_name(wanted))

    async def history(
        self, principal: Principal, player_id: str, page_size: int, page_token: str
    ) -> tuple[list[HistoryRow], str]:
        wanted = owner(principal, player_id)
        size = check_page_size(page_size, DEFAULT_PAGE)
        before: int | None = None
        if page_token:
            if not page_token.isdigit():
                raise InvalidArgument(f"page token {page_token!r} did not come from this service")
            before = int(page_token)
        rows = await self.ledger.history(wanted, before, size + 1)
        more = len(rows) > size
        rows = rows[:size]
        return rows, (str(rows[-1].entry_id) if more else "")

    async def leaderboard(self, principal: Principal, around_me: bool, limit: int) -> list[RankedPlayer]:
        size = check_page_size(limit, DEFAULT_LEADERBOARD)
        if around_me:
            return await self.board.around(principal.player_id, size)
        return await self.board.top(size)

    async def rating(self, principal: Principal, player_id: str) -> tuple[str, dict[str, Skill]]:
        """Anyone's ratings, per profile: a rating is public (the boards show it, an opponent may
        look), unlike a balance."""
        wanted = player_id or principal.player_id
        check_ids(wanted)
        return wanted, await self.ratings.of(wanted)

    async def rating_board(
        self, principal: Principal, profile: str, around_me: bool, limit: int
    ) -> list[RatedPlayer]:
        if profile not in PROFILES:
            raise InvalidArgument("a rating board needs its profile: PROFILE_DUEL or PROFILE_ERREN")
        size = check_page_size(limit, DEFAULT_LEADERBOARD)
        if around_me:
            return await self.ratings.around(principal.player_id, profile, size)
        return await self.ratings.top(profile, size)

    async def inventory(self, principal: Principal, player_id: str) -> dict[str, int]:
        return await self.players.inventory(owner(principal, player_id))

    # -- writes -----------------------------------------------------------------------------------

    async def admin_grant(
        self,
        principal: Principal,
        player_id: str,
        amount: int,
        items: tuple[tuple[str, int], ...],
        reason: str,
        request_id: str,
    ) -> Outcome:
        """Mint (or burn) prestige and grant items, audited with the admin's id and reason."""
        if principal.role is not Role.ADMIN:
            raise PermissionDenied("granting prestige needs the admin role")
        if not request_id:
            raise InvalidArgument("request_id is required: the same request_id is applied once")
        if not player_id:
            raise InvalidArgument("player_id is required")
        command = Grant(
            f"grant:admin:{request_id}",
            player=player_id,
            amount=amount,
            items=items,
            grant_reason=reason,
            granted_by=principal.player_id,
        )
        return await self.ledger.execute(command, record_rejection=False)

    async def place_hold(
        self, principal: Principal, player_id: str, pairing_id: str, amount: int, fee: int
    ) -> Outcome:
        """Reserve carry + fee for a pairing: matchmaking does, when the player counts as ready."""
        wanted = self._server_call(principal, player_id, "holds are placed by matchmaking")
        if not 0 <= fee < amount:
            raise InvalidArgument(f"a hold needs 0 <= fee < amount, got fee {fee} of {amount}")
        command = PlaceHold(
            f"hold:{pairing_id}:{wanted}", pairing_id=pairing_id, player=wanted, carry=amount - fee, fee=fee
        )
        return await self.ledger.execute(command, record_rejection=False)

    async def release_hold(self, principal: Principal, player_id: str, pairing_id: str) -> Outcome:
        # Mid-hand a player's carry is at stake: leaving is escape (T10), which the table decides.
        wanted = self._server_call(
            principal, player_id, "holds are released by the servers when the pairing closes"
        )
        check_ids(wanted)
        await self.ledger.balance(wanted)  # an unknown player is NOT_FOUND, not an empty release
        command = ReleaseHolds(f"release:{pairing_id}:{wanted}", pairing_id=pairing_id, seats=(wanted,))
        return await self.ledger.execute(command, record_rejection=False)

    @staticmethod
    def _server_call(principal: Principal, player_id: str, why: str) -> str:
        if principal.role not in SERVER_ROLES:
            raise PermissionDenied(why)
        if not player_id:
            raise InvalidArgument("player_id is required")
        return player_id

    def level_of(self, prestige: int) -> tuple[int, str]:
        return self.levels.level_of(prestige)
