"""What matchmaking does on NATS, which its identity's permissions are derived from
(:mod:`duelmahjong.platform.nats_permissions`): it hears the table servers' announcements, reads closed
and adopted tables, closes the tables of a server it declared lost (``duel.table.closed``, the one
event it publishes, on the table's stream) and keeps the fleet's state in its bucket."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_permissions import BusUse
from services.matchmaking.events import CONSUMERS
from services.matchmaking.store import BUCKET

BUS_USE = BusUse(
    "matchmaking",
    publishes=(subjects.TABLE_CLOSED,),
    ensures=(subjects.TABLE_STREAM,),
    consumers=CONSUMERS,
    subscribes=(subjects.TABLE_SERVER_ANNOUNCED,),
    buckets=(BUCKET,),
)
