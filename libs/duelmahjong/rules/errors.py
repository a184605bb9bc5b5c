"""Exceptions of the rules library.

Every validation failure raises a subclass of :class:`RulesError` (itself a ``ValueError``) whose
message says exactly what is wrong, so callers (the gRPC layer, ``duel score``) can show it as is.
Syntax problems (text that is not tile notation) are told apart from legality problems (a well-written
hand that cannot exist or is not allowed), as python-chess does with its move errors.
"""

from __future__ import annotations


class RulesError(ValueError):
    """Base class of every error raised by ``duelmahjong.rules``."""


class NotationError(RulesError):
    """Text that is not valid tile or hand notation (``"123x"``, ``"0m"``, ``"8z"``, a stray digit)."""


class InvalidHandError(RulesError):
    """Well-formed notation describing a hand that cannot exist or is not allowed.

    A wrong tile count, a fifth copy of a tile, a meld of the wrong shape, a tile outside the profile's
    tile set, or (for scoring) a hand that is not a win.
    """


class UnknownProfileError(RulesError):
    """A profile name that is neither ``duel`` nor ``erren``."""
