"""Composition root of the wallet service: config → the ledger and the stores beside it → core → gRPC
API, settlement consumer and ledger audit."""

from __future__ import annotations

import socket
from pathlib import Path

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import wallet_pb2_grpc
from services.wallet.api import PUBLIC_METHODS, SERVICE_NAME, WalletApi
from services.wallet.config import WalletConfig
from services.wallet.core import WalletCore
from services.wallet.events import SettlementConsumer
from services.wallet.leaderboard import Leaderboard
from services.wallet.ledger_store import LedgerStore
from services.wallet.monitor import LedgerAudit
from services.wallet.players import PlayerStore
from services.wallet.rating_board import RatingBoard
from services.wallet.sharing import DataSharing
from services.wallet.sharing_store import SharingStore
from services.wallet.sources import Namespace

MIGRATIONS = Path(__file__).parent / "migrations"


async def wire(runtime: ServiceRuntime[WalletConfig]) -> None:
    config = runtime.config
    pool = runtime.require_db()
    ledger = LedgerStore(pool, runtime.metrics)
    core = WalletCore(ledger, PlayerStore(pool, ledger), Leaderboard(pool), RatingBoard(pool), config)
    runtime.server.add_service(
        SERVICE_NAME,
        wallet_pb2_grpc.add_WalletServiceServicer_to_server,
        WalletApi(core, DataSharing(SharingStore(pool))),
    )
    consumer = SettlementConsumer(
        runtime.require_bus(),
        ledger,
        runtime.metrics,
        workers=config.consumer_workers,
        ack_wait_seconds=config.ack_wait_seconds,
        producer=f"wallet/{socket.gethostname()}",
        namespace=Namespace(config.event_namespace),
    )
    await consumer.declare()  # streams and durables exist before the service reports SERVING
    runtime.spawn(consumer.run(runtime.stopping), name="settlement-consumer")
    runtime.spawn(LedgerAudit(pool, runtime.metrics).run(config.audit_interval_seconds), name="ledger-audit")


SPEC = ServiceSpec(wire=wire, migrations=MIGRATIONS, public_methods=PUBLIC_METHODS)


def main() -> int:
    return run(WalletConfig, SPEC)
