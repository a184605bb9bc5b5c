"""Where every event of ``events.proto`` travels: JetStream streams and subjects, in one place.

Subjects read ``duel.<producer>.<event>``; each producing service owns one stream capturing
``duel.<producer>.>``. A table's write-ahead log is a subject per table in its own stream, so a table
can be replayed by reading one subject. Producers declare their streams at start; consumers declare
their durable consumers (see :mod:`duelmahjong.platform.bus`). The event → subject table below is the
contract's transport half: the message is in ``events.proto``, the address is here.

>>> table_log_subject("t-42")
'duel.tablelog.t-42'
>>> SUBJECT_OF_EVENT["HandScored"]
'duel.scoring.hand_scored'
>>> table_closed_id("t-42")
'closed:t-42'
>>> table_adopted_id("t-42", "9f0c")
'adopted:t-42:9f0c'
"""

from __future__ import annotations

from duelmahjong.platform import ids
from duelmahjong.platform.streams import StreamSpec

# table → scoring, wallet, matchmaking
HAND_ENDED = "duel.table.hand_ended"
FEE_CHARGED = "duel.table.fee_charged"
EXCHANGE_CHARGED = "duel.table.exchange_charged"
ITEM_USED = "duel.table.item_used"
GUESS_RESOLVED = "duel.table.guess_resolved"
TABLE_SERVER_ANNOUNCED = "duel.table.server_announced"
TABLE_OPENED = "duel.table.opened"
TABLE_CLOSED = "duel.table.closed"
TABLE_ADOPTED = "duel.table.adopted"
# scoring → wallet, table
HAND_SCORED = "duel.scoring.hand_scored"
ESCAPE_PENALTY = "duel.scoring.escape_penalty"
REPLAY_REJECTED = "duel.scoring.replay_rejected"
# wallet → table, matchmaking
SETTLEMENT_APPLIED = "duel.wallet.settlement_applied"

TABLE_LOG_PREFIX = "duel.tablelog"

TABLE_STREAM = StreamSpec("DUEL_TABLE", ("duel.table.>",))
# The log is what a table is rebuilt from after a crash and what scoring replays; kept for disputes and
# replays for TABLE_LOG_RETENTION_DAYS (the declared default here; the deployment's setting wins).
TABLE_LOG_RETENTION_DAYS = 30.0
TABLE_LOG_STREAM = StreamSpec(
    "DUEL_TABLE_LOG",
    (f"{TABLE_LOG_PREFIX}.>",),
    max_age_seconds=TABLE_LOG_RETENTION_DAYS * 86400,
    allow_direct=True,  # scoring reads a hand's log with batched direct gets
)
SCORING_STREAM = StreamSpec("DUEL_SCORING", ("duel.scoring.>",))
WALLET_STREAM = StreamSpec("DUEL_WALLET", ("duel.wallet.>",))

SUBJECT_OF_EVENT: dict[str, str] = {
    "HandEnded": HAND_ENDED,
    "FeeCharged": FEE_CHARGED,
    "ExchangeCharged": EXCHANGE_CHARGED,
    "ItemUsed": ITEM_USED,
    "GuessResolved": GUESS_RESOLVED,
    "TableServerAnnounced": TABLE_SERVER_ANNOUNCED,
    "TableOpened": TABLE_OPENED,
    "TableClosed": TABLE_CLOSED,
    "TableAdopted": TABLE_ADOPTED,
    "HandScored": HAND_SCORED,
    "EscapePenalty": ESCAPE_PENALTY,
    "ReplayRejected": REPLAY_REJECTED,
    "SettlementApplied": SETTLEMENT_APPLIED,
}


def table_log_subject(table_id: str) -> str:
    """The subject of one table's write-ahead log (``TableEventAppended`` records)."""
    if not ids.is_subject_token(table_id):
        raise ValueError(f"table id {table_id!r} cannot be a subject token (letters, digits, _ and - only)")
    return f"{TABLE_LOG_PREFIX}.{table_id}"


def table_closed_id(table_id: str) -> str:
    """The event id (JetStream message id) of a table's ``TableClosed``, whoever publishes it: its table
    server, or matchmaking when that server was lost. One id, so two closes of a table are one."""
    return f"closed:{table_id}"


def table_adopted_id(table_id: str, incarnation: str) -> str:
    """The event id of a table's ``TableAdopted`` by the process ``incarnation``: one adoption of a
    table by one process is one event, however often it is published."""
    return f"adopted:{table_id}:{incarnation}"
