"""The wallet service as its process runs it (gRPC, health, bus, migrations), over real channels."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import grpc
import grpc.aio
import pytest
import pytest_asyncio

from duelmahjong.platform import auth, subjects
from duelmahjong.platform.auth import Role
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.service import ServiceRuntime
from duelmahjong.platform.tls import ClientTls
from duelmahjong.v1 import events_pb2, rules_pb2, wallet_pb2, wallet_pb2_grpc
from services.wallet.audit import audit_ledger
from services.wallet.config import WalletConfig
from services.wallet.main import SPEC
from services.wallet.sources import Namespace

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

Bearer = Callable[..., tuple[tuple[str, str]]]


class Client:
    def __init__(self, stub: wallet_pb2_grpc.WalletServiceStub, issue: Bearer) -> None:
        self.stub = stub
        self.issue = issue

    async def login(self, name: str) -> tuple[str, Any]:
        reply = await self.stub.GuestLogin(wallet_pb2.GuestLoginRequest(display_name=name))
        return reply.player_id, auth.bearer_metadata(reply.session.token)

    async def balance(self, player_id: str, metadata: Any) -> wallet_pb2.GetBalanceResponse:
        return await self.stub.GetBalance(
            wallet_pb2.GetBalanceRequest(player_id=player_id), metadata=metadata
        )


@pytest_asyncio.fixture
async def client(
    wallet_service: ServiceRuntime[WalletConfig], issue: Bearer, client_tls: ClientTls
) -> AsyncIterator[Client]:
    async with client_tls.channel(wallet_service.server.address) as channel:
        yield Client(wallet_pb2_grpc.WalletServiceStub(channel), issue)


async def expect(code: grpc.StatusCode, call: Any) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    assert raised.value.code() == code, raised.value.details()
    assert raised.value.details()  # always a readable message
    return str(raised.value.details())


async def test_guest_login_grants_the_starting_prestige_and_a_level(client: Client) -> None:
    player_id, me = await client.login("小明")
    balance = await client.balance("", me)
    assert (balance.player_id, balance.balance, balance.held, balance.available) == (player_id, 1000, 0, 1000)
    assert (balance.level, balance.level_name) == (2, "入门")
    history = await client.stub.ListHistory(wallet_pb2.ListHistoryRequest(), metadata=me)
    assert [(e.reason, e.amount) for e in history.entries] == [(rules_pb2.POSTING_REASON_GRANT, 1000)]
    await expect(grpc.StatusCode.INVALID_ARGUMENT, client.stub.GuestLogin(wallet_pb2.GuestLoginRequest()))


async def test_refresh_tokens_rotate_and_are_used_once(client: Client) -> None:
    login = await client.stub.GuestLogin(wallet_pb2.GuestLoginRequest(display_name="a"))
    old = login.session.refresh_token
    renewed = await client.stub.RefreshToken(wallet_pb2.RefreshTokenRequest(refresh_token=old))
    assert renewed.player_id == login.player_id and renewed.session.refresh_token != old
    balance = await client.balance("", auth.bearer_metadata(renewed.session.token))
    assert balance.player_id == login.player_id
    reused = client.stub.RefreshToken(wallet_pb2.RefreshTokenRequest(refresh_token=old))
    assert "already used" in await expect(grpc.StatusCode.UNAUTHENTICATED, reused)


async def test_a_players_token_cannot_read_or_move_anothers_prestige(client: Client) -> None:
    alice, alice_token = await client.login("alice")
    bob, _bob_token = await client.login("bob")
    denied = grpc.StatusCode.PERMISSION_DENIED
    await expect(denied, client.balance(bob, alice_token))
    await expect(
        denied, client.stub.ListHistory(wallet_pb2.ListHistoryRequest(player_id=bob), metadata=alice_token)
    )
    await expect(
        denied, client.stub.GetInventory(wallet_pb2.GetInventoryRequest(player_id=bob), metadata=alice_token)
    )
    hold = wallet_pb2.PlaceHoldRequest(player_id=bob, pairing_id="p1", amount=500)
    await expect(denied, client.stub.PlaceHold(hold, metadata=alice_token))
    grant = wallet_pb2.AdminGrantRequest(player_id=alice, amount=10**6, reason="me", request_id="r1")
    await expect(denied, client.stub.AdminGrant(grant, metadata=alice_token))
    assert (await client.balance(alice, alice_token)).balance == 1000


async def test_expired_forged_and_missing_tokens_are_unauthenticated(
    client: Client, token_secret: str
) -> None:
    player_id, _ = await client.login("carol")
    past = datetime.now(UTC) - timedelta(hours=2)
    expired = auth.issue_token(token_secret, player_id=player_id, ttl=timedelta(hours=1), now=past)
    forged = auth.issue_token("f" * 32 + token_secret, player_id=player_id, role=Role.ADMIN)
    unauthenticated = grpc.StatusCode.UNAUTHENTICATED
    for metadata in (auth.bearer_metadata(expired), auth.bearer_metadata(forged), None):
        await expect(unauthenticated, client.balance(player_id, metadata))


async def test_a_malformed_token_is_refused_in_the_services_words(client: Client) -> None:
    """A token whose header is no UTF-8 text is told so plainly, not with the JWT library's words."""
    for token in ("t7e3t7e3.e30.x", "not.a.token", "garbage"):
        details = await expect(
            grpc.StatusCode.UNAUTHENTICATED, client.balance("", auth.bearer_metadata(token))
        )
        assert (
            details == "the session token is malformed: it is not a token this service issued; log in again"
        )


