"""Table tickets: an opaque, signed token binding one player to one seat of one table.

``OpenTable`` issues one per seat; the first message of a ``Play`` stream presents it. The signature is
an HMAC-SHA256 with a key derived from the token signing key, so any table server sharing the keys can
check a ticket without a lookup, and a ticket cannot be re-pointed at another seat, table or player.
A ticket names the key it was signed with (the token key's id, :func:`~duelmahjong.platform.auth.key_id`)
and is checked with that key if the server accepts it (:class:`~duelmahjong.platform.auth.TokenKeys`).

A ticket names a key no longer accepted when its table was opened before a key rotation's switch and
outlived the previous key (a pairing lasts as long as its players go on). Such a ticket cannot be
checked, so it is not trusted: it comes back as ``key="retired"`` and seats its bearer only where the
table's own record has the bearer (by their session token, itself checked with an accepted key) in
that seat — the check ``Play`` makes on every ticket. It therefore grants nothing a player does not
already hold, and a rotation locks no one out of a long pairing.

>>> book = TicketBook("k" * 32)
>>> ticket = book.issue("t-1", 1, "p-7")
>>> book.verify(ticket)
SeatTicket(table_id='t-1', seat=1, player_id='p-7')
>>> book.verify(ticket.replace("p-7", "p-8"))
Traceback (most recent call last):
...
services.table.tickets.InvalidTicket: the table ticket's signature does not verify
>>> TicketBook(TokenKeys("n" * 32, accepted="k" * 32)).verify(ticket).key
'accepted'
>>> TicketBook("n" * 32).verify(ticket).key
'retired'
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Literal

from duelmahjong.platform.auth import TokenKeys, key_id
from duelmahjong.platform.errors import PermissionDenied

_VERSION = "t2"  # t2.<key id>.<table>.<seat>.<player>.<signature>
_UNNAMED = "t1"  # t1.<table>.<seat>.<player>.<signature>: no key id; checked with each accepted key

TicketKey = Literal["signing", "accepted", "retired"]


class InvalidTicket(PermissionDenied):
    """The ticket is malformed or forged (PERMISSION_DENIED, as table.proto says)."""


@dataclass(frozen=True)
class SeatTicket:
    table_id: str
    seat: int
    player_id: str
    # Which key signed it: the signing key, the accepted one, or one no longer accepted ("retired",
    # unchecked: only the table's own record of the seat may then seat its bearer).
    key: TicketKey = field(default="signing", compare=False, repr=False)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _ticket_key(secret: str) -> bytes:
    return hashlib.sha256(b"table-ticket:" + secret.encode()).digest()


class TicketBook:
    def __init__(self, keys: TokenKeys | str) -> None:
        keyring = TokenKeys.of(keys)
        self._signing_id = keyring.signing_id
        # By key id, the signing key's first.
        self._keys = {key_id(secret): _ticket_key(secret) for secret in keyring.secrets()}

    @staticmethod
    def _sign(key: bytes, body: str) -> str:
        return _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())

    def issue(self, table_id: str, seat: int, player_id: str) -> str:
        body = f"{_VERSION}.{self._signing_id}.{table_id}.{seat}.{player_id}"
        return f"{body}.{self._sign(self._keys[self._signing_id], body)}"

    def verify(self, ticket: str) -> SeatTicket:
        """The seat a ticket names; raises :class:`InvalidTicket` for a malformed or forged one."""
        body, _, signature = ticket.rpartition(".")
        version = body.split(".", 1)[0]
        if version == _VERSION:
            parts = body.split(".", 4)  # a player id may hold dots; a table id and a key id do not
            kid, claims = (parts[1], parts[2:]) if len(parts) == 5 else ("", [])
        elif version == _UNNAMED:
            kid, claims = "", body.split(".", 3)[1:]
        else:
            claims = []
        if len(claims) != 3 or not all(claims) or claims[1] not in ("0", "1"):
            raise InvalidTicket("the table ticket is malformed; use the ticket from TableReady")
        table_id, seat, player_id = claims[0], int(claims[1]), claims[2]
        if version == _VERSION and kid not in self._keys:
            return SeatTicket(table_id, seat, player_id, key="retired")
        candidates = [kid] if kid else list(self._keys)
        signed_by = next(
            (
                name
                for name in candidates
                if hmac.compare_digest(signature, self._sign(self._keys[name], body))
            ),
            None,
        )
        if signed_by is None:
            raise InvalidTicket("the table ticket's signature does not verify")
        return SeatTicket(
            table_id, seat, player_id, key="signing" if signed_by == self._signing_id else "accepted"
        )
