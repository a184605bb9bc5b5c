"""What scoring does on NATS, which its identity's permissions are derived from
(:mod:`duelmahjong.platform.nats_permissions`): it owns its verdicts' stream, reads ended hands, closed
tables and applied settlements, and reads a hand's write-ahead log with direct gets."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_permissions import BusUse
from services.scoring.archive_events import SETTLEMENTS_APPLIED, TABLES_CLOSED
from services.scoring.events import CONSUMED_STREAMS, HANDS_ENDED

BUS_USE = BusUse(
    "scoring",
    owns=(subjects.SCORING_STREAM,),
    ensures=CONSUMED_STREAMS,
    consumers=(HANDS_ENDED, TABLES_CLOSED, SETTLEMENTS_APPLIED),
    direct_gets=(subjects.TABLE_LOG_STREAM,),
)