async def test_admin_grant_is_audited_idempotent_and_checked(client: Client, wallet_service: Any) -> None:
    player_id, me = await client.login("dave")
    admin = client.issue("ops-1", Role.ADMIN)
    stack = wallet_pb2.ItemStack(item=rules_pb2.ITEM_KIND_GRAND_SHIFT, count=2)
    grant = wallet_pb2.AdminGrantRequest(
        player_id=player_id, amount=500, items=[stack], reason="event prize", request_id="r1"
    )
    first = await client.stub.AdminGrant(grant, metadata=admin)
    again = await client.stub.AdminGrant(grant, metadata=admin)
    assert first.transaction_id == again.transaction_id and first.balance == again.balance == 1500
    assert (await client.balance("", me)).balance == 1500
    inventory = await client.stub.GetInventory(wallet_pb2.GetInventoryRequest(), metadata=me)
    assert [(s.item, s.count) for s in inventory.items] == [(rules_pb2.ITEM_KIND_GRAND_SHIFT, 2)]
    audit = await wallet_service.db.fetchrow(
        "SELECT actor, reason FROM wallet.transactions WHERE idempotency_key = 'grant:admin:r1'"
    )
    assert tuple(audit) == ("ops-1", "event prize")

    burn = wallet_pb2.AdminGrantRequest(player_id=player_id, amount=-5000, reason="too much", request_id="r2")
    await expect(grpc.StatusCode.FAILED_PRECONDITION, client.stub.AdminGrant(burn, metadata=admin))
    nobody = wallet_pb2.AdminGrantRequest(player_id="nobody", amount=5, reason="x", request_id="r3")
    await expect(grpc.StatusCode.NOT_FOUND, client.stub.AdminGrant(nobody, metadata=admin))
    no_reason = wallet_pb2.AdminGrantRequest(player_id=player_id, amount=5, request_id="r4")
    await expect(grpc.StatusCode.INVALID_ARGUMENT, client.stub.AdminGrant(no_reason, metadata=admin))


