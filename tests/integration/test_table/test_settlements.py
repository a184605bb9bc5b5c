"""The settlement inbox on real NATS: a table server keeps only the answers its tables wait for.

Every table server hears every hand's ``SettlementApplied``; the inbox hands an expected answer to its
table once and drops the rest at once — another server's hand (foreign), or a hand of this server's
whose table stopped waiting (unclaimed) — so what it holds never grows with the fleet's traffic.
"""

from __future__ import annotations

import asyncio

import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.v1 import events_pb2
from services.table.metrics import TableMetrics
from services.table.settlements import GAVE_UP_REMEMBERED, SettlementInbox

pytestmark = pytest.mark.asyncio


def _applied(table_id: str, hand: int, *, hand_transaction: bool = True) -> bytes:
    return events_pb2.SettlementApplied(
        table_id=table_id, hand_id=f"{table_id}-h{hand}", hand_transaction=hand_transaction
    ).SerializeToString()


def _count(metrics: ServiceMetrics, what: str) -> float:
    return metrics.registry.get_sample_value(f"duel_table_settlements_{what}_total") or 0.0


async def test_only_expected_answers_are_kept_and_each_is_delivered_once(bus: Bus) -> None:
    service_metrics = ServiceMetrics("table")
    hosted = {"t-here"}
    inbox = SettlementInbox(bus, hosts=hosted.__contains__, metrics=TableMetrics.create(service_metrics))
    await inbox.start()
    delivered: list[events_pb2.SettlementApplied] = []
    heard = asyncio.Event()
    inbox.expect("t-here-h1", delivered.append)
    inbox.expect("t-here-h2", delivered.append)
    inbox.forget("t-here-h2")  # its table gave up waiting
    assert inbox.waiting == 1

    publish = bus.client.publish
    await publish(subjects.SETTLEMENT_APPLIED, _applied("t-here", 1, hand_transaction=False))  # a fee's
    await publish(subjects.SETTLEMENT_APPLIED, _applied("t-here", 1))
    await publish(subjects.SETTLEMENT_APPLIED, _applied("t-here", 1))  # redelivered: nobody waits now
    await publish(subjects.SETTLEMENT_APPLIED, _applied("t-here", 2))  # after its table gave up
    for n in range(50):
        await publish(subjects.SETTLEMENT_APPLIED, _applied(f"t-elsewhere-{n}", 1))
    inbox.expect("t-here-h3", lambda event: heard.set())  # the last one: one subscription keeps order
    await publish(subjects.SETTLEMENT_APPLIED, _applied("t-here", 3))
    await asyncio.wait_for(heard.wait(), 5)
    assert [(e.hand_id, e.hand_transaction) for e in delivered] == [("t-here-h1", True)]
    assert _count(service_metrics, "unclaimed") == 2
    assert _count(service_metrics, "foreign") == 50
    assert inbox.waiting == 0


async def test_a_closed_tables_late_answer_counts_unclaimed_within_a_bounded_memory(bus: Bus) -> None:
    service_metrics = ServiceMetrics("table")
    inbox = SettlementInbox(bus, hosts=lambda table_id: False, metrics=TableMetrics.create(service_metrics))
    # More hands given up than remembered: the oldest are forgotten, and their late answers then count
    # as foreign (their tables are gone from this server too).
    for n in range(GAVE_UP_REMEMBERED + 10):
        inbox.expect(f"t-{n}-h1", lambda event: None)
        inbox.forget(f"t-{n}-h1")
    for n in (0, GAVE_UP_REMEMBERED + 9):
        inbox.received(events_pb2.SettlementApplied.FromString(_applied(f"t-{n}", 1)))
    assert _count(service_metrics, "unclaimed") == 1
    assert _count(service_metrics, "foreign") == 1
    assert inbox.waiting == 0
