"""The identifiers the services exchange, and the one rule each of them follows.

Every service checks the ids it is given against these rules before they reach a key, a subject or
SQL, so a value one service accepts is one every other service accepts too. Whole-string matches
only (``fullmatch``): a ``$`` anchor would let a trailing newline through.
"""

from __future__ import annotations

import re

# Players, pairings, rooms, hands, requests. No ':' — ids end idempotency keys
# ("hold:<pairing>:<player>"), so two different commands can never share a key.
_ENTITY_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
ENTITY_ID_RULE = "1 to 64 letters, digits, '_', '.' or '-'"

# A table id names a NATS subject token (its write-ahead log), so it holds no '.' either.
_TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
TABLE_ID_RULE = "1 to 64 letters, digits, '_' or '-' (it names a NATS subject)"

_SUBJECT_TOKEN = re.compile(r"[A-Za-z0-9_-]+")

# The house bots matchmaking seats; their ids are the wallet's, created on first use.
_BOT_ID = re.compile(r"bot-[a-z0-9]{1,32}")
BOT_ID_RULE = "'bot-' then 1 to 32 lowercase letters or digits"


def is_entity_id(value: str) -> bool:
    return _ENTITY_ID.fullmatch(value) is not None


def is_table_id(value: str) -> bool:
    return _TABLE_ID.fullmatch(value) is not None


def is_subject_token(value: str) -> bool:
    return _SUBJECT_TOKEN.fullmatch(value) is not None


def is_bot_id(value: str) -> bool:
    return _BOT_ID.fullmatch(value) is not None