async def test_history_pages_newest_first(client: Client) -> None:
    player_id, me = await client.login("erin")
    admin = client.issue("ops-1", Role.ADMIN)
    for n in range(1, 5):
        grant = wallet_pb2.AdminGrantRequest(
            player_id=player_id, amount=n, reason="paging", request_id=f"page-{n}"
        )
        await client.stub.AdminGrant(grant, metadata=admin)
    seen: list[int] = []
    token = ""
    while True:
        page = await client.stub.ListHistory(
            wallet_pb2.ListHistoryRequest(page_size=2, page_token=token), metadata=me
        )
        seen.extend(entry.amount for entry in page.entries)
        token = page.next_page_token
        if not token:
            break
    assert seen == [4, 3, 2, 1, 1000]
    bad = wallet_pb2.ListHistoryRequest(page_token="xyz")
    await expect(grpc.StatusCode.INVALID_ARGUMENT, client.stub.ListHistory(bad, metadata=me))
    await expect(
        grpc.StatusCode.INVALID_ARGUMENT,
        client.stub.ListHistory(wallet_pb2.ListHistoryRequest(page_size=500), metadata=me),
    )


async def test_leaderboard_top_and_around_me(client: Client) -> None:
    admin = client.issue("ops-1", Role.ADMIN)
    players = []
    for n in range(6):
        player_id, token = await client.login(f"p{n}")
        grant = wallet_pb2.AdminGrantRequest(
            player_id=player_id, amount=100 * n + 1, reason="rank", request_id=f"rank-{n}"
        )
        await client.stub.AdminGrant(grant, metadata=admin)
        players.append((player_id, token))
    top = await client.stub.GetLeaderboard(
        wallet_pb2.GetLeaderboardRequest(scope=wallet_pb2.LEADERBOARD_SCOPE_TOP, limit=3),
        metadata=players[0][1],
    )
    assert [e.display_name for e in top.entries] == ["p5", "p4", "p3"]
    assert [e.rank for e in top.entries] == [1, 2, 3]
    around = wallet_pb2.GetLeaderboardRequest(scope=wallet_pb2.LEADERBOARD_SCOPE_AROUND_ME, limit=1)
    mine = await client.stub.GetLeaderboard(around, metadata=players[2][1])
    assert [(e.display_name, e.rank, e.prestige) for e in mine.entries] == [
        ("p3", 3, 1301),
        ("p2", 4, 1201),
        ("p1", 5, 1101),
    ]


