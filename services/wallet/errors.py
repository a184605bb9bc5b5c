"""The wallet's domain errors: each names one kind of wrong and carries its gRPC status (platform)."""

from __future__ import annotations

from duelmahjong.platform.errors import DomainError, FailedPrecondition, InvalidArgument, NotFound


class WalletError(DomainError):
    """Base of every expected wallet failure (a bug is never one of these)."""


class InvalidAmountError(WalletError, InvalidArgument):
    """A negative, zero or otherwise malformed amount or argument (INVALID_ARGUMENT)."""


class InsufficientPrestigeError(WalletError, FailedPrecondition):
    """The player has not enough free prestige for the operation (FAILED_PRECONDITION)."""


class UnknownPlayerError(WalletError, NotFound):
    """No such player (NOT_FOUND)."""


class HoldError(WalletError, FailedPrecondition):
    """A hold that cannot be placed or released as asked (FAILED_PRECONDITION)."""


class NoItemError(WalletError, FailedPrecondition):
    """The player does not own the item being spent (FAILED_PRECONDITION)."""


class UnbalancedTransactionError(RuntimeError):
    """Postings that do not sum to zero: a bug in a planner, never written (so not a WalletError)."""
