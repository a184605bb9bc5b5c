"""What the table service does on NATS, which its identity's permissions are derived from
(:mod:`duelmahjong.platform.nats_permissions`): it owns the table's events and the write-ahead log,
hears the wallet's settlements, and keeps which server owns which table in its bucket."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_permissions import BusUse
from services.table.ownership import BUCKET
from services.table.publishers import PRODUCED_STREAMS

BUS_USE = BusUse(
    "table",
    owns=PRODUCED_STREAMS,
    reads=(subjects.TABLE_LOG_STREAM,),  # a table rebuilt from its log after a crash
    subscribes=(subjects.SETTLEMENT_APPLIED,),
    buckets=(BUCKET,),
)