async def test_holds_and_a_hand_scored_event_over_the_running_service(
    client: Client, wallet_service: ServiceRuntime[WalletConfig], bus: Bus
) -> None:
    winner, winner_token = await client.login("winner")
    loser, loser_token = await client.login("loser")
    matchmaking = client.issue("matchmaking", Role.SERVICE)
    for player_id in (winner, loser):
        hold = wallet_pb2.PlaceHoldRequest(player_id=player_id, pairing_id="pair-1", amount=510, fee=10)
        assert (await client.stub.PlaceHold(hold, metadata=matchmaking)).available == 490
    too_much = wallet_pb2.PlaceHoldRequest(player_id=loser, pairing_id="pair-2", amount=5000)
    await expect(grpc.StatusCode.FAILED_PRECONDITION, client.stub.PlaceHold(too_much, metadata=matchmaking))
    own = wallet_pb2.PlaceHoldRequest(player_id=loser, pairing_id="pair-3", amount=100)
    await expect(grpc.StatusCode.PERMISSION_DENIED, client.stub.PlaceHold(own, metadata=loser_token))

    namespace = Namespace(wallet_service.config.event_namespace)
    applied: asyncio.Queue[events_pb2.SettlementApplied] = asyncio.Queue()

    async def collect(message: Any) -> None:
        await applied.put(events_pb2.SettlementApplied.FromString(message.data))

    subscription = await bus.client.subscribe(namespace.subject(subjects.SETTLEMENT_APPLIED), cb=collect)
    # As scored: 4 fan x 16 x 10 = 640 (H1), uncapped; the room fee 10 each. The wallet charges the
    # fees (from the holds' reserves), then caps the transfer by the carries: min(640, 500, 500) = 500.
    transfer = rules_pb2.Transfer(from_player_id=loser, to_player_id=winner, amount=640)
    scored = events_pb2.HandScored(
        envelope=events_pb2.EventEnvelope(event_id="scored-h1", producer="test"),
        table_id="t1",
        hand_id="h1",
        settlement=rules_pb2.Settlement(hand_id="h1", total_fan=4, fan_amount=640, transfer=transfer, fee=10),
        player_ids=[winner, loser],
        profile=rules_pb2.PROFILE_DUEL,
    )
    for copy in ("a", "b"):  # delivered twice (a redelivery beyond JetStream's duplicate window)
        await bus.publish(
            namespace.subject(subjects.HAND_SCORED), scored.SerializeToString(), msg_id=f"scored-h1-{copy}"
        )
    result = await asyncio.wait_for(applied.get(), timeout=20)
    again = await asyncio.wait_for(applied.get(), timeout=20)
    await subscription.unsubscribe()
    assert result.source_event_id == "scored-h1" and result.hand_id == "h1" and not result.rejected_reason
    assert {b.account: b.balance for b in result.balances} == {
        f"player:{winner}": 1490,
        f"player:{loser}": 490,
    }
    applied_settlement = result.settlement  # what moved: the seats are shown exactly this
    assert (applied_settlement.fan_amount, applied_settlement.total_fan) == (640, 4)
    assert applied_settlement.transfer.amount == 500 and applied_settlement.capped_by_carry
    hand, fee = rules_pb2.POSTING_REASON_HAND_TRANSFER, rules_pb2.POSTING_REASON_FEE
    assert [(p.account, p.amount, p.reason) for p in applied_settlement.postings] == sorted(
        [
            (f"player:{winner}", -10, fee),
            (f"player:{loser}", -10, fee),
            ("house:fees", 10, fee),
            ("house:fees", 10, fee),
            (f"player:{winner}", 500, hand),
            (f"player:{loser}", -500, hand),
        ],
        key=lambda p: (p[2] != fee, p[0], p[1]),
    )
    # The redelivery applied nothing more and reports the same transaction, balances and settlement.
    assert (again.transaction_id, again.envelope.event_id) == (
        result.transaction_id,
        result.envelope.event_id,
    )
    assert again.settlement == result.settlement and list(again.balances) == list(result.balances)
    # Both seats' ratings moved once, in the hand's transaction; the redelivery reports the same.
    assert [(r.seat, r.player_id) for r in result.ratings] == [
        (rules_pb2.SEAT_FIRST, winner),
        (rules_pb2.SEAT_SECOND, loser),
    ]
    assert list(again.ratings) == list(result.ratings)
    won, lost = result.ratings
    assert won.after.rating > won.before.rating == 1500 == lost.before.rating > lost.after.rating
    assert won.after.hands_rated == 1 and won.after.profile == rules_pb2.PROFILE_DUEL
    for change, token in ((won, winner_token), (lost, loser_token)):
        mine = await client.stub.GetRating(wallet_pb2.GetRatingRequest(), metadata=token)
        assert mine.player_id == change.player_id
        assert {r.profile: r for r in mine.ratings}[rules_pb2.PROFILE_DUEL] == change.after

    released = wallet_pb2.ReleaseHoldRequest(player_id=loser, pairing_id="pair-1")
    await expect(grpc.StatusCode.PERMISSION_DENIED, client.stub.ReleaseHold(released, metadata=loser_token))
    assert (await client.stub.ReleaseHold(released, metadata=matchmaking)).available == 490
    winner_balance = await client.balance("", winner_token)
    assert (winner_balance.balance, winner_balance.held) == (1490, 1000)  # the carry grew by the win


