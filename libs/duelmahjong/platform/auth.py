"""Signed session tokens (JWT, HS256 with ``TOKEN_SECRET``) and the caller of the current RPC.

The wallet issues a token at login (:func:`issue_token`); every service's interceptor verifies it
(:func:`verify_token`) and binds the resulting :class:`Principal` for the handler, which reads it with
:func:`current_principal`. Services calling each other mint a short ``service`` token with the shared
secret. Clients send the token as gRPC metadata ``authorization: Bearer <token>``.

Keys rotate without downtime (:class:`TokenKeys`): a token is signed with the signing key
(``TOKEN_SECRET``) and names it in its ``kid`` header; a service accepts tokens of the signing key and
of one more key (``TOKEN_SECRET_ACCEPTED``: the next key before the switch, the previous one after
it). A token whose key id is neither is refused before any signature is checked. The key id is derived
from the key (:func:`key_id`), so no setting can label a key wrongly and every service computes the
same id for the same key.

The clock is a parameter (``now``) so expiry is tested without sleeping.

>>> from datetime import UTC, datetime, timedelta
>>> secret = "s" * 32
>>> t0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
>>> token = issue_token(secret, player_id="p-1", role=Role.PLAYER, ttl=timedelta(hours=1), now=t0)
>>> principal = verify_token(secret, token, now=t0 + timedelta(minutes=5))
>>> (principal.player_id, principal.role)
('p-1', <Role.PLAYER: 'player'>)
>>> verify_token(secret, token, now=t0 + timedelta(hours=2))
Traceback (most recent call last):
...
duelmahjong.platform.auth.InvalidToken: the session token has expired; log in again
>>> rotated = TokenKeys("n" * 32, accepted=secret)
>>> verify_token(rotated, token, now=t0).key_id == key_id(secret)
True
>>> verify_token("n" * 32, token, now=t0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
duelmahjong.platform.auth.InvalidToken: the session token is signed with a key this service ...
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

import jwt

from duelmahjong.platform.errors import PermissionDenied, Unauthenticated

ISSUER = "duelmahjong"
ALGORITHM = "HS256"
METADATA_KEY = "authorization"
BEARER = "Bearer "
DEFAULT_TTL = timedelta(hours=12)


class Role(StrEnum):
    """Who a token speaks for: a player, an operator, or another service of the backend."""

    PLAYER = "player"
    ADMIN = "admin"
    SERVICE = "service"


class InvalidToken(Unauthenticated):
    """The token is missing, malformed, forged, or expired."""


# A key id is a prefix of a domain-separated SHA-256 of the key: one-way (it tells nothing of the key,
# and differs from the table tickets' key, a SHA-256 with another prefix), and 64 bits make two keys
# with the same id a 2^-64 chance.
_KEY_ID_DOMAIN = b"duelmahjong token key id\x00"
_KEY_ID_LENGTH = 16
_KEY_ID_SHAPE = re.compile(rf"^[0-9a-f]{{{_KEY_ID_LENGTH}}}$")


def key_id(secret: str) -> str:
    """The id a token signed with ``secret`` carries in its ``kid`` header (16 hex digits).

    >>> key_id("s" * 32)
    '0ef3a8654d8878e0'
    """
    return hashlib.sha256(_KEY_ID_DOMAIN + secret.encode()).hexdigest()[:_KEY_ID_LENGTH]


@dataclass(frozen=True)
class TokenKeys:
    """The key tokens are signed with, and the one other key they are still (or already) accepted with.

    ``accepted`` is never signed with: during a rotation it is first the next key (every service learns
    it before any signs with it) and then the previous one (tokens signed before the switch live out
    their lifetime). See docs/operations.md, "Rotating the token key".
    """

    signing: str = field(repr=False)  # keys never show in a log line or a traceback
    accepted: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if not self.signing:
            raise ValueError("a token key must not be empty")
        if self.accepted == self.signing:
            raise ValueError("the accepted token key must differ from the signing key")

    @classmethod
    def of(cls, keys: TokenKeys | str) -> TokenKeys:
        """``keys`` as a :class:`TokenKeys` (a plain secret signs and is the only key accepted)."""
        return keys if isinstance(keys, TokenKeys) else cls(keys)

    @property
    def signing_id(self) -> str:
        return key_id(self.signing)

    def secrets(self) -> tuple[str, ...]:
        """Every key a token (or a table ticket) is accepted with, the signing key first."""
        return (self.signing, self.accepted) if self.accepted else (self.signing,)

    @functools.cached_property
    def _by_id(self) -> dict[str, str]:
        return {key_id(secret): secret for secret in self.secrets()}

    def secret_for(self, kid: str) -> str | None:
        """The key whose id is ``kid``, if this service accepts it."""
        return self._by_id.get(kid)


@dataclass(frozen=True)
class Principal:
    """The verified caller of an RPC."""

    player_id: str
    role: Role
    session_id: str
    expires_at: datetime
    key_id: str = ""  # the key the token was signed with (which key of a rotation is still in use)


def issue_token(
    keys: TokenKeys | str,
    *,
    player_id: str,
    role: Role = Role.PLAYER,
    ttl: timedelta = DEFAULT_TTL,
    session_id: str | None = None,
    now: datetime | None = None,
) -> str:
    """A token for ``player_id`` valid for ``ttl`` from ``now``, signed with the signing key."""
    if not player_id:
        raise ValueError("a token needs a player id")
    if ttl <= timedelta(0):
        raise ValueError("a token's lifetime must be positive")
    issued = now or datetime.now(UTC)
    claims = {
        "iss": ISSUER,
        "sub": player_id,
        "role": Role(role).value,
        "sid": session_id or uuid.uuid4().hex,
        "iat": int(issued.timestamp()),
        "exp": int((issued + ttl).timestamp()),
    }
    signing = TokenKeys.of(keys)
    return jwt.encode(claims, signing.signing, algorithm=ALGORITHM, headers={"kid": signing.signing_id})


# What is wrong with a token, in this service's words: PyJWT's own messages quote its internals
# ("Invalid header string: 'utf-8' codec can't decode byte 0xb7"), which say nothing to a client.
MALFORMED_TOKEN = "the session token is malformed: it is not a token this service issued; log in again"
_TOKEN_PROBLEMS: tuple[tuple[type[jwt.InvalidTokenError], str], ...] = (
    (jwt.InvalidSignatureError, "the session token's signature does not verify: it was not issued here"),
    (jwt.InvalidAlgorithmError, "the session token is not signed the way this service signs tokens"),
    (jwt.InvalidIssuerError, "the session token was issued by another service"),
    (jwt.MissingRequiredClaimError, "the session token lacks a claim every token of this service has"),
    (jwt.ImmatureSignatureError, "the session token is not valid yet"),
    (jwt.DecodeError, MALFORMED_TOKEN),
)


def _key_of(keys: TokenKeys, token: str) -> tuple[str, str]:
    """The accepted key ``token`` names in its ``kid`` header, and that id."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.InvalidTokenError:
        raise InvalidToken(MALFORMED_TOKEN) from None
    if not isinstance(kid, str) or not kid:
        raise InvalidToken("the session token names no signing key (no 'kid' header); log in again")
    secret = keys.secret_for(kid)
    if secret is None:
        # Only an id of the right shape is repeated back: it helps an operator mid-rotation, and
        # nothing a client made up is echoed.
        named = f"key id {kid}" if _KEY_ID_SHAPE.match(kid) else "an unknown key id"
        raise InvalidToken(
            f"the session token is signed with a key this service does not accept ({named}: retired, or "
            "never this service's); log in again"
        )
    return secret, kid


