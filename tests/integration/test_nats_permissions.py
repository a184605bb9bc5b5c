"""The NATS boundaries on a real server (the session's, configured by ``nats_permissions``): no one
connects anonymously or in plain text, and each service's identity can do its own job and nothing of
another's — what it may not publish is refused, never stored, and the refusal is logged and counted."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import nats
import nats.errors
import pytest
import pytest_asyncio

from duelmahjong.platform import subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.metrics import ServiceMetrics
from duelmahjong.platform.nats_permissions import TOOLS, LocalAccess, inbox_prefix, seed_file

pytestmark = pytest.mark.asyncio

Connect = Callable[[str], Awaitable[tuple[Bus, ServiceMetrics]]]
VIOLATION_LOG = "nats permissions violation: refused by the server"


@pytest.fixture
def access(nats_access: LocalAccess | None) -> LocalAccess:
    if nats_access is None:
        pytest.skip("NATS_URL names a server of your own: its identities are not this session's")
    return nats_access


@pytest_asyncio.fixture
async def connect_as(nats_server_url: str, access: LocalAccess) -> AsyncIterator[Connect]:
    """``await connect_as("table")``: a bus with that identity's seed, and its metrics."""
    opened: list[Bus] = []

    async def connect(identity: str) -> tuple[Bus, ServiceMetrics]:
        metrics = ServiceMetrics(identity)
        bus = await Bus.connect(
            nats_server_url,
            name=identity,
            metrics=metrics,
            seed_file=str(access.seed_file(identity)),
            ca_file=str(access.ca_file),
            inbox=inbox_prefix(identity),
        )
        opened.append(bus)
        return bus, metrics

    yield connect
    for bus in opened:
        await bus.close()


def _violations(metrics: ServiceMetrics, identity: str) -> float:
    return metrics.registry.get_sample_value(f"duel_{identity}_nats_permission_violations_total") or 0.0


async def _until_counted(metrics: ServiceMetrics, identity: str, at_least: float) -> None:
    for _ in range(50):  # the server's -ERR arrives on the connection's read loop
        if _violations(metrics, identity) >= at_least:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(
        f"{identity}: {at_least} violation(s) expected, {_violations(metrics, identity)} counted"
    )


async def _last_id_on(bus: Bus, stream: str, subject: str) -> str | None:
    last = await bus.last_on_subject(stream, subject)
    return None if last is None else last[1]


async def test_an_anonymous_connection_is_refused(nats_server_url: str, access: LocalAccess) -> None:
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization violation"):
        await nats.connect(
            nats_server_url,
            tls=ssl.create_default_context(cafile=str(access.ca_file)),
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=2,
        )


async def test_a_connection_without_tls_is_refused(nats_server_url: str, access: LocalAccess) -> None:
    plain = nats_server_url.replace("tls://", "nats://")
    with pytest.raises((nats.errors.Error, OSError, TimeoutError)):
        await nats.connect(
            plain,
            nkeys_seed=str(access.seed_file("table")),
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=2,
        )


async def test_a_seed_the_server_does_not_know_is_refused(
    nats_server_url: str, access: LocalAccess, tmp_path: Path
) -> None:
    stranger = seed_file(tmp_path, "stranger")  # a well-formed seed, never configured
    with pytest.raises(nats.errors.Error, match=r"(?i)authorization violation"):
        await nats.connect(
            nats_server_url,
            nkeys_seed=str(stranger),
            tls=ssl.create_default_context(cafile=str(access.ca_file)),
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=2,
        )