async def test_a_refused_event_is_reported_once_with_its_reason(
    client: Client, wallet_service: ServiceRuntime[WalletConfig], bus: Bus
) -> None:
    player_id, _ = await client.login("frank")
    namespace = Namespace(wallet_service.config.event_namespace)
    applied: asyncio.Queue[events_pb2.SettlementApplied] = asyncio.Queue()

    async def collect(message: Any) -> None:
        await applied.put(events_pb2.SettlementApplied.FromString(message.data))

    subscription = await bus.client.subscribe(namespace.subject(subjects.SETTLEMENT_APPLIED), cb=collect)
    used = events_pb2.ItemUsed(
        envelope=events_pb2.EventEnvelope(event_id="item-t1-4", producer="test"),
        table_id="t1",
        hand_id="h1",
        sequence=4,
        player_id=player_id,
        item=rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY,
    )
    for copy in ("a", "b"):  # delivered twice: refused once, the same answer again, nothing moved
        await bus.publish(
            namespace.subject(subjects.ITEM_USED), used.SerializeToString(), msg_id=f"item-t1-4-{copy}"
        )
    refused = await asyncio.wait_for(applied.get(), timeout=20)
    assert refused.source_event_id == "item-t1-4" and not refused.transaction_id
    assert "swap_sun_for_sky" in refused.rejected_reason
    again = await asyncio.wait_for(applied.get(), timeout=20)  # the copy gets the recorded answer
    await subscription.unsubscribe()
    assert again.envelope.event_id == refused.envelope.event_id  # one message id: JetStream keeps one
    assert again.rejected_reason == refused.rejected_reason
    rows = await wallet_service.db.fetchval(
        "SELECT count(*) FROM wallet.transactions WHERE kind = 'item_use'"
    )
    assert rows == 1


async def test_bot_login_is_for_services_only(client: Client, wallet_service: Any) -> None:
    player_id, me = await client.login("mallory")
    request = wallet_pb2.BotLoginRequest(bot_id="bot-1")
    for metadata in (me, client.issue("ops-1", Role.ADMIN)):
        assert "service" in await expect(
            grpc.StatusCode.PERMISSION_DENIED, client.stub.BotLogin(request, metadata=metadata)
        )
    service = client.issue("service:matchmaking", Role.SERVICE)
    for bad in ("bot-", "Bot-1", "bot-1:x", player_id, "bot-" + "9" * 33):
        await expect(
            grpc.StatusCode.INVALID_ARGUMENT,
            client.stub.BotLogin(wallet_pb2.BotLoginRequest(bot_id=bad), metadata=service),
        )
    no_key = wallet_pb2.BotLoginRequest(bot_id="bot-1", minimum_available=10)
    await expect(grpc.StatusCode.INVALID_ARGUMENT, client.stub.BotLogin(no_key, metadata=service))
    assert await wallet_service.db.fetchval("SELECT count(*) FROM wallet.players WHERE is_bot") == 0


