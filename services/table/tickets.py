"""Table tickets: an opaque, signed token binding one player to one seat of one table.

``OpenTable`` issues one per seat; the first message of a ``Play`` stream presents it. The signature is
an HMAC-SHA256 with a key derived from the token signing key, so any table server sharing the keys can
check a ticket without a lookup, and a ticket cannot be re-pointed at another seat, table or player.
A ticket is checked against each key the server accepts (:class:`~duelmahjong.platform.auth.TokenKeys`),
so the tickets of tables opened before a key rotation's switch still seat their players after it.

>>> book = TicketBook("k" * 32)
>>> ticket = book.issue("t-1", 1, "p-7")
>>> book.verify(ticket)
SeatTicket(table_id='t-1', seat=1, player_id='p-7')
>>> book.verify(ticket.replace("p-7", "p-8"))
Traceback (most recent call last):
...
services.table.tickets.InvalidTicket: the table ticket's signature does not verify
>>> TicketBook(TokenKeys("n" * 32, accepted="k" * 32)).verify(ticket).player_id
'p-7'
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from duelmahjong.platform.auth import TokenKeys
from duelmahjong.platform.errors import PermissionDenied

_VERSION = "t1"


class InvalidTicket(PermissionDenied):
    """The ticket is malformed or forged (PERMISSION_DENIED, as table.proto says)."""


@dataclass(frozen=True)
class SeatTicket:
    table_id: str
    seat: int
    player_id: str


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class TicketBook:
    def __init__(self, keys: TokenKeys | str) -> None:
        # The signing key's first; a ticket is checked against the signing key, then the accepted one.
        self._keys = tuple(
            hashlib.sha256(b"table-ticket:" + secret.encode()).digest()
            for secret in TokenKeys.of(keys).secrets()
        )

    @staticmethod
    def _sign(key: bytes, body: str) -> str:
        return _b64(hmac.new(key, body.encode(), hashlib.sha256).digest())

    def issue(self, table_id: str, seat: int, player_id: str) -> str:
        body = f"{_VERSION}.{table_id}.{seat}.{player_id}"
        return f"{body}.{self._sign(self._keys[0], body)}"

    def verify(self, ticket: str) -> SeatTicket:
        body, _, signature = ticket.rpartition(".")
        parts = body.split(".")
        if len(parts) != 4 or parts[0] != _VERSION or parts[2] not in ("0", "1"):
            raise InvalidTicket("the table ticket is malformed; use the ticket from TableReady")
        if not any(hmac.compare_digest(signature, self._sign(key, body)) for key in self._keys):
            raise InvalidTicket("the table ticket's signature does not verify")
        return SeatTicket(table_id=parts[1], seat=int(parts[2]), player_id=parts[3])
