"""The bus ports and host of a ``LiveTable`` played in process (tests/unit/test_table_rebuild.py,
tests/unit/test_claim_window.py): a write-ahead log that keeps its messages, services that never
answer, and a host on a clock the test moves (``Host``) or on the real one (``RealClock``)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from typing import Any

from duelmahjong.v1 import events_pb2, server_state_pb2
from services.scoring.replay import HandPointer
from services.table import wal
from services.table.metrics import TableMetrics
from services.table.ports import OpenRequest


class RecordingLog:
    """The write-ahead log as JetStream would store it: one message per step."""

    def __init__(self) -> None:
        self.messages: list[events_pb2.TableEventAppended] = []

    async def append(
        self, table_id: str, hand_id: str, records: list[tuple[int, server_state_pb2.TableLogRecord]]
    ) -> None:
        if records:
            self.messages.append(wal.step_message(table_id, hand_id, records, "test"))

    def continues(self, table_id: str, log_end: int) -> None:
        return None  # one table, one log: nothing to fence

    def forget(self, table_id: str) -> None:
        return None


class Quiet:
    """The other services: nobody listens but to hands' ends (where each hand ends in the log); the
    wallet never answers (an empty settlement is shown)."""

    def __init__(self) -> None:
        self.ended: list[HandPointer] = []

    async def publish(self, subject: str, event: Any, event_id: str) -> None:
        return None

    async def hand_ended(self, table_id: str, hand_id: str, log_position: int) -> None:
        self.ended.append(HandPointer(table_id, hand_id, log_position))

    async def table_opened(self, request: OpenRequest) -> None:
        return None

    async def table_closed(self, request: OpenRequest, reason: str, hands_played: int) -> None:
        return None

    def expect(self, hand_id: str, deliver: Any) -> None:
        return None

    def forget(self, hand_id: str) -> None:
        return None


@dataclasses.dataclass
class Host:
    """The server hosting the table: its clock is ``now_value``, moved by the test; seeds and salts
    are drawn from ``rng``."""

    rng: random.Random
    now_value: float = 0.0
    metrics: TableMetrics | None = None
    queue_size: int = 64
    settlement_wait: float = 0.0
    join_seconds: float = 60.0
    draining: bool = False
    gone: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    def now(self) -> float:
        return self.now_value

    def seed(self, table_id: str, hand_number: int) -> int:
        return self.rng.getrandbits(64)

    def salt(self, table_id: str, hand_number: int) -> bytes:
        return self.rng.randbytes(16)

    def closed(self, table_id: str) -> None:
        self.gone.set()

    def let_go(self, table_id: str) -> None:
        return None


class RealClock(Host):
    """A host on the real clock: the table's own timers run (claim windows, decisions)."""

    def now(self) -> float:
        return time.monotonic()
