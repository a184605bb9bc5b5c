"""The commitment to a hand's randomness (docs/protocol.md "Provably fair walls").

Before the first tile is dealt both seats receive ``commitment(seed, salt)`` (``HandStarted.
wall_commitment``); the replay reveals seed and salt, and anyone recomputes the hash. The salt, drawn
with the seed from the OS's secure source, keeps the commitment from being searched seed by seed: a
64-bit seed alone could be found from its hash.

>>> commitment(7, bytes(16)).hex()[:16]
'b9ec0bb6a8375bce'
>>> len(commitment(7, bytes(16)))
32
"""

from __future__ import annotations

import hashlib
import secrets

# Versioned: a later scheme gets another label, so a hash of one can never pass for the other.
LABEL = b"duelmahjong-wall-v1"
SALT_BYTES = 16
SEED_BYTES = 8
COMMITMENT_BYTES = 32


def seed_bytes(seed: int) -> bytes:
    """The seed as the commitment and ``HiddenTableState.seed`` hold it: 8 bytes, big-endian."""
    return seed.to_bytes(SEED_BYTES, "big")


def commitment(seed: int, salt: bytes) -> bytes:
    """SHA-256(LABEL ‖ seed (8 bytes, big-endian) ‖ salt): 32 bytes."""
    return hashlib.sha256(LABEL + seed_bytes(seed) + salt).digest()


def secure_salt() -> bytes:
    """A hand's salt, from the OS's secure source."""
    return secrets.token_bytes(SALT_BYTES)