async def test_a_house_bot_is_created_once_topped_up_in_the_ledger_and_never_ranked(
    client: Client, wallet_service: Any
) -> None:
    db = wallet_service.db
    service = client.issue("service:matchmaking", Role.SERVICE)

    async def bot_login(minimum: int = 0, request_id: str = "") -> wallet_pb2.BotLoginResponse:
        request = wallet_pb2.BotLoginRequest(bot_id="bot-3", minimum_available=minimum, request_id=request_id)
        return await client.stub.BotLogin(request, metadata=service)

    first, again = await bot_login(), await bot_login()
    assert first.player_id == again.player_id == "bot-3"
    assert (first.available, first.topped_up, again.available) == (1000, 0, 1000)
    assert tuple(await db.fetchrow("SELECT display_name, is_bot FROM wallet.players WHERE id = 'bot-3'")) == (
        "Bot 3",
        True,
    )
    assert (
        await db.fetchval(
            "SELECT count(*) FROM wallet.transactions WHERE idempotency_key = 'grant:start:bot-3'"
        )
        == 1
    )
    bot_token = auth.bearer_metadata(again.session.token)  # plays as the player bot-3
    assert (await client.balance("", bot_token)).balance == 1000

    # Short of what a room needs: topped up to it once per request id, an audited grant.
    topped = await bot_login(1500, "q-1")
    assert (topped.topped_up, topped.available) == (500, 1500)
    assert ((await bot_login(1500, "q-1")).topped_up, (await bot_login(1500, "q-2")).topped_up) == (0, 0)
    audit = await db.fetchrow(
        "SELECT kind, actor, reason FROM wallet.transactions WHERE idempotency_key = 'grant:bot:bot-3:q-1'"
    )
    assert tuple(audit) == ("grant", "service:matchmaking", "bot top-up")
    # While it holds for a pairing nothing is minted: that stake comes back at the release.
    hold = wallet_pb2.PlaceHoldRequest(player_id="bot-3", pairing_id="p-1", amount=1400, fee=0)
    await client.stub.PlaceHold(hold, metadata=service)
    holding = await bot_login(1500, "q-3")
    assert (holding.topped_up, holding.available) == (0, 100)
    release = wallet_pb2.ReleaseHoldRequest(player_id="bot-3", pairing_id="p-1")
    assert (await client.stub.ReleaseHold(release, metadata=service)).available == 1500

    # Richer than every guest, yet on no leaderboard (top or around anyone, the bot itself included).
    players = [await client.login(name) for name in ("ann", "ben")]
    scopes = (wallet_pb2.LEADERBOARD_SCOPE_TOP, wallet_pb2.LEADERBOARD_SCOPE_AROUND_ME)
    for _player_id, token in (*players, ("bot-3", bot_token)):
        for scope in scopes:
            board = await client.stub.GetLeaderboard(
                wallet_pb2.GetLeaderboardRequest(scope=scope, limit=10), metadata=token
            )
            assert sorted(e.display_name for e in board.entries) == ["ann", "ben"]
            assert {e.rank for e in board.entries} == {1}
    assert await audit_ledger(db) == []