def verify_token(keys: TokenKeys | str, token: str, *, now: datetime | None = None) -> Principal:
    """The principal a token speaks for; raises :class:`InvalidToken` with a readable reason.

    >>> try:
    ...     verify_token("s" * 32, "not.a.token")
    ... except InvalidToken as err:
    ...     print(err)
    the session token is malformed: it is not a token this service issued; log in again
    """
    secret, kid = _key_of(TokenKeys.of(keys), token)
    try:
        # Expiry is checked below against the injected clock, not PyJWT's wall clock.
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            issuer=ISSUER,
            options={"verify_exp": False, "verify_iat": False, "require": ["sub", "role", "sid", "exp"]},
        )
    except jwt.InvalidTokenError as err:
        reason = next((text for kind, text in _TOKEN_PROBLEMS if isinstance(err, kind)), MALFORMED_TOKEN)
        raise InvalidToken(reason) from None
    try:
        role = Role(claims["role"])
        expires_at = datetime.fromtimestamp(int(claims["exp"]), UTC)
    except (ValueError, TypeError, OverflowError, OSError):
        raise InvalidToken("the session token names an unknown role or expiry; log in again") from None
    if (now or datetime.now(UTC)) >= expires_at:
        raise InvalidToken("the session token has expired; log in again")
    return Principal(
        player_id=str(claims["sub"]),
        role=role,
        session_id=str(claims["sid"]),
        expires_at=expires_at,
        key_id=kid,
    )


def bearer_metadata(token: str) -> tuple[tuple[str, str]]:
    """Call metadata carrying ``token``: ``stub.Method(request, metadata=bearer_metadata(token))``."""
    return ((METADATA_KEY, BEARER + token),)


def token_from_metadata(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The bearer token in a call's invocation metadata; raises :class:`InvalidToken` if absent."""
    for key, value in metadata or ():
        if key == METADATA_KEY:
            text = value.decode() if isinstance(value, bytes) else str(value)
            if not text.startswith(BEARER):
                raise InvalidToken("authorization metadata must be 'Bearer <token>'")
            return text[len(BEARER) :].strip()
    raise InvalidToken("this RPC needs a session token (metadata 'authorization: Bearer <token>')")


_principal_var: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("principal", default=None)


def bind_principal(principal: Principal | None) -> contextvars.Token[Principal | None]:
    """Make ``principal`` the caller for the current task (used by the interceptor)."""
    return _principal_var.set(principal)


def reset_principal(token: contextvars.Token[Principal | None]) -> None:
    _principal_var.reset(token)


def current_principal() -> Principal:
    """The verified caller of the RPC being handled."""
    principal = _principal_var.get()
    if principal is None:
        raise Unauthenticated("this RPC runs without a verified caller")
    return principal


def require_role(*roles: Role) -> Principal:
    """The current caller, if it has one of ``roles``; else ``PermissionDenied``."""
    principal = current_principal()
    if principal.role not in roles:
        allowed = ", ".join(role.value for role in roles)
        raise PermissionDenied(f"this RPC needs role {allowed}; the caller is a {principal.role.value}")
    return principal
