"""Domain errors that carry the gRPC status they map to.

A service's core raises these (or its own subclasses: ``class InsufficientFunds(FailedPrecondition)``);
only the gRPC layer (:mod:`duelmahjong.platform.interceptors`) turns them into status codes, using the
message as the status details. Anything else that escapes a handler is a bug: the client gets
``INTERNAL`` with a generic message and the traceback stays in the server log. The status is held as the
name of a ``grpc.StatusCode`` so this module imports no gRPC and the core stays free of it.

>>> err = NotFound("no table 7f3a")
>>> (err.status, str(err))
('NOT_FOUND', 'no table 7f3a')
"""

from __future__ import annotations

from typing import Any, ClassVar

# A message shown to a client may quote its input. Status details travel as one HTTP/2 trailer (clients
# cap metadata at 16 KiB) and a refusal on a stream is resent to the client, so a message quoting a huge
# input would break the response or amplify it: what is shown is cut to a readable sentence.
MAX_DETAILS = 300


def readable_details(message: str) -> str:
    """``message`` as status details: control characters escaped, at most ``MAX_DETAILS`` characters.

    >>> readable_details("no player 'a\\x00b'")
    "no player 'a\\\\x00b'"
    >>> len(readable_details("x" * 5000))
    300
    """
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in message)
    return shown if len(shown) <= MAX_DETAILS else shown[: MAX_DETAILS - 1] + "…"


class DomainError(Exception):
    """An expected failure whose message is safe and useful to show the caller."""

    status: ClassVar[str] = "FAILED_PRECONDITION"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(DomainError):
    """The request itself is wrong, whatever the state of the system (bad notation, bad ids)."""

    status = "INVALID_ARGUMENT"


class MalformedRequest(InvalidArgument):
    """The request bytes are not a valid protobuf message of the expected type."""


class InvalidText(InvalidArgument):
    """A string field of the request holds a control character or is too long (checked at the edge).

    ``request`` is the parsed request, so a stream that refuses one message can say which it was.
    """

    def __init__(self, message: str, request: Any = None) -> None:
        super().__init__(message)
        self.request = request


class FailedPrecondition(DomainError):
    """The request is well formed but not allowed in the current state (not your turn, table closed)."""

    status = "FAILED_PRECONDITION"


class PermissionDenied(DomainError):
    """The caller is known but may not do this (another seat's action, a player calling an admin RPC)."""

    status = "PERMISSION_DENIED"


class Unauthenticated(DomainError):
    """No valid session token came with the call."""

    status = "UNAUTHENTICATED"


class NotFound(DomainError):
    """The thing named in the request does not exist."""

    status = "NOT_FOUND"


class ResourceExhausted(DomainError):
    """A quota or capacity is used up (queue full, no table capacity, rate limit)."""

    status = "RESOURCE_EXHAUSTED"


class RateLimited(ResourceExhausted):
    """Too many calls of one kind from one caller; ``retry_after`` seconds until the next may pass.

    The gRPC layer also sends the wait as the ``grpc-retry-pushback-ms`` trailer, which gRPC clients
    with a retry policy honour.
    """

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(DomainError):
    """A dependency is down or the service is draining; retrying later may work."""

    status = "UNAVAILABLE"