async def test_guest_logins_are_rate_limited_per_client_address(
    start_service: Any,
    service_env: dict[str, str],
    database_url: str,
    wallet_database_url: str,
    unique_name: Callable[[str], str],
    client_tls: ClientTls,
) -> None:
    """Each guest login mints a starting grant: one address gets WALLET_GUEST_LOGIN_BURST at once, then
    WALLET_GUEST_LOGINS_PER_MINUTE; past that RESOURCE_EXHAUSTED says when to retry (in the message and
    as grpc-retry-pushback-ms), and nothing is minted."""
    env = {
        **service_env,
        "DATABASE_URL": wallet_database_url,
        "WALLET_EVENT_NAMESPACE": unique_name("w").lower(),
        "WALLET_GUEST_LOGINS_PER_MINUTE": "30",  # one every 2 s
        "WALLET_GUEST_LOGIN_BURST": "3",
    }
    wallet = await start_service(SPEC, WalletConfig.from_env(env))

    async def accounts() -> int:
        conn = await asyncpg.connect(database_url)
        try:
            return int(await conn.fetchval("SELECT count(*) FROM wallet.accounts"))
        finally:
            await conn.close()

    async with client_tls.channel(wallet.server.address) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)
        login = wallet_pb2.GuestLoginRequest(display_name="guest")
        first = [await stub.GuestLogin(login, timeout=10) for _ in range(3)]
        assert len({reply.player_id for reply in first}) == 3
        minted = await accounts()
        for _ in range(5):
            call = stub.GuestLogin(login, timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "retry in 2 s" in (refused.value.details() or ""), refused.value.details()
            pushback = dict(await call.trailing_metadata() or ())["grpc-retry-pushback-ms"]
            assert 0 < int(pushback) <= 2000, pushback
        assert await accounts() == minted  # the refused logins created no one
        await asyncio.sleep(int(pushback) / 1000 + 0.05)
        assert (await stub.GuestLogin(login, timeout=10)).player_id  # a token is back
        # what a guest already has keeps working: refresh is not limited
        renewed = await stub.RefreshToken(
            wallet_pb2.RefreshTokenRequest(refresh_token=first[0].session.refresh_token), timeout=10
        )
        assert renewed.player_id == first[0].player_id


async def test_ratings_are_public_and_the_rating_board_is_per_profile(
    client: Client, wallet_service: ServiceRuntime[WalletConfig]
) -> None:
    ann, ann_token = await client.login("ann")
    bob, _bob_token = await client.login("bob")
    # A new player has the starting rating in both profiles; anyone may read anyone's.
    seen = await client.stub.GetRating(wallet_pb2.GetRatingRequest(player_id=bob), metadata=ann_token)
    assert seen.player_id == bob
    assert [(r.profile, r.rating, r.deviation, r.hands_rated, r.conservative) for r in seen.ratings] == [
        (rules_pb2.PROFILE_DUEL, 1500, 350, 0, 800),
        (rules_pb2.PROFILE_ERREN, 1500, 350, 0, 800),
    ]
    assert all(r.volatility == pytest.approx(0.06) for r in seen.ratings)
    await expect(
        grpc.StatusCode.NOT_FOUND,
        client.stub.GetRating(wallet_pb2.GetRatingRequest(player_id="nobody"), metadata=ann_token),
    )
    await expect(
        grpc.StatusCode.INVALID_ARGUMENT,
        client.stub.GetRating(wallet_pb2.GetRatingRequest(player_id="a b"), metadata=ann_token),
    )
    rating_board = wallet_pb2.LEADERBOARD_KIND_RATING
    no_profile = wallet_pb2.GetLeaderboardRequest(kind=rating_board)
    assert "profile" in await expect(
        grpc.StatusCode.INVALID_ARGUMENT, client.stub.GetLeaderboard(no_profile, metadata=ann_token)
    )
    # ann beats bob in erren (written as the hand's transaction would: through the ledger store).
    db = wallet_service.db
    await db.execute(
        "INSERT INTO wallet.ratings (player_id, profile, rating, deviation, hands_rated) VALUES "
        "($1, 'erren', 1650, 300, 1), ($2, 'erren', 1350, 300, 1)",
        ann,
        bob,
    )
    board = await client.stub.GetLeaderboard(
        wallet_pb2.GetLeaderboardRequest(kind=rating_board, profile=rules_pb2.PROFILE_ERREN, limit=5),
        metadata=ann_token,
    )
    assert [(e.rank, e.player_id, e.rating.rating, e.rating.conservative) for e in board.entries] == [
        (1, ann, 1650, 1050),
        (2, bob, 1350, 750),
    ]
    assert all(e.prestige == 1000 and e.rating.profile == rules_pb2.PROFILE_ERREN for e in board.entries)
    around = wallet_pb2.GetLeaderboardRequest(
        kind=rating_board,
        profile=rules_pb2.PROFILE_ERREN,
        scope=wallet_pb2.LEADERBOARD_SCOPE_AROUND_ME,
        limit=1,
    )
    assert [e.player_id for e in (await client.stub.GetLeaderboard(around, metadata=ann_token)).entries] == [
        ann,
        bob,
    ]
    duel = wallet_pb2.GetLeaderboardRequest(kind=rating_board, profile=rules_pb2.PROFILE_DUEL)
    assert not (await client.stub.GetLeaderboard(duel, metadata=ann_token)).entries
    prestige = await client.stub.GetLeaderboard(wallet_pb2.GetLeaderboardRequest(), metadata=ann_token)
    assert {e.player_id for e in prestige.entries} >= {ann, bob}
    assert not any(e.HasField("rating") for e in prestige.entries)  # prestige boards unchanged
