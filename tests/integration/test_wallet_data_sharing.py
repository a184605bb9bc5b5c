"""Players' consent to share their hands (SetDataSharing, GetDataSharing, ListDataSharing) on the
wallet as its process runs it, over real gRPC and Postgres (as the wallet's own role): off by default;
a player sets their own and no one else's (nor may an admin or a service set it for them); each change
is one audit row with its time; only admin and service tokens list who shares; ``duel consent``
shows and sets it as the player."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.platform import auth
from duelmahjong.platform.auth import Role
from duelmahjong.platform.pki import LocalAuthority
from duelmahjong.platform.service import ServiceRuntime
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import wallet_pb2, wallet_pb2_grpc
from services.wallet.config import WalletConfig
from tests.cli import duel

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

W = wallet_pb2


@pytest_asyncio.fixture
async def stub(
    wallet_service: ServiceRuntime[WalletConfig], client_tls: ClientTls
) -> AsyncIterator[wallet_pb2_grpc.WalletServiceStub]:
    async with client_tls.channel(wallet_service.server.address) as channel:
        yield wallet_pb2_grpc.WalletServiceStub(channel)


async def login(stub: wallet_pb2_grpc.WalletServiceStub, name: str) -> tuple[str, Any]:
    reply = await stub.GuestLogin(W.GuestLoginRequest(display_name=name))
    return reply.player_id, auth.bearer_metadata(reply.session.token)


async def refused(code: grpc.StatusCode, call: Any) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    assert raised.value.code() == code, raised.value.details()
    assert raised.value.details()
    return str(raised.value.details())


async def audit_rows(database_url: str, player_id: str) -> list[tuple[bool, str]]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT share_hands, changed_by, changed_at FROM wallet.data_sharing WHERE player_id = $1 "
            "ORDER BY id",
            player_id,
        )
    finally:
        await conn.close()
    assert all(row["changed_at"] is not None for row in rows)
    return [(row["share_hands"], row["changed_by"]) for row in rows]


async def test_sharing_is_off_until_the_player_turns_it_on_and_each_change_is_audited(
    stub: wallet_pb2_grpc.WalletServiceStub, wallet_database_url: str
) -> None:
    ann, ann_token = await login(stub, "ann")
    got = await stub.GetDataSharing(W.GetDataSharingRequest(), metadata=ann_token)
    assert (got.sharing.player_id, got.sharing.share_hands, got.sharing.HasField("changed_at")) == (
        ann,
        False,
        False,
    )

    on = await stub.SetDataSharing(W.SetDataSharingRequest(share_hands=True), metadata=ann_token)
    assert on.sharing.player_id == ann and on.sharing.share_hands and on.sharing.HasField("changed_at")
    again = await stub.SetDataSharing(
        W.SetDataSharingRequest(player_id=ann, share_hands=True), metadata=ann_token
    )
    assert again.sharing == on.sharing  # no change: no new row, the same time
    read = await stub.GetDataSharing(W.GetDataSharingRequest(player_id=ann), metadata=ann_token)
    assert read.sharing == on.sharing
    assert await audit_rows(wallet_database_url, ann) == [(True, ann)]

    off = await stub.SetDataSharing(W.SetDataSharingRequest(share_hands=False), metadata=ann_token)
    assert not off.sharing.share_hands
    assert off.sharing.changed_at.ToDatetime() >= on.sharing.changed_at.ToDatetime()
    assert await audit_rows(wallet_database_url, ann) == [(True, ann), (False, ann)]


async def test_only_the_player_sets_their_own_sharing(
    stub: wallet_pb2_grpc.WalletServiceStub, issue: Any, wallet_database_url: str
) -> None:
    ann, _ann_token = await login(stub, "ann")
    _bob, bob_token = await login(stub, "bob")
    denied = grpc.StatusCode.PERMISSION_DENIED
    for who in (bob_token, issue("ops", Role.ADMIN), issue("matchmaking", Role.SERVICE)):
        await refused(
            denied,
            stub.SetDataSharing(W.SetDataSharingRequest(player_id=ann, share_hands=True), metadata=who),
        )
    # An admin's or a service's own "caller" is no player either.
    await refused(
        denied,
        stub.SetDataSharing(W.SetDataSharingRequest(share_hands=True), metadata=issue("ops", Role.ADMIN)),
    )
    await refused(denied, stub.GetDataSharing(W.GetDataSharingRequest(player_id=ann), metadata=bob_token))
    assert await audit_rows(wallet_database_url, ann) == []
    # The servers read anyone's.
    read = await stub.GetDataSharing(
        W.GetDataSharingRequest(player_id=ann), metadata=issue("ops", Role.ADMIN)
    )
    assert (read.sharing.player_id, read.sharing.share_hands) == (ann, False)
    await refused(
        grpc.StatusCode.NOT_FOUND,
        stub.GetDataSharing(
            W.GetDataSharingRequest(player_id="nobody-here"), metadata=issue("ops", Role.ADMIN)
        ),
    )
    await refused(
        grpc.StatusCode.INVALID_ARGUMENT,
        stub.GetDataSharing(W.GetDataSharingRequest(player_id="a:b"), metadata=issue("ops", Role.ADMIN)),
    )


async def test_the_exporter_lists_who_shares_of_the_players_asked_or_of_everyone(
    stub: wallet_pb2_grpc.WalletServiceStub, issue: Any
) -> None:
    players = [await login(stub, f"p{n}") for n in range(5)]
    for _player_id, token in players[:3]:
        await stub.SetDataSharing(W.SetDataSharingRequest(share_hands=True), metadata=token)
    await stub.SetDataSharing(W.SetDataSharingRequest(share_hands=False), metadata=players[0][1])
    sharing = sorted(player_id for player_id, _ in players[1:3])
    admin = issue("ops", Role.ADMIN)

    asked = [p for p, _ in players] + ["nobody-here"]
    listed = await stub.ListDataSharing(W.ListDataSharingRequest(player_ids=asked), metadata=admin)
    assert [p.player_id for p in listed.players] == sharing and not listed.next_page_token
    assert all(p.share_hands and p.HasField("changed_at") for p in listed.players)

    everyone: list[str] = []
    token = ""
    while True:
        page = await stub.ListDataSharing(
            W.ListDataSharingRequest(page_size=1, page_token=token), metadata=issue("mm", Role.SERVICE)
        )
        everyone += [p.player_id for p in page.players]
        token = page.next_page_token
        if not token:
            break
    assert everyone == sharing

    invalid = grpc.StatusCode.INVALID_ARGUMENT
    await refused(
        grpc.StatusCode.PERMISSION_DENIED,
        stub.ListDataSharing(W.ListDataSharingRequest(), metadata=players[1][1]),
    )
    await refused(
        invalid, stub.ListDataSharing(W.ListDataSharingRequest(player_ids=["x"] * 1001), metadata=admin)
    )
    await refused(
        invalid, stub.ListDataSharing(W.ListDataSharingRequest(player_ids=["a\tb"]), metadata=admin)
    )
    await refused(invalid, stub.ListDataSharing(W.ListDataSharingRequest(page_size=5000), metadata=admin))
    await refused(invalid, stub.ListDataSharing(W.ListDataSharingRequest(page_token="a:b"), metadata=admin))
    await refused(
        invalid, stub.ListDataSharing(W.ListDataSharingRequest(player_ids=["x"], page_size=2), metadata=admin)
    )


async def test_duel_consent_shows_and_sets_the_players_own_setting(
    wallet_service: ServiceRuntime[WalletConfig],
    stub: wallet_pb2_grpc.WalletServiceStub,
    local_ca: LocalAuthority,
    tmp_path: Path,
) -> None:
    reply = await stub.GuestLogin(W.GuestLoginRequest(display_name="cli"))
    address = wallet_service.server.address
    # matchmaking is never called: the command needs the wallet only, but takes both addresses as
    # every client command does.
    where = ["--wallet", address, "--matchmaking", address, "--ca-file", str(local_ca.ca_cert)]
    where += ["--state-file", str(tmp_path / "none.json"), "--config", str(tmp_path / "guest.json")]
    token = ["--token", reply.session.token]

    code, out, err = await duel("consent", *token, *where)
    assert (code, out.strip()) == (
        0,
        "sharing your hands for research: off (never chosen: your hands are not shared)",
    ), err
    code, out, err = await duel("consent", "on", *token, *where)
    assert code == 0 and out.startswith("sharing your hands for research: on (since "), err
    got = await stub.GetDataSharing(
        W.GetDataSharingRequest(), metadata=auth.bearer_metadata(reply.session.token)
    )
    assert got.sharing.share_hands
    code, out, err = await duel("consent", "off", *token, *where)
    assert code == 0 and out.startswith("sharing your hands for research: off (since "), err

    code, out, err = await duel("consent", "on", *where)  # no token, no remembered guest
    assert code == 1 and "no session" in err and "duel play" in err
    code, out, err = await duel("consent", "on", "--token", "not.a.token", *where)
    assert code == 1 and "UNAUTHENTICATED" in err
