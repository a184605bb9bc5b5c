"""What each identity may do on NATS, as derived from the services' BusUse: its own events, its own
streams and consumers, nothing that destroys data, and a deployment's config without the harness."""

from __future__ import annotations

import pytest

from duelmahjong.platform import subjects
from duelmahjong.platform.nats_permissions import (
    HARNESS,
    SERVICES,
    TOOLS,
    deployment_authorization,
    inbox_prefix,
    permissions,
    service_uses,
    tools_use,
)

USES = service_uses()
EVENT_PREFIXES = ("duel.table.", "duel.tablelog.", "duel.scoring.", "duel.wallet.")
# What no identity may ever do: these destroy what others rely on.
DESTRUCTIVE = ("STREAM.DELETE", "STREAM.PURGE", "CONSUMER.DELETE", "STREAM.MSG.DELETE", "SERVER.", "ACCOUNT.")


def _events(subject_list: tuple[str, ...]) -> set[str]:
    return {s for s in subject_list if s.startswith(EVENT_PREFIXES)}


def test_each_service_publishes_its_own_events_only() -> None:
    assert _events(permissions(USES["table"]).publish) == {"duel.table.>", "duel.tablelog.>"}
    assert _events(permissions(USES["scoring"]).publish) == {"duel.scoring.>"}
    assert _events(permissions(USES["wallet"]).publish) == {"duel.wallet.>"}
    # matchmaking closes a lost server's tables: that one subject of the table's, nothing else
    assert _events(permissions(USES["matchmaking"]).publish) == {subjects.TABLE_CLOSED}


@pytest.mark.parametrize("identity", (*SERVICES, TOOLS))
def test_no_identity_may_destroy_a_stream_or_a_consumer(identity: str) -> None:
    use = tools_use(USES) if identity == TOOLS else USES[identity]
    granted = permissions(use).publish
    assert not [s for s in granted if any(f"$JS.API.{verb}" in s for verb in DESTRUCTIVE)]
    assert ">" not in granted and "$JS.API.>" not in granted and "$JS.>" not in granted


@pytest.mark.parametrize("identity", SERVICES)
def test_a_service_updates_only_the_streams_and_buckets_it_owns(identity: str) -> None:
    use = USES[identity]
    owned = {s.name for s in use.owns} | {f"KV_{b}" for b in use.buckets}
    updated = {
        s.removeprefix("$JS.API.STREAM.UPDATE.")
        for s in permissions(use).publish
        if s.startswith("$JS.API.STREAM.UPDATE.")
    }
    assert updated == owned


@pytest.mark.parametrize("identity", SERVICES)
def test_a_service_reads_exactly_the_durables_it_declares_and_hears_only_on_its_inbox(identity: str) -> None:
    use = USES[identity]
    granted = permissions(use)
    pulls = {s for s in granted.publish if s.startswith("$JS.API.CONSUMER.MSG.NEXT.")}
    assert pulls == {f"$JS.API.CONSUMER.MSG.NEXT.{c.stream}.{c.durable}" for c in use.consumers}
    assert set(granted.subscribe) == {*use.subscribes, f"{inbox_prefix(identity)}.>"}


def test_the_tools_write_nothing() -> None:
    granted = permissions(tools_use(USES)).publish
    assert not _events(granted)
    # it creates only ephemeral readers (CONSUMER.CREATE.<stream>, unnamed), no stream, no durable
    changes = ("STREAM.CREATE", "UPDATE", "DURABLE", "$KV.", "$JS.ACK", "MSG.NEXT")
    assert not [s for s in granted if any(v in s for v in changes)]
    assert not [s for s in granted if s.startswith("$JS.API.CONSUMER.CREATE.") and s.count(".") > 4]


def test_a_deployment_names_every_service_and_the_tools_by_variable_and_never_the_harness() -> None:
    text = deployment_authorization()
    assert text.count('"nkey": $NATS_NKEY_') == len(SERVICES) + 1
    assert HARNESS.upper() not in text
