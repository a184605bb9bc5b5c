"""Composition root of the table service: builds its parts and hands them to the platform."""

from __future__ import annotations

from duelmahjong.platform.service import ServiceRuntime, ServiceSpec, run
from duelmahjong.v1 import table_pb2_grpc
from services.table import events
from services.table.api import ARRIVES_WITH, SERVICE_NAME, TableApi
from services.table.config import TableConfig
from services.table.core import TableHost


async def wire(runtime: ServiceRuntime[TableConfig]) -> None:
    await events.declare(runtime.require_bus())
    host = TableHost(runtime.config.table_capacity)
    runtime.server.add_service(
        SERVICE_NAME, table_pb2_grpc.add_TableServiceServicer_to_server, TableApi(host)
    )


SPEC = ServiceSpec(wire=wire, pending_note=ARRIVES_WITH)


def main() -> int:
    return run(TableConfig, SPEC)