async def test_the_table_publishes_its_events_but_not_scorings_or_the_wallets(
    connect_as: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    table, table_metrics = await connect_as("table")
    scoring, _ = await connect_as("scoring")
    wallet, _ = await connect_as("wallet")
    await table.declare_stream(subjects.TABLE_STREAM)
    await scoring.declare_stream(subjects.SCORING_STREAM)
    await wallet.declare_stream(subjects.WALLET_STREAM)

    own = await table.publish(subjects.TABLE_OPENED, b"{}", msg_id="perm-table-own")
    assert own.stream == subjects.TABLE_STREAM.name  # its own job: stored

    forged = [  # (the owner, who may read its stream), the stream, the subject
        (scoring, subjects.SCORING_STREAM.name, subjects.HAND_SCORED),
        (wallet, subjects.WALLET_STREAM.name, subjects.SETTLEMENT_APPLIED),
    ]
    with caplog.at_level(logging.ERROR, logger="duel.bus"):
        for number, (_, _, subject) in enumerate(forged, start=1):
            with pytest.raises(nats.errors.TimeoutError):  # the server drops it: no ack ever comes
                await table.publish(subject, b"forged", msg_id=f"perm-forged-{number}", within_seconds=1.0)
            await _until_counted(table_metrics, "table", number)
    for number, (owner, stream, subject) in enumerate(forged, start=1):
        assert await _last_id_on(owner, stream, subject) != f"perm-forged-{number}"  # never stored
    refused = [r for r in caplog.records if r.getMessage() == VIOLATION_LOG]
    said = " ".join(str(getattr(record, "fields", {}).get("error", "")) for record in refused)
    assert subjects.HAND_SCORED in said and subjects.SETTLEMENT_APPLIED in said


async def test_scoring_cannot_publish_the_tables_events(connect_as: Connect) -> None:
    scoring, metrics = await connect_as("scoring")
    table, _ = await connect_as("table")
    await table.declare_stream(subjects.TABLE_STREAM)
    with pytest.raises(nats.errors.TimeoutError):
        await scoring.publish(subjects.HAND_ENDED, b"forged", msg_id="perm-hand-ended", within_seconds=1.0)
    await _until_counted(metrics, "scoring", 1)
    assert await _last_id_on(table, subjects.TABLE_STREAM.name, subjects.HAND_ENDED) != "perm-hand-ended"
    # nor append to a table's write-ahead log, which scoring only reads
    with pytest.raises(nats.errors.TimeoutError):
        await scoring.publish(
            subjects.table_log_subject("t-perm"), b"x", msg_id="perm-log", within_seconds=1.0
        )
    await _until_counted(metrics, "scoring", 2)


async def test_a_reader_cannot_change_a_stream_it_does_not_own(connect_as: Connect) -> None:
    table, _ = await connect_as("table")
    await table.declare_stream(subjects.TABLE_STREAM)
    wallet, metrics = await connect_as("wallet")
    await wallet.ensure_stream(subjects.TABLE_STREAM)  # allowed: it exists, nothing changes
    config = subjects.TABLE_STREAM.config(wallet.storage)
    config.max_age = 1.0  # what would expire every table event within a second
    with pytest.raises(nats.errors.TimeoutError):
        await wallet.client.jetstream(timeout=1.0).update_stream(config=config)
    await _until_counted(metrics, "wallet", 1)
    with pytest.raises(nats.errors.TimeoutError):
        await wallet.client.jetstream(timeout=1.0).purge_stream(subjects.TABLE_STREAM.name)
    await _until_counted(metrics, "wallet", 2)
    info = await table.js.stream_info(subjects.TABLE_STREAM.name)
    assert not info.config.max_age  # untouched


async def test_no_identity_reads_another_ones_replies_or_events_off_the_wire(connect_as: Connect) -> None:
    scoring, metrics = await connect_as("scoring")
    # a core subscription to the table's events or the wallet's inbox is refused, not delivered
    for number, subject in enumerate((f"{inbox_prefix('wallet')}.>", "duel.table.>"), start=1):
        await scoring.client.subscribe(subject)
        await _until_counted(metrics, "scoring", number)


async def test_the_tools_identity_reads_but_writes_nothing(connect_as: Connect) -> None:
    table, _ = await connect_as("table")
    await table.declare_stream(subjects.TABLE_STREAM)
    await table.publish(subjects.TABLE_OPENED, b"{}", msg_id="perm-tools-read")
    tools, metrics = await connect_as(TOOLS)
    assert await _last_id_on(tools, subjects.TABLE_STREAM.name, subjects.TABLE_OPENED) is not None
    with pytest.raises(nats.errors.TimeoutError):
        await tools.publish(subjects.TABLE_CLOSED, b"forged", msg_id="perm-tools-forged", within_seconds=1.0)
    await _until_counted(metrics, TOOLS, 1)
    with pytest.raises(nats.errors.TimeoutError):
        await tools.client.jetstream(timeout=1.0).delete_stream(subjects.TABLE_STREAM.name)
    await _until_counted(metrics, TOOLS, 2)
