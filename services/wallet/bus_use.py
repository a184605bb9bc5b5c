"""What the wallet does on NATS, which its identity's permissions are derived from
(:mod:`duelmahjong.platform.nats_permissions`): it owns the settlements' stream and reads every
prestige-moving event with a durable consumer of its own."""

from __future__ import annotations

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_permissions import BusUse
from services.wallet.sources import SOURCES

BUS_USE = BusUse(
    "wallet",
    owns=(subjects.WALLET_STREAM,),
    ensures=tuple(dict.fromkeys(source.stream for source in SOURCES)),
    consumers=tuple(source.consumer() for source in SOURCES),
)
