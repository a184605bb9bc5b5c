"""The codes of private tables (docs/protocol.md "Private tables"): short, read aloud or typed by a
person, so drawn from an alphabet without look-alikes, and unguessable, so drawn from the OS's secure
source and tried at a bounded rate (``MATCHMAKING_PRIVATE_JOINS_PER_MINUTE``).

The alphabet is the digits and capitals without 0/O, 1/I/L (the pairs a reader confuses) and U (read
as V in many fonts): 30 symbols, 30**6 ≈ 7.3e8 codes of six.

>>> normalise(" ab c-2 34 ")
'ABC-234'
>>> well_formed("ABC234"), well_formed("ABC-23"), well_formed("ABO234"), well_formed("AB23")
(True, False, False, False)
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
LENGTH = 6
_ALLOWED = frozenset(ALPHABET)


def normalise(code: str) -> str:
    """The code as a friend may have typed it, read as issued: case and white space ignored."""
    return "".join(code.split()).upper()


def well_formed(code: str) -> bool:
    """A normalised code that could have been issued (the right length, only the alphabet)."""
    return len(code) == LENGTH and all(symbol in _ALLOWED for symbol in code)


def draw(choose: Callable[[str], str] = secrets.choice) -> str:
    """One code, each symbol drawn on its own from ``choose`` (the OS's secure source)."""
    return "".join(choose(ALPHABET) for _ in range(LENGTH))
