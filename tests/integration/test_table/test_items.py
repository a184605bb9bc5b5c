"""T6 items end to end on real services (wallet, matchmaking, a table server; gRPC, NATS, Postgres): the
wallet's counts reach the table through the pairing, the seat's view shows them, the engine offers
and applies them, the table publishes ``ItemUsed`` and the wallet spends each exactly once."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio

from duelmahjong.client.session import DuelClient
from duelmahjong.engine.events import HandStarted
from duelmahjong.platform import auth, subjects
from duelmahjong.platform.bus import Bus
from duelmahjong.platform.tls import ClientTls
from duelmahjong.rules.tiles import parse_tiles, tile_name
from duelmahjong.v1 import events_pb2, play_pb2, rules_pb2, table_pb2, wallet_pb2, wallet_pb2_grpc
from services.wallet.sources import Namespace

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

SWAP, GRAND = rules_pb2.ITEM_KIND_SWAP_SUN_FOR_SKY, rules_pb2.ITEM_KIND_GRAND_SHIFT
ROOMS = [
    {"room_id": "duel-items", "profile": "duel", "fan_rate": 10, "carry_min": 100, "items_enabled": True},
    {"room_id": "duel-plain", "profile": "duel", "fan_rate": 10, "carry_min": 100},
]


@pytest_asyncio.fixture
async def items_stack(
    start_matchmaking: Callable[..., Any],
    table_server: Any,
    issue: Callable[..., tuple[tuple[str, str]]],
    client_tls: ClientTls,
) -> AsyncIterator[SimpleNamespace]:
    """Wallet, matchmaking and the table server; alice holds 2 偷天换日 and 1 乾坤大挪移, bob none."""
    wallet, matchmaking = await start_matchmaking(ROOMS)
    alice, bob = (
        DuelClient(tls=client_tls, wallet=wallet.server.address, matchmaking=matchmaking.server.address)
        for _ in "ab"
    )
    await alice.login("alice")
    await bob.login("bob")
    channel = client_tls.channel(wallet.server.address)
    stub = wallet_pb2_grpc.WalletServiceStub(channel)
    grant = wallet_pb2.AdminGrantRequest(
        player_id=alice.player_id,
        items=[wallet_pb2.ItemStack(item=SWAP, count=2), wallet_pb2.ItemStack(item=GRAND, count=1)],
        reason="T6 test",
        request_id="items-1",
    )
    await stub.AdminGrant(grant, metadata=issue("ops", auth.Role.ADMIN))
    yield SimpleNamespace(wallet=wallet, stub=stub, alice=alice, bob=bob, table_server=table_server)
    await alice.close()
    await bob.close()
    await channel.close()


async def _seated(
    stack: SimpleNamespace, kit: SimpleNamespace, room: str, client_tls: ClientTls
) -> tuple[Any, Any, str]:
    """Both players paired in ``room``: (alice's seat client, bob's, table id), not yet connected."""
    readies = await asyncio.wait_for(
        asyncio.gather(stack.alice.find_table(room, 200), stack.bob.find_table(room, 200)), 20
    )
    clients = []
    for client, ready in zip((stack.alice, stack.bob), readies, strict=True):
        channel = client_tls.channel(ready.address)
        seat = 0 if ready.seat == rules_pb2.SEAT_FIRST else 1
        clients.append(kit.SeatClient(channel, client.metadata, ready.table_ticket, seat))
    return clients[0], clients[1], readies[0].table_id


async def _inventory(stack: SimpleNamespace, player_id: str) -> dict[int, int]:
    matchmaking = stack.alice.metadata if player_id == stack.alice.player_id else stack.bob.metadata
    reply = await stack.stub.GetInventory(
        wallet_pb2.GetInventoryRequest(player_id=player_id), metadata=matchmaking
    )
    return {stack_.item: stack_.count for stack_ in reply.items if stack_.count}


def _held(view: play_pb2.SeatView) -> Counter[int]:
    return Counter(parse_tiles(view.concealed + view.drawn_tile))


async def test_items_reach_the_seat_are_applied_and_spent_once_by_the_wallet_t6(
    items_stack: SimpleNamespace, kit: SimpleNamespace, bus: Bus, client_tls: ClientTls
) -> None:
    stack = items_stack
    namespace = Namespace(stack.wallet.config.event_namespace)
    answers: asyncio.Queue[events_pb2.SettlementApplied] = asyncio.Queue()
    used: list[events_pb2.ItemUsed] = []

    async def redeliver(message: Any) -> None:
        # The table publishes on the platform subject; this wallet reads its private copy (tests share
        # one NATS). Each ItemUsed is delivered twice, under two message ids, as a redelivery would be.
        event = events_pb2.ItemUsed.FromString(message.data)
        used.append(event)
        for copy in ("a", "b"):
            subject = namespace.subject(subjects.ITEM_USED)
            await bus.publish(subject, message.data, msg_id=f"{event.envelope.event_id}-{copy}")

    async def answer(message: Any) -> None:
        await answers.put(events_pb2.SettlementApplied.FromString(message.data))

    subscriptions = [
        await bus.client.subscribe(subjects.ITEM_USED, cb=redeliver),
        await bus.client.subscribe(namespace.subject(subjects.SETTLEMENT_APPLIED), cb=answer),
    ]
    alice, bob, table_id = await _seated(stack, kit, "duel-items", client_tls)
    table = kit.live(stack.table_server, table_id)
    assert {i.item: i.count for i in table.state.request.players[alice.seat].items} == {SWAP: 2, GRAND: 1}
    assert not table.state.request.players[bob.seat].items
    await alice.connect(grand_shift=True)  # 乾坤大挪移 chosen before the first deal
    await bob.connect()
    swapped: dict[str, Any] = {}

    async def alice_plays() -> None:
        while not alice.ended.is_set():
            try:
                view = await alice.decision(15)
            except kit.StreamEnded:
                return
            if not swapped:
                # The grand shift was spent at the deal; both 偷天换日 are left and shown (T6).
                assert {i.item: i.count for i in view.items} == {SWAP: 2}
            kinds = {a.kind: a for a in view.legal_actions.actions}
            choices = [
                c
                for c in kinds.get(play_pb2.ACTION_KIND_USE_ITEM, play_pb2.LegalAction()).choices
                if ">" in c
            ]
            if not swapped and play_pb2.ACTION_KIND_PASS in kinds:
                # The shifted hand may win on bob's first discard; alice passes until her turn.
                await alice.send(play_pb2.Action(**{"pass": play_pb2.PassAction()}))
                continue
            if choices and not swapped:
                given, target = choices[0].split(">")
                swapped.update(given=given, target=target, before=_held(view))
                use = play_pb2.UseItemAction(item=SWAP, tiles=given, target=target)
                await alice.send(play_pb2.Action(use_item=use))
                after = await alice.decision(15)
                swapped["after"], swapped["items"] = _held(after), {i.item: i.count for i in after.items}
                await alice.send(kit.simple_choice(after))
                continue
            await alice.send(kit.simple_choice(view))

    async def bob_plays() -> None:
        refused = False
        while not bob.ended.is_set():
            try:
                view = await bob.decision(15)
            except kit.StreamEnded:
                return
            assert not view.items
            assert play_pb2.ACTION_KIND_USE_ITEM not in {a.kind for a in view.legal_actions.actions}
            if not refused and play_pb2.ACTION_KIND_DISCARD in {a.kind for a in view.legal_actions.actions}:
                refused = True  # bob has no item: refused with a reason, and the table carries on
                tile = tile_name(parse_tiles(view.concealed)[0])
                use = play_pb2.UseItemAction(item=SWAP, tiles=tile, target="7z")
                await bob.send(play_pb2.Action(use_item=use))
                rejection = await kit.next_rejection(bob)
                assert rejection.code == table_pb2.REJECTION_CODE_ILLEGAL
                assert "偷天换日 needs the item" in rejection.reason
                view = rejection.view
            await bob.send(kit.simple_choice(view))

    try:
        await asyncio.wait_for(asyncio.gather(alice_plays(), bob_plays()), 60)
        # 偷天换日 turned one tile of alice's hand into the named kind (T6), and the view shows one left.
        assert swapped, "alice was never offered 偷天换日 on her turn"
        started = [e for e in table.state.engine.events if isinstance(e, HandStarted)]
        assert [e.qiankun for e in started] == [(alice.seat,)]  # dealt with the shift
        given, target = parse_tiles(swapped["given"])[0], parse_tiles(swapped["target"])[0]
        expected = swapped["before"] - Counter({given: 1}) + Counter({target: 1})
        assert swapped["after"] == expected
        assert swapped["items"] == {SWAP: 1}
        applied = [
            r.event for r in alice.received if r.HasField("event") and r.event.HasField("item_applied")
        ]
        assert [e.item_applied.item for e in applied] == [SWAP]
        assert (applied[0].item_applied.given, applied[0].item_applied.received) == (
            swapped["given"],
            swapped["target"],
        )
        seen_by_bob = [
            r.event for r in bob.received if r.HasField("event") and r.event.HasField("item_applied")
        ]
        assert [(e.item_applied.item, e.item_applied.given) for e in seen_by_bob] == [(SWAP, "")]
        # The table published one ItemUsed per use, keyed by table and sequence; the wallet applied each
        # once and answered each redelivered copy with the same recorded answer.
        assert sorted(e.item for e in used) == sorted([SWAP, GRAND])
        assert {e.table_id for e in used} == {table_id} and len({e.sequence for e in used}) == 2
        seen: list[events_pb2.SettlementApplied] = []
        while len(seen) < 4:
            seen.append(await asyncio.wait_for(answers.get(), 20))
        assert not [a.rejected_reason for a in seen if a.rejected_reason]
        assert await _inventory(stack, stack.alice.player_id) == {SWAP: 1}
        rows = await stack.wallet.db.fetchval(
            "SELECT count(*) FROM wallet.transactions WHERE kind = 'item_use'"
        )
        assert rows == 2
    finally:
        for subscription in subscriptions:
            await subscription.unsubscribe()
        await alice.close()
        await bob.close()


async def test_a_room_without_items_offers_none_and_the_inventory_stays_t6(
    items_stack: SimpleNamespace, kit: SimpleNamespace, client_tls: ClientTls
) -> None:
    stack = items_stack
    alice, bob, table_id = await _seated(stack, kit, "duel-plain", client_tls)
    table = kit.live(stack.table_server, table_id)
    assert not table.state.request.players[0].items and not table.state.request.players[1].items
    await alice.connect(grand_shift=True)  # asked for, but the room plays no items: not used
    await bob.connect()
    try:
        await kit.play_until_over((alice, bob), within=60)
        for client in (alice, bob):
            views = [r.view for r in client.received if r.HasField("view")]
            assert views and not any(view.items for view in views)
            offered = {a.kind for view in views for a in view.legal_actions.actions}
            assert play_pb2.ACTION_KIND_USE_ITEM not in offered
        assert not any(e.kind == "swapped" for e in table.state.engine.events)
        started = [e for e in table.state.engine.events if isinstance(e, HandStarted)]
        assert started and not any(e.qiankun for e in started)
        assert await _inventory(stack, stack.alice.player_id) == {SWAP: 2, GRAND: 1}
    finally:
        await alice.close()
        await bob.close()


async def test_grand_shift_is_chosen_at_continue_and_refused_without_the_item_t6(
    items_stack: SimpleNamespace, kit: SimpleNamespace, bus: Bus, client_tls: ClientTls
) -> None:
    stack = items_stack
    used: list[events_pb2.ItemUsed] = []

    async def collect(message: Any) -> None:
        used.append(events_pb2.ItemUsed.FromString(message.data))

    subscription = await bus.client.subscribe(subjects.ITEM_USED, cb=collect)
    alice, bob, table_id = await _seated(stack, kit, "duel-items", client_tls)
    table = kit.live(stack.table_server, table_id)
    await alice.connect()  # no 乾坤大挪移 in the first hand
    await bob.connect()
    refusals: list[str] = []

    async def plays(client: Any) -> None:
        continued = False
        while not client.ended.is_set():
            try:
                view = await client.decision(15)
            except kit.StreamEnded:
                return
            if play_pb2.ACTION_KIND_CONTINUE not in {a.kind for a in view.legal_actions.actions}:
                await client.send(kit.simple_choice(view))
                continue
            if continued:  # after the second hand: leave
                await client.send(play_pb2.Action(leave=play_pb2.LeaveAction()))
                continue
            continued = True
            shift = play_pb2.ContinueAction(use_grand_shift=True)
            await client.send(play_pb2.Action(continue_playing=shift))
            if client is bob:  # bob has none: refused with a reason; he continues without it
                rejection = await kit.next_rejection(bob)
                refusals.append(rejection.reason)
                await bob.send(play_pb2.Action(continue_playing=play_pb2.ContinueAction()))

    try:
        await asyncio.wait_for(asyncio.gather(plays(alice), plays(bob)), 90)
        assert refusals == ["you have no 乾坤大挪移 left (T6)"]
        started = [e for e in table.state.engine.events if isinstance(e, HandStarted)]
        assert [e.qiankun for e in started] == [(), (alice.seat,)]
        views = [r.view for r in alice.received if r.HasField("view") and r.view.table.hand_number == 2]
        assert views and all({i.item: i.count for i in v.items} == {SWAP: 2} for v in views)
        mine = [e for e in used if e.table_id == table_id]
        assert [(e.item, e.hand_id, e.player_id) for e in mine] == [
            (GRAND, f"{table_id}-h2", stack.alice.player_id)
        ]
    finally:
        await subscription.unsubscribe()
        await alice.close()
        await bob.close()
